# 03: SD3: on the last rank the text stream's last update (ff_context of block depth-2) is skipped
E=/tmp/audit10-work/plants/edit.py
python3 $E engine/models/sd3.c '        rp_d_gated_add(ctx, a->cs, a->modc + 5 * D, mcs, a->yc, B, L, D);
    }

    snprintf(name, sizeof name, "transformer_blocks.%d", i);' '        if (!(i == m->cfg.depth - 2 && ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1)) /* AUDIT10-03 */
        rp_d_gated_add(ctx, a->cs, a->modc + 5 * D, mcs, a->yc, B, L, D);
    }

    snprintf(name, sizeof name, "transformer_blocks.%d", i);'
