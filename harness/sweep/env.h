/* env.h — the environment record stored with every result (env.json).
 *
 * Everything that can change the numbers: CPU model and flags that select
 * OpenBLAS kernels, OpenBLAS version/config/core, compiler, flags, git revision;
 * per visible GPU ("gpus", by ordinal) its name, PCI bus id, SM count, compute
 * capability, total memory, driver, CUDA runtime and cuBLAS versions; the
 * cuBLASLt version, NCCL's (libraries.nccl: the nccl.h built against;
 * libraries.nccl_runtime: ncclGetVersion of the library loaded, "not linked"
 * without NCCL) and Gloo's; and the environment variables that steer the
 * libraries (CUDA_VISIBLE_DEVICES, CUBLAS_WORKSPACE_CONFIG, NVIDIA_TF32_OVERRIDE,
 * NCCL_ALGO/PROTO, REPRO_DEVICE, ...). */
#ifndef REPRO_ENV_H
#define REPRO_ENV_H

#include <cjson/cJSON.h>

#include "engine/error.h"

/* The git revision the binary was built from ("<sha>[-dirty]" or "unknown");
 * defined in the build's generated gitrev.c. */
const char *rp_git_revision(void);

/* The build id of the running program (the linker's NT_GNU_BUILD_ID note, hex): a hash of the
 * binary's contents, so two builds of the same sources and flags share it and any change of
 * code gives another; "none" when the program has no such note. */
#define RP_BUILD_ID_CAP 129
void rp_build_id(char out[RP_BUILD_ID_CAP]);

/* Returns a new JSON object (caller deletes). Never fails: unknown fields are "unknown". */
cJSON *rp_env_collect(void);

/* Writes rp_env_collect() to path atomically (tmp + rename), with "numerics" (the run's
 * rp_numerics name: whether its bits may depend on the layout) when numerics is not NULL. */
rp_status rp_env_write(const char *path, const char *numerics, rp_error *err);

#endif
