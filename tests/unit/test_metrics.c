/* test_metrics.c — harness/metrics/metrics.c: PSNR / SSIM properties (identical images,
 * symmetry, a constant offset worked by hand, the 'reflect' border on images
 * smaller than the window, against scipy values and a brute-force 2-D
 * reference), pixel counts, the heatmap ramp, and latent metrics on
 * constructed vectors with exact answers.
 * (tests/reference/test_ssim_skimage.py compares against skimage itself.) */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/metrics/metrics.h"

static const double U = 0x1p-53; /* unit roundoff of double */

/* rgb (H, W, C) of deterministic pseudo-random bytes. */
static uint8_t *noise(int W, int H, int C, uint32_t seed) {
    uint8_t *p = malloc((size_t)W * H * C);
    ck_assert_ptr_nonnull(p);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < (size_t)W * H * C; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (uint8_t)(x >> 24);
    }
    return p;
}

/* b = a + small deterministic perturbation, clamped. */
static uint8_t *perturb(const uint8_t *a, size_t n, int amp, uint32_t seed) {
    uint8_t *b = noise((int)n, 1, 1, seed);
    for (size_t i = 0; i < n; i++) {
        int v = a[i] + (int)(b[i] % (2 * amp + 1)) - amp;
        b[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    return b;
}

static double ssim(const uint8_t *a, const uint8_t *b, int W, int H, int C, double *map) {
    double m;
    rp_error err;
    ck_assert_int_eq(rp_ssim_u8(a, b, W, H, C, &m, map, &err), RP_OK);
    return m;
}

/* ---- PSNR / SSIM properties ------------------------------------------------------ */

START_TEST(test_identical_images) {
    /* identical inputs: psnr +inf, ssim exactly 1 (the formula rounds alike in
     * numerator and denominator), every count 0 */
    uint8_t *a = noise(37, 23, 3, 1);
    uint8_t *b = malloc(37 * 23 * 3);
    memcpy(b, a, 37 * 23 * 3);
    rp_image_metrics m;
    rp_error err;
    ck_assert_int_eq(rp_image_metrics_compute(a, b, 37, 23, &m, &err), RP_OK);
    ck_assert(isinf(m.psnr) && m.psnr > 0);
    ck_assert(m.ssim == 1.0);
    ck_assert_int_eq(m.max_abs, 0);
    ck_assert(m.changed == 0 && m.changed_gt8 == 0);
    double map[37 * 23 * 3];
    ck_assert(ssim(a, b, 37, 23, 3, map) == 1.0);
    for (int i = 0; i < 37 * 23 * 3; i++) ck_assert(map[i] == 1.0);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_symmetry) {
    /* swapping the images swaps ux and uy only: exactly the same value and map */
    const int W = 75, H = 29; /* several column strips, with a partial last one */
    uint8_t *a = noise(W, H, 3, 2), *b = perturb(a, (size_t)W * H * 3, 30, 3);
    double *m1 = malloc(sizeof(double) * W * H * 3), *m2 = malloc(sizeof(double) * W * H * 3);
    const double s1 = ssim(a, b, W, H, 3, m1), s2 = ssim(b, a, W, H, 3, m2);
    ck_assert(s1 == s2);
    ck_assert(s1 < 1.0 && s1 > 0.0);
    ck_assert(memcmp(m1, m2, sizeof(double) * W * H * 3) == 0);
    ck_assert(rp_psnr_u8(a, b, (size_t)W * H * 3) == rp_psnr_u8(b, a, (size_t)W * H * 3));
    /* the mean is the same whether or not the full map is asked for */
    ck_assert(ssim(a, b, W, H, 3, NULL) == s1);
    free(a);
    free(b);
    free(m1);
    free(m2);
}
END_TEST

START_TEST(test_constant_offset_by_hand) {
    /* a = 100, b = 110 everywhere: MSE = 100 exactly, PSNR = 20 log10(255 / 10);
     * means 100 and 110, variances and covariance 0, so
     * SSIM = (2 * 100 * 110 + C1) / (100^2 + 110^2 + C1), C1 = (0.01 * 255)^2. */
    const int W = 16, H = 13;
    uint8_t a[16 * 13 * 3], b[16 * 13 * 3];
    memset(a, 100, sizeof a);
    memset(b, 110, sizeof b);
    const double psnr = rp_psnr_u8(a, b, sizeof a);
    ck_assert(psnr == 10.0 * log10(65025.0 / 100.0)); /* the same three roundings */
    ck_assert(fabs(psnr - 28.130803608679102) < 1e-13);
    const double C1 = (0.01 * 255) * (0.01 * 255), want = (22000.0 + C1) / (10000.0 + 12100.0 + C1);
    /* Tolerance: each filtered moment is a positive sum, two passes of 11 terms:
     * relative error <= 24 u. The variance sum G(x^2+y^2) - (ux^2 + uy^2) is then
     * off by <= 22100 * (24 + 2 * 24 + 3) u ~ 1.8e-10 around its true 0, against
     * B2 >= C2 = 58.5: 3.2e-12 on S; the means' share is ~50 u. */
    const double tol = 22100.0 * 75 * U / (7.65 * 7.65) + 100 * U;
    double map[16 * 13 * 3];
    const double s = ssim(a, b, W, H, 3, map);
    ck_assert_msg(fabs(s - want) <= tol, "ssim %.17g, by hand %.17g", s, want);
    for (int i = 0; i < W * H * 3; i++) ck_assert(fabs(map[i] - want) <= tol);
}
END_TEST

START_TEST(test_below_window_is_nan) {
    /* skimage refuses sides < 11 (its cropped map would be empty): NaN, but the
     * full map is still defined */
    uint8_t *a = noise(10, 20, 3, 4), *b = noise(10, 20, 3, 5);
    ck_assert(isnan(ssim(a, b, 10, 20, 3, NULL)));
    ck_assert(isnan(ssim(a, b, 20, 10, 3, NULL)));
    double map[10 * 20 * 3];
    ck_assert(isnan(ssim(a, b, 10, 20, 3, map)));
    for (int i = 0; i < 10 * 20 * 3; i++) ck_assert(map[i] >= -1.0 && map[i] <= 1.0);
    ck_assert(!isnan(ssim(a, b, 11, 11, 1, NULL)));
    free(a);
    free(b);
}
END_TEST

/* ---- the reflect border ---------------------------------------------------------- */

/* scipy's 'reflect' by folding (independent of metrics.c's modular form). */
static int fold(int i, int n) {
    while (i < 0 || i >= n) {
        if (i < 0) i = -i - 1;
        if (i >= n) i = 2 * n - 1 - i;
    }
    return i;
}

/* Brute-force S map of one channel (gray, (H, W)): the 121-tap 2-D Gaussian
 * with folded indices, five moments, skimage's formula as written there. */
static void brute_map(const uint8_t *a, const uint8_t *b, int W, int H, double *out) {
    double w[11], sum = 0;
    for (int k = -5; k <= 5; k++) sum += (w[k + 5] = exp(-k * k / (2 * 1.5 * 1.5)));
    for (int k = 0; k < 11; k++) w[k] /= sum;
    const double C1 = (0.01 * 255) * (0.01 * 255), C2 = (0.03 * 255) * (0.03 * 255);
    for (int i = 0; i < H; i++)
        for (int j = 0; j < W; j++) {
            double ux = 0, uy = 0, uxx = 0, uyy = 0, uxy = 0;
            for (int di = -5; di <= 5; di++)
                for (int dj = -5; dj <= 5; dj++) {
                    const int p = fold(i + di, H) * W + fold(j + dj, W);
                    const double g = w[di + 5] * w[dj + 5], x = a[p], y = b[p];
                    ux += g * x, uy += g * y, uxx += g * x * x, uyy += g * y * y, uxy += g * x * y;
                }
            const double vx = uxx - ux * ux, vy = uyy - uy * uy, vxy = uxy - ux * uy;
            out[i * W + j] = ((2 * ux * uy + C1) * (2 * vxy + C2)) / ((ux * ux + uy * uy + C1) * (vx + vy + C2));
        }
}

/* Map tolerance. Moments are positive sums: the brute force's 121 terms carry
 * a relative error <= ~124 u, the separable passes <= 24 u. The variance sum
 * (x^2 and y^2 moments <= 65025, minus ux^2 + uy^2) is then off by
 * <= 2 * 65025 * 124 u + 2 * 65025 * 249 u ~ 5.4e-9, against B2 >= C2 = 58.5:
 * <= 9.2e-11 relative on S, twice that for numerator and denominator; |S| <= 1.
 * Measured: ~1e-15. */
static const double MAP_TOL = 3e-10;

START_TEST(test_reflect_tiny_against_scipy) {
    /* 4 x 3 gray images, both sides below the radius: scipy reflects more than
     * once. Reference: skimage's formula on scipy.ndimage.gaussian_filter(sigma 1.5,
     * truncate 3.5, mode 'reflect') from Debian's scipy 1.10 (skimage itself
     * refuses these sizes). a[i][j] = (37 i + 101 j) % 256, b = (53 i + 29 j + 7) % 256. */
    static const double SCIPY[3][4] = {
        {0.48507558756394437, 0.337726784925663, 0.10579796360872822, -0.06437881999388173},
        {0.4470625122576134, 0.27450309365544345, 0.04046713913012682, -0.10448464738363242},
        {0.38026822208289524, 0.19417889049366965, -0.025099954349314894, -0.1407719164159557}};
    uint8_t a[12], b[12], a3[36], b3[36];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            a[i * 4 + j] = (uint8_t)((37 * i + 101 * j) % 256);
            b[i * 4 + j] = (uint8_t)((53 * i + 29 * j + 7) % 256);
            for (int c = 0; c < 3; c++) a3[(i * 4 + j) * 3 + c] = a[i * 4 + j], b3[(i * 4 + j) * 3 + c] = b[i * 4 + j];
        }
    double map[12], map3[36], brute[12];
    ck_assert(isnan(ssim(a, b, 4, 3, 1, map)));
    brute_map(a, b, 4, 3, brute);
    for (int p = 0; p < 12; p++) {
        ck_assert_msg(fabs(map[p] - SCIPY[p / 4][p % 4]) <= MAP_TOL, "pixel %d: %.17g vs scipy %.17g", p, map[p],
                      SCIPY[p / 4][p % 4]);
        ck_assert(fabs(brute[p] - SCIPY[p / 4][p % 4]) <= MAP_TOL); /* the brute force itself */
    }
    /* interleaved channels: each channel's taps stay in the channel */
    ssim(a3, b3, 4, 3, 3, map3);
    for (int p = 0; p < 12; p++)
        for (int c = 0; c < 3; c++) ck_assert(map3[p * 3 + c] == map[p]);
}
END_TEST

START_TEST(test_reflect_map_brute_force) {
    /* every pixel of the map, borders included, for sizes around the window */
    static const int SIZES[][2] = {{1, 1}, {2, 7}, {5, 5}, {11, 11}, {12, 17}, {23, 6}};
    for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++) {
        const int W = SIZES[s][0], H = SIZES[s][1];
        uint8_t *a = noise(W, H, 1, 10 + (uint32_t)s), *b = perturb(a, (size_t)W * H, 40, 20 + (uint32_t)s);
        double *map = malloc(sizeof(double) * W * H), *ref = malloc(sizeof(double) * W * H);
        const double m = ssim(a, b, W, H, 1, map);
        brute_map(a, b, W, H, ref);
        double mean = 0;
        for (int p = 0; p < W * H; p++) {
            ck_assert_msg(fabs(map[p] - ref[p]) <= MAP_TOL, "%dx%d pixel %d: %.17g vs %.17g", W, H, p, map[p], ref[p]);
        }
        if (W >= 11 && H >= 11) { /* the mean over the map cropped by 5 */
            for (int i = 5; i < H - 5; i++)
                for (int j = 5; j < W - 5; j++) mean += ref[i * W + j];
            mean /= (double)(W - 10) * (H - 10);
            ck_assert(fabs(m - mean) <= MAP_TOL);
        } else {
            ck_assert(isnan(m));
        }
        free(a);
        free(b);
        free(map);
        free(ref);
    }
}
END_TEST

