/* device_open.c — a device from its name (device.h: rp_device_open), for the CLIs and the
 * case worker alike. */
#include <stdlib.h>
#include <string.h>

#include "device.h"
#ifdef REPRO_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda/device_cuda.h"
#endif

rp_status rp_device_open(const char *name, const char *precision, const char *gpu_mode, int local_rank,
                         rp_device **out, int *ordinal, rp_error *err) {
    *out = NULL;
    *ordinal = -1;
    if (!name || !*name || !strcmp(name, "cpu")) return RP_OK;
    if (!strcmp(name, "host-check")) {
        if (!(*out = rp_device_host_check_create()))
            return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for the host-check device");
        return RP_OK;
    }
    if (!rp_device_name_is_cuda(name))
        return RP_FAIL(err, RP_ERR_INVALID, "device '%s': unknown (known: cpu, host-check, cuda, cuda:<GPU name "
                       "substring>, cuda:#<ordinal>)", name);
#ifdef REPRO_HAVE_CUDA
    rp_cuda_device_opts o;
    memset(&o, 0, sizeof o);
    o.select = name;
    o.local_rank = local_rank;
    RP_TRY(rp_cuda_prec_parse(precision ? precision : "fp32", &o.precision, err));
    RP_TRY(rp_cuda_gemm_mode_parse(gpu_mode ? gpu_mode : "deterministic", &o.mode, err));
    RP_TRY(rp_device_cuda_create(&o, out, err));
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess) {
        rp_device_destroy(*out);
        *out = NULL;
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "device=%s: cudaGetDevice failed after creating the device", name);
    }
    *ordinal = cur;
    return RP_OK;
#else
    (void)precision;
    (void)gpu_mode;
    (void)local_rank;
    return RP_FAIL(err, RP_ERR_UNSUPPORTED, "device=%s: this build has no CUDA (configure with nvcc on the PATH)",
                   name);
#endif
}
