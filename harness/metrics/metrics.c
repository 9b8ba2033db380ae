/* metrics.c — latent and image difference metrics (see metrics.h).
 *
 * SSIM, the costly one, avoids skimage's five full filtered float64 images:
 *   - of the five Gaussian moments SSIM uses (G x, G y, G x^2, G y^2, G xy),
 *     G x^2 and G y^2 only enter as their sum, so four quantities are filtered:
 *     x, y, x^2 + y^2 and x y (the filter is linear);
 *   - the image is cut into column strips of STRIP interleaved elements, each
 *     swept top to bottom: a source row's strip is filtered horizontally once,
 *     into a ring of the last 11 such rows that stays in L1; the vertical pass
 *     over the ring is fused with the SSIM formula and yields one strip row of
 *     the S map at a time;
 *   - the symmetric 11-tap kernel costs 5 adds, 5 fma and a multiply per pass,
 *     quantity and element, in loops elementwise over interleaved rows (all
 *     channels at once; a channel's horizontal taps are C elements apart),
 *     so they vectorise. They are ISA clones (engine/fastmath.h), and the
 *     weighting uses explicit fma(): IEEE 754 rounds it exactly once, so the
 *     bits are the same with or without FMA hardware (without it glibc
 *     computes it in software: correct, slower); -ffp-contract=off still
 *     forbids any contraction the source does not spell out.
 * Only the rows and columns that skimage's crop keeps are computed unless the
 * full map is asked for; their windows lie inside the image, so the 'reflect'
 * extension only matters for the map. */
#include "harness/metrics/metrics.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/fastmath.h" /* RP_SIMD_CLONES */
#include "engine/image.h"

/* ---- latents --------------------------------------------------------------- */

/* ||d|| / ||a|| from the two sums of squares, with the zero rules of metrics.h. */
static double rel_l2_from(double sdd, double saa) {
    if (saa == 0) return sdd == 0 ? 0.0 : INFINITY;
    return sqrt(sdd) / sqrt(saa);
}

void rp_latent_metrics_compute(const float *a, const float *b, size_t n, rp_latent_metrics *m) {
    assert(n >= 1);
    double maxd = 0, sabs = 0, sdd = 0, saa = 0, sbb = 0, sab = 0;
    for (size_t i = 0; i < n; i++) {
        /* the difference of the double images of two floats: what numpy does
         * after astype(float64), so max_abs matches it bit for bit */
        const double x = a[i], y = b[i], d = fabs(x - y);
        maxd = d > maxd || d != d ? d : maxd; /* a NaN sticks: a diverged run must show */
        sabs += d;
        sdd += d * d;
        saa += x * x;
        sbb += y * y;
        sab += x * y;
    }
    m->max_abs = maxd;
    m->mean_abs = sabs / (double)n;
    m->rel_l2 = rel_l2_from(sdd, saa);
    if (saa == 0 || sbb == 0) {
        m->cosine = saa == 0 && sbb == 0 ? 1.0 : 0.0;
    } else {
        /* sqrt(saa * sbb), not sqrt(saa) * sqrt(sbb): for a == b it is exactly
         * saa (sqrt(fl(s * s)) == s in IEEE), so identical inputs give 1, not 1 - ulp */
        const double p = saa * sbb;
        m->cosine = sab / (isinf(p) ? sqrt(saa) * sqrt(sbb) : sqrt(p));
    }
}

void rp_trajectory_rel_l2(const float *a, const float *b, size_t steps, size_t per, double *out) {
    for (size_t t = 0; t < steps; t++) {
        const float *x = a + t * per, *y = b + t * per;
        double sdd = 0, saa = 0;
        for (size_t i = 0; i < per; i++) {
            const double d = (double)x[i] - (double)y[i];
            sdd += d * d;
            saa += (double)x[i] * x[i];
        }
        out[t] = rel_l2_from(sdd, saa);
    }
}

/* ---- images: PSNR and pixel counts ----------------------------------------- */

/* sum of (a_i - b_i)^2 over i < n <= 2^15, exact in 32 bits (2^15 * 255^2 < 2^32) */
RP_SIMD_CLONES
static uint32_t sse_block(const uint8_t *restrict a, const uint8_t *restrict b, size_t n) {
    uint32_t s = 0;
    for (size_t i = 0; i < n; i++) {
        const int d = (int)a[i] - (int)b[i];
        s += (uint32_t)(d * d);
    }
    return s;
}

