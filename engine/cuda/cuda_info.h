/* cuda_info.h — what CUDA devices this process sees (C interface to device_info.cu).
 * Built only when CMake found nvcc (REPRO_HAVE_CUDA); callers guard with #ifdef. */
#ifndef REPRO_CUDA_INFO_H
#define REPRO_CUDA_INFO_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rp_cuda_device_info {
    char name[256];
    int sm_count;
    int cc_major, cc_minor;
    double total_mem_gib;
    int driver_version;   /* cudaDriverGetVersion, e.g. 13000 */
    int runtime_version;  /* cudaRuntimeGetVersion */
    int cublas_version;   /* cublasGetVersion via a handle */
} rp_cuda_device_info;

/* Number of visible devices; 0 when there is no driver or no device (never fails). */
int rp_cuda_device_count(void);

/* Fills info for device dev; returns 0 on success, else a CUDA error code, with
 * a message in msg (cap bytes). */
int rp_cuda_device_describe(int dev, rp_cuda_device_info *info, char *msg, int cap);

#ifdef __cplusplus
}
#endif
#endif
