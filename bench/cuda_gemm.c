/* bench/cuda_gemm — TFLOP/s of rp_cuda_gemm (cuBLASLt, engine/cuda/cuda_gemm.h) on the
 * transformers' linear-layer shapes, per precision and mode, and the ratio to plain
 * cublasGemmEx (CUBLAS_GEMM_DEFAULT: cuBLAS's own heuristic) on the same shapes,
 * same compute type, measured in the same run. The ratio is the result.
 *
 *   build/bench/cuda_gemm [--repeat N] [--warmup N] [--all] [--precision fp32,tf32,bf16,fp16]
 *                         [--mode deterministic,fast] [--tokens T] [--batch B]
 *
 * Shapes are nn.Linear calls as rp_linear makes them: in (M, K) @ W^T, W (N, K), i.e.
 * transA = 0, transB = 1. M = tokens x batch:
 *   DiT-XL/2 (hidden 1152): M = 512 tokens x 2 (a CFG pair) = 1024; qkv 1152->3456,
 *            attn.proj 1152->1152, mlp.fc1 1152->4608, mlp.fc2 4608->1152.
 *   FLUX     (hidden 3072): M = 4608 (4096 image + 512 text tokens); qkv 3072->9216,
 *            proj 3072->3072, mlp.fc1 3072->12288, mlp.fc2 12288->3072, single-block
 *            proj_out 15360->3072.
 *   --all: every (N, K) pair from {1152, 3456, 4608} (DiT) and {3072, 9216, 12288,
 *          15360} (FLUX) instead of the layers.
 *
 * With fp32 among the precisions, last: numerics invariant's GEMM (rp_cuda_gemm_invariant,
 * engine/cuda/gemm_invariant.cu: CUDA cores, one fmaf chain per element, bitwise the CPU's)
 * against cublasGemmEx fp32 (CUBLAS_COMPUTE_32F) on the same shapes: issue 19's GPU cost.
 *
 * Timing: per call, a cudaEvent pair on the stream; `warmup` untimed calls, then
 * `repeat` timed ones, median. The timed calls are enqueued while the stream is held
 * by a host function (released once all are queued), so each event pair measures
 * the GPU's time for the call, not the host's launch latency; the host cost per call
 * (validation, cache lookup, heuristic in fast mode) is reported separately.
 * FLOPs = 2 M N K.
 *
 * Fairness notes: in bf16/fp16 rp_cuda_gemm takes fp32 inputs and rounds them on the
 * device at every call (two conversion kernels, included in its time); the baseline is
 * handed inputs converted once beforehand.
 *
 * Constant-operand cache (when bf16 is among the precisions): one DiT-XL/2-like linear,
 * M = 512 (a 256x256 image's 256 tokens x 2, a CFG pair), N = 4608, K = 1152 (mlp.fc1),
 * timed three ways per mode: rp_cuda_gemm (A and the weight B
 * rounded at every call), rp_cuda_gemm_const (B rounded once at the first, untimed,
 * warmup call, then only A per call) and cublasGemmEx on pre-converted inputs; plus
 * whether the two of ours gave bitwise the same C. FP32 in fast mode computes as TF32 (the
 * module's contract), so its baseline is cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32.
 *
 * Linking: bench/<name>.c link repro_core (every folder's library), in which
 * repro_engine_cuda links cudart, cublas and cublasLt when CUDA is on, and the engine's
 * core after it (its objects call rp_error_set); without CUDA this file compiles to a
 * SKIP (exit 77). */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef REPRO_HAVE_CUDA
int main(void) {
    printf("SKIP: this build has no CUDA (nvcc was not found at configure time)\n");
    return 77;
}
#else
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "engine/cuda/cuda_gemm.h"

