#!/bin/bash
# clean2.sh : audit 17's standard sets (s, t, f) on the clean build, into r/C-<prec> (run after clean.sh)
W=/work/main/docs/audit-2026-11-30k/work; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  $W/runa.sh C-$p s sd3 "precision: $p" -- "${CS[@]}"
  $W/runa.sh C-$p t dit "precision: $p" -- "${CT[@]}"
  $W/runa.sh C-$p f flux "precision: $p" -- "${CF[@]}"
done
