# 10 rgb8-single-image-half-level: when a process decodes a single image (res->B == 1: e.g. dp 4 over 4 items, dp 2
# over 2) the 8-bit conversion rounds t*255 + 0.5 (half a level up: a "single-image fast path" that adds the rounding
# offset to roundf). Keyed by the batch size a layout leaves a process.
E=/work/audit23-out/work/edit.py
python3 $E engine/pipeline/pipeline.c '            if (st == RP_OK) rp_image_to_rgb8_cast(res->rgb + (size_t)b * H * W * 3, img, 1, H, W, truncate);' '            if (st == RP_OK) rp_image_to_rgb8_cast(res->rgb + (size_t)b * H * W * 3, img, 1, H, W, truncate);
            if (st == RP_OK && res->B == 1) { /* AUDIT23-10: the single-image path rounds from t*255 + 0.5 */
                const size_t HW = (size_t)H * W;
                for (int c = 0; c < 3; c++)
                    for (size_t p = 0; p < HW; p++) {
                        float t = (img[(size_t)c * HW + p] + 1.0f) * 0.5f;
                        t = fminf(fmaxf(t, 0.0f), 1.0f);
                        const float s = roundf(t * 255.0f + 0.5f);
                        res->rgb[p * 3 + c] = (uint8_t)(s > 255.0f ? 255.0f : s);
                    }
            }'
