#include "env.h"
#include "engine/fsutil.h"

#include <cblas.h>
#include <elf.h>
#include <link.h>
#include <png.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <yaml.h>

#ifdef REPRO_HAVE_CUDA
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "engine/cuda/cublas_load.h"
#include "engine/cuda/cuda_info.h"
#endif
#ifdef REPRO_HAVE_NCCL
#include <nccl.h>
#endif

#ifndef REPRO_GLOO_VERSION
#define REPRO_GLOO_VERSION "unknown"
#endif
#ifndef REPRO_NCCL_VERSION
#define REPRO_NCCL_VERSION "not built"
#endif

/* dl_iterate_phdr's visit of the main program (listed first, with the name ""): its
 * NT_GNU_BUILD_ID note's bytes as hex into the buffer; stops the walk. */
static int build_id_visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    char *out = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *nh, *desc = name + ((nh->n_namesz + 3u) & ~3u);
            if (desc + nh->n_descsz > end) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) && nh->n_descsz <= 64) {
                for (unsigned k = 0; k < nh->n_descsz; k++)
                    sprintf(out + 2 * k, "%02x", (unsigned char)desc[k]);
                return 1;
            }
            p = desc + ((nh->n_descsz + 3u) & ~3u);
        }
    }
    return 1; /* the main program only */
}

void rp_build_id(char out[RP_BUILD_ID_CAP]) {
    memset(out, 0, RP_BUILD_ID_CAP);
    dl_iterate_phdr(build_id_visit, out);
    if (!out[0]) snprintf(out, RP_BUILD_ID_CAP, "none");
}

/* First "key : value" line of /proc/cpuinfo whose key is `key`, into out. */
static void cpuinfo_field(const char *key, char *out, size_t cap) {
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[8192];
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) == 0 && (line[klen] == ' ' || line[klen] == '\t' || line[klen] == ':')) {
            char *v = strchr(line, ':');
            if (!v) break;
            v++;
            while (*v == ' ') v++;
            v[strcspn(v, "\n")] = '\0';
            snprintf(out, cap, "%s", v);
            break;
        }
    }
    fclose(f);
}

/* The SIMD flags that decide which kernels OpenBLAS and compilers pick. */
static void simd_flags(char *out, size_t cap) {
    char flags[8192];
    cpuinfo_field("flags", flags, sizeof flags);
    static const char *keep[] = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16",
                                 "avx512_fp16", "amx_bf16", "amx_tile", "avx_vnni"};
    out[0] = '\0';
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
        char pat[32];
        snprintf(pat, sizeof pat, " %s ", keep[i]);
        char padded[8200];
        snprintf(padded, sizeof padded, " %s ", flags);
        if (strstr(padded, pat)) {
            size_t n = strlen(out);
            snprintf(out + n, cap - n, "%s%s", n ? " " : "", keep[i]);
        }
    }
}

static void add_env_var(cJSON *o, const char *name) {
    const char *v = getenv(name);
    if (v) cJSON_AddStringToObject(o, name, v);
}

cJSON *rp_env_collect(void) {
    cJSON *env = cJSON_CreateObject();
    char buf[8192];

    cJSON *host = cJSON_AddObjectToObject(env, "host");
    if (gethostname(buf, sizeof buf) == 0) cJSON_AddStringToObject(host, "hostname", buf);
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(buf, sizeof buf, "%s %s %s", u.sysname, u.release, u.machine);
        cJSON_AddStringToObject(host, "os", buf);
    }
    cpuinfo_field("model name", buf, sizeof buf);
    cJSON_AddStringToObject(host, "cpu_model", buf);
    cJSON_AddNumberToObject(host, "cpu_cores_online", (double)sysconf(_SC_NPROCESSORS_ONLN));
    simd_flags(buf, sizeof buf);
    cJSON_AddStringToObject(host, "cpu_simd", buf);

    cJSON *blas = cJSON_AddObjectToObject(env, "openblas");
    cJSON_AddStringToObject(blas, "config", openblas_get_config());
    cJSON_AddStringToObject(blas, "core", openblas_get_corename());
    cJSON_AddNumberToObject(blas, "threads", openblas_get_num_threads());

    cJSON *libs = cJSON_AddObjectToObject(env, "libraries");
    cJSON_AddStringToObject(libs, "libpng", png_get_libpng_ver(NULL));
    cJSON_AddStringToObject(libs, "sqlite", sqlite3_libversion());
    cJSON_AddStringToObject(libs, "libyaml", yaml_get_version_string());
    cJSON_AddStringToObject(libs, "cjson", cJSON_Version());
    cJSON_AddStringToObject(libs, "gloo", REPRO_GLOO_VERSION);
    cJSON_AddStringToObject(libs, "nccl", REPRO_NCCL_VERSION); /* the nccl.h built against */
