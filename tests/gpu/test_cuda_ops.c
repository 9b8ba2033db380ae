/* test_cuda_ops.c — every CUDA non-GEMM operator (engine/cuda/cuda_ops.h) against the
 * CPU operator it mirrors, in the style of ggml's test-backend-ops: for each op and
 * several shapes (odd sizes not divisible by any block size, rows of length 1, large
 * rows) random inputs from a fixed seed go through the CPU op and the CUDA op, and
 *   NMSE = sum((gpu - cpu)^2) / sum(cpu^2)
 * must not exceed a threshold derived from the op's arithmetic (below). Outputs must hold
 * no NaN / Inf where the CPU's do not; every reduction op must give bitwise identical
 * output on a second run (determinism) and the same bits for a row whatever the number
 * of rows around it (batch invariance). One line per op and shape:
 *   op  shape  nmse  threshold  differing-elements  PASS|FAIL
 * Exit 0 all passed, 1 any failure, 77 (ctest skip) without CUDA or a visible device.
 * The argument-validation checks run first and need no device.
 *
 * ---- thresholds -------------------------------------------------------------------------
 * u = 2^-24 (fp32 unit roundoff), ud = 2^-53 (double). ulp(y) <= 2u|y| for normal y.
 *
 * EXACT (threshold 0, i.e. bitwise): the CUDA op performs the CPU op's correctly
 *   rounded IEEE fp32 (or double) operations in the CPU's order with no FMA
 *   contraction (explicit __fmul_rn / __dadd_rn intrinsics on the device; the CPU is
 *   built with -ffp-contract=off): depth 0, nothing may differ. Covers the layout ops
 *   (pure copies), modulate, gated add, the adds, RoPE, the flow Euler step and CFG,
 *   div_add, scale_f64, the DDIM / DPM-Solver++ / Euler-ancestral / predict_x0 updates
 *   (double per element, coefficients from the same host formulas and libm), and
 *   GELU(tanh) / SiLU (the device rp_cuda_expf is fastmath.h's rp_expf operation for
 *   operation, so the "transcendental" is the same function on both sides: 0 ulp).
 *
 * ROUND1(extra): both sides compute the same real value up to a relative
 *   perturbation `extra` (from double arithmetic done in a different order or with a
 *   different libm), then round once to fp32. |gpu - cpu| <= ulp(y) + extra |y|
 *   <= (2u + extra) |y| per element, so by Minkowski NMSE <= (2u + extra)^2. Used for:
 *   - layernorm / group norm over n terms: mean and variance are double sums, any
 *     order errs by <= (n + 4) ud relative to sum |x|; for inputs x = off + s N(0,1)
 *     with |off| <= 3 s, max|x - mean| / std <= kappa = 10, so the normalised value
 *     moves by <= (kappa + 1)(n + 4) ud per side: extra = 2 * 11 (n + 4) ud;
 *   - RMSNorm: sum of squares, then sqrt and divide: extra = 2 (n + 4) ud;
 *   - softmax: the exps are bitwise equal (same rp_expf), the double sum and the
 *     reciprocal err by <= (n + 2) ud per side: extra = 2 (n + 2) ud;
 *   - GELU(erf): device erfc (<= 5 ulp double, CUDA docs) vs glibc (< 1 ulp): extra = 16 ud;
 *   - DDPM with noise: device exp (<= 1 ulp double) vs glibc: extra = 8 ud;
 *   - timestep embedding: the frequencies are libm's expf on the host (bitwise the
 *     CPU's) and t f the same fp32 product, so only cos / sin differ: glibc's cosf / sinf
 *     are within 0.56 ulp, the device's (float)cos(double) within 0.5 ulp + 2^-29:
 *     |diff| <= 1.06 ulp <= 2.2u|y|: threshold (3u)^2 (ROUND1 with extra = u, rounded up).
 *     Beyond 1000 frequencies (dim > 2001) the device computes them itself:
 *     (float)exp(double) is within one ulp of glibc's expf, so a = t f moves by <= 4u|a|
 *     and cos / sin by as much: sqrt(NMSE) <= 3u + 4u max|a| / rms(y), rms(y) = 1/sqrt 2.
 *
 * GEMM (conv2d): a K-term fp32 dot product in any order (with or without FMA) errs by
 *   <= gamma_K S_i, S_i = sum_k |w_k col_k| + |b| (Higham, deterministic); the
 *   probabilistic bound (Higham & Mary 2019) replaces gamma_K by lambda sqrt(K) u,
 *   failing with probability <= 2 exp(-lambda^2 / 2) per element: lambda = 4.
 *   Both sides err independently: |gpu - cpu| <= 8 sqrt(K + 1) u S_i, so
 *   threshold = sum_i (8 sqrt(K + 1) u S_i)^2 / sum_i cpu_i^2, S computed by the CPU
 *   conv of |in|, |w|, |b| (all terms positive: its own error is < 1%). For random
 *   data the fp32 error is ~sqrt(K) u rms while the bound grows like K u, so the margin
 *   is wide; a TF32 GEMM (10-bit mantissa, NMSE ~1e-7) still exceeds it up to K ~ 600,
 *   so the small shapes also catch reduced precision sneaking in. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef REPRO_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "engine/ctx.h"
#include "engine/cuda/cuda_info.h"
#include "engine/cuda/cuda_ops.h"
#include "engine/error.h"
#include "engine/models/flux.h"
#include "engine/ops.h"
#include "engine/rng.h"
#include "engine/samplers/flow.h"
#include "engine/samplers/samplers.h"

static const double U = 0x1p-24;
static const double UD = 0x1p-53;
#define THR_EXACT 0.0

static int g_fail = 0;
static cudaStream_t g_stream;
static uint64_t g_seed_index = 0; /* each fill draws a fresh rp_randn stream */

static double round1(double extra) { return (2.0 * U + extra) * (2.0 * U + extra); }
static double thr_meanvar(size_t n) { return round1(2.0 * 11.0 * ((double)n + 4.0) * UD); }
static double thr_rms(size_t n) { return round1(2.0 * ((double)n + 4.0) * UD); }
static double thr_softmax(size_t n) { return round1(2.0 * ((double)n + 2.0) * UD); }

/* ---- host / device buffers ---------------------------------------------------------------- */

static void die_cuda(const char *what, cudaError_t e) {
    printf("FAIL: %s: %s\n", what, cudaGetErrorString(e));
    exit(1);
}
#define CK(call)                                          \
    do {                                                  \
        cudaError_t ck_e_ = (call);                       \
        if (ck_e_ != cudaSuccess) die_cuda(#call, ck_e_); \
    } while (0)

static float *hnew(size_t n) {
    float *p = calloc(n ? n : 1, sizeof(float));
    if (!p) {
        printf("FAIL: out of host memory (%zu floats)\n", n);
        exit(1);
    }
    return p;
}

static float *dnew(size_t n) {
    void *p = NULL;
    CK(cudaMalloc(&p, (n ? n : 1) * sizeof(float)));
    CK(cudaMemset(p, 0xff, (n ? n : 1) * sizeof(float))); /* NaN garbage: unwritten outputs show */
    return (float *)p;
}

static void up(float *d, const float *h, size_t n) { CK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice)); }

static void down(float *h, const float *d, size_t n) {
    CK(cudaStreamSynchronize(g_stream));
    CK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
}

static float *dup_up(const float *h, size_t n) {
    float *d = dnew(n);
    up(d, h, n);
    return d;
}

/* h (n) = off + scale * N(0, 1), a fresh deterministic stream per call */
static void fill(float *h, size_t n, float scale, float off) {
    rp_randn(h, n, 20240611u, g_seed_index++, 7);
    for (size_t i = 0; i < n; i++) h[i] = off + scale * h[i];
}

