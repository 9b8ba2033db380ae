#!/bin/bash
# plant.sh NN-name : build /tmp/audit8b, copy binary, save diff, reset
set -e
cd /tmp/audit8b
make -C build -j2 repro 2>&1 | grep -E 'error|warning: unused' && exit 1 || true
cp build/repro /tmp/audit8-work/bin/$1
git diff > /work/main/docs/audit-2026-11-30/$1.diff
git checkout -- .
echo built $1
