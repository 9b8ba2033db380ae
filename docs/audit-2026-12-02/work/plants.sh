#!/bin/bash
# plants.sh : each plant on its sets, fp32 then bf16, into r/P<NN>-<prec> (one sweep at a time)
W=/tmp/audit21/docs/audit-2026-12-02/work; B=/tmp/audit21-work/bin; . $W/cases.sh
run() { nn=$1; shift; BIN=$(ls $B/$nn-*) $W/runa.sh "$@"; }
for nn in ${PL:-01 02 03 04 05 06 07 08 09}; do
 for p in ${PRECS:-fp32 bf16}; do
  case $nn in
   01) for f in dit sd3 flux; do run $nn P$nn-$p v $f "precision: $p" -- "${V[@]}"; done; run $nn P$nn-$p m ditm "precision: $p" -- "${M[@]}";;
   02|08) for f in dit sd3 flux; do run $nn P$nn-$p v $f "precision: $p" -- "${V[@]}"; done;;
   03) run $nn P$nn-$p f flux "precision: $p" -- "${F[@]}";;
   04) run $nn P$nn-$p s dit "precision: $p" -- "${S[@]}"; run $nn P$nn-$p s sd3 "precision: $p" -- "${S[@]}"
       run $nn P$nn-$p s flux "precision: $p" -- "${SF[@]}"; run $nn P$nn-$p n dita "precision: $p" -- "${N[@]}";;
   05|06) run $nn P$nn-$p s dit "precision: $p" -- "${S[@]}"; run $nn P$nn-$p s sd3 "precision: $p" -- "${S[@]}"
       run $nn P$nn-$p s flux "precision: $p" -- "${SF[@]}"
       for f in dit sd3 flux; do run $nn P$nn-$p v $f "precision: $p" -- "${V[6]}"; done
       [ $nn = 06 ] && run $nn P$nn-$p f flux "precision: $p" -- "${F[@]}";;
   10) for f in dit sd3 flux; do run $nn P$nn-$p t $f "precision: $p" -- "${T[@]}"; done;;
   11|12) for f in dit sd3; do run $nn P$nn-$p r $f "precision: $p" -- "${R[@]}"; done;;
   07) run $nn P$nn-$p m ditm "precision: $p" -- "${M[@]}";;
   09) run $nn P$nn-$p n dita "precision: $p" -- "${N[@]}"; run $nn P$nn-$p n ditp "precision: $p" -- "${N[@]}"
       run $nn P$nn-$p m ditm "precision: $p" -- "${M[@]}";;
  esac
 done
done
