/* test_attention.c — math attention against naive double attention, the
 * dispatcher, bad parameters, and rp_attn_kind_parse. (The other variants'
 * accuracy, bitwise-equality report, auto and the models are in
 * test_attention_variants.c.)
 *
 * Error bound for the fp32 math variant (u = 2^-24, gamma_n = n u/(1 - n u)),
 * first order, per query row, derived from its three steps:
 *  1. scores: ŝ_j = scale * q.k_j by an fp32 GEMM, alpha applied by the BLAS:
 *       |ŝ_j - s_j| <= e_j := gamma_{D+4} |scale| sum_d |q_d k_jd|
 *     (D+4 covers reduce_split's extra additions too).
 *  2. softmax (fp32 exp of ŝ_j - m̂, double sum, one rounding after dividing):
 *     the relative error of the unnormalised weight exp(ŝ_j - m̂) against
 *     exp(s_j - m̂) is
 *       r_j := e_j + u |ŝ_j - m̂| + 2u          (score error, fp32 subtraction,
 *                                                 expf within 1 ulp <= 2u rel.)
 *     and the normalised p̂_j then has relative error <= r_j + rbar + 2u with
 *     rbar = sum_k p_k r_k (the sum's relative error) and 2u for the division
 *     and the double sum.
 *  3. out = P̂ V by an fp32 GEMM over Tk:
 *       |out - exact| <= sum_j p_j |v_j| (r_j + rbar + 2u)
 *                        + gamma_{Tk+4} sum_j p_j (1 + r_j + rbar + 2u) |v_j|.
 * Second-order terms (products of the r's, all < 1e-4 here) are covered by
 * a factor 1.01 on the bound. Masked keys have p_j = 0 exactly in both. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention/attention.h"
#include "engine/ctx.h"
#include "engine/ops.h"
#include "tests/common/test_rng.h"

static const double U32 = 0x1p-24;
static double gamma_n(int n) { return n * U32 / (1.0 - n * U32); }

/* Runs rp_attention (math) and checks every output against double attention
 * with the bound above. mask_mode: 0 none, 1 random with one batch fully masked
 * (when B > 1) and the last batch keeping a single key. */
