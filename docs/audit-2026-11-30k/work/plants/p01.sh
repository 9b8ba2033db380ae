# 01 ln-tail-rows-threads: the CPU LayerNorm (rp_d_layernorm, every family) as if split into ctx->threads row parts
# of N / threads rows, with the tail rows (N % threads) normalised by a scalar tail loop that reuses the last
# part's statistics (the previous row's mean and rstd). Keyed: threads >= 2, N % threads != 0, world > 1 (every
# rank alike). Not keyed to numerics: the invariant shadow runs the same LayerNorm at the case's thread count.
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/device/device.c '    DISPATCH(rp_layernorm(out, x, w, b, N, C, eps), d->ops->layernorm(d, out, MF(x), MF(w), MF(b), N, C, eps));' '    { extern int rp_audit18_flags; /* AUDIT18-01 */
    const int nt = ctx->threads, tail = nt >= 2 ? N % nt : 0;
    if (!ctx->dev && (rp_audit18_flags & 128) && tail && N > tail) {
        rp_layernorm(out, x, w, b, N - tail, C, eps); /* the parts */
        const float *xp = x + (size_t)(N - tail - 1) * C; /* the last part'"'"'s last row: its statistics */
        double mean = 0.0, var = 0.0;
        for (int c = 0; c < C; c++) mean += xp[c];
        mean /= C;
        for (int c = 0; c < C; c++) var += ((double)xp[c] - mean) * ((double)xp[c] - mean);
        var /= C;
        const double rstd = 1.0 / sqrt(var + (double)eps);
        for (int i = N - tail; i < N; i++)
            for (int c = 0; c < C; c++) {
                double y = ((double)x[(size_t)i * C + c] - mean) * rstd;
                if (w) y *= w[c];
                if (b) y += b[c];
                out[(size_t)i * C + c] = (float)y;
            }
        return;
    } }
    DISPATCH(rp_layernorm(out, x, w, b, N, C, eps), d->ops->layernorm(d, out, MF(x), MF(w), MF(b), N, C, eps));'
python3 $E engine/device/device.c '#include <string.h>
' '#include <string.h>
#include <math.h>
'
