// gemm_lt.cu — rp_cuda_gemm through cuBLASLt: precisions, deterministic / fast
// algorithm choice, the per-key algorithm cache and its records
// (engine/cuda/cuda_gemm.h has the contracts).
//
// Per call:
//   1. validate (rp_gemm's rules, each failure naming the value);
//   2. BF16/FP16: round A and B into packed 16-bit scratch (gemm_convert.cu);
//      rp_cuda_gemm_const: B's rounded copy comes from the constant-operand cache
//      instead (made at the first call with that key, by the same conversion into
//      the same packed layout and a 256-byte aligned buffer like the scratch, so
//      step 3's key, layouts and algorithm are the ones rp_cuda_gemm uses);
//   3. look the key up (transA, transB, M, N, K, lda, ldb, ldc, precision, mode and the
//      alignment of the pointers cuBLASLt will see); a new key gets its matmul
//      descriptor and matrix layouts built once;
//   4. DETERMINISTIC: the key's algorithm, chosen at its first call by the heuristic
//      restricted to CUBLASLT_REDUCTION_SCHEME_NONE (and re-checked: split-K 1,
//      reduction none); FAST: the heuristic's first result, asked now;
//   5. cublasLtMatmul on the ctx's stream with the ctx's workspace.
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/cuda/cuda_common.h"
#include "engine/cuda/cuda_gemm.h"

namespace {

// ---- process-wide state: CUBLAS_WORKSPACE_CONFIG record --------------------------
// Touched only from the thread that creates ctxs (documented in the header).
bool g_handle_created = false;   // this module has created a cuBLASLt handle
char g_ws_note[200] = "CUBLAS_WORKSPACE_CONFIG not set (not requested)";
bool g_ws_done = false;

const int kMaxHeuristic = 16;     // results asked of the heuristic in deterministic mode

struct GemmKey {
    int transA, transB, M, N, K, lda, ldb, ldc;
    int prec, mode;
    int alignA, alignB, alignC;  // bytes (<= 256) of the pointers handed to cuBLASLt
};

bool key_equal(const GemmKey &a, const GemmKey &b) {
    return a.transA == b.transA && a.transB == b.transB && a.M == b.M && a.N == b.N &&
           a.K == b.K && a.lda == b.lda && a.ldb == b.ldb && a.ldc == b.ldc &&
           a.prec == b.prec && a.mode == b.mode && a.alignA == b.alignA &&
           a.alignB == b.alignB && a.alignC == b.alignC;
}

unsigned key_hash(const GemmKey &k) {
    const int v[13] = {k.transA, k.transB, k.M,    k.N,    k.K,      k.lda,   k.ldb,
                       k.ldc,    k.prec,   k.mode, k.alignA, k.alignB, k.alignC};
    unsigned h = 2166136261u;  // FNV-1a over the fields
    for (int x : v) {
        h ^= (unsigned)x;
        h *= 16777619u;
    }
    return h;
}

struct GemmEntry {
    GemmKey key;
    unsigned hash;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la;  // cuBLASLt's A = our B
    cublasLtMatrixLayout_t lb;  // cuBLASLt's B = our A
    cublasLtMatrixLayout_t lc;  // C and D (in place)
    cublasLtMatmulAlgo_t algo;  // DETERMINISTIC: the cached choice
    bool have_algo;
    rp_cuda_gemm_algo info;     // the latest algorithm of this key
};

// One cached 16-bit copy of a constant B (rp_cuda_gemm_const): the stored matrix
// src (rows, cols, ld) rounded to prec, packed with leading dimension packed_ld(cols)
// into its own cudaMalloc buffer (256-byte aligned, as the scratch it replaces).
struct ConstEntry {
    const float *src;
    int rows, cols, ld, prec;
    uintptr_t lo, hi;  // the source's bytes: [src, src + ((rows-1) ld + cols) floats)
    void *dev;
    size_t bytes;      // rows * packed_ld(cols) * 2, exactly what dev holds
};

// Packed 16-bit leading dimension: a multiple of 8 elements (16-byte rows).
int packed_ld(int cols) { return (cols + 7) / 8 * 8; }

// Largest power of two (<= 256) dividing the address: the alignment cuBLASLt is told.
int ptr_align(const void *p) {
    uintptr_t a = (uintptr_t)p;
    int al = 1;
    while (al < 256 && (a & (uintptr_t)al) == 0) al <<= 1;
    return al;
}

const char *reduction_name(unsigned r) {
    switch (r) {
    case CUBLASLT_REDUCTION_SCHEME_NONE: return "none";
    case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "compute_type";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "output_type";
    default: return "?";
    }
}

// C (M, N, ldc) = beta * C, zeros when beta == 0 (the K == 0 GEMM: an empty sum).
__global__ void scale_c_kernel(float *C, long long M, long long N, long long ldc, float beta) {
    const long long n = M * N;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const long long r = i / N, c = i - r * N;
        float *p = C + r * ldc + c;
        *p = beta == 0.0f ? 0.0f : beta * *p;
    }
}

// Reads the algorithm's configuration; unreadable fields stay -1 / all ones.
template <typename T>
void cfg_get(const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t attr, T *v) {
    T x{};
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(algo, attr, &x, sizeof x, &written) ==
            CUBLAS_STATUS_SUCCESS &&
        written == sizeof x)
        *v = x;
}

