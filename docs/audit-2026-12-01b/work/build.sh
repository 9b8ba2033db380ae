#!/bin/bash
# build.sh : every plant's binary (plant.sh: apply, build, copy to /tmp/audit20-work/bin, save the diff, revert)
W=/work/main/docs/audit-2026-12-01b/work
for n in ${@:-01-patch-sync-warmup-plus-one 02-patch-text-kv-stale-after-warmup 03-dit-pf-temb-cached-across-patch-passes \
         04-pf-sync-warmup-plus-one 05-pf-last-patch-shard-one-token-early 06-peritem-cfg-later-items-halves-swapped \
         07-peritem-xin-bf16-later-items-sp}; do
  $W/plant.sh $n || echo FAILED $n
done
