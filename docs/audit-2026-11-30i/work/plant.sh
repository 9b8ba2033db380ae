#!/bin/bash
# plant.sh NN-name : plants/pNN.sh in /tmp/audit16b, build, copy the binary, save the diff, reset (audit 15's)
D=/work/main/docs/audit-2026-11-30i; W=/tmp/audit16-work
cd /tmp/audit16b
nn=${1%%-*}; bash $D/work/plants/p$nn.sh || { git checkout -- .; exit 1; }
nice -n 10 make -C build -j2 repro 2>&1 | grep -iE ' error|Error [0-9]|warning' && { git checkout -- .; exit 1; }
cp build/repro $W/bin/$1
git diff > $D/$1.diff
git checkout -- .
echo built $1 $(md5sum < $W/bin/$1)