rp_cuda_gemm_algo describe_algo(const cublasLtMatmulAlgo_t *algo, size_t ws, float waves,
                                rp_cuda_prec prec, rp_cuda_gemm_mode mode, bool tf32) {
    rp_cuda_gemm_algo a;
    memset(&a, 0xff, sizeof a);
    a.valid = 1;
    int32_t i32 = -1;
    uint32_t u32 = 0xffffffffu;
    uint16_t u16 = 0xffffu;
    cfg_get(algo, CUBLASLT_ALGO_CONFIG_ID, &i32);
    a.algo_id = i32;
    cfg_get(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &u32);
    a.tile_id = u32;
    u32 = 0xffffffffu;
    cfg_get(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &u32);
    a.stages_id = u32;
    i32 = -1;
    cfg_get(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &i32);
    a.splitk_num = i32;
    u32 = 0xffffffffu;
    cfg_get(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &u32);
    a.reduction_scheme = u32;
    u32 = 0xffffffffu;
    cfg_get(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &u32);
    a.swizzle = u32;
    u32 = 0xffffffffu;
    cfg_get(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &u32);
    a.custom_option = u32;
    cfg_get(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &u16);
    a.inner_shape_id = u16 == 0xffffu ? 0xffffffffu : u16;
    u16 = 0xffffu;
    cfg_get(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &u16);
    a.cluster_shape_id = u16 == 0xffffu ? 0xffffffffu : u16;
    uint64_t flags = ~(uint64_t)0;
    size_t written = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(algo, CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS, &flags,
                                          sizeof flags, &written) != CUBLAS_STATUS_SUCCESS ||
        written != sizeof flags)
        flags = ~(uint64_t)0;
    a.impl_flags = (unsigned long long)flags;
    a.workspace_bytes = ws;
    a.waves = waves;
    a.precision = prec;
    a.mode = mode;
    a.compute_tf32 = tf32 ? 1 : 0;
    return a;
}

// Appends printf output to buf at *len (truncating; *len saturates at cap - 1).
void appendf(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void appendf(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
    if (!buf || cap == 0 || *len >= cap - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    *len = (size_t)n >= cap - *len ? cap - 1 : *len + (size_t)n;
}

}  // namespace

// ---- the ctx ------------------------------------------------------------------------

struct rp_cuda_gemm_ctx {
    int device;
    rp_cuda_prec prec;
    rp_cuda_gemm_mode mode;
    cublasLtHandle_t lt;
    cudaStream_t stream;
    bool own_stream;
    void *workspace;
    size_t ws_bytes;
    void *scratch[2];        // packed 16-bit A and B (BF16/FP16)
    size_t scratch_bytes[2];
    GemmEntry *entries;      // the algorithm cache, in order of first use
    int n_entries, cap_entries;
    ConstEntry *consts;      // the constant-operand cache, in order of creation
    int n_consts, cap_consts;
    size_t const_bytes;      // sum of consts[i].bytes
    size_t const_cap;        // 0: unlimited
    rp_cuda_gemm_algo last;
};

extern "C" const char *rp_cuda_prec_name(rp_cuda_prec p) {
    switch (p) {
    case RP_CUDA_PREC_FP32: return "fp32";
    case RP_CUDA_PREC_TF32: return "tf32";
    case RP_CUDA_PREC_BF16: return "bf16";
    case RP_CUDA_PREC_FP16: return "fp16";
    }
    return "?";
}

extern "C" const char *rp_cuda_gemm_mode_name(rp_cuda_gemm_mode m) {
    switch (m) {
    case RP_CUDA_GEMM_DETERMINISTIC: return "deterministic";
    case RP_CUDA_GEMM_FAST: return "fast";
    }
    return "?";
}

extern "C" rp_status rp_cuda_prec_parse(const char *s, rp_cuda_prec *out, rp_error *err) {
    for (int i = 0; i < RP_CUDA_PREC_COUNT; i++)
        if (s && strcmp(s, rp_cuda_prec_name((rp_cuda_prec)i)) == 0) {
            *out = (rp_cuda_prec)i;
            return RP_OK;
        }
    return RP_FAIL(err, RP_ERR_INVALID, "GPU GEMM precision \"%s\": expected fp32, tf32, bf16 or fp16",
                   s ? s : "(null)");
}

extern "C" rp_status rp_cuda_gemm_mode_parse(const char *s, rp_cuda_gemm_mode *out, rp_error *err) {
    for (int i = 0; i < RP_CUDA_GEMM_MODE_COUNT; i++)
        if (s && strcmp(s, rp_cuda_gemm_mode_name((rp_cuda_gemm_mode)i)) == 0) {
            *out = (rp_cuda_gemm_mode)i;
            return RP_OK;
        }
    return RP_FAIL(err, RP_ERR_INVALID, "GPU GEMM mode \"%s\": expected deterministic or fast",
                   s ? s : "(null)");
}

extern "C" rp_cuda_gemm_opts rp_cuda_gemm_opts_default(void) {
    rp_cuda_gemm_opts o;
    o.precision = RP_CUDA_PREC_FP32;
    o.mode = RP_CUDA_GEMM_DETERMINISTIC;
    o.workspace_bytes = 0;
    o.stream = NULL;
    return o;
}

extern "C" rp_status rp_cuda_gemm_workspace_config(rp_error *err) {
    const char *cur = getenv("CUBLAS_WORKSPACE_CONFIG");
    if (cur && *cur) {
        if (!g_ws_done)
            snprintf(g_ws_note, sizeof g_ws_note,
                     "CUBLAS_WORKSPACE_CONFIG=%.120s (from the environment, kept)", cur);
        g_ws_done = true;
        return RP_OK;
    }
    if (setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 1) != 0)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "setenv(CUBLAS_WORKSPACE_CONFIG=:4096:8) failed: %s",
                       strerror(errno));
    snprintf(g_ws_note, sizeof g_ws_note, "CUBLAS_WORKSPACE_CONFIG=:4096:8 (set by repro %s)",
             g_handle_created
                 ? "after a cuBLAS handle of this process existed: that handle may not use it"
                 : "before the first cuBLAS handle");
    g_ws_done = true;
    return RP_OK;
}

