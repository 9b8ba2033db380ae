#!/bin/bash
# clean2.sh : 07's case set (dite: DDIM eta 0.5) on the clean build, into r/C-<prec>
W=/work/main/docs/audit-2026-11-30f/work; . $W/cases.sh
for p in fp32 bf16; do $W/runa.sh C-$p s01 dite "precision: $p" -- "${C01[@]}"; done
