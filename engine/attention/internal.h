/* internal.h — helpers shared by the attention variants (not a public API).
 *
 * The row kernels (rows.c) are our own float code, so like ops.c they must
 * give the same bits on every x86-64 ISA: each is built for AVX-512, AVX2 and
 * baseline (RP_SIMD_CLONES) and does the same IEEE operations in the same
 * order on each — reductions run in 8 fixed lanes combined in a fixed tree,
 * never in whatever order a vectoriser would choose. */
#ifndef REPRO_ATTENTION_INTERNAL_H
#define REPRO_ATTENTION_INTERNAL_H

#include <stdint.h>

#include "attention.h"

/* Argument checks every variant shares (NULLs, B, H, D >= 1, Tq, Tk >= 0);
 * `who` names the variant in the message. */
rp_status rp_attn_check(const char *who, const rp_ctx *ctx, const float *out, const float *q,
                        const float *k, const float *v, int B, int H, int Tq, int Tk, int D,
                        rp_error *err);

/* Whether a call has nothing to compute: Tq == 0 (no rows), or Tk == 0 (no keys: every
 * row fully masked, so out (B, H, Tq, D) gets zeros, as math). 1: out is done. */
int rp_attn_empty(float *out, int B, int H, int Tq, int Tk, int D);

/* The (b, h) slice of a call's tensors (q, out (B, H, Tq, D), k, v (B, H, Tk, D), key
 * mask (B, Tk) or NULL), which every variant computes on its own. */
typedef struct rp_attn_bh {
    const float *q;    /* (Tq, D) */
    const float *k;    /* (Tk, D) */
    const float *v;    /* (Tk, D) */
    float *out;        /* (Tq, D) */
    const uint8_t *m;  /* (Tk) key mask, or NULL */
} rp_attn_bh;
rp_attn_bh rp_attn_bh_at(float *out, const float *q, const float *k, const float *v, const uint8_t *key_mask,
                         int b, int h, int H, int Tq, int Tk, int D);

/* S (rows, cols) with row stride ld: S[r][j] = -Inf where m[j] == 0; m (cols) or NULL. */
void rp_attn_mask_cols(float *S, int rows, int cols, int ld, const uint8_t *m);

/* max of x (n) (-Inf for n == 0 or all -Inf; NaNs are skipped). */
float rp_attn_rowmax(const float *x, int n);

/* x (n) in place: x_j = rp_expf(x_j - mx) in fp32; returns their fp32 sum (8
 * lanes, lane q summing j = q mod 8 in order, then ((0+1)+(2+3))+((4+5)+(6+7))).
 * mx == -Inf (every key masked so far) writes zeros and returns 0. */
float rp_attn_exp_sum(float *x, int n, float mx);

/* x (n) *= a, in fp32. */
void rp_attn_scale(float *x, int n, float a);

/* acc (n) = acc + x * f, each product rounded to fp32 before the add. */
void rp_attn_axpy(float *acc, const float *x, int n, float f);

/* Sliced softmax attention: out (B, H, Tq, D) for q, k, v, key_mask as the variants take
 * them, each (b, h) in slices of `rows` query rows (1 <= rows <= Tq, Tk >= 1), each slice
 * exactly the math variant's order (GEMM, mask, rp_softmax_rows, GEMM), with a rows x Tk
 * scratch. Split, and subquad's single-key-chunk path; `who` names the variant in the
 * out-of-memory error. */
rp_status rp_attn_sliced(const char *who, const rp_ctx *ctx, float *out, const float *q, const float *k,
                         const float *v, const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D,
                         float scale, int rows, rp_error *err);

#endif
