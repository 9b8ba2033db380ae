/* test_gemm_invariant.c — rp_gemm_invariant and rp_gemm under numerics: invariant.
 *
 * The contract (ops.h) fixes every element's arithmetic exactly:
 *     acc = 0; for k: acc = fmaf(op(A)[i][k], op(B)[k][j], acc);
 *     c = beta == 0 ? alpha * acc : alpha * acc + beta * c
 * so these tests compare bits, not tolerances: against that loop written out
 * here (fmaf is correctly rounded, so the loop has one answer on every machine),
 * and between calls that see the same row inside different batches (sub-ranges
 * of rows or columns, other thread counts), which is the property numerics:
 * invariant exists for. The one tolerance, invariant vs OpenBLAS, comes from the
 * arithmetic: both are dot products of K terms in some fp32 order, each within
 * gamma_K * sum_k |a_k b_k| of the exact value (Higham 3.1, with or without FMA;
 * alpha = 1 and beta = 0 add no rounding), so they are within twice that of each
 * other. Inputs are uniform in [-1, 1): no overflow, no underflow that matters. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ctx.h"
#include "engine/ops.h"
#include "tests/common/test_rng.h"

static const double U32 = 0x1p-24;

static double gamma_n(int n) { return n * U32 / (1.0 - n * U32); }

/* op(A)[i][k] and op(B)[k][j] of row-major A, B with leading dimensions lda, ldb. */
static float op_a(const float *A, int lda, int tA, int i, int k) { return tA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]; }
static float op_b(const float *B, int ldb, int tB, int k, int j) { return tB ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]; }

/* The contract's loop, element by element. */
static void ref_gemm(int tA, int tB, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k++) acc = fmaf(op_a(A, lda, tA, i, k), op_b(B, ldb, tB, k, j), acc);
            float t = alpha * acc;
            float *c = &C[(size_t)i * ldc + j];
            *c = beta == 0.0f ? t : t + beta * *c;
        }
}

static float *alloc_f(size_t n) {
    float *p = malloc(sizeof(float) * (n ? n : 1));
    ck_assert_ptr_nonnull(p);
    return p;
}

/* (rows, ld) with the first `cols` of each row uniform and the padding NaN. */
static float *rand_matrix(int rows, int cols, int ld, uint64_t *s) {
    float *m = alloc_f((size_t)rows * ld);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < ld; c++) m[(size_t)r * ld + c] = c < cols ? rng_unif(s) : NAN;
    return m;
}

/* First element where (rows, cols) blocks x (ld lx) and y (ld ly) differ in bits, or -1. */
static long first_diff(const float *x, int lx, const float *y, int ly, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        if (memcmp(x + (size_t)r * lx, y + (size_t)r * ly, sizeof(float) * (size_t)cols) != 0)
            for (int c = 0; c < cols; c++)
                if (memcmp(x + (size_t)r * lx + c, y + (size_t)r * ly + c, sizeof(float)) != 0)
                    return (long)r * cols + c;
    return -1;
}

/* One call against the reference loop, padded leading dimensions: padding of A and
 * B is NaN (never read), padding of C a sentinel (never written), and with beta == 0
 * C starts NaN (never read). */
static void check_ref(int tA, int tB, int M, int N, int K, float alpha, float beta, int pad,
                      int threads, uint64_t seed) {
    uint64_t s = seed;
    int ar = tA ? K : M, ac = tA ? M : K, lda = ac + pad;
    int br = tB ? N : K, bc = tB ? K : N, ldb = bc + pad;
    int ldc = N + pad;
    float *A = rand_matrix(ar, ac, lda, &s), *B = rand_matrix(br, bc, ldb, &s);
    float *C = alloc_f((size_t)M * ldc), *R = alloc_f((size_t)M * ldc);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++)
            C[(size_t)i * ldc + j] = j < N ? (beta == 0.0f ? NAN : rng_unif(&s)) : 12345.0f;
    memcpy(R, C, sizeof(float) * (size_t)M * ldc);
    rp_gemm_invariant(tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, threads);
    ref_gemm(tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
    long d = first_diff(C, ldc, R, ldc, M, ldc);
    ck_assert_msg(d < 0, "tA=%d tB=%d M=%d N=%d K=%d alpha=%g beta=%g pad=%d threads=%d: "
                  "element (%ld, %ld) is %.9g, the fmaf loop gives %.9g", tA, tB, M, N, K,
                  alpha, beta, pad, threads, d / ldc, d % ldc, C[d], R[d]);
    free(A); free(B); free(C); free(R);
}

static const int DIMS[] = {1, 3, 17, 64, 129};
#define NDIMS 5

