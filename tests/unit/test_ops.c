/* test_ops.c — every non-GEMM operator of ops.h against a naive reference in
 * double or long double, plus the bf16/fp16 conversions.
 *
 * Notation for the tolerances (each one is derived next to its test, never
 * tuned): u = 2^-24 (fp32 unit roundoff), ud = 2^-53 (double),
 * gamma_n = n u / (1 - n u). "ulp-exact" ops (layouts, modulate) are compared
 * bit for bit. */
#include <check.h>
#include <float.h>
#include <stdio.h>

#include "engine/fastmath.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ctx.h"
#include "engine/ops.h"
#include "tests/common/test_rng.h"

static const double U32 = 0x1p-24;
static const double UD = 0x1p-53;
static const double TINY = 0x1p-148; /* two fp32 subnormal quanta (2^-149 each) */

static double gamma_n(int n) { return n * U32 / (1.0 - n * U32); }
static double gamma_d(int n) { return n * UD / (1.0 - n * UD); }

static uint32_t fbits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static float bitsf(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

static float *falloc(size_t n) { return malloc(sizeof(float) * (n ? n : 1)); }

/* ======================= bf16 =========================================== */

/* Edge cases, expected values taken from torch 1.13 (x.bfloat16()), except NaN:
 * torch's vectorised CPU path gives 0xFFFF and its scalar c10 path 0x7FC0; ours
 * is c10's canonical 0x7FC0 (any NaN is equivalent downstream). */
START_TEST(test_bf16_edges) {
    static const struct { uint32_t in; uint16_t out; } cases[] = {
        {0x3F800000, 0x3F80}, /* 1.0 exact */
        {0x3F808000, 0x3F80}, /* tie, lsb even -> down */
        {0x3F818000, 0x3F82}, /* tie, lsb odd -> up */
        {0x3F808001, 0x3F81}, /* just above tie -> up */
        {0x3F807FFF, 0x3F80}, /* just below tie -> down */
        {0xBF818000, 0xBF82}, /* negative tie, odd -> up in magnitude */
        {0x7F7FFFFF, 0x7F80}, /* FLT_MAX rounds to +Inf */
        {0x7F7F7FFF, 0x7F7F}, /* largest value staying at bf16 max */
        {0x7F7F8000, 0x7F80}, /* tie at the top, odd -> Inf */
        {0xFF7F8000, 0xFF80}, /* same, negative -> -Inf */
        {0x7F800000, 0x7F80}, {0xFF800000, 0xFF80}, /* +-Inf */
        {0x00000000, 0x0000}, {0x80000000, 0x8000}, /* +-0 */
        {0x00008000, 0x0000}, /* subnormal tie, even -> 0 */
        {0x00018000, 0x0002}, /* subnormal tie, odd -> up */
        {0x00000001, 0x0000}, /* smallest subnormal -> 0 */
        {0x007FFFFF, 0x0080}, /* largest subnormal -> smallest normal */
        {0x7F800001, 0x7FC0}, {0xFFC00001, 0x7FC0}, {0x7FFFFFFF, 0x7FC0}, /* NaNs */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(rp_f32_to_bf16(bitsf(cases[i].in)) == cases[i].out,
                      "bf16(0x%08x) = 0x%04x, want 0x%04x", cases[i].in,
                      rp_f32_to_bf16(bitsf(cases[i].in)), cases[i].out);
}
END_TEST

/* Independent oracle for finite x: the two bf16 neighbours are the truncation
 * t = bits >> 16 and t + 1 (next larger magnitude; past the top that is Inf,
 * which for rounding counts as 2^128); pick the nearer in double (exact: both
 * differences are exact in double), ties to the even one. */
static uint16_t bf16_oracle(float x) {
    uint32_t u = fbits(x);
    uint16_t t = (uint16_t)(u >> 16);
    uint16_t t1 = (uint16_t)(t + 1);
    double lo = fabs((double)rp_bf16_to_f32(t));
    double hi = ((t1 & 0x7FFF) == 0x7F80) ? ldexp(1.0, 128) : fabs((double)rp_bf16_to_f32(t1));
    double ax = fabs((double)x);
    double dlo = ax - lo, dhi = hi - ax;
    if (dlo < dhi) return t;
    if (dhi < dlo) return t1;
    return (t & 1) ? t1 : t;
}

START_TEST(test_bf16_sweep) {
    /* (a) a stride through all float bit patterns; (b) for every top half, the
     * low halves around the tie point 0x8000 and the ends. */
    for (uint64_t u = 0; u < 0x100000000ull; u += 4093) {
        float x = bitsf((uint32_t)u);
        if (isnan(x)) { ck_assert_uint_eq(rp_f32_to_bf16(x), 0x7FC0); continue; }
        ck_assert_msg(rp_f32_to_bf16(x) == bf16_oracle(x), "bf16 sweep 0x%08x", (uint32_t)u);
    }
    static const uint16_t lows[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
    for (uint32_t hi = 0; hi < 0x10000; hi++)
        for (int l = 0; l < 6; l++) {
            float x = bitsf((hi << 16) | lows[l]);
            if (isnan(x)) continue;
            ck_assert_msg(rp_f32_to_bf16(x) == bf16_oracle(x), "bf16 tie 0x%08x",
                          (hi << 16) | lows[l]);
        }
    /* rp_bf16_round (the GEMM's vectorised rounding, its own integer code) is the scalar
     * round trip, NaN included, on every top half with the same low halves. */
    enum { NL = sizeof lows / sizeof lows[0] };
    static float src[0x10000 * NL], dst[0x10000 * NL];
    for (uint32_t hi = 0; hi < 0x10000; hi++)
        for (int l = 0; l < NL; l++) src[hi * NL + l] = bitsf((hi << 16) | lows[l]);
    rp_bf16_round(dst, src, 0x10000 * NL);
    for (size_t i = 0; i < 0x10000 * NL; i++)
        ck_assert_msg(fbits(dst[i]) == fbits(rp_bf16_to_f32(rp_f32_to_bf16(src[i]))),
                      "rp_bf16_round 0x%08x -> 0x%08x", fbits(src[i]), fbits(dst[i]));
    /* bf16 -> f32 is the exact widening; every non-NaN bf16 round-trips. */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = rp_bf16_to_f32((uint16_t)h);
        ck_assert_uint_eq(fbits(f), h << 16);
        if (!isnan(f)) ck_assert_uint_eq(rp_f32_to_bf16(f), h);
    }
}
END_TEST

/* ======================= fp16 =========================================== */

/* The compiler's _Float16 conversions (IEEE, round to nearest even; GCC >= 12,
 * Clang >= 15 on x86-64) are the oracle. */
#ifdef __FLT16_MAX__
static uint16_t f16_oracle(float x) {
    _Float16 h = (_Float16)x;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}
static float f16_widen_oracle(uint16_t u) {
    _Float16 h;
    memcpy(&h, &u, 2);
    return (float)h;
}
#endif

START_TEST(test_f16_edges) {
    static const struct { float in; uint16_t out; } cases[] = {
        {1.0f, 0x3C00}, {-2.0f, 0xC000}, {65504.0f, 0x7BFF}, /* max half */
        {65519.0f, 0x7BFF},                                 /* below the halfway point */
        {65520.0f, 0x7C00},                                 /* halfway, odd max -> Inf */
        {1e6f, 0x7C00}, {-1e6f, 0xFC00}, {INFINITY, 0x7C00}, {-INFINITY, 0xFC00},
        {0x1p-14f, 0x0400},                                 /* smallest normal */
        {0x1p-24f, 0x0001},                                 /* smallest subnormal */
        {0x1p-25f, 0x0000},                                 /* tie with 0 -> even 0 */
        {0x1.000002p-25f, 0x0001},                          /* just above -> up */
        {0x3p-25f, 0x0002},                                 /* 1.5 quanta: tie, odd -> 2 */
        {0x1.ff8p-15f, 0x03FF},                             /* largest subnormal */
        {0x1.ffcp-15f, 0x0400},                             /* tie above it, odd -> smallest normal */
        {0.0f, 0x0000}, {-0.0f, 0x8000}, {1e-30f, 0x0000}, {-1e-30f, 0x8000},
        {1.0f + 0x1p-11f, 0x3C00}, {1.0f + 0x3p-11f, 0x3C02}, /* normal ties */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(rp_f32_to_f16(cases[i].in) == cases[i].out, "f16(%a) = 0x%04x, want 0x%04x",
                      (double)cases[i].in, rp_f32_to_f16(cases[i].in), cases[i].out);
    uint16_t n = rp_f32_to_f16(NAN), nn = rp_f32_to_f16(-NAN);
    ck_assert_uint_eq(n & 0x7E00, 0x7E00);                 /* quiet NaN */
    ck_assert_uint_eq(nn & 0x8000, 0x8000);                /* sign kept */
    ck_assert(isnan(rp_f16_to_f32(0x7C01)) && isnan(rp_f16_to_f32(0xFE00)));
    ck_assert_float_eq(rp_f16_to_f32(0x0001), 0x1p-24f);
    ck_assert_float_eq(rp_f16_to_f32(0x83FF), -0x3FFp-24f); /* largest subnormal, negative */
    ck_assert_float_eq(rp_f16_to_f32(0x7BFF), 65504.0f);
    ck_assert(isinf(rp_f16_to_f32(0xFC00)) && rp_f16_to_f32(0xFC00) < 0);
    ck_assert_uint_eq(fbits(rp_f16_to_f32(0x8000)), 0x80000000u);
}
END_TEST

START_TEST(test_f16_exhaustive) {
#ifdef __FLT16_MAX__
    /* every half widens like the compiler, and every non-NaN half round-trips */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = rp_f16_to_f32((uint16_t)h), o = f16_widen_oracle((uint16_t)h);
        if (isnan(o)) { ck_assert(isnan(f)); continue; }
        ck_assert_msg(fbits(f) == fbits(o), "f16->f32 0x%04x", h);
        ck_assert_uint_eq(rp_f32_to_f16(f), h);
    }
    /* every rounding boundary: the midpoint between consecutive halves (exact in
     * float: 12 significant bits) and its float neighbours, both signs */
    for (uint32_t h = 0; h < 0x7C00; h++) {
        double a = rp_f16_to_f32((uint16_t)h), b = (h + 1 == 0x7C00) ? 65536.0
                                                                     : rp_f16_to_f32((uint16_t)(h + 1));
        float mid = (float)((a + b) / 2);
        float xs[3] = {mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY)};
        for (int i = 0; i < 3; i++)
            for (int sg = 0; sg < 2; sg++) {
                float x = sg ? -xs[i] : xs[i];
                ck_assert_msg(rp_f32_to_f16(x) == f16_oracle(x), "f32->f16 %a: 0x%04x vs 0x%04x",
                              (double)x, rp_f32_to_f16(x), f16_oracle(x));
            }
    }
    /* a stride through all float bit patterns */
    for (uint64_t u = 0; u < 0x100000000ull; u += 4093) {
        float x = bitsf((uint32_t)u);
        if (isnan(x)) { ck_assert(isnan(rp_f16_to_f32(rp_f32_to_f16(x)))); continue; }
        ck_assert_msg(rp_f32_to_f16(x) == f16_oracle(x), "f32->f16 sweep 0x%08x", (uint32_t)u);
    }
#endif
}
END_TEST

/* ======================= normalisation ===================================== */

/* Reference: long double two-pass. The implementation works in double and rounds
 * once to float, so |out - ref| <= u|ref| + (double error). Each double
 * quantity (sum, mean, squared deviations, rstd, affine) carries at most
 * gamma^d_{2C+16} relative error on the magnitudes it combines, which gives
 * the double term E = gamma^d_{2C+16} ((|x| + mean|x|) rstd |w| + |b|) (first order;
 * it is ~1e-12 at most here, far below u). */
static void check_layernorm(int N, int C, int affine, int alias, float offset, uint64_t seed) {
    float *x = falloc((size_t)N * C), *out = falloc((size_t)N * C), *w = falloc(C), *b = falloc(C);
    uint64_t s = seed;
    for (int i = 0; i < N * C; i++) x[i] = offset + 3.0f * rng_unif(&s);
    for (int c = 0; c < C; c++) { w[c] = 1.0f + rng_unif(&s); b[c] = rng_unif(&s); }
    float *xin = falloc((size_t)N * C);
    memcpy(xin, x, sizeof(float) * N * C);
    float *dst = alias ? x : out;
    rp_layernorm(dst, x, affine ? w : NULL, affine ? b : NULL, N, C, 1e-6f);
    for (int n = 0; n < N; n++) {
        const float *xr = xin + (size_t)n * C;
        long double m = 0, v = 0, ma = 0;
        for (int c = 0; c < C; c++) { m += xr[c]; ma += fabsl((long double)xr[c]); }
        m /= C; ma /= C;
        for (int c = 0; c < C; c++) v += ((long double)xr[c] - m) * ((long double)xr[c] - m);
        v /= C;
        long double rstd = 1.0L / sqrtl(v + (long double)1e-6f);
        for (int c = 0; c < C; c++) {
            long double ref = ((long double)xr[c] - m) * rstd;
            double wa = 1, ba = 0;
            if (affine) { ref = ref * w[c] + b[c]; wa = fabs(w[c]); ba = fabs(b[c]); }
            double E = gamma_d(2 * C + 16) * ((fabs(xr[c]) + (double)ma) * (double)rstd * wa + ba);
            double bound = U32 * fabs((double)ref) + E + TINY;
            double got = dst[(size_t)n * C + c];
            ck_assert_msg(fabs(got - (double)ref) <= bound,
                          "layernorm N=%d C=%d affine=%d (%d,%d): |%.9g - %.9g| > %g", N, C, affine,
                          n, c, got, (double)ref, bound);
        }
    }
    free(x); free(out); free(w); free(b); free(xin);
}

START_TEST(test_layernorm) {
    const int Cs[] = {1, 7, 257, 1152};
    for (int i = 0; i < 4; i++)
        for (int affine = 0; affine < 2; affine++)
            for (int alias = 0; alias < 2; alias++) {
                check_layernorm(5, Cs[i], affine, alias, 0.0f, 10 + i);
                /* large common offset: one-pass E[x^2] - mean^2 in float would lose
                 * every digit here; two-pass double does not */
                check_layernorm(3, Cs[i], affine, alias, 1000.0f, 20 + i);
            }
}
END_TEST

/* groupnorm: same derivation as layernorm over groups of (C/G)*HW elements. */
static void check_groupnorm(int N, int C, int HW, int G, int affine, int alias, uint64_t seed) {
    size_t n_el = (size_t)N * C * HW;
    float *x = falloc(n_el), *xin = falloc(n_el), *out = falloc(n_el), *w = falloc(C), *b = falloc(C);
    uint64_t s = seed;
    for (size_t i = 0; i < n_el; i++) x[i] = 2.0f + rng_unif(&s) * (float)(1 + i % 5);
    for (int c = 0; c < C; c++) { w[c] = rng_unif(&s); b[c] = rng_unif(&s); }
    memcpy(xin, x, sizeof(float) * n_el);
    float *dst = alias ? x : out;
    rp_groupnorm(dst, x, affine ? w : NULL, affine ? b : NULL, N, C, HW, G, 1e-5f);
    int Cg = C / G, gs = Cg * HW;
    for (int n = 0; n < N; n++)
        for (int g = 0; g < G; g++) {
            const float *xg = xin + ((size_t)n * C + (size_t)g * Cg) * HW;
            long double m = 0, v = 0, ma = 0;
            for (int i = 0; i < gs; i++) { m += xg[i]; ma += fabsl((long double)xg[i]); }
            m /= gs; ma /= gs;
            for (int i = 0; i < gs; i++) v += ((long double)xg[i] - m) * ((long double)xg[i] - m);
            v /= gs;
            long double rstd = 1.0L / sqrtl(v + (long double)1e-5f);
            for (int i = 0; i < gs; i++) {
                int c = g * Cg + i / HW;
                long double ref = ((long double)xg[i] - m) * rstd;
                double wa = 1, ba = 0;
                if (affine) { ref = ref * w[c] + b[c]; wa = fabs(w[c]); ba = fabs(b[c]); }
                double E = gamma_d(2 * gs + 16) * ((fabs(xg[i]) + (double)ma) * (double)rstd * wa + ba);
                double bound = U32 * fabs((double)ref) + E + TINY;
                double got = dst[((size_t)n * C + (size_t)g * Cg) * HW + i];
                ck_assert_msg(fabs(got - (double)ref) <= bound,
                              "groupnorm C=%d HW=%d G=%d affine=%d n=%d g=%d i=%d: |%.9g - %.9g| > %g",
                              C, HW, G, affine, n, g, i, got, (double)ref, bound);
            }
        }
    free(x); free(xin); free(out); free(w); free(b);
}

START_TEST(test_groupnorm) {
    const int Gs[] = {1, 2, 4, 8};
    for (int i = 0; i < 4; i++)
        for (int affine = 0; affine < 2; affine++)
            for (int alias = 0; alias < 2; alias++) {
                check_groupnorm(2, 8, 13, Gs[i], affine, alias, 30 + i);
                check_groupnorm(1, 32, 64, Gs[i], affine, alias, 40 + i);
            }
    check_groupnorm(3, 6, 1, 3, 1, 0, 50);
}
END_TEST

/* rmsnorm: r = 1/sqrt(mean(x^2) + eps) in double; same form of bound with the
 * magnitudes |x| r |w|. */
START_TEST(test_rmsnorm) {
    const int Cs[] = {1, 7, 64, 333};
    for (int ci = 0; ci < 4; ci++)
        for (int wi = 0; wi < 2; wi++)
            for (int alias = 0; alias < 2; alias++) {
                int N = 4, C = Cs[ci];
                float *x = falloc((size_t)N * C), *xin = falloc((size_t)N * C);
                float *out = falloc((size_t)N * C), *w = falloc(C);
                uint64_t s = 60 + ci;
                for (int i = 0; i < N * C; i++) x[i] = 5.0f * rng_unif(&s);
                for (int c = 0; c < C; c++) w[c] = rng_unif(&s);
                memcpy(xin, x, sizeof(float) * N * C);
                float *dst = alias ? x : out;
                rp_rmsnorm(dst, x, wi ? w : NULL, N, C, 1e-6f);
                for (int n = 0; n < N; n++) {
                    long double ss = 0;
                    for (int c = 0; c < C; c++) ss += (long double)xin[n * C + c] * xin[n * C + c];
                    long double r = 1.0L / sqrtl(ss / C + (long double)1e-6f);
                    for (int c = 0; c < C; c++) {
                        long double ref = xin[n * C + c] * r * (wi ? w[c] : 1.0f);
                        double mag = fabs(xin[n * C + c]) * (double)r * (wi ? fabs(w[c]) : 1.0);
                        double bound = U32 * fabs((double)ref) + gamma_d(C + 16) * mag + TINY;
                        ck_assert(fabs(dst[n * C + c] - (double)ref) <= bound);
                    }
                }
                free(x); free(xin); free(out); free(w);
            }
}
END_TEST

/* ======================= activations ======================================= */

/* Inputs: a dense grid over [-20, 20] plus specials. */
static size_t act_inputs(float *x) {
    size_t n = 0;
    for (int i = -4000; i <= 4000; i++) x[n++] = (float)i * 0.005f + 0.0001f * (float)(i % 7);
    const float sp[] = {0.0f, -0.0f, 1e-40f, -1e-40f, 1e-20f, -1e-20f, 1e3f, -1e3f, 1e10f, -1e10f,
                        1e20f, -1e20f, 3e38f, -3e38f, FLT_MAX, -FLT_MAX, 5.0f, -5.0f, 9.0f, -9.0f,
                        -30.0f, -88.0f, -104.0f, 88.0f};
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) x[n++] = sp[i];
    return n;
}

