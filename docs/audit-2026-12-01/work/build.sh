#!/bin/bash
# build.sh : every plant's binary (plant.sh: apply, build, copy to /tmp/audit19-work/bin, save the diff, revert)
W=/work/main/docs/audit-2026-12-01/work
for n in 01-flux-sp-rope-grid-width-from-height 02-sd3-sp-posembed-crop-hw-swapped 03-flux-mu-native-seqlen-lastrank \
         04-flux-guidance-default-later-items 05-te-pad-zero-first-prompt-len 06-dp-gather-middle-images-mirrored \
         07-te-empty-prompt-pooled-past-eos-cfgrank1 08-sd3-sp-slice-one-row-late-lastrank \
         09-dp-select-class-from-batch-head 10-vae-decode-hw-swapped-multirank; do
  $W/plant.sh $n || echo FAILED $n
done
