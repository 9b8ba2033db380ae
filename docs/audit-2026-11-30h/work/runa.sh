#!/bin/bash
# runa.sh TAG SET FAM [base-extra] -- specs...   BIN (default: the clean build /tmp/audit15/build/repro)
# audit 14's runa.sh with this audit's paths; matrix from audit 10's gen.py (by path); results /tmp/audit15-work/r/TAG/a15-SET-FAM
tag=$1; set=$2; fam=$3; shift 3
W=/tmp/audit15-work; BIN=${BIN:-/tmp/audit15/build/repro}; G=/work/main/docs/audit-2026-11-30c/work/gen.py
mf=$W/m/$tag-$set-$fam.yaml
python3 $G $fam a15-$set-$fam "$@" > $mf || exit 1
cd /tmp/audit15
s=$(date +%s); d=$W/r/$tag; mkdir -p $d; rm -rf $d/a15-$set-$fam
timeout 1500 nice -n 10 $BIN --matrix $mf --results $d --progress plain --no-report > $d-$set-$fam.log 2>&1
echo "$tag $set $fam rc=$? $(( $(date +%s)-s )) s"
