/* test_rng.c — Philox4x32-10 known answers, Gaussian noise statistics, and the
 * layout independence the whole project relies on. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"

/* Random123 tests/kat_vectors, philox4x32_10 lines (also cross-checked against
 * an independent Python implementation of the round function). */
START_TEST(test_philox_kat) {
    static const struct { uint32_t ctr[4], key[2], out[4]; } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t out[4];
        rp_philox4x32_10(kat[i].ctr, kat[i].key, out);
        for (int k = 0; k < 4; k++)
            ck_assert_msg(out[k] == kat[i].out[k], "kat %zu word %d: got 0x%08x want 0x%08x", i, k, out[k],
                          kat[i].out[k]);
    }
}
END_TEST

/* The documented recipe, element by element, pins the counter layout and Box-Muller. */
START_TEST(test_randn_recipe) {
    const uint64_t seed = 0x123456789abcdef0ull, index = 0xfedcba9876543210ull;
    const uint32_t stream = 17;
    float z[10];
    rp_randn(z, 10, seed, index, stream);
    for (int j = 0; j < 10; j++) {
        uint32_t ctr[4] = {(uint32_t)(j / 4), stream, (uint32_t)index, (uint32_t)(index >> 32)};
        uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, w[4];
        rp_philox4x32_10(ctr, key, w);
        int pair = (j % 4) / 2;
        double u1 = ((double)w[2 * pair] + 1.0) / 4294967296.0, u2 = (double)w[2 * pair + 1] / 4294967296.0;
        double r = sqrt(-2.0 * log(u1)), a = 2.0 * M_PI * u2;
        float want = (float)((j % 2) ? r * sin(a) : r * cos(a));
        ck_assert_msg(z[j] == want, "element %d: %.9g vs %.9g", j, z[j], want);
    }
}
END_TEST

START_TEST(test_randn_moments) {
    const size_t n = 1u << 20;
    float *z = malloc(n * sizeof *z);
    ck_assert_ptr_nonnull(z);
    rp_randn(z, n, 42, 7, RP_STREAM_INIT_NOISE);
    double s1 = 0, s2 = 0, s4 = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert(isfinite(z[i]));
        double v = z[i];
        s1 += v; s2 += v * v; s4 += v * v * v * v;
        if (fabs(v) > mx) mx = fabs(v);
    }
    double mean = s1 / n, var = s2 / n - mean * mean, kurt = (s4 / n) / (var * var);
    /* 6-sigma bands: sd(mean) = 1/sqrt(n), sd(var) ~ sqrt(2/n), sd(kurtosis) ~ sqrt(24/n) */
    ck_assert_msg(fabs(mean) < 6.0 / sqrt((double)n), "mean %g", mean);
    ck_assert_msg(fabs(var - 1.0) < 6.0 * sqrt(2.0 / n), "var %g", var);
    ck_assert_msg(fabs(kurt - 3.0) < 6.0 * sqrt(24.0 / n), "kurtosis %g", kurt);
    /* u1 >= 2^-32 bounds |z| by sqrt(-2 ln 2^-32) ~ 6.66 */
    ck_assert_msg(mx <= 6.67, "max |z| %g", mx);
    ck_assert_msg(mx > 4.0, "max |z| %g: tails missing for n = 2^20", mx);
    free(z);
}
END_TEST

/* Sample correlation of two draws; |r| < 6/sqrt(n) if independent. */
static double corr(uint64_t s1, uint64_t i1, uint32_t t1, uint64_t s2, uint64_t i2, uint32_t t2, size_t n) {
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    ck_assert(a && b);
    rp_randn(a, n, s1, i1, t1);
    rp_randn(b, n, s2, i2, t2);
    double sab = 0, saa = 0, sbb = 0;
    for (size_t i = 0; i < n; i++) { sab += (double)a[i] * b[i]; saa += (double)a[i] * a[i]; sbb += (double)b[i] * b[i]; }
    free(a);
    free(b);
    return sab / sqrt(saa * sbb);
}

START_TEST(test_randn_keys_independent) {
    const size_t n = 1u << 16;
    const double bound = 6.0 / sqrt((double)n);
    const uint64_t hi = 1ull << 32;
    /* each key component, including the high halves of seed and index, must matter */
    double r[] = {
        corr(1, 0, 0, 1, 1, 0, n),       corr(1, 0, 0, 1, 0, 1, n),  corr(1, 0, 0, 2, 0, 0, n),
        corr(1, 5, 0, 1, 5 + hi, 0, n),  corr(1, 0, 0, 1 + hi, 0, 0, n),
        corr(1, 0, RP_STREAM_INIT_NOISE, 1, 0, RP_STREAM_STEP_NOISE_BASE, n),
    };
    for (size_t k = 0; k < sizeof r / sizeof r[0]; k++)
        ck_assert_msg(fabs(r[k]) < bound, "pair %zu: correlation %g (bound %g)", k, r[k], bound);
    /* and the same key gives the same draw */
    ck_assert(fabs(corr(3, 4, 5, 3, 4, 5, 1000) - 1.0) < 1e-12);
}
END_TEST

START_TEST(test_randn_layout_independent) {
    const size_t n = 1003;
    float *all = malloc(n * sizeof *all), *part = malloc(n * sizeof *part);
    ck_assert(all && part);
    rp_randn(all, n, 9, 3, 2);
    /* every prefix length (including ones ending mid-block) is a prefix of the long draw */
    for (size_t m = 0; m <= 13; m++) {
        memset(part, 0, n * sizeof *part);
        rp_randn(part, m, 9, 3, 2);
        ck_assert(memcmp(part, all, m * sizeof *part) == 0);
    }
    /* arbitrary slices, as a rank filling its own shard would draw them */
    const size_t cuts[][2] = {{0, 1}, {1, 2}, {3, 5}, {4, 4}, {6, 997}, {1001, 2}, {500, 0}};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        rp_randn_at(part, cuts[c][0], cuts[c][1], 9, 3, 2);
        ck_assert_msg(memcmp(part, all + cuts[c][0], cuts[c][1] * sizeof *part) == 0, "slice %zu", c);
    }
    free(all);
    free(part);
}
END_TEST

START_TEST(test_fnv1a64) {
    ck_assert(rp_fnv1a64("") == 0xcbf29ce484222325ull);
    ck_assert(rp_fnv1a64("a") == 0xaf63dc4c8601ec8cull);
    ck_assert(rp_fnv1a64("foobar") == 0x85944171f73967e8ull);
}
END_TEST

int main(void) {
    Suite *s = suite_create("rng");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_philox_kat);
    tcase_add_test(tc, test_randn_recipe);
    tcase_add_test(tc, test_randn_moments);
    tcase_add_test(tc, test_randn_keys_independent);
    tcase_add_test(tc, test_randn_layout_independent);
    tcase_add_test(tc, test_fnv1a64);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
