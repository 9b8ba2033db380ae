/* cublas_load.c — cuBLAS and cuBLASLt forwarded to the libraries, loaded on first use
 * (cublas_load.h says why). Each function below has the library's name and the
 * prototype its header declares (a mismatch does not compile); RP_CUBLAS_FUNCS is the
 * one list of them: a call this project adds to the CUDA code must be added here, or
 * the link fails naming it. */
#ifdef REPRO_HAVE_CUDA

#include "cublas_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include <cublasLt.h>
#include <cublas_v2.h>

#define RP_STR_(x) #x
#define RP_STR(x) RP_STR_(x)
#define LIB_CUBLAS "libcublas.so." RP_STR(CUBLAS_VER_MAJOR)
#define LIB_CUBLASLT "libcublasLt.so." RP_STR(CUBLAS_VER_MAJOR)

/* The load's failure, as every forwarded call's status string reports it. */
static char load_error[512];
static int load_ok;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

#define NOT_LOADED CUBLAS_STATUS_NOT_INITIALIZED

/* X(return type, name, (parameters), (arguments), value returned when not loaded, lib) */
#define RP_CUBLAS_FUNCS(X)                                                                                     \
    X(cublasStatus_t, cublasCreate_v2, (cublasHandle_t * h), (h), NOT_LOADED, blas)                            \
    X(cublasStatus_t, cublasDestroy_v2, (cublasHandle_t h), (h), NOT_LOADED, blas)                             \
    X(cublasStatus_t, cublasGemmEx,                                                                            \
      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,   \
       const void *A, cudaDataType at, int lda, const void *B, cudaDataType bt, int ldb, const void *beta,     \
       void *C, cudaDataType ct, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t algo),                 \
      (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, algo), NOT_LOADED, blas)  \
    X(cublasStatus_t, cublasGemmStridedBatchedEx,                                                              \
      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,   \
       const void *A, cudaDataType at, int lda, long long int sa, const void *B, cudaDataType bt, int ldb,     \
       long long int sb, const void *beta, void *C, cudaDataType ct, int ldc, long long int sc, int batch,     \
       cublasComputeType_t compute, cublasGemmAlgo_t algo),                                                    \
      (h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, compute, algo), \
      NOT_LOADED, blas)                                                                                        \
    X(cublasStatus_t, cublasGetMathMode, (cublasHandle_t h, cublasMath_t * m), (h, m), NOT_LOADED, blas)       \
    X(cublasStatus_t, cublasSetMathMode, (cublasHandle_t h, cublasMath_t m), (h, m), NOT_LOADED, blas)         \
    X(cublasStatus_t, cublasGetPointerMode_v2, (cublasHandle_t h, cublasPointerMode_t * m), (h, m), NOT_LOADED, \
      blas)                                                                                                    \
    X(cublasStatus_t, cublasSetPointerMode_v2, (cublasHandle_t h, cublasPointerMode_t m), (h, m), NOT_LOADED,  \
      blas)                                                                                                    \
    X(cublasStatus_t, cublasSetAtomicsMode, (cublasHandle_t h, cublasAtomicsMode_t m), (h, m), NOT_LOADED,     \
      blas)                                                                                                    \
    X(cublasStatus_t, cublasGetStream_v2, (cublasHandle_t h, cudaStream_t * s), (h, s), NOT_LOADED, blas)      \
    X(cublasStatus_t, cublasSetStream_v2, (cublasHandle_t h, cudaStream_t s), (h, s), NOT_LOADED, blas)        \
    X(cublasStatus_t, cublasGetVersion_v2, (cublasHandle_t h, int *v), (h, v), NOT_LOADED, blas)               \
    X(const char *, cublasGetStatusName, (cublasStatus_t s), (s), "CUBLAS_STATUS_NOT_INITIALIZED", blas)       \
    X(const char *, cublasGetStatusString, (cublasStatus_t s), (s), load_error, blas)                          \
    X(cublasStatus_t, cublasLtCreate, (cublasLtHandle_t * h), (h), NOT_LOADED, lt)                             \
    X(cublasStatus_t, cublasLtDestroy, (cublasLtHandle_t h), (h), NOT_LOADED, lt)                              \
    X(size_t, cublasLtGetVersion, (void), (), 0, lt)                                                           \
    X(cublasStatus_t, cublasLtMatmul,                                                                          \
      (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,                        \
       cublasLtMatrixLayout_t ad, const void *B, cublasLtMatrixLayout_t bd, const void *beta, const void *C,   \
       cublasLtMatrixLayout_t cd, void *D, cublasLtMatrixLayout_t dd, const cublasLtMatmulAlgo_t *algo,        \
       void *ws, size_t ws_bytes, cudaStream_t stream),                                                        \
      (h, desc, alpha, A, ad, B, bd, beta, C, cd, D, dd, algo, ws, ws_bytes, stream), NOT_LOADED, lt)          \
    X(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,                                                          \
      (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t ad, cublasLtMatrixLayout_t bd,    \
       cublasLtMatrixLayout_t cd, cublasLtMatrixLayout_t dd, cublasLtMatmulPreference_t pref, int want,        \
       cublasLtMatmulHeuristicResult_t results[], int *got),                                                   \
      (h, desc, ad, bd, cd, dd, pref, want, results, got), NOT_LOADED, lt)                                     \
    X(cublasStatus_t, cublasLtMatmulAlgoCapGetAttribute,                                                       \
      (const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoCapAttributes_t a, void *buf, size_t n,             \
       size_t *written),                                                                                       \
      (algo, a, buf, n, written), NOT_LOADED, lt)                                                              \
    X(cublasStatus_t, cublasLtMatmulAlgoConfigGetAttribute,                                                    \
      (const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t a, void *buf, size_t n,          \
       size_t *written),                                                                                       \
      (algo, a, buf, n, written), NOT_LOADED, lt)                                                              \
    X(cublasStatus_t, cublasLtMatmulDescCreate,                                                                \
      (cublasLtMatmulDesc_t * d, cublasComputeType_t compute, cudaDataType_t scale), (d, compute, scale),      \
      NOT_LOADED, lt)                                                                                          \
    X(cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t d), (d), NOT_LOADED, lt)                \
    X(cublasStatus_t, cublasLtMatmulDescSetAttribute,                                                          \
      (cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *buf, size_t n), (d, a, buf, n),   \
      NOT_LOADED, lt)                                                                                          \
    X(cublasStatus_t, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * p), (p), NOT_LOADED, lt)   \
    X(cublasStatus_t, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t p), (p), NOT_LOADED, lt)    \
    X(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,                                                    \
      (cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const void *buf, size_t n),       \
      (p, a, buf, n), NOT_LOADED, lt)                                                                          \
    X(cublasStatus_t, cublasLtMatrixLayoutCreate,                                                              \
      (cublasLtMatrixLayout_t * l, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),               \
      (l, type, rows, cols, ld), NOT_LOADED, lt)                                                               \
    X(cublasStatus_t, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t l), (l), NOT_LOADED, lt)

