#!/bin/bash
# partB.sh [NN...] : each plant on its case set and families, into r/P<NN>-<prec>; the bf16-only plants (02, 04, 05)
# run fp32 on their first family only (a control)
W=/work/main/docs/audit-2026-11-30g/work; B=/tmp/audit14-work/bin; . $W/cases.sh
for nn in ${@:-01 02 03 04 05 06}; do
  bin=$(ls $B/$nn-*)
  for p in bf16 fp32; do
    case $nn in
      01) BIN=$bin $W/runa.sh P01-$p sc sd3 "precision: $p" -- "${CC[@]}";;
      04) BIN=$bin $W/runa.sh P04-$p sc dit "precision: $p" -- "${CC[@]}";;
      06) BIN=$bin $W/runa.sh P06-$p sc ditp "precision: $p" -- "${CC[@]}";;
      02) for f in dit sd3; do [ $p = fp32 -a $f = sd3 ] || BIN=$bin $W/runa.sh P02-$p su $f "precision: $p" -- "${CU[@]}"; done;;
      03) for f in dit sd3; do BIN=$bin $W/runa.sh P03-$p su $f "precision: $p" -- "${CU[@]}"; done;;
      05) for f in sd3 flux; do [ $p = fp32 -a $f = flux ] || BIN=$bin $W/runa.sh P05-$p su $f "precision: $p" -- "${CU[@]}"; done;;
    esac
  done
done
