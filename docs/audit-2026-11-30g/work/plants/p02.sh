# 02: the last rank of a multi-rank layout in bf16: its VAE decode reads item b ^ 1's latents for item b (pairs swapped)
. /work/main/docs/audit-2026-11-30g/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '            st = rp_vae_decode(vae, ctx, img, latents + b * per_lat, 1, res->h, res->w, err);' '            extern int rp_audit14_flags; /* AUDIT14-02 */
            const int bb = (rp_audit14_flags & 3) == 3 && (b ^ 1) < res->B ? b ^ 1 : b;
            st = rp_vae_decode(vae, ctx, img, latents + bb * per_lat, 1, res->h, res->w, err);'
