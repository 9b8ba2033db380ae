#!/bin/bash
# clean.sh : every case set on the clean build, into r/C-<prec>
W=/work/main/docs/audit-2026-12-01b/work; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  $W/runa.sh C-$p a dit "precision: $p" -- "${AP[@]}"
  $W/runa.sh C-$p a sd3 "precision: $p" -- "${AP[@]}"
  $W/runa.sh C-$p a flux "precision: $p" -- "${AP[@]}"
  $W/runa.sh C-$p pi sd3 "precision: $p" -- "${PI[@]}"
  $W/runa.sh C-$p pi flux "precision: $p" -- "${PIF[@]}"
done
