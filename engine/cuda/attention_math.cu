// attention_math.cu — the handle, the dispatcher and the cuBLAS variants (math, split)
// of CUDA attention (contract in cuda_attention.h; the CPU twins are
// engine/attention/math.c and split.c).
//
// math / split, per query slice of `rows` rows (math: rows = Tq, one slice), over all
// B*H heads at once:
//   S (B*H, rows, Tk) = scale q k^T     cublasGemmStridedBatchedEx, alpha = scale,
//                                       fp32 in/out, CUBLAS_COMPUTE_32F (or _FAST_TF32)
//   softmax_rows_kernel                 one block of 256 threads per row: key mask ->
//                                       -Inf, max, e = rp_expf(s - max) (fp32, the CPU's
//                                       bits), double sum, p = fl32(e * (1 / sum)) in
//                                       double: rp_softmax_rows' arithmetic
//   out (B*H, rows, D) = P v            cublasGemmStridedBatchedEx
// Row-major (rows x cols, ld) is column-major (cols x rows, ld), so S^T = K Q^T is
// gemm(T, N, m = Tk, n = rows, k = D, K, Q) and out^T = V^T P^T is
// gemm(N, N, m = D, n = rows, k = Tk, V, P).
//
// softmax_rows_kernel's reductions are fixed trees: thread t takes keys t, t + 256, ...
// in order; the warp combines with xor-shuffles 16, 8, 4, 2, 1; warp 0's thread reads
// the 8 warp results in order. Max is exact (any order gives the same), and the sum's
// order depends only on Tk. No atomics anywhere.
#define RP_CUDA_ATTN_INTERNAL 1
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_attention.h"
#include "cuda_common.h"

namespace {

constexpr int SOFTMAX_THREADS = 256;
constexpr int SOFTMAX_WARPS = SOFTMAX_THREADS / 32;

// S rows (nrows = B*H*rows_per_bh, each Tk long) in place -> softmax rows. The row
// r belongs to batch item (r / rows_per_bh) / H, whose key mask (Tk) applies.
__global__ void __launch_bounds__(SOFTMAX_THREADS)
softmax_rows_kernel(float *S, int rows_per_bh, int H, int Tk, const unsigned char *mask) {
    __shared__ float wmax[SOFTMAX_WARPS];
    __shared__ double wsum[SOFTMAX_WARPS];
    const size_t r = blockIdx.x;
    float *row = S + r * (size_t)Tk;
    const unsigned char *m = mask ? mask + (r / (size_t)rows_per_bh / (size_t)H) * (size_t)Tk : nullptr;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

    float mx = -INFINITY;  // NaNs are skipped (the compare is false), as on the CPU
    for (int j = tid; j < Tk; j += SOFTMAX_THREADS) {
        const float x = (m && !m[j]) ? -INFINITY : row[j];
        mx = x > mx ? x : mx;
    }
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) {
        const float o = __shfl_xor_sync(0xffffffffu, mx, off);
        mx = o > mx ? o : mx;
    }
    if (lane == 0) wmax[warp] = mx;
    __syncthreads();
    float M = wmax[0];
#pragma unroll
    for (int w = 1; w < SOFTMAX_WARPS; w++) M = wmax[w] > M ? wmax[w] : M;

    if (M == -INFINITY) {  // every key masked (or no finite score): zeros, NaN if a NaN was there
        int has_nan = 0;
        for (int j = tid; j < Tk; j += SOFTMAX_THREADS) has_nan |= (!m || m[j]) && isnan(row[j]);
        has_nan = __syncthreads_or(has_nan);
        const float fill = has_nan ? __int_as_float(0x7fc00000) : 0.0f;
        for (int j = tid; j < Tk; j += SOFTMAX_THREADS) row[j] = fill;
        return;
    }

    double sum = 0.0;
    for (int j = tid; j < Tk; j += SOFTMAX_THREADS) {
        const float x = (m && !m[j]) ? -INFINITY : row[j];
        const float e = rp_cuda_expf(__fsub_rn(x, M));  // masked: exp(-Inf) = 0
        row[j] = e;
        sum = __dadd_rn(sum, (double)e);
    }
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) sum = __dadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, off));
    if (lane == 0) wsum[warp] = sum;
    __syncthreads();
    double total = wsum[0];
