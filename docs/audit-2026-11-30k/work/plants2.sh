#!/bin/bash
# plants2.sh : the plants added after the first sweep (07b, 09, 10), the clean build first on their new sets
W=/work/main/docs/audit-2026-11-30k/work; B=/tmp/audit18-work/bin; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  $W/runa.sh C-$p sp sd3 "precision: $p, batch_forward: per-item" -- "${CSP[@]}"
  $W/runa.sh C-$p fp flux "precision: $p, batch_forward: per-item" -- "${CFP[@]}"
  $W/runa.sh C-$p pt dit "precision: $p" -- "${CPT[@]}"
done
for p in ${PRECS:-fp32 bf16}; do
  BIN=$B/07b-validator-dp-uneven-floor-gather $W/runa.sh P07b-$p d3 dit "precision: $p" -- "${CD[@]}"
  BIN=$B/09-flow-peritem-pooled-stride $W/runa.sh P09-$p sp sd3 "precision: $p, batch_forward: per-item" -- "${CSP[@]}"
  BIN=$B/09-flow-peritem-pooled-stride $W/runa.sh P09-$p fp flux "precision: $p, batch_forward: per-item" -- "${CFP[@]}"
  BIN=$B/10-patch-lastrank-mlp-eps-after-warmup $W/runa.sh P10-$p pt dit "precision: $p" -- "${CPT[@]}"
done
