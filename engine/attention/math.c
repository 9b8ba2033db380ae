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

#include <stdlib.h>

#include "../ops.h"
#include "internal.h"

rp_status rp_attention_math(const rp_ctx *ctx, float *out, const float *q, const float *k,
                            const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                            int Tk, int D, float scale, rp_error *err) {
    if (!ctx || !out || !q || !k || !v)
        return RP_FAIL(err, RP_ERR_INVALID, "attention: NULL tensor argument");
    if (B < 1 || H < 1 || D < 1 || Tq < 0 || Tk < 0)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "attention: bad shape B=%d H=%d Tq=%d Tk=%d D=%d", B, H, Tq, Tk, D);
    rp_attn_note_ran(ctx->trace, "math", 0, 0);
    if (rp_attn_empty(out, B, H, Tq, Tk, D)) return RP_OK;
    float *S = malloc((size_t)Tq * Tk * sizeof(float));   /* (Tq, Tk) scores, then P */
    if (!S)
        return RP_FAIL(err, RP_ERR_NOMEM, "attention: cannot allocate the %d x %d score matrix",
                       Tq, Tk);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const rp_attn_bh bh = rp_attn_bh_at(out, q, k, v, key_mask, b, h, H, Tq, Tk, D);
            rp_gemm(ctx, 0, 1, Tq, Tk, D, scale, bh.q, D, bh.k, D, 0.0f, S, Tk);
            rp_attn_mask_cols(S, Tq, Tk, Tk, bh.m);
            rp_softmax_rows(S, Tq, Tk);
            rp_gemm(ctx, 0, 0, Tq, D, Tk, 1.0f, S, Tk, bh.v, D, 0.0f, bh.out, D);
        }
    free(S);
    return RP_OK;
}