double rp_psnr_u8(const uint8_t *a, const uint8_t *b, size_t n) {
    assert(n >= 1);
    uint64_t sse = 0; /* exact: n * 255^2 < 2^64 for any image that fits in memory */
    for (size_t i = 0; i < n; i += (size_t)1 << 15)
        sse += sse_block(a + i, b + i, n - i < ((size_t)1 << 15) ? n - i : (size_t)1 << 15);
    if (sse == 0) return INFINITY;
    /* skimage: mean of exact integer squares in float64 (exact below 2^53), one
     * division, then 10 * log10(255**2 / mse): the same three roundings here */
    const double mse = (double)sse / (double)n;
    return 10.0 * log10(65025.0 / mse);
}

rp_status rp_image_metrics_compute(const uint8_t *a, const uint8_t *b, int W, int H, rp_image_metrics *m,
                                   rp_error *err) {
    assert(W >= 1 && H >= 1);
    const size_t npx = (size_t)W * H;
    size_t changed = 0, gt8 = 0;
    int maxd = 0;
    for (size_t p = 0; p < npx; p++) {
        int d = 0;
        for (int c = 0; c < 3; c++) {
            const int e = abs((int)a[3 * p + c] - (int)b[3 * p + c]);
            d = e > d ? e : d;
        }
        changed += d > 0;
        gt8 += d > 8;
        maxd = d > maxd ? d : maxd;
    }
    m->max_abs = maxd;
    m->changed = (double)changed / (double)npx;
    m->changed_gt8 = (double)gt8 / (double)npx;
    m->psnr = rp_psnr_u8(a, b, 3 * npx);
    return rp_ssim_u8(a, b, W, H, 3, &m->ssim, NULL, err);
}

/* ---- SSIM ---------------------------------------------------------------------- */

enum {
    R = 5,            /* window radius: int(truncate 3.5 * sigma 1.5 + 0.5), as scipy */
    TAPS = 2 * R + 1, /* = skimage's win_size, and its crop is (TAPS - 1) / 2 = R */
    NQ = 4,           /* filtered quantities: x, y, x^2 + y^2, x y */
    MAXC = 4,         /* channels: gray, gray + alpha, RGB, RGBA */
    /* elements (pixels x channels) per column strip: a multiple of 8 (vector
     * lanes) and of every C <= MAXC; the strip's ring, TAPS x NQ x STRIP
     * doubles = 33 KiB, stays in L1 (wider strips measured slower) */
    STRIP = 96
};
_Static_assert(TAPS == RP_SSIM_MIN_SIDE, "the minimum side is the window size");
_Static_assert(STRIP % 8 == 0 && STRIP % 3 == 0 && STRIP % 4 == 0, "strips hold whole pixels for C <= 4");

static const double SSIM_C1 = (0.01 * 255) * (0.01 * 255); /* (K1 data_range)^2, as skimage evaluates it */
static const double SSIM_C2 = (0.03 * 255) * (0.03 * 255); /* (K2 data_range)^2 */

/* w[k] = weight of offsets +-k of scipy's Gaussian kernel (sigma 1.5, radius R):
 * exp(-0.5 / sigma^2 * x^2) for x = -R..R, normalised by its sum. */
static void gauss_weights(double w[R + 1]) {
    double phi[TAPS], sum = 0;
    for (int x = -R; x <= R; x++) phi[x + R] = exp(-0.5 / (1.5 * 1.5) * (double)(x * x));
    for (int i = 0; i < TAPS; i++) sum += phi[i];
    for (int k = 0; k <= R; k++) w[k] = phi[R + k] / sum;
}

/* Index i (any integer) mapped into [0, n) by scipy's 'reflect' (half-sample
 * symmetric) extension: ... c b a | a b c | c b a ..., periodic with period 2n,
 * so lines shorter than the radius reflect again. */
static int reflect_index(int i, int n) {
    assert(n >= 1);
    const int p = 2 * n;
    i %= p;
    if (i < 0) i += p;
    return i < n ? i : p - 1 - i;
}

