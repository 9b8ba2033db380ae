#!/bin/bash
# plants2.sh : clean2.sh first, then 08 (a: dit), 09 (pip: sd3, flux), 10 (a: dit, sd3, flux), fp32 then bf16
W=/work/main/docs/audit-2026-12-01b/work; B=/tmp/audit20-work/bin; . $W/cases.sh
run() { nn=$1; shift; BIN=$(ls $B/$nn-*) $W/runa.sh "$@"; }
$W/clean2.sh
for nn in ${PL:-08 09 10}; do
 for p in ${PRECS:-fp32 bf16}; do
  case $nn in
   08) run $nn P$nn-$p a dit "precision: $p" -- "${AP[@]}";;
   09) for f in sd3 flux; do run $nn P$nn-$p pip $f "precision: $p" -- "${PIP[@]}"; done;;
   10) for f in dit sd3 flux; do run $nn P$nn-$p a $f "precision: $p" -- "${AP[@]}"; done;;
  esac
 done
done
