/* cuda_attention.h — scaled dot-product attention on a CUDA device: the GPU
 * counterparts of engine/attention/ (math, split, flash), same contract.
 *
 * Contract (identical to rp_attention's, engine/attention/attention.h):
 *   q (B, H, Tq, D), k (B, H, Tk, D), v (B, H, Tk, D)  ->  out (B, H, Tq, D)
 *   out = softmax(scale * q k^T + mask) v          row-major, contiguous, device memory
 *   key_mask (B, Tk) bytes in device memory: nonzero = attend, 0 = masked out (text
 *   padding); NULL = every key attends. The mask is per batch item, shared by all heads.
 *   scale is the caller's (models pass 1/sqrt(D)); it multiplies the fp32 dot products.
 *   A query row whose keys are all masked (or Tk == 0) gets zeros, never NaN.
 * Inputs q, k, v are fp32, or bf16 (opts->dtype): bf16 values are converted exactly to
 * fp32 on load and every later operation is the fp32 one, so a bf16 call equals the
 * fp32 call on the same (bf16-representable) values. out is always fp32.
 *
 *   math   per (b, h) as engine/attention/math.c: S (Tq, Tk) = scale q k^T by one
 *          cublasGemmStridedBatchedEx over all B*H (alpha = scale), key mask -> -Inf,
 *          P = softmax over each row (one thread block per row: fp32 exp(s - max) with
 *          the CPU's rp_expf bit for bit, double sum in a fixed tree, times the double
 *          reciprocal, rounded once to fp32 — rp_softmax_rows' arithmetic; only the
 *          double sum's order differs from the CPU's 4 lanes), out (Tq, D) = P v by a
 *          second strided-batched GEMM. Scratch: B*H*Tq*Tk floats (+ fp32 copies of q,
 *          k, v for bf16 inputs), kept by the handle (it grows, never shrinks).
 *   split  math over query slices of q_chunk rows (ComfyUI/Fooocus split attention,
 *          engine/attention/split.c): same per-row arithmetic, scratch B*H*q_chunk*Tk
 *          floats. Whether a row's bits depend on the slicing is a property of cuBLAS
 *          (its kernel choice per GEMM shape), not of this code.
 *   flash  FlashAttention-2 forward, as engine/attention/flash.c per row: per query tile
 *          (q_chunk rows) and per key/value tile (kv_chunk keys, in key order) with fp32
 *          running max m, running sum l and unnormalised accumulator O:
 *            S = scale Q K_t^T; masked and past-the-end keys -> -Inf;
 *            m' = max(m, rowmax S); P = exp(S - m'); alpha = exp(m - m');
 *            l = alpha l + rowsum P; O = alpha O + P V_t; m = m'
 *          out = O * (1 / l) once at the end; l == 0 (every key masked) -> zeros. The
 *          exp is rp_expf's sequence of IEEE operations (no FMA contraction), and rowsum
 *          uses the CPU's lane order (8 lanes, key j in lane j mod 8, combined
 *          ((0+1)+(2+3))+((4+5)+(6+7))), so for equal scores the GPU and CPU flash agree
 *          bit for bit in P, l and alpha; the dot products (Q K^T, P V) are FMA chains in
 *          index order instead of a BLAS's blocking. Supported: D a multiple of 4 in
 *          4..128 (32, 40, 64, 72, 80, 96, 128, ...); q_chunk and kv_chunk each 32, 64
 *          or 128 (on devices with less than ~196 KiB of shared memory per block the
 *          largest combinations are refused, naming the bytes).
 *
 * TF32: opts->tf32 = 1 lets the two GEMMs of math / split run on TF32 tensor cores
 * (CUBLAS_COMPUTE_32F_FAST_TF32: inputs rounded to 10 mantissa bits, about 1e-3
 * relative); 0 (default, the reference path) is CUBLAS_COMPUTE_32F with the handle's
 * math mode pinned to CUBLAS_DEFAULT_MATH (no TF32, no BF16x9 emulation). flash has
 * no TF32 path (refused).
 *
 * Determinism: every variant gives the same bits on every run for the same inputs,
 * shapes, options, device model and library versions. Every reduction has a fixed
 * order set by the shapes and tiles alone; no kernel here uses atomics; cuBLAS is run
 * with atomics disallowed, on one stream per handle (cuBLAS's reproducibility
 * condition). Different GPUs, cuBLAS versions or tile sizes may give different bits.
 *
 * Streams and synchronisation: everything is enqueued on the handle's stream; no call
 * synchronises except when the handle's scratch has to grow (it waits for the stream,
 * then reallocates). A kernel fault is reported by a later synchronising CUDA call.
 * One handle must not be used from two host threads at once.
 *
 * Built only when CMake found nvcc (REPRO_HAVE_CUDA); C callers guard with #ifdef. */
#ifndef REPRO_CUDA_ATTENTION_H
#define REPRO_CUDA_ATTENTION_H

#include <cuda_runtime.h>

