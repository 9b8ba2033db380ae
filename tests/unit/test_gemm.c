/* test_gemm.c — rp_gemm (fp32, bf16, reduce_split, transposes, strides) and
 * rp_linear against a naive double-precision product.
 *
 * Error bounds (u = 2^-24, gamma_n = n*u / (1 - n*u), Higham ch. 3):
 *  - fp32: every term alpha*a_k*b_k reaches C through at most K+4 roundings
 *    (K products/additions of the dot product, alpha, beta*c, the final add,
 *    and for reduce_split the extra add of the two halves), whatever order or
 *    FMA use the BLAS picks, so
 *        |C - C_exact| <= gamma_{K+4} * (|alpha| sum_k |a_k||b_k| + |beta||c|).
 *  - bf16: inputs are rounded to bf16 (8 significant bits, unit roundoff
 *    u_b = 2^-8), so |â b̂ - ab| <= ((1+u_b)^2 - 1)|ab|, and then the fp32 bound
 *    applies to â, b̂ with |â||b̂| <= (1+u_b)^2 |a||b|:
 *        |C - C_exact| <= |alpha| S ((1+u_b)^2 (1+gamma_{K+4}) - 1) + gamma_{K+4}|beta c|
 *    and, tighter, against a double product of the bf16-rounded inputs the
 *    plain fp32 bound holds (this also proves the rounding happened).
 * Test data are normal floats in [-1, 1] (no under/overflow), so the bounds
 * are rigorous, not tuned. */
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

static float bf16r(float x) { return rp_bf16_to_f32(rp_f32_to_bf16(x)); }

/* One rp_gemm call with padded leading dimensions, checked against double.
 * Padding of A and B holds NaN (must never be read); padding of C holds a
 * sentinel (must never be written); with beta == 0, C starts as NaN (must not
 * be read, BLAS semantics). */
static void check_gemm(rp_precision prec, int split, int tA, int tB, int M, int N, int K,
                       float alpha, float beta, int pad, uint64_t seed) {
    rp_ctx ctx = rp_ctx_default();
    ctx.precision = prec;
    ctx.reduce_split = split;
    int ar = tA ? K : M, ac = tA ? M : K, lda = ac + pad;
    int br = tB ? N : K, bc = tB ? K : N, ldb = bc + pad;
    int ldc = N + pad;
    float *A = malloc(sizeof(float) * (size_t)(ar ? ar : 1) * lda);   /* (ar, lda) */
    float *B = malloc(sizeof(float) * (size_t)(br ? br : 1) * ldb);   /* (br, ldb) */
    float *C = malloc(sizeof(float) * (size_t)M * ldc);               /* (M, ldc) */
    float *C0 = malloc(sizeof(float) * (size_t)M * ldc);
    uint64_t s = seed;
    for (int i = 0; i < ar; i++)
        for (int j = 0; j < lda; j++) A[(size_t)i * lda + j] = j < ac ? rng_unif(&s) : NAN;
    for (int i = 0; i < br; i++)
        for (int j = 0; j < ldb; j++) B[(size_t)i * ldb + j] = j < bc ? rng_unif(&s) : NAN;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++)
            C[(size_t)i * ldc + j] = j < N ? (beta == 0.0f ? NAN : rng_unif(&s)) : 12345.0f;
    memcpy(C0, C, sizeof(float) * (size_t)M * ldc);

    rp_gemm(&ctx, tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);

    double g = gamma_n(K + 4), ub = 0x1p-8;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++) {
            float got = C[(size_t)i * ldc + j];
            if (j >= N) {
                ck_assert_msg(got == 12345.0f, "C padding written at (%d,%d)", i, j);
                continue;
            }
            double ex = 0, exr = 0, S = 0, Sr = 0;
            for (int k = 0; k < K; k++) {
                float a = tA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                float b = tB ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                ex += (double)a * b;
                S += fabs((double)a * b);
                exr += (double)bf16r(a) * bf16r(b);
                Sr += fabs((double)bf16r(a) * bf16r(b));
            }
            double c0 = beta == 0.0f ? 0.0 : C0[(size_t)i * ldc + j];
            double bc0 = fabs((double)beta * c0);
            double ref = alpha * ex + (double)beta * c0;
            ck_assert_msg(isfinite(got), "non-finite C(%d,%d)", i, j);
            if (prec == RP_PREC_FP32) {
                double bound = g * (fabs(alpha) * S + bc0);
                ck_assert_msg(fabs(got - ref) <= bound,
                              "fp32 gemm tA=%d tB=%d M=%d N=%d K=%d split=%d (%d,%d): |%g - %g| > %g",
                              tA, tB, M, N, K, split, i, j, got, ref, bound);
            } else {
                double refr = alpha * exr + (double)beta * c0;
                double bound_r = g * (fabs(alpha) * Sr + bc0);
                ck_assert_msg(fabs(got - refr) <= bound_r,
                              "bf16 gemm vs rounded-input ref tA=%d tB=%d M=%d N=%d K=%d split=%d "
                              "(%d,%d): |%g - %g| > %g", tA, tB, M, N, K, split, i, j, got, refr,
                              bound_r);
                double bound = fabs(alpha) * S * ((1 + ub) * (1 + ub) * (1 + g) - 1) + g * bc0;
                ck_assert_msg(fabs(got - ref) <= bound,
                              "bf16 gemm vs exact ref (%d,%d): |%g - %g| > %g", i, j, got, ref, bound);
            }
        }
    free(A); free(B); free(C); free(C0);
}

