#!/bin/bash
# runa.sh TAG SET FAM [base-extra] -- specs...   one sweep of audit A (default 13; audits 14-16 call this with
# theirs): the matrix from audit 10's gen.py (by path) into /tmp/auditA-work/m, results /tmp/auditA-work/r/TAG/aA-SET-FAM;
# BIN (default: the clean build /tmp/auditA/build/repro)
A=${A:-13}
tag=$1; set=$2; fam=$3; shift 3
W=/tmp/audit$A-work; BIN=${BIN:-/tmp/audit$A/build/repro}; G=/work/main/docs/audit-2026-11-30c/work/gen.py
mkdir -p $W/m; mf=$W/m/$tag-$set-$fam.yaml
python3 $G $fam a$A-$set-$fam "$@" > $mf || exit 1
cd /tmp/audit$A
s=$(date +%s); d=$W/r/$tag; mkdir -p $d; rm -rf $d/a$A-$set-$fam
timeout 1500 nice -n 10 $BIN --matrix $mf --results $d --progress plain --no-report > $d-$set-$fam.log 2>&1
echo "$tag $set $fam rc=$? $(( $(date +%s)-s )) s"
