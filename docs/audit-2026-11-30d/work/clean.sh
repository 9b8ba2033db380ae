#!/bin/bash
# clean.sh : the shared matrices on the clean build, into r/C-<prec>
W=/tmp/audit11-work; . $W/cases.sh
for p in fp32 bf16; do
  $W/runa.sh C-$p dit "precision: $p" -- "${DIT[@]}"
  $W/runa.sh C-$p sd3 "precision: $p" -- "${SD3[@]}"
  $W/runa.sh C-$p flux "precision: $p" -- "${FLUX[@]}"
done
