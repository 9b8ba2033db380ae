/* metrics.h — how far apart two results are: latents (float tensors) and
 * 8-bit RGB images.
 *
 * Every metric here is a pure function of its inputs, computed in double in a
 * fixed order, so the same pair gives the same bits on every run and machine
 * (the vectorised kernels are ISA clones that do the same IEEE operations per
 * element, see engine/fastmath.h).
 *
 * Images are (H, W, C) interleaved uint8, C = 3 for RGB. SSIM follows
 * scikit-image 0.19 structural_similarity(gaussian_weights=True, sigma=1.5,
 * use_sample_covariance=False, data_range=255, channel_axis=-1) exactly:
 * scipy's 11-tap Gaussian (truncate 3.5) with mode 'reflect', the S map
 * averaged over the map cropped by 5 pixels on each side, then over channels.
 * tests/reference/test_ssim_skimage.py checks it against Debian's skimage. */
#ifndef REPRO_METRICS_H
#define REPRO_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/error.h"

/* ---- latents ------------------------------------------------------------- */

typedef struct rp_latent_metrics {
    double max_abs;  /* max_i |a_i - b_i|; NaN if any difference is (NaN or opposite infinities) */
    double mean_abs; /* mean_i |a_i - b_i| */
    double rel_l2;   /* ||a - b|| / ||a|| (a is the reference); 0 if both are zero, inf if only a is */
    double cosine;   /* <a, b> / (||a|| ||b||); 1 if both are zero, 0 if exactly one is */
} rp_latent_metrics;

/* Compares a and b (n floats each, n >= 1); differences and sums in double. */
void rp_latent_metrics_compute(const float *a, const float *b, size_t n, rp_latent_metrics *m);

/* Relative L2 of each step of two trajectories a, b (steps, per):
 * out[t] = ||a_t - b_t|| / ||a_t|| with the zero rules of rel_l2 above. */
void rp_trajectory_rel_l2(const float *a, const float *b, size_t steps, size_t per, double *out);

/* ---- images -------------------------------------------------------------- */

/* SSIM needs the 11 x 11 Gaussian window inside the image (skimage refuses
 * smaller images; its cropped map would be empty). */
#define RP_SSIM_MIN_SIDE 11

typedef struct rp_image_metrics {
    double psnr;        /* dB, data range 255; +inf for identical images */
    double ssim;        /* mean SSIM over channels; NaN when W or H < RP_SSIM_MIN_SIDE */
    int max_abs;        /* max |a - b| over pixels and channels, 0..255 */
    double changed;     /* share of pixels where any channel differs */
    double changed_gt8; /* share of pixels where some channel differs by more than 8 levels */
} rp_image_metrics;

/* PSNR of two byte arrays of n >= 1 values: 10 log10(255^2 / MSE), MSE from
 * the exact integer sum of squared differences; +inf when they are equal. */
double rp_psnr_u8(const uint8_t *a, const uint8_t *b, size_t n);

/* Mean SSIM of a, b (H, W, C) into *mssim (NaN when W or H < RP_SSIM_MIN_SIDE).
 * map: NULL, or (H, W, C) doubles that receive the full S map, borders
 * included (scipy 'reflect' extension, any size >= 1). Single-threaded; the
 * only failure is running out of memory for the row buffers. */
rp_status rp_ssim_u8(const uint8_t *a, const uint8_t *b, int W, int H, int C, double *mssim, double *map,
                     rp_error *err);

/* All image metrics of two RGB images (H, W, 3). */
rp_status rp_image_metrics_compute(const uint8_t *a, const uint8_t *b, int W, int H, rp_image_metrics *m,
                                   rp_error *err);

/* All image metrics of the PNG files pa (the reference) and pb, which must have one
 * size (else RP_ERR_SHAPE naming both files and sizes). */
rp_status rp_png_pair_metrics(const char *pa, const char *pb, rp_image_metrics *m, rp_error *err);

/* ---- diff heatmap -------------------------------------------------------- */

/* Colour of t in [0, 1] (clamped) on an inferno-like ramp: black -> purple ->
 * orange -> pale yellow; perceptually ordered, readable in grey print. */
void rp_heat_colour(double t, uint8_t rgb[3]);

/* out (H, W, 3): per pixel d = max over the 3 channels of |a - b|, coloured
 * with rp_heat_colour(d / scale) where scale = the largest d in the image
 * (all black when the images are equal). Returns scale (0..255). */
int rp_diff_heatmap(const uint8_t *a, const uint8_t *b, int W, int H, uint8_t *out);

#endif