/* Runs an op call; on failure prints its message and returns from the caller. */
#define OP(call)                                                                               \
    do {                                                                                       \
        rp_error op_e_;                                                                        \
        rp_error_clear(&op_e_);                                                                \
        rp_status op_s_ = (call);                                                              \
        if (op_s_ != RP_OK) {                                                                  \
            printf("FAIL: %s returned %s: %s\n", #call, rp_status_name(op_s_), op_e_.msg);     \
            g_fail = 1;                                                                        \
            return;                                                                            \
        }                                                                                      \
    } while (0)
#define E (&op_e_)

/* ---- comparison ------------------------------------------------------------------------------ */

static int same_class(float a, float b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return 1;
}

/* Compares gpu against cpu (n), prints the line, records a failure. Non-finite values
 * must sit where the CPU has the same kind (NaN, +Inf, -Inf); they are left out of the
 * NMSE. Returns 1 on PASS. */
static int check(const char *op, const char *shape, const float *cpu, const float *gpu, size_t n, double thr) {
    double num = 0.0, den = 0.0;
    size_t ndiff = 0, bad_class = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&cpu[i], &gpu[i], sizeof(float)) != 0) ndiff++;
        if (!isfinite(cpu[i]) || !isfinite(gpu[i])) {
            if (!same_class(cpu[i], gpu[i])) bad_class++;
            continue;
        }
        const double d = (double)gpu[i] - (double)cpu[i];
        num += d * d;
        den += (double)cpu[i] * cpu[i];
    }
    double nmse = den > 0.0 ? num / den : (num == 0.0 ? 0.0 : INFINITY);
    int pass = bad_class == 0 && nmse <= thr;
    printf("%-24s %-40s nmse %.3e  thr %.3e  diff %zu/%zu%s  %s\n", op, shape, nmse, thr, ndiff, n,
           bad_class ? "  (NaN/Inf where the CPU has none)" : "", pass ? "PASS" : "FAIL");
    if (!pass) g_fail = 1;
    return pass;
}

/* Bitwise equality of two GPU results: determinism (two runs) or batch invariance. */
static void check_bits(const char *what, const char *op, const char *shape, const float *a, const float *b, size_t n) {
    size_t nd = 0;
    for (size_t i = 0; i < n; i++) nd += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    printf("%-24s %-40s %s: %zu/%zu elements differ  %s\n", op, shape, what, nd, n, nd ? "FAIL" : "PASS");
    if (nd) g_fail = 1;
}

/* ---- activations ------------------------------------------------------------------------------ */

typedef void (*cpu_act_fn)(float *, const float *, size_t);
typedef rp_status (*gpu_act_fn)(float *, const float *, size_t, cudaStream_t, rp_error *);

static void test_act(const char *name, cpu_act_fn cf, gpu_act_fn gf, double thr) {
    static const size_t sizes[] = {1, 3, 257, 1000, (1u << 20) + 7};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        const size_t n = sizes[si];
        float *h = hnew(n), *c = hnew(n), *g = hnew(n);
        fill(h, n, 4.0f, 0.0f);
        float *dx = dup_up(h, n), *dy = dnew(n);
        cf(c, h, n);
        OP(gf(dy, dx, n, g_stream, E));
        down(g, dy, n);
        char shape[64];
        snprintf(shape, sizeof shape, "n=%zu", n);
        check(name, shape, c, g, n, thr);
        /* in place, as the models call it */
        OP(gf(dx, dx, n, g_stream, E));
        down(g, dx, n);
        snprintf(shape, sizeof shape, "n=%zu in-place", n);
        check(name, shape, c, g, n, thr);
        cudaFree(dx);
        cudaFree(dy);
        free(h);
        free(c);
        free(g);
    }
    /* edge values: signed zeros, tiny, exp's cut-offs, huge (x^3 overflows), Inf, NaN */
    static const float sp[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-3f, -1e-3f, 5.0f, -5.0f, 9.0f, -9.0f,
                               43.6f, -43.6f, 87.0f, -87.0f, 87.4f, -87.4f, 88.8f, -88.8f, 100.0f,
                               -100.0f, 1e20f, -1e20f, 3.4e38f, -3.4e38f, INFINITY, -INFINITY, NAN};
    const size_t n = sizeof sp / sizeof *sp;
    float c[sizeof sp / sizeof *sp], g[sizeof sp / sizeof *sp];
    float *dx = dup_up(sp, n), *dy = dnew(n);
    cf(c, sp, n);
    OP(gf(dy, dx, n, g_stream, E));
    down(g, dy, n);
    check(name, "edge values (0, tiny, huge, Inf, NaN)", c, g, n, thr);
    cudaFree(dx);
    cudaFree(dy);
}

static void test_act2d(void) {
    /* FLUX single block: GELU on columns [C, C + M) of (rows, C + M) cat rows, in place */
    static const struct { int rows, C, M; } sh[] = {{1, 1, 1}, {7, 64, 256}, {33, 96, 385}};
    for (size_t si = 0; si < sizeof sh / sizeof *sh; si++) {
        const int rows = sh[si].rows, ld = sh[si].C + sh[si].M, C = sh[si].C, M = sh[si].M;
        const size_t n = (size_t)rows * ld;
        float *h = hnew(n), *c = hnew(n), *g = hnew(n);
        fill(h, n, 3.0f, 0.0f);
        memcpy(c, h, n * sizeof(float));
        for (int r = 0; r < rows; r++) rp_gelu_tanh(c + (size_t)r * ld + C, c + (size_t)r * ld + C, (size_t)M);
        float *d = dup_up(h, n);
        OP(rp_cuda_activation_2d(RP_CUDA_ACT_GELU_TANH, d + C, ld, d + C, ld, rows, M, g_stream, E));
        down(g, d, n);
        char shape[64];
        snprintf(shape, sizeof shape, "rows=%d cols=%d ld=%d", rows, M, ld);
        check("activation_2d gelu_tanh", shape, c, g, n, THR_EXACT);
        /* silu and erf through the strided path, out of place */
        float *o = dnew(n);
        CK(cudaMemset(o, 0, n * sizeof(float)));
        memset(c, 0, n * sizeof(float));
        for (int r = 0; r < rows; r++) rp_silu(c + (size_t)r * ld, h + (size_t)r * ld + C, (size_t)M);
        up(d, h, n);
        OP(rp_cuda_activation_2d(RP_CUDA_ACT_SILU, o, ld, d + C, ld, rows, M, g_stream, E));
        down(g, o, n);
        check("activation_2d silu", shape, c, g, n, THR_EXACT);
        for (int r = 0; r < rows; r++) rp_gelu_erf(c + (size_t)r * ld, h + (size_t)r * ld + C, (size_t)M);
        OP(rp_cuda_activation_2d(RP_CUDA_ACT_GELU_ERF, o, ld, d + C, ld, rows, M, g_stream, E));
        down(g, o, n);
        check("activation_2d gelu_erf", shape, c, g, n, round1(16.0 * UD));
        cudaFree(o);
        cudaFree(d);
        free(h);
        free(c);
        free(g);
    }
    /* launch_grid.h's strides on the device: one row longer than the old grid's 65535 * 256
     * columns (device.c's act_flat sends FLUX-dev's MLP as such rows), and more rows than
     * grid.y's 65535 */
    static const struct { int rows, cols; } big[] = {{1, 65535 * 256 + 300}, {65535 + 77, 33}};
    for (size_t si = 0; si < sizeof big / sizeof *big; si++) {
        const int rows = big[si].rows, cols = big[si].cols;
        const size_t n = (size_t)rows * cols;
        float *h = hnew(n), *c = hnew(n), *g = hnew(n);
        fill(h, n, 3.0f, 0.0f);
        rp_silu(c, h, n);
        float *d = dup_up(h, n), *o = dnew(n);
        OP(rp_cuda_activation_2d(RP_CUDA_ACT_SILU, o, cols, d, cols, rows, cols, g_stream, E));
        down(g, o, n);
        char shape[64];
        snprintf(shape, sizeof shape, "rows=%d cols=%d", rows, cols);
        check("activation_2d silu past the old grid limits", shape, c, g, n, THR_EXACT);
        cudaFree(o);
        cudaFree(d);
        free(h);
        free(c);
        free(g);
    }
}

/* ---- DiT elementwise -------------------------------------------------------------------------- */

