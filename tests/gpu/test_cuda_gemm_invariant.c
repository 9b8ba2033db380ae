/* test_cuda_gemm_invariant.c — rp_cuda_gemm_invariant (engine/cuda/gemm_invariant.cu)
 * against the CPU's rp_gemm_invariant, bit for bit: both compute every element as one
 * fmaf chain over k = 0 .. K-1 and round the epilogue as written, and fma is correctly
 * rounded on both sides, so there is no tolerance to choose — any differing bit fails.
 * Shapes: 1x1x1, tile edges (M, N not multiples of 64, K not a multiple of 16, K > 16
 * slices), an nn.Linear-like 8 x 3072 x 768, every (transA, transB), alpha 1 and not,
 * beta 0 (C starts as NaN: never read) and not, ldc > N (the padding never written),
 * K = 0, a product large enough for the 128-row tiles, fp32 and bf16 (the device rounds op(A) and op(B) as it stages them; the CPU's
 * reference is rp_gemm under numerics invariant and precision bf16, which rounds its inputs
 * first); then the layout invariance itself on the device: rows [off, off + m) computed
 * alone are the same bits as in the whole call. Exits 77 ("SKIP: ...") without a CUDA
 * build or device, 1 on any failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ctx.h"
#include "engine/ops.h"

#ifndef REPRO_HAVE_CUDA
int main(void) {
    printf("SKIP: this build has no CUDA (nvcc was not found at configure time)\n");
    return 77;
}
#else
#include <cuda_runtime.h>

#include "engine/cuda/cuda_gemm.h"
#include "tests/common/cuda_check.h"
#include "tests/common/test_rng.h"

static const float C_PAD = 12345.0f; /* C's columns [N, ldc): never written */

/* One case: the device's C against the CPU's, bitwise; returns 1 when they agree. */
static int check_case(int tA, int tB, int M, int N, int K, float alpha, float beta, int bf16, uint64_t seed) {
    const int lda = (tA ? M : K) + 3, ldb = (tB ? K : N) + 1, ldc = N + 2;
    const size_t na = (size_t)(tA ? K : M) * lda, nb = (size_t)(tB ? N : K) * ldb, nc = (size_t)M * ldc;
    float *A = xmalloc(sizeof(float) * na), *B = xmalloc(sizeof(float) * nb);
    float *Cref = xmalloc(sizeof(float) * nc), *Cgpu = xmalloc(sizeof(float) * nc);
    uint64_t s = seed;
    for (size_t i = 0; i < na; i++) A[i] = rng_unif(&s);
    for (size_t i = 0; i < nb; i++) B[i] = rng_unif(&s);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++)
            Cref[(size_t)i * ldc + j] = j >= N ? C_PAD : beta == 0.0f ? NAN : rng_unif(&s);
    float *dA = to_device(A, sizeof(float) * na), *dB = to_device(B, sizeof(float) * nb),
          *dC = to_device(Cref, sizeof(float) * nc);
    if (bf16) {
        rp_ctx ctx = rp_ctx_default();
        ctx.numerics = RP_NUMERICS_INVARIANT;
        ctx.precision = RP_PREC_BF16;
        rp_gemm(&ctx, tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, Cref, ldc);
    } else {
        rp_gemm_invariant(tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, Cref, ldc, 1);
    }
    rp_error err = {0};
    const rp_status st = rp_cuda_gemm_invariant(tA, tB, M, N, K, alpha, dA, lda, dB, ldb, beta, dC, ldc, bf16, 0, &err);
    CHECK(st == RP_OK, "M %d N %d K %d: %s", M, N, K, err.msg);
    CU(cudaMemcpy(Cgpu, dC, sizeof(float) * nc, cudaMemcpyDeviceToHost));
    int ok = st == RP_OK, shown = 0;
    for (size_t e = 0; e < nc; e++) {
        if (!memcmp(&Cgpu[e], &Cref[e], sizeof(float))) continue;
        if (shown++ < 3)
            printf("  (%d, %d, %d) tA %d tB %d alpha %g beta %g bf16 %d: C[%zu][%zu] gpu %a cpu %a\n", M, N, K, tA,
                   tB, (double)alpha, (double)beta, bf16, e / (size_t)ldc, e % (size_t)ldc, (double)Cgpu[e], (double)Cref[e]);
        ok = 0;
    }
    CHECK(ok, "(%d, %d, %d) tA %d tB %d alpha %g beta %g bf16 %d: not bitwise the CPU's invariant GEMM", M, N, K, tA,
          tB, (double)alpha, (double)beta, bf16);
    CU(cudaFree(dA));
    CU(cudaFree(dB));
    CU(cudaFree(dC));
    free(A); free(B); free(Cref); free(Cgpu);
    return ok;
}

