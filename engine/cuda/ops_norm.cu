// ops_norm.cu — layernorm, RMSNorm, group norm and row softmax (cuda_ops.h has the contracts).
//
// One block per row (per (image, group) for group norm). Statistics accumulate in
// double, as the CPU ops do (engine/ops.c: mean_var, rp_rmsnorm, rp_softmax_rows), so a
// result differs from the CPU's only by the double sum's order: at most one fp32
// rounding apart. The reduction order is fixed:
//   1. thread t of a block of BS sums elements t, t + BS, t + 2 BS, ... in turn;
//   2. each warp folds its 32 partials with __shfl_down_sync at offsets 16, 8, 4, 2, 1
//      (lane 0 ends with ((p0 + p16) + (p8 + p24)) + ...);
//   3. lane 0 of each warp stores its partial in shared memory; warp 0 folds the
//      BS/32 partials the same way (missing lanes contribute the neutral element);
//   4. the total is broadcast through shared memory.
// BS depends only on the row length, never on the device or the number of rows, so the
// bits are the same run to run, for any batch size, on any GPU. No atomics.
// Every double and float operation is an explicit round-to-nearest intrinsic (no FMA
// contraction), as the CPU build's -ffp-contract=off.
#include <cmath>

#include "cuda_common.h"
#include "cuda_ops.h"