static void test_modulate_gated(void) {
    /* mod rows of stride ms hold chunks; the ops read chunk offsets as the models do */
    static const struct { int B, T, C, ms, off_a, off_b; } sh[] = {
        {1, 1, 1, 1, 0, 0}, {2, 5, 3, 18, 0, 3}, {3, 33, 257, 6 * 257, 3 * 257, 4 * 257}, {2, 256, 1152, 6 * 1152, 0, 1152}};
    for (size_t si = 0; si < sizeof sh / sizeof *sh; si++) {
        const int B = sh[si].B, T = sh[si].T, C = sh[si].C, ms = sh[si].ms;
        const size_t n = (size_t)B * T * C, nm = (size_t)B * ms;
        float *x = hnew(n), *y = hnew(n), *mod = hnew(nm), *c = hnew(n), *g = hnew(n);
        fill(x, n, 1.0f, 0.0f);
        fill(y, n, 1.0f, 0.0f);
        fill(mod, nm, 0.3f, 0.0f);
        float *dx = dup_up(x, n), *dy = dup_up(y, n), *dm = dup_up(mod, nm);
        char shape[80];
        snprintf(shape, sizeof shape, "B=%d T=%d C=%d stride=%d", B, T, C, ms);

        memcpy(c, x, n * sizeof(float));
        rp_modulate(c, mod + sh[si].off_a, mod + sh[si].off_b, ms, B, T, C);
        OP(rp_cuda_modulate(dx, dm + sh[si].off_a, dm + sh[si].off_b, ms, B, T, C, g_stream, E));
        down(g, dx, n);
        check("modulate", shape, c, g, n, THR_EXACT);

        up(dx, x, n);
        memcpy(c, x, n * sizeof(float));
        rp_gated_add(c, mod + sh[si].off_b, ms, y, B, T, C);
        OP(rp_cuda_gated_add(dx, dm + sh[si].off_b, ms, dy, B, T, C, g_stream, E));
        down(g, dx, n);
        check("gated_add", shape, c, g, n, THR_EXACT);
        cudaFree(dx);
        cudaFree(dy);
        cudaFree(dm);
        free(x);
        free(y);
        free(mod);
        free(c);
        free(g);
    }
}

static void test_adds(void) {
    static const size_t sizes[] = {1, 31, 100003};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        const size_t n = sizes[si];
        const int B = 3;
        float *y = hnew(B * n), *x = hnew(n), *c = hnew(B * n), *g = hnew(B * n);
        fill(y, B * n, 1.0f, 0.5f);
        fill(x, n, 2.0f, 0.0f);
        float *dy = dup_up(y, B * n), *dx = dup_up(x, n);
        char shape[64];
        snprintf(shape, sizeof shape, "n=%zu", n);
        memcpy(c, y, n * sizeof(float));
        rp_add(c, x, n);
        OP(rp_cuda_add(dy, dx, n, g_stream, E));
        down(g, dy, n);
        check("add", shape, c, g, n, THR_EXACT);

        up(dy, y, B * n);
        memcpy(c, y, B * n * sizeof(float));
        for (int b = 0; b < B; b++) rp_add(c + (size_t)b * n, x, n); /* DiT's pos_embed loop */
        OP(rp_cuda_add_bcast(dy, dx, B, n, g_stream, E));
        down(g, dy, B * n);
        snprintf(shape, sizeof shape, "B=%d n=%zu", B, n);
        check("add_bcast", shape, c, g, B * n, THR_EXACT);

        /* VAE latent unscale: z / scaling_factor + shift_factor, fp32 (vae.c) */
        static const float sf[][2] = {{0.18215f, 0.0f}, {1.5305f, 0.0609f}, {0.3611f, 0.1159f}};
        for (int k = 0; k < 3; k++) {
            for (size_t i = 0; i < n; i++) c[i] = x[i] / sf[k][0] + sf[k][1];
            OP(rp_cuda_div_add(dy, dx, sf[k][0], sf[k][1], n, g_stream, E));
            down(g, dy, n);
            snprintf(shape, sizeof shape, "n=%zu sf=%g shift=%g", n, sf[k][0], sf[k][1]);
            check("div_add", shape, c, g, n, THR_EXACT);
        }
        /* Euler ancestral's scalings (float)((double)x * c) */
        const double cs[] = {1.0 / sqrt(157.4 * 157.4 + 1.0), sqrt(1.0 + 14.6 * 14.6), 1.0};
        for (int k = 0; k < 3; k++) {
            for (size_t i = 0; i < n; i++) c[i] = (float)((double)x[i] * cs[k]);
            OP(rp_cuda_scale_f64(dy, dx, cs[k], n, g_stream, E));
            down(g, dy, n);
            snprintf(shape, sizeof shape, "n=%zu c=%.6g", n, cs[k]);
            check("scale_f64", shape, c, g, n, THR_EXACT);
        }
        cudaFree(dy);
        cudaFree(dx);
        free(y);
        free(x);
        free(c);
        free(g);
    }
}

/* a linear's bias preload (rp_linear_ld's memcpy per row): pure copies, bitwise */
static void test_fill_rows(void) {
    static const struct { int rows, cols, ldo; } sh[] = {{1, 1, 1}, {7, 33, 40}, {4097, 1152, 1152}, {3, 300, 1000}};
    for (size_t si = 0; si < sizeof sh / sizeof *sh; si++) {
        const int R = sh[si].rows, N = sh[si].cols, L = sh[si].ldo;
        const size_t n = (size_t)R * L;
        float *bias = hnew((size_t)N), *c = hnew(n), *g = hnew(n);
        fill(bias, (size_t)N, 1.0f, 0.25f);
        fill(c, n, 3.0f, 0.0f); /* the columns past N must keep their values */
        float *dout = dup_up(c, n), *db = dup_up(bias, (size_t)N);
        for (int r = 0; r < R; r++) memcpy(c + (size_t)r * L, bias, sizeof(float) * (size_t)N);
        OP(rp_cuda_fill_rows(dout, L, db, R, N, g_stream, E));
        down(g, dout, n);
        char shape[64];
        snprintf(shape, sizeof shape, "rows=%d cols=%d ldo=%d", R, N, L);
        check("fill_rows", shape, c, g, n, THR_EXACT);
        cudaFree(dout);
        cudaFree(db);
        free(bias);
        free(c);
        free(g);
    }
}

/* ---- RoPE ------------------------------------------------------------------------------------- */

static void test_rope(void) {
    static const struct { int B, NH, T, D; } sh[] = {{1, 1, 1, 2}, {2, 2, 33, 32}, {1, 24, 80, 128}, {2, 3, 7, 514}};
    for (size_t si = 0; si < sizeof sh / sizeof *sh; si++) {
        const int B = sh[si].B, NH = sh[si].NH, T = sh[si].T, D = sh[si].D;
        const size_t n = (size_t)B * NH * T * D, nt = (size_t)T * D;
        float *x = hnew(n), *cb = hnew(nt), *sb = hnew(nt), *g = hnew(n);
        fill(x, n, 1.0f, 0.0f);
        /* real angle tables: pos * theta^(-2j/D), cos/sin in double rounded once, each
         * repeated for its pair (flux.c build_rope's format) */
        for (int t = 0; t < T; t++)
            for (int j = 0; j < D / 2; j++) {
                const double ang = (double)(t % 37) * pow(10000.0, -(double)(2 * j) / D);
                cb[(size_t)t * D + 2 * j] = cb[(size_t)t * D + 2 * j + 1] = (float)cos(ang);
                sb[(size_t)t * D + 2 * j] = sb[(size_t)t * D + 2 * j + 1] = (float)sin(ang);
            }
        float *dx = dup_up(x, n), *dc = dup_up(cb, nt), *ds = dup_up(sb, nt);
        rp_rope_pairs(x, cb, sb, B, NH, T, D);
        OP(rp_cuda_rope(dx, dc, ds, B, NH, T, D, g_stream, E));
        down(g, dx, n);
        char shape[64];
        snprintf(shape, sizeof shape, "B=%d NH=%d T=%d D=%d", B, NH, T, D);
        check("rope", shape, x, g, n, THR_EXACT);
        cudaFree(dx);
        cudaFree(dc);
        cudaFree(ds);
        free(x);
        free(cb);
        free(sb);
        free(g);
    }
}

/* ---- samplers --------------------------------------------------------------------------------- */

