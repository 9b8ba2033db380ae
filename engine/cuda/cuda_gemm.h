/* cuda_gemm.h — the engine's GPU GEMM through cuBLASLt (C interface to gemm_lt.cu
 * and gemm_convert.cu). Built only when CMake found nvcc (REPRO_HAVE_CUDA); C
 * callers guard with #ifdef and need the CUDA include dir on their path (they get
 * it from repro_engine_cuda -> CUDA::cudart, through the folders that use engine/cuda).
 *
 * Semantics: rp_cuda_gemm is rp_gemm (engine/ops.h) on device memory:
 *     C (M, N) = alpha * op(A) @ op(B) + beta * C, row-major, fp32 in and out,
 *     op(A) (M, K): A is (M, K) with lda >= K, or (K, M) with lda >= M when transA;
 *     op(B) (K, N): B is (K, N) with ldb >= N, or (N, K) with ldb >= K when transB;
 *     ldc >= N; no bias (rp_linear's bias is a beta = 1 GEMM on a pre-filled C).
 *     beta == 0: C is not read (BLAS semantics; NaN in C does not propagate).
 *     K == 0: C = beta * C (zeros when beta == 0). M == 0 or N == 0: nothing.
 *
 * Row-major onto column-major cuBLASLt: a row-major (r, c) matrix with leading
 * dimension ld is, read column-major, its transpose (c, r) with the same ld. So
 * the row-major C = op(A) op(B) is computed as the column-major
 *     C^T (N, M) = op(B)^T (N, K) @ op(A)^T (K, M),
 * i.e. cuBLASLt's "A" is our B (op = transB), its "B" is our A (op = transA), its
 * m, n, k are N, M, K, and the leading dimensions are passed unchanged.
 *
 * Precisions (a case axis; names "fp32", "tf32", "bf16", "fp16"):
 *   FP32  fp32 inputs, CUBLAS_COMPUTE_32F (no TF32) — in deterministic mode.
 *   TF32  fp32 inputs, CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores round the inputs
 *         to TF32, 10 explicit mantissa bits, and accumulate in fp32).
 *   BF16  A and B rounded to bf16 on the device (round to nearest even, bit for bit
 *         rp_f32_to_bf16, so the same values as the CPU's RP_PREC_BF16), fp32
 *         accumulation (CUBLAS_COMPUTE_32F), fp32 C.
 *   FP16  as BF16 with IEEE half (round to nearest even); the CPU has no fp16 mode.
 *   The rounded copies are packed (leading dimension rounded up to 8 elements, so
 *   16-byte aligned rows) into scratch the ctx owns, on every call; rp_cuda_gemm_const
 *   keeps B's rounded copy instead (the constant-operand cache, below).
 *
 * Modes:
 *   DETERMINISTIC  the algorithm of each key (transA, transB, M, N, K, lda, ldb, ldc,
 *         precision, mode, and the alignment class of the A/B/C pointers, which limits
 *         what kernels can run) is chosen ONCE by cublasLtMatmulAlgoGetHeuristic with
 *         CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = NONE, rejecting any result whose
 *         config still says split-K > 1 or a reduction scheme, then cached for the
 *         ctx's lifetime (keep one ctx per device for the whole process), and every
 *         call runs on the ctx's one stream with its one fixed-size workspace. Same
 *         GPU model, SM count, driver and cuBLASLt version => same kernel => same
 *         bits; across GPUs the kernel may differ, which the algo records show.
 *   FAST  what a framework does by default: the heuristic's first result, asked at
 *         every call, split-K reductions allowed, and TF32 allowed for FP32 inputs
 *         (FP32 in fast mode computes as TF32). Not guaranteed deterministic.
 *
 * Streams and synchronisation: every call is asynchronous on the ctx's stream (the
 * one given at create, or a blocking stream the ctx creates, which therefore
 * orders itself after work on the legacy default stream such as cudaMemcpy).
 * Nothing here synchronises except rp_cuda_gemm_sync, a scratch buffer that must
 * grow (it waits for the stream before freeing the old one), forgetting or capping
 * constant-operand copies (when one is freed) and destroy.
 *
 * Errors: rp_status + rp_error (engine/error.h). Bad arguments: RP_ERR_INVALID with
 * the value named; CUDA / cuBLASLt failures: RP_ERR_UNSUPPORTED or RP_ERR_NOMEM with
 * the call and the library's message (engine/cuda/cuda_common.h). A ctx is used by
 * one host thread at a time; the process-wide functions (workspace config) are
 * called from the main thread before worker threads exist. */
