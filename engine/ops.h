/* ops.h — CPU operators over plain float buffers (llm.c style).
 *
 * Layout conventions: row-major, PyTorch order. Every pointer argument has its
 * shape in a comment. Outputs may alias inputs only where a comment says so.
 * All GEMM work goes through rp_gemm so precision and reduction-order knobs
 * (ctx->precision, ctx->reduce_split, ctx->numerics) act in one place. */
#ifndef REPRO_OPS_H
#define REPRO_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "ctx.h"

/* ---- GEMM ------------------------------------------------------------- */

/* C (M, N) = alpha * op(A) @ op(B) + beta * C, row-major.
 * op(A) is (M, K): A is (M, K) with lda >= K, or (K, M) with lda >= M when transA.
 * op(B) is (K, N): B is (K, N) with ldb >= N, or (N, K) with ldb >= K when transB.
 * bf16 precision rounds A and B to bf16 (round-to-nearest-even) and accumulates
 * in fp32. reduce_split computes the K sum as [0, K/2) and [K/2, K) separately
 * and adds the halves (needs scratch; allocated internally). */
void rp_gemm(const rp_ctx *ctx, int transA, int transB, int M, int N, int K,
             float alpha, const float *A, int lda, const float *B, int ldb,
             float beta, float *C, int ldc);

/* The own check of rp_gemm's default product (gemm_check.c). Under numerics default every
 * call with ctx->gemm_check set recomputes its result with code written apart from
 * rp_gemm's (its own bf16 rounding and split-K order around a direct cblas_sgemm with the
 * arguments the contract above implies) and hands both, packed (M, N), to pair(): a
 * correct wrapper gives the same bits, so any difference is a fault between rp_gemm's
 * arguments and the BLAS (an alpha, a rounding, a split done otherwise, on one rank or on
 * all). The invariant product has its own exact comparison (the invariant shadow), and
 * OpenBLAS itself is the ground truth here, not under test. */
typedef struct rp_gemm_check {
    void (*pair)(void *user, const float *c, const float *again, size_t n);
    int (*take)(void *user); /* whether this call is checked, asked once per call; NULL: every call */
    void *user;
} rp_gemm_check;

/* The recomputation: C0 (M, N) the C the call read (beta != 0; NULL otherwise), C (ldc) the
 * call's result, the other arguments rp_gemm's as given (A and B before any rounding).
 * Calls chk->pair once. No-op for M, N or K == 0. Out of memory: no pair (unchecked). */
void rp_gemm_check_call(const rp_ctx *ctx, const rp_gemm_check *chk, int transA, int transB, int M, int N, int K,
                        float alpha, const float *A, int lda, const float *B, int ldb, float beta, const float *C0,
                        const float *C, int ldc);

/* The layout-invariant product behind ctx->numerics == RP_NUMERICS_INVARIANT
 * (engine/gemm_invariant.c). Same shapes and BLAS conventions as rp_gemm
 * (row-major; op(A) (M, K), op(B) (K, N); beta == 0: C is not read), in fp32 as
 * given (rp_gemm does any bf16 rounding and split-K before calling it). Every
 * element is exactly
 *     acc = 0.0f; for k = 0 .. K-1: acc = fmaf(op(A)[i][k], op(B)[k][j], acc);
 *     C[i][j] = beta == 0 ? alpha * acc : alpha * acc + beta * C[i][j]
 * (each operation rounded to fp32, left to right), so its bits depend only on
 * row i of op(A), column j of op(B), K, alpha, beta and C[i][j] — never on M, N,
 * where the row or column sits, the blocking, the thread count or the ISA (fmaf
 * is correctly rounded everywhere). threads <= 1: the calling thread only; more:
 * that many threads (same bits). Scratch is allocated per call (fatal if out of
 * memory): one operand packed, K x M or K x N floats (usually the smaller), plus
 * up to ~450 KiB a thread. */
void rp_gemm_invariant(int transA, int transB, int M, int N, int K, float alpha,
                       const float *A, int lda, const float *B, int ldb, float beta,
                       float *C, int ldc, int threads);

/* nfloat floats (64-byte aligned; free with free()) of GEMM scratch. GEMMs are
 * void ops with no error path, so running out of memory aborts with a message. */
float *rp_gemm_scratch(size_t nfloat);

