# 05: the model MLPs' GELU (DiT, FLUX double blocks' ff and single blocks' proj_mlp) on the last rank in bf16 only:
# exact erf GELU instead of the tanh approximation
E=/tmp/audit11-work/plants/edit.py
python3 $E engine/models/dit.c '        rp_d_gelu_tanh(ctx, mh, mh, BTl * M);' '        if (ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1 && ctx->precision == RP_PREC_BF16 && !ctx->dev) rp_gelu_erf(mh, mh, BTl * M); /* AUDIT11-05 */
        else rp_d_gelu_tanh(ctx, mh, mh, BTl * M);'
python3 $E engine/models/flux.c '    rp_d_gelu_tanh(ctx, f->mh, f->mh, f->BTl * M);' '    if (ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1 && ctx->precision == RP_PREC_BF16 && !ctx->dev) rp_gelu_erf(f->mh, f->mh, f->BTl * M); /* AUDIT11-05 */
    else rp_d_gelu_tanh(ctx, f->mh, f->mh, f->BTl * M);'
