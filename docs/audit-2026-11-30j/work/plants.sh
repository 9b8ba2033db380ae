#!/bin/bash
# plants.sh : each plant's binary on its case subset (same set / case names as clean.sh), into r/P<NN>-<prec>
W=/work/main/docs/audit-2026-11-30j/work; B=/tmp/audit17-work/bin
S_dp='dp2|dp: 2'; S_u='uly2|ulysses: 2'; S_r='ring2|ring: 2'; S_c='cfg2|cfg_parallel: 2'; S_dc='dp2cfg2|dp: 2, cfg_parallel: 2'
for p in bf16 fp32; do
  BIN=$B/01-dit-final-gather-bf16-wire $W/runa.sh P01-$p t dit "precision: $p" -- "$S_dp" "$S_u" "$S_r"
  BIN=$B/02-sd3-ctx-attn-gate-bf16-sp $W/runa.sh P02-$p s sd3 "precision: $p" -- "$S_dp" "$S_u" "$S_r"
  BIN=$B/03-dit-last-shard-mlp-gate-bf16 $W/runa.sh P03-$p t dit "precision: $p" -- "$S_dp" "$S_u" "$S_r"
  BIN=$B/04-flux-img-mlp-gate-bf16-lastrank $W/runa.sh P04-$p f flux "precision: $p" -- "$S_dp" "$S_u" "$S_r"
  BIN=$B/05-flux-mu-local-seqlen-sp $W/runa.sh P05-$p f flux "precision: $p" -- "$S_dp" "$S_u" "$S_r"
  BIN=$B/06-flux-img-knorm-eps-lastrank $W/runa.sh P06-$p f flux "precision: $p" -- "$S_dp" "$S_u" "$S_r"
  BIN=$B/07-dit-uncond-seg-yemb-bf16 $W/runa.sh P07-$p t dit "precision: $p" -- "$S_dp" "$S_c" "$S_dc"
done
