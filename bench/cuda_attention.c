/* bench/cuda_attention — TFLOP/s of every CUDA attention variant (engine/cuda/
 * cuda_attention.h) at the attention shapes of DiT-XL/2 (256 px), SD3-medium (1024 px)
 * and FLUX-dev (1024 px), against the math variant's two cuBLAS GEMMs alone, measured
 * in the same run on the same stream (the peer).
 *
 *   build/bench/cuda_attention [--warmup W] [--repeat R] [--only dit|sd3|flux] [--mask]
 *
 * Shapes (self-attention, Tq = Tk = T):
 *   dit   DiT-XL/2 256 px   B 2 (CFG pair)  H 16  T 256 (16x16 patches)           D 72
 *   sd3   SD3-medium 1024   B 2 (CFG pair)  H 24  T 4429 (4096 image + 333 text)  D 64
 *   flux  FLUX-dev 1024     B 1             H 24  T 4608 (4096 image + 512 text)  D 128
 * FLOPs = 4 B H T^2 D (Q K^T and P V; the softmax's exps are not counted, so a variant
 * that spends more on them shows a lower rate). Each figure is the median of R timed
 * calls (default 10; a cudaEvent pair around each) after W warmup calls (default 3).
 * The peer is S = scale Q K^T then O = P V by cublasGemmStridedBatchedEx with exactly
 * the math variant's arguments (fp32 storage, CUBLAS_COMPUTE_32F, or _FAST_TF32 for the
 * tf32 peer) and nothing between them: the ceiling of math, the rate a fused kernel is
 * measured against ("/peer" = variant rate / fp32 peer rate; the tf32 rows use the tf32
 * peer). --mask masks the last 1/8 of the keys (text padding).
 * Prints SKIP and exits 77 without a CUDA build or device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef REPRO_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>

#include "engine/cuda/cuda_attention.h"
#include "engine/cuda/cuda_info.h"
#include "engine/rng.h"
#include "harness/cli/args.h"

#define CK(call)                                                                                       \
    do {                                                                                               \
        cudaError_t ck_e_ = (call);                                                                    \
        if (ck_e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, "%s: %s at %s:%d\n", #call, cudaGetErrorString(ck_e_), __FILE__, __LINE__); \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)
#define CB(call)                                                                                       \
    do {                                                                                               \
        cublasStatus_t cb_s_ = (call);                                                                 \
        if (cb_s_ != CUBLAS_STATUS_SUCCESS) {                                                          \
            fprintf(stderr, "%s: %s at %s:%d\n", #call, cublasGetStatusString(cb_s_), __FILE__, __LINE__); \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

typedef struct shape { const char *key, *label; int B, H, T, D; } shape;
static const shape SHAPES[] = {
    {"dit", "DiT-XL/2 256px", 2, 16, 256, 72},
    {"sd3", "SD3-medium 1024", 2, 24, 4429, 64},
    {"flux", "FLUX-dev 1024", 1, 24, 4608, 128},
};
#define NSHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

typedef struct variant { const char *label; rp_cuda_attn_variant v; int qc, kc, tf32; } variant;
static const variant VARIANTS[] = {
    {"math", RP_CUDA_ATTN_MATH, 0, 0, 0},
    {"math tf32", RP_CUDA_ATTN_MATH, 0, 0, 1},
    {"split q1024", RP_CUDA_ATTN_SPLIT, 1024, 0, 0},
    {"split q256", RP_CUDA_ATTN_SPLIT, 256, 0, 0},
    {"flash 64x64", RP_CUDA_ATTN_FLASH, 64, 64, 0},
    {"flash 64x32", RP_CUDA_ATTN_FLASH, 64, 32, 0},
    {"flash 128x64", RP_CUDA_ATTN_FLASH, 128, 64, 0},
    {"flash 64x128", RP_CUDA_ATTN_FLASH, 64, 128, 0},
    {"flash 32x128", RP_CUDA_ATTN_FLASH, 32, 128, 0},
    {"flash 128x128", RP_CUDA_ATTN_FLASH, 128, 128, 0},
};
#define NVARIANTS ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static float median_ms(float *ms, int n) {
    qsort(ms, (size_t)n, sizeof *ms, cmp_float);
    return n % 2 ? ms[n / 2] : 0.5f * (ms[n / 2 - 1] + ms[n / 2]);
}

typedef struct bufs {
    float *q, *k, *v, *out, *S;
    unsigned char *mask;
} bufs;

/* The peer: the math variant's two GEMMs (attention_math.cu's run_sliced, one slice). */
static void peer_gemms(cublasHandle_t bl, const shape *s, const bufs *b, int tf32) {
    const int BH = s->B * s->H, T = s->T, D = s->D;
    const float scale = 1.0f / sqrtf((float)D), one = 1.0f, zero = 0.0f;
    const long long sqkv = (long long)T * D, sS = (long long)T * T;
    const cublasComputeType_t ct = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    CB(cublasGemmStridedBatchedEx(bl, CUBLAS_OP_T, CUBLAS_OP_N, T, T, D, &scale, b->k, CUDA_R_32F, D, sqkv, b->q,
                                  CUDA_R_32F, D, sqkv, &zero, b->S, CUDA_R_32F, T, sS, BH, ct, CUBLAS_GEMM_DEFAULT));
    CB(cublasGemmStridedBatchedEx(bl, CUBLAS_OP_N, CUBLAS_OP_N, D, T, T, &one, b->v, CUDA_R_32F, D, sqkv, b->S,
                                  CUDA_R_32F, T, sS, &zero, b->out, CUDA_R_32F, D, sqkv, BH, ct, CUBLAS_GEMM_DEFAULT));
}

