/* attention.h — scaled dot-product attention as a swappable component.
 *
 * Every variant has the same contract, so models never know which one ran:
 *   q (B, H, Tq, D), k (B, H, Tk, D), v (B, H, Tk, D)  ->  out (B, H, Tq, D)
 *   out = softmax(scale * q k^T + mask) v
 * key_mask (B, Tk): nonzero = attend, 0 = masked out (text padding); NULL = all.
 * A query row whose keys are all masked gets zeros (not NaN).
 * Variants differ only in the order of their floating-point work. */
#ifndef REPRO_ATTENTION_H
#define REPRO_ATTENTION_H

#include <stdint.h>

#include "../ctx.h"
#include "../error.h"

rp_status rp_attention(const rp_ctx *ctx, float *out, const float *q, const float *k,
                       const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                       int Tk, int D, float scale, rp_error *err);

/* The math variant: per (b, h) one GEMM for scores, row softmax, one GEMM for PV. */
rp_status rp_attention_math(const rp_ctx *ctx, float *out, const float *q, const float *k,
                            const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                            int Tk, int D, float scale, rp_error *err);

/* Parses "math" | "split" | "subquad" | "flash" | "auto"; RP_ERR_INVALID otherwise. */
rp_status rp_attn_kind_parse(const char *s, rp_attn_kind *out, rp_error *err);

#endif
