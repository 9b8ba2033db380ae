# 04: the last rank decodes the item of global index 3 with its image clamped to [-1, 0.96] before 8-bit quantization
E="python3 /tmp/audit9-work/plants/edit.py"; P=engine/pipeline/pipeline.c
$E $P '            if (st == RP_OK) rp_image_to_rgb8_cast(res->rgb + (size_t)b * H * W * 3, img, 1, H, W, truncate);' '            if (st == RP_OK && ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1 &&
                req->items[b].global_index == 3) /* AUDIT9-04: clamp range off for one item */
                for (size_t p = 0; p < per_img; p++) img[p] = fminf(img[p], 0.96f);
            if (st == RP_OK) rp_image_to_rgb8_cast(res->rgb + (size_t)b * H * W * 3, img, 1, H, W, truncate);'
