# 02 sd3-ctx-attn-gate-bf16-sp: SD3 joint blocks under sequence parallelism, bf16 under default numerics, EVERY
# rank of the sequence group: the text stream's attention gate (c_gate_msa) rounded to bf16 before the gated add
# of the (replicated) text rows
. /work/main/docs/audit-2026-11-30j/work/plants/flags.sh
python3 $E engine/models/sd3.c '        rp_d_gated_add(ctx, a->cs, a->modc + 2 * D, mcs, a->yc, B, L, D);' '        { extern int rp_audit17_flags; /* AUDIT17-02 */
        if ((rp_audit17_flags & 80) == 80)
            for (int b = 0; b < B; b++) rp_bf16_round(a->modc + (size_t)b * mcs + 2 * D, a->modc + (size_t)b * mcs + 2 * D, (size_t)D); }
        rp_d_gated_add(ctx, a->cs, a->modc + 2 * D, mcs, a->yc, B, L, D);'
