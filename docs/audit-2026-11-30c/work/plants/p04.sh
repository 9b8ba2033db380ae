# 04: decode_all: the last rank's images shifted right by one pixel (column 0 repeated)
E=/tmp/audit10-work/plants/edit.py
python3 $E engine/pipeline/pipeline.c '            if (st == RP_OK) rp_image_to_rgb8_cast(res->rgb + (size_t)b * H * W * 3, img, 1, H, W, truncate);
' '            if (st == RP_OK) rp_image_to_rgb8_cast(res->rgb + (size_t)b * H * W * 3, img, 1, H, W, truncate);
            if (st == RP_OK && ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1) { /* AUDIT10-04 */
                unsigned char *px = res->rgb + (size_t)b * H * W * 3;
                for (int y = 0; y < H; y++) memmove(px + ((size_t)y * W + 1) * 3, px + (size_t)y * W * 3, (size_t)(W - 1) * 3);
            }
'
