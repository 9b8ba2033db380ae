# 06: Ulysses under default numerics, bf16, every rank: the gathered keys past a multiple of 16 are masked out
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/parallel/sp_attention.c '    } else if (R == 1) st = attend(ctx, O, Q, KK, VV, NULL, B, Hu, Tg, Tgk, D, scale, err);' '    } else if (R == 1) {
        uint8_t *tm = NULL; /* AUDIT13-06: a blocked bf16 path that drops the keys past a multiple of 16 */
        if (ctx->precision == RP_PREC_BF16 && Tgk % 16 && Tgk > 16 && (tm = malloc((size_t)B * Tgk)))
            for (int b = 0; b < B; b++)
                for (int j = 0; j < Tgk; j++) tm[(size_t)b * Tgk + j] = j < Tgk - Tgk % 16;
        st = attend(ctx, O, Q, KK, VV, tm, B, Hu, Tg, Tgk, D, scale, err);
        free(tm);
    }'
