#!/bin/bash
# runb.sh TAG FAM [base-extra] -- specs...   BIN=plant binary; also runs the clean build into r/c-TAG
tag=$1; fam=$2; shift 2
W=/tmp/audit8-work
python3 $W/gen.py $fam a8-$fam "$@" > $W/m/$tag-$fam.yaml || exit 1
cd /tmp/audit8
for which in plant clean; do
  if [ $which = plant ]; then b=$BIN; d=$W/r/$tag; else b=/tmp/audit8/build/repro; d=$W/r/c-$tag; fi
  rm -rf $d/a8-$fam; s=$(date +%s)
  timeout 1200 $b --matrix $W/m/$tag-$fam.yaml --results $d --progress plain --no-report > $d-$fam.log 2>&1
  echo "$tag $fam $which rc=$? $(( $(date +%s)-s )) s"
done
