#!/bin/bash
# partB2.sh: plant 05 where it acts (ring 4), plant 04 under cfg2 / ring2; fp32 and bf16, plant then clean
W=/tmp/audit10-work
for p in fp32 bf16; do
 for mode in plant clean; do
  run() { n=$1; shift; if [ $mode = plant ]; then BIN=$W/bin/$n; t=C$n-$p; else BIN=/tmp/audit10/build/repro; t=C$n-$p-clean; fi
          BIN=$BIN $W/runa.sh $t "$@"; }
  run 05-ring-reverse-merge-lastrank flux "precision: $p" -- 'ring4|ring: 4'
  run 05-ring-reverse-merge-lastrank sd3 "precision: $p" -- 'ring4|ring: 4' 'uly2 ring4|ulysses: 2, ring: 4'
  run 05-ring-reverse-merge-lastrank ditd "precision: $p" -- 'ring4|ring: 4' 'fast ring4|mode: fast, ring: 4'
  run 04-image-shift-1px-lastrank dit "precision: $p" -- 'cfg2|cfg_parallel: 2' 'ring2|ring: 2'
 done
done
