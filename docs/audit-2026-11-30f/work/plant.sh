#!/bin/bash
# plant.sh NN-name : audit A's (default 13; audits 14-16 call this with theirs, D their folder) plants/pNN.sh in
# /tmp/auditAb, build, copy the binary, save the diff, reset
A=${A:-13}; D=${D:-/work/main/docs/audit-2026-11-30f}; W=/tmp/audit$A-work
cd /tmp/audit${A}b
nn=${1%%-*}; bash $D/work/plants/p$nn.sh || { git checkout -- .; exit 1; }
nice -n 10 make -C build -j2 repro 2>&1 | grep -iE ' error|Error [0-9]|warning' && { git checkout -- .; exit 1; }
cp build/repro $W/bin/$1
git diff > $D/$1.diff
git checkout -- .
echo built $1 $(md5sum < $W/bin/$1)
