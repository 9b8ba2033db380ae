#!/bin/bash
# clean.sh : every case set on the clean build, into r/C-<prec>
W=/work/main/docs/audit-2026-11-30k/work; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  $W/runa.sh C-$p t3 dit "precision: $p, threads: 3" -- "${C3[@]}"
  $W/runa.sh C-$p m ditm "precision: $p" -- "${C3[@]}"
  $W/runa.sh C-$p p ditp "precision: $p" -- "${C3[@]}"
  $W/runa.sh C-$p e dite "precision: $p" -- "${C3[@]}"
  PROMPTS="$PROMPTS_L" $W/runp.sh C-$p l sd3 "precision: $p" -- "${CL[@]}"
  $W/runa.sh C-$p pf dit "precision: $p" -- "${CP[@]}"
  $W/runa.sh C-$p d3 dit "precision: $p" -- "${CD[@]}"
done
