#!/bin/bash
# clean.sh : every case set on the clean build, into r/C-<prec>
W=/work/main/docs/audit-2026-11-30j/work; . $W/cases.sh
for p in ${PRECS:-bf16 fp32}; do
  $W/runa.sh C-$p s sd3 "precision: $p" -- "${CS[@]}"
  $W/runa.sh C-$p t dit "precision: $p" -- "${CT[@]}"
  $W/runa.sh C-$p f flux "precision: $p" -- "${CF[@]}"
done
