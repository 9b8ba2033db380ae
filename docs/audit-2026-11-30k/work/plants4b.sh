#!/bin/bash
# plants4b.sh : plants4.sh's second part, again: the reference's batch_forward set to per-item by runx.sh's sed
# (plants4.sh's REFX gave "field 'reference.batch_forward': given twice": those two sweeps did not run)
W=/work/main/docs/audit-2026-11-30k/work; B=/tmp/audit18-work/bin; . $W/cases.sh
export SEDX='/^reference:/s/batch_forward: joint/batch_forward: per-item/'
for p in ${PRECS:-fp32 bf16}; do
  $W/runx.sh C-$p fr flux "precision: $p, batch_forward: per-item" -- "${CFP[@]}"
  BIN=$B/11-flux-peritem-knorm-eps-later-items $W/runx.sh P11r-$p fr flux "precision: $p, batch_forward: per-item" -- "${CFP[@]}"
done
