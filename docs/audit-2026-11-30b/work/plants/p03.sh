# 03: the last rank's unconditional branch only: DiT null-class embedding [0] and SD3 "" prompt pooled [0] scaled 1+2^-12
E="python3 /tmp/audit9-work/plants/edit.py"; P=engine/pipeline/pipeline.c; D=engine/models/dit.c
$E $P '            st = rp_te_encode(te, ctx, &empty, 1, out->neg_context, NULL, out->neg_pooled, err);' '            st = rp_te_encode(te, ctx, &empty, 1, out->neg_context, NULL, out->neg_pooled, err);
            if (st == RP_OK && ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1)
                out->neg_pooled[0] *= 1.0f + 0x1p-12f; /* AUDIT9-03 */'
$E $D '    for (int b = 0; b < B; b++) rp_d_copy(ctx, yemb + (size_t)b * C, m->y_table + (size_t)y[b] * C, (size_t)C);' '    for (int b = 0; b < B; b++) {
        rp_d_copy(ctx, yemb + (size_t)b * C, m->y_table + (size_t)y[b] * C, (size_t)C);
        if (y[b] == cfg->num_classes && !ctx->dev && ctx->par && ctx->par->world > 1 &&
            ctx->par->rank == ctx->par->world - 1)
            yemb[(size_t)b * C] *= 1.0f + 0x1p-12f; /* AUDIT9-03: the null class, last rank */
    }'
