#!/bin/bash
# runa.sh TAG SET FAM [base-extra] -- specs...   BIN (default: the clean build /tmp/audit16/build/repro)
# audit 15's runa.sh with this audit's paths; matrix from audit 10's gen.py (by path); results /tmp/audit16-work/r/TAG/a16-SET-FAM
tag=$1; set=$2; fam=$3; shift 3
W=/tmp/audit16-work; BIN=${BIN:-/tmp/audit16/build/repro}; G=/work/main/docs/audit-2026-11-30c/work/gen.py
mkdir -p $W/m; mf=$W/m/$tag-$set-$fam.yaml
python3 $G $fam a16-$set-$fam "$@" > $mf || exit 1
cd /tmp/audit16
s=$(date +%s); d=$W/r/$tag; mkdir -p $d; rm -rf $d/a16-$set-$fam
timeout 1500 nice -n 10 $BIN --matrix $mf --results $d --progress plain --no-report > $d-$set-$fam.log 2>&1
echo "$tag $set $fam rc=$? $(( $(date +%s)-s )) s"
