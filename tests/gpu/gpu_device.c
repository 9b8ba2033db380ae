/* gpu_device.c — GPU smoke test: a CUDA device is visible and describes itself.
 * Exits 77 (ctest skip) with the reason when the build has no CUDA or no device
 * is visible, so CPU-only machines and CI report it as skipped, not passed. */
#include <stdio.h>

#ifdef REPRO_HAVE_CUDA
#include "engine/cuda/cuda_info.h"
#endif

int main(void) {
#ifndef REPRO_HAVE_CUDA
    printf("SKIP: this build has no CUDA (nvcc was not found at configure time)\n");
    return 77;
#else
    int n = rp_cuda_device_count();
    if (n == 0) {
        printf("SKIP: no CUDA device visible (no driver, or CUDA_VISIBLE_DEVICES empty)\n");
        return 77;
    }
    int failed = 0;
    for (int d = 0; d < n; d++) {
        rp_cuda_device_info info;
        char msg[256];
        if (rp_cuda_device_describe(d, &info, msg, sizeof msg) != 0) {
            printf("FAIL: device %d: %s\n", d, msg);
            failed = 1;
            continue;
        }
        printf("device %d: %s, %d SMs, cc %d.%d, %.1f GiB, driver %d, runtime %d, cuBLAS %d\n", d,
               info.name, info.sm_count, info.cc_major, info.cc_minor, info.total_mem_gib,
               info.driver_version, info.runtime_version, info.cublas_version);
        if (info.sm_count <= 0 || info.total_mem_gib <= 0 || info.cublas_version <= 0) {
            printf("FAIL: device %d reports impossible properties\n", d);
            failed = 1;
        }
    }
    return failed;
#endif
}
