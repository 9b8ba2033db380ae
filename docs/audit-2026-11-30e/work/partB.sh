#!/bin/bash
# partB.sh : each plant on its case set and families, fp32 and bf16, into r/P<NN>-<prec>
W=/tmp/audit12-work; . $W/cases.sh
for p in fp32 bf16; do
  for f in dit sd3; do BIN=$(ls $W/bin/01-*) $W/runa.sh P01-$p s01 $f "precision: $p" -- "${C01[@]}"; done
  for f in sd3 flux; do BIN=$(ls $W/bin/02-*) $W/runa.sh P02-$p s02 $f "precision: $p" -- "${C02[@]}"; done
  for f in dit sd3; do BIN=$(ls $W/bin/03-*) $W/runa.sh P03-$p s03 $f "precision: $p" -- "${C03[@]}"; done
  BIN=$(ls $W/bin/04-*) PERITEM=1 $W/runa.sh P04-$p s04 sd3 "precision: $p, batch_forward: per-item" -- "${C04S[@]}"
  BIN=$(ls $W/bin/04-*) PERITEM=1 $W/runa.sh P04-$p s04 flux "precision: $p, batch_forward: per-item" -- "${C04F[@]}"
done
