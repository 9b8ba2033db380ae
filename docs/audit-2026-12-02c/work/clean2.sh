#!/bin/bash
# clean2.sh : sets c and g on the clean build, into r/C-<prec> (added with plants 16-18)
W=/work/audit23-out/work; . $W/cases.sh; export STEPS=4
for p in ${PRECS:-fp32 bf16}; do
  $W/runa.sh C-$p c sd3 "precision: $p" -- "${C[@]}"; $W/runa.sh C-$p c dit "precision: $p" -- "${C[@]}"
  $W/runa.sh C-$p g flux "precision: $p" -- "${G[@]}"
done
