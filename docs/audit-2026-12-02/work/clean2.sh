#!/bin/bash
# clean2.sh : set t on the clean build (added with plant 10)
W=/tmp/audit21/docs/audit-2026-12-02/work; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do for f in dit sd3 flux; do $W/runa.sh C-$p t $f "precision: $p" -- "${T[@]}"; done; done
