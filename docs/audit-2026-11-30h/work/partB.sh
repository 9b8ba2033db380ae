#!/bin/bash
# partB.sh [NN...] : each plant on its families' case sets, into r/P<NN>-<prec>
W=/work/main/docs/audit-2026-11-30h/work; B=/tmp/audit15-work/bin; . $W/cases.sh
for nn in ${@:-01 02 03 04 05 06}; do
  bin=$(ls $B/$nn-*)
  for p in bf16 fp32; do
    case $nn in
      01) BIN=$bin $W/runa.sh P01-$p s sd3 "precision: $p" -- "${CS[@]}"; BIN=$bin $W/runa.sh P01-$p f flux "precision: $p" -- "${CF[@]}";;
      02) BIN=$bin $W/runa.sh P02-$p s sd3 "precision: $p" -- "${CS[@]}";;
      04) BIN=$bin $W/runa.sh P04-$p d sd3d "precision: $p" -- "${CD[@]}"; BIN=$bin $W/runa.sh P04-$p f flux "precision: $p" -- "${CF[@]}";;
      03|05|06) BIN=$bin $W/runa.sh P$nn-$p f flux "precision: $p" -- "${CF[@]}";;
    esac
  done
done