/* gelu_erf evaluates in double and rounds once to float, so
 * |out - ref| <= u|ref| + (double error) + TINY (fp32 subnormal rounding).
 * Double error: the argument carries <= ~8 ud relative error; the final
 * value is a smooth function of it with condition number <= 2|z| + 4, plus a
 * few ud of erfc/division: E = (2|z| + 16) * 8 ud * |ref|. The long double
 * references use a form without cancellation in the x << 0 tail. */
static long double gelu_tanh_ref(long double x, long double *zout) {
    long double z = 0.79788456080286535587989211986876L * (x + 0.044715L * x * x * x);
    *zout = z;
    if (z > -4) return 0.5L * x * (1.0L + tanhl(z));  /* the torch formula */
    return x / (1.0L + expl(-2.0L * z));               /* = same, cancellation-free */
}

START_TEST(test_gelu_tanh) {
    float *x = falloc(9000), *y = falloc(9000);
    size_t n = act_inputs(x);
    rp_gelu_tanh(y, x, n);
    for (size_t i = 0; i < n; i++) {
        long double z;
        long double ref = gelu_tanh_ref(x[i], &z);
        double rd = (double)ref;
        /* fp32 evaluation (see ops.c): z carries <= 4u, exp(-2z) adds 2|z| 4u + 4u
         * (rp_expf <= 2 ulp), 1 + e and the division 1u each: (8|z| + 6) u |ref|.
         * + |x| / FLT_MAX: when exp(-2z) overflows fp32 the quotient is -0 while the
         * true value is below |x| / FLT_MAX (a few FLT_MIN at most). */
        double bound = (8 * fabs((double)z) + 6) * U32 * fabs(rd) + TINY + fabs(x[i]) / FLT_MAX;
        if (isinf((double)z)) bound = U32 * fabs(rd) + TINY; /* saturated: exactly x or -0 */
        ck_assert_msg(fabs(y[i] - rd) <= bound || (y[i] == rd),
                      "gelu_tanh(%a) = %a, ref %a", (double)x[i], (double)y[i], rd);
    }
    /* in place, and the infinities behave as torch: +Inf -> +Inf, -Inf -> NaN */
    float v[3] = {INFINITY, -INFINITY, NAN};
    rp_gelu_tanh(v, v, 3);
    ck_assert(isinf(v[0]) && v[0] > 0);
    ck_assert(isnan(v[1]) && isnan(v[2]));
    free(x); free(y);
}
END_TEST

