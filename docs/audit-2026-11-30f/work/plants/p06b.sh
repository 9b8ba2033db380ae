# 06b: Ulysses under default numerics, bf16, every rank: the gathered attention masks out the last key (off by one)
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/parallel/sp_attention.c '    } else if (R == 1) st = attend(ctx, O, Q, KK, VV, NULL, B, Hu, Tg, Tgk, D, scale, err);' '    } else if (R == 1) {
        uint8_t *tm = NULL; /* AUDIT13-06b: a fused bf16 path whose key count is one short */
        if (ctx->precision == RP_PREC_BF16 && Tgk > 1 && (tm = malloc((size_t)B * Tgk)))
            for (int b = 0; b < B; b++)
                for (int j = 0; j < Tgk; j++) tm[(size_t)b * Tgk + j] = j < Tgk - 1;
        st = attend(ctx, O, Q, KK, VV, tm, B, Hu, Tg, Tgk, D, scale, err);
        free(tm);
    }'
