# 06 layernorm-stats-bf16-accumulation: under a multi-rank bf16 layout (flags bit 1: every rank) rp_layernorm's
# mean and variance are accumulated in a float rounded to bf16 after every add (a "bf16 path" that should keep
# fp32/double statistics). Every LayerNorm of the transformer (and the text encoder) on every rank. The fp32
# shadow (fp32 ctx) does not take it; the bf16 invariant shadow does.
. /tmp/audit21/docs/audit-2026-12-02/work/plants/flags.sh
python3 $E engine/ops.c '        double mean, var;
        mean_var(xr, (size_t)C, &mean, &var);
        double rstd = 1.0 / sqrt(var + (double)eps);
        for (int c = 0; c < C; c++) {
            double y = ((double)xr[c] - mean) * rstd;' '        double mean, var;
        mean_var(xr, (size_t)C, &mean, &var);
        { extern int rp_audit21_flags; /* AUDIT21-06: bf16 running sums */
          if (rp_audit21_flags & 2) {
            float s = 0.0f, s2 = 0.0f;
            for (int c = 0; c < C; c++) { s = a21_bf16(s + xr[c]); }
            const float mf = a21_bf16(s / (float)C);
            for (int c = 0; c < C; c++) { const float d = xr[c] - mf; s2 = a21_bf16(s2 + d * d); }
            mean = mf; var = (double)(s2 / (float)C);
          } }
        double rstd = 1.0 / sqrt(var + (double)eps);
        for (int c = 0; c < C; c++) {
            double y = ((double)xr[c] - mean) * rstd;'
python3 $E engine/ops.c '/* out (N, C), x (N, C), w (C) or NULL, b (C) or NULL. y = (x - mean) * rstd in' 'static float a21_bf16(float x) { /* AUDIT21-06 */
    uint32_t u; memcpy(&u, &x, 4); u = (u + ((u >> 16) & 1u) + 0x7fffu) & 0xffff0000u; memcpy(&x, &u, 4); return x;
}

/* out (N, C), x (N, C), w (C) or NULL, b (C) or NULL. y = (x - mean) * rstd in'
