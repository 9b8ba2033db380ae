/* bench/engine — one DiT forward (batch 2) per model: seconds, achieved GFLOP/s,
 * and the ratio to cblas_sgemm at 2048^3 measured in the same run, same threads.
 *
 *   build/bench/engine [--threads N] [--models dit-tiny,dit-xl-2-256,sd3-tiny,flux-tiny,flux-dev]
 *                      [--repeat R] [--numerics default|invariant|both]
 *
 * --numerics both runs every model under the default numerics, then under invariant
 * numerics (engine/ctx.h: the layout-invariant kernels), and prints the ratio
 * invariant / default of the two times measured in this run (README: "Invariant numerics").
 *
 * sd3-tiny / flux-tiny: a whole sample (prompt encoding, 28 Euler steps, VAE decode),
 * one item, best of `repeat`; synthetic weights from the cache.
 *
 * flux-dev: the real shapes at 1024x1024 (4096 image + 512 text tokens) with 2 double
 * + 2 single blocks, batch 1; per-block times come from timing the forward at
 * (2 double, 2 single), (2, 0) and (0, 0) blocks on the same weights.
 *
 * Weights are synthetic, generated straight into memory (DiT-XL is 2.7 GB in fp32);
 * they are bitwise the weights `repro weights` would write. FLOPs = 2 x MACs. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/ctx.h"
#include "engine/models/dit.h"
#include "engine/models/flux.h"
#include "engine/pipeline/pipeline.h"
#include "engine/rng.h"
#include "engine/synthetic.h"
#include "harness/cli/args.h"
#include "harness/sweep/env.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Best-of-`repeat` GFLOP/s of C = A B for n x n x n fp32. */
static double sgemm_peak(int n, int repeat) {
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
          *c = malloc(sizeof(float) * n * n);
    rp_randn(a, (size_t)n * n, 1, 0, 0);
    rp_randn(b, (size_t)n * n, 2, 0, 0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
    double best = 1e30;
    for (int r = 0; r < repeat; r++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    free(a); free(b); free(c);
    return 2.0 * n * (double)n * n / best / 1e9;
}

/* *secs: the best forward time (s). */
static int bench_dit(const char *name, int repeat, double peak, rp_numerics num, int threads, double *secs) {
    rp_error err = {0};
    rp_dit_config cfg;
    if (rp_dit_preset(name, &cfg, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    rp_param_list l = {0};
    rp_dit_param_specs(&cfg, &l);
    rp_st_file *w = NULL;
    rp_dit *m = NULL;
    double tg = now();
    if (rp_st_synthetic(&l, 0, name, &w, &err) || rp_dit_load(&cfg, w, &m, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        return 1;
    }
    rp_st_close(w);
    double t_gen = now() - tg;
    const int B = 2, S = cfg.input_size, C = cfg.in_channels;
    const int Cout = cfg.learn_sigma ? 2 * C : C;
    float *x = malloc(sizeof(float) * B * C * S * S);      // (B, C, S, S)
    float *out = malloc(sizeof(float) * B * Cout * S * S); // (B, Cout, S, S)
    float t[2] = {999.f, 500.f};
    int y[2] = {207, cfg.num_classes}; /* conditional + null class, as a CFG pair */
    for (int i = 0; i < B; i++) rp_randn(x + (size_t)i * C * S * S, (size_t)C * S * S, 0, i, 0);
    rp_ctx ctx = rp_ctx_default();
    ctx.numerics = num;
    ctx.threads = threads; /* the invariant kernel's own threads (OpenBLAS's are set in main) */
    if (rp_dit_forward(m, &ctx, out, x, t, y, B, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    double best = 1e30;
    for (int r = 0; r < repeat; r++) {
        double t0 = now();
        rp_dit_forward(m, &ctx, out, x, t, y, B, &err);
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    double gflop = 2.0 * rp_dit_macs(&cfg) * B / 1e9;
    printf("%-14s %6d %5d %10.4f %10.1f %10.1f %8.3f   (%s; weights %.1f s, %.1f M params)\n", name, B,
           cfg.depth, best, gflop, gflop / best, gflop / best / peak, rp_numerics_name(num), t_gen,
           rp_params_total(&l) / 1e6);
    *secs = best;
    free(x); free(out);
    rp_dit_free(m);
    rp_params_free(&l);
    return 0;
}


static double time_flux(const rp_flux_config *base, const rp_st_file *w, int nd, int ns,
                        const float *x, const float *t, const float *g, const float *ctxt,
                        const float *pooled, float *out, int H, int L, rp_numerics num, int threads, double *macs) {
    rp_error err = {0};
    rp_flux_config cfg = *base;
    rp_flux *m = NULL;
    if (rp_flux_set_depth(&cfg, nd, ns, &err) || rp_flux_load(&cfg, w, &m, &err)) {
        fprintf(stderr, "flux (%d, %d): %s\n", nd, ns, err.msg);
        return -1;
    }
    rp_ctx ctx = rp_ctx_default();
    ctx.numerics = num;
    ctx.threads = threads;
    double t0 = now();
    rp_status s = rp_flux_forward(m, &ctx, out, x, t, g, ctxt, NULL, pooled, 1, H, H, L, &err);
    double dt = now() - t0;
    if (s) { fprintf(stderr, "flux forward: %s\n", err.msg); dt = -1; }
    *macs = rp_flux_macs(&cfg, H, H, L);
    rp_flux_free(m);
    return dt;
}

/* *secs: the 2 + 2 block forward's time (s). */
static int bench_flux(const char *name, double peak, rp_numerics num, int threads, double *secs) {
    rp_error err = {0};
    rp_flux_config cfg;
    if (rp_flux_preset(name, &cfg, &err) || rp_flux_set_depth(&cfg, 2, 2, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    rp_param_list l = {0};
    rp_flux_param_specs(&cfg, &l);
    rp_st_file *w = NULL;
    double tg = now();
    if (rp_st_synthetic(&l, 0, name, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    double t_gen = now() - tg;
    const int H = cfg.sample_size, L = cfg.text_len, C = cfg.in_channels;
    float *x = malloc(sizeof(float) * C * H * H);                     // (1, C, H, W)
    float *out = malloc(sizeof(float) * C * H * H);                   // (1, C, H, W)
    float *ctxt = malloc(sizeof(float) * (size_t)L * cfg.joint_attention_dim); // (1, L, Dctx)
    float *pooled = malloc(sizeof(float) * cfg.pooled_dim);          // (1, Dpool)
    rp_randn(x, (size_t)C * H * H, 0, 0, 0);
    rp_randn(ctxt, (size_t)L * cfg.joint_attention_dim, 1, 0, 0);
    rp_randn(pooled, (size_t)cfg.pooled_dim, 2, 0, 0);
    float t = 0.75f, g = 3.5f;
    double m22, m20, m00;
    double t22 = time_flux(&cfg, w, 2, 2, x, &t, &g, ctxt, pooled, out, H, L, num, threads, &m22);
    double t20 = time_flux(&cfg, w, 2, 0, x, &t, &g, ctxt, pooled, out, H, L, num, threads, &m20);
    double t00 = time_flux(&cfg, w, 0, 0, x, &t, &g, ctxt, pooled, out, H, L, num, threads, &m00);
    rp_st_close(w);
    free(x); free(out); free(ctxt); free(pooled);
    if (t22 < 0 || t20 < 0 || t00 < 0) return 1;
    double td = (t20 - t00) / 2, ts = (t22 - t20) / 2;           /* seconds per block */
    double fd = 2 * (m20 - m00) / 2 / 1e9, fs = 2 * (m22 - m20) / 2 / 1e9; /* GFLOP per block */
    printf("%-14s %6d %5s %10.4f %10.1f %10.1f %8.3f   (%s; %dx%d px, %d text tokens; weights %.1f s, %.1f M params)\n",
           "flux-dev 2+2", 1, "2+2", t22, 2 * m22 / 1e9, 2 * m22 / 1e9 / t22, 2 * m22 / 1e9 / t22 / peak,
           rp_numerics_name(num), 8 * H, 8 * H, L, t_gen, rp_params_total(&l) / 1e6);
    *secs = t22;
    printf("%-14s %6d %5s %10.4f %10.1f %10.1f %8.3f\n", "  double block", 1, "1", td, fd, fd / td, fd / td / peak);
    printf("%-14s %6d %5s %10.4f %10.1f %10.1f %8.3f\n", "  single block", 1, "1", ts, fs, fs / ts, fs / ts / peak);
    printf("%-14s %6d %5s %10.4f\n", "  embed+final", 1, "0", t00);
    rp_params_free(&l);
    return 0;
}

/* *secs: the best whole-sample time (s). */
static int bench_sample(const char *name, int repeat, rp_numerics num, int threads, double *secs) {
    rp_gen_item item = {.seed = 0, .global_index = 0, .class_id = 0, .prompt = "a red fox"};
    rp_gen_request req = {0};
    req.model = name;
    req.steps = 28;
    req.cfg = strncmp(name, "sd3", 3) == 0 ? 7.0 : 1.0;
    req.guidance = strncmp(name, "flux", 4) == 0 ? 3.5 : 0.0;
    req.n_items = 1;
    req.items = &item;
    req.decode = 1;
    rp_ctx ctx = rp_ctx_default();
    ctx.numerics = num;
    ctx.threads = threads;
    rp_error err = {0};
    double best = 1e30;
    int evals = 0;
    for (int r = 0; r < repeat + 1; r++) { /* first run also fills the weights cache */
        rp_gen_result res = {0};
        double t0 = now();
        if (rp_generate(&req, &ctx, &res, &err)) { fprintf(stderr, "%s: %s\n", name, err.msg); return 1; }
        double dt = now() - t0;
        if (r > 0 && dt < best) best = dt;
        evals = res.n_evals;
        rp_gen_result_free(&res);
    }
    printf("%-14s %6d %5s %10.4f   (%s; whole sample: 28 steps, %d model evals, VAE decode)\n", name, 1,
           "-", best, rp_numerics_name(num), evals);
    *secs = best;
    return 0;
}

int main(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    int threads = (int)rp_arg_int(&a, "threads", 2);
    int repeat = (int)rp_arg_int(&a, "repeat", 3);
    const char *models = rp_arg_str(&a, "models", "dit-tiny,dit-xl-2-256,sd3-tiny,flux-tiny,flux-dev");
    const char *numerics = rp_arg_str(&a, "numerics", "default");
    rp_error err = {0};
    if (rp_args_finish(&a, &err)) { fprintf(stderr, "bench/engine: %s\n", err.msg); return 2; }
    const int both = !strcmp(numerics, "both");
    rp_numerics one = RP_NUMERICS_DEFAULT;
    if (!both && rp_numerics_parse(numerics, &one, &err)) {
        fprintf(stderr, "bench/engine: --%s (or both)\n", err.msg);
        return 2;
    }
    openblas_set_num_threads(threads);

    cJSON *env = rp_env_collect();
    cJSON *host = cJSON_GetObjectItem(env, "host");
    printf("# cpu: %s | openblas %s core %s | threads %d | repro %s\n",
           cJSON_GetObjectItem(host, "cpu_model")->valuestring, openblas_get_config(),
           openblas_get_corename(), threads, rp_git_revision());
    cJSON_Delete(env);
    double peak = sgemm_peak(2048, 3);
    printf("# cblas_sgemm 2048^3: %.1f GFLOP/s (best of 3)\n", peak);
    printf("%-14s %6s %5s %10s %10s %10s %8s\n", "model", "batch", "depth", "seconds", "GFLOP",
           "GFLOP/s", "/sgemm");
    char buf[512];
    snprintf(buf, sizeof buf, "%s", models);
    int rc = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        double secs[2] = {0, 0};
        for (int k = 0; k < 1 + both; k++) {
            const rp_numerics num = both ? (k ? RP_NUMERICS_INVARIANT : RP_NUMERICS_DEFAULT) : one;
            rc |= !strcmp(tok, "flux-dev") ? bench_flux(tok, peak, num, threads, &secs[k])
                  : !strcmp(tok, "sd3-tiny") || !strcmp(tok, "flux-tiny")
                      ? bench_sample(tok, repeat, num, threads, &secs[k])
                      : bench_dit(tok, strstr(tok, "tiny") ? repeat * 10 : repeat, peak, num, threads, &secs[k]);
        }
        if (both && secs[0] > 0 && secs[1] > 0)
            printf("# %s: invariant / default = %.3f (same run, same threads)\n", tok, secs[1] / secs[0]);
    }
    return rc;
}
