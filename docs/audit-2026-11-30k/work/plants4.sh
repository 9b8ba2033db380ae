#!/bin/bash
# plants4.sh : 11b on audit 17's flux set; 11 (and the clean build first) against a per-item reference (REFX)
W=/work/main/docs/audit-2026-11-30k/work; B=/tmp/audit18-work/bin; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  BIN=$B/11b-flux-joint-knorm-eps-allrows $W/runa.sh P11b-$p f flux "precision: $p" -- "${CF[@]}"
  REFX='batch_forward: per-item' $W/runa.sh C-$p fr flux "precision: $p, batch_forward: per-item" -- "${CFP[@]}"
  REFX='batch_forward: per-item' BIN=$B/11-flux-peritem-knorm-eps-later-items $W/runa.sh P11r-$p fr flux "precision: $p, batch_forward: per-item" -- "${CFP[@]}"
done