#ifndef REPRO_CUDA_GEMM_H
#define REPRO_CUDA_GEMM_H

#include <cuda_runtime.h>

#include "engine/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rp_cuda_prec {
    RP_CUDA_PREC_FP32 = 0,
    RP_CUDA_PREC_TF32,
    RP_CUDA_PREC_BF16,
    RP_CUDA_PREC_FP16
} rp_cuda_prec;
#define RP_CUDA_PREC_COUNT 4

typedef enum rp_cuda_gemm_mode {
    RP_CUDA_GEMM_DETERMINISTIC = 0,
    RP_CUDA_GEMM_FAST
} rp_cuda_gemm_mode;
#define RP_CUDA_GEMM_MODE_COUNT 2

/* "fp32" | "tf32" | "bf16" | "fp16"; "?" for a value outside the enum. */
const char *rp_cuda_prec_name(rp_cuda_prec p);
/* "deterministic" | "fast"; "?" for a value outside the enum. */
const char *rp_cuda_gemm_mode_name(rp_cuda_gemm_mode m);
/* Parse the names above; anything else: RP_ERR_INVALID naming the string. */
rp_status rp_cuda_prec_parse(const char *s, rp_cuda_prec *out, rp_error *err);
rp_status rp_cuda_gemm_mode_parse(const char *s, rp_cuda_gemm_mode *out, rp_error *err);

/* Workspace handed to every cublasLtMatmul (and to the heuristic as its limit). */
#define RP_CUDA_GEMM_WORKSPACE_DEFAULT ((size_t)32 << 20) /* 32 MiB: Hopper's recommendation */

typedef struct rp_cuda_gemm_opts {
    rp_cuda_prec precision;
    rp_cuda_gemm_mode mode;
    size_t workspace_bytes; /* 0: RP_CUDA_GEMM_WORKSPACE_DEFAULT; fixed for the ctx's life */
    cudaStream_t stream;    /* NULL: the ctx creates (and owns) a blocking stream; else the
                               caller's stream, which must outlive the ctx */
} rp_cuda_gemm_opts;

/* FP32, DETERMINISTIC, default workspace, own stream. */
rp_cuda_gemm_opts rp_cuda_gemm_opts_default(void);

typedef struct rp_cuda_gemm_ctx rp_cuda_gemm_ctx; /* opaque */

/* Creates a ctx on the current device: cuBLASLt handle, workspace, stream, empty
 * algorithm cache. DETERMINISTIC first calls rp_cuda_gemm_workspace_config (so the
 * variable is in place before this module creates its first handle). Options out of
 * range: RP_ERR_INVALID. On failure *out is NULL and nothing leaks. */
rp_status rp_cuda_gemm_create(const rp_cuda_gemm_opts *opts, rp_cuda_gemm_ctx **out, rp_error *err);

/* Waits for the ctx's stream, frees everything, constant-operand copies included
 * (NULL: no-op). The caller's stream is not destroyed. */
void rp_cuda_gemm_destroy(rp_cuda_gemm_ctx *ctx);

/* Change the precision / mode of later calls (the cache is keyed by both, so earlier
 * choices stay valid). Switching to DETERMINISTIC calls rp_cuda_gemm_workspace_config. */