static const int SHAPES[][3] = {
    {1, 1, 1}, {7, 5, 13}, {3, 1, 2}, {1, 9, 3}, {33, 65, 129}, {64, 48, 200}, {17, 130, 255},
};
#define NSHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

static void sweep(rp_precision prec, int split) {
    uint64_t seed = 1000 + 10 * prec + split;
    for (int si = 0; si < NSHAPES; si++)
        for (int tA = 0; tA < 2; tA++)
            for (int tB = 0; tB < 2; tB++) {
                int M = SHAPES[si][0], N = SHAPES[si][1], K = SHAPES[si][2];
                check_gemm(prec, split, tA, tB, M, N, K, 1.0f, 0.0f, 0, seed++);
                check_gemm(prec, split, tA, tB, M, N, K, 1.5f, -0.5f, 3, seed++);
                check_gemm(prec, split, tA, tB, M, N, K, -0.125f, 1.0f, 1, seed++);
            }
}

START_TEST(test_fp32_plain) { sweep(RP_PREC_FP32, 0); }
END_TEST

START_TEST(test_fp32_split) { sweep(RP_PREC_FP32, 1); }
END_TEST

START_TEST(test_bf16_plain) { sweep(RP_PREC_BF16, 0); }
END_TEST

START_TEST(test_bf16_split) { sweep(RP_PREC_BF16, 1); }
END_TEST

/* bf16 really rounds the inputs: a = 1 + 2^-8 is a tie between bf16 1 and
 * 1 + 2^-7 and rounds to even (1); a = 1 + 3*2^-9 rounds up to 1 + 2^-7. */
START_TEST(test_bf16_rounds_inputs) {
    rp_ctx ctx = rp_ctx_default();
    float a[2] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-9f}, b[2] = {3.0f, 1.0f}, c = 0;
    ctx.precision = RP_PREC_BF16;
    rp_gemm(&ctx, 0, 0, 1, 1, 1, 1.0f, a, 1, b, 1, 0.0f, &c, 1);
    ck_assert_float_eq(c, 3.0f);
    rp_gemm(&ctx, 0, 0, 1, 1, 1, 1.0f, a + 1, 1, b + 1, 1, 0.0f, &c, 1);
    ck_assert_float_eq(c, 1.0f + 0x1p-7f);
    ctx.precision = RP_PREC_FP32;
    rp_gemm(&ctx, 0, 0, 1, 1, 1, 1.0f, a, 1, b, 1, 0.0f, &c, 1);
    ck_assert_float_eq(c, 3.0f + 3 * 0x1p-8f);
}
END_TEST

/* The split order is exactly the documented one: C = alpha*(P0 + P1) + beta*C
 * with P0, P1 the plain fp32 products of the two K halves (K1 = K/2). The
 * plain halves are computed here by separate rp_gemm calls, so this pins the
 * order bit for bit, including odd K (K2 = K1 + 1). */
