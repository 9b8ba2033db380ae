/* split.c — split attention: the math variant over query slices.
 *
 * ComfyUI/Fooocus's attention_split (and A1111's "Doggettx" optimisation)
 * bound the memory of the score matrix by computing it q_chunk query rows at a
 * time; each slice is exactly the math order (GEMM, mask, softmax, GEMM). A
 * row's scores, softmax and output depend only on that row, so whether the
 * slicing changes bits is purely a property of the BLAS: whether its result
 * for a row depends on how many other rows share the call (on a GPU it often
 * does, through the tile/split-K choice per shape). tests/unit report it. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

rp_status rp_attention_split(const rp_ctx *ctx, float *out, const float *q, const float *k,
                             const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                             int Tk, int D, float scale, int q_chunk, rp_error *err) {
    RP_TRY(rp_attn_check("split", ctx, out, q, k, v, B, H, Tq, Tk, D, err));
    if (q_chunk < 1)
        return RP_FAIL(err, RP_ERR_INVALID, "split attention: q_chunk must be >= 1 query rows (got %d)",
                       q_chunk);
    if (Tq == 0) return RP_OK;
    if (Tk == 0) { /* no keys: every row fully masked -> zeros, as math */
        memset(out, 0, (size_t)B * H * Tq * D * sizeof(float));
        return RP_OK;
    }
    const int rows = q_chunk < Tq ? q_chunk : Tq;
    float *S = malloc((size_t)rows * Tk * sizeof(float));  /* (rows, Tk) scores, then P */
    if (!S)
        return RP_FAIL(err, RP_ERR_NOMEM, "split attention: cannot allocate the %d x %d score slice",
                       rows, Tk);
    for (int b = 0; b < B; b++) {
        const uint8_t *m = key_mask ? key_mask + (size_t)b * Tk : NULL;  /* (Tk) */
        for (int h = 0; h < H; h++) {
            size_t bh = (size_t)b * H + h;
            rp_attn_sliced_bh(ctx, out + bh * Tq * D,       /* (Tq, D) */
                              q + bh * Tq * D,              /* (Tq, D) */
                              k + bh * Tk * D,              /* (Tk, D) */
                              v + bh * Tk * D,              /* (Tk, D) */
                              m, Tq, Tk, D, scale, rows, S);
        }
    }
    free(S);
    return RP_OK;
}
