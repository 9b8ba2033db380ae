# 06 vae-scale-factor-bf16-lastdp: the VAE decode of the last dp group of a bf16 layout divides by scaling_factor
# rounded to bf16 (vae.config.scaling_factor as a bf16 tensor: sd3/flux 1.5305 -> 1.53125, DiT 0.18215 -> 0.18262)
. /work/main/docs/audit-2026-11-30i/work/plants/flags.sh
python3 $E engine/vae/vae.c '        rp_d_div_add(ctx, x, zb, cfg->scaling_factor, cfg->shift_factor, n_z); /* x (Cl, h, w) */' '        { extern int rp_audit16_flags; /* AUDIT16-06 */
        float sf = cfg->scaling_factor; if ((rp_audit16_flags & 34) == 34) rp_bf16_round(&sf, &sf, 1);
        rp_d_div_add(ctx, x, zb, sf, cfg->shift_factor, n_z); } /* x (Cl, h, w) */'
