#!/bin/bash
# clean.sh : every case set on the clean build, into r/C-<prec>
W=/work/main/docs/audit-2026-12-01/work; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  $W/runa.sh C-$p fn flux "precision: $p, width: 128, height: 64" -- "${CF[@]}"
  $W/runa.sh C-$p f64 flux "precision: $p, width: 64, height: 64" -- "${CF[@]}"
  $W/runa.sh C-$p sn sd3 "precision: $p, width: 128, height: 64" -- "${CS[@]}"
  $W/runa.sh C-$p fg flux "precision: $p, guidance: 5" -- "${CF[@]}"
  SEEDS="$SEEDS_MP" PROMPTS="$PROMPTS_MP" $W/runp.sh C-$p mp sd3 "precision: $p" -- "${CS[@]}"
  $W/runa.sh C-$p s sd3 "precision: $p" -- "${CS[@]}"
  $W/runa.sh C-$p t2 dit "precision: $p, threads: 2" -- "${CT[@]}"
  $W/runa.sh C-$p d4 dit "precision: $p" -- "${CD[@]}"
done
