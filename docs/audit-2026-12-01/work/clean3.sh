#!/bin/bash
# clean3.sh : more clean sets outside the drift corpus: sd3 at 64x64 px (non-native square), flux 128x64 at
# threads 2, sd3 two prompts at threads 2, flux 128x64 with attention flash
W=/work/main/docs/audit-2026-12-01/work; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  $W/runa.sh C-$p s64 sd3 "precision: $p, width: 64, height: 64" -- "${CS[@]}"
  $W/runa.sh C-$p fnt2 flux "precision: $p, width: 128, height: 64, threads: 2" -- "${CF[@]}"
  SEEDS="$SEEDS_MP" PROMPTS="$PROMPTS_MP" $W/runp.sh C-$p mpt2 sd3 "precision: $p, threads: 2" -- "${CS[@]}"
  $W/runa.sh C-$p fnfl flux "precision: $p, width: 128, height: 64" -- 'dp2fl|dp: 2, attention: flash' 'uly2fl|ulysses: 2, attention: flash' 'ring2fl|ring: 2, attention: flash'
done
