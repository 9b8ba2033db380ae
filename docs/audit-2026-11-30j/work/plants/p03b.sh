# 03b dit-last-shard-mlp-gate-bf16-anynum: 03 keyed on bf16 in either numerics (bit 1), not on default numerics (added
# after the first sweep, to test "the invariant shadow holds it where it is not numerics-keyed"). 03: DiT, every block, the LAST TOKEN SHARD (t0 + Tl == T, Tl < T: whichever rank
# computes it), bf16 under default numerics: gate_mlp rounded to bf16 before the MLP's gated add. Keyed to a part
# (the shard), not to a rank
. /work/main/docs/audit-2026-11-30j/work/plants/flags.sh
python3 $E engine/models/dit.c '        rp_d_gated_add(ctx, xs, mod + 5 * C, ms, ys, B, Tl, C);' '        { extern int rp_audit17_flags; /* AUDIT17-03b */
        if ((rp_audit17_flags & 2) && Tl < T && t0 + Tl == T)
            for (int b = 0; b < B; b++) rp_bf16_round(mod + (size_t)b * ms + 5 * C, mod + (size_t)b * ms + 5 * C, (size_t)C); }
        rp_d_gated_add(ctx, xs, mod + 5 * C, ms, ys, B, Tl, C);'