/* ---- counts and heatmap ----------------------------------------------------------- */

START_TEST(test_pixel_counts) {
    /* 4 x 2 pixels; per-pixel max channel difference 0, 1, 8, 9, 0, 255, 0, 3 */
    const int D[8] = {0, 1, 8, 9, 0, 255, 0, 3};
    uint8_t a[24], b[24];
    for (int p = 0; p < 8; p++)
        for (int c = 0; c < 3; c++) {
            a[p * 3 + c] = (uint8_t)(c == 1 ? 0 : 7);
            b[p * 3 + c] = (uint8_t)(c == 1 ? D[p] : 7 - (D[p] > 7 ? 7 : D[p]) * (c == 2)); /* channel 2 smaller */
        }
    rp_image_metrics m;
    rp_error err;
    ck_assert_int_eq(rp_image_metrics_compute(a, b, 4, 2, &m, &err), RP_OK);
    ck_assert_int_eq(m.max_abs, 255);
    ck_assert(m.changed == 5.0 / 8);
    ck_assert(m.changed_gt8 == 2.0 / 8);
    ck_assert(isnan(m.ssim));
    uint8_t hm[24];
    ck_assert_int_eq(rp_diff_heatmap(a, b, 4, 2, hm), 255);
    for (int p = 0; p < 8; p++) {
        uint8_t want[3];
        rp_heat_colour(D[p] / 255.0, want);
        ck_assert(!memcmp(hm + 3 * p, want, 3));
    }
}
END_TEST

