#!/bin/bash
# partB.sh: each plant's matrices (fp32 and bf16), then the clean build on the same matrices (tag suffix -clean)
W=/tmp/audit10-work
for p in fp32 bf16; do
 for mode in plant clean; do
  run() { n=$1; shift; if [ $mode = plant ]; then BIN=$W/bin/$n; t=B$n-$p; else BIN=/tmp/audit10/build/repro; t=B$n-$p-clean; fi
          BIN=$BIN $W/runa.sh $t "$@"; }
  run 01-flux-rope-bf16-lastrank flux "precision: $p" -- 'dp2|dp: 2' 'ring2|ring: 2' 'uly2|ulysses: 2'
  run 02-flux-single0-concat-swap-lastrank flux "precision: $p" -- 'dp2|dp: 2' 'ring2|ring: 2'
  run 03-sd3-ctx-last-ff-skipped-lastrank sd3 "precision: $p" -- 'dp2|dp: 2' 'uly2|ulysses: 2' 'cfg2|cfg_parallel: 2'
  run 03-sd3-ctx-last-ff-skipped-lastrank sd3d "precision: $p" -- 'dp2|dp: 2' 'ring2|ring: 2'
  run 04-image-shift-1px-lastrank dit "precision: $p" -- 'dp2|dp: 2' 'uly2|ulysses: 2'
  run 04-image-shift-1px-lastrank sd3d "precision: $p" -- 'dp2|dp: 2'
  run 05-ring-reverse-merge-lastrank dit "precision: $p" -- 'ring2|ring: 2' 'ring4|ring: 4' 'uly2 ring2|ulysses: 2, ring: 2'
  run 05-ring-reverse-merge-lastrank flux "precision: $p" -- 'ring2|ring: 2'
  run 05-ring-reverse-merge-lastrank sd3 "precision: $p" -- 'ring2|ring: 2'
 done
done