/* p (NQ, stride PP) [e] = x, y, x^2 + y^2, x y of the bytes x = a[e], y = b[e],
 * e < n: small integers, exact in double. */
RP_SIMD_CLONES
static void quantities(const uint8_t *restrict a, const uint8_t *restrict b, int n, double *restrict p,
                       size_t PP) {
    for (int e = 0; e < n; e++) {
        const int32_t x = a[e], y = b[e];
        p[e] = x;
        p[PP + e] = y;
        p[2 * PP + e] = x * x + y * y;
        p[3 * PP + e] = x * y;
    }
}

/* The horizontal pass of one quantity: o[e] = sum_k w[|k|] p[e + k C],
 * k = -R..R, e in [0, n); element e's taps are its own channel's, C elements
 * apart in the interleaved row; p must be readable on [-R C, n + R C). The
 * symmetric kernel is applied to pair sums: w0 p_e, then one fma per pair
 * from the centre outwards. */
static inline __attribute__((always_inline)) void hfilter_body(const double *restrict p, int n, int C,
                                                               const double *restrict w, double *restrict o) {
    const double w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5];
#define RP_PAIR(k) (p[e - (k) * C] + p[e + (k) * C])
    for (int e = 0; e < n; e++)
        o[e] = fma(w5, RP_PAIR(5),
                   fma(w4, RP_PAIR(4), fma(w3, RP_PAIR(3), fma(w2, RP_PAIR(2), fma(w1, RP_PAIR(1), w0 * p[e])))));
#undef RP_PAIR
}

/* hfilter_body, specialised for C = 3 and 1: a constant C turns the taps into
 * constant offsets from one pointer. */
RP_SIMD_CLONES
static void hfilter(const double *restrict p, int n, int C, const double *restrict w, double *restrict o) {
    if (C == 3) hfilter_body(p, n, 3, w, o);
    else if (C == 1) hfilter_body(p, n, 1, w, o);
    else hfilter_body(p, n, C, w, o);
}

/* One strip row of the S map, elements [0, n): the vertical pass over the
 * TAPS horizontally filtered rows rows[0..TAPS) (each (NQ, STRIP); rows[R]
 * the output row's own; same weighting order as hfilter) fused with the
 * formula. The formula is skimage's (A1 A2) / (B1 B2) with its variance sum
 * regrouped as G(x^2 + y^2) - (ux^2 + uy^2): for x == y every step then
 * rounds alike in numerator and denominator (G(2 x^2) is exactly 2 G(x^2)),
 * so identical images give exactly 1, and swapping the images swaps ux and
 * uy only, so the value is exactly symmetric. */
RP_SIMD_CLONES
static void vpass_ssim(const double *const *rows, int n, const double *restrict w, double *restrict s) {
    const double w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5];
    const double C1 = SSIM_C1, C2 = SSIM_C2;
    /* 11 row pointers; the quantities sit at constant offsets q STRIP from them */
    const double *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3], *r4 = rows[4], *r5 = rows[5],
                 *r6 = rows[6], *r7 = rows[7], *r8 = rows[8], *r9 = rows[9], *r10 = rows[10];
#define RP_VTAP(o)                                                                                    \
    fma(w5, r0[o] + r10[o],                                                                           \
        fma(w4, r1[o] + r9[o], fma(w3, r2[o] + r8[o], fma(w2, r3[o] + r7[o], fma(w1, r4[o] + r6[o], w0 * r5[o])))))
    for (int e = 0; e < n; e++) {
        const double ux = RP_VTAP(e), uy = RP_VTAP(STRIP + e);
        const double sq = RP_VTAP(2 * STRIP + e), xy = RP_VTAP(3 * STRIP + e);
        const double uxuy = ux * uy, uu = ux * ux + uy * uy;
        const double A1 = 2 * uxuy + C1, A2 = 2 * (xy - uxuy) + C2;
        const double B1 = uu + C1, B2 = (sq - uu) + C2;
        s[e] = (A1 * A2) / (B1 * B2);
    }
#undef RP_VTAP
}

/* out[c] += the sum of channel c of s (npx interleaved pixels of C channels).
 * 8 pixels' worth of partial sums (vectorisable without reassociation),
 * combined in a fixed tree: deterministic, and more accurate than one chain. */
