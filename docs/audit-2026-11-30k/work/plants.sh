#!/bin/bash
# plants.sh : each plant's binary on its case subset (same set / case names as clean.sh), into r/P<NN>-<prec>
W=/work/main/docs/audit-2026-11-30k/work; B=/tmp/audit18-work/bin; . $W/cases.sh
S_dp='dp2|dp: 2'; S_u='uly2|ulysses: 2'; S_c='cfg2|cfg_parallel: 2'
for p in ${PRECS:-fp32 bf16}; do
  BIN=$B/01-ln-tail-rows-threads $W/runa.sh P01-$p t3 dit "precision: $p, threads: 3" -- "${C3[@]}"
  BIN=$B/02-dpmpp-lower-order-penultimate $W/runa.sh P02-$p m ditm "precision: $p" -- "${C3[@]}"
  BIN=$B/03-ddpm-var-uncond-later-items $W/runa.sh P03-$p p ditp "precision: $p" -- "${C3[@]}"
  BIN=$B/04-worker-eta-rank0-only $W/runa.sh P04-$p e dite "precision: $p" -- "${C3[@]}"
  BIN=$B/05-te-truncate-drops-eos PROMPTS="$PROMPTS_L" $W/runp.sh P05-$p l sd3 "precision: $p" -- "${CL[@]}"
  BIN=$B/06-pf-adaln-mod-cached-per-generation $W/runa.sh P06-$p pf dit "precision: $p" -- "${CP[@]}"
  BIN=$B/07-validator-dp-uneven-floor $W/runa.sh P07-$p d3 dit "precision: $p" -- "${CD[@]}"
  BIN=$B/08-bf16-weights-rounded-in-place $W/runa.sh P08-$p t dit "precision: $p" -- "$S_dp" "$S_u" "$S_c"
  BIN=$B/08-bf16-weights-rounded-in-place $W/runa.sh P08-$p s sd3 "precision: $p" -- "$S_dp" "$S_u"
done
