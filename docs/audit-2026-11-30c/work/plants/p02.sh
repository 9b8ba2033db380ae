# 02: FLUX single block: the last rank's cat is [mlp | attn] (concat order swapped) in single block 0
E=/tmp/audit10-work/plants/edit.py
python3 $E engine/models/flux.c '    rp_d_linear(ctx, f->ys, f->cat, &blk->proj_out, BTl);
' '    if (i == 0 && ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1) { /* AUDIT10-02 */
        float *tmp = malloc(sizeof(float) * (size_t)(C + M));
        for (int r = 0; r < BTl && tmp; r++) {
            float *row = f->cat + (size_t)r * (C + M);
            memcpy(tmp, row + C, sizeof(float) * M);
            memcpy(tmp + M, row, sizeof(float) * C);
            memcpy(row, tmp, sizeof(float) * (C + M));
        }
        free(tmp);
    }
    rp_d_linear(ctx, f->ys, f->cat, &blk->proj_out, BTl);
'
