# 14 gemm-reduce-split-skipped-accumulating: rp_gemm takes the split-K path only for beta == 0 calls; every GEMM that
# accumulates into C (rp_linear with a bias: beta 1) runs unsplit although ctx->reduce_split asks for the split order.
# Acts in a case asking reduce_split (and in the reference's reduce_split twin: the envelope).
E=/work/audit23-out/work/edit.py
python3 $E engine/gemm.c '    if (ctx->reduce_split && K >= 2)
        gemm_split(' '    if (ctx->reduce_split && K >= 2 && beta == 0.0f) /* AUDIT23-14 */
        gemm_split('
