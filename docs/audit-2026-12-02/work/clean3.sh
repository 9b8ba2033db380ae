#!/bin/bash
# clean3.sh : set r on the clean build (added with plant 11)
W=/tmp/audit21/docs/audit-2026-12-02/work; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do for f in dit sd3; do $W/runa.sh C-$p r $f "precision: $p" -- "${R[@]}"; done; done
