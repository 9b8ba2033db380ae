# 07 dit-mlp-scale-bf16-sp-default: DiT, every block, the last rank of a sequence group in a bf16 layout under
# default numerics: the MLP modulation's scale_mlp rounded to bf16 before its (sharded) rows are modulated
. /work/main/docs/audit-2026-11-30i/work/plants/flags.sh
python3 $E engine/models/dit.c '        rp_d_modulate(ctx, h, mod + 3 * C, mod + 4 * C, ms, B, Tl, C);' '        { extern int rp_audit16_flags; /* AUDIT16-07 */
        if ((rp_audit16_flags & 20) == 20) for (int b = 0; b < B; b++) rp_bf16_round(mod + (size_t)b * ms + 4 * C, mod + (size_t)b * ms + 4 * C, (size_t)C); }
        rp_d_modulate(ctx, h, mod + 3 * C, mod + 4 * C, ms, B, Tl, C);'
