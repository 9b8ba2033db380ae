#!/bin/bash
# plants5.sh : 11b on layouts that also change the attention variant or reduce_split (the clean build first)
W=/work/main/docs/audit-2026-11-30k/work; B=/tmp/audit18-work/bin; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  $W/runa.sh C-$p fv flux "precision: $p" -- "${CFV[@]}"
  BIN=$B/11b-flux-joint-knorm-eps-allrows $W/runa.sh P11b-$p fv flux "precision: $p" -- "${CFV[@]}"
done