static void add_channel_sums(const double *s, int npx, int C, double *out) {
    double acc[8 * MAXC] = {0};
    const int L = 8 * C, n = npx * C;
    int e = 0;
    for (; e + L <= n; e += L)
        for (int k = 0; k < L; k++) acc[k] += s[e + k];
    for (int k = 0; e < n; e++, k++) acc[k] += s[e];
    for (int c = 0; c < C; c++) {
        const double *l = acc + c; /* lane m of channel c is l[m * C] */
        out[c] += ((l[0] + l[C]) + (l[2 * C] + l[3 * C])) + ((l[4 * C] + l[5 * C]) + (l[6 * C] + l[7 * C]));
    }
}

/* Horizontal pass of source row (ra, rb) of width W for the strip of pixel
 * columns [p0, p1): pad (NQ, PP) receives the quantities of pixels
 * [p0 - R, p1 + R), those outside the image by scipy's 'reflect'; out
 * (NQ, STRIP) their filtered values for [p0, p1). */
static void hpass(const uint8_t *ra, const uint8_t *rb, int W, int C, int p0, int p1, const double *w,
                  double *pad, size_t PP, double *out) {
    const int q0 = p0 - R, q1 = p1 + R;                     /* the pixels the taps read */
    const int in0 = q0 < 0 ? 0 : q0, in1 = q1 > W ? W : q1; /* the part inside the image */
    quantities(ra + (size_t)in0 * C, rb + (size_t)in0 * C, (in1 - in0) * C, pad + (size_t)(in0 - q0) * C, PP);
    for (int j = q0; j < q1; j++)
        if (j < in0 || j >= in1) {
            const size_t src = (size_t)reflect_index(j, W) * C;
            quantities(ra + src, rb + src, C, pad + (size_t)(j - q0) * C, PP);
        }
    for (int q = 0; q < NQ; q++) hfilter(pad + q * PP + R * C, (p1 - p0) * C, C, w, out + q * STRIP);
}

rp_status rp_ssim_u8(const uint8_t *a, const uint8_t *b, int W, int H, int C, double *mssim, double *map,
                     rp_error *err) {
    assert(W >= 1 && H >= 1 && C >= 1 && C <= MAXC);
    const int full = W >= TAPS && H >= TAPS;
    *mssim = NAN;
    if (!full && !map) return RP_OK; /* nothing to compute: skimage refuses these sizes */

    const size_t rowlen = (size_t)W * C;
    const int SW = STRIP / C;                  /* pixels per strip */
    const size_t PP = STRIP + 2 * R * MAXC;    /* a padded strip row of one quantity */
    const int NR = H < TAPS ? H : TAPS;        /* ring rows: a sliding window of source rows */
    double *buf = malloc(sizeof(double) * (NQ * PP + (size_t)NR * NQ * STRIP + STRIP));
    if (!buf) return RP_FAIL(err, RP_ERR_NOMEM, "ssim: out of memory for the row buffers of a %dx%d image", W, H);
    double *pad = buf;                          /* (NQ, PP) */
    double *ring = pad + NQ * PP;               /* (NR, NQ, STRIP): source row r in slot r % NR */
    double *srow = ring + (size_t)NR * NQ * STRIP; /* (STRIP,) one strip row of the S map */
    double w[R + 1];
    gauss_weights(w);

    /* the rows and pixel columns computed: all for the map, else those that
     * skimage's crop by R keeps (whose windows lie inside the image) */
    const int i0 = map ? 0 : R, i1 = map ? H : H - R;
    const int P0 = map ? 0 : R, P1 = map ? W : W - R;
    double sum[MAXC] = {0};
    /* column strips, each swept top to bottom through a ring of its filtered
     * source rows, small enough to stay in L1 where whole rows would not */
    for (int p0 = P0; p0 < P1; p0 += SW) {
        const int p1 = P1 - p0 < SW ? P1 : p0 + SW, n = (p1 - p0) * C;
        int next = 0; /* next source row to filter into the ring */
        for (int i = i0; i < i1; i++) {
            /* the ring holds source rows [lo, lo + NR): every reflect_index(i + d, H),
             * |d| <= R, lies there (for H >= TAPS: i's window, or the first or last
             * TAPS rows at the borders; for H < TAPS: all rows) */
            int lo = i - R < 0 ? 0 : i - R;
            if (lo > H - NR) lo = H - NR;
            if (next < lo) next = lo;
            for (; next < lo + NR; next++)
                hpass(a + (size_t)next * rowlen, b + (size_t)next * rowlen, W, C, p0, p1, w, pad, PP,
                      ring + (size_t)(next % NR) * NQ * STRIP);
            const double *rows[TAPS];
            for (int d = -R; d <= R; d++) {
                const int r = reflect_index(i + d, H);
                assert(r >= lo && r < lo + NR);
                rows[d + R] = ring + (size_t)(r % NR) * NQ * STRIP;
            }
            vpass_ssim(rows, n, w, srow);
            if (map) memcpy(map + (size_t)i * rowlen + (size_t)p0 * C, srow, sizeof(double) * n);
            if (full && i >= R && i < H - R) {
                const int c0 = p0 < R ? R : p0, c1 = p1 > W - R ? W - R : p1; /* cropped columns */
                if (c1 > c0) add_channel_sums(srow + (size_t)(c0 - p0) * C, c1 - c0, C, sum);
            }
        }
    }
    if (full) {
        /* skimage: each channel's mean over the cropped map, then their mean */
        double total = 0;
        for (int c = 0; c < C; c++) total += sum[c] / ((double)(H - 2 * R) * (double)(W - 2 * R));
        *mssim = total / C;
    }
    free(buf);
    return RP_OK;
}

