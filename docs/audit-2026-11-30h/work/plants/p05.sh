# 05 flux-rope-shard-offset-bf16-default: FLUX under sequence parallelism, the last rank of a bf16 layout under default
# numerics: its RoPE tables start one image token late (n0 + 1)
. /work/main/docs/audit-2026-11-30h/work/plants/flags.sh
python3 $E engine/models/flux.c '    build_rope(hcos, hsin, cfg, Ll, n0, Nl, H / 2, gw, rp_par_pos_shift(ctx));' '    { extern int rp_audit15_flags; /* AUDIT15-05 */
    const int a15 = (rp_audit15_flags & 17) == 17 && ctx->par && ctx->par->sp.size > 1;
    build_rope(hcos, hsin, cfg, Ll, n0 + a15, Nl, H / 2, gw, rp_par_pos_shift(ctx)); }'
