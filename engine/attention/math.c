/* math.c — the reference ("math") attention variant.
 *
 * Per (b, h), in this order:
 *   S (Tq, Tk) = scale * q k^T        one rp_gemm (transB), alpha = scale applied
 *                                     by the BLAS to the fp32 dot products
 *   S[:, j] = -Inf where key_mask[b, j] == 0
 *   P = softmax_rows(S)               rp_softmax_rows (fp32 exp, double sum);
 *                                     a fully masked row gives P = 0, so out = 0
 *   out (Tq, D) = P v                 one rp_gemm
 * Both GEMMs follow ctx->precision / ctx->reduce_split like every other GEMM. */
#include "attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops.h"

rp_status rp_attention_math(const rp_ctx *ctx, float *out, const float *q, const float *k,
                            const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                            int Tk, int D, float scale, rp_error *err) {
    if (!ctx || !out || !q || !k || !v)
        return RP_FAIL(err, RP_ERR_INVALID, "attention: NULL tensor argument");
    if (B < 1 || H < 1 || D < 1 || Tq < 0 || Tk < 0)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "attention: bad shape B=%d H=%d Tq=%d Tk=%d D=%d", B, H, Tq, Tk, D);
    if (Tq == 0) return RP_OK;
    if (Tk == 0) { /* no keys at all: every row is fully masked -> zeros */
        memset(out, 0, (size_t)B * H * Tq * D * sizeof(float));
        return RP_OK;
    }
    float *S = malloc((size_t)Tq * Tk * sizeof(float));   /* (Tq, Tk) scores, then P */
    if (!S)
        return RP_FAIL(err, RP_ERR_NOMEM, "attention: cannot allocate the %d x %d score matrix",
                       Tq, Tk);
    for (int b = 0; b < B; b++) {
        const uint8_t *m = key_mask ? key_mask + (size_t)b * Tk : NULL;  /* (Tk) */
        for (int h = 0; h < H; h++) {
            size_t bh = (size_t)b * H + h;
            const float *qb = q + bh * Tq * D;   /* (Tq, D) */
            const float *kb = k + bh * Tk * D;   /* (Tk, D) */
            const float *vb = v + bh * Tk * D;   /* (Tk, D) */
            float *ob = out + bh * Tq * D;       /* (Tq, D) */
            rp_gemm(ctx, 0, 1, Tq, Tk, D, scale, qb, D, kb, D, 0.0f, S, Tk);
            if (m)
                for (int i = 0; i < Tq; i++) {
                    float *row = S + (size_t)i * Tk;
                    for (int j = 0; j < Tk; j++)
                        if (!m[j]) row[j] = -INFINITY;
                }
            rp_softmax_rows(S, Tq, Tk);
            rp_gemm(ctx, 0, 0, Tq, D, Tk, 1.0f, S, Tk, vb, D, 0.0f, ob, D);
        }
    }
    free(S);
    return RP_OK;
}