static void check_attention(int split, int B, int H, int Tq, int Tk, int D, float qscale,
                            int mask_mode, uint64_t seed) {
    rp_ctx ctx = rp_ctx_default();
    ctx.reduce_split = split;
    size_t nq = (size_t)B * H * Tq * D, nk = (size_t)B * H * Tk * D;
    float *q = malloc(sizeof(float) * nq), *k = malloc(sizeof(float) * nk);
    float *v = malloc(sizeof(float) * nk), *out = malloc(sizeof(float) * nq);
    uint8_t *mask = malloc((size_t)B * Tk);
    uint64_t s = seed;
    for (size_t i = 0; i < nq; i++) q[i] = qscale * rng_unif(&s);
    for (size_t i = 0; i < nk; i++) k[i] = rng_unif(&s);
    for (size_t i = 0; i < nk; i++) v[i] = rng_unif(&s);
    for (size_t i = 0; i < nq; i++) out[i] = NAN;
    int single_key = -1;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < Tk; j++) mask[b * Tk + j] = (rng_next(&s) % 4) != 0;
    if (mask_mode && B > 1) memset(mask, 0, (size_t)Tk);                  /* batch 0: all masked */
    if (mask_mode) {                                                       /* last batch: one key */
        single_key = Tk / 2;
        memset(mask + (size_t)(B - 1) * Tk, 0, (size_t)Tk);
        mask[(size_t)(B - 1) * Tk + single_key] = 1;
    }
    const uint8_t *m = mask_mode ? mask : NULL;
    float scale = 1.0f / sqrtf((float)D);
    rp_error err;
    rp_error_clear(&err);
    ck_assert_int_eq(rp_attention(&ctx, out, q, k, v, m, B, H, Tq, Tk, D, scale, &err), RP_OK);

    double *sc = malloc(sizeof(double) * Tk), *es = malloc(sizeof(double) * Tk);
    double *p = malloc(sizeof(double) * Tk), *r = malloc(sizeof(double) * Tk);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            size_t bh = (size_t)b * H + h;
            const float *qb = q + bh * Tq * D, *kb = k + bh * Tk * D, *vb = v + bh * Tk * D;
            const float *ob = out + bh * Tq * D;
            for (int i = 0; i < Tq; i++) {
                int any = 0;
                double mx = -INFINITY;
                for (int j = 0; j < Tk; j++) {
                    double d = 0, a = 0;
                    for (int c = 0; c < D; c++) {
                        d += (double)qb[i * D + c] * kb[j * D + c];
                        a += fabs((double)qb[i * D + c] * kb[j * D + c]);
                    }
                    sc[j] = d * scale;
                    es[j] = gamma_n(D + 4) * fabs(scale) * a;
                    if (!m || m[b * Tk + j]) {
                        any = 1;
                        if (sc[j] > mx) mx = sc[j];
                    }
                }
                if (!any) { /* fully masked row: exact zeros, not NaN */
                    for (int c = 0; c < D; c++)
                        ck_assert_msg(ob[i * D + c] == 0.0f, "masked row b=%d h=%d i=%d c=%d: %g",
                                      b, h, i, c, ob[i * D + c]);
                    continue;
                }
                double sum = 0, rbar = 0;
                for (int j = 0; j < Tk; j++) {
                    int on = !m || m[b * Tk + j];
                    p[j] = on ? exp(sc[j] - mx) : 0.0;
                    sum += p[j];
                }
                double emax = 0;
                for (int j = 0; j < Tk; j++) if (es[j] > emax) emax = es[j];
                for (int j = 0; j < Tk; j++) {
                    p[j] /= sum;
                    /* |ŝ_j - m̂| <= |s_j - max| + e_j + emax */
                    r[j] = es[j] + U32 * (fabs(sc[j] - mx) + es[j] + emax) + 2 * U32;
                    rbar += p[j] * r[j];
                }
                for (int c = 0; c < D; c++) {
                    double ref = 0, b1 = 0, b2 = 0;
                    for (int j = 0; j < Tk; j++) {
                        double pv = p[j] * fabs((double)vb[j * D + c]);
                        ref += p[j] * vb[j * D + c];
                        b1 += pv * (r[j] + rbar + 2 * U32);
                        b2 += pv * (1 + r[j] + rbar + 2 * U32);
                    }
                    double bound = 1.01 * (b1 + gamma_n(Tk + 4) * b2);
                    double got = ob[i * D + c];
                    ck_assert_msg(fabs(got - ref) <= bound,
                                  "attn B=%d H=%d Tq=%d Tk=%d D=%d split=%d at b=%d h=%d i=%d c=%d: "
                                  "|%.9g - %.9g| = %.3g > %.3g", B, H, Tq, Tk, D, split, b, h, i, c,
                                  got, ref, fabs(got - ref), bound);
                }
                if (mask_mode && b == B - 1) /* one key: p = 1 exactly, out = v row exactly */
                    for (int c = 0; c < D; c++)
                        ck_assert_float_eq(ob[i * D + c], vb[single_key * D + c]);
            }
        }
    free(sc); free(es); free(p); free(r);
    free(q); free(k); free(v); free(out); free(mask);
}

static const int SHAPES[][5] = { /* B, H, Tq, Tk, D */
    {1, 1, 1, 1, 32}, {2, 3, 17, 29, 64}, {1, 2, 33, 7, 72}, {2, 1, 5, 130, 128},
    {3, 2, 64, 64, 32}, {1, 4, 31, 257, 64}, {2, 2, 129, 65, 128},
};
#define NSHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

START_TEST(test_math_unmasked) {
    for (int i = 0; i < NSHAPES; i++)
        for (int split = 0; split < 2; split++)
            check_attention(split, SHAPES[i][0], SHAPES[i][1], SHAPES[i][2], SHAPES[i][3],
                            SHAPES[i][4], 1.0f, 0, 100 + i);
}
END_TEST

START_TEST(test_math_masked) {
    for (int i = 0; i < NSHAPES; i++)
        for (int split = 0; split < 2; split++)
            check_attention(split, SHAPES[i][0], SHAPES[i][1], SHAPES[i][2], SHAPES[i][3],
                            SHAPES[i][4], 1.0f, 1, 200 + i);
}
END_TEST

