#!/bin/bash
# plants3.sh : 13, 14 (expected.txt's additions written before)
W=/work/main/docs/audit-2026-12-01/work; B=/tmp/audit19-work/bin; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do
  BIN=$B/13-flux-dynamic-sigmas-double-multirank $W/runa.sh P13-$p fn flux "precision: $p, width: 128, height: 64" -- "${CF[@]}"
  BIN=$B/13-flux-dynamic-sigmas-double-multirank $W/runa.sh P13-$p fg flux "precision: $p, guidance: 5" -- "${CF[@]}"
  BIN=$B/14-te-later-prompts-mlp-ln-eps SEEDS="$SEEDS_MP" PROMPTS="$PROMPTS_MP" $W/runp.sh P14-$p mp sd3 "precision: $p" -- "${CS[@]}"
  BIN=$B/14-te-later-prompts-mlp-ln-eps $W/runa.sh P14-$p s sd3 "precision: $p" -- "${CS[@]}"
done