rp_status rp_cuda_gemm_set_precision(rp_cuda_gemm_ctx *ctx, rp_cuda_prec p, rp_error *err);
rp_status rp_cuda_gemm_set_mode(rp_cuda_gemm_ctx *ctx, rp_cuda_gemm_mode m, rp_error *err);
rp_cuda_prec rp_cuda_gemm_precision(const rp_cuda_gemm_ctx *ctx);
rp_cuda_gemm_mode rp_cuda_gemm_get_mode(const rp_cuda_gemm_ctx *ctx);
cudaStream_t rp_cuda_gemm_stream(const rp_cuda_gemm_ctx *ctx);
int rp_cuda_gemm_device(const rp_cuda_gemm_ctx *ctx);

/* cudaStreamSynchronize on the ctx's stream (also surfaces asynchronous errors). */
rp_status rp_cuda_gemm_sync(rp_cuda_gemm_ctx *ctx, rp_error *err);

/* C = alpha op(A) op(B) + beta C with rp_gemm's semantics (top of this file); A, B, C
 * are device (or managed) pointers, A and B are not modified, C must not overlap them.
 * Must be called with the ctx's device current. Asynchronous on the ctx's stream. */
rp_status rp_cuda_gemm(rp_cuda_gemm_ctx *ctx, int transA, int transB, int M, int N, int K,
                       float alpha, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc, rp_error *err);

/* ---- constant operands: B rounded once, not at every call -------------------------- */

/* rp_cuda_gemm for a B whose contents the caller promises not to change (a model
 * weight: out = in @ W^T is transB = 1, B = W) until it calls rp_cuda_gemm_forget_const
 * (or _forget_all_const) for a range containing B, and not to free it before that
 * either (a later allocation at the same address would hit the stale copy).
 *   BF16/FP16: the first call with a key (B pointer, stored rows and cols of B, ldb,
 *   precision) rounds B into a 16-bit copy the ctx owns (one cudaMalloc per copy,
 *   packed exactly as rp_cuda_gemm's scratch: leading dimension rounded up to 8
 *   elements, 256-byte aligned buffer); later calls use that copy and convert only A.
 *   The copy holds the same bits as rp_cuda_gemm's per-call conversion, the algorithm
 *   cache key (caller's lda/ldb, pointer alignment 256 for either 16-bit copy) and the
 *   matrix layouts are the same, so in DETERMINISTIC mode C is bitwise rp_cuda_gemm's
 *   on the same inputs, and both share one cache entry and algorithm. The key is the
 *   stored matrix, so transB = 0 and 1 calls on one (N == K) B share a copy.
 *   FP32/TF32: nothing is converted; exactly rp_cuda_gemm.
 * Memory: one 16-bit copy per distinct key, rows x round_up(cols, 8) x 2 bytes: for a
 * model whose every weight goes through here, about half its fp32 weights (DiT-XL/2:
 * ~1.35 GB; FLUX: ~24 GB), held until forgotten or destroy; a second 16-bit precision
 * on the same ctx keeps a second set. rp_cuda_gemm_set_const_cap bounds it. A copy that
 * would pass the cap, or that cudaMalloc has no memory for, is not made: that call
 * (and later ones with its key, while it does not fit) converts B per call as
 * rp_cuda_gemm, with the same result; copies already made are kept (first come, first
 * kept: for a forward pass that walks its weights in the same order every time this
 * hits on the first cap's worth, where LRU eviction would hit on none).
 * Same arguments, validation and errors as rp_cuda_gemm (messages say
 * "rp_cuda_gemm_const"); B is converted asynchronously on the ctx's stream like every
 * other input, so the usual ordering rules apply to the first call. */
rp_status rp_cuda_gemm_const(rp_cuda_gemm_ctx *ctx, int transA, int transB, int M, int N, int K,
                             float alpha, const float *A, int lda, const float *B, int ldb,
                             float beta, float *C, int ldc, rp_error *err);

/* Drops (frees) every cached copy whose fp32 source, the bytes [B, B + ((rows - 1) ldb
 * + cols) floats), overlaps [lo, lo + bytes): so a range containing B always drops its
 * copies, and so does one covering only part of B. Call it before changing or freeing
 * the source; later rp_cuda_gemm_const calls convert the new contents. When something
 * is dropped it first waits for the ctx's stream (queued GEMMs may still read the
 * copy); it switches to the ctx's device for that and back. A failure there (an
 * earlier asynchronous error, which rp_cuda_gemm_sync reports) is not reported here;
 * the copy is forgotten all the same. NULL ctx or bytes == 0: nothing. */