#include "engine/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RP_CUDA_ATTN_SPLIT_Q_DEFAULT 1024 /* as the CPU's RP_ATTN_SPLIT_Q_DEFAULT */
#define RP_CUDA_ATTN_FLASH_Q_DEFAULT 64   /* GPU defaults: 64 x 64 tiles keep 3-4 blocks per */
#define RP_CUDA_ATTN_FLASH_KV_DEFAULT 64  /* SM at D <= 72 (the CPU's are 128 x 128) */
#define RP_CUDA_ATTN_FLASH_MAX_D 128

typedef enum rp_cuda_attn_variant {
    RP_CUDA_ATTN_MATH = 0,
    RP_CUDA_ATTN_SPLIT,
    RP_CUDA_ATTN_FLASH
} rp_cuda_attn_variant;

typedef enum rp_cuda_attn_dtype {
    RP_CUDA_ATTN_F32 = 0, /* q, k, v are float */
    RP_CUDA_ATTN_BF16     /* q, k, v are bfloat16 (raw 16-bit patterns, the top half of an
                             IEEE float; __nv_bfloat16 / torch.bfloat16 layout) */
} rp_cuda_attn_dtype;

/* Per-call options. A zeroed struct (or NULL) = fp32 inputs, no TF32, default chunks. */
typedef struct rp_cuda_attn_opts {
    rp_cuda_attn_dtype dtype;
    int tf32;      /* math/split: 1 = TF32 tensor-core GEMMs; must be 0 for flash */
    int q_chunk;   /* split: query rows per slice (0 = 1024); flash: query rows per tile
                      (0 = 64; else 32, 64, 128); math: must be 0 */
    int kv_chunk;  /* flash: keys per tile (0 = 64; else 32, 64, 128); math, split: must be 0 */
} rp_cuda_attn_opts;

/* What a call ran (or would run): the chunk sizes are the resolved ones, never 0 for the
 * variants that take them, so a trace can record them. */
typedef struct rp_cuda_attn_used {
    rp_cuda_attn_variant variant;
    rp_cuda_attn_dtype dtype;
    int tf32;
    int q_chunk;     /* split: rows per slice; flash: query rows per tile; math: 0 */
    int kv_chunk;    /* flash: keys per tile; else 0 */
    int threads;     /* flash: threads per block (2 * q_chunk); else 0 (cuBLAS decides) */
    int smem_bytes;  /* flash: dynamic shared memory per block; else 0 */
    char desc[160];  /* one line, e.g. "cuda-flash q64 kv64 D72 fp32 (128 threads, 63488 B smem)",
                        "cuda-math cublas fp32 (no tf32)", "cuda-split q1024 cublas tf32 bf16-in" */
} rp_cuda_attn_used;

/* A handle: device, stream, cuBLAS handle, scratch, and the last call's description. */
typedef struct rp_cuda_attn rp_cuda_attn;

/* Creates a handle on the current device, enqueuing on `stream` (0 = the legacy default
 * stream; the handle does not own it). Errors: RP_ERR_UNSUPPORTED when there is no usable
 * device or cuBLAS cannot start (the CUDA / cuBLAS message is in err), RP_ERR_INVALID for
 * a NULL out, RP_ERR_NOMEM. */
rp_status rp_cuda_attn_create(rp_cuda_attn **out, cudaStream_t stream, rp_error *err);

/* Waits for the handle's stream, frees its scratch and cuBLAS handle. NULL is a no-op. */
void rp_cuda_attn_destroy(rp_cuda_attn *a);

/* Runs one attention call (contract above) on the handle's stream. out, q, k, v and
 * key_mask are device (or managed) pointers; flash needs q, k, v 16-byte aligned for fp32
 * (8 for bf16) and out 16-byte aligned (cudaMalloc gives 256). Tq == 0 does nothing;
 * Tk == 0 writes zeros. Errors (err names the value and the rule):
 *   RP_ERR_INVALID      NULL handle or tensor, B, H, D < 1, Tq, Tk < 0, negative chunk
 *                       sizes, a chunk size the variant does not take (math takes none,
 *                       split only q_chunk), tf32 with flash, an unknown dtype, a pointer
 *                       the device cannot read, a misaligned flash pointer, a handle used
 *                       on another device than the one it was created on;
 *   RP_ERR_UNSUPPORTED  a valid request this code cannot do: a flash head dim outside
 *                       4..128 or not a multiple of 4, flash tiles other than 32/64/128,
 *                       tiles whose shared memory exceeds the device's, a grid or batch
 *                       count beyond the launch limits, or a CUDA/cuBLAS failure;
 *   RP_ERR_NOMEM        the scratch (math: B*H*Tq*Tk floats) cannot be allocated.
 * On success rp_cuda_attn_last() describes the call. */
rp_status rp_cuda_attention(rp_cuda_attn *a, rp_cuda_attn_variant variant,
                            const rp_cuda_attn_opts *opts, float *out, const void *q,
                            const void *k, const void *v, const unsigned char *key_mask, int B,
                            int H, int Tq, int Tk, int D, float scale, rp_error *err);