extern "C" const char *rp_cuda_gemm_workspace_config_note(void) { return g_ws_note; }

static void free_entries(rp_cuda_gemm_ctx *c) {
    for (int i = 0; i < c->n_entries; i++) {
        GemmEntry *e = &c->entries[i];
        if (e->lc) cublasLtMatrixLayoutDestroy(e->lc);
        if (e->lb) cublasLtMatrixLayoutDestroy(e->lb);
        if (e->la) cublasLtMatrixLayoutDestroy(e->la);
        if (e->op) cublasLtMatmulDescDestroy(e->op);
    }
    free(c->entries);
    c->entries = NULL;
    c->n_entries = c->cap_entries = 0;
}

extern "C" void rp_cuda_gemm_destroy(rp_cuda_gemm_ctx *c) {
    if (!c) return;
    int prev = -1;
    bool switched = cudaGetDevice(&prev) == cudaSuccess && prev != c->device &&
                    cudaSetDevice(c->device) == cudaSuccess;
    if (c->stream || c->own_stream) cudaStreamSynchronize(c->stream);
    free_entries(c);
    for (int i = 0; i < c->n_consts; i++) cudaFree(c->consts[i].dev);
    free(c->consts);
    for (int i = 0; i < 2; i++) cudaFree(c->scratch[i]);
    cudaFree(c->workspace);
    if (c->lt) cublasLtDestroy(c->lt);
    if (c->own_stream && c->stream) cudaStreamDestroy(c->stream);
    cudaGetLastError();  // nothing to report from a destructor; do not leave it sticky
    if (switched) cudaSetDevice(prev);
    delete c;
}

// Everything allocated so far is released by rp_cuda_gemm_destroy on failure.
static rp_status ctx_init(rp_cuda_gemm_ctx *c, const rp_cuda_gemm_opts *o, rp_error *err) {
    RP_CUDA_TRY(err, cudaGetDevice(&c->device));
    if (o->mode == RP_CUDA_GEMM_DETERMINISTIC) RP_TRY(rp_cuda_gemm_workspace_config(err));
    if (o->stream) {
        c->stream = o->stream;
    } else {
        RP_CUDA_TRY(err, cudaStreamCreate(&c->stream));
        c->own_stream = true;
    }
    RP_CUBLAS_TRY(err, cublasLtCreate(&c->lt));
    g_handle_created = true;
    RP_CUDA_TRY(err, cudaMalloc(&c->workspace, c->ws_bytes));
    return RP_OK;
}

extern "C" rp_status rp_cuda_gemm_create(const rp_cuda_gemm_opts *opts, rp_cuda_gemm_ctx **out,
                                         rp_error *err) {
    if (!out) return RP_FAIL(err, RP_ERR_INVALID, "rp_cuda_gemm_create: out is NULL");
    *out = NULL;
    rp_cuda_gemm_opts o = opts ? *opts : rp_cuda_gemm_opts_default();
    if ((int)o.precision < 0 || (int)o.precision >= RP_CUDA_PREC_COUNT)
        return RP_FAIL(err, RP_ERR_INVALID, "rp_cuda_gemm_create: precision %d is not one of "
                       "fp32, tf32, bf16, fp16 (0..3)", (int)o.precision);
    if ((int)o.mode < 0 || (int)o.mode >= RP_CUDA_GEMM_MODE_COUNT)
        return RP_FAIL(err, RP_ERR_INVALID, "rp_cuda_gemm_create: mode %d is not deterministic (0) "
                       "or fast (1)", (int)o.mode);
    rp_cuda_gemm_ctx *c = new (std::nothrow) rp_cuda_gemm_ctx();  // value-initialised: zeros
    if (!c) return RP_FAIL(err, RP_ERR_NOMEM, "rp_cuda_gemm_create: out of host memory");
    c->prec = o.precision;
    c->mode = o.mode;
    c->ws_bytes = o.workspace_bytes ? o.workspace_bytes : RP_CUDA_GEMM_WORKSPACE_DEFAULT;
    c->device = -1;
    rp_status s = ctx_init(c, &o, err);
    if (s != RP_OK) {
        if (c->device < 0) c->device = 0;
        rp_cuda_gemm_destroy(c);
        return s;
    }
    *out = c;
    return RP_OK;
}

extern "C" rp_status rp_cuda_gemm_set_precision(rp_cuda_gemm_ctx *c, rp_cuda_prec p, rp_error *err) {
    if (!c) return RP_FAIL(err, RP_ERR_INVALID, "rp_cuda_gemm_set_precision: ctx is NULL");
    if ((int)p < 0 || (int)p >= RP_CUDA_PREC_COUNT)
        return RP_FAIL(err, RP_ERR_INVALID, "rp_cuda_gemm_set_precision: precision %d is not one of "
                       "fp32, tf32, bf16, fp16 (0..3)", (int)p);
    c->prec = p;
    return RP_OK;
}

