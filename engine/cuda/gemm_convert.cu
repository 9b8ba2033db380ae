// gemm_convert.cu — fp32 -> bf16 / fp16 rounding of GEMM inputs on the device
// (rp_cuda_convert_f32, engine/cuda/cuda_gemm.h).
//
// bf16 is rounded exactly as the CPU's rp_f32_to_bf16 (engine/gemm.c): NaN becomes
// the canonical quiet NaN 0x7FC0, everything else round-to-nearest-even by adding
// 0x7FFF + lsb and truncating (finite values at or past the halfway point to 2^128
// become Inf). Spelled out in integer arithmetic rather than __float2bfloat16_rn so
// the bits are the CPU's by construction, NaN payloads included. fp16 uses
// __float2half_rn (round to nearest even, gradual underflow, Inf above 65504 + half
// an ulp), the same values as rp_f32_to_f16 for every non-NaN input.
#include <cuda_fp16.h>

#include "engine/cuda/cuda_common.h"
#include "engine/cuda/cuda_gemm.h"

namespace {

__device__ __forceinline__ unsigned short f32_to_f16_rne(float x) {
    return __half_as_ushort(__float2half_rn(x));
}

// dst (rows, ldd) = round(src (rows, cols, lds)); columns [cols, ldd) = 0.
// One thread per destination element, grid-stride over rows * ldd (64-bit indices:
// a FLUX weight is 15360 x 3072 and activations can be larger).
template <bool kBf16>
__global__ void convert_kernel(unsigned short *__restrict__ dst, long long ldd,
                               const float *__restrict__ src, long long lds, long long rows,
                               long long cols) {
    const long long n = rows * ldd;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const long long r = i / ldd, c = i - r * ldd;
        unsigned short h = 0;
        if (c < cols) {
            const float x = src[r * lds + c];
            h = kBf16 ? rp_cuda_f32_to_bf16(x) : f32_to_f16_rne(x);
        }
        dst[i] = h;
    }
}

}  // namespace

extern "C" rp_status rp_cuda_convert_f32(void *dst, int ld_dst, rp_cuda_prec to, const float *src,
                                         int rows, int cols, int ld_src, cudaStream_t stream,
                                         rp_error *err) {
    if (to != RP_CUDA_PREC_BF16 && to != RP_CUDA_PREC_FP16)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "rp_cuda_convert_f32: target precision %d (%s) is not bf16 or fp16", (int)to,
                       rp_cuda_prec_name(to));
    if (rows < 0 || cols < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "rp_cuda_convert_f32: rows=%d cols=%d must be >= 0",
                       rows, cols);
    if (ld_src < cols)
        return RP_FAIL(err, RP_ERR_INVALID, "rp_cuda_convert_f32: ld_src=%d must be >= cols=%d",
                       ld_src, cols);
    if (ld_dst < cols)
        return RP_FAIL(err, RP_ERR_INVALID, "rp_cuda_convert_f32: ld_dst=%d must be >= cols=%d",
                       ld_dst, cols);
    if (rows == 0 || ld_dst == 0) return RP_OK;
    if (!dst || (!src && cols > 0))
        return RP_FAIL(err, RP_ERR_INVALID, "rp_cuda_convert_f32: %s is NULL for a %d x %d matrix",
                       !dst ? "dst" : "src", rows, cols);

    rp_grid g;  // at most 8192 blocks: the grid-stride loop covers the rest; n >= 1 here
    (void)rp_grid_flat((size_t)rows * (size_t)ld_dst, 256, 8192, &g);
    unsigned short *d = static_cast<unsigned short *>(dst);
    if (to == RP_CUDA_PREC_BF16)
        RP_CUDA_LAUNCHED(err, (convert_kernel<true><<<g.x, g.tx, 0, stream>>>(d, ld_dst, src, ld_src, rows, cols)));
    else
        RP_CUDA_LAUNCHED(err, (convert_kernel<false><<<g.x, g.tx, 0, stream>>>(d, ld_dst, src, ld_src, rows, cols)));
    return RP_OK;
}