#pragma unroll
    for (int w = 1; w < SOFTMAX_WARPS; w++) total = __dadd_rn(total, wsum[w]);
    const double inv = __drcp_rn(total);  // total >= 1: the max contributes exp(0) = 1
    for (int j = tid; j < Tk; j += SOFTMAX_THREADS) row[j] = __double2float_rn(__dmul_rn((double)row[j], inv));
}

// bf16 bit patterns -> fp32 (exact).
__global__ void bf16_to_f32_kernel(float *dst, const uint16_t *src, size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = __uint_as_float((unsigned)src[i] << 16);
}

const char *who(rp_cuda_attn_variant v) {
    switch (v) {
    case RP_CUDA_ATTN_MATH: return "math attention (cuda)";
    case RP_CUDA_ATTN_SPLIT: return "split attention (cuda)";
    case RP_CUDA_ATTN_FLASH: return "flash attention (cuda)";
    }
    return "attention (cuda)";
}

size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

// Grows the handle's scratch to at least `bytes` (waits for the stream first: earlier
// calls may still be reading the old one).
rp_status ensure_ws(rp_cuda_attn *a, size_t bytes, const char *what, rp_error *err) {
    if (bytes <= a->ws_bytes) return RP_OK;
    RP_CUDA_TRY(err, cudaStreamSynchronize(a->stream));
    if (a->ws) {
        RP_CUDA_TRY(err, cudaFree(a->ws));
        a->ws = nullptr;
        a->ws_bytes = 0;
    }
    void *p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();  // not sticky: clear it so the next launch check is not blamed
        return RP_FAIL(err, e == cudaErrorMemoryAllocation ? RP_ERR_NOMEM : RP_ERR_UNSUPPORTED,
                       "%s: cannot allocate %.3f GiB of device scratch for %s: %s", "attention (cuda)",
                       (double)bytes / (1024.0 * 1024.0 * 1024.0), what, cudaGetErrorString(e));
    }
    a->ws = p;
    a->ws_bytes = bytes;
    return RP_OK;
}

// A pointer this device can read: device or managed memory on this device, registered
// host memory, or any host memory where the device has pageable-memory access.
rp_status check_ptr(const rp_cuda_attn *a, const char *w, const char *name, const void *p, rp_error *err) {
    cudaPointerAttributes at;
    std::memset(&at, 0, sizeof at);
    cudaError_t e = cudaPointerGetAttributes(&at, p);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return RP_FAIL(err, RP_ERR_INVALID, "%s: %s (%p) is not a pointer CUDA knows: %s", w, name, p,
                       cudaGetErrorString(e));
    }
    if (at.type == cudaMemoryTypeUnregistered && !a->pageable_ok)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: %s (%p) is ordinary host memory, which device %d cannot read; "
                       "pass device memory (cudaMalloc)", w, name, p, a->device);
    if (at.type == cudaMemoryTypeDevice && at.device != a->device)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: %s (%p) lives on device %d, the handle on device %d", w, name, p,
                       at.device, a->device);
    return RP_OK;
}

rp_status check_align(const char *w, const char *name, const void *p, size_t bytes, rp_error *err) {
    if ((uintptr_t)p % bytes != 0)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: %s (%p) is not %zu-byte aligned (the kernel loads %zu bytes at "
                       "a time)", w, name, p, bytes, bytes);
    return RP_OK;
}

rp_status sgemm_sb(rp_cuda_attn *a, int tf32, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                   float alpha, const float *A, int lda, long long sA, const float *B, int ldb, long long sB,
                   float *C, int ldc, long long sC, int batch, rp_error *err) {
    const float beta = 0.0f;
    RP_CUBLAS_TRY(err, cublasGemmStridedBatchedEx(a->blas, ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda, sA, B,
                                                  CUDA_R_32F, ldb, sB, &beta, C, CUDA_R_32F, ldc, sC, batch,
                                                  tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                                  CUBLAS_GEMM_DEFAULT));
    return RP_OK;
}

