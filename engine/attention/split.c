/* split.c — split attention: the math variant over query slices.
 *
 * ComfyUI/Fooocus's attention_split (and A1111's "Doggettx" optimisation)
 * bound the memory of the score matrix by computing it q_chunk query rows at a
 * time; each slice is exactly the math order (GEMM, mask, softmax, GEMM). A
 * row's scores, softmax and output depend only on that row, so whether the
 * slicing changes bits is purely a property of the BLAS: whether its result
 * for a row depends on how many other rows share the call (on a GPU it often
 * does, through the tile/split-K choice per shape). tests/unit report it. */
#include "internal.h"

rp_status rp_attention_split(const rp_ctx *ctx, float *out, const float *q, const float *k,
                             const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                             int Tk, int D, float scale, int q_chunk, rp_error *err) {
    RP_TRY(rp_attn_check("split", ctx, out, q, k, v, B, H, Tq, Tk, D, err));
    if (q_chunk < 1)
        return RP_FAIL(err, RP_ERR_INVALID, "split attention: q_chunk must be >= 1 query rows (got %d)",
                       q_chunk);
    rp_attn_note_ran(ctx->trace, "split", q_chunk, 0);
    if (rp_attn_empty(out, B, H, Tq, Tk, D)) return RP_OK;
    return rp_attn_sliced("split", ctx, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale,
                          q_chunk < Tq ? q_chunk : Tq, err);
}
