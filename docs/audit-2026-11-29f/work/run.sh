#!/bin/bash
# run.sh TAG FAM [base-extra] -- specs...   (runs with /tmp/audit7 build)
tag=$1; fam=$2; shift 2
python3 /tmp/audit7-work/gen.py $fam a7-$fam "$@" > /tmp/audit7-work/m/$tag-$fam.yaml || exit 1
cd /tmp/audit7
rm -rf /tmp/audit7-work/r/$tag/a7-$fam
s=$(date +%s)
timeout 2400 ./build/repro --matrix /tmp/audit7-work/m/$tag-$fam.yaml --results /tmp/audit7-work/r/$tag --progress plain --no-report > /tmp/audit7-work/r/$tag-$fam.log 2>&1
echo "rc=$? $(( $(date +%s)-s )) s"
tail -2 /tmp/audit7-work/r/$tag-$fam.log
python3 /tmp/audit7-work/summ.py /tmp/audit7-work/r/$tag ${BASE:-/nonexistent} v 2>&1 | grep -v "^REF\|^.....REF" | grep -A1 "a7-$fam\|^$fam \|^${fam:0:5}"
