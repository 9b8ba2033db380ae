/* bench/gemm_invariant — rp_gemm_invariant (numerics: invariant) against
 * cblas_sgemm at the model's nn.Linear shapes: x (M, K) W^T, W (N, K).
 *
 *   build/bench/gemm_invariant [--threads 1,2] [--repeat R] [--flux-rows M] [--dit-rows M]
 *
 * Shapes (N, K): DiT-XL/2 256 px, batch 2 (M = 512 tokens): proj (1152, 1152), qkv
 * (3456, 1152), fc1 (4608, 1152), fc2 (1152, 4608); FLUX-dev double/single block (M = 1024 by default; 4608 is 1024 px with the
 * text, slow on a small machine): (3072, 3072), qkv (9216, 3072), fc1 (12288, 3072),
 * fc2 (3072, 12288). Each time is the best of R samples (default 3) of >= 0.25 s,
 * after one warm-up call;
 * OpenBLAS gets the same thread count (openblas_set_num_threads through
 * rp_ctx_apply). OpenBLAS's pool threads keep spinning for a while after each call
 * (GOTO thread timeout, ~0.1 s) and would take CPU from the invariant GEMM's own
 * threads, which the engine never runs beside OpenBLAS calls; so the invariant runs
 * start after a 0.5 s pause. Prints the machine (CPU, SIMD flags, OpenBLAS core and config,
 * from the environment record of harness/sweep/env.c), then per shape and thread count
 * GFLOP/s of both and the ratio of times invariant / OpenBLAS. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/ctx.h"
#include "engine/ops.h"
#include "engine/rng.h"
#include "harness/cli/args.h"
#include "harness/sweep/env.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "1,2" -> {1, 2}; 0 on a bad list. */
static int parse_list(const char *s, int *out, int cap) {
    int n = 0;
    while (*s && n < cap) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 256) return 0;
        out[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return 0;
    }
    return n;
}

static const char *env_str(const cJSON *env, const char *obj, const char *key) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(env, obj);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "unknown";
}

typedef struct shape { const char *name; int M, N, K; } shape;

static void run_once(int which, const shape *s, const float *X, const float *W, float *C,
                     int threads) {
    if (which)
        rp_gemm_invariant(0, 1, s->M, s->N, s->K, 1.0f, X, s->K, W, s->K, 0.0f, C, s->N, threads);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->M, s->N, s->K, 1.0f, X, s->K, W,
                    s->K, 0.0f, C, s->N);
}

/* Seconds per product, best of `repeat` samples; which = 0 OpenBLAS, 1 invariant.
 * A sample repeats the product for at least 0.25 s (count from the warm-up call), so
 * the DiT shapes (a few ms each) are not one scheduler tick's worth of noise. */
static double time_gemm(int which, const shape *s, const float *X, const float *W, float *C,
                        int threads, int repeat) {
    double t0 = now();
    run_once(which, s, X, W, C, threads);
    double warm = now() - t0;
    int n = warm > 0 ? (int)(0.25 / warm) + 1 : 1;
    double best = 1e30;
    for (int r = 0; r < repeat; r++) {
        t0 = now();
        for (int i = 0; i < n; i++) run_once(which, s, X, W, C, threads);
        double dt = (now() - t0) / n;
        if (dt < best) best = dt;
    }
    return best;
}

int main(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    const char *threads_s = rp_arg_str(&a, "threads", "1,2");
    const int repeat = (int)rp_arg_int(&a, "repeat", 3);
    const int flux_m = (int)rp_arg_int(&a, "flux-rows", 1024);
    const int dit_m = (int)rp_arg_int(&a, "dit-rows", 512);
    rp_error err;
    rp_error_clear(&err);
    int threads[8];
    const int nt = parse_list(threads_s, threads, 8);
    if (rp_args_finish(&a, &err) != RP_OK || !nt || repeat < 1 || flux_m < 1 || dit_m < 1) {
        fprintf(stderr, "usage: gemm_invariant [--threads 1,2] [--repeat R] [--flux-rows M] "
                        "[--dit-rows M]%s%s\n", err.msg[0] ? "\n  " : "", err.msg);
        return 2;
    }
    const shape shapes[] = {
        {"dit proj", dit_m, 1152, 1152},    {"dit qkv", dit_m, 3456, 1152},
        {"dit fc1", dit_m, 4608, 1152},     {"dit fc2", dit_m, 1152, 4608},
        {"flux proj", flux_m, 3072, 3072},  {"flux qkv", flux_m, 9216, 3072},
        {"flux fc1", flux_m, 12288, 3072},  {"flux fc2", flux_m, 3072, 12288},
    };
    const int ns = (int)(sizeof shapes / sizeof shapes[0]);
    size_t mx = 0, mw = 0, mc = 0;
    for (int i = 0; i < ns; i++) {
        size_t x = (size_t)shapes[i].M * shapes[i].K, w = (size_t)shapes[i].N * shapes[i].K,
               c = (size_t)shapes[i].M * shapes[i].N;
        mx = x > mx ? x : mx; mw = w > mw ? w : mw; mc = c > mc ? c : mc;
    }
    float *X = malloc(sizeof(float) * mx), *W = malloc(sizeof(float) * mw), *C = malloc(sizeof(float) * mc);
    if (!X || !W || !C) { fprintf(stderr, "gemm_invariant: out of memory\n"); return 1; }
    rp_randn(X, mx, 1, 0, 0);
    rp_randn(W, mw, 2, 0, 0);

    cJSON *env = rp_env_collect();
    printf("# cpu: %s (%s)\n", env_str(env, "host", "cpu_model"), env_str(env, "host", "cpu_simd"));
    printf("# openblas: core %s, config %s\n", env_str(env, "openblas", "core"),
           env_str(env, "openblas", "config"));
    printf("# x (M, K) W^T, W (N, K); best of %d; ratio = invariant time / OpenBLAS time\n", repeat);
    cJSON_Delete(env);
    printf("%-10s %5s %6s %6s %3s %12s %12s %7s\n", "shape", "M", "N", "K", "thr", "openblas GF/s",
           "invariant GF/s", "ratio");
    for (int ti = 0; ti < nt; ti++) {
        rp_ctx ctx = rp_ctx_default();
        ctx.threads = threads[ti];
        rp_ctx_apply(&ctx);
        for (int i = 0; i < ns; i++) {
            const shape *s = &shapes[i];
            double flop = 2.0 * s->M * (double)s->N * s->K;
            double tb = time_gemm(0, s, X, W, C, threads[ti], repeat);
            nanosleep(&(struct timespec){0, 500000000L}, NULL);
            double tv = time_gemm(1, s, X, W, C, threads[ti], repeat);
            printf("%-10s %5d %6d %6d %3d %12.1f %12.1f %7.3f\n", s->name, s->M, s->N, s->K,
                   threads[ti], flop / tb / 1e9, flop / tv / 1e9, tv / tb);
            fflush(stdout);
        }
    }
    free(X); free(W); free(C);
    return 0;
}
