#!/bin/bash
# runa.sh TAG SET FAM [base-extra] -- specs...   BIN (default clean build); PERITEM=1: case and reference per-item
# matrix from audit 10's gen.py (by path); results r/TAG/a12-SET-FAM
tag=$1; set=$2; fam=$3; shift 3
W=/tmp/audit12-work; BIN=${BIN:-/tmp/audit12/build/repro}; G=/work/main/docs/audit-2026-11-30c/work/gen.py
mf=$W/m/$tag-$set-$fam.yaml
python3 $G $fam a12-$set-$fam "$@" > $mf || exit 1
[ "$PERITEM" = 1 ] && sed -i 's/batch_forward: joint/batch_forward: per-item/' $mf
cd /tmp/audit12
s=$(date +%s); d=$W/r/$tag; mkdir -p $d; rm -rf $d/a12-$set-$fam
timeout 1500 nice -n 10 $BIN --matrix $mf --results $d --progress plain --no-report > $d-$set-$fam.log 2>&1
echo "$tag $set $fam rc=$? $(( $(date +%s)-s )) s"
