# 02: text encoder (SD3 / FLUX): on the last rank in bf16 only, the first padding token is an attention key
E=/tmp/audit11-work/plants/edit.py
python3 $E engine/models/text_encoder.c '    const float scale = (float)(1.0 / sqrt((double)Dh));
    for (int i = 0; i < cfg->depth; i++) {' '    const float scale = (float)(1.0 / sqrt((double)Dh));
    const int a11 = ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1 && ctx->precision == RP_PREC_BF16 && n < L; /* AUDIT11-02 */
    if (a11) w->mask[n] = 1;
    for (int i = 0; i < cfg->depth; i++) {'
python3 $E engine/models/text_encoder.c '    rp_layernorm(w->h, w->xs, m->lnf_w, m->lnf_b, L, D, TE_LN_EPS);
' '    if (a11) w->mask[n] = 0;
    rp_layernorm(w->h, w->xs, m->lnf_w, m->lnf_b, L, D, TE_LN_EPS);
'