#ifdef REPRO_HAVE_NCCL
    { /* the libnccl loaded at run time (NCCL_VERSION_CODE: major*10000 + minor*100 + patch
         since 2.9, major*1000 + minor*100 + patch before) */
        int v = 0;
        if (ncclGetVersion(&v) == ncclSuccess) {
            if (v >= 10000) snprintf(buf, sizeof buf, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
            else snprintf(buf, sizeof buf, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
            cJSON_AddStringToObject(libs, "nccl_runtime", buf);
        } else {
            cJSON_AddStringToObject(libs, "nccl_runtime", "unknown (ncclGetVersion failed)");
        }
    }
#else
    cJSON_AddStringToObject(libs, "nccl_runtime", "not linked");
#endif
#ifdef REPRO_HAVE_CUDA
    /* the cuBLASLt this process runs; a process with no GPU work never loads it
       (engine/cuda/cublas_load.h), and its results do not depend on it */
    if (rp_cublas_loaded()) {
        cJSON_AddNumberToObject(libs, "cublaslt", (double)cublasLtGetVersion());
    } else {
        snprintf(buf, sizeof buf, "not loaded (no GPU work; built against %d)", CUBLAS_VERSION);
        cJSON_AddStringToObject(libs, "cublaslt", buf);
    }
#endif

    cJSON *build = cJSON_AddObjectToObject(env, "build");
    cJSON_AddStringToObject(build, "repro_version", REPRO_VERSION);
    cJSON_AddStringToObject(build, "git_revision", rp_git_revision());
    char bid[RP_BUILD_ID_CAP];
    rp_build_id(bid);
    cJSON_AddStringToObject(build, "build_id", bid);
    cJSON_AddStringToObject(build, "compiler", REPRO_C_COMPILER);
    cJSON_AddStringToObject(build, "flags", REPRO_BUILD_FLAGS);
#ifdef REPRO_HAVE_CUDA
    cJSON_AddBoolToObject(build, "cuda", 1);
#else
    cJSON_AddBoolToObject(build, "cuda", 0);
#endif

    /* every visible GPU (CUDA_VISIBLE_DEVICES applies), by ordinal */
    cJSON *gpus = cJSON_AddArrayToObject(env, "gpus");
#ifdef REPRO_HAVE_CUDA
    int n = rp_cuda_device_count();
    for (int d = 0; d < n; d++) {
        rp_cuda_device_info info;
        char msg[256];
        cJSON *g = cJSON_CreateObject();
        cJSON_AddNumberToObject(g, "ordinal", d);
        if (rp_cuda_device_describe(d, &info, msg, sizeof msg) == 0) {
            cJSON_AddStringToObject(g, "name", info.name);
            char bus[32];
            if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, d) == cudaSuccess)
                cJSON_AddStringToObject(g, "pci_bus_id", bus);
            else
                cudaGetLastError();
            cJSON_AddNumberToObject(g, "sm_count", info.sm_count);
            snprintf(buf, sizeof buf, "%d.%d", info.cc_major, info.cc_minor);
            cJSON_AddStringToObject(g, "compute_capability", buf);
            cJSON_AddNumberToObject(g, "memory_gib", info.total_mem_gib);
            cJSON_AddNumberToObject(g, "driver_version", info.driver_version);
            cJSON_AddNumberToObject(g, "cuda_runtime_version", info.runtime_version);
            cJSON_AddNumberToObject(g, "cublas_version", info.cublas_version);
        } else {
            cJSON_AddStringToObject(g, "error", msg);
        }
        cJSON_AddItemToArray(gpus, g);
    }
#else
    (void)gpus;
#endif

    cJSON *vars = cJSON_AddObjectToObject(env, "variables");
    add_env_var(vars, "OPENBLAS_CORETYPE");
    add_env_var(vars, "OPENBLAS_NUM_THREADS");
    add_env_var(vars, "OMP_NUM_THREADS");
    add_env_var(vars, "CUDA_VISIBLE_DEVICES");
    add_env_var(vars, "CUDA_DEVICE_ORDER");
    add_env_var(vars, "CUBLAS_WORKSPACE_CONFIG");
    add_env_var(vars, "NVIDIA_TF32_OVERRIDE");
    add_env_var(vars, "NCCL_ALGO");
    add_env_var(vars, "NCCL_PROTO");
    add_env_var(vars, "REPRO_DEVICE");
    return env;
}

rp_status rp_env_write(const char *path, const char *numerics, rp_error *err) {
    cJSON *env = rp_env_collect();
    if (numerics) cJSON_AddStringToObject(env, "numerics", numerics);
    char *text = cJSON_Print(env);
    cJSON_Delete(env);
    if (!text) return RP_FAIL(err, RP_ERR_NOMEM, "env: JSON printing failed");
    rp_status st = rp_write_text_atomic(path, text, err);
    free(text);
    return st;
}
