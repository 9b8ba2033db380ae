#!/bin/bash
# partB.sh [NN...] (06b and 07 added after the first sweep, 06c and 0306c after those) : each plant on its case set and families, fp32 and bf16, into r/P<NN>-<prec>
W=/work/main/docs/audit-2026-11-30f/work; B=/tmp/audit13-work/bin; . $W/cases.sh
for nn in ${@:-01 02 03 04 05 06}; do
  bin=$(ls $B/$nn-*)
  for p in fp32 bf16; do
    case $nn in
      01) BIN=$bin $W/runa.sh P01-$p s01 ditp "precision: $p" -- "${C01[@]}";;
      02) BIN=$bin $W/runa.sh P02-$p s01 ditm "precision: $p" -- "${C01[@]}";;
      05) BIN=$bin $W/runa.sh P05-$p s01 ditm "precision: $p" -- "${C01[@]}";;
      03) for f in dit sd3; do BIN=$bin $W/runa.sh P03-$p s03 $f "precision: $p" -- "${C03[@]}"; done;;
      04) for f in dit sd3; do BIN=$bin $W/runa.sh P04-$p s04 $f "precision: $p" -- "${C04[@]}"; done;;
      06) for f in sd3 flux; do BIN=$bin $W/runa.sh P06-$p s06 $f "precision: $p" -- "${C06[@]}"; done;;
      06b) for f in sd3 flux; do BIN=$bin $W/runa.sh P06b-$p s06 $f "precision: $p" -- "${C06[@]}"; done;;
      06c|0306c) BIN=$bin $W/runa.sh P$nn-$p s06 sd3 "precision: $p" -- "${C06[@]}";;
      07) BIN=$bin $W/runa.sh P07-$p s01 dite "precision: $p" -- "${C01[@]}";;
    esac
  done
done