extern "C" rp_status rp_cuda_gemm_set_mode(rp_cuda_gemm_ctx *c, rp_cuda_gemm_mode m, rp_error *err) {
    if (!c) return RP_FAIL(err, RP_ERR_INVALID, "rp_cuda_gemm_set_mode: ctx is NULL");
    if ((int)m < 0 || (int)m >= RP_CUDA_GEMM_MODE_COUNT)
        return RP_FAIL(err, RP_ERR_INVALID, "rp_cuda_gemm_set_mode: mode %d is not deterministic (0) "
                       "or fast (1)", (int)m);
    if (m == RP_CUDA_GEMM_DETERMINISTIC) RP_TRY(rp_cuda_gemm_workspace_config(err));
    c->mode = m;
    return RP_OK;
}

extern "C" rp_cuda_prec rp_cuda_gemm_precision(const rp_cuda_gemm_ctx *c) { return c->prec; }
extern "C" rp_cuda_gemm_mode rp_cuda_gemm_get_mode(const rp_cuda_gemm_ctx *c) { return c->mode; }
extern "C" cudaStream_t rp_cuda_gemm_stream(const rp_cuda_gemm_ctx *c) { return c->stream; }
extern "C" int rp_cuda_gemm_device(const rp_cuda_gemm_ctx *c) { return c->device; }

extern "C" rp_status rp_cuda_gemm_sync(rp_cuda_gemm_ctx *c, rp_error *err) {
    if (!c) return RP_FAIL(err, RP_ERR_INVALID, "rp_cuda_gemm_sync: ctx is NULL");
    RP_CUDA_TRY(err, cudaStreamSynchronize(c->stream));
    return RP_OK;
}

// Scratch buffer i holds at least `bytes`; growing waits for the stream (the old
// buffer may still be read by queued kernels) and over-allocates by 1/4.
static rp_status ensure_scratch(rp_cuda_gemm_ctx *c, int i, size_t bytes, rp_error *err) {
    if (c->scratch_bytes[i] >= bytes) return RP_OK;
    size_t want = bytes + bytes / 4;
    RP_CUDA_TRY(err, cudaStreamSynchronize(c->stream));
    RP_CUDA_TRY(err, cudaFree(c->scratch[i]));
    c->scratch[i] = NULL;
    c->scratch_bytes[i] = 0;
    RP_CUDA_TRY(err, cudaMalloc(&c->scratch[i], want));
    c->scratch_bytes[i] = want;
    return RP_OK;
}

// "A=0x.. is host memory cuBLASLt cannot read" for pointers the device cannot address.
static rp_status check_device_ptr(const char *fn, const void *p, const char *name, rp_error *err) {
    cudaPointerAttributes at;
    cudaError_t e = cudaPointerGetAttributes(&at, p);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return RP_FAIL(err, RP_ERR_INVALID, "%s: %s=%p is not a CUDA pointer (%s)", fn, name, p,
                       cudaGetErrorString(e));
    }
    if (at.type == cudaMemoryTypeUnregistered)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: %s=%p is unregistered host memory; pass device memory", fn,
                       name, p);
    return RP_OK;
}

// The rounded copy of the constant B (stored rows x cols, leading dimension ld, fp32)
// in precision prec: *out is the cached copy, made now (conversion queued on the
// stream) when the key (src, rows, cols, ld, prec) is new. *out stays NULL, and the
// caller converts into scratch as rp_cuda_gemm does, when the copy would pass the
// cap or the device has no memory left for it (the cache is an optimisation: the
// result is the same either way).
static rp_status const_get(rp_cuda_gemm_ctx *c, const float *src, int rows, int cols, int ld, int prec,
                           const void **out, rp_error *err) {
    *out = NULL;
    for (int i = 0; i < c->n_consts; i++) {
        const ConstEntry &e = c->consts[i];
        if (e.src == src && e.rows == rows && e.cols == cols && e.ld == ld && e.prec == prec) {
            *out = e.dev;
            return RP_OK;
        }
    }
    const int ldp = packed_ld(cols);
    const size_t bytes = (size_t)rows * (size_t)ldp * 2;
    if (c->const_cap && (bytes > c->const_cap || c->const_bytes > c->const_cap - bytes)) return RP_OK;
    if (c->n_consts == c->cap_consts) {
        int cap = c->cap_consts ? 2 * c->cap_consts : 64;
        ConstEntry *ne = (ConstEntry *)realloc(c->consts, sizeof(ConstEntry) * (size_t)cap);
        if (!ne) return RP_OK;  // no host memory for the table: convert per call
        c->consts = ne;
        c->cap_consts = cap;
    }
    void *dev = NULL;
    cudaError_t me = cudaMalloc(&dev, bytes);
    if (me == cudaErrorMemoryAllocation) {
        cudaGetLastError();  // not sticky; clear it so later calls do not see it
        return RP_OK;
    }
    RP_CUDA_TRY(err, me);
    rp_status s = rp_cuda_convert_f32(dev, ldp, (rp_cuda_prec)prec, src, rows, cols, ld, c->stream, err);
    if (s != RP_OK) {
        cudaFree(dev);  // nothing was queued that reads it (the launch failed)
        return s;
    }
    ConstEntry &e = c->consts[c->n_consts++];
    e.src = src;
    e.rows = rows;
    e.cols = cols;
    e.ld = ld;
    e.prec = prec;
    e.lo = (uintptr_t)src;
    e.hi = e.lo + ((size_t)(rows - 1) * (size_t)ld + (size_t)cols) * sizeof(float);
    e.dev = dev;
    e.bytes = bytes;
    c->const_bytes += bytes;
    *out = dev;
    return RP_OK;
}