/* Validates a configuration and resolves it (defaults, threads, shared memory) without
 * running anything: what rp_cuda_attention would record for head dim D. The same option
 * errors as rp_cuda_attention. a may be NULL (then the shared-memory limit is not
 * checked). For the auto selector and the CLIs' parse-time checks. */
rp_status rp_cuda_attn_plan(const rp_cuda_attn *a, rp_cuda_attn_variant variant,
                            const rp_cuda_attn_opts *opts, int D, rp_cuda_attn_used *out,
                            rp_error *err);

/* The last successful call's record; NULL before the first one (or for a NULL handle). */
const rp_cuda_attn_used *rp_cuda_attn_last(const rp_cuda_attn *a);

/* rp_cuda_attn_last(a)->desc, or "" when there is none. */
const char *rp_cuda_attn_last_desc(const rp_cuda_attn *a);

/* "math" | "split" | "flash" ("?" otherwise). */
const char *rp_cuda_attn_variant_name(rp_cuda_attn_variant v);

/* ---- numerics invariant: the canonical attention (attention_canonical.cu) ---------------- */

#define RP_CUDA_CANON_MAX_SEG 4 /* key segments a call may name (the models use 1 or 3) */

/* engine/attention/attention.h rp_attention_canonical on device memory, bit for bit the CPU's
 * for the same inputs on every GPU: the keys of each (b, h) cut into canonical blocks per
 * segment (seg (nseg) lengths summing to Tk, the first nsplit ones split into Bk(n)-key
 * blocks, the rest into 64-key blocks from their start; seg NULL = one split segment of Tk),
 * one partial per query row and block, folded in block order, every operation an explicit
 * fp32 round-to-nearest one (the sequence is written out at the top of the .cu file).
 * bf16 = 1 rounds q, k, v and p to bf16 as the CPU's precision bf16 does. Shapes and the mask
 * as rp_cuda_attention's contract; no handle, no scratch: asynchronous on `stream`.
 * Errors: RP_ERR_INVALID for sizes, segments or NULL tensors; RP_ERR_UNSUPPORTED when B x H
 * exceeds 65535, the head dim needs more shared memory than the device has (8 rows with keys
 * read from global memory: D above ~3600 on an H100, ~730 at 48 KiB), or the launch fails. */
rp_status rp_cuda_attention_canonical(float *out, const float *q, const float *k, const float *v,
                                      const unsigned char *key_mask, int B, int H, int Tq, int Tk, int D,
                                      float scale, const int *seg, int nseg, int nsplit, int bf16,
                                      cudaStream_t stream, rp_error *err);

/* The same with the tiling forced, for tests: rows (8, 16 or 32) query rows a block, staged = 1
 * stages each key block in shared memory (head dims up to 128). rp_cuda_attention_canonical
 * picks the largest the device's shared memory takes; every tiling gives the same bits.
 * RP_ERR_UNSUPPORTED when the device's shared memory cannot hold the tiling. */
rp_status rp_cuda_attention_canonical_tiled(float *out, const float *q, const float *k, const float *v,
                                            const unsigned char *key_mask, int B, int H, int Tq, int Tk, int D,
                                            float scale, const int *seg, int nseg, int nsplit, int bf16, int rows,
                                            int staged, cudaStream_t stream, rp_error *err);

#ifdef __cplusplus
}
#endif

/* ---- internal: shared by engine/cuda/attention_math.cu and attention_flash.cu (with its
 * kernel header, attention_flash_kernel.cuh) only ---- */
#if defined(__cplusplus) && defined(RP_CUDA_ATTN_INTERNAL)
struct cublasContext;
struct rp_cuda_attn {
    int device;                   /* cudaGetDevice at creation */
    cudaStream_t stream;
    struct cublasContext *blas;   /* cublasHandle_t, bound to stream */
    void *ws;                     /* scratch (device), ws_bytes long */
    size_t ws_bytes;
    int smem_optin;               /* cudaDevAttrMaxSharedMemoryPerBlockOptin */
    int pageable_ok;              /* cudaDevAttrPageableMemoryAccess */
    int have_last;
    rp_cuda_attn_used last;
};

/* attention_flash.cu: resolves and checks flash options for head dim D (smem_optin 0 =
 * not checked) into u. */
rp_status rp_cuda_attn_flash_plan_(int smem_optin, const rp_cuda_attn_opts *o, int D,
                                   rp_cuda_attn_used *u, rp_error *err);
/* attention_flash.cu: launches the planned flash kernel on a->stream; arguments already
 * checked by the caller (shapes, pointers, Tq >= 1, Tk >= 1). */
rp_status rp_cuda_attn_flash_run_(rp_cuda_attn *a, const rp_cuda_attn_used *u, float *out,
                                  const void *q, const void *k, const void *v,
                                  const unsigned char *key_mask, int B, int H, int Tq, int Tk,
                                  int D, float scale, rp_error *err);

/* the device exp the kernels use: rp_cuda_expf in engine/cuda/cuda_common.h */
#endif

#endif
