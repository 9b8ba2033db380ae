#!/bin/bash
# runb.sh TAG FAM [base-extra] -- specs...   BIN=plant binary; the clean build's run of the same matrix is in
# r/c-TAG (made once per matrix text: r/clean/<md5> reused, linked)
tag=$1; fam=$2; shift 2
W=/tmp/audit9-work
python3 $W/gen.py $fam a9-$fam "$@" > $W/m/$tag-$fam.yaml || exit 1
h=$(md5sum < $W/m/$tag-$fam.yaml | cut -c1-10)
cd /tmp/audit9
s=$(date +%s); d=$W/r/$tag; rm -rf $d/a9-$fam
timeout 1200 $BIN --matrix $W/m/$tag-$fam.yaml --results $d --progress plain --no-report > $d-$fam.log 2>&1
echo "$tag $fam plant rc=$? $(( $(date +%s)-s )) s"
cd_=$W/r/clean/$h
if [ ! -d $cd_/a9-$fam ]; then
  s=$(date +%s)
  timeout 1200 /tmp/audit9/build/repro --matrix $W/m/$tag-$fam.yaml --results $cd_ --progress plain --no-report > $cd_-$fam.log 2>&1
  echo "$tag $fam clean rc=$? $(( $(date +%s)-s )) s"
fi
mkdir -p $W/r/c-$tag; ln -sfn $cd_/a9-$fam $W/r/c-$tag/a9-$fam
