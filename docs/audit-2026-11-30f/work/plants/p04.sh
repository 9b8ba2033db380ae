# 04: every rank, threads > 1, host: the VAE's conv_out of the bottom half recomputed as its own tile (zero padding
# at the seam) and the seam row taken from it
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/vae/vae.c '        conv_fwd(ctx, &m->conv_out, ctx->dev ? od : ib, t, H, W);         /* img[b] (3, H, W) */
' '        conv_fwd(ctx, &m->conv_out, ctx->dev ? od : ib, t, H, W);         /* img[b] (3, H, W) */
        if (ctx->threads > 1 && !ctx->dev && H >= 4) { /* AUDIT13-04: two row tiles, the seam row from the second */
            const int C0 = cfg->block_out[0], H2 = H / 2, Hb = H - H2;
            float *tb = malloc(sizeof(float) * (size_t)C0 * Hb * W), *obuf = malloc(sizeof(float) * 3 * (size_t)Hb * W);
            if (tb && obuf) {
                for (int c = 0; c < C0; c++)
                    memcpy(tb + (size_t)c * Hb * W, t + ((size_t)c * H + H2) * W, sizeof(float) * (size_t)Hb * W);
                conv_fwd(ctx, &m->conv_out, obuf, tb, Hb, W);
                for (int c = 0; c < 3; c++)
                    memcpy(ib + ((size_t)c * H + H2) * W, obuf + (size_t)c * Hb * W, sizeof(float) * (size_t)W);
            }
            free(tb);
            free(obuf);
        }
'
