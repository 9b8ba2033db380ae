#!/bin/bash
# runa.sh TAG FAM [base-extra] -- specs...   BIN (default clean build); results r/TAG
tag=$1; fam=$2; shift 2
W=/tmp/audit11-work; BIN=${BIN:-/tmp/audit11/build/repro}
python3 $W/gen.py $fam a11-$fam "$@" > $W/m/$tag-$fam.yaml || exit 1
cd /tmp/audit11
s=$(date +%s); d=$W/r/$tag; rm -rf $d/a11-$fam
timeout 1500 nice -n 10 $BIN --matrix $W/m/$tag-$fam.yaml --results $d --progress plain --no-report > $d-$fam.log 2>&1
echo "$tag $fam rc=$? $(( $(date +%s)-s )) s"