START_TEST(test_heat_ramp) {
    uint8_t c[3], prev[3];
    rp_heat_colour(0.0, c);
    ck_assert(c[0] == 0 && c[1] == 0 && c[2] == 4);
    rp_heat_colour(1.0, c);
    ck_assert(c[0] == 252 && c[1] == 255 && c[2] == 164);
    rp_heat_colour(-3.0, c);
    ck_assert(c[0] == 0 && c[1] == 0 && c[2] == 4);
    rp_heat_colour(NAN, c);
    ck_assert(c[0] == 0 && c[1] == 0 && c[2] == 4);
    /* perceptual ordering: luma (Rec. 601) never decreases along the ramp */
    rp_heat_colour(0.0, prev);
    for (int i = 1; i <= 1000; i++) {
        rp_heat_colour(i / 1000.0, c);
        ck_assert(299 * c[0] + 587 * c[1] + 114 * c[2] >= 299 * prev[0] + 587 * prev[1] + 114 * prev[2] - 1000);
        memcpy(prev, c, 3);
    }
    /* equal images: all black, scale 0 */
    uint8_t a[6] = {1, 2, 3, 4, 5, 6}, hm[6];
    ck_assert_int_eq(rp_diff_heatmap(a, a, 2, 1, hm), 0);
    ck_assert(hm[0] == 0 && hm[1] == 0 && hm[2] == 4 && hm[3] == 0 && hm[4] == 0 && hm[5] == 4);
}
END_TEST