/* Peaked softmax: q scaled by 30 gives scores of O(100); no overflow, still
 * within the bound (whose u|ŝ - m̂| term grows with the score range). */
START_TEST(test_math_large_scores) {
    check_attention(0, 2, 2, 19, 23, 64, 30.0f, 0, 300);
    check_attention(0, 2, 2, 19, 23, 64, 30.0f, 1, 301);
}
END_TEST

/* Tk = 0: no key at all, every row is fully masked: zeros. Tq = 0: nothing. */
START_TEST(test_math_empty) {
    rp_ctx ctx = rp_ctx_default();
    float q[2 * 32], out[2 * 32], kv[1] = {0};
    for (int i = 0; i < 64; i++) { q[i] = 1.0f; out[i] = NAN; }
    ck_assert_int_eq(rp_attention(&ctx, out, q, kv, kv, NULL, 1, 1, 2, 0, 32, 1.0f, NULL), RP_OK);
    for (int i = 0; i < 64; i++) ck_assert_float_eq(out[i], 0.0f);
    ck_assert_int_eq(rp_attention(&ctx, out, q, kv, kv, NULL, 1, 1, 0, 0, 32, 1.0f, NULL), RP_OK);
}
END_TEST

/* Dispatcher: math through rp_attention is rp_attention_math's bits; each
 * variant through the dispatcher (defaults for 0 chunk sizes) is the direct
 * call with those defaults; auto with a profile runs what rp_attn_auto_choose
 * says; bad shapes and NULLs are RP_ERR_INVALID. */