START_TEST(test_gelu_erf) {
    float *x = falloc(9000), *y = falloc(9000);
    size_t n = act_inputs(x);
    rp_gelu_erf(y, x, n);
    for (size_t i = 0; i < n; i++) {
        long double xl = x[i];
        /* 0.5 x (1 + erf(x/sqrt2)) == 0.5 x erfc(-x/sqrt2), the latter without
         * cancellation for x << 0 */
        long double ref = 0.5L * xl * erfcl(-xl * 0.70710678118654752440084436210485L);
        double rd = (double)ref, z = fabs(x[i]) * 0.7071;
        double bound = U32 * fabs(rd) + (2 * z * z + 16) * 8 * UD * fabs(rd) + TINY;
        ck_assert_msg(fabs(y[i] - rd) <= bound || y[i] == rd, "gelu_erf(%a) = %a, ref %a",
                      (double)x[i], (double)y[i], rd);
    }
    float v[3] = {INFINITY, -INFINITY, NAN};
    rp_gelu_erf(v, v, 3);
    ck_assert(isinf(v[0]) && v[0] > 0);
    ck_assert(isnan(v[1]) && isnan(v[2]));
    free(x); free(y);
}
END_TEST

START_TEST(test_silu) {
    float *x = falloc(9000), *y = falloc(9000);
    size_t n = act_inputs(x);
    rp_silu(y, x, n);
    for (size_t i = 0; i < n; i++) {
        long double xl = x[i];
        long double ref = xl / (1.0L + expl(-xl));
        double rd = (double)ref;
        /* fp32: the argument -x is exact, rp_expf <= 2 ulp (4u), 1 + e and the
         * division 1u each, the quotient's sensitivity to e < 1: 6u |ref|;
         * + |x| / FLT_MAX: when exp(-x) overflows the result is -0, true value below that. */
        double bound = 6 * U32 * fabs(rd) + TINY + fabs(x[i]) / FLT_MAX;
        ck_assert_msg(fabs(y[i] - rd) <= bound || y[i] == rd, "silu(%a) = %a, ref %a",
                      (double)x[i], (double)y[i], rd);
    }
    float v[3] = {INFINITY, -INFINITY, NAN};
    rp_silu(v, v, 3);
    ck_assert(isinf(v[0]) && v[0] > 0);
    ck_assert(isnan(v[1]) && isnan(v[2])); /* -Inf / Inf, as torch */
    free(x); free(y);
}
END_TEST

