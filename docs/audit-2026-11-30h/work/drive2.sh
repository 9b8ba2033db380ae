#!/bin/bash
# drive2.sh : 07's case set q on the clean build (r/C-<prec>) and on 07 (r/P07-<prec>)
W=/work/main/docs/audit-2026-11-30h/work; . $W/cases.sh; bin=$(ls /tmp/audit15-work/bin/07-*)
for p in bf16 fp32; do for f in dit sd3; do
  $W/runa.sh C-$p q $f "precision: $p" -- "${CQ[@]}"
  BIN=$bin $W/runa.sh P07-$p q $f "precision: $p" -- "${CQ[@]}"
done; done
