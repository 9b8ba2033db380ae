/* bench/attention — every attention variant at sequence 256, 1024, 4096 and head
 * dim 64, 128: seconds, GFLOP/s and the ratio to cblas_sgemm at 2048^3 measured
 * in the same run with the same threads.
 *
 *   build/bench/attention [--threads N] [--heads H] [--repeat R] [--seqs 256,1024,4096]
 *                         [--dims 64,128] [--mask]
 *
 * "canonical (invariant)" is the layout-invariant attention of numerics invariant
 * (engine/attention/canonical.c: no BLAS, fmaf chains in a fixed order).
 * Self-attention, batch 1, H heads (default 4), Tq = Tk = T; --mask masks the
 * last 1/8 of the keys (padding). FLOPs = 4 H T^2 D (the two matrix products;
 * the softmax's exps are not counted, so a variant that spends more in them
 * shows a lower rate). Each figure is the best of R runs (default 3, at least
 * 1 s of work for short ones). Inputs are seeded, so runs are comparable. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/attention/attention.h"
#include "engine/ctx.h"
#include "engine/rng.h"
#include "harness/cli/args.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Best-of-`repeat` GFLOP/s of C = A B for n x n x n fp32. */
static double sgemm_peak(int n, int repeat) {
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
          *c = malloc(sizeof(float) * n * n);
    rp_randn(a, (size_t)n * n, 1, 0, 0);
    rp_randn(b, (size_t)n * n, 2, 0, 0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
    double best = 1e30;
    for (int r = 0; r < repeat; r++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    free(a); free(b); free(c);
    return 2.0 * n * (double)n * n / best / 1e9;
}

typedef struct variant {
    const char *label;
    rp_attn_kind kind;
    int qc, kc;
    const char *profile;
    rp_numerics numerics; /* INVARIANT: the canonical attention (its own order; kind math) */
} variant;

/* Defaults (0) are the dispatcher's; the extra flash rows are the tiles auto
 * picks for SDPA's flash (PyTorch CPU: 256 x 512 for T >= 768) and mem-efficient
 * (cutlass: 64 x 64 for D <= 64, 32 x 128 above). */
static const variant VARIANTS[] = {
    {"math", RP_ATTN_MATH, 0, 0, NULL, RP_NUMERICS_DEFAULT},
    {"split q1024", RP_ATTN_SPLIT, 0, 0, NULL, RP_NUMERICS_DEFAULT},
    {"split q256", RP_ATTN_SPLIT, 256, 0, NULL, RP_NUMERICS_DEFAULT},
    {"subquad q1024 kv=sqrtT", RP_ATTN_SUBQUAD, 0, 0, NULL, RP_NUMERICS_DEFAULT},
    {"subquad q1024 kv512", RP_ATTN_SUBQUAD, 1024, 512, NULL, RP_NUMERICS_DEFAULT},
    {"flash 128x128", RP_ATTN_FLASH, 0, 0, NULL, RP_NUMERICS_DEFAULT},
    {"flash 256x512", RP_ATTN_FLASH, 256, 512, NULL, RP_NUMERICS_DEFAULT},
    {"flash 64x64", RP_ATTN_FLASH, 64, 64, NULL, RP_NUMERICS_DEFAULT},
    {"flash 32x128", RP_ATTN_FLASH, 32, 128, NULL, RP_NUMERICS_DEFAULT},
    {"auto cpu-avx512-24g", RP_ATTN_AUTO, 0, 0, "cpu-avx512-24g", RP_NUMERICS_DEFAULT},
    {"auto host", RP_ATTN_AUTO, 0, 0, "host", RP_NUMERICS_DEFAULT},
    {"canonical (invariant)", RP_ATTN_MATH, 0, 0, NULL, RP_NUMERICS_INVARIANT},
};
#define NVARIANTS ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

/* Parses "a,b,c" into up to cap positive ints; returns the count (0 on junk). */
static int parse_list(const char *s, int *out, int cap) {
    int n = 0;
    while (s && *s && n < cap) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 1 << 20 || (*end && *end != ',')) return 0;
        out[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    const int threads = (int)rp_arg_int(&a, "threads", 0);
    const int H = (int)rp_arg_int(&a, "heads", 4);
    const int repeat = (int)rp_arg_int(&a, "repeat", 3);
    const char *seqs_s = rp_arg_str(&a, "seqs", "256,1024,4096");
    const char *dims_s = rp_arg_str(&a, "dims", "64,128");
    const int use_mask = rp_arg_flag(&a, "mask");
    rp_error err;
    rp_error_clear(&err);
    int seqs[8], dims[8];
    const int ns = parse_list(seqs_s, seqs, 8), nd = parse_list(dims_s, dims, 8);
    if (rp_args_finish(&a, &err) != RP_OK || threads < 0 || H < 1 || repeat < 1 || !ns || !nd) {
        fprintf(stderr, "usage: attention [--threads N] [--heads H] [--repeat R] [--seqs 256,1024,4096] "
                        "[--dims 64,128] [--mask]%s%s\n", err.msg[0] ? "\n  " : "", err.msg);
        return 2;
    }
    rp_ctx base = rp_ctx_default();
    base.threads = threads;
    rp_ctx_apply(&base);
    const double peak = sgemm_peak(2048, 3);
    printf("attention bench: OpenBLAS %s, %d threads, batch 1, %d heads%s; sgemm 2048^3 peak %.1f GFLOP/s\n",
           rp_blas_core_loaded(), openblas_get_num_threads(), H, use_mask ? ", last 1/8 of keys masked" : "",
           peak);
    printf("%-24s %6s %4s %10s %9s %7s  %s\n", "variant", "T", "D", "seconds", "GFLOP/s", "/peak", "auto chose");
    for (int di = 0; di < nd; di++)
        for (int si = 0; si < ns; si++) {
            const int T = seqs[si], D = dims[di];
            const size_t n = (size_t)H * T * D;
            float *q = malloc(n * sizeof(float)), *k = malloc(n * sizeof(float));  /* (1, H, T, D) */
            float *v = malloc(n * sizeof(float)), *o = malloc(n * sizeof(float));  /* (1, H, T, D) */
            uint8_t *mask = malloc((size_t)T);                                       /* (1, T) */
            if (!q || !k || !v || !o || !mask) { fprintf(stderr, "out of memory at T=%d\n", T); return 1; }
            rp_randn(q, n, 11, 0, 0);
            rp_randn(k, n, 11, 1, 0);
            rp_randn(v, n, 11, 2, 0);
            for (int j = 0; j < T; j++) mask[j] = j < T - T / 8;
            const double gflop = 4.0 * H * (double)T * T * D / 1e9;
            const float scale = 1.0f / sqrtf((float)D);
            for (int vi = 0; vi < NVARIANTS; vi++) {
                const variant *vr = &VARIANTS[vi];
                rp_ctx ctx = base;
                ctx.attn.kind = vr->kind;
                ctx.attn.q_chunk = vr->qc;
                ctx.attn.kv_chunk = vr->kc;
                ctx.numerics = vr->numerics;
                if (vr->profile && rp_device_profile_parse(vr->profile, &ctx.device, &err) != RP_OK) {
                    fprintf(stderr, "%s\n", err.msg);
                    return 1;
                }
                char chose[64] = "";
                if (vr->kind == RP_ATTN_AUTO) {
                    rp_attn_choice c;
                    if (rp_attn_auto_choose(&ctx.device, &ctx.attn, 1, H, T, T, D, use_mask, &c, &err) == RP_OK)
                        snprintf(chose, sizeof chose, "%s q=%d kv=%d", rp_attn_kind_name(c.kind), c.q_chunk,
                                 c.kv_chunk);
                }
                double best = 1e30, total = 0;
                for (int r = 0; r < repeat || (total < 1.0 && r < 50); r++) {
                    double t0 = now();
                    if (rp_attention(&ctx, o, q, k, v, use_mask ? mask : NULL, 1, H, T, T, D, scale, &err) != RP_OK) {
                        fprintf(stderr, "%s T=%d D=%d: %s\n", vr->label, T, D, err.msg);
                        return 1;
                    }
                    double dt = now() - t0;
                    total += dt;
                    if (dt < best) best = dt;
                }
                printf("%-24s %6d %4d %10.5f %9.1f %7.3f  %s\n", vr->label, T, D, best, gflop / best,
                       gflop / best / peak, chose);
                fflush(stdout);
            }
            free(q); free(k); free(v); free(o); free(mask);
        }
    return 0;
}