/* ======================= softmax =========================================== */

/* Per row, with d_j = x_j - max exact and p_j the exact softmax: the fp32
 * subtraction costs u|d_j|, expf <= 1 ulp (<= 2u relative), so the weight has
 * relative error r_j = u|d_j| + 2u; the double sum has relative error
 * rbar = sum p_j r_j (first order; its own rounding is ~1e-16); dividing and
 * rounding to float add u, hence
 *   |y_j - p_j| <= 1.01 p_j (r_j + rbar + 2u) + TINY
 * (1.01 covers second-order products of r's, all < 1e-5 for the finite data
 * here; TINY covers weights that underflow to fp32 subnormals or zero). */
static void check_softmax_row(const float *in, const float *got, int cols) {
    long double mx = -INFINITY;
    for (int j = 0; j < cols; j++) if (in[j] > mx) mx = in[j];
    if (isinf((double)mx) && mx < 0) {
        for (int j = 0; j < cols; j++) ck_assert_float_eq(got[j], 0.0f);
        return;
    }
    long double sum = 0;
    for (int j = 0; j < cols; j++) sum += expl((long double)in[j] - mx);
    double rbar = 0;
    for (int j = 0; j < cols; j++) {
        double p = (double)(expl((long double)in[j] - mx) / sum);
        double d = isinf(in[j]) ? 0 : fabs((double)in[j] - (double)mx);
        rbar += p * (U32 * d + 4 * U32); /* x - max rounding (u d), rp_expf <= 2 ulp = 4u */
    }
    for (int j = 0; j < cols; j++) {
        double p = (double)(expl((long double)in[j] - mx) / sum);
        double d = isinf(in[j]) ? 0 : fabs((double)in[j] - (double)mx);
        /* + FLT_MIN: rp_expf flushes results below FLT_MIN (x - max < -87.34) to 0 */
        double bound = 1.01 * p * (U32 * d + 4 * U32 + rbar + 2 * U32) + TINY + FLT_MIN;
        ck_assert_msg(fabs(got[j] - p) <= bound, "softmax col %d/%d: %.9g vs %.9g (bound %g)", j,
                      cols, got[j], p, bound);
        ck_assert(isfinite(got[j]));
    }
}

