#!/bin/bash
# clean.sh : every plant's case set on the clean build, into r/C-<prec> (04's per-item sets: r/CI-<prec>)
W=/tmp/audit12-work; . $W/cases.sh
for p in fp32 bf16; do
  for f in dit sd3; do $W/runa.sh C-$p s01 $f "precision: $p" -- "${C01[@]}"; done
  for f in sd3 flux; do $W/runa.sh C-$p s02 $f "precision: $p" -- "${C02[@]}"; done
  for f in dit sd3; do $W/runa.sh C-$p s03 $f "precision: $p" -- "${C03[@]}"; done
  PERITEM=1 $W/runa.sh CI-$p s04 sd3 "precision: $p, batch_forward: per-item" -- "${C04S[@]}"
  PERITEM=1 $W/runa.sh CI-$p s04 flux "precision: $p, batch_forward: per-item" -- "${C04F[@]}"
done
