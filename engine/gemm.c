/* gemm.c — the one GEMM entry point (rp_gemm), nn.Linear, and the bf16/fp16
 * scalar conversions.
 *
 * Every matrix product of the engine goes through rp_gemm, so the three knobs
 * that change its floating-point work live here and nowhere else:
 *
 *   ctx->precision  FP32: cblas_sgemm on the inputs as given.
 *                   BF16: A and B are rounded to bf16 (round-to-nearest-even,
 *                   rp_f32_to_bf16) and the product is accumulated in fp32.
 *   ctx->reduce_split  the K reduction is done as two halves whose fp32
 *                   partial sums are added afterwards (split-K order).
 *   ctx->numerics   DEFAULT: the products are cblas_sgemm's, whose bits depend on
 *                   the shape of the call (how many rows share it, where a row
 *                   sits), the kernel set and the thread split.
 *                   INVARIANT: every product (the plain one and both halves of
 *                   reduce_split) is rp_gemm_invariant's (engine/gemm_invariant.c):
 *                   one fmaf chain over k per element, so a row's bits depend on
 *                   that row alone and dp / sequence shards give the serial bits.
 *                   The bf16 rounding and the split-K combine are the same code
 *                   in both modes (they are per element already).
 *
 * Why BF16 does not call cblas_sbgemm: Debian's libopenblas 0.3.21 is built
 * without BUILD_BFLOAT16, so cblas.h declares cblas_sbgemm but the library
 * does not export it (a link error at the first executable). We therefore
 * round A and B to bf16 values held in fp32 and call cblas_sgemm. This is the
 * same arithmetic as a bf16 GEMM with fp32 accumulation: a bf16 value has 8
 * significant bits, so the product of two of them (<= 16 bits) is exact in
 * fp32 and the only rounding left is the fp32 accumulation, exactly as in
 * sbgemm. (Only the BLAS's own summation order could differ, which is the
 * BLAS's choice in both cases.) The fp32 copies cost 2x the memory of bf16
 * copies; they are scratch for one call.
 *
 * Threads: DEFAULT, OpenBLAS's (set process-wide by rp_ctx_apply); INVARIANT,
 * ctx->threads pthreads per call (0: one). */
#include "ops.h"

#include <assert.h>
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastmath.h"

/* Scratch allocation for void ops: they have no error path in their contract
 * (ops.h), so running out of memory here is fatal. abort() rather than exit()
 * so that a core dump / debugger shows where. 64-byte aligned: the invariant
 * kernel's packed panels are read a cache line (one zmm) at a time. */
float *rp_gemm_scratch(size_t nfloat) {
    void *p = NULL;
    if (nfloat > SIZE_MAX / sizeof(float) ||
        posix_memalign(&p, 64, nfloat ? nfloat * sizeof(float) : 1) != 0) {
        fprintf(stderr, "repro: out of memory allocating %zu floats of GEMM scratch\n", nfloat);
        abort();
    }
    return p;
}

/* ---- bf16 / fp16 scalar conversions ---------------------------------------- */

static inline uint32_t f32_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static inline float bits_f32(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

/* Same as c10::round_to_nearest_even (torch's float -> bfloat16): NaN becomes
 * the canonical quiet NaN 0x7FC0 (sign dropped, as torch does); everything else
 * is rounded to nearest, ties to even, by adding 0x7FFF + lsb and truncating.
 * Finite values at or above the halfway point to 2^128 round to +-Inf. */
uint16_t rp_f32_to_bf16(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    uint32_t bias = ((u >> 16) & 1u) + 0x7fffu;
    return (uint16_t)((u + bias) >> 16);
}

float rp_bf16_to_f32(uint16_t x) { return bits_f32((uint32_t)x << 16); }

/* IEEE binary16 -> binary32, exact (every half is a float). */
float rp_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* Inf / NaN: keep the payload, shifted into place */
        return bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0) return bits_f32(sign);
        /* subnormal: man * 2^-24, exact in float */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 127 - 15) << 23) | (man << 13));
}

/* binary32 -> binary16, round to nearest even, with gradual underflow;
 * |x| >= 65520 (the halfway point above 65504) becomes Inf; NaN stays a
 * quiet NaN (0x7E00 with the sign, as c10's fp16_ieee_from_fp32_value). */
