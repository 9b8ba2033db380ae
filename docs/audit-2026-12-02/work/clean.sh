#!/bin/bash
# clean.sh : every case set on the clean build, into r/C-<prec>
W=/tmp/audit21/docs/audit-2026-12-02/work; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  for f in dit sd3 flux; do $W/runa.sh C-$p v $f "precision: $p" -- "${V[@]}"; done
  $W/runa.sh C-$p s dit "precision: $p" -- "${S[@]}"
  $W/runa.sh C-$p s sd3 "precision: $p" -- "${S[@]}"
  $W/runa.sh C-$p s flux "precision: $p" -- "${SF[@]}"
  $W/runa.sh C-$p f flux "precision: $p" -- "${F[@]}"
  $W/runa.sh C-$p m ditm "precision: $p" -- "${M[@]}"
  $W/runa.sh C-$p n dita "precision: $p" -- "${N[@]}"
  $W/runa.sh C-$p n ditp "precision: $p" -- "${N[@]}"
done
