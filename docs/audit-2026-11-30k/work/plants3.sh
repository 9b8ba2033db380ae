#!/bin/bash
# plants3.sh : the plants added after the second sweep (11, 12), on the clean build's per-item sets (plants2.sh)
W=/work/main/docs/audit-2026-11-30k/work; B=/tmp/audit18-work/bin; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  BIN=$B/11-flux-peritem-knorm-eps-later-items $W/runa.sh P11-$p fp flux "precision: $p, batch_forward: per-item" -- "${CFP[@]}"
  BIN=$B/12-sd3-peritem-pooled-bf16-later-items $W/runa.sh P12-$p sp sd3 "precision: $p, batch_forward: per-item" -- "${CSP[@]}"
  BIN=$B/12-sd3-peritem-pooled-bf16-later-items $W/runa.sh P12-$p fp flux "precision: $p, batch_forward: per-item" -- "${CFP[@]}"
done
