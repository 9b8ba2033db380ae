/* cuda_check.h — what the GPU tests (tests/gpu/) share: a failure counter with CHECK
 * (records and goes on), CU (a CUDA runtime call of the test itself: failing is fatal,
 * nothing after it can be trusted), xmalloc (host memory or exit), to_device (a device copy
 * or exit), require_device (skip,
 * exit 77, without a GPU) and finish (the exit code from the counter). Include after
 * <cuda_runtime.h>, <stdio.h> and <stdlib.h>; one test program per translation unit. */
#ifndef REPRO_TESTS_CUDA_CHECK_H
#define REPRO_TESTS_CUDA_CHECK_H

static int failures = 0;

#define CHECK(cond, ...)                                \
    do {                                                \
        if (!(cond)) {                                  \
            failures++;                                 \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                        \
            printf("\n");                               \
        }                                               \
    } while (0)

#define CU(call)                                                                               \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        printf("FAIL: out of host memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* A device copy of h (bytes long; h NULL: uninitialised), or exit. */
static inline void *to_device(const void *h, size_t bytes) {
    void *d = NULL;
    CU(cudaMalloc(&d, bytes ? bytes : 1));
    if (h && bytes) CU(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* Exits 77 (ctest's skip code) when no CUDA device is visible. */
static void require_device(void) {
    int ndev = 0;
    const cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        cudaGetLastError();
        printf("SKIP: no CUDA device visible (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        exit(77);
    }
}

/* The program's exit code: 1 after printing the failure count, else 0 after `ok`. */
static int finish(const char *ok) {
    if (failures) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("%s\n", ok);
    return 0;
}

#endif
