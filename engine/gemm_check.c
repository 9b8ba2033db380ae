/* gemm_check.c — the own check of rp_gemm's default product (contract in ops.h).
 *
 * Why. Under the default numerics every matrix product is cblas_sgemm on what rp_gemm
 * hands it, and no exact comparison of two runs executes that hand-over: the invariant
 * shadow replaces the product by rp_gemm_invariant, and the serial reference calls the
 * BLAS with other shapes, so its bits are no check. A fault of a few roundings there (an
 * alpha 2^-20 off on one rank, one operand rounded to bf16 by truncation) stays inside the
 * envelopes. OpenBLAS's bits for one call depend only on that call's arguments (shape,
 * operands, thread count), so the same product asked for again gives the same bits.
 *
 * How. The recomputation below follows rp_gemm's contract with code of its own: its own
 * packing of the bf16 operands (round to nearest even, rp_f32_to_bf16), its own split-K
 * combine, and cblas_sgemm called directly with the leading dimensions rp_gemm uses (the
 * operands as given in fp32; dense packs in bf16). It is an oracle, so it is deliberately
 * not rp_gemm's code: sharing rp_gemm's helpers would share their faults. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* dst (rows, cols) dense = src (rows, cols; leading dimension ld) rounded to bf16 values. */
static void pack_bf16(float *dst, const float *src, int rows, int cols, int ld) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) dst[(size_t)r * cols + c] = rp_bf16_to_f32(rp_f32_to_bf16(src[(size_t)r * ld + c]));
}

static void blas(int tA, int tB, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc) {
    cblas_sgemm(CblasRowMajor, tA ? CblasTrans : CblasNoTrans, tB ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
                B, ldb, beta, C, ldc);
}

void rp_gemm_check_call(const rp_ctx *ctx, const rp_gemm_check *chk, int transA, int transB, int M, int N, int K,
                        float alpha, const float *A, int lda, const float *B, int ldb, float beta, const float *C0,
                        const float *C, int ldc) {
    if (!chk || M <= 0 || N <= 0 || K <= 0) return;
    const int bf16 = ctx->precision == RP_PREC_BF16, split = ctx->reduce_split && K >= 2;
    const int ar = transA ? K : M, ac = transA ? M : K, br = transB ? N : K, bc = transB ? K : N;
    float *a = bf16 ? malloc(sizeof(float) * (size_t)ar * ac) : NULL; /* (ar, ac) A in bf16 */
    float *b = bf16 ? malloc(sizeof(float) * (size_t)br * bc) : NULL; /* (br, bc) B in bf16 */
    float *again = malloc(sizeof(float) * (size_t)M * ldc);            /* (M, ldc) the recomputed C */
    float *half = split ? malloc(sizeof(float) * (size_t)M * N * 2) : NULL; /* (2, M, N) the K halves */
    float *mine = malloc(sizeof(float) * (size_t)M * N);                /* (M, N) C packed */
    if ((bf16 && (!a || !b)) || !again || (split && !half) || !mine) goto done;
    if (bf16) {
        pack_bf16(a, A, ar, ac, lda);
        pack_bf16(b, B, br, bc, ldb);
        A = a, lda = ac, B = b, ldb = bc;
    }
    if (!split) {
        for (int i = 0; beta != 0.0f && i < M; i++) memcpy(again + (size_t)i * ldc, C0 + (size_t)i * N, sizeof(float) * N);
        blas(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, again, ldc);
    } else {
        /* [0, K/2) and [K/2, K) each alone, then alpha (P0 + P1) (+ beta C0), left to right */
        const int K1 = K / 2;
        float *p0 = half, *p1 = half + (size_t)M * N;
        blas(transA, transB, M, N, K1, 1.0f, A, lda, B, ldb, 0.0f, p0, N);
        blas(transA, transB, M, N, K - K1, 1.0f, transA ? A + (size_t)K1 * lda : A + K1, lda,
             transB ? B + K1 : B + (size_t)K1 * ldb, ldb, 0.0f, p1, N);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                const size_t e = (size_t)i * N + j;
                const float s = alpha * (p0[e] + p1[e]);
                again[(size_t)i * ldc + j] = beta == 0.0f ? s : s + beta * C0[e];
            }
    }
    for (int i = 0; i < M; i++) {
        memcpy(mine + (size_t)i * N, C + (size_t)i * ldc, sizeof(float) * N);
        if (ldc != N) memmove(again + (size_t)i * N, again + (size_t)i * ldc, sizeof(float) * N);
    }
    chk->pair(chk->user, mine, again, (size_t)M * N);
done:
    free(a); free(b); free(again); free(half); free(mine);
}
