#!/bin/bash
# partB3.sh : 04b on 04's per-item sets (against r/CI-<prec>), fp32 and bf16, into r/P04b-<prec>
W=/tmp/audit12-work; . $W/cases.sh
for p in fp32 bf16; do
  BIN=$(ls $W/bin/04b-*) PERITEM=1 $W/runa.sh P04b-$p s04 sd3 "precision: $p, batch_forward: per-item" -- "${C04S[@]}"
  BIN=$(ls $W/bin/04b-*) PERITEM=1 $W/runa.sh P04b-$p s04 flux "precision: $p, batch_forward: per-item" -- "${C04F[@]}"
done