// math (rows = Tq) and split (rows = q_chunk): the slices in order, each GEMM, softmax, GEMM.
rp_status run_sliced(rp_cuda_attn *a, const rp_cuda_attn_used *u, float *out, const float *q, const float *k,
                     const float *v, const unsigned char *mask, int B, int H, int Tq, int Tk, int D, float scale,
                     int rows, float *S, rp_error *err) {
    const int BH = B * H;  // checked <= INT_MAX by the caller
    const long long sq = (long long)Tq * D, skv = (long long)Tk * D;
    for (int i0 = 0; i0 < Tq; i0 += rows) {
        const int n = Tq - i0 < rows ? Tq - i0 : rows;
        const long long sS = (long long)n * Tk;
        RP_TRY(sgemm_sb(a, u->tf32, CUBLAS_OP_T, CUBLAS_OP_N, Tk, n, D, scale, k, D, skv, q + (size_t)i0 * D, D, sq,
                        S, Tk, sS, BH, err));
        rp_grid g;  // one block per score row; the caller checked BH * rows <= INT_MAX
        if (rp_grid_blocks((long long)BH * n, SOFTMAX_THREADS, &g) != 0)
            return RP_FAIL(err, RP_ERR_UNSUPPORTED, "attention (cuda): %lld score rows exceed the grid limit",
                           (long long)BH * n);
        RP_CUDA_LAUNCHED(err, (softmax_rows_kernel<<<g.x, g.tx, 0, a->stream>>>(S, n, H, Tk, mask)));
        RP_TRY(sgemm_sb(a, u->tf32, CUBLAS_OP_N, CUBLAS_OP_N, D, n, Tk, 1.0f, v, D, skv, S, Tk, sS,
                        out + (size_t)i0 * D, D, sq, BH, err));
    }
    return RP_OK;
}

rp_status convert_bf16(rp_cuda_attn *a, float *dst, const void *src, size_t n, rp_error *err) {
    if (n == 0) return RP_OK;
    rp_grid g;  // grid-stride over n; n >= 1 here
    (void)rp_grid_flat(n, 256, 65536, &g);
    RP_CUDA_LAUNCHED(err, (bf16_to_f32_kernel<<<g.x, g.tx, 0, a->stream>>>(
                              dst, static_cast<const uint16_t *>(src), n)));
    return RP_OK;
}