uint16_t rp_f32_to_f16(float x) {
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;            /* NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00u;           /* overflow / Inf */
    if (a >= 0x38800000u) {                                /* normal half: |x| >= 2^-14 */
        uint32_t e = (a >> 23) - 127 + 15;
        uint32_t m = a & 0x7fffffu;
        uint32_t h = (e << 10) | (m >> 13);
        uint32_t rem = m & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* carry may bump e: fine */
        return sign | (uint16_t)h;
    }
    if (a <= 0x33000000u) return sign;                     /* <= 2^-25: ties to 0 (even) */
    /* subnormal half: value in units of 2^-24 is m * 2^(E-126), E the float's
     * biased exponent (102..112), so shift the 24-bit significand right. */
    uint32_t E = a >> 23;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - E; /* 14..24 */
    uint32_t h = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) h++;      /* may reach 0x400 = 2^-14: correct */
    return sign | (uint16_t)h;
}

/* ---- GEMM ---------------------------------------------------------------------- */

/* Integer operations only, so every clone gives the same bits; the clones matter because a
 * bf16 GEMM rounds both operands (a weight included) at every call. */
RP_SIMD_CLONES
void rp_bf16_round(float *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = f32_bits(src[i]);
        uint32_t r = (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u /* rp_f32_to_bf16's NaN */
                                                      : (u + ((u >> 16) & 1u) + 0x7fffu) & 0xffff0000u;
        dst[i] = bits_f32(r);
    }
}

/* Rounds a (rows, cols) matrix with leading dimension ld to bf16 values held in
 * fp32, packed densely into dst (rows, cols). */
static void round_bf16_pack(float *dst, const float *src, int rows, int cols, int ld) {
    for (int r = 0; r < rows; r++) rp_bf16_round(dst + (size_t)r * cols, src + (size_t)r * ld, (size_t)cols);
}

/* What a GEMM ran, noted in the run's trace where it is decided ("gemm.ran.<what>" = "1", once
 * per run): the classifier (cls_asked) holds the notes to case.json, so a knob a GEMM ignored
 * at its point of use (a split dropped for some shapes, the library's product in invariant
 * numerics) shows even where the numbers cannot tell (bitwise the reference's). */
static void note_ran(const rp_ctx *ctx, const char *what) {
    if (ctx->trace) rp_trace_note_once(ctx->trace, what, "1");
}

/* C (M, N) = alpha * op(A) op(B) + beta * C with BLAS semantics (beta == 0:
 * C is not read), fp32 as given. K >= 1. The one place that picks the product:
 * cblas_sgemm, or rp_gemm_invariant under numerics invariant. */
static void sgemm(const rp_ctx *ctx, int transA, int transB, int M, int N, int K, float alpha,
                  const float *A, int lda, const float *B, int ldb, float beta,
                  float *C, int ldc) {
    note_ran(ctx, ctx->numerics == RP_NUMERICS_INVARIANT ? "gemm.ran.invariant" : "gemm.ran.blas");
    if (ctx->numerics == RP_NUMERICS_INVARIANT) {
        rp_gemm_invariant(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                          ctx->threads > 1 ? ctx->threads : 1);
        return;
    }
    assert(ctx->numerics == RP_NUMERICS_DEFAULT);
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb,
                beta, C, ldc);
}

/* C = beta * C, with beta == 0 writing zeros (NaN/Inf in C not propagated, as BLAS). */
static void scale_c(float *C, int M, int N, int ldc, float beta) {
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc;
        if (beta == 0.0f) memset(c, 0, (size_t)N * sizeof(float));
        else for (int j = 0; j < N; j++) c[j] = beta * c[j];
    }
}

/* Split-K order, mirroring a GPU split-K kernel's fixup:
 *   K1 = K/2 (floor), K2 = K - K1
 *   P0 = op(A)[:, :K1] op(B)[:K1, :]    (fp32 GEMM, alpha 1, beta 0)
 *   P1 = op(A)[:, K1:] op(B)[K1:, :]    (fp32 GEMM, alpha 1, beta 0)
 *   C  = alpha * (P0 + P1) + beta * C   (each op rounded to fp32, left to right;
 *                                        beta == 0: the beta term is skipped)
 * With beta == 0, P1 is written straight into C to save one temporary (same
 * bits: fp32 addition is commutative). */
