#!/bin/bash
# clean.sh : every case set on the clean build, into r/C-<prec> (STEPS=4; one sweep at a time)
W=/work/audit23-out/work; . $W/cases.sh; export STEPS=4
for p in ${PRECS:-fp32 bf16}; do
  for f in dit sd3 flux; do $W/runa.sh C-$p v $f "precision: $p" -- "${V[@]}"; done
  $W/runa.sh C-$p s dit "precision: $p" -- "${S[@]}"
  $W/runa.sh C-$p s sd3 "precision: $p" -- "${S[@]}"
  $W/runa.sh C-$p s flux "precision: $p" -- "${SF[@]}"
  $W/runa.sh C-$p f flux "precision: $p" -- "${F[@]}"
  for f in dit sd3 flux; do $W/runa.sh C-$p r $f "precision: $p" -- "${R[@]}"; done
  SEEDS="$BIGSEEDS" $W/runa.sh C-$p b dit "precision: $p" -- "${B[@]}"
  SEEDS="$BIGSEEDS" $W/runa.sh C-$p b sd3 "precision: $p" -- "${B[@]}"
  SEEDS="$BIGSEEDS2" $W/runa.sh C-$p b flux "precision: $p" -- "${B[@]}"
done
