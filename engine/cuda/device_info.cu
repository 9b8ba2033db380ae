// device_info.cu — device and library versions for the environment record.
#include <cstdio>
#include <cstring>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "cuda_info.h"

extern "C" int rp_cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no driver" error
        return 0;
    }
    return n;
}

extern "C" int rp_cuda_device_describe(int dev, rp_cuda_device_info *info, char *msg, int cap) {
    memset(info, 0, sizeof *info);
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, dev);
    if (e != cudaSuccess) {
        snprintf(msg, cap, "cudaGetDeviceProperties(%d): %s", dev, cudaGetErrorString(e));
        return (int)e;
    }
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->sm_count = p.multiProcessorCount;
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->total_mem_gib = (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0);
    cudaDriverGetVersion(&info->driver_version);
    cudaRuntimeGetVersion(&info->runtime_version);
    cublasHandle_t h;
    if (cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) {
        cublasGetVersion(h, &info->cublas_version);
        cublasDestroy(h);
    }
    return 0;
}