rp_status create_inner(rp_cuda_attn *a, cudaStream_t stream, rp_error *err) {
    a->stream = stream;
    RP_CUDA_TRY(err, cudaGetDevice(&a->device));
    RP_CUDA_TRY(err, cudaDeviceGetAttribute(&a->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, a->device));
    RP_CUDA_TRY(err, cudaDeviceGetAttribute(&a->pageable_ok, cudaDevAttrPageableMemoryAccess, a->device));
    cublasHandle_t h = nullptr;
    RP_CUBLAS_TRY(err, cublasCreate(&h));
    a->blas = h;
    RP_CUBLAS_TRY(err, cublasSetStream(h, stream));
    // the reference path: no TF32 / BF16x9 unless a call asks with its compute type,
    // whatever CUBLAS_* environment variables set as the default math mode
    RP_CUBLAS_TRY(err, cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    RP_CUBLAS_TRY(err, cublasSetAtomicsMode(h, CUBLAS_ATOMICS_NOT_ALLOWED));
    RP_CUBLAS_TRY(err, cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    return RP_OK;
}

}  // namespace

extern "C" const char *rp_cuda_attn_variant_name(rp_cuda_attn_variant v) {
    switch (v) {
    case RP_CUDA_ATTN_MATH: return "math";
    case RP_CUDA_ATTN_SPLIT: return "split";
    case RP_CUDA_ATTN_FLASH: return "flash";
    }
    return "?";
}

extern "C" rp_status rp_cuda_attn_create(rp_cuda_attn **out, cudaStream_t stream, rp_error *err) {
    if (!out) return RP_FAIL(err, RP_ERR_INVALID, "attention (cuda): NULL output handle pointer");
    *out = nullptr;
    rp_cuda_attn *a = static_cast<rp_cuda_attn *>(std::calloc(1, sizeof *a));
    if (!a) return RP_FAIL(err, RP_ERR_NOMEM, "attention (cuda): cannot allocate the handle");
    rp_status st = create_inner(a, stream, err);
    if (st != RP_OK) {
        (void)cudaGetLastError();
        if (a->blas) cublasDestroy(a->blas);
        std::free(a);
        return st;
    }
    *out = a;
    return RP_OK;
}

extern "C" void rp_cuda_attn_destroy(rp_cuda_attn *a) {
    if (!a) return;
    (void)cudaStreamSynchronize(a->stream);
    if (a->ws) (void)cudaFree(a->ws);
    if (a->blas) (void)cublasDestroy(a->blas);
    (void)cudaGetLastError();
    std::free(a);
}

extern "C" rp_status rp_cuda_attn_plan(const rp_cuda_attn *a, rp_cuda_attn_variant variant,
                                       const rp_cuda_attn_opts *opts, int D, rp_cuda_attn_used *out,
                                       rp_error *err) {
    rp_cuda_attn_opts o;
    std::memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (!out) return RP_FAIL(err, RP_ERR_INVALID, "attention (cuda): NULL plan output");
    if (variant != RP_CUDA_ATTN_MATH && variant != RP_CUDA_ATTN_SPLIT && variant != RP_CUDA_ATTN_FLASH)
        return RP_FAIL(err, RP_ERR_INVALID, "attention (cuda): unknown variant %d (math 0, split 1, flash 2)",
                       (int)variant);
    const char *w = who(variant);
    if (o.dtype != RP_CUDA_ATTN_F32 && o.dtype != RP_CUDA_ATTN_BF16)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: unknown input dtype %d (fp32 0, bf16 1)", w, (int)o.dtype);
    if (o.tf32 != 0 && o.tf32 != 1)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: tf32 must be 0 or 1 (got %d)", w, o.tf32);
    if (o.q_chunk < 0 || o.kv_chunk < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: chunk sizes must be >= 0, 0 = default (got q_chunk %d, "
                       "kv_chunk %d)", w, o.q_chunk, o.kv_chunk);
    if (D < 1) return RP_FAIL(err, RP_ERR_INVALID, "%s: head dim D=%d must be >= 1", w, D);
    rp_cuda_attn_used u;
    std::memset(&u, 0, sizeof u);
    const char *in = o.dtype == RP_CUDA_ATTN_BF16 ? " bf16-in" : "";
    switch (variant) {
    case RP_CUDA_ATTN_MATH:
        if (o.q_chunk || o.kv_chunk)
            return RP_FAIL(err, RP_ERR_INVALID, "%s takes no chunk sizes (got q_chunk %d, kv_chunk %d)", w,
                           o.q_chunk, o.kv_chunk);
        u.variant = variant;
        u.dtype = o.dtype;
        u.tf32 = o.tf32;
        snprintf(u.desc, sizeof u.desc, "cuda-math cublas %s%s", o.tf32 ? "tf32" : "fp32 (no tf32)", in);
        break;
    case RP_CUDA_ATTN_SPLIT:
        if (o.kv_chunk)
            return RP_FAIL(err, RP_ERR_INVALID, "%s takes no kv_chunk (got %d); only q_chunk, the query rows "
                           "per slice", w, o.kv_chunk);
        u.variant = variant;
        u.dtype = o.dtype;
        u.tf32 = o.tf32;
        u.q_chunk = o.q_chunk ? o.q_chunk : RP_CUDA_ATTN_SPLIT_Q_DEFAULT;
        snprintf(u.desc, sizeof u.desc, "cuda-split q%d cublas %s%s", u.q_chunk, o.tf32 ? "tf32" : "fp32 (no tf32)",
                 in);
        break;
    case RP_CUDA_ATTN_FLASH:
        RP_TRY(rp_cuda_attn_flash_plan_(a ? a->smem_optin : 0, &o, D, &u, err));
        break;
    }
    *out = u;
    return RP_OK;
}

extern "C" rp_status rp_cuda_attention(rp_cuda_attn *a, rp_cuda_attn_variant variant,
                                       const rp_cuda_attn_opts *opts, float *out, const void *q, const void *k,
                                       const void *v, const unsigned char *key_mask, int B, int H, int Tq,
                                       int Tk, int D, float scale, rp_error *err) {
    const char *w = who(variant);
    if (!a) return RP_FAIL(err, RP_ERR_INVALID, "%s: NULL handle (rp_cuda_attn_create)", w);
    if (!out || !q || !k || !v)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: NULL tensor argument (%s)", w,
                       !out ? "out" : !q ? "q" : !k ? "k" : "v");
    if (B < 1 || H < 1 || D < 1 || Tq < 0 || Tk < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: bad shape B=%d H=%d Tq=%d Tk=%d D=%d", w, B, H, Tq, Tk, D);
    const long long BH = (long long)B * H;
    if (BH > INT_MAX || (long long)Tq * Tk > LLONG_MAX / BH / 4)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "%s: B*H=%lld heads with Tq=%d Tk=%d is beyond this code's limits",
                       w, BH, Tq, Tk);
    rp_cuda_attn_used u;
    RP_TRY(rp_cuda_attn_plan(a, variant, opts, D, &u, err));

    int dev = -1;
    RP_CUDA_TRY(err, cudaGetDevice(&dev));
    if (dev != a->device)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: the current device is %d, the handle was created on device %d", w,
                       dev, a->device);
    RP_TRY(check_ptr(a, w, "out", out, err));
    RP_TRY(check_ptr(a, w, "q", q, err));
    RP_TRY(check_ptr(a, w, "k", k, err));
    RP_TRY(check_ptr(a, w, "v", v, err));
    if (key_mask) RP_TRY(check_ptr(a, w, "key_mask", key_mask, err));
    if (variant == RP_CUDA_ATTN_FLASH) {
        const size_t in_align = u.dtype == RP_CUDA_ATTN_BF16 ? 8 : 16;
        RP_TRY(check_align(w, "q", q, in_align, err));
        RP_TRY(check_align(w, "k", k, in_align, err));
        RP_TRY(check_align(w, "v", v, in_align, err));
        RP_TRY(check_align(w, "out", out, 16, err));
    }

    const size_t nq = (size_t)BH * Tq * D, nk = (size_t)BH * Tk * D;
    if (Tq > 0 && Tk == 0)  // no keys: every row fully masked -> zeros, as on the CPU
        RP_CUDA_TRY(err, cudaMemsetAsync(out, 0, nq * sizeof(float), a->stream));
    if (Tq > 0 && Tk > 0) {
        if (variant == RP_CUDA_ATTN_FLASH) {
            RP_TRY(rp_cuda_attn_flash_run_(a, &u, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, err));
        } else {
            const int rows = variant == RP_CUDA_ATTN_MATH ? Tq : (u.q_chunk < Tq ? u.q_chunk : Tq);
            if ((long long)BH * rows > INT_MAX)
                return RP_FAIL(err, RP_ERR_UNSUPPORTED, "%s: %lld score rows per slice exceed the grid limit %d%s",
                               w, (long long)BH * rows, INT_MAX,
                               variant == RP_CUDA_ATTN_MATH ? "; use split with a smaller q_chunk" : "");
            const size_t s_bytes = (size_t)BH * rows * Tk * sizeof(float);
            const int conv = u.dtype == RP_CUDA_ATTN_BF16;
            const size_t cq = conv ? align256(nq * sizeof(float)) : 0, ck = conv ? align256(nk * sizeof(float)) : 0;
            RP_TRY(ensure_ws(a, cq + 2 * ck + s_bytes, conv ? "the scores and fp32 copies of q, k, v" : "the scores",
                             err));
            char *ws = static_cast<char *>(a->ws);
            const float *q32 = static_cast<const float *>(q), *k32 = static_cast<const float *>(k);
            const float *v32 = static_cast<const float *>(v);
            if (conv) {
                float *qc = reinterpret_cast<float *>(ws), *kc = reinterpret_cast<float *>(ws + cq);
                float *vc = reinterpret_cast<float *>(ws + cq + ck);
                RP_TRY(convert_bf16(a, qc, q, nq, err));
                RP_TRY(convert_bf16(a, kc, k, nk, err));
                RP_TRY(convert_bf16(a, vc, v, nk, err));
                q32 = qc;
                k32 = kc;
                v32 = vc;
            }
            float *S = reinterpret_cast<float *>(ws + cq + 2 * ck);
            RP_TRY(run_sliced(a, &u, out, q32, k32, v32, key_mask, B, H, Tq, Tk, D, scale, rows, S, err));
        }
    }
    a->last = u;
    a->have_last = 1;
    return RP_OK;
}

extern "C" const rp_cuda_attn_used *rp_cuda_attn_last(const rp_cuda_attn *a) {
    return a && a->have_last ? &a->last : nullptr;
}

extern "C" const char *rp_cuda_attn_last_desc(const rp_cuda_attn *a) {
    return a && a->have_last ? a->last.desc : "";
}