/* Rows [off, off + m) of an (M, N, K) product computed alone: the same bits as in the whole
 * call (what makes a dp shard equal the serial run). */
static void check_row_shards(int M, int N, int K) {
    const size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * N;
    float *A = xmalloc(sizeof(float) * na), *B = xmalloc(sizeof(float) * nb), *full = xmalloc(sizeof(float) * nc);
    float *part = xmalloc(sizeof(float) * nc);
    uint64_t s = 77;
    for (size_t i = 0; i < na; i++) A[i] = rng_unif(&s);
    for (size_t i = 0; i < nb; i++) B[i] = rng_unif(&s);
    float *dA = to_device(A, sizeof(float) * na), *dB = to_device(B, sizeof(float) * nb),
          *dC = to_device(NULL, sizeof(float) * nc);
    rp_error err = {0};
    CHECK(rp_cuda_gemm_invariant(0, 1, M, N, K, 1.0f, dA, K, dB, K, 0.0f, dC, N, 0, 0, &err) == RP_OK, "%s", err.msg);
    CU(cudaMemcpy(full, dC, sizeof(float) * nc, cudaMemcpyDeviceToHost));
    static const int OFF[][2] = {{0, 1}, {1, 3}, {5, 64}, {63, 2}, {64, 65}};
    for (size_t t = 0; t < sizeof OFF / sizeof OFF[0]; t++) {
        const int off = OFF[t][0], m = OFF[t][1];
        if (off + m > M) continue;
        CHECK(rp_cuda_gemm_invariant(0, 1, m, N, K, 1.0f, dA + (size_t)off * K, K, dB, K, 0.0f, dC, N, 0, 0, &err) ==
                  RP_OK, "%s", err.msg);
        CU(cudaMemcpy(part, dC, sizeof(float) * (size_t)m * N, cudaMemcpyDeviceToHost));
        CHECK(!memcmp(part, full + (size_t)off * N, sizeof(float) * (size_t)m * N),
              "rows [%d, %d) of (%d, %d, %d) alone are not the whole call's bits", off, off + m, M, N, K);
    }
    CU(cudaFree(dA));
    CU(cudaFree(dB));
    CU(cudaFree(dC));
    free(A); free(B); free(full); free(part);
}

int main(void) {
    require_device();
    struct cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, 0));
    printf("device 0: %s, %d SMs, cc %d.%d\n", prop.name, prop.multiProcessorCount, prop.major, prop.minor);
    static const int SHAPES[][3] = {{1, 1, 1}, {3, 5, 7}, {65, 67, 33}, {130, 70, 300}, {64, 64, 16}, {8, 3072, 768},
                                    {4, 9, 0}};
    int cases = 0, agree = 0;
    for (size_t sh = 0; sh < sizeof SHAPES / sizeof SHAPES[0]; sh++)
        for (int t = 0; t < 4; t++)
            for (int ab = 0; ab < 4; ab++) { /* bit 0: alpha, beta; bit 1: bf16 */
                cases++;
                agree += check_case(t >> 1, t & 1, SHAPES[sh][0], SHAPES[sh][1], SHAPES[sh][2], ab & 1 ? 0.5f : 1.0f,
                                    ab & 1 ? 0.75f : 0.0f, ab >> 1, 1000 + 17 * sh + 3 * t + ab);
            }
    /* a product large enough for the 128-row tiles (306 of them: on a GPU of up to 153 SMs, the
     * H100 / H200 have 132; the shapes above take 64-tiles on any GPU of 13 SMs or more): nn.Linear's
     * transposes and their opposite, fp32 and bf16 */
    for (int t = 0; t < 4; t++) {
        cases++;
        agree += check_case(t & 1, t & 1 ? 0 : 1, 2100, 2200, 70, 1.0f, 0.0f, t >> 1, 4000 + t);
    }
    printf("%d of %d cases (fp32 and bf16) bitwise the CPU's invariant GEMM\n", agree, cases);
    check_row_shards(200, 96, 300);
    check_row_shards(2100, 2200, 70); /* the whole call in 128-tiles, the rows alone in 64-tiles */
    rp_error err = {0};
    CHECK(rp_cuda_gemm_invariant(0, 0, 2, 2, 2, 1.0f, NULL, 1, NULL, 2, 0.0f, NULL, 2, 0, 0, &err) == RP_ERR_INVALID &&
              strstr(err.msg, "leading dimension"),
          "lda 1 < K 2 not refused (%s)", err.msg);
    return finish("OK");
}
#endif
