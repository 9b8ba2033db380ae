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

#endif