START_TEST(test_split_order_bitwise) {
    const int Ks[] = {2, 3, 13, 129, 256};
    for (int ki = 0; ki < 5; ki++) {
        int M = 11, N = 7, K = Ks[ki], K1 = K / 2, K2 = K - K1;
        uint64_t s = 77 + ki;
        float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
        float *C = malloc(sizeof(float) * M * N), *Cin = malloc(sizeof(float) * M * N);
        float *P0 = malloc(sizeof(float) * M * N), *P1 = malloc(sizeof(float) * M * N);
        for (int i = 0; i < M * K; i++) A[i] = rng_unif(&s);
        for (int i = 0; i < K * N; i++) B[i] = rng_unif(&s);
        for (int i = 0; i < M * N; i++) Cin[i] = rng_unif(&s);
        rp_ctx plain = rp_ctx_default(), split = rp_ctx_default();
        split.reduce_split = 1;
        /* P0 = A[:, :K1] B[:K1], P1 = A[:, K1:] B[K1:] */
        rp_gemm(&plain, 0, 0, M, N, K1, 1.0f, A, K, B, N, 0.0f, P0, N);
        rp_gemm(&plain, 0, 0, M, N, K2, 1.0f, A + K1, K, B + (size_t)K1 * N, N, 0.0f, P1, N);
        const float alphas[2] = {1.0f, 0.75f}, betas[2] = {0.0f, 0.5f};
        for (int t = 0; t < 2; t++) {
            float alpha = alphas[t], beta = betas[t];
            memcpy(C, Cin, sizeof(float) * M * N);
            rp_gemm(&split, 0, 0, M, N, K, alpha, A, K, B, N, beta, C, N);
            for (int i = 0; i < M * N; i++) {
                float sum = P0[i] + P1[i];
                float want = alpha * sum;
                if (beta != 0.0f) {
                    float bc = beta * Cin[i];
                    want = want + bc;
                }
                ck_assert_msg(memcmp(&want, &C[i], 4) == 0,
                              "split order K=%d alpha=%g beta=%g elem %d: %.9g != %.9g",
                              K, alpha, beta, i, C[i], want);
            }
        }
        free(A); free(B); free(C); free(Cin); free(P0); free(P1);
    }
}
END_TEST

/* reduce_split differs from the plain order only by rounding: both are within
 * their gamma_{K+4} bound of the exact product, so of each other within twice it. */
START_TEST(test_split_vs_plain) {
    int M = 19, N = 23, K = 301;
    uint64_t s = 5;
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
    float *C1 = malloc(sizeof(float) * M * N), *C2 = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++) A[i] = rng_unif(&s);
    for (int i = 0; i < K * N; i++) B[i] = rng_unif(&s);
    rp_ctx plain = rp_ctx_default(), split = rp_ctx_default();
    split.reduce_split = 1;
    rp_gemm(&plain, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C1, N);
    rp_gemm(&split, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C2, N);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double S = 0;
            for (int k = 0; k < K; k++) S += fabs((double)A[i * K + k] * B[k * N + j]);
            double bound = 2 * gamma_n(K + 4) * S;
            ck_assert(fabs((double)C1[i * N + j] - C2[i * N + j]) <= bound);
        }
    free(A); free(B); free(C1); free(C2);
}
END_TEST

/* K < 2 cannot be split: the split ctx gives the plain result bit for bit;
 * K == 0 gives C = beta*C (zeros for beta == 0, even over NaN). M or N == 0
 * touches nothing. */
