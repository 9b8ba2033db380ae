#!/bin/bash
# plants2.sh : 09b, 11, 12 (added after the first sweep; expected.txt's additions written before)
W=/work/main/docs/audit-2026-12-01/work; B=/tmp/audit19-work/bin; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  BIN=$B/09b-dp-select-class-from-batch-head-world SEDX="$SEDX_DC" $W/runx.sh P09b-$p dc ditd "precision: $p" -- "${CC[@]}"
  BIN=$B/11-dp-gather-middle-latents-mirrored $W/runa.sh P11-$p d4 dit "precision: $p" -- "${CD[@]}"
  BIN=$B/12-sd3-sp-posembed-table-bf16 $W/runa.sh P12-$p s sd3 "precision: $p" -- "${CS[@]}"
  BIN=$B/12-sd3-sp-posembed-table-bf16 $W/runa.sh P12-$p sn sd3 "precision: $p, width: 128, height: 64" -- 'uly2|ulysses: 2' 'ring2|ring: 2'
done
