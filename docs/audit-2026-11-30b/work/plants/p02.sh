# 02: under a layout of several ranks, items of global index >= 2: DiT class embedding row scaled 1+2^-10 (dit.c has no
# item index: the pipeline passes it via a flag row); SD3/FLUX pooled prompt embedding [0] scaled 1+2^-10
E="python3 /tmp/audit9-work/plants/edit.py"; P=engine/pipeline/pipeline.c
$E $P '        st = rp_te_encode(te, ctx, prompts, B, out->context, NULL, out->pooled, err);' '        st = rp_te_encode(te, ctx, prompts, B, out->context, NULL, out->pooled, err);
        if (st == RP_OK && ctx->par && ctx->par->world > 1) /* AUDIT9-02: later items perturbed */
            for (int b = 0; b < B; b++)
                if (req->items[b].global_index >= 2) out->pooled[(size_t)b * m->Dpool] *= 1.0f + 0x1p-10f;'
$E $P '    for (int b = 0; b < B; b++) y[b] = req->items[b].class_id;' '    for (int b = 0; b < B; b++) y[b] = req->items[b].class_id;
    /* AUDIT9-02: items of global index >= 2 on a several-rank layout: flagged (y + 100000) for dit.c */
    for (int b = 0; b < B; b++)
        if (ctx->par && ctx->par->world > 1 && req->items[b].global_index >= 2) y[b] += 100000;'
D=engine/models/dit.c
$E $D '        if (y[b] < 0 || y[b] > cfg->num_classes)' '        if ((y[b] % 100000) < 0 || (y[b] % 100000) > cfg->num_classes)'
$E $D '    for (int b = 0; b < B; b++) rp_d_copy(ctx, yemb + (size_t)b * C, m->y_table + (size_t)y[b] * C, (size_t)C);' '    for (int b = 0; b < B; b++) {
        rp_d_copy(ctx, yemb + (size_t)b * C, m->y_table + (size_t)(y[b] % 100000) * C, (size_t)C);
        if (y[b] >= 100000 && !ctx->dev) yemb[(size_t)b * C] *= 1.0f + 0x1p-10f; /* AUDIT9-02 */
    }'
