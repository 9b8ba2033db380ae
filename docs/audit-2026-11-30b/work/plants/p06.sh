# 06: a memo of the timestep embedding keyed by the timestep values, B and C only (not precision, numerics, threads):
# a later run in the same process (teacher, fp32 shadow, invariant shadow, leak rerun) reuses the first run's rows
E="python3 /tmp/audit9-work/plants/edit.py"; M=engine/models/embed.c
$E $M '    rp_d_timestep_embedding(ctx, tfreq, t, B, F, rp_par_max_period(ctx, 10000.0f), 0.0f);
    rp_silu_mlp(ctx, out, hid, tfreq, B, lin1, lin2);' '    rp_d_timestep_embedding(ctx, tfreq, t, B, F, rp_par_max_period(ctx, 10000.0f), 0.0f);
    rp_silu_mlp(ctx, out, hid, tfreq, B, lin1, lin2);
    /* AUDIT9-06: memo keyed loosely (t values, B, C); host runs only */
    enum { MEMO = 64, MCAP = 1 << 14 };
    static float memo_t[MEMO][8], memo_v[MEMO][MCAP];
    static int memo_B[MEMO], memo_C[MEMO], memo_n;
    const int C = lin2->out;
    if (!ctx->dev && B <= 8 && (size_t)B * C <= MCAP) {
        int hit = -1;
        for (int i = 0; i < memo_n && hit < 0; i++)
            if (memo_B[i] == B && memo_C[i] == C && !memcmp(memo_t[i], t, sizeof(float) * B)) hit = i;
        if (hit >= 0) memcpy(out, memo_v[hit], sizeof(float) * B * C);
        else if (memo_n < MEMO) {
            memcpy(memo_t[memo_n], t, sizeof(float) * B);
            memcpy(memo_v[memo_n], out, sizeof(float) * B * C);
            memo_B[memo_n] = B; memo_C[memo_n] = C; memo_n++;
        }
    }'
grep -q '<string.h>' $M || sed -i '2i #include <string.h>' $M
