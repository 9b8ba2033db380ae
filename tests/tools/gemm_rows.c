/* gemm_rows.c — does a row of the engine's GEMM depend on how many rows it is computed with?
 * (tests only: the evidence tests/cli/generate_batch.sh prints.)
 *
 *   gemm_rows [--nt | --nn] M1 M2 N K [N K ...]
 *
 * For each (N, K): out (M, N) = x (M, K) @ W (N, K)^T through rp_linear (fp32, the default
 * ctx, i.e. the BLAS the engine links and the kernel set OPENBLAS_CORETYPE loads), once
 * with M = M1 rows and once with M = M2 > M1 rows whose first M1 are the same; prints
 * whether those M1 output rows are bitwise equal. --nt / --nn: the bare rp_gemm calls of
 * attention instead (no bias): S = x W^T (W (N, K), as q k^T) or O = x W (W (K, N), as P v),
 * the calls split and sub-quadratic attention make on query slices of M1 rows where math
 * makes them on all M2 (tests/matrices/attention_cross_device.sh).
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
    int op = 0; /* 0 rp_linear, 1 --nt, 2 --nn */
    if (argc > 1 && (!strcmp(argv[1], "--nt") || !strcmp(argv[1], "--nn"))) {
        op = argv[1][3] == 't' ? 1 : 2;
        argv++;
        argc--;
    }
    if (argc < 5 || (argc - 3) % 2) {
        fprintf(stderr, "usage: gemm_rows [--nt | --nn] M1 M2 N K [N K ...]\n");
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
        if (op == 0) {
            rp_linear(&ctx, o1, x, &lin, m1);
            rp_linear(&ctx, o2, x, &lin, m2);
        } else { /* W read as (N, K) transposed (--nt) or as (K, N) (--nn) */
            rp_gemm(&ctx, 0, op == 1, m1, N, K, 0.125f, x, K, w, op == 1 ? K : N, 0.0f, o1, N);
            rp_gemm(&ctx, 0, op == 1, m2, N, K, 0.125f, x, K, w, op == 1 ? K : N, 0.0f, o2, N);
        }
        size_t nd = 0;
        double dmax = 0.0;
        for (size_t j = 0; j < (size_t)m1 * N; j++)
            if (memcmp(&o1[j], &o2[j], sizeof(float))) {
                nd++;
                dmax = fmax(dmax, fabs((double)o1[j] - (double)o2[j]));
            }
        printf("  %s (N %d, K %d): rows 0..%d computed with M = %d vs M = %d: %s",
               op == 0 ? "linear" : op == 1 ? "gemm nt" : "gemm nn", N, K, m1 - 1, m1, m2,
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