// The types of a precision (and mode: FAST lets FP32 use TF32).
static void types_of(int prec, int mode, cublasComputeType_t *ct, cudaDataType_t *ab, bool *tf32) {
    *ab = CUDA_R_32F;
    *ct = CUBLAS_COMPUTE_32F;
    *tf32 = false;
    switch (prec) {
    case RP_CUDA_PREC_FP32:
        if (mode == RP_CUDA_GEMM_FAST) {
            *ct = CUBLAS_COMPUTE_32F_FAST_TF32;
            *tf32 = true;
        }
        break;
    case RP_CUDA_PREC_TF32:
        *ct = CUBLAS_COMPUTE_32F_FAST_TF32;
        *tf32 = true;
        break;
    case RP_CUDA_PREC_BF16: *ab = CUDA_R_16BF; break;
    case RP_CUDA_PREC_FP16: *ab = CUDA_R_16F; break;
    default: break;
    }
}

// Builds the descriptor and layouts of a new key (column-major view, header comment):
// cuBLASLt m = N, n = M, k = K; its A = our B (op transB), its B = our A (op transA).
static rp_status entry_init(GemmEntry *e, int ld_a, int ld_b, rp_error *err) {
    const GemmKey &k = e->key;
    cublasComputeType_t ct;
    cudaDataType_t ab;
    bool tf32;
    types_of(k.prec, k.mode, &ct, &ab, &tf32);
    RP_CUBLAS_TRY(err, cublasLtMatmulDescCreate(&e->op, ct, CUDA_R_32F));
    const cublasOperation_t opA = k.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opB = k.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    RP_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
    RP_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
    // Stored (column-major) shapes: our B is (N, K) col-major when !transB, (K, N) when
    // transB; our A is (K, M) col-major when !transA, (M, K) when transA.
    const uint64_t a_rows = k.transB ? (uint64_t)k.K : (uint64_t)k.N;
    const uint64_t a_cols = k.transB ? (uint64_t)k.N : (uint64_t)k.K;
    const uint64_t b_rows = k.transA ? (uint64_t)k.M : (uint64_t)k.K;
    const uint64_t b_cols = k.transA ? (uint64_t)k.K : (uint64_t)k.M;
    RP_CUBLAS_TRY(err, cublasLtMatrixLayoutCreate(&e->la, ab, a_rows, a_cols, (int64_t)ld_b));
    RP_CUBLAS_TRY(err, cublasLtMatrixLayoutCreate(&e->lb, ab, b_rows, b_cols, (int64_t)ld_a));
    RP_CUBLAS_TRY(err, cublasLtMatrixLayoutCreate(&e->lc, CUDA_R_32F, (uint64_t)k.N, (uint64_t)k.M,
                                                  (int64_t)k.ldc));
    return RP_OK;
}

static void key_text(const GemmKey &k, char *buf, size_t cap) {
    snprintf(buf, cap, "%s %s tA=%d tB=%d M=%d N=%d K=%d lda=%d ldb=%d ldc=%d align=%d/%d/%d",
             rp_cuda_prec_name((rp_cuda_prec)k.prec), rp_cuda_gemm_mode_name((rp_cuda_gemm_mode)k.mode),
             k.transA, k.transB, k.M, k.N, k.K, k.lda, k.ldb, k.ldc, k.alignA, k.alignB, k.alignC);
}

// Asks the heuristic; DETERMINISTIC keeps only results without any split-K reduction.
static rp_status choose_algo(rp_cuda_gemm_ctx *c, GemmEntry *e, cublasLtMatmulHeuristicResult_t *out,
                             rp_error *err) {
    const GemmKey &k = e->key;
    const bool det = k.mode == RP_CUDA_GEMM_DETERMINISTIC;
    cublasLtMatmulPreference_t pref = NULL;
    RP_CUBLAS_TRY(err, cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulHeuristicResult_t res[kMaxHeuristic];
    memset(res, 0, sizeof res);
    int n = 0;
    const uint64_t ws = c->ws_bytes;
    const uint32_t al[4] = {(uint32_t)k.alignB, (uint32_t)k.alignA, (uint32_t)k.alignC,
                            (uint32_t)k.alignC};  // cuBLASLt's A = our B
    const uint32_t mask = det ? (uint32_t)CUBLASLT_REDUCTION_SCHEME_NONE
                              : (uint32_t)CUBLASLT_REDUCTION_SCHEME_MASK;
    cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                             &ws, sizeof ws);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask,
                                                  sizeof mask);
    const cublasLtMatmulPreferenceAttributes_t al_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; i++)
        st = cublasLtMatmulPreferenceSetAttribute(pref, al_attr[i], &al[i], sizeof al[i]);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(c->lt, e->op, e->la, e->lb, e->lc, e->lc, pref,
                                            det ? kMaxHeuristic : 1, res, &n);
    cublasLtMatmulPreferenceDestroy(pref);
    char kt[200];
    key_text(k, kt, sizeof kt);
    if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "cuBLASLt heuristic for %s: %s (%s)", kt,
                       cublasGetStatusString(st), cublasGetStatusName(st));
    for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < n; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
        if (det) {  // belt and braces: the mask should already have removed these
            int32_t splitk = 1;
            uint32_t red = CUBLASLT_REDUCTION_SCHEME_NONE;
            size_t w = 0;
            if (cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk,
                                                     sizeof splitk, &w) != CUBLAS_STATUS_SUCCESS ||
                cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                     &red, sizeof red, &w) != CUBLAS_STATUS_SUCCESS)
                continue;  // cannot prove it deterministic: skip it
            if (splitk > 1 || red != CUBLASLT_REDUCTION_SCHEME_NONE) continue;
        }
        *out = res[i];
        return RP_OK;
    }
    return RP_FAIL(err, RP_ERR_UNSUPPORTED, "cuBLASLt has no %salgorithm for %s (workspace %zu bytes)",
                   det ? "deterministic (split-K-free) " : "", kt, c->ws_bytes);
}