/* rp_expf (engine/fastmath.h): <= 2 ulp against long double exp over a dense
 * sweep of the normal-result range, and its documented edge behaviour. */
START_TEST(test_fast_expf) {
    double worst = 0;
    for (float x = -87.3f; x < 88.7f; x += 1e-4f + fabsf(x) * 3e-6f) {
        long double ref = expl((long double)x);
        float got = rp_expf(x);
        double ulp = (double)(nextafterf((float)ref, INFINITY) - (float)ref);
        double e = fabs((double)((long double)got - ref)) / ulp;
        if (e > worst) worst = e;
        ck_assert_msg(e <= 2.0, "rp_expf(%a) = %a, ref %La (%.2f ulp)", (double)x, (double)got, ref, e);
    }
    printf("rp_expf: max error %.3f ulp over the sweep\n", worst);
    ck_assert_float_eq(rp_expf(0.0f), 1.0f);
    ck_assert_float_eq(rp_expf(-88.0f), 0.0f);           /* below FLT_MIN: flushed */
    ck_assert(isinf(rp_expf(89.0f)) && isinf(rp_expf(INFINITY)));
    ck_assert_float_eq(rp_expf(-INFINITY), 0.0f);
    ck_assert(isnan(rp_expf(NAN)));
}
END_TEST

START_TEST(test_softmax) {
    const int colss[] = {1, 2, 7, 64, 257};
    for (int ci = 0; ci < 5; ci++) {
        int rows = 6, cols = colss[ci];
        float *x = falloc((size_t)rows * cols), *in = falloc((size_t)rows * cols);
        uint64_t s = 70 + ci;
        for (int i = 0; i < rows * cols; i++) x[i] = 10.0f * rng_unif(&s) * (float)(1 + i / cols);
        memcpy(in, x, sizeof(float) * rows * cols);
        rp_softmax_rows(x, rows, cols);
        for (int r = 0; r < rows; r++) check_softmax_row(in + r * cols, x + r * cols, cols);
        free(x); free(in);
    }
    /* large values: no overflow (max is subtracted before exp) */
    float big[4][5] = {
        {1e30f, 1e30f, 0.0f, -1e30f, 1e29f},
        {88.0f, 89.0f, 90.0f, 1000.0f, 999.0f},
        {-INFINITY, 0.0f, 1.0f, -INFINITY, 2.0f},   /* partly masked */
        {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY}, /* fully masked -> zeros */
    };
    float bin[4][5];
    memcpy(bin, big, sizeof big);
    rp_softmax_rows(&big[0][0], 4, 5);
    for (int r = 0; r < 4; r++) check_softmax_row(bin[r], big[r], 5);
    ck_assert_float_eq(big[0][0], 0.5f);
    ck_assert_float_eq(big[0][2], 0.0f);
    ck_assert_float_eq(big[2][0], 0.0f);
    /* a NaN poisons its row as in torch */
    float nanrow[3] = {1.0f, NAN, 2.0f};
    rp_softmax_rows(nanrow, 1, 3);
    ck_assert(isnan(nanrow[0]) && isnan(nanrow[2]));
}
END_TEST

/* ======================= DiT elementwise (bit-exact) ========================== */

/* These follow torch's fp32 op order, so the reference is the same float
 * expression: any difference is a bug, not rounding. */
START_TEST(test_modulate_gated_add) {
    int B = 3, T = 5, C = 7, stride = 3 * C + 2; /* chunks of a wider adaLN output */
    float *x = falloc((size_t)B * T * C), *x0 = falloc((size_t)B * T * C), *y = falloc((size_t)B * T * C);
    float *mod = falloc((size_t)B * stride);
    uint64_t s = 80;
    for (int i = 0; i < B * T * C; i++) { x[i] = 4 * rng_unif(&s); y[i] = rng_unif(&s); }
    for (int i = 0; i < B * stride; i++) mod[i] = rng_unif(&s);
    memcpy(x0, x, sizeof(float) * B * T * C);
    const float *shift = mod + C, *scale = mod + 2 * C, *gate = mod;
    rp_modulate(x, shift, scale, stride, B, T, C);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                int i = (b * T + t) * C + c;
                float one_sc = 1.0f + scale[b * stride + c];
                float xs = x0[i] * one_sc;
                float want = xs + shift[b * stride + c];
                ck_assert(fbits(x[i]) == fbits(want));
            }
    memcpy(x0, x, sizeof(float) * B * T * C);
    rp_gated_add(x, gate, stride, y, B, T, C);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                int i = (b * T + t) * C + c;
                float gy = gate[b * stride + c] * y[i];
                float want = x0[i] + gy;
                ck_assert(fbits(x[i]) == fbits(want));
            }
    memcpy(x0, x, sizeof(float) * B * T * C);
    rp_add(x, y, (size_t)B * T * C);
    for (int i = 0; i < B * T * C; i++) {
        float want = x0[i] + y[i];
        ck_assert(fbits(x[i]) == fbits(want));
    }
    free(x); free(x0); free(y); free(mod);
}
END_TEST