/* Median ms of `repeat` timed calls; kind < 0: the peer (tf32 = -kind - 1), else VARIANTS[kind].
 * Returns a negative value when the variant refused the shape (message printed). */
static float time_it(cudaStream_t st, cublasHandle_t bl, rp_cuda_attn *h, int kind, const shape *s, const bufs *b,
                     int use_mask, int warmup, int repeat) {
    const float scale = 1.0f / sqrtf((float)s->D);
    float *ms = malloc(sizeof(float) * (size_t)repeat);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float result = -1.0f;
    for (int r = -warmup; r < repeat; r++) {
        CK(cudaEventRecord(e0, st));
        if (kind < 0) {
            peer_gemms(bl, s, b, -kind - 1);
        } else {
            const variant *vr = &VARIANTS[kind];
            rp_cuda_attn_opts o;
            memset(&o, 0, sizeof o);
            o.q_chunk = vr->qc;
            o.kv_chunk = vr->kc;
            o.tf32 = vr->tf32;
            rp_error err;
            rp_error_clear(&err);
            if (rp_cuda_attention(h, vr->v, &o, b->out, b->q, b->k, b->v, use_mask ? b->mask : NULL, s->B, s->H, s->T,
                                  s->T, s->D, scale, &err) != RP_OK) {
                printf("%-16s %-14s  refused: %s\n", s->label, vr->label, err.msg);
                goto done;
            }
        }
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        if (r >= 0) CK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    result = median_ms(ms, repeat);
done:
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    free(ms);
    return result;
}

int main(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    const int warmup = (int)rp_arg_int(&a, "warmup", 3);
    const int repeat = (int)rp_arg_int(&a, "repeat", 10);
    const char *only = rp_arg_str(&a, "only", NULL);
    const int use_mask = rp_arg_flag(&a, "mask");
    rp_error err;
    rp_error_clear(&err);
    int known = !only;
    for (int i = 0; i < NSHAPES && only; i++) known |= strcmp(only, SHAPES[i].key) == 0;
    if (rp_args_finish(&a, &err) != RP_OK || warmup < 0 || repeat < 1 || !known) {
        fprintf(stderr, "usage: cuda_attention [--warmup W] [--repeat R] [--only dit|sd3|flux] [--mask]%s%s\n",
                err.msg[0] ? "\n  " : "", err.msg);
        return 2;
    }
    if (rp_cuda_device_count() == 0) {
        printf("SKIP: no CUDA device visible (no driver, or CUDA_VISIBLE_DEVICES empty)\n");
        return 77;
    }
    rp_cuda_device_info info;
    char msg[256];
    if (rp_cuda_device_describe(0, &info, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s\n", msg);
        return 1;
    }
    CK(cudaSetDevice(0));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cublasHandle_t bl;
    CB(cublasCreate(&bl));
    CB(cublasSetStream(bl, st));
    CB(cublasSetMathMode(bl, CUBLAS_DEFAULT_MATH));
    rp_cuda_attn *h = NULL;
    if (rp_cuda_attn_create(&h, st, &err) != RP_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("cuda attention bench: %s (cc %d.%d, %d SMs), cuBLAS %d; median of %d after %d warmup%s\n", info.name,
           info.cc_major, info.cc_minor, info.sm_count, info.cublas_version, repeat, warmup,
           use_mask ? "; last 1/8 of keys masked" : "");
    printf("%-16s %-14s %2s %3s %5s %4s %10s %8s %7s  %s\n", "shape", "variant", "B", "H", "T", "D", "ms",
           "TFLOP/s", "/peer", "ran");
    for (int si = 0; si < NSHAPES; si++) {
        const shape *s = &SHAPES[si];
        if (only && strcmp(only, s->key) != 0) continue;
        const size_t n = (size_t)s->B * s->H * s->T * s->D;  /* (B, H, T, D) */
        const size_t ns = (size_t)s->B * s->H * s->T * s->T;  /* the peer's scores (B*H, T, T) */
        bufs b;
        memset(&b, 0, sizeof b);
        CK(cudaMalloc((void **)&b.q, n * sizeof(float)));
        CK(cudaMalloc((void **)&b.k, n * sizeof(float)));
        CK(cudaMalloc((void **)&b.v, n * sizeof(float)));
        CK(cudaMalloc((void **)&b.out, n * sizeof(float)));
        CK(cudaMalloc((void **)&b.S, ns * sizeof(float)));
        CK(cudaMalloc((void **)&b.mask, (size_t)s->B * s->T));
        CK(cudaMemset(b.S, 0, ns * sizeof(float)));
        float *host = malloc(n * sizeof(float));
        unsigned char *hm = malloc((size_t)s->B * s->T);
        if (!host || !hm) { fprintf(stderr, "out of host memory\n"); return 1; }
        float *dst[3] = {b.q, b.k, b.v};
        for (int t = 0; t < 3; t++) {
            rp_randn(host, n, 17, (uint64_t)t, 0);
            CK(cudaMemcpy(dst[t], host, n * sizeof(float), cudaMemcpyHostToDevice));
        }
        for (int bb = 0; bb < s->B; bb++)
            for (int j = 0; j < s->T; j++) hm[(size_t)bb * s->T + j] = j < s->T - s->T / 8;
        CK(cudaMemcpy(b.mask, hm, (size_t)s->B * s->T, cudaMemcpyHostToDevice));
        free(host);
        free(hm);

        const double tflop = 4.0 * s->B * s->H * (double)s->T * s->T * s->D / 1e12;
        const float peer32 = time_it(st, bl, h, -1, s, &b, use_mask, warmup, repeat);
        const float peer_tf = time_it(st, bl, h, -2, s, &b, use_mask, warmup, repeat);
        printf("%-16s %-14s %2d %3d %5d %4d %10.4f %8.2f %7.3f  %s\n", s->label, "peer: 2 GEMMs", s->B, s->H, s->T,
               s->D, peer32, tflop / (peer32 * 1e-3), 1.0, "cublasGemmStridedBatchedEx x2, fp32 (no tf32)");
        printf("%-16s %-14s %2d %3d %5d %4d %10.4f %8.2f %7.3f  %s\n", s->label, "peer tf32", s->B, s->H, s->T, s->D,
               peer_tf, tflop / (peer_tf * 1e-3), 1.0, "cublasGemmStridedBatchedEx x2, CUBLAS_COMPUTE_32F_FAST_TF32");
        CK(cudaFree(b.S));  /* math allocates its own scores */
        b.S = NULL;
        for (int vi = 0; vi < NVARIANTS; vi++) {
            const float t = time_it(st, bl, h, vi, s, &b, use_mask, warmup, repeat);
            if (t < 0) continue;
            const float peer = VARIANTS[vi].tf32 ? peer_tf : peer32;
            printf("%-16s %-14s %2d %3d %5d %4d %10.4f %8.2f %7.3f  %s\n", s->label, VARIANTS[vi].label, s->B, s->H,
                   s->T, s->D, t, tflop / (t * 1e-3), peer / t, rp_cuda_attn_last_desc(h));
            fflush(stdout);
        }
        CK(cudaFree(b.q));
        CK(cudaFree(b.k));
        CK(cudaFree(b.v));
        CK(cudaFree(b.out));
        CK(cudaFree(b.mask));
    }
    rp_cuda_attn_destroy(h);
    CB(cublasDestroy(bl));
    CK(cudaStreamDestroy(st));
    return 0;
}
#else
int main(void) {
    printf("SKIP: this build has no CUDA (nvcc was not found at configure time)\n");
    return 77;
}
#endif
