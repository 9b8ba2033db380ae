#!/bin/bash
# plants.sh : each plant on its sets, fp32 then bf16, into r/P<NN>-<prec> (one sweep at a time; STEPS=4)
W=/work/audit23-out/work; . $W/cases.sh; BINS=/work/audit23-work/bin; export STEPS=4
run() { nn=$1; shift; BIN=$(ls $BINS/$nn-*) $W/runa.sh "$@"; }
S05=( 'uly2|ulysses: 2' 'dp2|dp: 2' )
for nn in ${PL:-01 04 05 08 08b 09 10 11 12 13 14 15}; do
 for p in ${PRECS:-fp32 bf16}; do
  case $nn in
   01|11) for f in dit sd3 flux; do run $nn P$nn-$p v $f "precision: $p" -- "${V[@]}"; done;;
   04) SEEDS="$BIGSEEDS" run $nn P$nn-$p b dit "precision: $p" -- "${B[@]}"; SEEDS="$BIGSEEDS" run $nn P$nn-$p b sd3 "precision: $p" -- "${B[@]}"
       SEEDS="$BIGSEEDS2" run $nn P$nn-$p b flux "precision: $p" -- "${B[@]}";;
   05) for f in dit sd3; do run $nn P$nn-$p s $f "precision: $p" -- "${S05[@]}"; done;;
   08|08b|09|10|13) run $nn P$nn-$p s dit "precision: $p" -- "${S[@]}"; run $nn P$nn-$p s sd3 "precision: $p" -- "${S[@]}"
       run $nn P$nn-$p s flux "precision: $p" -- "${SF[@]}";;
   12) run $nn P$nn-$p f flux "precision: $p" -- "${F[@]}";;
   14) for f in dit sd3 flux; do run $nn P$nn-$p r $f "precision: $p" -- "${R[@]}"; done;;
   16) run $nn P$nn-$p c sd3 "precision: $p" -- "${C[@]}"; run $nn P$nn-$p c dit "precision: $p" -- "${C[@]}";;
   17) run $nn P$nn-$p s sd3 "precision: $p" -- "${S[@]}"; run $nn P$nn-$p s flux "precision: $p" -- "${SF[@]}";;
   18) run $nn P$nn-$p g flux "precision: $p" -- "${G[@]}";;
   15) run $nn P$nn-$p s flux "precision: $p" -- "${SF[@]}"; run $nn P$nn-$p s sd3 "precision: $p" -- "${S[@]}";;
  esac
 done
done