/* ======================= patches ============================================== */

static void check_patch(int B, int C, int H, int W, int p) {
    int gh = H / p, gw = W / p, P = C * p * p;
    size_t n = (size_t)B * C * H * W;
    float *img = falloc(n), *tok = falloc(n), *tok2 = falloc(n), *back = falloc(n);
    for (size_t i = 0; i < n; i++) img[i] = (float)i; /* unique values: exposes any misplacement */
    rp_patchify(tok, img, B, C, H, W, p);
    /* order: token gy*gw + gx, vector (c, py, px) */
    for (int b = 0; b < B; b++)
        for (int gy = 0; gy < gh; gy++)
            for (int gx = 0; gx < gw; gx++)
                for (int c = 0; c < C; c++)
                    for (int py = 0; py < p; py++)
                        for (int px = 0; px < p; px++) {
                            float want = img[(((size_t)b * C + c) * H + gy * p + py) * W + gx * p + px];
                            float got = tok[((size_t)b * gh * gw + gy * gw + gx) * P + (c * p + py) * p + px];
                            ck_assert_float_eq(got, want);
                        }
    /* unpatchify reads (py, px, c): permute the token vectors, then it must
     * give the image back exactly */
    for (int t = 0; t < B * gh * gw; t++)
        for (int c = 0; c < C; c++)
            for (int py = 0; py < p; py++)
                for (int px = 0; px < p; px++)
                    tok2[(size_t)t * P + (py * p + px) * C + c] = tok[(size_t)t * P + (c * p + py) * p + px];
    rp_unpatchify(back, tok2, B, C, H, W, p);
    ck_assert(memcmp(back, img, sizeof(float) * n) == 0);
    /* and directly against DiT's einsum nhwpqc->nchpwq index formula */
    for (size_t i = 0; i < n; i++) tok2[i] = (float)i;
    rp_unpatchify(back, tok2, B, C, H, W, p);
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    int gy = y / p, py = y % p, gx = x / p, px = x % p;
                    float want = tok2[((size_t)b * gh * gw + gy * gw + gx) * P + (py * p + px) * C + c];
                    ck_assert_float_eq(back[(((size_t)b * C + c) * H + y) * W + x], want);
                }
    free(img); free(tok); free(tok2); free(back);
}

START_TEST(test_patchify) {
    check_patch(2, 3, 4, 6, 2);
    check_patch(1, 4, 8, 4, 4);
    check_patch(2, 2, 3, 5, 1);
    check_patch(1, 4, 32, 32, 2); /* DiT-like: latent 4 channels, p = 2 */
}
END_TEST

/* ======================= embeddings =========================================== */

/* Direct evaluation of MAE's formula in long double: token i*gw + j,
 * first half from the w coordinate j, second from the h coordinate i, each
 * [sin(pos w_m), cos(pos w_m)], w_m = 10000^(-m/(D/4)). The implementation is
 * double then float: |err| <= u|ref| + double error of the argument
 * (pos * omega, ~ 32 ud relative after pow) passed through sin/cos (Lipschitz 1). */
START_TEST(test_pos_embed) {
    const int cfg[][3] = {{16, 2, 3}, {8, 1, 1}, {64, 5, 7}, {1152, 16, 16}, {32, 3, 1}};
    for (int ci = 0; ci < 5; ci++) {
        int D = cfg[ci][0], gh = cfg[ci][1], gw = cfg[ci][2], Q = D / 4;
        float *e = falloc((size_t)gh * gw * D);
        rp_pos_embed_2d_sincos(e, D, gh, gw);
        for (int i = 0; i < gh; i++)
            for (int j = 0; j < gw; j++)
                for (int m = 0; m < Q; m++) {
                    long double om = powl(10000.0L, -(long double)m / Q);
                    long double args[2] = {j * om, i * om};
                    for (int half = 0; half < 2; half++) {
                        long double ref[2] = {sinl(args[half]), cosl(args[half])};
                        for (int sc = 0; sc < 2; sc++) {
                            double got = e[((size_t)i * gw + j) * D + half * 2 * Q + sc * Q + m];
                            double bound = U32 * fabs((double)ref[sc]) + 32 * UD * (double)args[half] + 4 * UD;
                            ck_assert_msg(fabs(got - (double)ref[sc]) <= bound,
                                          "pos D=%d (%d,%d) m=%d half=%d sc=%d", D, i, j, m, half, sc);
                        }
                    }
                }
        free(e);
    }
    /* Values printed by MAE's numpy get_2d_sincos_pos_embed(16, grid 2x3) cast to
     * float32 (tokens 1, 3, 5): both sides round a double within a few ud of
     * the same value, so they may differ by at most one float rounding: 2u|v|. */
    static const float mae[3][16] = {
        {8.414709568e-01f, 9.983341396e-02f, 9.999833070e-03f, 9.999998147e-04f, 5.403022766e-01f,
         9.950041771e-01f, 9.999499917e-01f, 9.999995232e-01f, 0, 0, 0, 0, 1, 1, 1, 1},
        {0, 0, 0, 0, 1, 1, 1, 1, 8.414709568e-01f, 9.983341396e-02f, 9.999833070e-03f,
         9.999998147e-04f, 5.403022766e-01f, 9.950041771e-01f, 9.999499917e-01f, 9.999995232e-01f},
        {9.092974067e-01f, 1.986693293e-01f, 1.999866590e-02f, 1.999998698e-03f, -4.161468446e-01f,
         9.800665975e-01f, 9.998000264e-01f, 9.999979734e-01f, 8.414709568e-01f, 9.983341396e-02f,
         9.999833070e-03f, 9.999998147e-04f, 5.403022766e-01f, 9.950041771e-01f, 9.999499917e-01f,
         9.999995232e-01f},
    };
    float e[6 * 16];
    rp_pos_embed_2d_sincos(e, 16, 2, 3);
    const int toks[3] = {1, 3, 5};
    for (int t = 0; t < 3; t++)
        for (int d = 0; d < 16; d++)
            ck_assert_msg(fabs(e[toks[t] * 16 + d] - mae[t][d]) <= 2 * U32 * fabs(mae[t][d]),
                          "MAE token %d dim %d: %.9g vs %.9g", toks[t], d, e[toks[t] * 16 + d], mae[t][d]);
}
END_TEST

