# 08 dit-pf-final-norm-eps-last-patch: DiT's final LayerNorm takes eps 1e-5 (for 1e-6) in PipeFusion's pass over
# the LAST pipeline patch (a per-patch tail path with its own constant), every stage alike. Epsilon-sized.
# Keyed: any multi-rank layout (bit 7); acts only in patch passes (after warmup, and the fresh-key fill steps).
. /work/main/docs/audit-2026-12-01b/work/plants/flags.sh
python3 $E engine/models/dit.c '    rp_d_layernorm(ctx, h, xs, NULL, NULL, (int)BTl, C, 1e-6f);
    rp_d_modulate' '    { /* AUDIT20-08 */
        extern int rp_audit20_flags;
        int m20, M20;
        const int last20 = (rp_audit20_flags & 128) && ctx->par && rp_par_pf_patch(ctx->par, &m20, &M20) &&
                           m20 == M20 - 1;
        rp_d_layernorm(ctx, h, xs, NULL, NULL, (int)BTl, C, last20 ? 1e-5f : 1e-6f);
    }
    rp_d_modulate'
