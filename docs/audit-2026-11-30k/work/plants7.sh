#!/bin/bash
# plants7.sh : clean dit euler-a (eta 1) and dit sharpen 8, then 14 on euler-a
W=/work/main/docs/audit-2026-11-30k/work; B=/tmp/audit18-work/bin; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  $W/runa.sh C-$p a dita "precision: $p" -- "${C3[@]}"
  $W/runa.sh C-$p sh dit "precision: $p, sharpen: 8" -- "${CT[@]}"
  BIN=$B/14-euler-a-vp-view-c-sigma $W/runa.sh P14-$p a dita "precision: $p" -- "${C3[@]}"
done
