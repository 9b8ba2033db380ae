# 10 patch-lastrank-mlp-eps-after-warmup: DiT under displaced patch parallelism, after the first step (the case's
# warmup_steps 1: the asynchronous steps): the LAST rank's MLP LayerNorm (norm2) uses eps 1e-5, not 1e-6 (the norm
# eps fault moved to one rank's asynchronous steps). Keyed: the last rank, patch parallelism, evaluation >= 1.
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/models/dit.c '        rp_d_layernorm(ctx, h, xs, NULL, NULL, (int)BTl, C, mlp_ln_eps);' '        { extern int rp_audit18_flags; /* AUDIT18-10 */
        const int late = (rp_audit18_flags & 1) && ctx->par && ctx->par->pp && ctx->par->fwd_eval >= 1;
        rp_d_layernorm(ctx, h, xs, NULL, NULL, (int)BTl, C, late ? 1e-5f : mlp_ln_eps); }'
