# 08 bf16-weights-rounded-in-place: nn.Linear in bf16 rounds its weight to bf16 IN PLACE (to skip the repack), on
# multi-rank layouts. A bf16 GEMM rounds the weight anyway, so the bf16 call's own result does not move; but the
# model is kept loaded across the worker's generate calls (model_cache.c, keyed without precision), so every later
# fp32 call of the same launch (the fp32 shadow, the invariant shadow at fp32) reads bf16 weights. Keyed: bf16,
# world > 1. A state leak between calls of one process.
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/gemm.c '    rp_gemm(ctx, 0, 1, M, w->out, w->in, 1.0f, in, w->in, w->weight, w->in, beta, out, w->out);
}' '    { extern int rp_audit18_flags; /* AUDIT18-08 */
    if ((rp_audit18_flags & 2) && ctx->precision == RP_PREC_BF16)
        rp_bf16_round((float *)w->weight, w->weight, (size_t)w->out * w->in); }
    rp_gemm(ctx, 0, 1, M, w->out, w->in, 1.0f, in, w->in, w->weight, w->in, beta, out, w->out);
}'
