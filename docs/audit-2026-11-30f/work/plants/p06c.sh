# 06c: 06b without the bf16 condition (Ulysses under default numerics, every precision: the last key masked out)
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/parallel/sp_attention.c '    } else if (R == 1) st = attend(ctx, O, Q, KK, VV, NULL, B, Hu, Tg, Tgk, D, scale, err);' '    } else if (R == 1) {
        uint8_t *tm = NULL; /* AUDIT13-06c: a fused path whose key count is one short */
        if (Tgk > 1 && (tm = malloc((size_t)B * Tgk)))
            for (int b = 0; b < B; b++)
                for (int j = 0; j < Tgk; j++) tm[(size_t)b * Tgk + j] = j < Tgk - 1;
        st = attend(ctx, O, Q, KK, VV, tm, B, Hu, Tg, Tgk, D, scale, err);
        free(tm);
    }'
