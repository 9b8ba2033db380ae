#!/bin/bash
# build.sh : every plant's binary (plant.sh: apply, build, copy to /work/audit23-work/bin, save the diff, revert)
W=/work/audit23-out/work
for n in ${@:-01-flash-kv-tile-remainder-runs-math 04-dp-select-seed-32bit 05-reference-other-precision \
  08-teacher-rows-next-group 08b-teacher-row-off-by-one 09-vae-shift-dropped-later-dp-groups \
  10-rgb8-single-image-half-level 11-sliced-attention-mask-first-slice-only 12-pipeline-patches-ignored-with-dp \
  13-flow-schedule-steps-plus-one-sp 14-gemm-reduce-split-skipped-accumulating 15-flux-rope-ring-shard-off-by-one}; do
  $W/plant.sh $n || echo FAILED $n
done