static rp_status find_entry(rp_cuda_gemm_ctx *c, const GemmKey &k, int ld_a, int ld_b, GemmEntry **out,
                            rp_error *err) {
    const unsigned h = key_hash(k);
    for (int i = 0; i < c->n_entries; i++)
        if (c->entries[i].hash == h && key_equal(c->entries[i].key, k)) {
            *out = &c->entries[i];
            return RP_OK;
        }
    if (c->n_entries == c->cap_entries) {
        int cap = c->cap_entries ? 2 * c->cap_entries : 32;
        GemmEntry *ne = (GemmEntry *)realloc(c->entries, sizeof(GemmEntry) * (size_t)cap);
        if (!ne) return RP_FAIL(err, RP_ERR_NOMEM, "rp_cuda_gemm: out of host memory for the algorithm cache");
        c->entries = ne;
        c->cap_entries = cap;
    }
    GemmEntry *e = &c->entries[c->n_entries];
    memset(e, 0, sizeof *e);
    e->key = k;
    e->hash = h;
    rp_status s = entry_init(e, ld_a, ld_b, err);
    if (s != RP_OK) {
        if (e->lc) cublasLtMatrixLayoutDestroy(e->lc);
        if (e->lb) cublasLtMatrixLayoutDestroy(e->lb);
        if (e->la) cublasLtMatrixLayoutDestroy(e->la);
        if (e->op) cublasLtMatmulDescDestroy(e->op);
        return s;
    }
    c->n_entries++;
    *out = e;
    return RP_OK;
}

