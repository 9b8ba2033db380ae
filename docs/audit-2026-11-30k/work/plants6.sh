#!/bin/bash
# plants6.sh : 13 against the joint reference (sp, the clean build ran in plants2.sh) and against a per-item
# reference (sr: the clean build first)
W=/work/main/docs/audit-2026-11-30k/work; B=/tmp/audit18-work/bin; . $W/cases.sh
export SEDX='/^reference:/s/batch_forward: joint/batch_forward: per-item/'
for p in ${PRECS:-fp32 bf16}; do
  BIN=$B/13-sd3-peritem-ff-ln-eps-later-items $W/runa.sh P13-$p sp sd3 "precision: $p, batch_forward: per-item" -- "${CSP[@]}"
  $W/runx.sh C-$p sr sd3 "precision: $p, batch_forward: per-item" -- "${CSP[@]}"
  BIN=$B/13-sd3-peritem-ff-ln-eps-later-items $W/runx.sh P13-$p sr sd3 "precision: $p, batch_forward: per-item" -- "${CSP[@]}"
done