void rp_cuda_gemm_forget_const(rp_cuda_gemm_ctx *ctx, const void *lo, size_t bytes);
/* Drops every cached copy (as above). */
void rp_cuda_gemm_forget_all_const(rp_cuda_gemm_ctx *ctx);

/* Bounds the device bytes the cache holds (0: unlimited, the default). A cap below
 * what is held now keeps copies in order of creation while their total fits and drops
 * the rest (as forget). NULL ctx: nothing. */
void rp_cuda_gemm_set_const_cap(rp_cuda_gemm_ctx *ctx, size_t bytes);
size_t rp_cuda_gemm_const_cap(const rp_cuda_gemm_ctx *ctx);
/* Device bytes the cached copies hold (the sum of rows x round_up(cols, 8) x 2; each
 * cudaMalloc may round up further), and how many copies there are. NULL ctx: 0. */
size_t rp_cuda_gemm_const_bytes(const rp_cuda_gemm_ctx *ctx);
int rp_cuda_gemm_const_count(const rp_cuda_gemm_ctx *ctx);

/* ---- which kernel ran (for the trace: two GPUs may pick different ones) ---------- */

/* A cuBLASLt algorithm as cublasLtMatmulAlgoConfigGetAttribute / CapGetAttribute
 * read it. Fields that could not be read are -1 (all ones for the unsigned ones). */
typedef struct rp_cuda_gemm_algo {
    int valid;                     /* 0: no GEMM has run yet */
    int algo_id;                   /* CUBLASLT_ALGO_CONFIG_ID */
    unsigned tile_id;              /* CUBLASLT_ALGO_CONFIG_TILE_ID (cublasLtMatmulTile_t) */
    unsigned stages_id;            /* CUBLASLT_ALGO_CONFIG_STAGES_ID (cublasLtMatmulStages_t) */
    int splitk_num;                /* CUBLASLT_ALGO_CONFIG_SPLITK_NUM (1 = no split) */
    unsigned reduction_scheme;     /* CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME (0 = none) */
    unsigned swizzle;              /* CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING */
    unsigned custom_option;        /* CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION */
    unsigned inner_shape_id;       /* CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID */
    unsigned cluster_shape_id;     /* CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID */
    unsigned long long impl_flags; /* CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS (FMA/HMMA, input type) */
    size_t workspace_bytes;        /* what the heuristic said this algorithm uses */
    float waves;                   /* the heuristic's wavesCount */
    rp_cuda_prec precision;
    rp_cuda_gemm_mode mode;
    int compute_tf32;              /* 1: CUBLAS_COMPUTE_32F_FAST_TF32 */
} rp_cuda_gemm_algo;

/* Writes "algo=21 tile=18 stages=... splitk=1 reduction=none swizzle=0 custom=0
 * inner=0 cluster=0 impl=0x... ws=0 waves=0.53 compute=32f" into buf (truncated to
 * cap, always terminated when cap > 0); "none" when !a->valid. */
void rp_cuda_gemm_algo_format(const rp_cuda_gemm_algo *a, char *buf, size_t cap);

/* The algorithm of the ctx's latest successful rp_cuda_gemm (valid 0 before any);
 * a K == 0 call runs no cuBLASLt kernel and leaves it unchanged. */
rp_cuda_gemm_algo rp_cuda_gemm_last_algo_info(const rp_cuda_gemm_ctx *ctx);
/* rp_cuda_gemm_algo_format of it. */
void rp_cuda_gemm_last_algo(const rp_cuda_gemm_ctx *ctx, char *buf, size_t cap);

/* Number of cached keys, and entry i (0-based) as "fp32 deterministic tA=0 tB=1
 * M=.. N=.. K=.. lda=.. ldb=.. ldc=.. align=16/256/16: algo=..." (the entry's latest
 * algorithm; in FAST mode the one chosen at its latest call). Out of range: "". */
