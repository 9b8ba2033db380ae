#!/bin/bash
# partA2.sh : partA's split cases with a legal chunk (split takes attn_q_chunk only; partA's 'split c16' and
# 'uly2 split rsplit' were CONFIG_ERROR), subquad with both chunks, and a sharpened (sharpen: 4, reference too) set
W=/work/main/docs/audit-2026-11-30g/work
A=( 'split q16|attention: split, attn_q_chunk: 16' 'subquad c16|attention: subquad, attn_q_chunk: 16, attn_kv_chunk: 16'
    'uly2 split rsplit|ulysses: 2, attention: split, attn_q_chunk: 16, reduce_split: 1'
    'dp2 subquad c16 t2|dp: 2, attention: subquad, attn_q_chunk: 16, attn_kv_chunk: 16, threads: 2' )
S=( 'flash|attention: flash' 't2|threads: 2' 'sandy|blas_core: Sandybridge' 'dp2 subquad|dp: 2, attention: subquad' 'uly2 flash|ulysses: 2, attention: flash' )
for p in ${PRECS:-bf16 fp32}; do
  for f in ${FAMS:-dit sd3 flux}; do STEPS=4 $W/runa.sh A-$p sA2 $f "precision: $p" -- "${A[@]}"; done
  for f in dit sd3; do STEPS=4 $W/runa.sh A-$p sAs $f "precision: $p, sharpen: 4" -- "${S[@]}"; done
done