/* A PyTorch nn.Linear: weight (out, in), bias (out) or NULL. */
typedef struct rp_linear_w {
    const float *weight; /* (out, in) */
    const float *bias;   /* (out) or NULL */
    int in, out;
} rp_linear_w;

/* out (M, w->out) = in (M, w->in) @ weight^T + bias */
void rp_linear(const rp_ctx *ctx, float *out, const float *in, const rp_linear_w *w, int M);

/* ---- bf16 helpers ------------------------------------------------------ */
uint16_t rp_f32_to_bf16(float x);   /* round to nearest even; NaN stays NaN */
float rp_bf16_to_f32(uint16_t x);
float rp_f16_to_f32(uint16_t x);    /* IEEE half -> float (for fp16 checkpoints) */
uint16_t rp_f32_to_f16(float x);    /* round to nearest even */
/* dst (n) = src (n) rounded to bf16 values held in fp32 (rp_f32_to_bf16 and back; idempotent);
 * dst may alias src. What every bf16 product rounds its operands to: rp_gemm's inputs, the
 * canonical attention's q, k, p, v. */
void rp_bf16_round(float *dst, const float *src, size_t n);

/* ---- normalisation ----------------------------------------------------- */

/* out (N, C) = (x - mean) / sqrt(var + eps) [* w + b]; w, b (C) or NULL (no affine).
 * Biased variance, as torch.nn.LayerNorm. out may alias x. */
void rp_layernorm(float *out, const float *x, const float *w, const float *b,
                  int N, int C, float eps);

/* out (N, C, HW) group-normalised over (C/G, HW) per group; w, b (C) or NULL.
 * out may alias x. */
void rp_groupnorm(float *out, const float *x, const float *w, const float *b,
                  int N, int C, int HW, int G, float eps);

/* out (N, C) = x / sqrt(mean(x^2) + eps) [* w]; w (C) or NULL. out may alias x. */
void rp_rmsnorm(float *out, const float *x, const float *w, int N, int C, float eps);

/* ---- activations (out may alias x) -------------------------------------- */
void rp_gelu_tanh(float *out, const float *x, size_t n); /* GELU(approximate="tanh") */
void rp_gelu_erf(float *out, const float *x, size_t n);  /* exact GELU */
void rp_silu(float *out, const float *x, size_t n);

/* x (rows, cols): numerically stable softmax of each row, in place. A row that is
 * entirely -Inf (every key masked) becomes zeros, not NaN. */
void rp_softmax_rows(float *x, int rows, int cols);

/* ---- DiT-style elementwise --------------------------------------------- */

/* x (B, T, C) in place: x = x * (1 + scale[b]) + shift[b]; shift, scale (B, C) with
 * row stride `mod_stride` floats (so chunks of an adaLN output can be used in place). */
void rp_modulate(float *x, const float *shift, const float *scale, int mod_stride,
                 int B, int T, int C);

/* x (B, T, C) += gate[b] * y (B, T, C); gate (B, C) with row stride mod_stride. */
void rp_gated_add(float *x, const float *gate, int mod_stride, const float *y,
                  int B, int T, int C);

/* y (n) += x (n) */
void rp_add(float *y, const float *x, size_t n);

/* ---- patches and embeddings --------------------------------------------- */

/* img (B, C, H, W) -> tokens (B, (H/p)*(W/p), C*p*p); tokens row-major over the
 * patch grid, each vector ordered (c, py, px) — the flatten order of a Conv2d
 * weight (hidden, C, p, p), so patch embed = patchify + linear. */
void rp_patchify(float *tokens, const float *img, int B, int C, int H, int W, int p);

/* tokens (B, (H/p)*(W/p), p*p*C) ordered (py, px, c) -> img (B, C, H, W); the
 * inverse layout DiT's final layer produces (einsum nhwpqc->nchpwq). */
void rp_unpatchify(float *img, const float *tokens, int B, int C, int H, int W, int p);

/* FluxPipeline._pack_latents: img (B, C, H, W) -> tokens (B, (H/2)*(W/2), 4C), tokens
 * row-major over the 2x2 grid, each vector ordered (c, py, px). H, W even. */
void rp_flux_pack(float *tokens, const float *img, int B, int C, int H, int W);

/* FluxPipeline._unpack_latents, the exact inverse: tokens (B, (H/2)*(W/2), 4C) in
 * (c, py, px) order -> img (B, C, H, W). */