// rp_cuda_gemm and rp_cuda_gemm_const (const_b: B's rounded copy from the cache);
// fn names the entry point in messages.
static rp_status gemm_impl(rp_cuda_gemm_ctx *c, const char *fn, bool const_b, int transA, int transB, int M,
                           int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                           float *C, int ldc, rp_error *err) {
    if (!c) return RP_FAIL(err, RP_ERR_INVALID, "%s: ctx is NULL", fn);
    transA = transA != 0;
    transB = transB != 0;
    if (M < 0 || N < 0 || K < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: M=%d N=%d K=%d: sizes must be >= 0", fn, M, N, K);
    // rp_gemm's rules exactly (engine/gemm.c); with M, N, K >= 1 they also give
    // cuBLASLt's ld >= rows >= 1.
    if (ldc < N)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: ldc=%d must be >= N=%d", fn, ldc, N);
    if (transA ? lda < M : lda < K)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: lda=%d must be >= %s=%d (transA=%d: A is (%s) row-major)",
                       fn, lda, transA ? "M" : "K", transA ? M : K, transA, transA ? "K, M" : "M, K");
    if (transB ? ldb < K : ldb < N)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: ldb=%d must be >= %s=%d (transB=%d: B is (%s) row-major)",
                       fn, ldb, transB ? "K" : "N", transB ? K : N, transB, transB ? "N, K" : "K, N");
    if (M == 0 || N == 0) return RP_OK;
    if (!C) return RP_FAIL(err, RP_ERR_INVALID, "%s: C is NULL for a %d x %d result", fn, M, N);
    int dev = -1;
    RP_CUDA_TRY(err, cudaGetDevice(&dev));
    if (dev != c->device)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: current device is %d but the ctx was created on "
                       "device %d", fn, dev, c->device);
    RP_TRY(check_device_ptr(fn, C, "C", err));
    if (K == 0) {  // empty sum: C = beta * C, as rp_gemm
        rp_grid g;  // grid-stride over M * N >= 1, at most 8192 blocks
        (void)rp_grid_flat((size_t)M * (size_t)N, 256, 8192, &g);
        RP_CUDA_LAUNCHED(err, (scale_c_kernel<<<g.x, g.tx, 0, c->stream>>>(C, M, N, ldc, beta)));
        return RP_OK;
    }
    if (!A || !B)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: %s is NULL (M=%d N=%d K=%d)", fn, !A ? "A" : "B", M, N,
                       K);
    RP_TRY(check_device_ptr(fn, A, "A", err));
    RP_TRY(check_device_ptr(fn, B, "B", err));

    const int prec = c->prec, mode = c->mode;
    const void *pa = A, *pb = B;
    int ld_a = lda, ld_b = ldb;
    if (prec == RP_CUDA_PREC_BF16 || prec == RP_CUDA_PREC_FP16) {
        // Round the stored matrices (not op()) into packed scratch, as rp_gemm does.
        const int ar = transA ? K : M, ac = transA ? M : K;
        const int br = transB ? N : K, bc = transB ? K : N;
        if (ac > INT_MAX - 7 || bc > INT_MAX - 7)
            return RP_FAIL(err, RP_ERR_INVALID, "%s: %s has %d columns: the packed 16-bit copy's leading "
                           "dimension would overflow int", fn, ac > INT_MAX - 7 ? "A" : "B",
                           ac > INT_MAX - 7 ? ac : bc);
        ld_a = packed_ld(ac);
        ld_b = packed_ld(bc);
        const void *cached = NULL;  // B's rounded copy from the constant-operand cache
        if (const_b) RP_TRY(const_get(c, B, br, bc, ldb, prec, &cached, err));
        RP_TRY(ensure_scratch(c, 0, (size_t)ar * (size_t)ld_a * 2, err));
        RP_TRY(rp_cuda_convert_f32(c->scratch[0], ld_a, (rp_cuda_prec)prec, A, ar, ac, lda, c->stream, err));
        pa = c->scratch[0];
        if (cached) {
            pb = cached;
        } else {
            RP_TRY(ensure_scratch(c, 1, (size_t)br * (size_t)ld_b * 2, err));
            RP_TRY(rp_cuda_convert_f32(c->scratch[1], ld_b, (rp_cuda_prec)prec, B, br, bc, ldb, c->stream, err));
            pb = c->scratch[1];
        }
    }

    GemmKey k;
    memset(&k, 0, sizeof k);
    k.transA = transA;
    k.transB = transB;
    k.M = M;
    k.N = N;
    k.K = K;
    k.lda = lda;  // the caller's: the packed ones are a function of the shape
    k.ldb = ldb;  // (and the same whether B's copy is scratch or cached)
    k.ldc = ldc;
    k.prec = prec;
    k.mode = mode;
    k.alignA = ptr_align(pa);
    k.alignB = ptr_align(pb);
    k.alignC = ptr_align(C);
    GemmEntry *e = NULL;
    RP_TRY(find_entry(c, k, ld_a, ld_b, &e, err));

    cublasComputeType_t ct;
    cudaDataType_t ab;
    bool tf32;
    types_of(prec, mode, &ct, &ab, &tf32);
    cublasLtMatmulAlgo_t algo;
    if (mode == RP_CUDA_GEMM_DETERMINISTIC) {
        if (!e->have_algo) {
            cublasLtMatmulHeuristicResult_t r;
            RP_TRY(choose_algo(c, e, &r, err));
            e->algo = r.algo;
            e->info = describe_algo(&r.algo, r.workspaceSize, r.wavesCount, (rp_cuda_prec)prec,
                                    (rp_cuda_gemm_mode)mode, tf32);
            e->have_algo = true;
        }
        algo = e->algo;
    } else {
        cublasLtMatmulHeuristicResult_t r;
        RP_TRY(choose_algo(c, e, &r, err));
        algo = r.algo;
        e->info = describe_algo(&r.algo, r.workspaceSize, r.wavesCount, (rp_cuda_prec)prec,
                                (rp_cuda_gemm_mode)mode, tf32);
    }

    // Column-major: D (N, M) = alpha * [our B, op transB] (N, K) @ [our A, op transA] (K, M)
    // + beta * C, with D = C (same layout): row-major C = alpha op(A) op(B) + beta C.
    RP_CUBLAS_TRY(err, cublasLtMatmul(c->lt, e->op, &alpha, pb, e->la, pa, e->lb, &beta, C, e->lc, C, e->lc,
                                      &algo, c->workspace, c->ws_bytes, c->stream));
    c->last = e->info;
    return RP_OK;
}

extern "C" rp_status rp_cuda_gemm(rp_cuda_gemm_ctx *c, int transA, int transB, int M, int N, int K,
                                  float alpha, const float *A, int lda, const float *B, int ldb,
                                  float beta, float *C, int ldc, rp_error *err) {
    return gemm_impl(c, "rp_cuda_gemm", false, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                     err);
}

extern "C" rp_status rp_cuda_gemm_const(rp_cuda_gemm_ctx *c, int transA, int transB, int M, int N, int K,
                                        float alpha, const float *A, int lda, const float *B, int ldb,
                                        float beta, float *C, int ldc, rp_error *err) {
    return gemm_impl(c, "rp_cuda_gemm_const", true, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C,
                     ldc, err);
}

// ---- the constant-operand cache: forgetting, cap, size ------------------------------

// Makes the ctx's device current for a function that cannot report a failure to
// switch; restores the previous one on scope exit.
namespace {
struct DeviceScope {
    int prev = -1;
    bool switched = false;
    explicit DeviceScope(int dev) {
        switched = cudaGetDevice(&prev) == cudaSuccess && prev != dev && cudaSetDevice(dev) == cudaSuccess;
    }
    ~DeviceScope() {
        if (switched) cudaSetDevice(prev);
    }
    DeviceScope(const DeviceScope &) = delete;
    DeviceScope &operator=(const DeviceScope &) = delete;
};
}  // namespace