/* Every shape in DIMS^3, every transposition, alpha 1 / 0.5, beta 0 / 1 / 0.25. */
START_TEST(test_matches_fmaf_loop) {
    const float alphas[] = {1.0f, 0.5f}, betas[] = {0.0f, 1.0f, 0.25f};
    uint64_t seed = 100 + (uint64_t)_i * 1000003;
    int tA = _i & 1, tB = _i >> 1;
    for (int mi = 0; mi < NDIMS; mi++)
        for (int ni = 0; ni < NDIMS; ni++)
            for (int ki = 0; ki < NDIMS; ki++)
                for (int a = 0; a < 2; a++)
                    for (int b = 0; b < 3; b++) {
                        int pad = (mi + ni + ki + a + b) % 3 == 0 ? 0 : 1 + (mi + 2 * ki) % 5;
                        int threads = 1 + (mi + ni + ki) % 3;
                        check_ref(tA, tB, DIMS[mi], DIMS[ni], DIMS[ki], alphas[a], betas[b], pad,
                                  threads, seed++);
                    }
}
END_TEST

/* Larger than one cache block in every direction (K > 256 k per block, more than
 * one tile of rows and lanes), threads 1 and 2: still the fmaf loop. */
START_TEST(test_matches_fmaf_loop_blocked) {
    int tA = _i & 1, tB = _i >> 1;
    check_ref(tA, tB, 301, 290, 700, 1.0f, 0.0f, 3, 2, 7 + _i);
    check_ref(tA, tB, 150, 520, 513, 0.5f, 0.25f, 0, 1, 17 + _i);
}
END_TEST

/* K = 0: the empty chain, acc = 0, through the same epilogue. */
START_TEST(test_empty_k) {
    float A[1] = {NAN}, B[1] = {NAN}, C[6], R[6];
    uint64_t s = 3;
    for (int i = 0; i < 6; i++) C[i] = R[i] = rng_unif(&s);
    rp_gemm_invariant(0, 0, 2, 3, 0, 0.5f, A, 1, B, 3, 0.25f, C, 3, 1);
    ref_gemm(0, 0, 2, 3, 0, 0.5f, A, 1, B, 3, 0.25f, R, 3);
    ck_assert(memcmp(C, R, sizeof C) == 0);
}
END_TEST

/* A row's bits do not depend on the batch it is in: rows [off, off + m) of op(A)
 * computed alone equal the same rows of the full (300-row) product, for many
 * (off, m) — m not a multiple of any block, starts anywhere — and the same for
 * column ranges of op(B); threads 1, 2, 3, 7 and 64 agree. All four transpositions, and
 * N both below and above M (the kernel picks its orientation from the shape). */
START_TEST(test_batch_invariance) {
    const int M = 300, K = 333;
    const int Ns[] = {77, 450};
    int tA = _i & 1, tB = _i >> 1;
    for (int ni = 0; ni < 2; ni++) {
        int N = Ns[ni];
        uint64_t s = 4242 + (uint64_t)_i * 10 + ni;
        int ar = tA ? K : M, ac = tA ? M : K, lda = ac + 1;
        int br = tB ? N : K, bc = tB ? K : N, ldb = bc + 2;
        float *A = rand_matrix(ar, ac, lda, &s), *B = rand_matrix(br, bc, ldb, &s);
        float *full = alloc_f((size_t)M * N), *sub = alloc_f((size_t)M * N);
        rp_gemm_invariant(tA, tB, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, full, N, 1);
        const int ts[] = {2, 3, 7, 64}; /* 64: more threads than tiles */
        for (int q = 0; q < 4; q++) {
            rp_gemm_invariant(tA, tB, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, sub, N, ts[q]);
            ck_assert_msg(first_diff(full, N, sub, N, M, N) < 0, "threads %d != threads 1", ts[q]);
        }
        const int ms[] = {1, 2, 3, 5, 6, 7, 13, 31, 32, 33, 64, 100, 145, 299};
        const int offs[] = {0, 1, 5, 6, 11, 17, 64, 150};
        for (int a = 0; a < 14; a++)
            for (int b = 0; b < 8; b++) {
                int m = ms[a], off = offs[b];
                if (off + m > M) continue;
                /* op(A) rows off.. : A's rows (no trans) or A's columns (trans) */
                const float *As = tA ? A + off : A + (size_t)off * lda;
                rp_gemm_invariant(tA, tB, m, N, K, 1.0f, As, lda, B, ldb, 0.0f, sub, N, 1 + b % 3);
                long d = first_diff(full + (size_t)off * N, N, sub, N, m, N);
                ck_assert_msg(d < 0, "tA=%d tB=%d N=%d rows [%d, %d): element (%ld, %ld) "
                              "differs from the full product", tA, tB, N, off, off + m, d / N, d % N);
                if (off + m > N) continue;
                /* op(B) columns off.. : B's columns (no trans) or B's rows (trans) */
                const float *Bs = tB ? B + (size_t)off * ldb : B + off;
                rp_gemm_invariant(tA, tB, M, m, K, 1.0f, A, lda, Bs, ldb, 0.0f, sub, m, 1 + a % 3);
                d = first_diff(full + off, N, sub, m, M, m);
                ck_assert_msg(d < 0, "tA=%d tB=%d N=%d columns [%d, %d): element (%ld, %ld) "
                              "differs from the full product", tA, tB, N, off, off + m, d / m, d % m);
            }
        free(A); free(B); free(full); free(sub);
    }
}
END_TEST

