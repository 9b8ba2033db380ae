#!/bin/bash
# partB2.sh : plants 05 (dita: dit-tiny euler-a eta 1) and 06 (dit, sd3): clean build then plant, fp32 and bf16
W=/tmp/audit12-work; . $W/cases.sh
for p in fp32 bf16; do
  $W/runa.sh C-$p s05 dita "precision: $p" -- "${C05[@]}"
  BIN=$(ls $W/bin/05-*) $W/runa.sh P05-$p s05 dita "precision: $p" -- "${C05[@]}"
  for f in dit sd3; do
    $W/runa.sh C-$p s06 $f "precision: $p" -- "${C06[@]}"
    BIN=$(ls $W/bin/06-*) $W/runa.sh P06-$p s06 $f "precision: $p" -- "${C06[@]}"
  done
done
