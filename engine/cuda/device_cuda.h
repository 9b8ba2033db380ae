/* device_cuda.h — the "cuda" device of engine/device.h (device_cuda.c): a GPU picked
 * by name, cuBLASLt GEMMs (engine/cuda/cuda_gemm.h) in the case's precision and
 * determinism mode, our kernels (cuda_ops.h) and attention (cuda_attention.h), all on
 * one stream. Built with REPRO_HAVE_CUDA only; callers guard with #ifdef. */
#ifndef REPRO_DEVICE_CUDA_H
#define REPRO_DEVICE_CUDA_H

#include "engine/device.h"
#include "engine/cuda/cuda_gemm.h"

struct rp_trace;

typedef struct rp_cuda_device_opts {
    const char *select;       /* "cuda" or "cuda:<GPU name substring>" (case-insensitive),
                                 or "cuda:#<ordinal>" */
    int local_rank;           /* this rank's index on its host (>= 0): among the matching GPUs
                                 it takes number local_rank % count, so ranks sharing one GPU
                                 (cuda+gloo) share it and one rank per GPU (cuda+nccl) spreads */
    rp_cuda_prec precision;   /* the GEMMs' (fp32, tf32, bf16, fp16) */
    rp_cuda_gemm_mode mode;   /* deterministic | fast */
} rp_cuda_device_opts;

/* Creates the device: sets CUBLAS_WORKSPACE_CONFIG first in deterministic mode, picks
 * and makes current the GPU, creates the stream, the cuBLASLt context, a cuBLAS handle
 * (conv2d) and the attention handle. No matching GPU: RP_ERR_NOT_FOUND naming the
 * visible ones. */
rp_status rp_device_cuda_create(const rp_cuda_device_opts *o, rp_device **out, rp_error *err);

/* 1 when d is a cuda device. */
int rp_device_is_cuda(const rp_device *d);

/* Notes in t what the device ran: "cuda.device" (name, SMs, cc), "cuda.gemm" (precision,
 * mode, workspace, cuBLASLt version), "cuda.gemm.algo.<i>" for every GEMM shape the run
 * used with the algorithm it ran (two GPUs that pick different kernels show it here),
 * "cuda.attention" (the last attention call: variant, tiles) and, under auto,
 * "cuda.attention.auto.reason". NULL t or a non-cuda d: nothing. */
void rp_device_cuda_trace_notes(rp_device *d, struct rp_trace *t);

#endif
