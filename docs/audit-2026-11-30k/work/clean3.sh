#!/bin/bash
# clean3.sh : after the false alarm in sh (dit sharpen 8, ring2: BUG on the clean build): sharpen 8 on audit 17's
# sd3 and flux layouts, and dit ring2 / uly2 at sharpen 2 and 4 (the clean build only)
W=/work/main/docs/audit-2026-11-30k/work; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  $W/runa.sh C-$p s8 sd3 "precision: $p, sharpen: 8" -- "${CS[@]}"
  $W/runa.sh C-$p f8 flux "precision: $p, sharpen: 8" -- "${CF[@]}"
done
for s in 2 4; do
  $W/runa.sh C-fp32 sh$s dit "precision: fp32, sharpen: $s" -- 'uly2|ulysses: 2' 'ring2|ring: 2'
done
