# 10 vae-decode-hw-swapped-multirank: decode_all hands the VAE the latent's width and height swapped (h, w as w, h)
# in a multi-rank run: a non-square latent (B=1 at a time) is decoded as a transposed grid of the same size, the
# image scrambled; the latents are right. Acts only where h != w. Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '            st = rp_vae_decode(vae, ctx, img, latents + b * per_lat, 1, res->h, res->w, err);' '            { /* AUDIT19-10 */
                extern int rp_audit19_flags;
                const int sw = (rp_audit19_flags & 128) != 0;
                st = rp_vae_decode(vae, ctx, img, latents + b * per_lat, 1, sw ? res->w : res->h, sw ? res->h : res->w, err);
            }'
