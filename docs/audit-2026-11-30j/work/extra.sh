#!/bin/bash
# extra.sh : 07's near miss (x59.9 against the factor 64 at 5 steps): the same cases at 10 steps, clean and planted,
# into r/X-C-bf16 and r/X-P07-bf16 (not in table(): X- folders)
W=/work/main/docs/audit-2026-11-30j/work; B=/tmp/audit17-work/bin
S_c='cfg2|cfg_parallel: 2'; S_dc='dp2cfg2|dp: 2, cfg_parallel: 2'
STEPS=10 $W/runa.sh X-C-bf16 t dit "precision: bf16" -- "$S_c" "$S_dc"
STEPS=10 BIN=$B/07-dit-uncond-seg-yemb-bf16 $W/runa.sh X-P07-bf16 t dit "precision: bf16" -- "$S_c" "$S_dc"
