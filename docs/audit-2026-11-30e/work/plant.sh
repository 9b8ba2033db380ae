#!/bin/bash
# plant.sh NN-name : run plants/pNN.sh in /tmp/audit12b, build, copy binary, save diff, reset
# (audit 11's plant.sh with this audit's paths; edits by audit 11's plants/edit.py)
cd /tmp/audit12b
nn=${1%%-*}; bash /tmp/audit12-work/plants/p$nn.sh || { git checkout -- .; exit 1; }
nice -n 10 make -C build -j2 repro 2>&1 | grep -iE ' error|Error [0-9]' && { git checkout -- .; exit 1; }
cp build/repro /tmp/audit12-work/bin/$1
git diff > /tmp/audit12-work/$1.diff
git checkout -- .
echo built $1
