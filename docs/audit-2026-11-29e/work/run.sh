#!/bin/bash
# run.sh NN-name "fam:lay,lay:prec" ... ; bug planted in /tmp/audit6
nm=$1; shift
cd /tmp/audit6
if [ "$nm" != base ] && [ "${nm#base}" = "$nm" ]; then git diff > /tmp/audit6-out/$nm.diff; fi
cmake --build build -j2 --target repro > /tmp/audit6-work/r/build-$nm.log 2>&1 || { tail -20 /tmp/audit6-work/r/build-$nm.log; exit 1; }
rm -rf /tmp/audit6-work/r/$nm
for spec in "$@"; do
  fam=${spec%%:*}; lays=${spec#*:}
  python3 /tmp/audit6-work/gen.py $fam b-$fam ${lays//,/ } > /tmp/audit6-work/m/$nm-$fam.yaml
  /usr/bin/time -f "%e s" timeout 1500 ./build/repro --matrix /tmp/audit6-work/m/$nm-$fam.yaml --results /tmp/audit6-work/r/$nm --progress plain --no-report > /tmp/audit6-work/r/$nm-$fam.log 2>&1
  tail -1 /tmp/audit6-work/r/$nm-$fam.log
done
python3 /tmp/audit6-work/summ.py /tmp/audit6-work/r/$nm ${BASE:-/tmp/audit6-work/r/baseall} v | grep -v "REF"
