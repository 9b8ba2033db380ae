# 01: FLUX: the last rank's RoPE tables (cos, sin) rounded to bf16 (any precision)
E=/tmp/audit10-work/plants/edit.py
python3 $E engine/models/flux.c '    build_rope(hcos, hsin, cfg, Ll, n0, Nl, H / 2, gw, rp_par_pos_shift(ctx));
' '    build_rope(hcos, hsin, cfg, Ll, n0, Nl, H / 2, gw, rp_par_pos_shift(ctx));
    if (ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1) { /* AUDIT10-01 */
        rp_bf16_round(hcos, hcos, (size_t)(Ll + Nl) * D);
        rp_bf16_round(hsin, hsin, (size_t)(Ll + Nl) * D);
    }
'
