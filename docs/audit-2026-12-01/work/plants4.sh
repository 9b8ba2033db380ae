#!/bin/bash
# plants4.sh : clean spf / fpf (approximate layouts), then 14 on spf and 13 on fpf
W=/work/main/docs/audit-2026-12-01/work; B=/tmp/audit19-work/bin; . $W/cases.sh
PF=( 'pf2|pipefusion: 2, warmup_steps: 1' 'patch2|patch: 2, warmup_steps: 1' )
for p in ${PRECS:-fp32 bf16}; do
  $W/runa.sh C-$p spf sd3 "precision: $p" -- "${PF[@]}"
  $W/runa.sh C-$p fpf flux "precision: $p, width: 128, height: 64" -- "${PF[@]}"
  BIN=$B/14-te-later-prompts-mlp-ln-eps $W/runa.sh P14-$p spf sd3 "precision: $p" -- "${PF[@]}"
  BIN=$B/13-flux-dynamic-sigmas-double-multirank $W/runa.sh P13-$p fpf flux "precision: $p, width: 128, height: 64" -- "${PF[@]}"
done
