#!/bin/bash
# plant.sh NN-name : build /tmp/audit9b, copy binary, save diff, reset
set -e
cd /tmp/audit9b
make -C build -j2 repro 2>&1 | grep -E 'error|warning: unused' && exit 1 || true
cp build/repro /tmp/audit9-work/bin/$1
git diff > /work/main/docs/audit-2026-11-30b/$1.diff
git checkout -- .
echo built $1