/* the library's entry points, resolved by load_all */
#define DECLARE_POINTER(ret, name, params, args, fail, lib) static ret(*p_##name) params;
RP_CUBLAS_FUNCS(DECLARE_POINTER)
#undef DECLARE_POINTER

/* dlopen by soname (LD_LIBRARY_PATH, the executable's run path, the cache), then from the
 * toolkit's library folder the build found (REPRO_CUDA_LIB_DIR). NULL with load_error set. */
static void *open_lib(const char *soname) {
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
#ifdef REPRO_CUDA_LIB_DIR
    if (!h) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", REPRO_CUDA_LIB_DIR, soname);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
#endif
    if (!h) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "cuBLAS not loaded: %s", why ? why : soname);
    }
    return h;
}

static void load_all(void) {
    /* cuBLASLt first: libcublas needs it, and then finds it loaded */
    void *lt = open_lib(LIB_CUBLASLT);
    void *blas = lt ? open_lib(LIB_CUBLAS) : NULL;
    if (!blas) return;
#define RESOLVE(ret, name, params, args, fail, lib)                                                      \
    if (!(*(void **)&p_##name = dlsym(lib, #name))) {                                                   \
        snprintf(load_error, sizeof load_error, "cuBLAS not loaded: %s has no %s", lib == lt ? LIB_CUBLASLT \
                                                                                          : LIB_CUBLAS, \
                 #name);                                                                                \
        return;                                                                                         \
    }
    RP_CUBLAS_FUNCS(RESOLVE)
#undef RESOLVE
    /* the handles stay open for the process's life: the kernels they hold may run until exit */
    __atomic_store_n(&load_ok, 1, __ATOMIC_RELEASE);
}

static int ensure_loaded(void) {
    pthread_once(&load_once, load_all);
    return __atomic_load_n(&load_ok, __ATOMIC_ACQUIRE);
}

rp_status rp_cublas_load(rp_error *err) {
    if (ensure_loaded()) return RP_OK;
    return RP_FAIL(err, RP_ERR_UNSUPPORTED, "%s", load_error);
}

int rp_cublas_loaded(void) { return __atomic_load_n(&load_ok, __ATOMIC_ACQUIRE); }

/* the forwarding definitions, under the libraries' names */
#define FORWARD(ret, name, params, args, fail, lib) \
    ret CUBLASWINAPI name params {                  \
        if (!ensure_loaded()) return fail;          \
        return p_##name args;                       \
    }
RP_CUBLAS_FUNCS(FORWARD)
#undef FORWARD

#endif /* REPRO_HAVE_CUDA */