START_TEST(test_degenerate_k) {
    rp_ctx plain = rp_ctx_default(), split = rp_ctx_default();
    split.reduce_split = 1;
    uint64_t s = 9;
    float A[5], B[7], C1[35], C2[35];
    for (int i = 0; i < 5; i++) A[i] = rng_unif(&s);
    for (int i = 0; i < 7; i++) B[i] = rng_unif(&s);
    for (int i = 0; i < 35; i++) C1[i] = C2[i] = rng_unif(&s);
    rp_gemm(&plain, 0, 0, 5, 7, 1, 0.5f, A, 1, B, 7, 2.0f, C1, 7);
    rp_gemm(&split, 0, 0, 5, 7, 1, 0.5f, A, 1, B, 7, 2.0f, C2, 7);
    ck_assert(memcmp(C1, C2, sizeof C1) == 0);

    for (int i = 0; i < 35; i++) C1[i] = (float)i;
    rp_gemm(&split, 0, 0, 5, 7, 0, 1.0f, A, 1, B, 7, -2.0f, C1, 7);
    for (int i = 0; i < 35; i++) ck_assert_float_eq(C1[i], -2.0f * i);
    for (int i = 0; i < 35; i++) C1[i] = NAN;
    rp_gemm(&plain, 0, 0, 5, 7, 0, 1.0f, A, 1, B, 7, 0.0f, C1, 7);
    for (int i = 0; i < 35; i++) ck_assert_float_eq(C1[i], 0.0f);

    for (int i = 0; i < 35; i++) C1[i] = 3.0f;
    rp_gemm(&plain, 0, 0, 0, 7, 5, 1.0f, A, 5, B, 7, 0.0f, C1, 7);
    rp_gemm(&split, 0, 0, 5, 0, 5, 1.0f, A, 5, B, 1, 0.0f, C1, 1);
    for (int i = 0; i < 35; i++) ck_assert_float_eq(C1[i], 3.0f);
}
END_TEST

/* rp_linear: out = in @ W^T + b with W (out, in) as nn.Linear. The bias is one
 * more addend: |err| <= gamma_{in+4} (sum |x||w| + |b|). */
static void check_linear(rp_precision prec, int split, int M, int in, int out, int with_bias) {
    rp_ctx ctx = rp_ctx_default();
    ctx.precision = prec;
    ctx.reduce_split = split;
    uint64_t s = (uint64_t)(M * 131 + in * 7 + out + with_bias);
    float *x = malloc(sizeof(float) * M * in), *W = malloc(sizeof(float) * out * in);
    float *b = malloc(sizeof(float) * out), *y = malloc(sizeof(float) * M * out);
    for (int i = 0; i < M * in; i++) x[i] = rng_unif(&s);
    for (int i = 0; i < out * in; i++) W[i] = rng_unif(&s);
    for (int i = 0; i < out; i++) b[i] = rng_unif(&s);
    for (int i = 0; i < M * out; i++) y[i] = NAN; /* output need not be initialised */
    rp_linear_w lw = {W, with_bias ? b : NULL, in, out};
    rp_linear(&ctx, y, x, &lw, M);
    double g = gamma_n(in + 4), ub = 0x1p-8;
    for (int m = 0; m < M; m++)
        for (int o = 0; o < out; o++) {
            double ref = with_bias ? b[o] : 0.0, S = 0;
            for (int k = 0; k < in; k++) {
                ref += (double)x[m * in + k] * W[o * in + k];
                S += fabs((double)x[m * in + k] * W[o * in + k]);
            }
            double bias_abs = with_bias ? fabs(b[o]) : 0.0;
            double bound = prec == RP_PREC_FP32 ? g * (S + bias_abs)
                                                : S * ((1 + ub) * (1 + ub) * (1 + g) - 1) + g * bias_abs;
            ck_assert_msg(fabs(y[m * out + o] - ref) <= bound,
                          "linear M=%d in=%d out=%d bias=%d (%d,%d): |%g - %g| > %g", M, in, out,
                          with_bias, m, o, y[m * out + o], ref, bound);
        }
    free(x); free(W); free(b); free(y);
}

START_TEST(test_linear) {
    for (int p = 0; p < 2; p++)
        for (int split = 0; split < 2; split++)
            for (int bias = 0; bias < 2; bias++) {
                check_linear((rp_precision)p, split, 1, 31, 19, bias);
                check_linear((rp_precision)p, split, 17, 31, 19, bias);
                check_linear((rp_precision)p, split, 9, 1, 4, bias);
                check_linear((rp_precision)p, split, 40, 96, 65, bias);
            }
}
END_TEST

static Suite *gemm_suite(void) {
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_fp32_plain);
    tcase_add_test(tc, test_fp32_split);
    tcase_add_test(tc, test_bf16_plain);
    tcase_add_test(tc, test_bf16_split);
    tcase_add_test(tc, test_bf16_rounds_inputs);
    tcase_add_test(tc, test_split_order_bitwise);
    tcase_add_test(tc, test_split_vs_plain);
    tcase_add_test(tc, test_degenerate_k);
    tcase_add_test(tc, test_linear);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(gemm_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