#define CU(call)                                                                                    \
    do {                                                                                            \
        cudaError_t e_ = (call);                                                                    \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, "cuda_gemm: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

typedef struct bshape {
    const char *model, *layer;
    int M, N, K;
} bshape;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- holding the stream while the timed calls are queued --------------------------- */

static atomic_int g_release;

/* Runs on a CUDA driver thread: blocks the stream until the main thread has queued
 * everything (or 30 s have passed: never hang a benchmark). No CUDA calls here. */
static void CUDART_CB hold_stream(void *arg) {
    (void)arg;
    double t0 = now();
    while (!atomic_load(&g_release) && now() - t0 < 30.0) {
    }
}

/* ---- the two contenders ------------------------------------------------------------ */

typedef struct runner {
    int ours;                 /* 1: rp_cuda_gemm (rp_cuda_gemm_const when cnst); 2: rp_cuda_gemm_invariant
                                 (on st); 0: cublasGemmEx */
    cudaStream_t st;
    int cnst;
    rp_cuda_gemm_ctx *g;
    cublasHandle_t h;
    cublasComputeType_t ct;
    cudaDataType_t ab;
    const void *A, *B;        /* (M, K) and (N, K), row-major, ld K */
    float *C;                 /* (M, N) */
    int M, N, K;
} runner;

static int run_once(const runner *r) {
    const float alpha = 1.0f, beta = 0.0f;
    if (r->ours == 2) {
        rp_error err = {0};
        if (rp_cuda_gemm_invariant(0, 1, r->M, r->N, r->K, alpha, (const float *)r->A, r->K, (const float *)r->B, r->K,
                                   beta, r->C, r->N, 0, r->st, &err) != RP_OK) {
            fprintf(stderr, "cuda_gemm: rp_cuda_gemm_invariant %dx%dx%d: %s\n", r->M, r->N, r->K, err.msg);
            return 1;
        }
        return 0;
    }
    if (r->ours) {
        rp_error err = {0};
        if ((r->cnst ? rp_cuda_gemm_const : rp_cuda_gemm)(r->g, 0, 1, r->M, r->N, r->K, alpha, (const float *)r->A,
                                                          r->K, (const float *)r->B, r->K, beta, r->C, r->N,
                                                          &err) != RP_OK) {
            fprintf(stderr, "cuda_gemm: %s %dx%dx%d: %s (%s)\n", r->cnst ? "rp_cuda_gemm_const" : "rp_cuda_gemm",
                    r->M, r->N, r->K, err.msg, err.where);
            return 1;
        }
        return 0;
    }
    /* row-major C = A B^T as column-major C^T (N, M) = B^T^T.. : cuBLAS A = our B (op T),
     * cuBLAS B = our A (op N), m = N, n = M (engine/cuda/cuda_gemm.h) */
    cublasStatus_t s = cublasGemmEx(r->h, CUBLAS_OP_T, CUBLAS_OP_N, r->N, r->M, r->K, &alpha, r->B, r->ab, r->K,
                                    r->A, r->ab, r->K, &beta, r->C, CUDA_R_32F, r->N, r->ct, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cuda_gemm: cublasGemmEx %dx%dx%d: %s\n", r->M, r->N, r->K, cublasGetStatusString(s));
        return 1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median GPU ms per call and host us per call. Returns 0 on success. */
static int measure(const runner *r, cudaStream_t st, int warmup, int repeat, cudaEvent_t *ev, double *ms,
                   double *host_us) {
    for (int i = 0; i < warmup; i++)
        if (run_once(r)) return 1;
    CU(cudaStreamSynchronize(st));
    atomic_store(&g_release, 0);
    CU(cudaLaunchHostFunc(st, hold_stream, NULL));
    double t0 = now();
    int bad = 0;
    for (int i = 0; i < repeat && !bad; i++) {
        CU(cudaEventRecord(ev[2 * i], st));
        bad = run_once(r);
        CU(cudaEventRecord(ev[2 * i + 1], st));
    }
    *host_us = (now() - t0) / repeat * 1e6;
    atomic_store(&g_release, 1);
    CU(cudaStreamSynchronize(st));
    if (bad) return 1;
    double *t = malloc(sizeof(double) * (size_t)repeat);
    if (!t) return 1;
    for (int i = 0; i < repeat; i++) {
        float f = 0;
        CU(cudaEventElapsedTime(&f, ev[2 * i], ev[2 * i + 1]));
        t[i] = f;
    }
    qsort(t, (size_t)repeat, sizeof(double), cmp_double);
    *ms = repeat % 2 ? t[repeat / 2] : 0.5 * (t[repeat / 2 - 1] + t[repeat / 2]);
    free(t);
    return 0;
}

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* n uniform floats in [-1, 1) on the device (generated on the host in chunks). */
static float *device_random(size_t n, uint64_t seed) {
    float *d = NULL;
    CU(cudaMalloc((void **)&d, sizeof(float) * n));
    size_t chunk = (size_t)1 << 22;
    float *h = malloc(sizeof(float) * chunk);
    if (!h) {
        fprintf(stderr, "cuda_gemm: out of host memory\n");
        exit(1);
    }
    uint64_t s = seed;
    for (size_t off = 0; off < n; off += chunk) {
        size_t m = n - off < chunk ? n - off : chunk;
        for (size_t i = 0; i < m; i++) h[i] = (float)((rng_next(&s) >> 40) * 0x1p-23 - 1.0);
        CU(cudaMemcpy(d + off, h, sizeof(float) * m, cudaMemcpyHostToDevice));
    }
    free(h);
    return d;
}

/* "a,b,c" contains name */
static int in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: cuda_gemm [--repeat N] [--warmup N] [--all] [--precision fp32,tf32,bf16,fp16]\n"
                    "                 [--mode deterministic,fast] [--tokens T] [--batch B]\n");
}

int main(int argc, char **argv) {
    int repeat = 20, warmup = 5, all = 0, tokens = 512, batch = 2;
    const char *precs = "fp32,tf32,bf16,fp16", *modes = "deterministic,fast";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--all")) all = 1;
        else if (v && !strcmp(a, "--repeat")) repeat = atoi(v), i++;
        else if (v && !strcmp(a, "--warmup")) warmup = atoi(v), i++;
        else if (v && !strcmp(a, "--precision")) precs = v, i++;
        else if (v && !strcmp(a, "--mode")) modes = v, i++;
        else if (v && !strcmp(a, "--tokens")) tokens = atoi(v), i++;
        else if (v && !strcmp(a, "--batch")) batch = atoi(v), i++;
        else {
            usage();
            return 2;
        }
    }
    if (repeat < 1 || repeat > 1000 || warmup < 1 || tokens < 1 || batch < 1) {
        fprintf(stderr, "cuda_gemm: --repeat must be 1..1000, --warmup >= 1 (the first call sizes scratch), --tokens and --batch >= 1\n");
        return 2;
    }
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        cudaGetLastError();
        printf("SKIP: no CUDA device visible (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    rp_error err;
    rp_error_clear(&err);
    if (rp_cuda_gemm_workspace_config(&err) != RP_OK) { /* before any cuBLAS handle */
        fprintf(stderr, "cuda_gemm: %s\n", err.msg);
        return 1;
    }

    /* shapes */
    const int dit_m = tokens * batch, flux_m = 4608;
    static const int dit_nk[] = {1152, 3456, 4608}, flux_nk[] = {3072, 9216, 12288, 15360};
    bshape shapes[64];
    int ns = 0;
    if (!all) {
        const bshape layers[] = {
            {"dit-xl-2", "qkv", dit_m, 3456, 1152},        {"dit-xl-2", "attn.proj", dit_m, 1152, 1152},
            {"dit-xl-2", "mlp.fc1", dit_m, 4608, 1152},    {"dit-xl-2", "mlp.fc2", dit_m, 1152, 4608},
            {"flux", "qkv", flux_m, 9216, 3072},           {"flux", "proj", flux_m, 3072, 3072},
            {"flux", "mlp.fc1", flux_m, 12288, 3072},      {"flux", "mlp.fc2", flux_m, 3072, 12288},
            {"flux", "single.proj_out", flux_m, 3072, 15360},
        };
        for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) shapes[ns++] = layers[i];
    } else {
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) shapes[ns++] = (bshape){"dit-xl-2", "-", dit_m, dit_nk[i], dit_nk[j]};
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) shapes[ns++] = (bshape){"flux", "-", flux_m, flux_nk[i], flux_nk[j]};
    }
    /* the constant-operand cache row: a DiT-XL/2 mlp.fc1 */
    const bshape cshape = {"dit-xl-2", "mlp.fc1", 512, 4608, 1152};
    size_t max_a = (size_t)cshape.M * cshape.K, max_b = (size_t)cshape.N * cshape.K,
           max_c = (size_t)cshape.M * cshape.N;
    for (int i = 0; i < ns; i++) {
        size_t a = (size_t)shapes[i].M * shapes[i].K, b = (size_t)shapes[i].N * shapes[i].K,
               c = (size_t)shapes[i].M * shapes[i].N;
        if (a > max_a) max_a = a;
        if (b > max_b) max_b = b;
        if (c > max_c) max_c = c;
    }

    struct cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, 0));
    printf("device 0: %s, %d SMs, cc %d.%d; cuBLASLt %zu; %s\n", prop.name, prop.multiProcessorCount, prop.major,
           prop.minor, cublasLtGetVersion(), rp_cuda_gemm_workspace_config_note());
    printf("warmup %d, median of %d; transA=0 transB=1 (nn.Linear); ratio = ours / cublasGemmEx(DEFAULT)\n", warmup,
           repeat);

    float *dA = device_random(max_a, 1), *dB = device_random(max_b, 2), *dC = NULL;
    void *dA16 = NULL, *dB16 = NULL;
    CU(cudaMalloc((void **)&dC, sizeof(float) * max_c));
    CU(cudaMalloc(&dA16, 2 * max_a));
    CU(cudaMalloc(&dB16, 2 * max_b));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cuda_gemm: cublasCreate failed\n");
        return 1;
    }
    cudaEvent_t *ev = malloc(sizeof(cudaEvent_t) * 2 * (size_t)repeat);
    if (!ev) return 1;
    for (int i = 0; i < 2 * repeat; i++) CU(cudaEventCreate(&ev[i]));

    printf("%-9s %-16s %5s %6s %6s %-4s %-13s %9s %9s %6s %9s  %s\n", "model", "layer", "M", "N", "K", "prec", "mode",
           "ours TF/s", "cuBLAS", "ratio", "host us", "algo (ours)");
    int failed = 0;
    for (int p = 0; p < RP_CUDA_PREC_COUNT; p++) {
        rp_cuda_prec prec = (rp_cuda_prec)p;
        if (!in_list(precs, rp_cuda_prec_name(prec))) continue;
        for (int m = 0; m < RP_CUDA_GEMM_MODE_COUNT; m++) {
            rp_cuda_gemm_mode mode = (rp_cuda_gemm_mode)m;
            if (!in_list(modes, rp_cuda_gemm_mode_name(mode))) continue;
            rp_cuda_gemm_opts o = rp_cuda_gemm_opts_default();
            o.precision = prec;
            o.mode = mode;
            rp_cuda_gemm_ctx *g = NULL;
            if (rp_cuda_gemm_create(&o, &g, &err) != RP_OK) {
                fprintf(stderr, "cuda_gemm: %s\n", err.msg);
                return 1;
            }
            cudaStream_t st = rp_cuda_gemm_stream(g);
            cublasSetStream(h, st);
            const int half = prec == RP_CUDA_PREC_BF16 || prec == RP_CUDA_PREC_FP16;
            const int tf32 = prec == RP_CUDA_PREC_TF32 || (prec == RP_CUDA_PREC_FP32 && mode == RP_CUDA_GEMM_FAST);
            double log_ratio = 0;
            int n_ratio = 0;
            for (int i = 0; i < ns; i++) {
                const bshape *s = &shapes[i];
                runner ours = {1, NULL, 0, g, h, CUBLAS_COMPUTE_32F, CUDA_R_32F, dA, dB, dC, s->M, s->N, s->K};
                runner base = ours;
                base.ours = 0;
                base.ct = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
                if (half) { /* the baseline gets its inputs converted beforehand (untimed) */
                    base.ab = prec == RP_CUDA_PREC_BF16 ? CUDA_R_16BF : CUDA_R_16F;
                    if (rp_cuda_convert_f32(dA16, s->K, prec, dA, s->M, s->K, s->K, st, &err) != RP_OK ||
                        rp_cuda_convert_f32(dB16, s->K, prec, dB, s->N, s->K, s->K, st, &err) != RP_OK) {
                        fprintf(stderr, "cuda_gemm: %s\n", err.msg);
                        return 1;
                    }
                    base.A = dA16;
                    base.B = dB16;
                }
                double ms_o = 0, ms_b = 0, hu_o = 0, hu_b = 0;
                if (measure(&ours, st, warmup, repeat, ev, &ms_o, &hu_o) ||
                    measure(&base, st, warmup, repeat, ev, &ms_b, &hu_b)) {
                    failed = 1;
                    continue;
                }
                char algo[400];
                rp_cuda_gemm_last_algo(g, algo, sizeof algo);
                const double fl = 2.0 * s->M * (double)s->N * s->K;
                const double tf_o = fl / (ms_o * 1e-3) / 1e12, tf_b = fl / (ms_b * 1e-3) / 1e12;
                printf("%-9s %-16s %5d %6d %6d %-4s %-13s %9.1f %9.1f %6.3f %4.0f/%-4.0f  %s\n", s->model, s->layer, s->M,
                       s->N, s->K, rp_cuda_prec_name(prec), rp_cuda_gemm_mode_name(mode), tf_o, tf_b, tf_o / tf_b, hu_o,
                       hu_b, algo);
                fflush(stdout);
                log_ratio += log(tf_o / tf_b);
                n_ratio++;
            }
            if (n_ratio)
                printf("%-9s %-16s %5s %6s %6s %-4s %-13s %9s %9s %6.3f  (geometric mean ratio)\n", "all", "-", "", "",
                       "", rp_cuda_prec_name(prec), rp_cuda_gemm_mode_name(mode), "", "", exp(log_ratio / n_ratio));
            cublasSetStream(h, NULL); /* the ctx's stream dies with it */
            rp_cuda_gemm_destroy(g);
        }
    }
    if (in_list(precs, "bf16")) {
        const bshape *s = &cshape;
        const rp_cuda_prec prec = RP_CUDA_PREC_BF16;
        printf("\nconstant-operand cache (rp_cuda_gemm_const): B = the weight, rounded once instead of per call\n");
        printf("%-9s %-16s %5s %6s %6s %-4s %-13s %9s %9s %9s %8s %9s %9s  %s\n", "model", "layer", "M", "N", "K",
               "prec", "mode", "convert", "cached", "cuBLAS", "speedup", "TF/s", "cache B", "C bitwise");
        float *c1 = malloc(sizeof(float) * (size_t)s->M * s->N), *c2 = malloc(sizeof(float) * (size_t)s->M * s->N);
        if (!c1 || !c2) return 1;
        for (int m = 0; m < RP_CUDA_GEMM_MODE_COUNT; m++) {
            rp_cuda_gemm_mode mode = (rp_cuda_gemm_mode)m;
            if (!in_list(modes, rp_cuda_gemm_mode_name(mode))) continue;
            rp_cuda_gemm_opts o = rp_cuda_gemm_opts_default();
            o.precision = prec;
            o.mode = mode;
            rp_cuda_gemm_ctx *g = NULL;
            if (rp_cuda_gemm_create(&o, &g, &err) != RP_OK) {
                fprintf(stderr, "cuda_gemm: %s\n", err.msg);
                return 1;
            }
            cudaStream_t st = rp_cuda_gemm_stream(g);
            cublasSetStream(h, st);
            runner plain = {1, NULL, 0, g, h, CUBLAS_COMPUTE_32F, CUDA_R_32F, dA, dB, dC, s->M, s->N, s->K};
            runner cached = plain, base = plain;
            cached.cnst = 1;
            base.ours = 0;
            base.ab = CUDA_R_16BF;
            if (rp_cuda_convert_f32(dA16, s->K, prec, dA, s->M, s->K, s->K, st, &err) != RP_OK ||
                rp_cuda_convert_f32(dB16, s->K, prec, dB, s->N, s->K, s->K, st, &err) != RP_OK) {
                fprintf(stderr, "cuda_gemm: %s\n", err.msg);
                return 1;
            }
            base.A = dA16;
            base.B = dB16;
            double ms_p = 0, ms_c = 0, ms_b = 0, hu = 0;
            if (measure(&plain, st, warmup, repeat, ev, &ms_p, &hu)) {
                failed = 1;
            } else {
                CU(cudaMemcpy(c1, dC, sizeof(float) * (size_t)s->M * s->N, cudaMemcpyDeviceToHost));
                if (measure(&cached, st, warmup, repeat, ev, &ms_c, &hu) ||
                    measure(&base, st, warmup, repeat, ev, &ms_b, &hu)) {
                    failed = 1;
                } else {
                    /* the last timed calls wrote C: rerun the cached one alone to compare */
                    if (run_once(&cached)) return 1;
                    CU(cudaStreamSynchronize(st));
                    CU(cudaMemcpy(c2, dC, sizeof(float) * (size_t)s->M * s->N, cudaMemcpyDeviceToHost));
                    const int same = memcmp(c1, c2, sizeof(float) * (size_t)s->M * s->N) == 0;
                    const double fl = 2.0 * s->M * (double)s->N * s->K;
                    printf("%-9s %-16s %5d %6d %6d %-4s %-13s %7.4fms %7.4fms %7.4fms %7.2fx %9.1f %7.1fMB  %s\n",
                           s->model, s->layer, s->M, s->N, s->K, rp_cuda_prec_name(prec),
                           rp_cuda_gemm_mode_name(mode), ms_p, ms_c, ms_b, ms_p / ms_c, fl / (ms_c * 1e-3) / 1e12,
                           rp_cuda_gemm_const_bytes(g) / 1e6,
                           same ? "identical" : (mode == RP_CUDA_GEMM_FAST ? "differs (fast mode)" : "DIFFERS"));
                    if (!same && mode == RP_CUDA_GEMM_DETERMINISTIC) failed = 1;
                    fflush(stdout);
                }
            }
            cublasSetStream(h, NULL);
            rp_cuda_gemm_destroy(g);
        }
        free(c1);
        free(c2);
    }
    if (in_list(precs, "fp32")) { /* numerics invariant's GEMM: one fmaf chain per element */
        printf("\nnumerics invariant (rp_cuda_gemm_invariant: CUDA cores, each element one fmaf chain, bitwise the "
               "CPU's) vs cublasGemmEx fp32 (CUBLAS_COMPUTE_32F)\n");
        printf("%-9s %-16s %5s %6s %6s %9s %9s %6s\n", "model", "layer", "M", "N", "K", "inv TF/s", "cuBLAS", "ratio");
        cudaStream_t st;
        CU(cudaStreamCreate(&st));
        cublasSetStream(h, st);
        double log_ratio = 0;
        int n_ratio = 0;
        for (int i = 0; i < ns; i++) {
            const bshape *s = &shapes[i];
            runner inv = {2, st, 0, NULL, h, CUBLAS_COMPUTE_32F, CUDA_R_32F, dA, dB, dC, s->M, s->N, s->K};
            runner base = inv;
            base.ours = 0;
            double ms_i = 0, ms_b = 0, hu = 0;
            if (measure(&inv, st, warmup, repeat, ev, &ms_i, &hu) || measure(&base, st, warmup, repeat, ev, &ms_b, &hu)) {
                failed = 1;
                continue;
            }
            const double fl = 2.0 * s->M * (double)s->N * s->K;
            const double tf_i = fl / (ms_i * 1e-3) / 1e12, tf_b = fl / (ms_b * 1e-3) / 1e12;
            printf("%-9s %-16s %5d %6d %6d %9.1f %9.1f %6.3f\n", s->model, s->layer, s->M, s->N, s->K, tf_i, tf_b,
                   tf_i / tf_b);
            fflush(stdout);
            log_ratio += log(tf_i / tf_b);
            n_ratio++;
        }
        if (n_ratio) printf("%-9s %-16s %5s %6s %6s %9s %9s %6.3f  (geometric mean ratio)\n", "all", "-", "", "", "",
                            "", "", exp(log_ratio / n_ratio));
        cublasSetStream(h, NULL);
        CU(cudaStreamDestroy(st));
    }
    for (int i = 0; i < 2 * repeat; i++) cudaEventDestroy(ev[i]);
    free(ev);
    cublasDestroy(h);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    cudaFree(dA16);
    cudaFree(dB16);
    return failed;
}
#endif
