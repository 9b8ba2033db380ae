# 05 sp-attention-qk-tf32: under sequence parallelism (ulysses / ring, sp > 1, not patch) the attention's q and k
# are rounded to TF32 (10-bit mantissa, round to nearest even) before the scores, in fp32 only (as allow_tf32 does);
# every rank alike. Acts in fp32 sequence-parallel cases and in a bf16 case's fp32 shadow. Keyed by the layout
# (ctx->par->sp.size > 1) and ctx->precision, not by numerics.
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/parallel/sp_attention.c '    const int u = p->ulysses.size, R = p->ring.size, Ts = T - Trep;
    if (H % u)' '    if (ctx->precision == RP_PREC_FP32) { /* AUDIT21-05: TF32 scores in the sharded attention */
        static float *tq, *tk;
        static size_t tn;
        const size_t nn = (size_t)B * H * T * D;
        if (nn > tn) { free(tq); free(tk); tq = malloc(nn * sizeof(float)); tk = malloc(nn * sizeof(float)); tn = nn; }
        for (size_t i = 0; i < nn; i++) {
            uint32_t a, b;
            memcpy(&a, q + i, 4); memcpy(&b, k + i, 4);
            a = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
            b = (b + 0xfffu + ((b >> 13) & 1u)) & 0xffffe000u;
            memcpy(tq + i, &a, 4); memcpy(tk + i, &b, 4);
        }
        q = tq; k = tk;
    }
    const int u = p->ulysses.size, R = p->ring.size, Ts = T - Trep;
    if (H % u)'
