/* flash.c — FlashAttention-2's forward algorithm on the CPU (Dao 2023, Alg. 1).
 *
 * Per (b, h) and per query tile Q (n <= q_chunk rows), with fp32 state per row
 * m = -Inf (running max), l = 0 (running sum), O (n, D) = 0 (unnormalised):
 *   for each key/value tile (up to kv_chunk keys, in order):
 *     S (n, mk) = scale Q K_t^T                                   GEMM
 *     masked keys -> -Inf
 *     m' = max(m, rowmax S); alpha = exp(m - m'); P = exp(S - m')  fp32
 *     l = alpha l + rowsum P (fp32, rows.c lane order)
 *     O = alpha O (skipped when alpha == 1: exact either way), then O += P V_t
 *                                                                 GEMM, beta 1
 *     m = m'
 *   out = O * (1 / l)        FA2 divides once, at the end, by the reciprocal
 * A row whose keys so far are all masked keeps m = -Inf: P = 0 and alpha is not
 * applied (exp(-Inf - -Inf) would be NaN); if it stays so, l = 0 and the row
 * gets zeros, as math. Unlike subquad, each exp uses the running max at that
 * tile, and earlier tiles are rescaled as often as the max grows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../fastmath.h"
#include "../ops.h"
#include "internal.h"

rp_status rp_attention_flash(const rp_ctx *ctx, float *out, const float *q, const float *k,
                             const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                             int Tk, int D, float scale, int q_chunk, int kv_chunk,
                             rp_error *err) {
    RP_TRY(rp_attn_check("flash", ctx, out, q, k, v, B, H, Tq, Tk, D, err));
    if (q_chunk < 1 || kv_chunk < 1)
        return RP_FAIL(err, RP_ERR_INVALID, "flash attention: q_chunk and kv_chunk (tile sizes) must be "
                       ">= 1 (got q_chunk %d, kv_chunk %d)", q_chunk, kv_chunk);
    rp_attn_note_ran(ctx->trace, "flash", q_chunk, kv_chunk);
    if (rp_attn_empty(out, B, H, Tq, Tk, D)) return RP_OK;
    const int br = q_chunk < Tq ? q_chunk : Tq, bc = kv_chunk < Tk ? kv_chunk : Tk;
    float *S = malloc((size_t)br * bc * sizeof(float));   /* (br, bc) scores, then P */
    float *O = malloc((size_t)br * D * sizeof(float));    /* (br, D) unnormalised output */
    float *mrun = malloc((size_t)br * sizeof(float));     /* (br) running max */
    float *lrun = malloc((size_t)br * sizeof(float));     /* (br) running sum */
    if (!S || !O || !mrun || !lrun) {
        free(S); free(O); free(mrun); free(lrun);
        return RP_FAIL(err, RP_ERR_NOMEM, "flash attention: cannot allocate %d x %d tiles", br, bc);
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const rp_attn_bh bh = rp_attn_bh_at(out, q, k, v, key_mask, b, h, H, Tq, Tk, D);
            for (int i0 = 0; i0 < Tq; i0 += br) {
                const int n = Tq - i0 < br ? Tq - i0 : br;
                memset(O, 0, (size_t)n * D * sizeof(float));
                for (int r = 0; r < n; r++) { mrun[r] = -INFINITY; lrun[r] = 0.0f; }
                for (int j0 = 0; j0 < Tk; j0 += bc) {
                    const int mk = Tk - j0 < bc ? Tk - j0 : bc;
                    rp_gemm(ctx, 0, 1, n, mk, D, scale, bh.q + (size_t)i0 * D, D, bh.k + (size_t)j0 * D, D,
                            0.0f, S, mk);
                    rp_attn_mask_cols(S, n, mk, mk, bh.m ? bh.m + j0 : NULL);
                    for (int r = 0; r < n; r++) {
                        float *row = S + (size_t)r * mk;
                        float tm = rp_attn_rowmax(row, mk);
                        float mnew = tm > mrun[r] ? tm : mrun[r];
                        float rs = rp_attn_exp_sum(row, mk, mnew);   /* zeros if mnew = -Inf */
                        if (mnew == -INFINITY) continue;             /* nothing seen yet */
                        float alpha = rp_expf(mrun[r] - mnew);       /* exp(-Inf) = 0 on the first */
                        float la = alpha * lrun[r];
                        lrun[r] = la + rs;
                        if (alpha != 1.0f) rp_attn_scale(O + (size_t)r * D, D, alpha);
                        mrun[r] = mnew;
                    }
                    rp_gemm(ctx, 0, 0, n, D, mk, 1.0f, S, mk, bh.v + (size_t)j0 * D, D, 1.0f, O, D);
                }
                for (int r = 0; r < n; r++) {
                    float *o = bh.out + (size_t)(i0 + r) * D;
                    if (lrun[r] == 0.0f) { /* every key masked */
                        memset(o, 0, (size_t)D * sizeof(float));
                        continue;
                    }
                    float inv = 1.0f / lrun[r];
                    for (int d = 0; d < D; d++) o[d] = O[(size_t)r * D + d] * inv;
                }
            }
        }
    free(S); free(O); free(mrun); free(lrun);
    return RP_OK;
}
