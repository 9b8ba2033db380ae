#!/bin/bash
# plant.sh NN-name : build /tmp/audit11b, copy binary, save diff, reset
cd /tmp/audit11b
nice -n 10 make -C build -j2 repro 2>&1 | grep -iE ' error|Error [0-9]' && { git checkout -- .; exit 1; }
cp build/repro /tmp/audit11-work/bin/$1
git diff > /tmp/audit11-work/$1.diff
git checkout -- .
echo built $1
