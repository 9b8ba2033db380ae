#!/bin/bash
# plant.sh NN-name : build /tmp/audit10b, copy binary, save diff, reset
cd /tmp/audit10b
make -C build -j2 repro 2>&1 | grep -E 'error' && { git checkout -- .; exit 1; }
cp build/repro /tmp/audit10-work/bin/$1
git diff > /tmp/audit10-work/$1.diff
git checkout -- .
echo built $1