static void test_samplers(void) {
    const size_t n = 4 * 32 * 32 + 3; /* a DiT latent plus an odd tail */
    float *x = hnew(n), *eps = hnew(n), *noise = hnew(n), *var = hnew(n), *x0l = hnew(n), *c = hnew(n),
          *g = hnew(n), *c2 = hnew(n);
    fill(x, n, 1.0f, 0.0f);
    fill(eps, n, 1.0f, 0.0f);
    fill(noise, n, 1.0f, 0.0f);
    fill(var, n, 1.0f, 0.0f);
    for (size_t i = 0; i < n; i++) var[i] = tanhf(var[i]); /* the learned range in [-1, 1] */
    fill(x0l, n, 1.0f, 0.0f);
    float *dx = dup_up(x, n), *de = dup_up(eps, n), *dn = dup_up(noise, n), *dv = dup_up(var, n),
          *dxl = dup_up(x0l, n), *do_ = dnew(n), *dx0 = dnew(n);
    rp_schedule s;
    rp_error e;
    if (rp_schedule_dit(&s, 50, &e) != RP_OK) {
        printf("FAIL: rp_schedule_dit: %s\n", e.msg);
        g_fail = 1;
        return;
    }
    char shape[96];
    static const int steps[] = {49, 25, 1, 0};
    for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
        const int i = steps[k];
        const double abar = s.alphas_cumprod[i], abar_prev = rp_schedule_abar_prev(&s, i);

        rp_predict_x0(c, x, eps, abar, n);
        OP(rp_cuda_predict_x0(do_, dx, de, abar, n, g_stream, E));
        down(g, do_, n);
        snprintf(shape, sizeof shape, "n=%zu i=%d", n, i);
        check("predict_x0", shape, c, g, n, THR_EXACT);

        for (int eta = 0; eta <= 1; eta++) {
            const double sigma = rp_ddim_sigma(abar, abar_prev, eta);
            rp_ddim_step(c, x, eps, abar, abar_prev, eta, sigma > 0.0 ? noise : NULL, n);
            OP(rp_cuda_ddim_step(do_, dx, de, abar, abar_prev, eta, sigma > 0.0 ? dn : NULL, n, g_stream, E));
            down(g, do_, n);
            snprintf(shape, sizeof shape, "n=%zu i=%d eta=%d", n, i, eta);
            check("ddim_step", shape, c, g, n, THR_EXACT);
        }

        for (int with_var = 0; with_var <= 1; with_var++) {
            rp_ddpm_step(c, x, eps, with_var ? var : NULL, &s, i, i > 0 ? noise : NULL, n);
            OP(rp_cuda_ddpm_step(do_, dx, de, with_var ? dv : NULL, abar, abar_prev, s.betas[i],
                                 i > 0 ? rp_schedule_posterior_logvar_clipped(&s, i) : 0.0, i > 0,
                                 i > 0 ? dn : NULL, n, g_stream, E));
            down(g, do_, n);
            snprintf(shape, sizeof shape, "n=%zu i=%d var=%d", n, i, with_var);
            check("ddpm_step", shape, c, g, n, round1(8.0 * UD));
        }

        /* DPM-Solver++(2M): first order, second order (x0_last from step i + 1), and
         * the final step (abar_next = 1 copies x0) */
        rp_predict_x0(c2, x, eps, abar, n); /* x0, as the loop computes it */
        up(dx0, c2, n);
        for (int order = 1; order <= 2; order++) {
            if (order == 2 && i == 49) continue; /* no step before the first */
            const double abar_last = order == 2 ? s.alphas_cumprod[i + 1] : 0.0;
            rp_dpmpp_2m_step(c, x, c2, order == 2 ? x0l : NULL, abar_last, abar, abar_prev, n);
            OP(rp_cuda_dpmpp_2m_step(do_, dx, dx0, order == 2 ? dxl : NULL, abar_last, abar, abar_prev, n, g_stream,
                                     E));
            down(g, do_, n);
            snprintf(shape, sizeof shape, "n=%zu i=%d order=%d", n, i, order);
            check("dpmpp_2m_step", shape, c, g, n, THR_EXACT);
        }

        /* Euler ancestral on the VE state */
        const double sig = rp_schedule_sigma(&s, i), sig_next = i > 0 ? rp_schedule_sigma(&s, i - 1) : 0.0;
        for (int eta = 0; eta <= 1; eta++) {
            double down_, up_;
            rp_ancestral_sigmas(sig, sig_next, eta, &down_, &up_);
            const int add = sig_next > 0.0 && up_ > 0.0;
            rp_euler_a_step(c, x, eps, sig, sig_next, eta, add ? noise : NULL, n);
            OP(rp_cuda_euler_a_step(do_, dx, de, sig, sig_next, eta, add ? dn : NULL, n, g_stream, E));
            down(g, do_, n);
            snprintf(shape, sizeof shape, "n=%zu i=%d eta=%d", n, i, eta);
            check("euler_a_step", shape, c, g, n, THR_EXACT);
        }
    }
    rp_schedule_free(&s);

    /* flow matching: the SD3 schedule's float32 sigmas, Euler step and CFG */
    rp_flow_schedule fs;
    if (rp_flow_schedule_sd3(&fs, 28, 3.0, &e) != RP_OK) {
        printf("FAIL: rp_flow_schedule_sd3: %s\n", e.msg);
        g_fail = 1;
        return;
    }
    static const int fsteps[] = {0, 13, 27};
    for (size_t k = 0; k < sizeof fsteps / sizeof *fsteps; k++) {
        const int i = fsteps[k];
        rp_flow_euler_step(c, x, eps, fs.sigmas[i], fs.sigmas[i + 1], n);
        OP(rp_cuda_flow_euler_step(do_, dx, de, fs.sigmas[i], fs.sigmas[i + 1], n, g_stream, E));
        down(g, do_, n);
        snprintf(shape, sizeof shape, "n=%zu i=%d", n, i);
        check("flow_euler_step", shape, c, g, n, THR_EXACT);
    }
    rp_flow_schedule_free(&fs);
    static const double scales[] = {1.0, 3.5, 7.0};
    for (size_t k = 0; k < 3; k++) {
        rp_flow_cfg(c, x, eps, scales[k], n);
        OP(rp_cuda_flow_cfg(do_, dx, de, scales[k], n, g_stream, E));
        down(g, do_, n);
        snprintf(shape, sizeof shape, "n=%zu scale=%g", n, scales[k]);
        check("flow_cfg", shape, c, g, n, THR_EXACT);
    }
    cudaFree(dx);
    cudaFree(de);
    cudaFree(dn);
    cudaFree(dv);
    cudaFree(dxl);
    cudaFree(do_);
    cudaFree(dx0);
    free(x);
    free(eps);
    free(noise);
    free(var);
    free(x0l);
    free(c);
    free(g);
    free(c2);
}

/* ---- normalisation ------------------------------------------------------------------------------ */

/* affine: 0 none, 1 w and b, 2 w only, 3 b only */
static void test_layernorm_one(int N, int C, int affine, float eps, float scale, float off) {
    const size_t n = (size_t)N * C;
    float *x = hnew(n), *w = hnew(C), *b = hnew(C), *c = hnew(n), *g = hnew(n), *g2 = hnew(n);
    fill(x, n, scale, off);
    fill(w, C, 0.1f, 1.0f);
    fill(b, C, 0.1f, 0.0f);
    const int hw = affine == 1 || affine == 2, hb = affine == 1 || affine == 3;
    float *dx = dup_up(x, n), *dw = dup_up(w, C), *db = dup_up(b, C), *dy = dnew(n), *dy2 = dnew(n);
    rp_layernorm(c, x, hw ? w : NULL, hb ? b : NULL, N, C, eps);
    OP(rp_cuda_layernorm(dy, dx, hw ? dw : NULL, hb ? db : NULL, N, C, eps, g_stream, E));
    down(g, dy, n);
    char shape[96];
    static const char *aff[] = {"none", "w+b", "w", "b"};
    snprintf(shape, sizeof shape, "N=%d C=%d affine=%s eps=%g", N, C, aff[affine], eps);
    check("layernorm", shape, c, g, n, thr_meanvar((size_t)C));
    OP(rp_cuda_layernorm(dy2, dx, hw ? dw : NULL, hb ? db : NULL, N, C, eps, g_stream, E));
    down(g2, dy2, n);
    check_bits("determinism", "layernorm", shape, g, g2, n);
    /* the last row alone: the same bits as inside the batch */
    OP(rp_cuda_layernorm(dy2, dx + (size_t)(N - 1) * C, hw ? dw : NULL, hb ? db : NULL, 1, C, eps, g_stream, E));
    down(g2, dy2, C);
    check_bits("batch invariance", "layernorm", shape, g + (size_t)(N - 1) * C, g2, C);
    /* in place (out == x), as the CPU allows */
    OP(rp_cuda_layernorm(dx, dx, hw ? dw : NULL, hb ? db : NULL, N, C, eps, g_stream, E));
    down(g2, dx, n);
    check_bits("in place == out of place", "layernorm", shape, g, g2, n);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(db);
    cudaFree(dy);
    cudaFree(dy2);
    free(x);
    free(w);
    free(b);
    free(c);
    free(g);
    free(g2);
}

