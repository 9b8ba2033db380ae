/* cuda_check.h — what the GPU tests (tests/gpu/) share: a failure counter with CHECK
 * (records and goes on), CU (a CUDA runtime call of the test itself: failing is fatal,
 * nothing after it can be trusted) and xmalloc (host memory or exit). Include after
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

#endif
