# 06: FLUX: the last rank's RoPE frequencies (1/theta^(2j/d)) rounded to bf16 before the angle (cos/sin from float64 as usual)
E=/tmp/audit10-work/plants/edit.py
python3 $E engine/models/flux.c '                double freq = 1.0 / pow((double)cfg->rope_theta, (double)(2 * j) / (double)d);' '                double freq = 1.0 / pow((double)cfg->rope_theta, (double)(2 * j) / (double)d);
                if (audit10_rope_bf16) { float ff = (float)freq; rp_bf16_round(&ff, &ff, 1); freq = ff; } /* AUDIT10-06 */'
python3 $E engine/models/flux.c 'static void build_rope(float *cosb,' 'static int audit10_rope_bf16; /* AUDIT10-06 */
static void build_rope(float *cosb,'
python3 $E engine/models/flux.c '    build_rope(hcos, hsin, cfg, Ll, n0, Nl, H / 2, gw, rp_par_pos_shift(ctx));
' '    audit10_rope_bf16 = ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1; /* AUDIT10-06 */
    build_rope(hcos, hsin, cfg, Ll, n0, Nl, H / 2, gw, rp_par_pos_shift(ctx));
'
