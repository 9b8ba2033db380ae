#!/bin/bash
# plants2.sh : 06, 07 (added after plants.sh), into r/P<NN>-<prec>
W=/work/main/docs/audit-2026-11-30i/work; B=/tmp/audit16-work/bin
S_dp='dp2|dp: 2'; S_u='uly2|ulysses: 2'; S_r='ring2|ring: 2'
for p in bf16 fp32; do
  BIN=$B/06-vae-scale-factor-bf16-lastdp $W/runa.sh P06-$p t dit "precision: $p" -- "$S_dp" "$S_u"
  BIN=$B/06-vae-scale-factor-bf16-lastdp $W/runa.sh P06-$p s sd3 "precision: $p" -- "$S_dp" "$S_u"
  BIN=$B/07-dit-mlp-scale-bf16-sp-default $W/runa.sh P07-$p t dit "precision: $p" -- "$S_dp" "$S_u" "$S_r"
done