static void test_layernorm(void) {
    test_layernorm_one(1, 1, 0, 1e-6f, 1.0f, 0.0f);
    test_layernorm_one(5, 1, 1, 1e-6f, 1.0f, 0.0f);
    test_layernorm_one(7, 3, 0, 1e-6f, 1.0f, 2.0f);
    test_layernorm_one(33, 31, 1, 1e-5f, 2.0f, -1.0f);
    test_layernorm_one(64, 1152, 0, 1e-6f, 1.0f, 0.5f);  /* DiT-XL rows */
    test_layernorm_one(9, 3072, 1, 1e-6f, 3.0f, 1.0f);   /* FLUX rows */
    test_layernorm_one(3, 4097, 2, 1e-5f, 1.0f, 3.0f);
    test_layernorm_one(4, 257, 3, 0.5f, 1.0f, 0.0f);     /* eps large enough to show its placement */
    test_layernorm_one(2, 65537, 1, 1e-6f, 1.0f, 0.0f);  /* large rows */
    test_layernorm_one(1, 1 << 20, 0, 1e-6f, 1.0f, 0.1f);
}

static void test_rmsnorm_one(int N, int C, int with_w, float eps, float scale) {
    const size_t n = (size_t)N * C;
    float *x = hnew(n), *w = hnew(C), *c = hnew(n), *g = hnew(n), *g2 = hnew(n);
    fill(x, n, scale, 0.0f);
    fill(w, C, 0.1f, 1.0f);
    float *dx = dup_up(x, n), *dw = dup_up(w, C), *dy = dnew(n), *dy2 = dnew(n);
    rp_rmsnorm(c, x, with_w ? w : NULL, N, C, eps);
    OP(rp_cuda_rmsnorm(dy, dx, with_w ? dw : NULL, N, C, eps, g_stream, E));
    down(g, dy, n);
    char shape[96];
    snprintf(shape, sizeof shape, "N=%d C=%d w=%d eps=%g", N, C, with_w, eps);
    check("rmsnorm", shape, c, g, n, thr_rms((size_t)C));
    OP(rp_cuda_rmsnorm(dy2, dx, with_w ? dw : NULL, N, C, eps, g_stream, E));
    down(g2, dy2, n);
    check_bits("determinism", "rmsnorm", shape, g, g2, n);
    OP(rp_cuda_rmsnorm(dy2, dx + (size_t)(N - 1) * C, with_w ? dw : NULL, 1, C, eps, g_stream, E));
    down(g2, dy2, C);
    check_bits("batch invariance", "rmsnorm", shape, g + (size_t)(N - 1) * C, g2, C);
    OP(rp_cuda_rmsnorm(dx, dx, with_w ? dw : NULL, N, C, eps, g_stream, E));
    down(g2, dx, n);
    check_bits("in place == out of place", "rmsnorm", shape, g, g2, n);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    cudaFree(dy2);
    free(x);
    free(w);
    free(c);
    free(g);
    free(g2);
}

static void test_rmsnorm(void) {
    test_rmsnorm_one(7, 1, 1, 1e-6f, 1.0f);
    test_rmsnorm_one(4096, 64, 1, 1e-6f, 1.0f);  /* per-head rows */
    test_rmsnorm_one(100, 128, 0, 1e-6f, 3.0f);
    test_rmsnorm_one(3, 257, 1, 0.25f, 1.0f);    /* eps visible */
    test_rmsnorm_one(5, 3000, 1, 1e-6f, 0.5f);
    test_rmsnorm_one(2, 100001, 0, 1e-6f, 1.0f); /* large rows */
}

static void test_groupnorm_one(int N, int C, int HW, int G, int affine, float eps, float scale, float off) {
    const size_t n = (size_t)N * C * HW;
    float *x = hnew(n), *w = hnew(C), *b = hnew(C), *c = hnew(n), *g = hnew(n), *g2 = hnew(n);
    fill(x, n, scale, off);
    fill(w, C, 0.1f, 1.0f);
    fill(b, C, 0.1f, 0.0f);
    float *dx = dup_up(x, n), *dw = dup_up(w, C), *db = dup_up(b, C), *dy = dnew(n), *dy2 = dnew(n);
    rp_groupnorm(c, x, affine ? w : NULL, affine ? b : NULL, N, C, HW, G, eps);
    OP(rp_cuda_groupnorm(dy, dx, affine ? dw : NULL, affine ? db : NULL, N, C, HW, G, eps, g_stream, E));
    down(g, dy, n);
    char shape[96];
    snprintf(shape, sizeof shape, "N=%d C=%d HW=%d G=%d affine=%d eps=%g", N, C, HW, G, affine, eps);
    check("groupnorm", shape, c, g, n, thr_meanvar((size_t)(C / G) * HW));
    OP(rp_cuda_groupnorm(dy2, dx, affine ? dw : NULL, affine ? db : NULL, N, C, HW, G, eps, g_stream, E));
    down(g2, dy2, n);
    check_bits("determinism", "groupnorm", shape, g, g2, n);
    const size_t img = (size_t)C * HW;
    OP(rp_cuda_groupnorm(dy2, dx + (N - 1) * img, affine ? dw : NULL, affine ? db : NULL, 1, C, HW, G, eps, g_stream,
                         E));
    down(g2, dy2, img);
    check_bits("batch invariance", "groupnorm", shape, g + (N - 1) * img, g2, img);
    OP(rp_cuda_groupnorm(dx, dx, affine ? dw : NULL, affine ? db : NULL, N, C, HW, G, eps, g_stream, E));
    down(g2, dx, n);
    check_bits("in place == out of place", "groupnorm", shape, g, g2, n);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(db);
    cudaFree(dy);
    cudaFree(dy2);
    free(x);
    free(w);
    free(b);
    free(c);
    free(g);
    free(g2);
}

static void test_groupnorm(void) {
    test_groupnorm_one(2, 6, 1, 3, 1, 1e-6f, 1.0f, 0.0f);           /* HW = 1 */
    test_groupnorm_one(1, 32, 64, 32, 1, 1e-6f, 1.0f, 1.0f);        /* one channel per group */
    test_groupnorm_one(2, 64, 17 * 13, 8, 0, 1e-6f, 2.0f, -1.0f);
    test_groupnorm_one(1, 96, 33 * 31, 32, 1, 0.3f, 1.0f, 0.0f);    /* eps visible */
    test_groupnorm_one(2, 512, 16 * 16, 32, 1, 1e-6f, 1.0f, 0.5f);  /* VAE mid block */
    test_groupnorm_one(1, 128, 128 * 128, 32, 1, 1e-6f, 1.0f, 0.0f); /* 65536-element groups */
}

static void test_softmax_one(int rows, int cols, float scale, int masked) {
    const size_t n = (size_t)rows * cols;
    float *x = hnew(n), *c = hnew(n), *g = hnew(n), *g2 = hnew(n);
    fill(x, n, scale, 0.0f);
    if (masked) /* attention key mask: every third key -Inf, and the first row all -Inf */
        for (size_t i = 0; i < n; i++)
            if (i % 3 == 1 || i < (size_t)cols) x[i] = -INFINITY;
    float *dx = dup_up(x, n), *dy = dnew(n), *dy2 = dnew(n);
    memcpy(c, x, n * sizeof(float));
    rp_softmax_rows(c, rows, cols);
    OP(rp_cuda_softmax_rows(dy, dx, rows, cols, g_stream, E));
    down(g, dy, n);
    char shape[96];
    snprintf(shape, sizeof shape, "rows=%d cols=%d scale=%g%s", rows, cols, scale, masked ? " masked" : "");
    check("softmax_rows", shape, c, g, n, thr_softmax((size_t)cols));
    OP(rp_cuda_softmax_rows(dy2, dx, rows, cols, g_stream, E));
    down(g2, dy2, n);
    check_bits("determinism", "softmax_rows", shape, g, g2, n);
    OP(rp_cuda_softmax_rows(dy2, dx + (size_t)(rows - 1) * cols, 1, cols, g_stream, E));
    down(g2, dy2, cols);
    check_bits("batch invariance", "softmax_rows", shape, g + (size_t)(rows - 1) * cols, g2, cols);
    OP(rp_cuda_softmax_rows(dx, dx, rows, cols, g_stream, E));
    down(g2, dx, n);
    check_bits("in place == out of place", "softmax_rows", shape, g, g2, n);
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dy2);
    free(x);
    free(c);
    free(g);
    free(g2);
}

