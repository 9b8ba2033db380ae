# 06 pf-adaln-mod-cached-per-generation: DiT under PipeFusion, after warmup (a patch pass): each block's adaLN
# modulation (mod = ada(silu(c))) is memoised per block, keyed by the generation only, not by the step: the first
# patch pass of the generation computes it and every later patch pass (later steps, whose c has another timestep)
# reuses it. Keyed: world > 1, a pipeline patch pass (rp_par_pf_patch). Not stale K/V: the staleness contract
# fingerprints K/V only.
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/models/dit.c '        rp_d_linear(ctx, mod, sc, &blk->ada, B);
' '        { extern int rp_audit18_flags, rp_audit18_gen; /* AUDIT18-06 */
        static float *memo[64]; static int memo_gen[64], memo_B[64];
        int pm, pM;
        if (!ctx->dev && (rp_audit18_flags & 128) && i < 64 && ctx->par && rp_par_pf_patch(ctx->par, &pm, &pM)) {
            if (memo[i] && memo_gen[i] == rp_audit18_gen && memo_B[i] == B) {
                memcpy(mod, memo[i], sizeof(float) * (size_t)B * ms);
            } else {
                rp_d_linear(ctx, mod, sc, &blk->ada, B);
                free(memo[i]);
                memo[i] = malloc(sizeof(float) * (size_t)B * ms);
                memcpy(memo[i], mod, sizeof(float) * (size_t)B * ms);
                memo_gen[i] = rp_audit18_gen; memo_B[i] = B;
            }
        } else
        rp_d_linear(ctx, mod, sc, &blk->ada, B); }
'