namespace {

#define ARG_CHECK(cond, ...)                                           \
    do {                                                               \
        if (!(cond)) return RP_FAIL(err, RP_ERR_INVALID, __VA_ARGS__); \
    } while (0)

constexpr unsigned kFull = 0xffffffffu;

// Sum of v over the block, the fixed tree above; every thread gets the total.
// sh: 33 doubles of shared memory. Contains __syncthreads (BS > 32): call it from
// every thread of the block.
template <int BS>
__device__ __forceinline__ double block_sum(double v, double *sh) {
    for (int o = 16; o > 0; o >>= 1) v = __dadd_rn(v, __shfl_down_sync(kFull, v, o));
    if (BS == 32) return __shfl_sync(kFull, v, 0);
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    if (wid == 0) {
        double p = lane < BS / 32 ? sh[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1) p = __dadd_rn(p, __shfl_down_sync(kFull, p, o));
        if (lane == 0) sh[32] = p;
    }
    __syncthreads();
    const double total = sh[32];
    __syncthreads();  // sh may be reused by the next reduction
    return total;
}

// NaN-skipping max (the CPU's `x > m ? x : m`): a NaN never wins a compare.
__device__ __forceinline__ float max_skip_nan(float m, float x) { return x > m ? x : m; }

template <int BS>
__device__ __forceinline__ float block_max(float v, float *sh) {
    for (int o = 16; o > 0; o >>= 1) v = max_skip_nan(v, __shfl_down_sync(kFull, v, o));
    if (BS == 32) return __shfl_sync(kFull, v, 0);
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    if (wid == 0) {
        float p = lane < BS / 32 ? sh[lane] : -INFINITY;
        for (int o = 16; o > 0; o >>= 1) p = max_skip_nan(p, __shfl_down_sync(kFull, p, o));
        if (lane == 0) sh[32] = p;
    }
    __syncthreads();
    const float total = sh[32];
    __syncthreads();
    return total;
}

// ---- kernels ------------------------------------------------------------------------------------

// out, x (rows, C); one block per row. out may alias x: every element of the row is
// read by the two reductions before the last loop writes, and the last loop's thread
// writes only the elements it reads.
template <int BS>
__global__ void __launch_bounds__(BS) layernorm_kernel(float *out, const float *x, const float *w, const float *b,
                                                       int C, float epsf) {
    __shared__ double sh[33];
    const float *xr = x + (size_t)blockIdx.x * C;
    float *o = out + (size_t)blockIdx.x * C;
    double s = 0.0;
    for (int c = threadIdx.x; c < C; c += BS) s = __dadd_rn(s, (double)xr[c]);
    const double mean = __ddiv_rn(block_sum<BS>(s, sh), (double)C);
    double v = 0.0;
    for (int c = threadIdx.x; c < C; c += BS) {
        const double d = __dsub_rn((double)xr[c], mean);
        v = __dadd_rn(v, __dmul_rn(d, d));
    }
    const double var = __ddiv_rn(block_sum<BS>(v, sh), (double)C);
    const double rstd = __ddiv_rn(1.0, __dsqrt_rn(__dadd_rn(var, (double)epsf)));
    for (int c = threadIdx.x; c < C; c += BS) {
        double y = __dmul_rn(__dsub_rn((double)xr[c], mean), rstd);
        if (w) y = __dmul_rn(y, (double)w[c]);
        if (b) y = __dadd_rn(y, (double)b[c]);
        o[c] = (float)y;
    }
}

template <int BS>
__global__ void __launch_bounds__(BS) rmsnorm_kernel(float *out, const float *x, const float *w, int C, float epsf) {
    __shared__ double sh[33];
    const float *xr = x + (size_t)blockIdx.x * C;
    float *o = out + (size_t)blockIdx.x * C;
    double ss = 0.0;
    for (int c = threadIdx.x; c < C; c += BS) {
        const double xd = (double)xr[c];
        ss = __dadd_rn(ss, __dmul_rn(xd, xd));
    }
    const double tot = block_sum<BS>(ss, sh);
    const double r = __ddiv_rn(1.0, __dsqrt_rn(__dadd_rn(__ddiv_rn(tot, (double)C), (double)epsf)));
    for (int c = threadIdx.x; c < C; c += BS) {
        double y = __dmul_rn((double)xr[c], r);
        if (w) y = __dmul_rn(y, (double)w[c]);
        o[c] = (float)y;
    }
}

// One block per (image n, group g): blockIdx.x = n * G + g; the group is the contiguous
// (Cg * HW) block at ((n * C + g * Cg) * HW).
template <int BS>
__global__ void __launch_bounds__(BS) groupnorm_kernel(float *out, const float *x, const float *w, const float *b,
                                                       int C, int HW, int G, float epsf) {
    __shared__ double sh[33];
    const int n = blockIdx.x / G, g = blockIdx.x % G, Cg = C / G;
    const size_t gsize = (size_t)Cg * HW;
    const size_t off = ((size_t)n * C + (size_t)g * Cg) * HW;
    const float *xg = x + off;
    float *og = out + off;
    double s = 0.0;
    for (size_t i = threadIdx.x; i < gsize; i += BS) s = __dadd_rn(s, (double)xg[i]);
    const double mean = __ddiv_rn(block_sum<BS>(s, sh), (double)gsize);
    double v = 0.0;
    for (size_t i = threadIdx.x; i < gsize; i += BS) {
        const double d = __dsub_rn((double)xg[i], mean);
        v = __dadd_rn(v, __dmul_rn(d, d));
    }
    const double var = __ddiv_rn(block_sum<BS>(v, sh), (double)gsize);
    const double rstd = __ddiv_rn(1.0, __dsqrt_rn(__dadd_rn(var, (double)epsf)));
    for (int cc = 0; cc < Cg; cc++) {
        const int c = g * Cg + cc;
        const double wc = w ? (double)w[c] : 1.0, bc = b ? (double)b[c] : 0.0;
        const float *xc = xg + (size_t)cc * HW;
        float *oc = og + (size_t)cc * HW;
        for (int i = threadIdx.x; i < HW; i += BS)
            oc[i] = (float)__dadd_rn(__dmul_rn(__dmul_rn(__dsub_rn((double)xc[i], mean), rstd), wc), bc);
    }
}

// One block per row. The exps are recomputed in the last pass (same inputs, same
// rp_cuda_expf: the same floats the sum saw), so nothing but the output is written.
template <int BS>
__global__ void __launch_bounds__(BS) softmax_kernel(float *out, const float *x, int cols) {
    __shared__ double sh[33];
    __shared__ float shf[33];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *o = out + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    int nan = 0;
    for (int j = threadIdx.x; j < cols; j += BS) {
        const float v = xr[j];
        m = max_skip_nan(m, v);
        nan |= v != v;
    }
    m = block_max<BS>(m, shf);
    const int any_nan = __syncthreads_or(nan);
    if (m == -INFINITY) {  // every key masked: zeros (NaN if a NaN hid behind the -Inf max)
        for (int j = threadIdx.x; j < cols; j += BS) o[j] = any_nan ? __int_as_float(0x7fc00000) : 0.0f;
        return;
    }
    double s = 0.0;
    for (int j = threadIdx.x; j < cols; j += BS) s = __dadd_rn(s, (double)rp_cuda_expf(__fsub_rn(xr[j], m)));
    const double inv = __ddiv_rn(1.0, block_sum<BS>(s, sh));
    for (int j = threadIdx.x; j < cols; j += BS)
        o[j] = (float)__dmul_rn((double)rp_cuda_expf(__fsub_rn(xr[j], m)), inv);
}

// Block size from the row length only (so the reduction order is a function of the
// shape): a warp for short rows (RMSNorm over a 64..256 head dim), up to 1024 threads
// for the VAE's large groups.
int block_for(size_t len) {
    if (len <= 256) return 32;
    if (len <= 2048) return 128;
    if (len <= 16384) return 512;
    return 1024;
}

}  // namespace

