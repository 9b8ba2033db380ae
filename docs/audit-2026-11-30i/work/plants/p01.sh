# 01 sd3-ctx-ffmod-shift-chunk-sp-bf16: SD3 joint block 0, the last rank of a sequence group in bf16: the text
# stream's FF modulation takes its shift from chunk 0 (shift_msa) instead of chunk 3 (shift_mlp)
. /work/main/docs/audit-2026-11-30i/work/plants/flags.sh
python3 $E engine/models/sd3.c '        rp_d_modulate(ctx, a->hc, a->modc + 3 * D, a->modc + 4 * D, mcs, B, L, D);' '        { extern int rp_audit16_flags; /* AUDIT16-01 */
        rp_d_modulate(ctx, a->hc, a->modc + ((rp_audit16_flags & 6) == 6 && i == 0 ? 0 : 3) * D, a->modc + 4 * D, mcs, B, L, D); }'