/* ---- diff heatmap ------------------------------------------------------------ */

void rp_heat_colour(double t, uint8_t rgb[3]) {
    /* matplotlib's inferno sampled at t = 0, 1/8, ..., 1; linear in between */
    static const uint8_t RAMP[9][3] = {{0, 0, 4},      {31, 12, 72},  {85, 15, 109},
                                       {136, 34, 106}, {186, 54, 85}, {227, 89, 51},
                                       {249, 140, 10}, {249, 201, 50}, {252, 255, 164}};
    t = t != t ? 0 : t < 0 ? 0 : t > 1 ? 1 : t;
    const double x = t * 8;
    int i = (int)x;
    if (i > 7) i = 7;
    const double f = x - i;
    for (int c = 0; c < 3; c++) {
        const double v = RAMP[i][c] + f * (RAMP[i + 1][c] - RAMP[i][c]);
        rgb[c] = (uint8_t)(v + 0.5);
    }
}

int rp_diff_heatmap(const uint8_t *a, const uint8_t *b, int W, int H, uint8_t *out) {
    assert(W >= 1 && H >= 1);
    const size_t npx = (size_t)W * H;
    int scale = 0;
    for (size_t p = 0; p < 3 * npx; p++) {
        const int e = abs((int)a[p] - (int)b[p]);
        scale = e > scale ? e : scale;
    }
    uint8_t lut[256][3]; /* colour of each difference level at this scale */
    for (int d = 0; d < 256; d++) rp_heat_colour(scale ? (double)d / scale : 0.0, lut[d]);
    for (size_t p = 0; p < npx; p++) {
        int d = 0;
        for (int c = 0; c < 3; c++) {
            const int e = abs((int)a[3 * p + c] - (int)b[3 * p + c]);
            d = e > d ? e : d;
        }
        memcpy(out + 3 * p, lut[d], 3);
    }
    return scale;
}

rp_status rp_png_pair_metrics(const char *pa, const char *pb, rp_image_metrics *m, rp_error *err) {
    uint8_t *a = NULL, *b = NULL;
    int Wa, Ha, Wb, Hb;
    rp_status st = rp_png_read(pa, &a, &Wa, &Ha, err);
    if (st == RP_OK) st = rp_png_read(pb, &b, &Wb, &Hb, err);
    if (st == RP_OK && (Wa != Wb || Ha != Hb))
        st = RP_FAIL(err, RP_ERR_SHAPE, "%s is %dx%d but %s is %dx%d", pa, Wa, Ha, pb, Wb, Hb);
    if (st == RP_OK) st = rp_image_metrics_compute(a, b, Wa, Ha, m, err);
    free(a);
    free(b);
    return st;
}