static void test_softmax(void) {
    test_softmax_one(3, 1, 1.0f, 0);
    test_softmax_one(5, 7, 1.0f, 0);
    test_softmax_one(17, 33, 4.0f, 1);
    test_softmax_one(64, 257, 1.0f, 0);
    test_softmax_one(8, 1000, 30.0f, 1); /* wide logits: exps underflow to 0 */
    test_softmax_one(6, 4097, 2.0f, 0);
    test_softmax_one(2, 100003, 1.0f, 1); /* large rows */
    /* special rows: all -Inf with a NaN (NaN), +Inf (NaN), a NaN among finite (NaN) */
    const int cols = 9;
    float x[4 * 9], c[4 * 9], g[4 * 9];
    for (int i = 0; i < 4 * cols; i++) x[i] = (float)(i % 5) - 2.0f;
    for (int j = 0; j < cols; j++) x[j] = -INFINITY;
    x[4] = NAN;
    x[cols + 2] = INFINITY;
    x[2 * cols + 5] = NAN;
    memcpy(c, x, sizeof x);
    rp_softmax_rows(c, 4, cols);
    float *dx = dup_up(x, 4 * cols), *dy = dnew(4 * cols);
    OP(rp_cuda_softmax_rows(dy, dx, 4, cols, g_stream, E));
    down(g, dy, 4 * cols);
    check("softmax_rows", "rows=4 cols=9 NaN/+Inf/-Inf rows", c, g, 4 * cols, thr_softmax(cols));
    cudaFree(dx);
    cudaFree(dy);
}

/* ---- patches and layouts ---------------------------------------------------------------------------- */

static void test_patches(void) {
    static const struct { int B, C, H, W, p; } sh[] = {{1, 1, 1, 1, 1}, {2, 4, 8, 6, 2}, {1, 3, 9, 15, 3},
                                                      {2, 16, 32, 32, 2}, {1, 5, 8, 8, 4}};
    char shape[96];
    for (size_t si = 0; si < sizeof sh / sizeof *sh; si++) {
        const int B = sh[si].B, C = sh[si].C, H = sh[si].H, W = sh[si].W, p = sh[si].p;
        const size_t n = (size_t)B * C * H * W;
        float *img = hnew(n), *c = hnew(n), *g = hnew(n);
        fill(img, n, 1.0f, 0.0f);
        float *di = dup_up(img, n), *dt = dnew(n);
        snprintf(shape, sizeof shape, "B=%d C=%d H=%d W=%d p=%d", B, C, H, W, p);
        rp_patchify(c, img, B, C, H, W, p);
        OP(rp_cuda_patchify(dt, di, B, C, H, W, p, g_stream, E));
        down(g, dt, n);
        check("patchify", shape, c, g, n, THR_EXACT);
        /* unpatchify reads (py, px, c) tokens: feed it random tokens */
        up(dt, img, n);
        rp_unpatchify(c, img, B, C, H, W, p);
        OP(rp_cuda_unpatchify(di, dt, B, C, H, W, p, g_stream, E));
        down(g, di, n);
        check("unpatchify", shape, c, g, n, THR_EXACT);
        if (p == 2 || (H % 2 == 0 && W % 2 == 0)) {
            rp_flux_unpack(c, img, B, C, H, W);
            OP(rp_cuda_flux_unpack(di, dt, B, C, H, W, g_stream, E));
            down(g, di, n);
            snprintf(shape, sizeof shape, "B=%d C=%d H=%d W=%d", B, C, H, W);
            check("flux_unpack", shape, c, g, n, THR_EXACT);
        }
        cudaFree(di);
        cudaFree(dt);
        free(img);
        free(c);
        free(g);
    }
    static const struct { int N, C, H, W; } us[] = {{1, 1, 1, 1}, {2, 3, 5, 7}, {1, 64, 32, 33}};
    for (size_t si = 0; si < sizeof us / sizeof *us; si++) {
        const int N = us[si].N, C = us[si].C, H = us[si].H, W = us[si].W;
        const size_t n = (size_t)N * C * H * W;
        float *in = hnew(n), *c = hnew(4 * n), *g = hnew(4 * n);
        fill(in, n, 1.0f, 0.0f);
        float *di = dup_up(in, n), *dout = dnew(4 * n);
        rp_upsample_nearest2x(c, in, N, C, H, W);
        OP(rp_cuda_upsample_nearest2x(dout, di, N, C, H, W, g_stream, E));
        down(g, dout, 4 * n);
        snprintf(shape, sizeof shape, "N=%d C=%d H=%d W=%d", N, C, H, W);
        check("upsample_nearest2x", shape, c, g, 4 * n, THR_EXACT);
        cudaFree(di);
        cudaFree(dout);
        free(in);
        free(c);
        free(g);
    }
}

static void test_heads(void) {
    static const struct { int B, T, H, D, L; } sh[] = {{1, 1, 1, 1, 1}, {2, 17, 3, 33, 5}, {2, 64, 16, 72, 7}};
    char shape[96];
    for (size_t si = 0; si < sizeof sh / sizeof *sh; si++) {
        const int B = sh[si].B, T = sh[si].T, H = sh[si].H, D = sh[si].D, L = sh[si].L, S = T + L;
        const size_t n = (size_t)B * T * H * D, n3 = 3 * n, nS = (size_t)B * H * S * D;
        float *qkv = hnew(n3), *c = hnew(n3), *g = hnew(n3), *txt = hnew((size_t)B * L * H * D);
        fill(qkv, n3, 1.0f, 0.0f);
        fill(txt, (size_t)B * L * H * D, 1.0f, 0.0f);
        float *dqkv = dup_up(qkv, n3), *dq = dnew(n), *dk = dnew(n), *dv = dnew(n);
        snprintf(shape, sizeof shape, "B=%d T=%d H=%d D=%d", B, T, H, D);
        rp_split_qkv_heads(c, c + n, c + 2 * n, qkv, B, T, H, D);
        OP(rp_cuda_split_qkv_heads(dq, dk, dv, dqkv, B, T, H, D, g_stream, E));
        down(g, dq, n);
        down(g + n, dk, n);
        down(g + 2 * n, dv, n);
        check("split_qkv_heads", shape, c, g, n3, THR_EXACT);

        /* plain to / from heads against the CPU ops */
        rp_to_heads(c, qkv, B, T, H, D);
        OP(rp_cuda_to_heads(dq, dqkv, B, T, H, D, T, 0, g_stream, E));
        down(g, dq, n);
        check("to_heads", shape, c, g, n, THR_EXACT);
        rp_from_heads(c, qkv, B, T, H, D);
        OP(rp_cuda_from_heads(dq, H * D, dqkv, B, T, 0, T, H, D, g_stream, E));
        down(g, dq, n);
        check("from_heads", shape, c, g, n, THR_EXACT);

        /* SD3's joint layout: image rows then text rows per head (sd3.c joint_to_heads,
         * written out here as the reference), and back with a row stride (flux.c
         * from_heads_ld: ldo = ld) */
        float *dj = dnew(nS), *dtxt = dup_up(txt, (size_t)B * L * H * D);
        float *cj = hnew(nS), *gj = hnew(nS);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                float *o = cj + ((size_t)b * H + h) * S * D;
                for (int t = 0; t < T; t++)
                    memcpy(o + (size_t)t * D, qkv + (((size_t)b * T + t) * H + h) * D, D * sizeof(float));
                for (int j = 0; j < L; j++)
                    memcpy(o + (size_t)(T + j) * D, txt + (((size_t)b * L + j) * H + h) * D, D * sizeof(float));
            }
        OP(rp_cuda_to_heads(dj, dqkv, B, T, H, D, S, 0, g_stream, E));
        OP(rp_cuda_to_heads(dj, dtxt, B, L, H, D, S, T, g_stream, E));
        down(gj, dj, nS);
        snprintf(shape, sizeof shape, "B=%d T=%d+%d H=%d D=%d", B, T, L, H, D);
        check("to_heads joint", shape, cj, gj, nS, THR_EXACT);

        const int ld = H * D + 5;
        const size_t nl = (size_t)B * L * ld;
        float *cl = hnew(nl), *gl = hnew(nl), *dl = dnew(nl);
        CK(cudaMemset(dl, 0, nl * sizeof(float)));
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int j = 0; j < L; j++)
                    memcpy(cl + ((size_t)b * L + j) * ld + (size_t)h * D, cj + (((size_t)b * H + h) * S + T + j) * D,
                           D * sizeof(float));
        OP(rp_cuda_from_heads(dl, ld, dj, B, S, T, L, H, D, g_stream, E));
        down(gl, dl, nl);
        snprintf(shape, sizeof shape, "B=%d rows %d..%d of S=%d H=%d D=%d ld=%d", B, T, S, S, H, D, ld);
        check("from_heads strided", shape, cl, gl, nl, THR_EXACT);

        cudaFree(dqkv);
        cudaFree(dq);
        cudaFree(dk);
        cudaFree(dv);
        cudaFree(dj);
        cudaFree(dtxt);
        cudaFree(dl);
        free(qkv);
        free(c);
        free(g);
        free(txt);
        free(cj);
        free(gj);
        free(cl);
        free(gl);
    }

    /* VAE attention: (C, T) <-> (T, C) and the transposed residual (vae.c attn_fwd) */
    static const struct { int R, C; } tr[] = {{1, 1}, {3, 70}, {512, 33 * 31}, {33, 32}};
    for (size_t si = 0; si < sizeof tr / sizeof *tr; si++) {
        const int R = tr[si].R, Cc = tr[si].C;
        const size_t n = (size_t)R * Cc;
        float *x = hnew(n), *y = hnew(n), *c = hnew(n), *g = hnew(n);
        fill(x, n, 1.0f, 0.0f);
        fill(y, n, 1.0f, 0.0f);
        float *dx = dup_up(x, n), *dy = dup_up(y, n), *dt = dnew(n);
        for (int r = 0; r < R; r++)
            for (int k = 0; k < Cc; k++) c[(size_t)k * R + r] = x[(size_t)r * Cc + k];
        OP(rp_cuda_transpose(dt, dx, R, Cc, g_stream, E));
        down(g, dt, n);
        snprintf(shape, sizeof shape, "rows=%d cols=%d", R, Cc);
        check("transpose", shape, c, g, n, THR_EXACT);
        /* x (R, Cc) += y^T, y (Cc, R) */
        memcpy(c, x, n * sizeof(float));
        for (int r = 0; r < R; r++)
            for (int k = 0; k < Cc; k++) c[(size_t)r * Cc + k] += y[(size_t)k * R + r];
        OP(rp_cuda_add_transposed(dx, dy, R, Cc, g_stream, E));
        down(g, dx, n);
        check("add_transposed", shape, c, g, n, THR_EXACT);
        cudaFree(dx);
        cudaFree(dy);
        cudaFree(dt);
        free(x);
        free(y);
        free(c);
        free(g);
    }
}