static void gemm_split(const rp_ctx *ctx, int transA, int transB, int M, int N, int K,
                       float alpha, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc) {
    assert(K >= 2);
    int K1 = K / 2, K2 = K - K1;
    /* second-half views: op(A)[:, K1:] and op(B)[K1:, :] */
    const float *A2 = transA ? A + (size_t)K1 * lda : A + K1;
    const float *B2 = transB ? B + K1 : B + (size_t)K1 * ldb;
    float *P0 = rp_gemm_scratch((size_t)M * N);                   /* (M, N) */
    sgemm(ctx, transA, transB, M, N, K1, 1.0f, A, lda, B, ldb, 0.0f, P0, N);
    if (beta == 0.0f) {
        sgemm(ctx, transA, transB, M, N, K2, 1.0f, A2, lda, B2, ldb, 0.0f, C, ldc);
        for (int i = 0; i < M; i++) {
            float *c = C + (size_t)i * ldc;
            const float *p0 = P0 + (size_t)i * N;
            for (int j = 0; j < N; j++) c[j] = alpha * (p0[j] + c[j]);
        }
    } else {
        float *P1 = rp_gemm_scratch((size_t)M * N);               /* (M, N) */
        sgemm(ctx, transA, transB, M, N, K2, 1.0f, A2, lda, B2, ldb, 0.0f, P1, N);
        for (int i = 0; i < M; i++) {
            float *c = C + (size_t)i * ldc;
            const float *p0 = P0 + (size_t)i * N, *p1 = P1 + (size_t)i * N;
            for (int j = 0; j < N; j++) {
                float ab = alpha * (p0[j] + p1[j]);
                c[j] = ab + beta * c[j];
            }
        }
        free(P1);
    }
    free(P0);
}

void rp_gemm(const rp_ctx *ctx, int transA, int transB, int M, int N, int K,
             float alpha, const float *A, int lda, const float *B, int ldb,
             float beta, float *C, int ldc) {
    assert(ctx && C);
    assert(M >= 0 && N >= 0 && K >= 0);
    assert(ldc >= N);
    assert(transA ? lda >= M : lda >= K);
    assert(transB ? ldb >= K : ldb >= N);
    if (M == 0 || N == 0) return;
    if (K == 0) { /* empty sum: C = beta * C (BLAS would reject lda = 0 for K = 0) */
        scale_c(C, M, N, ldc, beta);
        return;
    }
    assert(A && B);

    /* the own check (ops.h): the call's arguments as given, and the C it reads */
    const rp_gemm_check *chk = ctx->numerics == RP_NUMERICS_DEFAULT ? ctx->gemm_check : NULL;
    if (chk && chk->take && !chk->take(chk->user)) chk = NULL;
    const float *A0 = A, *B0 = B;
    const int lda0 = lda, ldb0 = ldb;
    float *C0 = chk && beta != 0.0f ? malloc(sizeof(float) * (size_t)M * N) : NULL; /* (M, N) */
    for (int i = 0; C0 && i < M; i++) memcpy(C0 + (size_t)i * N, C + (size_t)i * ldc, sizeof(float) * N);

    float *Ab = NULL, *Bb = NULL;
    if (ctx->precision == RP_PREC_BF16) {
        /* Pack the stored matrices (not op()) densely, rounding to bf16. */
        int ar = transA ? K : M, ac = transA ? M : K;
        int br = transB ? N : K, bc = transB ? K : N;
        Ab = rp_gemm_scratch((size_t)ar * ac);                    /* (ar, ac) */
        Bb = rp_gemm_scratch((size_t)br * bc);                    /* (br, bc) */
        round_bf16_pack(Ab, A, ar, ac, lda);
        round_bf16_pack(Bb, B, br, bc, ldb);
        A = Ab; lda = ac;
        B = Bb; ldb = bc;
    } else {
        assert(ctx->precision == RP_PREC_FP32);
    }

    /* K < 2 cannot be split: one half would be empty, so the split order and the
     * plain order are the same computation (alpha * AB + beta * C). */
    if (ctx->reduce_split && K >= 2) {
        note_ran(ctx, "gemm.ran.split");
        gemm_split(ctx, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    } else {
        if (K >= 2) note_ran(ctx, "gemm.ran.unsplit");
        sgemm(ctx, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }

    free(Ab);
    free(Bb);
    if (chk && (beta == 0.0f || C0)) /* out of memory for C0: unchecked */
        rp_gemm_check_call(ctx, chk, transA, transB, M, N, K, alpha, A0, lda0, B0, ldb0, beta, C0, C, ldc);
    free(C0);
}

/* out (M, out) = in (M, in) @ weight^T (in, out) + bias.
 * Bias order follows torch's CPU addmm: out is pre-filled with the bias and the
 * GEMM runs with beta = 1 (so with reduce_split the bias is added after the
 * two halves: alpha*(P0+P1) + 1*bias). */
void rp_linear(const rp_ctx *ctx, float *out, const float *in, const rp_linear_w *w, int M) {
    assert(w && w->weight && w->in > 0 && w->out > 0 && M >= 0);
    float beta = 0.0f;
    if (w->bias) {
        for (int i = 0; i < M; i++)
            memcpy(out + (size_t)i * w->out, w->bias, (size_t)w->out * sizeof(float));
        beta = 1.0f;
    }
    rp_gemm(ctx, 0, 1, M, w->out, w->in, 1.0f, in, w->in, w->weight, w->in, beta, out, w->out);
}
