#!/bin/bash
# clean.sh : every plant's case set on the clean build, into r/C-<prec>
W=/work/main/docs/audit-2026-11-30f/work; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  for f in ditp ditm; do $W/runa.sh C-$p s01 $f "precision: $p" -- "${C01[@]}"; done
  for f in dit sd3; do $W/runa.sh C-$p s03 $f "precision: $p" -- "${C03[@]}"; done
  for f in dit sd3; do $W/runa.sh C-$p s04 $f "precision: $p" -- "${C04[@]}"; done
  for f in sd3 flux; do $W/runa.sh C-$p s06 $f "precision: $p" -- "${C06[@]}"; done
done
