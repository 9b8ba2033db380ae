/* cuda_common.h — error plumbing shared by the CUDA sources (the .cu files of engine/cuda).
 *
 * Every CUDA runtime, cuBLAS and cuBLASLt call that can fail goes through one of
 * the RP_CUDA_TRY / RP_CUBLAS_TRY macros: on failure they fill err with the call's
 * text, the library's own error string and file:line, and return the rp_status from
 * the enclosing function (nccl-tests style). Device memory exhaustion maps to
 * RP_ERR_NOMEM, everything else to RP_ERR_UNSUPPORTED (a valid request this
 * device / library cannot do). Kernel launches are checked with RP_CUDA_LAUNCHED
 * (cudaGetLastError right after the launch). No call here synchronises. */
#ifndef REPRO_CUDA_COMMON_H
#define REPRO_CUDA_COMMON_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "engine/cuda/launch_grid.h"
#include "engine/error.h"

#define RP_CUDA_TRY(err, call)                                                                        \
    do {                                                                                              \
        cudaError_t rp_ce_ = (call);                                                                  \
        if (rp_ce_ != cudaSuccess)                                                                    \
            return rp_error_set((err), rp_ce_ == cudaErrorMemoryAllocation ? RP_ERR_NOMEM             \
                                                                           : RP_ERR_UNSUPPORTED,     \
                                __FILE__, __LINE__, "%s: %s (%s)", #call, cudaGetErrorString(rp_ce_), \
                                cudaGetErrorName(rp_ce_));                                            \
    } while (0)

#define RP_CUDA_LAUNCHED(err, what) RP_CUDA_TRY(err, ((void)(what), cudaGetLastError()))

#define RP_CUBLAS_TRY(err, call)                                                                      \
    do {                                                                                              \
        cublasStatus_t rp_bs_ = (call);                                                               \
        if (rp_bs_ != CUBLAS_STATUS_SUCCESS)                                                          \
            return rp_error_set((err), rp_bs_ == CUBLAS_STATUS_ALLOC_FAILED ? RP_ERR_NOMEM            \
                                                                            : RP_ERR_UNSUPPORTED,    \
                                __FILE__, __LINE__, "%s: %s (%s)", #call, cublasGetStatusString(rp_bs_), \
                                cublasGetStatusName(rp_bs_));                                         \
    } while (0)

#ifdef __CUDACC__
/* launch_grid.h's rows grid over (rows, cols) as a launch configuration (grid, threads per
 * block); RP_ERR_INVALID naming `op` when rows or cols is outside 1..INT_MAX. A kernel on
 * it walks its elements with RP_CUDA_COL_LOOP (outer: columns, grid.x) and
 * RP_CUDA_ROW_LOOP (inner: rows, grid.y); every (r, c) exactly once. */
struct rp_cuda_rows {
    dim3 grid, threads;
};

static inline rp_status rp_cuda_rows_grid(const char *op, long long rows, long long cols, rp_cuda_rows *l,
                                          rp_error *err) {
    rp_grid g;
    if (rp_grid_rows(rows, cols, &g) != 0)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: %lld rows of %lld columns out of range (each must be in 1..INT_MAX)",
                       op, rows, cols);
    l->grid = dim3(g.x, g.y, g.z);
    l->threads = dim3(g.tx, g.ty, 1);
    return RP_OK;
}

#define RP_CUDA_COL_LOOP(c, cols) RP_GRID_COLS_FOR(c, cols, blockIdx.x, threadIdx.x, gridDim.x, blockDim.x)
#define RP_CUDA_ROW_LOOP(r, rows) RP_GRID_ROWS_FOR(r, rows, blockIdx.y, gridDim.y)

/* rp_f32_to_bf16 (engine/gemm.c) on the device, bit for bit: NaN becomes the canonical quiet
 * NaN 0x7FC0, everything else round-to-nearest-even by adding 0x7FFF + lsb and truncating. */
static __device__ __forceinline__ unsigned short rp_cuda_f32_to_bf16(float x) {
    const unsigned int u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
    const unsigned int bias = ((u >> 16) & 1u) + 0x7fffu;
    return (unsigned short)((u + bias) >> 16);
}

/* x rounded to a bf16 value held in fp32 (rp_bf16_round's element). */
static __device__ __forceinline__ float rp_cuda_bf16_round(float x) {
    return __uint_as_float((unsigned int)rp_cuda_f32_to_bf16(x) << 16);
}

/* fastmath.h's rp_expf, operation for operation, each fp32 operation an explicit
 * round-to-nearest intrinsic so nvcc cannot contract a multiply-add into an FMA:
 * bitwise the CPU's value for every input (<= 2 ulp of exp). */
static __device__ __forceinline__ float rp_cuda_expf(float x) {
    const float LOG2E = 1.44269504088896341f;
    const float LN2_HI = 0.693145751953125f;
    const float LN2_LO = 1.42860682030941723e-6f;
    const float MAGIC = 12582912.0f;
    float xc = x < -87.5f ? -87.5f : (x > 88.75f ? 88.75f : x);
    float t = __fadd_rn(__fmul_rn(xc, LOG2E), MAGIC);
    float nf = __fsub_rn(t, MAGIC);
    int n = (int)nf;
    float r = __fsub_rn(__fsub_rn(xc, __fmul_rn(nf, LN2_HI)), __fmul_rn(nf, LN2_LO));
    float p = __fdiv_rn(1.0f, 5040.0f);
    p = __fadd_rn(__fmul_rn(p, r), __fdiv_rn(1.0f, 720.0f));
    p = __fadd_rn(__fmul_rn(p, r), __fdiv_rn(1.0f, 120.0f));
    p = __fadd_rn(__fmul_rn(p, r), __fdiv_rn(1.0f, 24.0f));
    p = __fadd_rn(__fmul_rn(p, r), __fdiv_rn(1.0f, 6.0f));
    p = __fadd_rn(__fmul_rn(p, r), 0.5f);
    p = __fadd_rn(__fmul_rn(p, r), 1.0f);
    p = __fadd_rn(__fmul_rn(p, r), 1.0f);
    int n1 = n / 2, n2 = n - n1;
    float y = __fmul_rn(__fmul_rn(p, __int_as_float((n1 + 127) << 23)), __int_as_float((n2 + 127) << 23));
    y = x < -87.33654f ? 0.0f : y;
    y = x > 88.72283f ? __int_as_float(0x7f800000) : y;
    return x != x ? x : y;
}
#endif

#endif