// Frees the entries for which drop(index, entry) is true, keeping the others in order
// (the predicate sees each entry at its index before any is removed). The
// stream is drained first (queued GEMMs may still read a copy); that and cudaFree
// can only fail for an error the next rp_cuda_gemm_sync reports, so nothing is
// cleared here and a copy that could not be freed is forgotten all the same.
template <typename Pred>
static void drop_consts(rp_cuda_gemm_ctx *c, Pred drop) {
    bool any = false;
    for (int i = 0; i < c->n_consts && !any; i++) any = drop(i, c->consts[i]);
    if (!any) return;
    DeviceScope scope(c->device);
    cudaStreamSynchronize(c->stream);
    int kept = 0;
    for (int i = 0; i < c->n_consts; i++) {
        if (drop(i, c->consts[i])) {  // consts[i] is still the original i-th: kept <= i
            cudaFree(c->consts[i].dev);
            c->const_bytes -= c->consts[i].bytes;
        } else {
            c->consts[kept++] = c->consts[i];
        }
    }
    c->n_consts = kept;
}

extern "C" void rp_cuda_gemm_forget_const(rp_cuda_gemm_ctx *c, const void *lo, size_t bytes) {
    if (!c || bytes == 0 || c->n_consts == 0) return;
    const uintptr_t a = (uintptr_t)lo;
    const uintptr_t b = a + bytes < a ? UINTPTR_MAX : a + bytes;  // saturate at the top
    drop_consts(c, [a, b](int, const ConstEntry &e) { return e.lo < b && a < e.hi; });
}

extern "C" void rp_cuda_gemm_forget_all_const(rp_cuda_gemm_ctx *c) {
    if (!c) return;
    drop_consts(c, [](int, const ConstEntry &) { return true; });
}

extern "C" void rp_cuda_gemm_set_const_cap(rp_cuda_gemm_ctx *c, size_t bytes) {
    if (!c) return;
    c->const_cap = bytes;
    if (bytes == 0 || c->const_bytes <= bytes) return;
    // Keep the oldest copies that fit, drop from the newest (the order in which they
    // would not have been made under this cap).
    size_t total = 0;
    int keep = 0;
    while (keep < c->n_consts && total + c->consts[keep].bytes <= bytes) total += c->consts[keep++].bytes;
    drop_consts(c, [keep](int i, const ConstEntry &) { return i >= keep; });
}

extern "C" size_t rp_cuda_gemm_const_cap(const rp_cuda_gemm_ctx *c) { return c ? c->const_cap : 0; }
extern "C" size_t rp_cuda_gemm_const_bytes(const rp_cuda_gemm_ctx *c) { return c ? c->const_bytes : 0; }
extern "C" int rp_cuda_gemm_const_count(const rp_cuda_gemm_ctx *c) { return c ? c->n_consts : 0; }

// ---- records ------------------------------------------------------------------------

extern "C" void rp_cuda_gemm_algo_format(const rp_cuda_gemm_algo *a, char *buf, size_t cap) {
    if (!buf || cap == 0) return;
    buf[0] = '\0';
    if (!a || !a->valid) {
        snprintf(buf, cap, "none");
        return;
    }
    size_t len = 0;
    appendf(buf, cap, &len, "algo=%d tile=%d stages=%d splitk=%d reduction=%s swizzle=%d custom=%d "
            "inner=%d cluster=%d impl=0x%llx ws=%zu waves=%.3g compute=%s",
            a->algo_id, (int)a->tile_id, (int)a->stages_id, a->splitk_num,
            a->reduction_scheme == 0xffffffffu ? "?" : reduction_name(a->reduction_scheme), (int)a->swizzle,
            (int)a->custom_option, (int)a->inner_shape_id, (int)a->cluster_shape_id, a->impl_flags,
            a->workspace_bytes, (double)a->waves, a->compute_tf32 ? "32f_fast_tf32" : "32f");
}

extern "C" rp_cuda_gemm_algo rp_cuda_gemm_last_algo_info(const rp_cuda_gemm_ctx *c) {
    if (!c) {
        rp_cuda_gemm_algo none;
        memset(&none, 0, sizeof none);
        return none;
    }
    return c->last;
}

extern "C" void rp_cuda_gemm_last_algo(const rp_cuda_gemm_ctx *c, char *buf, size_t cap) {
    rp_cuda_gemm_algo a = rp_cuda_gemm_last_algo_info(c);
    rp_cuda_gemm_algo_format(&a, buf, cap);
}

extern "C" int rp_cuda_gemm_cache_size(const rp_cuda_gemm_ctx *c) { return c ? c->n_entries : 0; }

extern "C" void rp_cuda_gemm_cache_entry(const rp_cuda_gemm_ctx *c, int i, char *buf, size_t cap) {
    if (!buf || cap == 0) return;
    buf[0] = '\0';
    if (!c || i < 0 || i >= c->n_entries) return;
    char kt[200], at[320];
    key_text(c->entries[i].key, kt, sizeof kt);
    rp_cuda_gemm_algo_format(&c->entries[i].info, at, sizeof at);
    snprintf(buf, cap, "%s: %s", kt, at);
}

extern "C" void rp_cuda_gemm_describe(const rp_cuda_gemm_ctx *c, char *buf, size_t cap) {
    if (!buf || cap == 0) return;
    buf[0] = '\0';
    if (!c) return;
    size_t len = 0;
    appendf(buf, cap, &len, "device=%d precision=%s mode=%s workspace=%zu cublaslt=%zu %s", c->device,
            rp_cuda_prec_name(c->prec), rp_cuda_gemm_mode_name(c->mode), c->ws_bytes, cublasLtGetVersion(),
            g_ws_note);
    const char *tf = getenv("NVIDIA_TF32_OVERRIDE");
    if (tf) appendf(buf, cap, &len, " NVIDIA_TF32_OVERRIDE=%.32s", tf);
}
