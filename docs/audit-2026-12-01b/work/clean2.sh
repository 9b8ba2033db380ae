#!/bin/bash
# clean2.sh : the pip set (per-item in the approximate layouts) on the clean build, into r/C-<prec>
W=/work/main/docs/audit-2026-12-01b/work; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  $W/runa.sh C-$p pip sd3 "precision: $p" -- "${PIP[@]}"
  $W/runa.sh C-$p pip flux "precision: $p" -- "${PIP[@]}"
done
