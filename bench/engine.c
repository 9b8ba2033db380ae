/* bench/engine — one DiT forward (batch 2) per model: seconds, achieved GFLOP/s,
 * and the ratio to cblas_sgemm at 2048^3 measured in the same run, same threads.
 *
 *   build/bench/engine [--threads N] [--models dit-tiny,dit-xl-2-256] [--repeat R]
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
#include "engine/rng.h"
#include "engine/synthetic.h"
#include "harness/args.h"
#include "harness/env.h"

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

static int bench_dit(const char *name, int repeat, double peak) {
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
    if (rp_dit_forward(m, &ctx, out, x, t, y, B, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    double best = 1e30;
    for (int r = 0; r < repeat; r++) {
        double t0 = now();
        rp_dit_forward(m, &ctx, out, x, t, y, B, &err);
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    double gflop = 2.0 * rp_dit_macs(&cfg) * B / 1e9;
    printf("%-14s %6d %5d %10.4f %10.1f %10.1f %8.3f   (weights %.1f s, %.1f M params)\n", name, B,
           cfg.depth, best, gflop, gflop / best, gflop / best / peak, t_gen,
           rp_params_total(&l) / 1e6);
    free(x); free(out);
    rp_dit_free(m);
    rp_params_free(&l);
    return 0;
}

int main(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    int threads = (int)rp_arg_int(&a, "threads", 2);
    int repeat = (int)rp_arg_int(&a, "repeat", 3);
    const char *models = rp_arg_str(&a, "models", "dit-tiny,dit-xl-2-256");
    rp_error err = {0};
    if (rp_args_finish(&a, &err)) { fprintf(stderr, "bench/engine: %s\n", err.msg); return 2; }
    openblas_set_num_threads(threads);

    cJSON *env = rp_env_collect();
    cJSON *host = cJSON_GetObjectItem(env, "host");
    printf("# cpu: %s | openblas %s core %s | threads %d | repro %s\n",
           cJSON_GetObjectItem(host, "cpu_model")->valuestring, openblas_get_config(),
           openblas_get_corename(), threads, REPRO_GIT_REV);
    cJSON_Delete(env);
    double peak = sgemm_peak(2048, 3);
    printf("# cblas_sgemm 2048^3: %.1f GFLOP/s (best of 3)\n", peak);
    printf("%-14s %6s %5s %10s %10s %10s %8s\n", "model", "batch", "depth", "seconds", "GFLOP",
           "GFLOP/s", "/sgemm");
    char buf[512];
    snprintf(buf, sizeof buf, "%s", models);
    int rc = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
        rc |= bench_dit(tok, strstr(tok, "tiny") ? repeat * 10 : repeat, peak);
    return rc;
}
