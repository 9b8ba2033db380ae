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