/* Timestep embedding is fp32 by design (torch order). Against the exact
 * f_i = exp(-ln(P) i / (half - shift)), a = t f_i:
 *   e_i = fl(fl(fl(-ln P) * i) / fl(half - shift)): <= 4u relative (3 roundings
 *         plus the constant's),
 *   f_i = expf(e_i): relative <= 4u |e_i| + 2u (expf <= 1 ulp),
 *   a   = fl(t f_i): relative <= 4u |e_i| + 3u,
 *   cosf/sinf: the argument error (Lipschitz 1) plus <= 1 ulp (<= u at |y| <= 1).
 *   => |err| <= 1.01 |t f_i| (4u |e_i| + 3u) + u.
 * (At t = 999 that is up to ~2e-4: fp32 evaluation itself, which torch shares,
 * is the limit; matching torch's op order is what keeps parity tight.) */
static void check_timestep(int dim, float P, float shift) {
    const float t[5] = {0.0f, 1.5f, 999.0f, 500.0f, 0.001f};
    int B = 5, half = dim / 2;
    float *out = falloc((size_t)B * dim);
    rp_timestep_embedding(out, t, B, dim, P, shift);
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < half; i++) {
            long double e = -logl(P) * i / ((long double)half - shift);
            long double f = expl(e), a = t[b] * f;
            double bound = 1.01 * fabs((double)a) * (4 * U32 * fabs((double)e) + 3 * U32) + U32;
            ck_assert_msg(fabs(out[b * dim + i] - (double)cosl(a)) <= bound,
                          "ts cos dim=%d t=%g i=%d: %.9g vs %.9Lg (bound %g)", dim, t[b], i,
                          out[b * dim + i], cosl(a), bound);
            ck_assert_msg(fabs(out[b * dim + half + i] - (double)sinl(a)) <= bound,
                          "ts sin dim=%d t=%g i=%d", dim, t[b], i);
        }
        if (dim % 2) ck_assert_float_eq(out[b * dim + dim - 1], 0.0f);
    }
    free(out);
}