/* rp_gemm with ctx->numerics invariant, as the models call it (nn.Linear: x W^T,
 * bias as beta = 1): fp32, bf16, reduce_split and both together give every row
 * the same bits alone as in the 300-row batch, with 1 or 2 threads. */
START_TEST(test_rp_gemm_invariant_rows) {
    const int M = 300, N = 200, K = 301;
    const rp_precision precs[] = {RP_PREC_FP32, RP_PREC_BF16, RP_PREC_FP32, RP_PREC_BF16};
    const int splits[] = {0, 0, 1, 1};
    uint64_t s = 99;
    float *X = rand_matrix(M, K, K, &s), *W = rand_matrix(N, K, K, &s);
    float *bias = rand_matrix(1, N, N, &s);
    float *full = alloc_f((size_t)M * N), *sub = alloc_f((size_t)M * N);
    for (int v = 0; v < 4; v++) {
        rp_ctx ctx = rp_ctx_default();
        ctx.numerics = RP_NUMERICS_INVARIANT;
        ctx.precision = precs[v];
        ctx.reduce_split = splits[v];
        for (int i = 0; i < M; i++) memcpy(full + (size_t)i * N, bias, sizeof(float) * N);
        rp_gemm(&ctx, 0, 1, M, N, K, 1.0f, X, K, W, K, 1.0f, full, N);
        const int cuts[][2] = {{0, 1}, {1, 2}, {7, 5}, {150, 150}, {13, 287}, {299, 1}, {0, 300}};
        for (int c = 0; c < 7; c++) {
            int off = cuts[c][0], m = cuts[c][1];
            ctx.threads = c % 3; /* 0 (= 1), 1, 2 */
            for (int i = 0; i < m; i++) memcpy(sub + (size_t)i * N, bias, sizeof(float) * N);
            rp_gemm(&ctx, 0, 1, m, N, K, 1.0f, X + (size_t)off * K, K, W, K, 1.0f, sub, N);
            long d = first_diff(full + (size_t)off * N, N, sub, N, m, N);
            ck_assert_msg(d < 0, "%s split=%d rows [%d, %d) threads %d: element (%ld, %ld) differs "
                          "from the full batch", rp_precision_name(precs[v]), splits[v], off,
                          off + m, ctx.threads, d / N, d % N);
        }
    }
    free(X); free(W); free(bias); free(full); free(sub);
}
END_TEST

/* Invariant vs the default (OpenBLAS) product: different fp32 summation orders,
 * each within gamma_K S of the exact dot product, so within 2 gamma_K S of each
 * other (S = sum_k |a_k b_k|). Also checks the invariant mode really changed the
 * product function: rp_gemm invariant equals rp_gemm_invariant bit for bit. */
START_TEST(test_close_to_openblas) {
    const int M = 70, N = 90, K = 1000;
    int tA = _i & 1, tB = _i >> 1;
    uint64_t s = 555 + _i;
    int ar = tA ? K : M, ac = tA ? M : K, br = tB ? N : K, bc = tB ? K : N;
    float *A = rand_matrix(ar, ac, ac, &s), *B = rand_matrix(br, bc, bc, &s);
    float *Ci = alloc_f((size_t)M * N), *Cd = alloc_f((size_t)M * N), *Cr = alloc_f((size_t)M * N);
    rp_ctx inv = rp_ctx_default(), def = rp_ctx_default();
    inv.numerics = RP_NUMERICS_INVARIANT;
    rp_gemm(&inv, tA, tB, M, N, K, 1.0f, A, ac, B, bc, 0.0f, Ci, N);
    rp_gemm(&def, tA, tB, M, N, K, 1.0f, A, ac, B, bc, 0.0f, Cd, N);
    rp_gemm_invariant(tA, tB, M, N, K, 1.0f, A, ac, B, bc, 0.0f, Cr, N, 1);
    ck_assert(first_diff(Ci, N, Cr, N, M, N) < 0);
    double g = gamma_n(K);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double S = 0;
            for (int k = 0; k < K; k++) S += fabs((double)op_a(A, ac, tA, i, k) * op_b(B, bc, tB, k, j));
            double diff = fabs((double)Ci[(size_t)i * N + j] - Cd[(size_t)i * N + j]);
            ck_assert_msg(diff <= 2 * g * S, "tA=%d tB=%d (%d,%d): |%.9g - %.9g| > %g", tA, tB, i,
                          j, Ci[(size_t)i * N + j], Cd[(size_t)i * N + j], 2 * g * S);
        }
    free(A); free(B); free(Ci); free(Cd); free(Cr);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("gemm_invariant");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_matches_fmaf_loop, 0, 4);
    tcase_add_loop_test(tc, test_matches_fmaf_loop_blocked, 0, 4);
    tcase_add_test(tc, test_empty_k);
    tcase_add_loop_test(tc, test_batch_invariance, 0, 4);
    tcase_add_test(tc, test_rp_gemm_invariant_rows);
    tcase_add_loop_test(tc, test_close_to_openblas, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
