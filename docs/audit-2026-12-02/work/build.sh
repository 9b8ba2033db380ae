#!/bin/bash
# build.sh : every plant's binary (plant.sh: apply, build, copy to /tmp/audit21-work/bin, save the diff, revert)
W=/tmp/audit21/docs/audit-2026-12-02/work
for n in ${@:-01-flash-partial-kv-tile-no-rescale 02-subquad-last-qchunk-row-early 03-flux-rope-cached-by-token-count \
         04-dp4-middle-groups-seed-from-previous 05-sp-attention-qk-tf32 06-layernorm-stats-bf16-accumulation \
         07-dpmpp-2m-history-kept-across-calls 08-sliced-attention-scale-twice-last-slice 09-step-noise-local-index \
         10-invariant-gemm-pack-remainder-at-threads 11-validator-ring-remainder-accepted 12-sequence-remainder-accepted-everywhere}; do
  $W/plant.sh $n || echo FAILED $n
done
