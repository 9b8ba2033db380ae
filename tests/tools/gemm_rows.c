/* gemm_rows.c — does a row of the engine's GEMM depend on how many rows it is computed with?
 * (tests only: the evidence tests/cli/generate_batch.sh prints.)
 *
 *   gemm_rows M1 M2 N K [N K ...]
 *
 * For each (N, K): out (M, N) = x (M, K) @ W (N, K)^T through rp_linear (fp32, the default
 * ctx, i.e. the BLAS the engine links), once with M = M1 rows and once with M = M2 > M1
 * rows whose first M1 are the same; prints whether those M1 output rows are bitwise equal.
 * Inputs are fixed normal draws (rp_randn), so the answer is reproducible. Exit 0 always
 * unless the arguments are bad (2); the last line says how many shapes differ. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ctx.h"
#include "engine/ops.h"
#include "engine/rng.h"

int main(int argc, char **argv) {
    if (argc < 5 || (argc - 3) % 2) {
        fprintf(stderr, "usage: gemm_rows M1 M2 N K [N K ...]\n");
        return 2;
    }
    const int m1 = atoi(argv[1]), m2 = atoi(argv[2]);
    if (m1 < 1 || m2 <= m1) {
        fprintf(stderr, "gemm_rows: need 1 <= M1 < M2\n");
        return 2;
    }
    rp_ctx ctx = rp_ctx_default();
    rp_ctx_apply(&ctx);
    int ndiff = 0, nshapes = 0;
    for (int a = 3; a + 1 < argc; a += 2) {
        const int N = atoi(argv[a]), K = atoi(argv[a + 1]);
        if (N < 1 || K < 1) { fprintf(stderr, "gemm_rows: bad N K %s %s\n", argv[a], argv[a + 1]); return 2; }
        float *x = malloc(sizeof(float) * m2 * K);   /* (M2, K) */
        float *w = malloc(sizeof(float) * N * K);    /* (N, K) */
        float *b = malloc(sizeof(float) * N);        /* (N) */
        float *o1 = malloc(sizeof(float) * m1 * N);  /* (M1, N) */
        float *o2 = malloc(sizeof(float) * m2 * N);  /* (M2, N) */
        if (!x || !w || !b || !o1 || !o2) { fprintf(stderr, "gemm_rows: out of memory\n"); return 2; }
        rp_randn(x, (size_t)m2 * K, 1, 0, 0);
        rp_randn(w, (size_t)N * K, 2, 0, 0);
        rp_randn(b, (size_t)N, 3, 0, 0);
        const rp_linear_w lin = {w, b, K, N};
        rp_linear(&ctx, o1, x, &lin, m1);
        rp_linear(&ctx, o2, x, &lin, m2);
        size_t nd = 0;
        double dmax = 0.0;
        for (size_t j = 0; j < (size_t)m1 * N; j++)
            if (memcmp(&o1[j], &o2[j], sizeof(float))) {
                nd++;
                dmax = fmax(dmax, fabs((double)o1[j] - (double)o2[j]));
            }
        printf("  linear (N %d, K %d): rows 0..%d computed with M = %d vs M = %d: %s", N, K, m1 - 1, m1, m2,
               nd ? "DIFFER" : "bitwise equal");
        if (nd) printf(" (%zu of %zu values, max|d| %.3e)", nd, (size_t)m1 * N, dmax);
        printf("\n");
        ndiff += nd != 0;
        nshapes++;
        free(x); free(w); free(b); free(o1); free(o2);
    }
    printf("gemm_rows: %d of %d shapes give M-dependent row bits\n", ndiff, nshapes);
    return 0;
}
