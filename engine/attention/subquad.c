/* subquad.c — sub-quadratic attention (Rabe & Staats, "Self-attention Does Not
 * Need O(n^2) Memory"), in the order of the sub_quadratic_attention.py that
 * ComfyUI, diffusers' SubQuadraticCrossAttnProcessor and A1111 ship.
 *
 * Per (b, h) and per query chunk Q (n <= q_chunk rows):
 *   kv_chunk >= Tk: that code's fast path, plain softmax attention on Q (the split
 *     order, same function), so subquad(q, kv >= Tk) == split(q) bit for bit.
 *   otherwise, for each key/value chunk c of up to kv_chunk keys, on its own:
 *     S_c (n, m)  = scale Q K_c^T                     GEMM
 *     mx_c (n)    = rowmax S_c (masked keys -Inf)
 *     E_c         = exp(S_c - mx_c) in fp32; w_c (n) = rowsum E_c in fp32
 *     PV_c (n, D) = E_c V_c                           GEMM
 *   then per row, with M = max_c mx_c:
 *     f_c = exp(mx_c - M); acc = sum_c PV_c f_c and wsum = sum_c w_c f_c in chunk
 *     order (each product rounded, then added); out = acc / wsum.
 * That is the original's summarise-then-combine (it stacks every chunk's
 * summary, then rescales to the global max), not flash's running rescale: every
 * chunk's exp uses its own max and is rescaled once. A chunk whose keys are all
 * masked has mx_c = -Inf, E_c = 0, f_c = 0; a row with every key masked has
 * M = -Inf and gets zeros, as math. Memory: the nck = ceil(Tk / kv_chunk) chunk
 * summaries of a query chunk, nck * n * (D + 2) floats, as the original holds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../fastmath.h"
#include "../ops.h"
#include "internal.h"

rp_status rp_attention_subquad(const rp_ctx *ctx, float *out, const float *q, const float *k,
                               const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                               int Tk, int D, float scale, int q_chunk, int kv_chunk,
                               rp_error *err) {
    RP_TRY(rp_attn_check("subquad", ctx, out, q, k, v, B, H, Tq, Tk, D, err));
    if (q_chunk < 1 || kv_chunk < 1)
        return RP_FAIL(err, RP_ERR_INVALID, "subquad attention: q_chunk and kv_chunk must be >= 1 "
                       "(got q_chunk %d, kv_chunk %d)", q_chunk, kv_chunk);
    rp_attn_note_ran(ctx->trace, "subquad", q_chunk, kv_chunk);
    if (rp_attn_empty(out, B, H, Tq, Tk, D)) return RP_OK;
    const int rows = q_chunk < Tq ? q_chunk : Tq;
    if (kv_chunk >= Tk) /* one key chunk: the fast path */
        return rp_attn_sliced("subquad", ctx, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, rows, err);
    const int kc = kv_chunk, nck = (Tk + kc - 1) / kc;
    float *S = malloc((size_t)rows * kc * sizeof(float));          /* (rows, kc) S_c, then E_c */
    float *PV = malloc((size_t)nck * rows * D * sizeof(float));    /* (nck, rows, D) */
    float *mx = malloc((size_t)nck * rows * sizeof(float));        /* (nck, rows) chunk maxima */
    float *ws = malloc((size_t)nck * rows * sizeof(float));        /* (nck, rows) chunk weight sums */
    if (!S || !PV || !mx || !ws) {
        free(S); free(PV); free(mx); free(ws);
        return RP_FAIL(err, RP_ERR_NOMEM, "subquad attention: cannot allocate %d chunk summaries of "
                       "%d x %d (%.1f MiB)", nck, rows, D, (double)nck * rows * D * 4 / 1048576.0);
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const rp_attn_bh bh = rp_attn_bh_at(out, q, k, v, key_mask, b, h, H, Tq, Tk, D);
            for (int i0 = 0; i0 < Tq; i0 += rows) {
                const int n = Tq - i0 < rows ? Tq - i0 : rows;
                const float *qc = bh.q + (size_t)i0 * D;   /* (n, D) */
                /* summarise every key chunk on its own */
                for (int c = 0; c < nck; c++) {
                    const int j0 = c * kc, mk = Tk - j0 < kc ? Tk - j0 : kc;
                    float *pv = PV + (size_t)c * rows * D;   /* (n, D) */
                    rp_gemm(ctx, 0, 1, n, mk, D, scale, qc, D, bh.k + (size_t)j0 * D, D, 0.0f, S, mk);
                    rp_attn_mask_cols(S, n, mk, mk, bh.m ? bh.m + j0 : NULL);
                    for (int r = 0; r < n; r++) {
                        float *row = S + (size_t)r * mk;
                        float cm = rp_attn_rowmax(row, mk);
                        mx[(size_t)c * rows + r] = cm;
                        ws[(size_t)c * rows + r] = rp_attn_exp_sum(row, mk, cm);
                    }
                    rp_gemm(ctx, 0, 0, n, D, mk, 1.0f, S, mk, bh.v + (size_t)j0 * D, D, 0.0f, pv, D);
                }
                /* combine: rescale each chunk to the global max, sum in chunk order, divide */
                for (int r = 0; r < n; r++) {
                    float *o = bh.out + (size_t)(i0 + r) * D;   /* (D) */
                    float M = -INFINITY;
                    for (int c = 0; c < nck; c++) {
                        float cm = mx[(size_t)c * rows + r];
                        M = cm > M ? cm : M;
                    }
                    memset(o, 0, (size_t)D * sizeof(float));
                    if (M == -INFINITY) continue;   /* every key masked: zeros */
                    float wsum = 0.0f;
                    for (int c = 0; c < nck; c++) {
                        float cm = mx[(size_t)c * rows + r];
                        float f = cm == -INFINITY ? 0.0f : rp_expf(cm - M);
                        rp_attn_axpy(o, PV + ((size_t)c * rows + r) * D, D, f);
                        float wf = ws[(size_t)c * rows + r] * f;
                        wsum = wsum + wf;
                    }
                    for (int d = 0; d < D; d++) o[d] = o[d] / wsum;
                }
            }
        }
    free(S); free(PV); free(mx); free(ws);
    return RP_OK;
}
