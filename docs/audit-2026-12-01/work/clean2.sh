#!/bin/bash
# clean2.sh : the dc set (dit-digits with two classes) on the clean build, into r/C-<prec>
W=/work/main/docs/audit-2026-12-01/work; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  SEDX="$SEDX_DC" $W/runx.sh C-$p dc ditd "precision: $p" -- "${CC[@]}"
done
