#!/bin/bash
# plants.sh : each plant on its sets, fp32 then bf16, into r/P<NN>-<prec> (one sweep at a time)
W=/work/main/docs/audit-2026-12-01b/work; B=/tmp/audit20-work/bin; . $W/cases.sh
run() { nn=$1; shift; BIN=$(ls $B/$nn-*) $W/runa.sh "$@"; }
for nn in ${PL:-01 02 03 04 05 06 07}; do
 for p in ${PRECS:-fp32 bf16}; do
  case $nn in
   01|04|05) for f in dit sd3 flux; do run $nn P$nn-$p a $f "precision: $p" -- "${AP[@]}"; done;;
   02) for f in sd3 flux; do run $nn P$nn-$p a $f "precision: $p" -- "${AP[@]}"; done;;
   03) run $nn P$nn-$p a dit "precision: $p" -- "${AP[@]}";;
   06) run $nn P$nn-$p pi sd3 "precision: $p" -- "${PI[@]}";;
   07) run $nn P$nn-$p pi sd3 "precision: $p" -- "${PI[@]}"; run $nn P$nn-$p pi flux "precision: $p" -- "${PIF[@]}";;
  esac
 done
done
