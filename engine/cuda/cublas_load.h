/* cublas_load.h — cuBLAS and cuBLASLt, loaded on first use.
 *
 * Why: libcublasLt's start-up (its static constructors and the relocation of a
 * 540 MB library) costs every process that links it ~0.3 s of CPU and ~210 MB of
 * memory, measured before any GPU is touched. A sweep starts a process per rank per
 * launch, and on a CPU machine none of them uses cuBLAS. So the executable does not
 * link the two libraries: cublas_load.c defines every cuBLAS / cuBLASLt function this
 * project calls, under the library's own name and prototype (the headers check them),
 * and forwards it to the library, which it dlopens at the first call. The engine's
 * CUDA code calls cuBLAS as before; only a process that creates a handle, or asks a
 * version, pays for the library.
 *
 * Where the library cannot be loaded, the forwarded calls fail as cuBLAS fails
 * without a GPU (CUBLAS_STATUS_NOT_INITIALIZED), and cublasGetStatusString says why
 * (the dlopen error), so RP_CUBLAS_TRY's message names the missing library. */
#ifndef REPRO_CUBLAS_LOAD_H
#define REPRO_CUBLAS_LOAD_H

#include "engine/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads both libraries (once per process; thread-safe). RP_OK, or RP_ERR_UNSUPPORTED
 * naming the library and dlerror's text. */
rp_status rp_cublas_load(rp_error *err);

/* 1 when this process has loaded them (by rp_cublas_load or a forwarded call), else
 * 0. Never loads. */
int rp_cublas_loaded(void);

#ifdef __cplusplus
}
#endif

#endif