// ================================ C API ===========================================================

// One block of bs threads per item (launch_grid.h's blocks shape: nblocks <= 2^31 - 1).
#define LAUNCH_BS(bs, kernel, nblocks, stream, ...)                                                 \
    do {                                                                                            \
        rp_grid g_;                                                                                 \
        ARG_CHECK(rp_grid_blocks((nblocks), (unsigned)(bs), &g_) == 0,                              \
                  "%s: %lld blocks exceed the grid limit", op, (long long)(nblocks));               \
        const unsigned grid = g_.x;                                                                 \
        switch (bs) {                                                                               \
        case 32: RP_CUDA_LAUNCHED(err, (kernel<32><<<grid, 32, 0, (stream)>>>(__VA_ARGS__))); break;         \
        case 128: RP_CUDA_LAUNCHED(err, (kernel<128><<<grid, 128, 0, (stream)>>>(__VA_ARGS__))); break;      \
        case 512: RP_CUDA_LAUNCHED(err, (kernel<512><<<grid, 512, 0, (stream)>>>(__VA_ARGS__))); break;      \
        default: RP_CUDA_LAUNCHED(err, (kernel<1024><<<grid, 1024, 0, (stream)>>>(__VA_ARGS__))); break;     \
        }                                                                                           \
    } while (0)

extern "C" rp_status rp_cuda_layernorm(float *out, const float *x, const float *w, const float *b, int N, int C,
                                       float eps, cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_layernorm";
    ARG_CHECK(out && x, "%s: out %p and x %p must be non-NULL device pointers", op, (void *)out, (const void *)x);
    ARG_CHECK(N > 0 && C > 0, "%s: N = %d rows and C = %d columns must be > 0", op, N, C);
    ARG_CHECK(eps >= 0.0f, "%s: eps = %g must be >= 0", op, (double)eps);
    LAUNCH_BS(block_for((size_t)C), layernorm_kernel, N, stream, out, x, w, b, C, eps);
    return RP_OK;
}

extern "C" rp_status rp_cuda_rmsnorm(float *out, const float *x, const float *w, int N, int C, float eps,
                                     cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_rmsnorm";
    ARG_CHECK(out && x, "%s: out %p and x %p must be non-NULL device pointers", op, (void *)out, (const void *)x);
    ARG_CHECK(N > 0 && C > 0, "%s: N = %d rows and C = %d columns must be > 0", op, N, C);
    ARG_CHECK(eps >= 0.0f, "%s: eps = %g must be >= 0", op, (double)eps);
    LAUNCH_BS(block_for((size_t)C), rmsnorm_kernel, N, stream, out, x, w, C, eps);
    return RP_OK;
}

extern "C" rp_status rp_cuda_groupnorm(float *out, const float *x, const float *w, const float *b, int N, int C,
                                       int HW, int G, float eps, cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_groupnorm";
    ARG_CHECK(out && x, "%s: out %p and x %p must be non-NULL device pointers", op, (void *)out, (const void *)x);
    ARG_CHECK(N > 0 && C > 0 && HW > 0 && G > 0, "%s: N = %d, C = %d, HW = %d, G = %d must all be > 0", op, N, C,
              HW, G);
    ARG_CHECK(C % G == 0, "%s: C = %d channels must be divisible by G = %d groups", op, C, G);
    ARG_CHECK((long long)N * G <= 0x7fffffffLL, "%s: N*G = %lld blocks exceed INT_MAX", op, (long long)N * G);
    ARG_CHECK(eps >= 0.0f, "%s: eps = %g must be >= 0", op, (double)eps);
    LAUNCH_BS(block_for((size_t)(C / G) * HW), groupnorm_kernel, (long long)N * G, stream, out, x, w, b, C, HW, G,
              eps);
    return RP_OK;
}

extern "C" rp_status rp_cuda_softmax_rows(float *out, const float *x, int rows, int cols, cudaStream_t stream,
                                          rp_error *err) {
    const char *op = "rp_cuda_softmax_rows";
    ARG_CHECK(out && x, "%s: out %p and x %p must be non-NULL device pointers", op, (void *)out, (const void *)x);
    ARG_CHECK(rows > 0 && cols > 0, "%s: rows = %d and cols = %d must be > 0", op, rows, cols);
    LAUNCH_BS(block_for((size_t)cols), softmax_kernel, rows, stream, out, x, cols);
    return RP_OK;
}