/* ---- timestep embedding ----------------------------------------------------------------------------- */

static void test_timestep(void) {
    static const struct { int B, dim; float maxp, shift; } sh[] = {
        {1, 1, 10000.0f, 0.0f}, {3, 256, 10000.0f, 0.0f}, {2, 255, 10000.0f, 0.0f}, {4, 320, 10000.0f, 1.0f},
        {2, 2000, 10000.0f, 0.0f}, {2, 2050, 10000.0f, 0.0f}};
    for (size_t si = 0; si < sizeof sh / sizeof *sh; si++) {
        const int B = sh[si].B, dim = sh[si].dim;
        float t[4] = {999.0f, 0.0f, 500.5f, 1.0f};  /* DiT / SD3 range; FLUX passes 1000 t */
        const size_t n = (size_t)B * dim;
        float *c = hnew(n), *g = hnew(n);
        float *dt = dup_up(t, B), *dy = dnew(n);
        rp_timestep_embedding(c, t, B, dim, sh[si].maxp, sh[si].shift);
        OP(rp_cuda_timestep_embedding(dy, dt, B, dim, sh[si].maxp, sh[si].shift, g_stream, E));
        down(g, dy, n);
        double thr = 9.0 * U * U; /* (3u)^2: libm frequencies, only cos / sin differ */
        if (dim / 2 > 1000) {     /* device frequencies: see the header */
            double amax = 0.0;
            for (int b = 0; b < B; b++) amax = fabs(t[b]) > amax ? fabs(t[b]) : amax; /* f <= 1 */
            const double r = 3.0 * U + 4.0 * U * amax * sqrt(2.0);
            thr = r * r;
        }
        char shape[96];
        snprintf(shape, sizeof shape, "B=%d dim=%d max_period=%g shift=%g", B, dim, sh[si].maxp, sh[si].shift);
        check("timestep_embedding", shape, c, g, n, thr);
        cudaFree(dt);
        cudaFree(dy);
        free(c);
        free(g);
    }
}

/* ---- conv2d ------------------------------------------------------------------------------------------ */

static void test_conv2d(cublasHandle_t h) {
    static const struct { int N, IC, H, W, OC, k, s, pad, bias; } sh[] = {
        {1, 1, 1, 1, 1, 1, 1, 0, 1},    {2, 3, 17, 13, 5, 3, 1, 1, 1}, {1, 8, 16, 16, 4, 1, 1, 0, 1},
        {2, 4, 9, 11, 6, 3, 2, 0, 0},   {1, 4, 5, 5, 3, 5, 1, 2, 1},   {2, 4, 16, 16, 8, 2, 2, 0, 1},
        {1, 64, 32, 32, 64, 3, 1, 1, 1}, {2, 128, 16, 16, 3, 3, 1, 1, 1}};
    rp_ctx ctx = rp_ctx_default();
    for (size_t si = 0; si < sizeof sh / sizeof *sh; si++) {
        const int N = sh[si].N, IC = sh[si].IC, H = sh[si].H, W = sh[si].W, OC = sh[si].OC, k = sh[si].k,
                  s = sh[si].s, pad = sh[si].pad;
        const int Ho = (H + 2 * pad - k) / s + 1, Wo = (W + 2 * pad - k) / s + 1, K = IC * k * k;
        const size_t nin = (size_t)N * IC * H * W, nw = (size_t)OC * K, nout = (size_t)N * OC * Ho * Wo;
        float *in = hnew(nin), *w = hnew(nw), *b = hnew(OC), *c = hnew(nout), *g = hnew(nout), *g2 = hnew(nout);
        float *ain = hnew(nin), *aw = hnew(nw), *ab = hnew(OC), *S = hnew(nout);
        fill(in, nin, 1.0f, 0.0f);
        fill(w, nw, (float)(1.0 / sqrt((double)K)), 0.0f);
        fill(b, OC, 0.1f, 0.0f);
        const float *bb = sh[si].bias ? b : NULL;
        rp_conv2d(&ctx, c, in, w, bb, N, IC, H, W, OC, k, s, pad);
        for (size_t i = 0; i < nin; i++) ain[i] = fabsf(in[i]);
        for (size_t i = 0; i < nw; i++) aw[i] = fabsf(w[i]);
        for (int i = 0; i < OC; i++) ab[i] = fabsf(b[i]);
        rp_conv2d(&ctx, S, ain, aw, sh[si].bias ? ab : NULL, N, IC, H, W, OC, k, s, pad);
        double num = 0.0, den = 0.0;
        const double lam = 8.0 * sqrt((double)K + 1.0) * U * 1.01;
        for (size_t i = 0; i < nout; i++) {
            num += (lam * S[i]) * (lam * S[i]);
            den += (double)c[i] * c[i];
        }
        const double thr = den > 0.0 ? num / den : 0.0;

        const size_t ws = rp_cuda_conv2d_workspace_bytes(IC, H, W, k, s, pad);
        void *dws = NULL;
        if (ws) CK(cudaMalloc(&dws, ws));
        float *din = dup_up(in, nin), *dw = dup_up(w, nw), *db = dup_up(b, OC), *dy = dnew(nout), *dy2 = dnew(nout);
        OP(rp_cuda_conv2d(h, dy, din, dw, sh[si].bias ? db : NULL, N, IC, H, W, OC, k, s, pad, dws, ws, g_stream, E));
        down(g, dy, nout);
        char shape[112];
        snprintf(shape, sizeof shape, "N=%d IC=%d %dx%d OC=%d k=%d s=%d pad=%d%s", N, IC, H, W, OC, k, s, pad,
                 sh[si].bias ? " bias" : "");
        check("conv2d", shape, c, g, nout, thr);
        OP(rp_cuda_conv2d(h, dy2, din, dw, sh[si].bias ? db : NULL, N, IC, H, W, OC, k, s, pad, dws, ws, g_stream,
                          E));
        down(g2, dy2, nout);
        check_bits("determinism", "conv2d", shape, g, g2, nout);
        if (N > 1) { /* image 0 alone: the same GEMM, the same bits */
            OP(rp_cuda_conv2d(h, dy2, din, dw, sh[si].bias ? db : NULL, 1, IC, H, W, OC, k, s, pad, dws, ws,
                              g_stream, E));
            down(g2, dy2, nout / N);
            check_bits("batch invariance", "conv2d", shape, g, g2, nout / N);
        }
        cudaFree(dws);
        cudaFree(din);
        cudaFree(dw);
        cudaFree(db);
        cudaFree(dy);
        cudaFree(dy2);
        free(in);
        free(w);
        free(b);
        free(c);
        free(g);
        free(g2);
        free(ain);
        free(aw);
        free(ab);
        free(S);
    }
}
#endif /* REPRO_HAVE_CUDA */