START_TEST(test_dispatch) {
    enum { B = 1, H = 2, T = 9, D = 32, N = B * H * T * D };
    float q[N], k[N], v[N], o1[N], o2[N];
    uint64_t s = 42;
    for (int i = 0; i < N; i++) { q[i] = rng_unif(&s); k[i] = rng_unif(&s); v[i] = rng_unif(&s); }
    rp_ctx ctx = rp_ctx_default();
    rp_error err;
    rp_error_clear(&err);
    ck_assert_int_eq(rp_attention_math(&ctx, o1, q, k, v, NULL, B, H, T, T, D, 0.2f, &err), RP_OK);
    ctx.attn.kind = RP_ATTN_MATH;
    ck_assert_int_eq(rp_attention(&ctx, o2, q, k, v, NULL, B, H, T, T, D, 0.2f, &err), RP_OK);
    ck_assert(memcmp(o1, o2, sizeof o1) == 0);

    /* defaults: split q 1024, subquad q 1024 kv floor(sqrt(9)) = 3, flash 128 x 128 */
    ctx.attn.kind = RP_ATTN_SPLIT;
    ck_assert_int_eq(rp_attention(&ctx, o2, q, k, v, NULL, B, H, T, T, D, 0.2f, &err), RP_OK);
    ck_assert_int_eq(rp_attention_split(&ctx, o1, q, k, v, NULL, B, H, T, T, D, 0.2f, 1024, &err), RP_OK);
    ck_assert(memcmp(o1, o2, sizeof o1) == 0);
    ctx.attn.kind = RP_ATTN_SUBQUAD;
    ck_assert_int_eq(rp_attention(&ctx, o2, q, k, v, NULL, B, H, T, T, D, 0.2f, &err), RP_OK);
    ck_assert_int_eq(rp_attention_subquad(&ctx, o1, q, k, v, NULL, B, H, T, T, D, 0.2f, 1024, 3, &err), RP_OK);
    ck_assert(memcmp(o1, o2, sizeof o1) == 0);
    ctx.attn.kind = RP_ATTN_FLASH;
    ck_assert_int_eq(rp_attention(&ctx, o2, q, k, v, NULL, B, H, T, T, D, 0.2f, &err), RP_OK);
    ck_assert_int_eq(rp_attention_flash(&ctx, o1, q, k, v, NULL, B, H, T, T, D, 0.2f, 128, 128, &err), RP_OK);
    ck_assert(memcmp(o1, o2, sizeof o1) == 0);
    ctx.attn.q_chunk = 4;
    ctx.attn.kv_chunk = 5;
    ck_assert_int_eq(rp_attention(&ctx, o2, q, k, v, NULL, B, H, T, T, D, 0.2f, &err), RP_OK);
    ck_assert_int_eq(rp_attention_flash(&ctx, o1, q, k, v, NULL, B, H, T, T, D, 0.2f, 4, 5, &err), RP_OK);
    ck_assert(memcmp(o1, o2, sizeof o1) == 0);

    /* auto on a profile: the variant and sizes rp_attn_auto_choose reports */
    ctx.attn.kind = RP_ATTN_AUTO;
    ctx.attn.q_chunk = ctx.attn.kv_chunk = 0;
    ck_assert_int_eq(rp_device_profile_parse("cpu-avx2-8g", &ctx.device, &err), RP_OK);
    rp_attn_choice c;
    ck_assert_int_eq(rp_attn_auto_choose(&ctx.device, &ctx.attn, B, H, T, T, D, 0, &c, &err), RP_OK);
    ck_assert_int_eq(c.kind, RP_ATTN_FLASH); /* SDPA mem-efficient: online softmax, 64 x 64 */
    ck_assert_int_eq(c.q_chunk, 64);
    ck_assert_int_eq(c.kv_chunk, 64);
    ck_assert_int_eq(rp_attention(&ctx, o2, q, k, v, NULL, B, H, T, T, D, 0.2f, &err), RP_OK);
    ck_assert_int_eq(rp_attention_flash(&ctx, o1, q, k, v, NULL, B, H, T, T, D, 0.2f, 64, 64, &err), RP_OK);
    ck_assert(memcmp(o1, o2, sizeof o1) == 0);

    ctx.attn.kind = RP_ATTN_MATH;
    ck_assert_int_eq(rp_attention(&ctx, o2, q, k, v, NULL, 0, H, T, T, D, 0.2f, &err), RP_ERR_INVALID);
    ck_assert_int_eq(rp_attention(&ctx, o2, q, k, v, NULL, B, H, T, -1, D, 0.2f, &err), RP_ERR_INVALID);
    ck_assert_int_eq(rp_attention(&ctx, o2, q, k, v, NULL, B, H, T, T, 0, 0.2f, &err), RP_ERR_INVALID);
    ck_assert_int_eq(rp_attention(&ctx, o2, NULL, k, v, NULL, B, H, T, T, D, 0.2f, &err), RP_ERR_INVALID);
    ck_assert_int_eq(rp_attention(NULL, o2, q, k, v, NULL, B, H, T, T, D, 0.2f, &err), RP_ERR_INVALID);
    const rp_attn_kind all[4] = {RP_ATTN_SPLIT, RP_ATTN_SUBQUAD, RP_ATTN_FLASH, RP_ATTN_AUTO};
    for (int i = 0; i < 4; i++) {
        ctx.attn.kind = all[i];
        ck_assert_int_eq(rp_attention(&ctx, o2, q, k, v, NULL, B, H, T, T, 0, 0.2f, &err), RP_ERR_INVALID);
        ck_assert_int_eq(rp_attention(&ctx, o2, q, NULL, v, NULL, B, H, T, T, D, 0.2f, NULL), RP_ERR_INVALID);
    }
}
END_TEST

/* Bad parameters: zero or negative chunk sizes, sizes a variant does not take,
 * an unknown variant id. Each is RP_ERR_INVALID with a message naming the
 * variant and the value, and nothing is written to out. */
