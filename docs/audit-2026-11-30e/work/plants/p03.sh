# 03: the last rank keeps each decoded image in the compute dtype (bf16) before the 8-bit conversion; bf16 only
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/pipeline/pipeline.c '            if (st == RP_OK) rp_image_to_rgb8_cast(res->rgb + (size_t)b * H * W * 3, img, 1, H, W, truncate);' '            if (st == RP_OK && ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1 &&
                ctx->precision == RP_PREC_BF16)
                rp_bf16_round(img, img, per_img); /* AUDIT12-03 */
            if (st == RP_OK) rp_image_to_rgb8_cast(res->rgb + (size_t)b * H * W * 3, img, 1, H, W, truncate);'
