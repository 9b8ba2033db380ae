#!/bin/bash
# clean.sh : every plant's case set on the clean build, into r/C-<prec>
W=/work/main/docs/audit-2026-11-30g/work; . $W/cases.sh
for p in ${PRECS:-bf16 fp32}; do
  for f in sd3 dit ditp; do $W/runa.sh C-$p sc $f "precision: $p" -- "${CC[@]}"; done
  for f in dit sd3 flux; do $W/runa.sh C-$p su $f "precision: $p" -- "${CU[@]}"; done
done