#ifdef REPRO_HAVE_CUDA
/* ---- argument validation (no device needed: nothing is launched) ----------------------------------- */

static int g_vfail = 0;

static void expect_invalid(const char *what, rp_status s, const rp_error *e, const char *op) {
    const int ok = s == RP_ERR_INVALID && strstr(e->msg, op) != NULL;
    printf("%-24s %-40s -> %s \"%s\"  %s\n", op, what, rp_status_name(s), e->msg, ok ? "PASS" : "FAIL");
    if (!ok) g_vfail = 1;
}

static void test_validation(void) {
    float *p = (float *)(uintptr_t)0x1000; /* never dereferenced: validation fails first */
    rp_error e;
#define V(what, op, call)                     \
    do {                                      \
        rp_error_clear(&e);                   \
        expect_invalid(what, (call), &e, op); \
    } while (0)
    V("n = 0", "rp_cuda_gelu_tanh", rp_cuda_gelu_tanh(p, p, 0, 0, &e));
    V("x NULL", "rp_cuda_silu", rp_cuda_silu(p, NULL, 4, 0, &e));
    V("ldo < cols", "rp_cuda_activation_2d", rp_cuda_activation_2d(RP_CUDA_ACT_GELU_ERF, p, 3, p, 8, 2, 4, 0, &e));
    V("mod_stride < C", "rp_cuda_modulate", rp_cuda_modulate(p, p, p, 3, 1, 2, 4, 0, &e));
    V("T = 0", "rp_cuda_gated_add", rp_cuda_gated_add(p, p, 4, p, 1, 0, 4, 0, &e));
    V("odd D", "rp_cuda_rope", rp_cuda_rope(p, p, p, 1, 1, 4, 7, 0, &e));
    V("abar = 1", "rp_cuda_ddim_step", rp_cuda_ddim_step(p, p, p, 1.0, 1.0, 0.0, NULL, 4, 0, &e));
    V("eta 1, noise NULL", "rp_cuda_ddim_step", rp_cuda_ddim_step(p, p, p, 0.5, 0.9, 1.0, NULL, 4, 0, &e));
    V("noise NULL", "rp_cuda_ddpm_step", rp_cuda_ddpm_step(p, p, p, NULL, 0.5, 0.6, 0.1, -3.0, 1, NULL, 4, 0, &e));
    V("abar_next < abar", "rp_cuda_dpmpp_2m_step", rp_cuda_dpmpp_2m_step(p, p, p, NULL, 0.0, 0.5, 0.4, 4, 0, &e));
    V("sigma_next > sigma", "rp_cuda_euler_a_step", rp_cuda_euler_a_step(p, p, p, 1.0, 2.0, 1.0, p, 4, 0, &e));
    V("sigma not float32", "rp_cuda_flow_euler_step", rp_cuda_flow_euler_step(p, p, p, 0.1, 0.0, 4, 0, &e));
    V("C = 0", "rp_cuda_layernorm", rp_cuda_layernorm(p, p, NULL, NULL, 4, 0, 1e-6f, 0, &e));
    V("eps < 0", "rp_cuda_rmsnorm", rp_cuda_rmsnorm(p, p, NULL, 4, 8, -1.0f, 0, &e));
    V("C % G != 0", "rp_cuda_groupnorm", rp_cuda_groupnorm(p, p, NULL, NULL, 1, 10, 4, 3, 1e-6f, 0, &e));
    V("out NULL", "rp_cuda_softmax_rows", rp_cuda_softmax_rows(NULL, p, 2, 2, 0, &e));
    V("H % p != 0", "rp_cuda_patchify", rp_cuda_patchify(p, p, 1, 4, 9, 8, 2, 0, &e));
    V("odd W", "rp_cuda_flux_unpack", rp_cuda_flux_unpack(p, p, 1, 4, 8, 7, 0, &e));
    V("s0 + T > S", "rp_cuda_to_heads", rp_cuda_to_heads(p, p, 1, 4, 2, 8, 5, 2, 0, &e));
    V("ldo < H*D", "rp_cuda_from_heads", rp_cuda_from_heads(p, 15, p, 1, 4, 0, 4, 2, 8, 0, &e));
    V("out == x", "rp_cuda_transpose", rp_cuda_transpose(p, p, 4, 4, 0, &e));
    V("dim = 0", "rp_cuda_timestep_embedding", rp_cuda_timestep_embedding(p, p, 1, 0, 10000.0f, 0.0f, 0, &e));
    V("handle NULL", "rp_cuda_conv2d", rp_cuda_conv2d(NULL, p, p, p, NULL, 1, 1, 4, 4, 1, 3, 1, 1, p, 1 << 20, 0, &e));
    V("no workspace", "rp_cuda_conv2d",
      rp_cuda_conv2d((cublasHandle_t)(uintptr_t)0x1000, p, p, p, NULL, 1, 1, 4, 4, 1, 3, 1, 1, NULL, 0, 0, &e));
    V("kernel > input", "rp_cuda_conv2d",
      rp_cuda_conv2d((cublasHandle_t)(uintptr_t)0x1000, p, p, p, NULL, 1, 1, 2, 2, 1, 5, 1, 0, NULL, 0, 0, &e));
#undef V
    const size_t ws = rp_cuda_conv2d_workspace_bytes(3, 17, 13, 3, 1, 1);
    const int ok = ws == (size_t)27 * 17 * 13 * sizeof(float) && rp_cuda_conv2d_workspace_bytes(8, 4, 4, 1, 1, 0) == 0;
    printf("%-24s %-40s -> %zu bytes  %s\n", "conv2d_workspace_bytes", "IC=3 17x13 k=3 s=1 pad=1", ws,
           ok ? "PASS" : "FAIL");
    if (!ok) g_vfail = 1;
}
#endif

int main(void) {
#ifndef REPRO_HAVE_CUDA
    printf("SKIP: this build has no CUDA (nvcc was not found at configure time)\n");
    return 77;
#else
    test_validation();
    if (g_vfail) {
        printf("FAIL: argument validation\n");
        return 1;
    }
    if (rp_cuda_device_count() == 0) {
        printf("SKIP: no CUDA device visible (no driver, or CUDA_VISIBLE_DEVICES empty); "
               "argument validation passed\n");
        return 77;
    }
    CK(cudaSetDevice(0));
    CK(cudaStreamCreate(&g_stream));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        printf("FAIL: cublasCreate\n");
        return 1;
    }
    test_act("gelu_tanh", rp_gelu_tanh, rp_cuda_gelu_tanh, THR_EXACT);
    test_act("silu", rp_silu, rp_cuda_silu, THR_EXACT);
    test_act("gelu_erf", rp_gelu_erf, rp_cuda_gelu_erf, round1(16.0 * UD));
    test_act2d();
    test_modulate_gated();
    test_adds();
    test_fill_rows();
    test_rope();
    test_samplers();
    test_layernorm();
    test_rmsnorm();
    test_groupnorm();
    test_softmax();
    test_patches();
    test_heads();
    test_timestep();
    test_conv2d(h);
    cublasDestroy(h);
    cudaError_t last = cudaDeviceSynchronize();
    if (last != cudaSuccess) {
        printf("FAIL: device error at the end: %s\n", cudaGetErrorString(last));
        g_fail = 1;
    }
    cudaStreamDestroy(g_stream);
    printf("%s\n", g_fail ? "FAIL: some CUDA ops differ from the CPU ops (lines above)" : "all CUDA ops PASS");
    return g_fail ? 1 : 0;
#endif
}
