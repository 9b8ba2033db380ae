#!/bin/bash
# plant.sh NN-name : plants/pNN.sh in /work/audit23p, build (nice 15), copy the binary to /work/audit23-work/bin/NN-name,
# save the diff to /work/audit23-out/NN-name.diff, reset (audit 13's plant.sh with audit 23's paths)
W=/work/audit23-work; O=/work/audit23-out
cd /work/audit23p
nn=${1%%-*}; bash $O/work/plants/p$nn.sh || { git checkout -- .; echo PLANT FAILED $1; exit 1; }
nice -n 15 make -C build -j2 repro 2>&1 | grep -iE ' error|Error [0-9]|warning' && { git checkout -- .; exit 1; }
cp build/repro $W/bin/$1
git diff > $O/$1.diff
git checkout -- .
echo built $1 $(md5sum < $W/bin/$1)
