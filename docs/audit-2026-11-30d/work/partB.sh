#!/bin/bash
# partB.sh : each plant on its families' shared matrices (cases.sh), fp32 and bf16, into r/P<NN>-<prec>
W=/tmp/audit11-work; . $W/cases.sh
run() { # NN fam...
  local nn=$1; shift; local bin=$(ls $W/bin/$nn-*)
  for p in fp32 bf16; do for f in "$@"; do
    case $f in dit) c=("${DIT[@]}");; sd3) c=("${SD3[@]}");; flux) c=("${FLUX[@]}");; esac
    BIN=$bin $W/runa.sh P$nn-$p $f "precision: $p" -- "${c[@]}"
  done; done
}
run 01 dit sd3
run 02 sd3 flux
run 03 dit sd3
run 04 dit sd3
run 05 dit flux
run 06 sd3 flux