START_TEST(test_timestep_embedding) {
    check_timestep(256, 10000.0f, 0.0f);
    check_timestep(7, 10000.0f, 0.0f);
    check_timestep(1, 10000.0f, 0.0f);  /* half = 0: just the zero pad */
    check_timestep(64, 10000.0f, 1.0f); /* diffusers downscale_freq_shift = 1 */
    check_timestep(32, 100.0f, 0.0f);

    /* torch 1.13 values of DiT's TimestepEmbedder.timestep_embedding(t, 256)
     * at columns 0,1,2,3,50,127,128,129,200,255. Both compute e_i bit-identically
     * (same fp32 ops). Each side's expf is within 1 ulp (2u relative) of the
     * exact exp, so the two f_i differ by <= 4u relative; each product t*f_i adds
     * one rounding (u relative): |a - a_torch| <= |a| 6u; each side's cos/sin
     * adds <= 1 ulp (u at |y| <= 1): |diff| <= |a| 6u + 2u. */
    static const float tv[4] = {999.0f, 1.5f, 0.0f, 500.0f};
    static const int cols[10] = {0, 1, 2, 3, 50, 127, 128, 129, 200, 255};
    static const float torch_vals[4][10] = {
        {9.996498227e-01f, 9.637852907e-01f, -3.990205526e-01f, 7.048415542e-01f, -6.077880263e-01f,
         9.942431450e-01f, -2.646075189e-02f, -2.666793764e-01f, -6.173710823e-01f, 1.071472168e-01f},
        {7.073719800e-02f, 1.740473509e-01f, 2.685139179e-01f, 3.541762531e-01f, 9.991564751e-01f,
         1.000000000e+00f, 9.974949956e-01f, 9.847372770e-01f, 8.435019292e-03f, 1.611911284e-04f},
        {1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
        {-8.838492632e-01f, 9.459457397e-01f, 8.485068679e-01f, 6.986969113e-01f, 4.305212796e-01f,
         9.985568523e-01f, -4.677717984e-01f, 3.243249357e-01f, 3.239357471e-01f, 5.370453000e-02f},
    };
    float out[4 * 256];
    rp_timestep_embedding(out, tv, 4, 256, 10000.0f, 0.0f);
    for (int b = 0; b < 4; b++)
        for (int c = 0; c < 10; c++) {
            int i = cols[c] % 128;
            double a = tv[b] * exp(-log(10000.0) * i / 128.0);
            double bound = fabs(a) * 6 * U32 + 2 * U32;
            ck_assert_msg(fabs(out[b * 256 + cols[c]] - torch_vals[b][c]) <= bound,
                          "torch parity t=%g col %d: %.9g vs %.9g", tv[b], cols[c],
                          out[b * 256 + cols[c]], torch_vals[b][c]);
        }
}
END_TEST

/* ======================= conv2d / upsample ======================================== */

/* out = sum over (ic, ky, kx) of w x (+ b): a dot product of length IC*k*k (zero
 * padding contributes exact zeros) through rp_gemm, bias one more addend:
 * |err| <= gamma_{IC k k + 4} (sum |w||x| + |b|). */
static void check_conv(int split, int N, int IC, int H, int W, int OC, int k, int s, int pad,
                       int bias) {
    rp_ctx ctx = rp_ctx_default();
    ctx.reduce_split = split;
    int Ho = (H + 2 * pad - k) / s + 1, Wo = (W + 2 * pad - k) / s + 1;
    size_t nin = (size_t)N * IC * H * W, nw = (size_t)OC * IC * k * k, nout = (size_t)N * OC * Ho * Wo;
    float *in = falloc(nin), *w = falloc(nw), *b = falloc(OC), *out = falloc(nout);
    uint64_t sd = (uint64_t)(N * 1000 + IC * 100 + H * 10 + k + s + pad);
    for (size_t i = 0; i < nin; i++) in[i] = rng_unif(&sd);
    for (size_t i = 0; i < nw; i++) w[i] = rng_unif(&sd);
    for (int i = 0; i < OC; i++) b[i] = rng_unif(&sd);
    for (size_t i = 0; i < nout; i++) out[i] = NAN;
    rp_conv2d(&ctx, out, in, w, bias ? b : NULL, N, IC, H, W, OC, k, s, pad);
    double g = gamma_n(IC * k * k + 4);
    for (int n = 0; n < N; n++)
        for (int oc = 0; oc < OC; oc++)
            for (int oy = 0; oy < Ho; oy++)
                for (int ox = 0; ox < Wo; ox++) {
                    double ref = bias ? b[oc] : 0.0, S = bias ? fabs(b[oc]) : 0.0;
                    for (int ic = 0; ic < IC; ic++)
                        for (int ky = 0; ky < k; ky++)
                            for (int kx = 0; kx < k; kx++) {
                                int iy = oy * s - pad + ky, ix = ox * s - pad + kx;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                double p = (double)w[((oc * IC + ic) * k + ky) * k + kx] *
                                           in[(((size_t)n * IC + ic) * H + iy) * W + ix];
                                ref += p;
                                S += fabs(p);
                            }
                    double got = out[(((size_t)n * OC + oc) * Ho + oy) * Wo + ox];
                    ck_assert_msg(fabs(got - ref) <= g * S,
                                  "conv N=%d IC=%d H=%d W=%d OC=%d k=%d s=%d pad=%d bias=%d split=%d "
                                  "at (%d,%d,%d,%d): |%g - %g| > %g", N, IC, H, W, OC, k, s, pad, bias,
                                  split, n, oc, oy, ox, got, ref, g * S);
                }
    free(in); free(w); free(b); free(out);
}

START_TEST(test_conv2d) {
    for (int split = 0; split < 2; split++)
        for (int bias = 0; bias < 2; bias++) {
            check_conv(split, 2, 3, 7, 9, 5, 3, 1, 1, bias);   /* k3 s1 p1 ("same") */
            check_conv(split, 1, 4, 8, 8, 6, 3, 2, 1, bias);   /* k3 s2 p1 (downsample) */
            check_conv(split, 2, 3, 9, 7, 4, 3, 2, 0, bias);   /* k3 s2 p0, odd sizes */
            check_conv(split, 2, 5, 6, 6, 7, 1, 1, 0, bias);   /* 1x1: direct GEMM path */
            check_conv(split, 1, 2, 5, 5, 3, 1, 2, 0, bias);   /* 1x1 stride 2: im2col path */
            check_conv(split, 1, 3, 8, 10, 4, 2, 2, 0, bias);  /* patch-embed style */
            check_conv(split, 1, 1, 1, 1, 2, 3, 1, 1, bias);   /* 1x1 image, k3 p1 */
            check_conv(split, 1, 3, 4, 4, 2, 3, 1, 2, bias);   /* pad 2: all-zero border windows */
            check_conv(split, 1, 16, 12, 11, 8, 3, 1, 1, bias);
            /* col larger than one im2col block (4 MB): several row blocks, the last short */
            check_conv(split, 1, 32, 200, 199, 2, 3, 1, 1, bias);
            check_conv(split, 1, 64, 300, 301, 2, 3, 2, 1, bias);
        }
}
END_TEST

START_TEST(test_upsample) {
    int N = 2, C = 3, H = 3, W = 5;
    float *in = falloc((size_t)N * C * H * W), *out = falloc((size_t)N * C * 4 * H * W);
    for (int i = 0; i < N * C * H * W; i++) in[i] = (float)i;
    rp_upsample_nearest2x(out, in, N, C, H, W);
    for (int p = 0; p < N * C; p++)
        for (int y = 0; y < 2 * H; y++)
            for (int x = 0; x < 2 * W; x++)
                ck_assert_float_eq(out[((size_t)p * 2 * H + y) * 2 * W + x],
                                   in[((size_t)p * H + y / 2) * W + x / 2]);
    free(in); free(out);
}
END_TEST

/* ======================= head layouts ============================================= */

START_TEST(test_heads) {
    int B = 2, T = 5, H = 3, D = 4;
    size_t n = (size_t)B * T * H * D;
    float *qkv = falloc(3 * n), *q = falloc(n), *k = falloc(n), *v = falloc(n);
    float *x = falloc(n), *y = falloc(n), *z = falloc(n);
    for (size_t i = 0; i < 3 * n; i++) qkv[i] = (float)i;
    rp_split_qkv_heads(q, k, v, qkv, B, T, H, D);
    float *qkv_out[3] = {q, k, v};
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int w = 0; w < 3; w++)
                for (int h = 0; h < H; h++)
                    for (int d = 0; d < D; d++)
                        ck_assert_float_eq(qkv_out[w][(((size_t)b * H + h) * T + t) * D + d],
                                           qkv[((((size_t)b * T + t) * 3 + w) * H + h) * D + d]);
    for (size_t i = 0; i < n; i++) x[i] = (float)i;
    rp_to_heads(y, x, B, T, H, D);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                for (int d = 0; d < D; d++)
                    ck_assert_float_eq(y[(((size_t)b * H + h) * T + t) * D + d],
                                       x[(((size_t)b * T + t) * H + h) * D + d]);
    rp_from_heads(z, y, B, T, H, D);
    ck_assert(memcmp(z, x, sizeof(float) * n) == 0);
    free(qkv); free(q); free(k); free(v); free(x); free(y); free(z);
}
END_TEST

static Suite *ops_suite(void) {
    Suite *s = suite_create("ops");
    TCase *conv = tcase_create("conversions");
    tcase_set_timeout(conv, 300);
    tcase_add_test(conv, test_bf16_edges);
    tcase_add_test(conv, test_bf16_sweep);
    tcase_add_test(conv, test_f16_edges);
    tcase_add_test(conv, test_f16_exhaustive);
    suite_add_tcase(s, conv);
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_layernorm);
    tcase_add_test(tc, test_groupnorm);
    tcase_add_test(tc, test_rmsnorm);
    tcase_add_test(tc, test_gelu_tanh);
    tcase_add_test(tc, test_gelu_erf);
    tcase_add_test(tc, test_silu);
    tcase_add_test(tc, test_fast_expf);
    tcase_add_test(tc, test_softmax);
    tcase_add_test(tc, test_modulate_gated_add);
    tcase_add_test(tc, test_patchify);
    tcase_add_test(tc, test_pos_embed);
    tcase_add_test(tc, test_timestep_embedding);
    tcase_add_test(tc, test_conv2d);
    tcase_add_test(tc, test_upsample);
    tcase_add_test(tc, test_heads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(ops_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
