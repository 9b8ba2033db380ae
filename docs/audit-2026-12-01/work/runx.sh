#!/bin/bash
# runx.sh TAG SET FAM [base-extra] -- specs... : runa.sh's sweep (audit 13's, by path) with the sed expression $SEDX
# applied to gen.py's matrix (gen.py has no classes line). Same paths as runa.sh (A=19).
A=19; tag=$1; set=$2; fam=$3; shift 3
W=/tmp/audit$A-work; BIN=${BIN:-/tmp/audit$A/build/repro}; G=/work/main/docs/audit-2026-11-30c/work/gen.py
mkdir -p $W/m; mf=$W/m/$tag-$set-$fam.yaml
python3 $G $fam a$A-$set-$fam "$@" | sed "$SEDX" > $mf || exit 1
cd /tmp/audit$A
s=$(date +%s); d=$W/r/$tag; mkdir -p $d; rm -rf $d/a$A-$set-$fam
timeout 1500 nice -n 10 $BIN --matrix $mf --results $d --progress plain --no-report > $d-$set-$fam.log 2>&1
echo "$tag $set $fam rc=$? $(( $(date +%s)-s )) s"
