#!/bin/bash
# partA.sh : the clean build, cases varying the decoder arithmetic against the math/threads-1 reference, into r/A-<prec>
W=/work/main/docs/audit-2026-11-30g/work
A=( 'flash|attention: flash' 'subquad|attention: subquad' 'split c16|attention: split, attn_q_chunk: 16, attn_kv_chunk: 16'
    't2|threads: 2' 'rsplit|reduce_split: 1' 'haswell|blas_core: Haswell' 'sandy|blas_core: Sandybridge' 'prescott|blas_core: Prescott'
    'dp2 flash|dp: 2, attention: flash' 'dp2 t2 sandy|dp: 2, threads: 2, blas_core: Sandybridge'
    'uly2 subquad|ulysses: 2, attention: subquad' 'uly2 split rsplit|ulysses: 2, attention: split, attn_kv_chunk: 16, reduce_split: 1' )
for p in ${PRECS:-bf16 fp32}; do
  for f in ${FAMS:-dit sd3 flux}; do STEPS=4 $W/runa.sh A-$p sA $f "precision: $p" -- "${A[@]}"; done
done