/* ---- latents ------------------------------------------------------------------------ */

START_TEST(test_latent_exact) {
    rp_latent_metrics m;
    const float a1[2] = {3, 4};
    rp_latent_metrics_compute(a1, a1, 2, &m);
    ck_assert(m.max_abs == 0 && m.mean_abs == 0 && m.rel_l2 == 0 && m.cosine == 1);

    const float e1[2] = {1, 0}, e2[2] = {0, 1};
    rp_latent_metrics_compute(e1, e2, 2, &m);
    ck_assert(m.max_abs == 1 && m.mean_abs == 1 && m.rel_l2 == sqrt(2.0) && m.cosine == 0);

    const float z[2] = {0, 0};
    rp_latent_metrics_compute(a1, z, 2, &m); /* ||a - 0|| / ||a|| = 1; zero b: cosine 0 */
    ck_assert(m.max_abs == 4 && m.mean_abs == 3.5 && m.rel_l2 == 1 && m.cosine == 0);
    rp_latent_metrics_compute(z, e1, 2, &m); /* zero reference: inf */
    ck_assert(isinf(m.rel_l2) && m.cosine == 0);
    rp_latent_metrics_compute(z, z, 2, &m);
    ck_assert(m.rel_l2 == 0 && m.cosine == 1);

    const float p[3] = {1, 2, 2}, q[3] = {2, 4, 4}; /* norms 3 and 6, parallel */
    rp_latent_metrics_compute(p, q, 3, &m);
    ck_assert(m.max_abs == 2 && m.mean_abs == 5.0 / 3 && m.rel_l2 == 1 && m.cosine == 1);

    const float r[2] = {1, 1}, s[2] = {1, -1}; /* orthogonal; |d| = 2, |a| = sqrt 2 */
    rp_latent_metrics_compute(r, s, 2, &m);
    ck_assert(m.cosine == 0 && fabs(m.rel_l2 - sqrt(2.0)) <= 2 * U * sqrt(2.0));

    const float big[2] = {1e30f, -1e30f}, tiny[2] = {1e-30f, 0}; /* numpy's rule: float64(a) - float64(b) */
    rp_latent_metrics_compute(big, tiny, 2, &m);
    ck_assert(m.max_abs == (double)1e30f);
    ck_assert(m.max_abs == fabs((double)big[0] - (double)tiny[0]));

    const float nan_a[3] = {1, NAN, 2}, nan_b[3] = {1, 0, 5}; /* a NaN is not hidden by max */
    rp_latent_metrics_compute(nan_a, nan_b, 3, &m);
    ck_assert(isnan(m.max_abs) && isnan(m.mean_abs) && isnan(m.rel_l2));
    rp_latent_metrics_compute(nan_b, nan_a, 3, &m);
    ck_assert(isnan(m.max_abs));

    /* trajectory: 3 steps of 2 values */
    const float ta[6] = {3, 4, 1, 0, 0, 0}, tb[6] = {3, 4, 0, 1, 0, 0};
    double out[3];
    rp_trajectory_rel_l2(ta, tb, 3, 2, out);
    ck_assert(out[0] == 0 && out[1] == sqrt(2.0) && out[2] == 0);
}
END_TEST

static Suite *metrics_suite(void) {
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_identical_images);
    tcase_add_test(tc, test_symmetry);
    tcase_add_test(tc, test_constant_offset_by_hand);
    tcase_add_test(tc, test_below_window_is_nan);
    tcase_add_test(tc, test_reflect_tiny_against_scipy);
    tcase_add_test(tc, test_reflect_map_brute_force);
    tcase_add_test(tc, test_pixel_counts);
    tcase_add_test(tc, test_heat_ramp);
    tcase_add_test(tc, test_latent_exact);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(metrics_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