void rp_flux_unpack(float *img, const float *tokens, int B, int C, int H, int W);

/* out (gh*gw, D): DiT's get_2d_sincos_pos_embed (MAE): first D/2 from the w
 * coordinate grid, last D/2 from h; each half [sin(pos*omega), cos(pos*omega)],
 * omega_i = 1 / 10000^(i/(D/4)). D must be divisible by 4. */
void rp_pos_embed_2d_sincos(float *out, int D, int gh, int gw);

/* out (B, dim): sinusoidal timestep embedding, [cos(t*f), sin(t*f)] with
 * f_i = exp(-ln(max_period) * i / (dim/2 - freq_shift)); odd dim padded with a 0.
 * DiT: freq_shift 0, max_period 10000. */
void rp_timestep_embedding(float *out, const float *t, int B, int dim,
                           float max_period, float freq_shift);

/* ---- convolution and resampling (NCHW) ------------------------------------ */

/* out (N, OC, Ho, Wo) = conv2d(in (N, IC, H, W), w (OC, IC, k, k), b (OC) or NULL),
 * square kernel k, stride s, zero padding pad; im2col + rp_gemm. */
void rp_conv2d(const rp_ctx *ctx, float *out, const float *in, const float *w, const float *b,
               int N, int IC, int H, int W, int OC, int k, int s, int pad);

/* out (N, C, 2H, 2W) = nearest-neighbour 2x upsampling of in (N, C, H, W). */
void rp_upsample_nearest2x(float *out, const float *in, int N, int C, int H, int W);

/* ---- head layout ------------------------------------------------------------ */

/* qkv (B, T, 3, H, D) -> q, k, v each (B, H, T, D) */
void rp_split_qkv_heads(float *q, float *k, float *v, const float *qkv, int B, int T, int H, int D);

/* x (B, T, H, D) -> out (B, H, T, D) */
void rp_to_heads(float *out, const float *x, int B, int T, int H, int D);

/* x (B, H, T, D) -> out (B, T, H, D) */
void rp_from_heads(float *out, const float *x, int B, int T, int H, int D);

/* ---- generalised layouts and small ops (engine/ops_layout.c): the CPU side of the
 * device ops of engine/device.h that have no older ops.h twin ---------------------- */

/* out rows of stride ldo (M, w->out) = in (M, w->in) @ weight^T + bias: rp_linear's
 * arithmetic (bias preloaded, beta = 1) with a strided output. ldo >= w->out. */
void rp_linear_ld(const rp_ctx *ctx, float *out, int ldo, const float *in, const rp_linear_w *w, int M);

/* x (B, T, H, D) -> rows [s0, s0 + T) of every (b, h) of out (B, H, S, D); S >= s0 + T. */
void rp_to_heads_rows(float *out, const float *x, int B, int T, int H, int D, int S, int s0);

/* rows [s0, s0 + T) of x (B, H, S, D) -> out (B, T, ldo), columns [0, H*D) of each row. */
void rp_from_heads_rows(float *out, int ldo, const float *x, int B, int S, int s0, int T, int H, int D);

/* out (rows, ldo)[:, :cols] = act(x (rows, ldx)[:, :cols]), act 0 GELU(tanh), 1 GELU(erf),
 * 2 SiLU (the contiguous ops per row). out may alias x when ldo == ldx. */
void rp_act_2d(int act, float *out, int ldo, const float *x, int ldx, int rows, int cols);

/* out (cols, rows) = x (rows, cols)^T */
void rp_transpose(float *out, const float *x, int rows, int cols);

/* x (rows, cols) += y^T, y (cols, rows): one fp32 add per element. */
void rp_add_transposed(float *x, const float *y, int rows, int cols);

/* out (n) = (x / div) + add, two fp32 roundings. out may alias x. */
void rp_div_add(float *out, const float *x, float div, float add, size_t n);

/* y (B, n) += x (n) for every b. */
void rp_add_bcast(float *y, const float *x, int B, size_t n);

/* FLUX RoPE, x (B, NH, T, D) in place, cosb, sinb (T, D), D even: for each pair
 * (x0, x1) at j, j + 1: y0 = x0 cos[j] + (-x1) sin[j], y1 = x1 cos[j+1] + x0 sin[j+1],
 * each product rounded before the sum. */
void rp_rope_pairs(float *x, const float *cosb, const float *sinb, int B, int NH, int T, int D);

#endif