START_TEST(test_bad_params) {
    enum { B = 1, H = 1, T = 5, D = 8, N = B * H * T * D };
    float q[N], k[N], v[N], o[N];
    for (int i = 0; i < N; i++) { q[i] = k[i] = v[i] = 0.1f * (i % 7); o[i] = 42.0f; }
    rp_ctx ctx = rp_ctx_default();
    rp_error err;
    struct { rp_attn_kind kind; int qc, kc; const char *want; } cases[] = {
        {RP_ATTN_SPLIT, -1, 0, "chunk sizes must be >= 1"},
        {RP_ATTN_SUBQUAD, 0, -5, "kv_chunk -5"},
        {RP_ATTN_FLASH, -3, 4, "q_chunk -3"},
        {RP_ATTN_AUTO, 0, -1, "chunk sizes must be >= 1"},
        {RP_ATTN_MATH, 8, 0, "math attention takes no chunk sizes"},
        {RP_ATTN_SPLIT, 4, 4, "split attention slices queries only"},
        {(rp_attn_kind)17, 0, 0, "unknown variant id 17"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ctx.attn.kind = cases[i].kind;
        ctx.attn.q_chunk = cases[i].qc;
        ctx.attn.kv_chunk = cases[i].kc;
        rp_error_clear(&err);
        ck_assert_int_eq(rp_attention(&ctx, o, q, k, v, NULL, B, H, T, T, D, 1.0f, &err), RP_ERR_INVALID);
        ck_assert_msg(strstr(err.msg, cases[i].want), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].want);
        ck_assert_int_eq(rp_attn_cfg_check(&ctx.attn, NULL), RP_ERR_INVALID);
    }
    /* direct calls: 0 is not "default" there */
    rp_ctx c0 = rp_ctx_default();
    rp_error_clear(&err);
    ck_assert_int_eq(rp_attention_split(&c0, o, q, k, v, NULL, B, H, T, T, D, 1.0f, 0, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "q_chunk must be >= 1"));
    ck_assert_int_eq(rp_attention_subquad(&c0, o, q, k, v, NULL, B, H, T, T, D, 1.0f, 4, 0, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "kv_chunk 0"));
    ck_assert_int_eq(rp_attention_flash(&c0, o, q, k, v, NULL, B, H, T, T, D, 1.0f, 0, 4, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "flash attention"));
    ck_assert_int_eq(rp_attention_flash(&c0, o, q, k, v, NULL, B, H, T, T, D, 1.0f, -2, -2, NULL), RP_ERR_INVALID);
    for (int i = 0; i < N; i++) ck_assert_float_eq(o[i], 42.0f);
    /* valid configurations pass the check */
    rp_attn_cfg ok[4] = {{RP_ATTN_MATH, 0, 0}, {RP_ATTN_SPLIT, 7, 0}, {RP_ATTN_FLASH, 1, 1}, {RP_ATTN_AUTO, 3, 0}};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(rp_attn_cfg_check(&ok[i], &err), RP_OK);
}
END_TEST

START_TEST(test_kind_parse) {
    const char *names[5] = {"math", "split", "subquad", "flash", "auto"};
    const rp_attn_kind kinds[5] = {RP_ATTN_MATH, RP_ATTN_SPLIT, RP_ATTN_SUBQUAD, RP_ATTN_FLASH,
                                   RP_ATTN_AUTO};
    rp_error err;
    for (int i = 0; i < 5; i++) {
        rp_attn_kind kd = (rp_attn_kind)-1;
        rp_error_clear(&err);
        ck_assert_int_eq(rp_attn_kind_parse(names[i], &kd, &err), RP_OK);
        ck_assert_int_eq(kd, kinds[i]);
        ck_assert_str_eq(rp_attn_kind_name(kd), names[i]); /* round trip with ctx.c */
    }
    const char *bad[5] = {"", "Math", "flash2", "math ", "sdpa"};
    for (int i = 0; i < 5; i++) {
        rp_attn_kind kd = RP_ATTN_FLASH;
        rp_error_clear(&err);
        ck_assert_int_eq(rp_attn_kind_parse(bad[i], &kd, &err), RP_ERR_INVALID);
        ck_assert_int_eq(err.code, RP_ERR_INVALID);
        ck_assert_int_eq(kd, RP_ATTN_FLASH); /* output untouched on error */
        ck_assert_ptr_nonnull(strstr(err.msg, "expected math, split, subquad, flash or auto"));
        if (bad[i][0]) ck_assert_ptr_nonnull(strstr(err.msg, bad[i]));
        ck_assert(err.where[0] != '\0');
    }
    ck_assert_int_eq(rp_attn_kind_parse(NULL, NULL, &err), RP_ERR_INVALID);
    ck_assert_int_eq(rp_attn_kind_parse("nope", NULL, NULL), RP_ERR_INVALID);
}
END_TEST

static Suite *attention_suite(void) {
    Suite *s = suite_create("attention");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_math_unmasked);
    tcase_add_test(tc, test_math_masked);
    tcase_add_test(tc, test_math_large_scores);
    tcase_add_test(tc, test_math_empty);
    tcase_add_test(tc, test_dispatch);
    tcase_add_test(tc, test_bad_params);
    tcase_add_test(tc, test_kind_parse);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(attention_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