int rp_cuda_gemm_cache_size(const rp_cuda_gemm_ctx *ctx);
void rp_cuda_gemm_cache_entry(const rp_cuda_gemm_ctx *ctx, int i, char *buf, size_t cap);

/* One line for env/trace records: "device=0 precision=bf16 mode=deterministic
 * workspace=33554432 cublaslt=130100 CUBLAS_WORKSPACE_CONFIG=... [NVIDIA_TF32_OVERRIDE=..]". */
void rp_cuda_gemm_describe(const rp_cuda_gemm_ctx *ctx, char *buf, size_t cap);

/* ---- process-wide determinism setting --------------------------------------------- */

/* Sets CUBLAS_WORKSPACE_CONFIG=:4096:8 in this process's environment unless it is
 * already set (a value the user gave is kept), and records what happened. Why:
 * cuBLAS's bit-for-bit guarantee holds only while one stream is active; with several
 * streams the classic cuBLAS API picks internal workspaces per stream in ways that
 * can change which kernel runs. A fixed workspace configuration (":4096:8" = 8
 * buffers of 4 MiB, about 24 MiB more per handle; ":16:8" is the slower alternative)
 * restores determinism. This module itself only calls cublasLtMatmul with its own
 * workspace, which is not affected; the variable is for every classic cuBLAS call in
 * the same process (the benchmark's cublasGemmEx baseline, other engine code). cuBLAS
 * reads it when it sets up a handle (PyTorch requires it before CUDA initialises), so
 * call this at process start, before the first cuBLAS or cuBLASLt handle
 * (rp_cuda_device_describe creates one); the note says when a handle of this module
 * already existed. Not thread-safe (setenv). setenv failing: RP_ERR_UNSUPPORTED. */
rp_status rp_cuda_gemm_workspace_config(rp_error *err);

/* What rp_cuda_gemm_workspace_config did, for the env record:
 * "CUBLAS_WORKSPACE_CONFIG=:4096:8 (set by repro before the first cuBLAS handle)",
 * "... (from the environment, kept)", "... (set by repro after a cuBLAS handle of this
 * process existed: that handle may not use it)", or "CUBLAS_WORKSPACE_CONFIG not set
 * (not requested)" before any call. Static storage. */
const char *rp_cuda_gemm_workspace_config_note(void);

/* ---- the conversion kernel (also for benchmarks and other engine code) ------------- */

/* dst (rows, ld_dst) 16-bit = src (rows, cols, ld_src) fp32 rounded to `to` (BF16: bit
 * for bit rp_f32_to_bf16; FP16: IEEE half, round to nearest even, gradual underflow);
 * columns [cols, ld_dst) of dst are set to 0. Device pointers, asynchronous on stream.
 * to not BF16/FP16, rows/cols < 0, ld_src < cols, ld_dst < cols, NULL pointers with
 * rows*cols > 0: RP_ERR_INVALID. */
rp_status rp_cuda_convert_f32(void *dst, int ld_dst, rp_cuda_prec to, const float *src, int rows,
                              int cols, int ld_src, cudaStream_t stream, rp_error *err);

/* The invariant GEMM on the device (gemm_invariant.cu): rp_gemm_invariant's contract
 * (engine/ops.h) on device pointers — every element one fmaf chain over k = 0 .. K-1, then
 * alpha * acc [+ beta * C] rounded as written — so its bits are the CPU's for the same
 * inputs on every GPU. bf16 = 1: op(A) and op(B) rounded to bf16 first (rp_gemm's bf16 under
 * numerics invariant). No cuBLASLt, no ctx: asynchronous on `stream`. Bad sizes or leading
 * dimensions: RP_ERR_INVALID; a failed launch: RP_ERR_UNSUPPORTED. The CUDA device's GEMM
 * under numerics invariant (device_cuda.c). */
rp_status rp_cuda_gemm_invariant(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                                 const float *B, int ldb, float beta, float *C, int ldc, int bf16,
                                 cudaStream_t stream, rp_error *err);

#ifdef __cplusplus
}
#endif
#endif
