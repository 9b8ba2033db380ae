#!/bin/bash
# runa.sh TAG SET FAM [base-extra] -- specs...   one sweep (audit 13's runa.sh with audit 23's paths, nice -n 15):
# the matrix from gen.py (audit 10's, copied here) into /work/audit23-work/m, results /work/audit23-work/r/TAG/a23-SET-FAM;
# BIN (default: the clean build /work/audit23/build/repro). Env STEPS / SEEDS / REFX pass to gen.py.
tag=$1; set=$2; fam=$3; shift 3
W=/work/audit23-work; BIN=${BIN:-/work/audit23/build/repro}; G=/work/audit23-out/work/gen.py
mkdir -p $W/m; mf=$W/m/$tag-$set-$fam.yaml
/usr/bin/python3 $G $fam a23-$set-$fam "$@" > $mf || exit 1
cd /work/audit23
s=$(date +%s); d=$W/r/$tag; mkdir -p $d; rm -rf $d/a23-$set-$fam
timeout 900 nice -n 15 $BIN --matrix $mf --results $d --progress plain --no-report > $d-$set-$fam.log 2>&1
rc=$?; echo "$tag $set $fam rc=$rc $(( $(date +%s)-s )) s bin=$(basename $BIN)"
