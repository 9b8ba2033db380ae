#!/bin/bash
# plants.sh : each plant's binary on its case subset (same set / case names as clean.sh), into r/P<NN>-<prec>
W=/work/main/docs/audit-2026-11-30i/work; B=/tmp/audit16-work/bin
pick() { local o=(); for s in "$@"; do o+=("$s"); done; printf '%s\n' "${o[@]}"; }
S_dp='dp2|dp: 2'; S_u='uly2|ulysses: 2'; S_r='ring2|ring: 2'; S_c='cfg2|cfg_parallel: 2'; S_dc='dp2cfg2|dp: 2, cfg_parallel: 2'
for p in bf16 fp32; do
  BIN=$B/01-sd3-ctx-ffmod-shift-chunk-sp-bf16 $W/runa.sh P01-$p s sd3 "precision: $p" -- "$S_dp" "$S_u" "$S_r"
  BIN=$B/02-dit-null-class-row-cfg1 $W/runa.sh P02-$p t dit "precision: $p" -- "$S_dp" "$S_c" "$S_dc"
  BIN=$B/03-noise-std-normalise-bf16-lastdp $W/runa.sh P03-$p t dit "precision: $p" -- "$S_dp" "$S_u"
  BIN=$B/03-noise-std-normalise-bf16-lastdp $W/runa.sh P03-$p s sd3 "precision: $p" -- "$S_dp" "$S_u"
  BIN=$B/04-dit-attn-proj-nobias-lastblock-sp $W/runa.sh P04-$p t dit "precision: $p" -- "$S_dp" "$S_u" "$S_r"
  BIN=$B/05-te-pooled-bos-lastrank $W/runa.sh P05-$p s sd3 "precision: $p" -- "$S_dp" "$S_u" "$S_c"
  BIN=$B/05-te-pooled-bos-lastrank $W/runa.sh P05-$p f flux "precision: $p" -- "$S_dp" "$S_u"
done
