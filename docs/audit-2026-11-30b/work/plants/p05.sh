# 05: bf16 cases: the last rank's attention scale 1/sqrt(head_dim) rounded to bf16 (DiT, SD3)
E="python3 /tmp/audit9-work/plants/edit.py"; D=engine/models/dit.c; S=engine/models/sd3.c
$E $D '    const float scale = (float)(1.0 / sqrt((double)D)); /* timm: head_dim ** -0.5 */' '    float scale = (float)(1.0 / sqrt((double)D)); /* timm: head_dim ** -0.5 */
    if (ctx->precision == RP_PREC_BF16 && ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1)
        rp_bf16_round(&scale, &scale, 1); /* AUDIT9-05 */'
$E $S '    const float scale = (float)(1.0 / sqrt((double)hd)); /* SDPA default: 1 / sqrt(head_dim) */' '    float scale = (float)(1.0 / sqrt((double)hd)); /* SDPA default: 1 / sqrt(head_dim) */
    if (ctx->precision == RP_PREC_BF16 && ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1)
        rp_bf16_round(&scale, &scale, 1); /* AUDIT9-05 */'
