# 07 gemm-bias-twice-oddM-lastrank: rp_linear, the last rank of a multi-rank layout, every precision and numerics:
# when M (the rows) is odd the bias is added once more after the GEMM (a remainder-row epilogue applied twice)
. /work/main/docs/audit-2026-11-30h/work/plants/flags.sh
python3 $E engine/gemm.c '    rp_gemm(ctx, 0, 1, M, w->out, w->in, 1.0f, in, w->in, w->weight, w->in, beta, out, w->out);
}' '    rp_gemm(ctx, 0, 1, M, w->out, w->in, 1.0f, in, w->in, w->weight, w->in, beta, out, w->out);
    extern int rp_audit15_flags; /* AUDIT15-07 */
    if (w->bias && (M & 1) && (rp_audit15_flags & 1))
        for (int j = 0; j < w->out; j++) out[(size_t)(M - 1) * w->out + j] += w->bias[j];
}'
