#!/bin/bash
# plants.sh : each plant's binary on its case sets (same set / case names as clean.sh), into r/P<NN>-<prec>
W=/work/main/docs/audit-2026-12-01/work; B=/tmp/audit19-work/bin; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  BIN=$B/01-flux-sp-rope-grid-width-from-height $W/runa.sh P01-$p fn flux "precision: $p, width: 128, height: 64" -- "${CF[@]}"
  BIN=$B/02-sd3-sp-posembed-crop-hw-swapped $W/runa.sh P02-$p sn sd3 "precision: $p, width: 128, height: 64" -- "${CS[@]}"
  BIN=$B/03-flux-mu-native-seqlen-lastrank $W/runa.sh P03-$p fn flux "precision: $p, width: 128, height: 64" -- "${CF[@]}"
  BIN=$B/03-flux-mu-native-seqlen-lastrank $W/runa.sh P03-$p f64 flux "precision: $p, width: 64, height: 64" -- "${CF[@]}"
  BIN=$B/04-flux-guidance-default-later-items $W/runa.sh P04-$p fg flux "precision: $p, guidance: 5" -- "${CF[@]}"
  BIN=$B/04-flux-guidance-default-later-items $W/runa.sh P04-$p fn flux "precision: $p, width: 128, height: 64" -- "${CF[@]}"
  BIN=$B/05-te-pad-zero-first-prompt-len SEEDS="$SEEDS_MP" PROMPTS="$PROMPTS_MP" $W/runp.sh P05-$p mp sd3 "precision: $p" -- "${CS[@]}"
  BIN=$B/05-te-pad-zero-first-prompt-len $W/runa.sh P05-$p s sd3 "precision: $p" -- "${CS[@]}"
  BIN=$B/06-dp-gather-middle-images-mirrored $W/runa.sh P06-$p d4 dit "precision: $p" -- "${CD[@]}"
  BIN=$B/07-te-empty-prompt-pooled-past-eos-cfgrank1 $W/runa.sh P07-$p s sd3 "precision: $p" -- "${CS[@]}"
  BIN=$B/07-te-empty-prompt-pooled-past-eos-cfgrank1 SEEDS="$SEEDS_MP" PROMPTS="$PROMPTS_MP" $W/runp.sh P07-$p mp sd3 "precision: $p" -- 'cfg2|cfg_parallel: 2'
  BIN=$B/08-sd3-sp-slice-one-row-late-lastrank $W/runa.sh P08-$p s sd3 "precision: $p" -- "${CS[@]}"
  BIN=$B/08-sd3-sp-slice-one-row-late-lastrank $W/runa.sh P08-$p sn sd3 "precision: $p, width: 128, height: 64" -- 'uly2|ulysses: 2' 'ring2|ring: 2'
  BIN=$B/09-dp-select-class-from-batch-head SEDX="$SEDX_DC" $W/runx.sh P09-$p dc ditd "precision: $p" -- "${CC[@]}"
  BIN=$B/10-vae-decode-hw-swapped-multirank $W/runa.sh P10-$p sn sd3 "precision: $p, width: 128, height: 64" -- "${CS[@]}"
  BIN=$B/10-vae-decode-hw-swapped-multirank $W/runa.sh P10-$p fn flux "precision: $p, width: 128, height: 64" -- "${CF[@]}"
  BIN=$B/10-vae-decode-hw-swapped-multirank $W/runa.sh P10-$p s sd3 "precision: $p" -- "${CS[@]}"
done
