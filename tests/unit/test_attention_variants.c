/* test_attention_variants.c — split, subquad and flash against attention in
 * double precision; the bitwise-equality report; auto and device profiles; the
 * variants inside the DiT, SD3 and FLUX models; the OpenBLAS core-type re-exec.
 *
 * Error bound (u = 2^-24, gamma_n = n u / (1 - n u)), per query row and output
 * channel, for every variant; it extends test_attention.c's math bound by what
 * the tiled variants add. With e_j = gamma_{D+4} |scale| sum_d |q_d k_jd| the
 * score error, m̂ the computed row max and R the range of the row's unmasked
 * scores (+ 2 max e), the relative error of key j's unnormalised weight is
 *   rho_j = e_j + u |ŝ_j - m̂| + 2u          score, subtraction, exp (as math)
 *         + u R + (3 n_c + 3) u              rescaling to a later max:
 * flash multiplies a weight by up to n_c - 1 factors exp(m_old - m_new), each
 * with an exp (2u), a product (u) and an argument rounded by u |m_old - m_new|,
 * whose sum telescopes to <= R; subquad rescales once (exp(mx_c - M): 2u + u +
 * u |mx_c - M|). n_c = the number of key chunks (1 for math and split, and for
 * subquad with kv_chunk >= Tk). Both the output numerator and the softmax
 * denominator are sums whose terms each pass through at most
 *   L = Tk + 3 n_c + 4
 * roundings (a GEMM over a chunk of keys, its accumulation into C, one rescale
 * and one add per chunk; math's double sum is covered a fortiori), and the final
 * division (flash: reciprocal and product) adds 2u. So
 *   |out - exact| <= sum_j p_j |v_j| (rho_j + rhobar + gamma_L + 2u)
 *                    + gamma_L sum_j p_j |v_j| (1 + rho_j + rhobar + gamma_L + 2u)
 * with rhobar = sum_j p_j rho_j; second-order terms are covered by a factor 1.01.
 * Masked keys have p_j = 0 exactly in both. */
#include <check.h>
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/attention/attention.h"
#include "engine/ctx.h"
#include "engine/models/dit.h"
#include "engine/models/flux.h"
#include "engine/models/sd3.h"
#include "engine/ops.h"
#include "engine/params.h"
#include "engine/rng.h"
#include "engine/synthetic.h"
#include "engine/trace.h"
#include "tests/common/test_rng.h"

static const double U32 = 0x1p-24;
static double gamma_n(double n) { return n * U32 / (1.0 - n * U32); }

/* ---- a variant with explicit parameters ------------------------------------------ */

typedef struct vspec {
    char label[32];
    rp_attn_kind kind;   /* MATH, SPLIT, SUBQUAD or FLASH */
    int qc, kc;
} vspec;

static rp_status run_spec(const rp_ctx *ctx, const vspec *s, float *out, const float *q, const float *k,
                          const float *v, const uint8_t *m, int B, int H, int Tq, int Tk, int D, float scale) {
    rp_error err;
    rp_error_clear(&err);
    rp_status st = RP_ERR_INVALID;
    switch (s->kind) {
    case RP_ATTN_MATH: st = rp_attention_math(ctx, out, q, k, v, m, B, H, Tq, Tk, D, scale, &err); break;
    case RP_ATTN_SPLIT: st = rp_attention_split(ctx, out, q, k, v, m, B, H, Tq, Tk, D, scale, s->qc, &err); break;
    case RP_ATTN_SUBQUAD:
        st = rp_attention_subquad(ctx, out, q, k, v, m, B, H, Tq, Tk, D, scale, s->qc, s->kc, &err);
        break;
    case RP_ATTN_FLASH:
        st = rp_attention_flash(ctx, out, q, k, v, m, B, H, Tq, Tk, D, scale, s->qc, s->kc, &err);
        break;
    case RP_ATTN_AUTO: break;
    }
    if (st != RP_OK) fprintf(stderr, "%s: %s\n", s->label, err.msg);
    return st;
}

/* Key chunks a variant's weights pass through (the n_c of the bound). */
static int n_chunks(const vspec *s, int Tk) {
    if (s->kind == RP_ATTN_FLASH || (s->kind == RP_ATTN_SUBQUAD && s->kc < Tk))
        return Tk ? (Tk + s->kc - 1) / s->kc : 1;
    return 1;
}

/* ---- inputs and the double reference ------------------------------------------------ */

typedef struct problem {
    int B, H, Tq, Tk, D;
    float scale;
    float *q, *k, *v;    /* (B,H,Tq,D), (B,H,Tk,D), (B,H,Tk,D) */
    uint8_t *mask;       /* (B, Tk) or NULL */
    /* reference, per (b, h, i): */
    double *ref;         /* (B,H,Tq,D) exact output */
    double *A;           /* (B,H,Tq,D) sum_j p_j |v_jc| */
    double *Bv;          /* (B,H,Tq,D) sum_j p_j |v_jc| r_j */
    double *rbar;        /* (B,H,Tq) sum_j p_j r_j */
    double *range;       /* (B,H,Tq) R */
    uint8_t *dead;       /* (B,H,Tq) every key masked */
} problem;

static void problem_reference(problem *P);

/* mask_mode 0: none; 1: a random quarter of the keys masked per batch, except
 * that with B > 1 the last batch keeps only key Tk/2 and with B > 2 batch 1 has
 * every key masked (its rows must come out as zeros). */
static void problem_init(problem *P, int B, int H, int Tq, int Tk, int D, float qscale, int mask_mode,
                         uint64_t seed) {
    memset(P, 0, sizeof *P);
    P->B = B; P->H = H; P->Tq = Tq; P->Tk = Tk; P->D = D;
    P->scale = 1.0f / sqrtf((float)D);
    size_t nq = (size_t)B * H * Tq * D, nk = (size_t)B * H * Tk * D;
    P->q = malloc(sizeof(float) * nq + 4);
    P->k = malloc(sizeof(float) * nk + 4);
    P->v = malloc(sizeof(float) * nk + 4);
    uint64_t s = seed;
    for (size_t i = 0; i < nq; i++) P->q[i] = qscale * rng_unif(&s);
    for (size_t i = 0; i < nk; i++) P->k[i] = rng_unif(&s);
    for (size_t i = 0; i < nk; i++) P->v[i] = rng_unif(&s);
    if (mask_mode) {
        const size_t tk = Tk > 0 ? (size_t)Tk : 0;
        P->mask = malloc((size_t)B * tk + 1);
        for (int b = 0; b < B; b++)
            for (int j = 0; j < Tk; j++) P->mask[(size_t)b * Tk + j] = (rng_next(&s) % 4) != 0;
        if (B > 1) { /* the last batch keeps one key */
            memset(P->mask + (size_t)(B - 1) * tk, 0, tk);
            if (tk) P->mask[(size_t)(B - 1) * tk + tk / 2] = 1;
        }
        if (B > 2) memset(P->mask + tk, 0, tk); /* batch 1: every key masked */
    }
    problem_reference(P);
}

/* (Re)computes the double reference and the bound's pieces for P's inputs and mask. */
static void problem_reference(problem *P) {
    const int B = P->B, H = P->H, Tq = P->Tq, Tk = P->Tk, D = P->D;
    size_t nq = (size_t)B * H * Tq * D, nr = (size_t)B * H * Tq;
    free(P->ref); free(P->A); free(P->Bv); free(P->rbar); free(P->range); free(P->dead);
    P->ref = calloc(nq + 1, sizeof(double));
    P->A = calloc(nq + 1, sizeof(double));
    P->Bv = calloc(nq + 1, sizeof(double));
    P->rbar = calloc(nr + 1, sizeof(double));
    P->range = calloc(nr + 1, sizeof(double));
    P->dead = calloc(nr + 1, 1);
    double *sc = malloc(sizeof(double) * (Tk + 1)), *es = malloc(sizeof(double) * (Tk + 1));
    double *p = malloc(sizeof(double) * (Tk + 1)), *r = malloc(sizeof(double) * (Tk + 1));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            size_t bh = (size_t)b * H + h;
            const float *qb = P->q + bh * Tq * D, *kb = P->k + bh * Tk * D, *vb = P->v + bh * Tk * D;
            const uint8_t *m = P->mask ? P->mask + (size_t)b * Tk : NULL;
            for (int i = 0; i < Tq; i++) {
                size_t row = bh * Tq + i;
                int any = 0;
                double mx = -INFINITY, mn = INFINITY, emax = 0;
                for (int j = 0; j < Tk; j++) {
                    double d = 0, a = 0;
                    for (int c = 0; c < D; c++) {
                        double t = (double)qb[i * D + c] * kb[j * D + c];
                        d += t;
                        a += fabs(t);
                    }
                    sc[j] = d * P->scale;
                    es[j] = gamma_n(D + 4) * fabs(P->scale) * a;
                    if (es[j] > emax) emax = es[j];
                    if (!m || m[j]) {
                        any = 1;
                        if (sc[j] > mx) mx = sc[j];
                        if (sc[j] < mn) mn = sc[j];
                    }
                }
                if (!any) { P->dead[row] = 1; continue; }
                P->range[row] = (mx - mn) + 2 * emax;
                double sum = 0;
                for (int j = 0; j < Tk; j++) {
                    p[j] = (!m || m[j]) ? exp(sc[j] - mx) : 0.0;
                    sum += p[j];
                }
                double rb = 0;
                for (int j = 0; j < Tk; j++) {
                    p[j] /= sum;
                    r[j] = es[j] + U32 * (fabs(sc[j] - mx) + es[j] + emax) + 2 * U32;
                    rb += p[j] * r[j];
                }
                P->rbar[row] = rb;
                for (int c = 0; c < D; c++) {
                    double ref = 0, A = 0, Bv = 0;
                    for (int j = 0; j < Tk; j++) {
                        double av = fabs((double)vb[j * D + c]);
                        ref += p[j] * vb[j * D + c];
                        A += p[j] * av;
                        Bv += p[j] * av * r[j];
                    }
                    P->ref[row * D + c] = ref;
                    P->A[row * D + c] = A;
                    P->Bv[row * D + c] = Bv;
                }
            }
        }
    free(sc); free(es); free(p); free(r);
}

static void problem_free(problem *P) {
    free(P->q); free(P->k); free(P->v); free(P->mask);
    free(P->ref); free(P->A); free(P->Bv); free(P->rbar); free(P->range); free(P->dead);
}

/* Checks out against the reference with the bound for n_c key chunks; returns
 * the largest |err| / bound seen (<= 1 when it passes). */
static double check_bound(const problem *P, const float *out, int nc, const char *label) {
    const int D = P->D;
    const double gL = gamma_n((double)P->Tk + 3.0 * nc + 4.0);
    double worst = 0;
    for (size_t row = 0; row < (size_t)P->B * P->H * P->Tq; row++) {
        const float *o = out + row * D;
        if (P->dead[row]) {
            for (int c = 0; c < D; c++)
                ck_assert_msg(o[c] == 0.0f, "%s: fully masked row %zu channel %d = %g, want 0", label, row, c,
                              o[c]);
            continue;
        }
        const double delta = U32 * P->range[row] + (3.0 * nc + 3.0) * U32;
        const double rhobar = P->rbar[row] + delta;
        for (int c = 0; c < D; c++) {
            double A = P->A[row * D + c], Bv = P->Bv[row * D + c] + A * delta;
            double t1 = Bv + A * (rhobar + gL + 2 * U32);
            double t2 = gL * (A + Bv + A * (rhobar + gL + 2 * U32));
            double bound = 1.01 * (t1 + t2);
            double e = fabs((double)o[c] - P->ref[row * D + c]);
            ck_assert_msg(e <= bound, "%s B=%d H=%d Tq=%d Tk=%d D=%d%s: row %zu ch %d |%.9g - %.9g| = %.3g > %.3g",
                          label, P->B, P->H, P->Tq, P->Tk, P->D, P->mask ? " masked" : "", row, c, o[c],
                          P->ref[row * D + c], e, bound);
            if (bound > 0 && e / bound > worst) worst = e / bound;
        }
    }
    return worst;
}

/* ---- accuracy of every variant ----------------------------------------------------- */

static const int SHAPES[][5] = { /* B, H, Tq, Tk, D: odd lengths, not multiples of any tile */
    {1, 1, 1, 1, 32},   {2, 3, 17, 29, 64},  {1, 2, 33, 7, 128}, {2, 1, 5, 130, 128},
    {1, 2, 31, 257, 64}, {2, 2, 129, 65, 32}, {1, 1, 100, 301, 64}, {1, 1, 257, 131, 128},
    {3, 2, 45, 77, 64},
};
#define NSHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

/* The variants of the accuracy sweep for key length Tk. */
static int accuracy_specs(vspec *v, int Tk) {
    int n = 0;
    int sq = (int)sqrt((double)Tk) < 1 ? 1 : (int)sqrt((double)Tk);
    v[n++] = (vspec){"math", RP_ATTN_MATH, 0, 0};
    v[n++] = (vspec){"split q1", RP_ATTN_SPLIT, 1, 0};
    v[n++] = (vspec){"split q7", RP_ATTN_SPLIT, 7, 0};
    v[n++] = (vspec){"split q64", RP_ATTN_SPLIT, 64, 0};
    v[n++] = (vspec){"subquad q16 kv=Tk", RP_ATTN_SUBQUAD, 16, Tk > 0 ? Tk : 1};
    v[n++] = (vspec){"subquad q13 kv5", RP_ATTN_SUBQUAD, 13, 5};
    v[n++] = (vspec){"subquad q64 kv64", RP_ATTN_SUBQUAD, 64, 64};
    v[n] = (vspec){"", RP_ATTN_SUBQUAD, 1024, sq};
    snprintf(v[n++].label, sizeof v[0].label, "subquad q1024 kv%d", sq);
    v[n++] = (vspec){"subquad q3 kv1", RP_ATTN_SUBQUAD, 3, 1};
    v[n++] = (vspec){"flash 1x1", RP_ATTN_FLASH, 1, 1};
    v[n++] = (vspec){"flash 7x5", RP_ATTN_FLASH, 7, 5};
    v[n++] = (vspec){"flash 64x64", RP_ATTN_FLASH, 64, 64};
    v[n++] = (vspec){"flash 32x128", RP_ATTN_FLASH, 32, 128};
    v[n++] = (vspec){"flash 256x512", RP_ATTN_FLASH, 256, 512};
    return n;
}

static void accuracy_sweep(int mask_mode, int reduce_split, float qscale, uint64_t seed0) {
    rp_ctx ctx = rp_ctx_default();
    ctx.reduce_split = reduce_split;
    for (int si = 0; si < NSHAPES; si++) {
        const int *S = SHAPES[si];
        problem P;
        problem_init(&P, S[0], S[1], S[2], S[3], S[4], qscale, mask_mode, seed0 + si);
        vspec v[16];
        int nv = accuracy_specs(v, P.Tk);
        size_t no = (size_t)P.B * P.H * P.Tq * P.D;
        float *out = malloc(sizeof(float) * no + 4);
        for (int i = 0; i < nv; i++) {
            for (size_t j = 0; j < no; j++) out[j] = NAN;
            ck_assert_int_eq(run_spec(&ctx, &v[i], out, P.q, P.k, P.v, P.mask, P.B, P.H, P.Tq, P.Tk, P.D,
                                      P.scale), RP_OK);
            char label[80];
            snprintf(label, sizeof label, "%.32s%s", v[i].label, reduce_split ? " reduce_split" : "");
            check_bound(&P, out, n_chunks(&v[i], P.Tk), label);
            if (P.mask && P.B > 1) /* one key left: p = 1 exactly, out = that v row exactly, every variant */
                for (int h = 0; h < P.H; h++)
                    for (int r = 0; r < P.Tq; r++)
                        for (int c = 0; c < P.D; c++) {
                            size_t bh = (size_t)(P.B - 1) * P.H + h;
                            ck_assert_float_eq(out[(bh * P.Tq + r) * P.D + c],
                                               P.v[(bh * P.Tk + P.Tk / 2) * P.D + c]);
                        }
        }
        free(out);
        problem_free(&P);
    }
}

START_TEST(test_variants_unmasked) { accuracy_sweep(0, 0, 1.0f, 1000); }
END_TEST
START_TEST(test_variants_masked) { accuracy_sweep(1, 0, 1.0f, 2000); }
END_TEST
START_TEST(test_variants_reduce_split) { accuracy_sweep(1, 1, 1.0f, 3000); }
END_TEST
/* q x 30: scores of O(100); every tile's max differs a lot, so flash rescales
 * often and by large factors (the u R term of the bound). */
START_TEST(test_variants_large_scores) { accuracy_sweep(1, 0, 30.0f, 4000); }
END_TEST

/* Keys masked in whole tiles, in the first tile and the last: rows whose first
 * tiles are all masked start flash's running max at -Inf for several tiles. */
START_TEST(test_variants_masked_tiles) {
    const int B = 3, H = 2, Tq = 23, Tk = 70, D = 32;
    problem P;
    problem_init(&P, B, H, Tq, Tk, D, 1.0f, 0, 77);
    P.mask = malloc((size_t)B * Tk);
    for (int j = 0; j < Tk; j++) {
        P.mask[j] = j >= 40;                 /* batch 0: the first 40 keys masked (> 2 tiles of 16) */
        P.mask[Tk + j] = j < 3 || j == Tk - 1; /* batch 1: keys 0-2 and the very last */
        P.mask[2 * Tk + j] = 0;              /* batch 2: every key masked -> zeros */
    }
    problem_reference(&P);
    rp_ctx ctx = rp_ctx_default();
    const vspec v[5] = {{"flash 8x16", RP_ATTN_FLASH, 8, 16}, {"flash 5x3", RP_ATTN_FLASH, 5, 3},
                        {"subquad 8x16", RP_ATTN_SUBQUAD, 8, 16}, {"subquad 5x3", RP_ATTN_SUBQUAD, 5, 3},
                        {"split 4", RP_ATTN_SPLIT, 4, 0}};
    float out[3 * 2 * 23 * 32];
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(run_spec(&ctx, &v[i], out, P.q, P.k, P.v, P.mask, B, H, Tq, Tk, D, P.scale), RP_OK);
        check_bound(&P, out, n_chunks(&v[i], Tk), v[i].label);
    }
    problem_free(&P);
}
END_TEST

/* Tq = 0 writes nothing; Tk = 0 gives zeros, for every variant. */
START_TEST(test_variants_empty) {
    rp_ctx ctx = rp_ctx_default();
    float q[2 * 32], out[2 * 32], kv[1] = {0};
    for (int i = 0; i < 64; i++) q[i] = 1.0f;
    const vspec v[3] = {{"split", RP_ATTN_SPLIT, 4, 0}, {"subquad", RP_ATTN_SUBQUAD, 4, 4},
                        {"flash", RP_ATTN_FLASH, 4, 4}};
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 64; j++) out[j] = NAN;
        ck_assert_int_eq(run_spec(&ctx, &v[i], out, q, kv, kv, NULL, 1, 1, 2, 0, 32, 1.0f), RP_OK);
        for (int j = 0; j < 64; j++) ck_assert_float_eq(out[j], 0.0f);
        ck_assert_int_eq(run_spec(&ctx, &v[i], out, q, kv, kv, NULL, 1, 1, 0, 0, 32, 1.0f), RP_OK);
    }
}
END_TEST

/* ---- bitwise equality: report, and stability run to run ------------------------------- */

static int report_specs(vspec *v, int Tq, int Tk) {
    int n = 0;
    v[n++] = (vspec){"math", RP_ATTN_MATH, 0, 0};
    v[n++] = (vspec){"split q1", RP_ATTN_SPLIT, 1, 0};
    v[n++] = (vspec){"split q64", RP_ATTN_SPLIT, 64, 0};
    v[n++] = (vspec){"split q1024", RP_ATTN_SPLIT, 1024, 0};
    v[n++] = (vspec){"subquad q64 kv=Tk", RP_ATTN_SUBQUAD, 64, Tk};
    v[n++] = (vspec){"subquad q64 kv64", RP_ATTN_SUBQUAD, 64, 64};
    v[n++] = (vspec){"subquad q1024 kv32", RP_ATTN_SUBQUAD, 1024, 32};
    v[n++] = (vspec){"flash 64x64", RP_ATTN_FLASH, 64, 64};
    v[n++] = (vspec){"flash 32x128", RP_ATTN_FLASH, 32, 128};
    v[n++] = (vspec){"flash 128x128", RP_ATTN_FLASH, 128, 128};
    v[n++] = (vspec){"flash 256x512", RP_ATTN_FLASH, 256, 512};
    v[n++] = (vspec){"flash Tq x Tk", RP_ATTN_FLASH, Tq, Tk};
    return n;
}

START_TEST(test_bitwise_report) {
    static const int cases[][6] = { /* B, H, Tq, Tk, D, masked */
        {2, 4, 256, 256, 64, 0}, {1, 2, 333, 301, 128, 1}, {2, 2, 129, 65, 32, 1}, {1, 3, 200, 200, 72, 0},
    };
    rp_ctx ctx = rp_ctx_default();
    printf("\n=== attention: which variants give bitwise-equal outputs (OpenBLAS %s, %d threads) ===\n",
           rp_blas_core_loaded(), openblas_get_num_threads());
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int *c = cases[ci];
        problem P;
        problem_init(&P, c[0], c[1], c[2], c[3], c[4], 1.0f, c[5], 500 + ci);
        free(P.ref); P.ref = NULL; /* the reference is not needed here */
        vspec v[16];
        const int nv = report_specs(v, P.Tq, P.Tk);
        const size_t no = (size_t)P.B * P.H * P.Tq * P.D;
        float *o1 = malloc(sizeof(float) * no * nv), *o2 = malloc(sizeof(float) * no * nv);
        for (int i = 0; i < nv; i++)
            ck_assert_int_eq(run_spec(&ctx, &v[i], o1 + i * no, P.q, P.k, P.v, P.mask, P.B, P.H, P.Tq, P.Tk,
                                      P.D, P.scale), RP_OK);
        /* equality classes of run 1 */
        int cls[16];
        for (int i = 0; i < nv; i++) {
            cls[i] = i;
            for (int j = 0; j < i; j++)
                if (!memcmp(o1 + i * no, o1 + j * no, no * sizeof(float))) { cls[i] = cls[j]; break; }
        }
        printf("B=%d H=%d Tq=%d Tk=%d D=%d%s:\n", P.B, P.H, P.Tq, P.Tk, P.D, P.mask ? " masked" : "");
        for (int i = 0; i < nv; i++) {
            if (cls[i] != i) continue;
            printf("  {");
            for (int j = i, first = 1; j < nv; j++)
                if (cls[j] == i) { printf("%s%s", first ? "" : ", ", v[j].label); first = 0; }
            double md = 0; /* distance of this class from math */
            for (size_t e = 0; e < no; e++) md = fmax(md, fabs((double)o1[i * no + e] - o1[e]));
            printf("}  max|diff to math| %.3g\n", md);
        }
        /* by construction: subquad with one key chunk is split with the same query chunk */
        vspec sp = {"split q64", RP_ATTN_SPLIT, 64, 0};
        ck_assert_int_eq(run_spec(&ctx, &sp, o2, P.q, P.k, P.v, P.mask, P.B, P.H, P.Tq, P.Tk, P.D, P.scale), RP_OK);
        ck_assert_msg(!memcmp(o2, o1 + 4 * no, no * sizeof(float)), "subquad q64 kv=Tk != split q64");
        /* run 2: every variant reproduces its bits, so every equal pair stays equal */
        for (int i = nv - 1; i >= 0; i--) /* reverse order: no dependence on what ran before */
            ck_assert_int_eq(run_spec(&ctx, &v[i], o2 + i * no, P.q, P.k, P.v, P.mask, P.B, P.H, P.Tq, P.Tk,
                                      P.D, P.scale), RP_OK);
        for (int i = 0; i < nv; i++) {
            ck_assert_msg(!memcmp(o1 + i * no, o2 + i * no, no * sizeof(float)), "%s changed bits run to run",
                          v[i].label);
            for (int j = 0; j < i; j++)
                if (cls[i] == cls[j])
                    ck_assert_msg(!memcmp(o2 + i * no, o2 + j * no, no * sizeof(float)),
                                  "%s and %s were bitwise equal and are not on the second run", v[i].label,
                                  v[j].label);
        }
        free(o1); free(o2);
        problem_free(&P);
    }
    fflush(stdout);
}
END_TEST

/* ---- device profiles and auto ---------------------------------------------------------- */

START_TEST(test_profile_parse) {
    rp_error err;
    rp_device_profile p;
    char buf[256];
    const char *names[4] = {"cpu-avx512-24g", "cpu-avx2-8g", "cpu-lowmem-2g", "cpu-sse2-4g"};
    const long long mem[4] = {24LL << 30, 8LL << 30, 2LL << 30, 4LL << 30};
    const rp_simd_level simd[4] = {RP_SIMD_AVX512, RP_SIMD_AVX2, RP_SIMD_AVX2, RP_SIMD_SSE2};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(rp_device_profile_parse(names[i], &p, &err), RP_OK);
        ck_assert_str_eq(p.name, names[i]);
        ck_assert_int_eq(p.mem_free, mem[i]);
        ck_assert_int_eq(p.simd, simd[i]);
        ck_assert_ptr_nonnull(strstr(rp_device_profile_presets(), names[i]));
        /* describe parses back to the same values */
        rp_device_profile_describe(&p, buf, sizeof buf);
        rp_device_profile p2;
        ck_assert_int_eq(rp_device_profile_parse(buf, &p2, &err), RP_OK);
        ck_assert_int_eq(p2.mem_free, p.mem_free);
        ck_assert_int_eq(p2.simd, p.simd);
        ck_assert_int_eq(p2.sdpa, p.sdpa);
        ck_assert_int_eq(p2.split, p.split);
        ck_assert_int_eq(p2.flash_max_head_dim, p.flash_max_head_dim);
    }
    ck_assert_int_eq(rp_device_profile_parse("host", &p, &err), RP_OK);
    ck_assert_str_eq(p.name, "host");
    ck_assert_int_eq(p.sdpa, 0);
    ck_assert(p.mem_free > 0); /* /proc/meminfo exists on the Linux machines we test on */
    ck_assert_int_eq(rp_device_profile_parse("cpu-avx2-8g,mem=512m,flash_hd=128,sdpa=0,split=1", &p, &err), RP_OK);
    ck_assert_int_eq(p.mem_free, 512LL << 20);
    ck_assert_int_eq(p.flash_max_head_dim, 128);
    ck_assert_int_eq(p.sdpa, 0);
    ck_assert_int_eq(p.split, 1);
    ck_assert_int_eq(p.simd, RP_SIMD_AVX2);
    ck_assert_str_eq(p.name, "cpu-avx2-8g,mem=512m,flash_hd=128,sdpa=0,split=1");
    ck_assert_int_eq(rp_device_profile_parse("mem=3g,simd=sse2", &p, &err), RP_OK); /* host, overridden */
    ck_assert_int_eq(p.mem_free, 3LL << 30);
    ck_assert_int_eq(p.simd, RP_SIMD_SSE2);
    ck_assert_int_eq(rp_device_profile_parse("mem=123456", &p, &err), RP_OK);
    ck_assert_int_eq(p.mem_free, 123456);
    struct { const char *spec, *want; } bad[] = {
        {"", "empty"}, {"gpu-a100", "not known"}, {"mem=0", "bad value '0' for mem"},
        {"mem=-1g", "bad value"}, {"mem=2x", "bad value"}, {"simd=neon", "bad value 'neon' for simd"},
        {"sdpa=2", "bad value"}, {"color=red", "unknown key 'color'"}, {"mem=1g,cpu-avx2-8g", "not key=val"},
        {"flash_hd=0", "bad value"}, {"mem=99999999999t", "bad value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rp_error_clear(&err);
        ck_assert_int_eq(rp_device_profile_parse(bad[i].spec, &p, &err), RP_ERR_INVALID);
        ck_assert_msg(strstr(err.msg, bad[i].want), "'%s': '%s' lacks '%s'", bad[i].spec, err.msg, bad[i].want);
    }
}
END_TEST

typedef struct model_shape { const char *name; int B, H, T, D, masked; } model_shape;
/* The attention calls of the real models (CFG batch 2 where the pipeline batches it). */
static const model_shape MODEL_SHAPES[] = {
    {"DiT-XL/2-256", 2, 16, 256, 72, 0},
    {"DiT-XL/2-512", 2, 16, 1024, 72, 0},
    {"SD3-medium 1024px + mask", 2, 24, 4096 + 333, 64, 1},
    {"FLUX-dev 1024px", 1, 24, 4096 + 512, 128, 0},
    {"FLUX-dev 1024px + mask", 1, 24, 4096 + 512, 128, 1},
};

START_TEST(test_auto_choices) {
    const char *profiles[5] = {"cpu-avx512-24g", "cpu-avx2-8g", "cpu-lowmem-2g", "cpu-sse2-4g", "host"};
    /* expected (kind, backend, q, kv) per profile x model; host depends on the machine */
    struct { rp_attn_kind kind; const char *backend; int q, kv; } want[4][5] = {
        {{RP_ATTN_FLASH, "sdpa-flash", 64, 512}, {RP_ATTN_FLASH, "sdpa-flash", 256, 512},
         {RP_ATTN_FLASH, "sdpa-mem-efficient", 64, 64}, {RP_ATTN_FLASH, "sdpa-flash", 256, 512},
         {RP_ATTN_FLASH, "sdpa-mem-efficient", 32, 128}},
        {{RP_ATTN_FLASH, "sdpa-mem-efficient", 32, 128}, {RP_ATTN_FLASH, "sdpa-mem-efficient", 32, 128},
         {RP_ATTN_FLASH, "sdpa-mem-efficient", 64, 64}, {RP_ATTN_FLASH, "sdpa-mem-efficient", 32, 128},
         {RP_ATTN_FLASH, "sdpa-mem-efficient", 32, 128}},
        /* split: DiT-256 fits (one step); DiT-512 needs 2*16*1024^2*12 = 384 MiB: fits; SD3 needs
         * 2*24*4429^2*12 B = 10.5 GiB -> 8 steps, 4429 % 8 != 0 -> one slice; FLUX 5.7 GiB -> 4 steps */
        {{RP_ATTN_SPLIT, "comfy-split", 256, 0}, {RP_ATTN_SPLIT, "comfy-split", 1024, 0},
         {RP_ATTN_SPLIT, "comfy-split", 4429, 0}, {RP_ATTN_SPLIT, "comfy-split", 1152, 0},
         {RP_ATTN_SPLIT, "comfy-split", 1152, 0}},
        {{RP_ATTN_MATH, "sdpa-math", 0, 0}, {RP_ATTN_MATH, "sdpa-math", 0, 0}, {RP_ATTN_MATH, "sdpa-math", 0, 0},
         {RP_ATTN_MATH, "sdpa-math", 0, 0}, {RP_ATTN_MATH, "sdpa-math", 0, 0}},
    };
    const int nm = (int)(sizeof MODEL_SHAPES / sizeof MODEL_SHAPES[0]);
    rp_error err;
    printf("\n=== attention auto: choice per device profile ===\n");
    for (int mi = 0; mi < nm; mi++) {
        const model_shape *s = &MODEL_SHAPES[mi];
        int distinct = 0;
        char seen[5][64];
        for (int pi = 0; pi < 5; pi++) {
            rp_device_profile p;
            ck_assert_int_eq(rp_device_profile_parse(profiles[pi], &p, &err), RP_OK);
            rp_attn_choice c;
            rp_attn_cfg none = {RP_ATTN_AUTO, 0, 0};
            ck_assert_int_eq(rp_attn_auto_choose(&p, &none, s->B, s->H, s->T, s->T, s->D, s->masked, &c, &err), RP_OK);
            printf("  %-26s %-15s -> %-7s %-19s q=%-5d kv=%-5d\n", s->name, profiles[pi], rp_attn_kind_name(c.kind),
                   c.backend, c.q_chunk, c.kv_chunk);
            ck_assert(strlen(c.reason) > 40);
            ck_assert_ptr_nonnull(strstr(c.reason, profiles[pi]));
            if (pi < 4) {
                ck_assert_msg(c.kind == want[pi][mi].kind && !strcmp(c.backend, want[pi][mi].backend) &&
                              c.q_chunk == want[pi][mi].q && c.kv_chunk == want[pi][mi].kv,
                              "%s on %s: got %s %s q=%d kv=%d; reason: %s", s->name, profiles[pi],
                              rp_attn_kind_name(c.kind), c.backend, c.q_chunk, c.kv_chunk, c.reason);
            } else { /* this machine: ComfyUI on a CPU = sub-quadratic */
                ck_assert_int_eq(c.kind, RP_ATTN_SUBQUAD);
                ck_assert_str_eq(c.backend, "comfy-subquad");
            }
            char key[64];
            snprintf(key, sizeof key, "%s/%s/%d/%d", rp_attn_kind_name(c.kind), c.backend, c.q_chunk, c.kv_chunk);
            int dup = 0;
            for (int j = 0; j < distinct; j++) dup |= !strcmp(seen[j], key);
            if (!dup) snprintf(seen[distinct++], sizeof seen[0], "%s", key);
        }
        /* the sweep's point: the same model picks differently per profile */
        ck_assert_msg(distinct >= 4, "%s: only %d distinct choices over 5 profiles", s->name, distinct);
    }
    /* one reason in full, for the record */
    rp_device_profile p;
    rp_attn_choice c;
    ck_assert_int_eq(rp_device_profile_parse("cpu-lowmem-2g", &p, &err), RP_OK);
    ck_assert_int_eq(rp_attn_auto_choose(&p, NULL, 2, 24, 4429, 4429, 64, 1, &c, &err), RP_OK);
    printf("  reason (SD3 on cpu-lowmem-2g): %s\n", c.reason);
    ck_assert_ptr_nonnull(strstr(c.reason, "not divisible"));

    /* ComfyUI's rules at their edges */
    ck_assert_int_eq(rp_device_profile_parse("cpu-lowmem-2g,mem=1m", &p, &err), RP_OK);
    ck_assert_int_eq(rp_attn_auto_choose(&p, NULL, 2, 24, 4096, 4096, 64, 0, &c, &err), RP_OK);
    ck_assert_int_eq(c.kind, RP_ATTN_SUBQUAD); /* > 64 split steps: ComfyUI would OOM */
    ck_assert_int_eq(c.q_chunk, 512);
    ck_assert_int_eq(c.kv_chunk, 64);          /* floor(sqrt(4096)) */
    ck_assert_ptr_nonnull(strstr(c.reason, "out-of-memory"));
    ck_assert_int_eq(rp_device_profile_parse("cpu-lowmem-2g,mem=256m", &p, &err), RP_OK);
    ck_assert_int_eq(rp_attn_auto_choose(&p, NULL, 1, 1, 4096, 4096, 64, 0, &c, &err), RP_OK);
    ck_assert_int_eq(c.kind, RP_ATTN_SPLIT);   /* 192 MiB needed: one step */
    ck_assert_int_eq(c.q_chunk, 4096);
    ck_assert_int_eq(rp_device_profile_parse("cpu-lowmem-2g,mem=64m", &p, &err), RP_OK);
    ck_assert_int_eq(rp_attn_auto_choose(&p, NULL, 1, 1, 4096, 4096, 64, 0, &c, &err), RP_OK);
    ck_assert_int_eq(c.q_chunk, 1024);         /* 192 / 64 = 3 -> 4 steps of 1024 rows */
    ck_assert_int_eq(rp_device_profile_parse("mem=1g,sdpa=0,split=0", &p, &err), RP_OK);
    ck_assert_int_eq(rp_attn_auto_choose(&p, NULL, 2, 16, 4096, 4096, 64, 0, &c, &err), RP_OK);
    /* 1 GiB / (32 * 4 * x * 4) >= 4096 first for x = 512 */
    ck_assert_int_eq(c.kind, RP_ATTN_SUBQUAD);
    ck_assert_int_eq(c.q_chunk, 512);
    ck_assert_int_eq(c.kv_chunk, 4096);
    /* SDPA gates: head dim */
    ck_assert_int_eq(rp_device_profile_parse("cpu-avx512-24g,flash_hd=128", &p, &err), RP_OK);
    ck_assert_int_eq(rp_attn_auto_choose(&p, NULL, 1, 2, 100, 100, 160, 0, &c, &err), RP_OK);
    ck_assert_str_eq(c.backend, "sdpa-mem-efficient");
    ck_assert_int_eq(rp_attn_auto_choose(&p, NULL, 1, 2, 100, 100, 36, 0, &c, &err), RP_OK);
    ck_assert_str_eq(c.backend, "sdpa-mem-efficient"); /* 36 % 8 != 0 */
    ck_assert_int_eq(rp_attn_auto_choose(&p, NULL, 1, 2, 100, 100, 30, 0, &c, &err), RP_OK);
    ck_assert_str_eq(c.backend, "sdpa-math");          /* 30 % 4 != 0 too */
    ck_assert_int_eq(rp_attn_auto_choose(&p, NULL, 1, 2, 100, 100, 128, 0, &c, &err), RP_OK);
    ck_assert_str_eq(c.backend, "sdpa-flash");
    ck_assert_int_eq(c.q_chunk, 32);                   /* Tq < 192 */
    /* explicit chunk sizes override */
    rp_attn_cfg ov = {RP_ATTN_AUTO, 48, 96};
    ck_assert_int_eq(rp_attn_auto_choose(&p, &ov, 1, 2, 100, 100, 128, 0, &c, &err), RP_OK);
    ck_assert_int_eq(c.q_chunk, 48);
    ck_assert_int_eq(c.kv_chunk, 96);
    ck_assert_ptr_nonnull(strstr(c.reason, "set by option"));
    /* errors */
    p.mem_free = 0;
    ck_assert_int_eq(rp_attn_auto_choose(&p, NULL, 1, 2, 100, 100, 128, 0, &c, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "no free memory"));
    fflush(stdout);
}
END_TEST

static const char *note_value(const rp_trace *t, const char *key) {
    const char *v = NULL;
    size_t kl = strlen(key);
    for (int i = 0; i < t->n_notes; i++)
        if (!strncmp(t->notes[i], key, kl) && t->notes[i][kl] == '=') v = t->notes[i] + kl + 1;
    return v;
}

static int count_prefix(const rp_trace *t, const char *prefix) {
    int n = 0;
    for (int i = 0; i < t->n_notes; i++) n += !strncmp(t->notes[i], prefix, strlen(prefix));
    return n;
}

/* auto writes its choice and reason into the trace, once per run (not per
 * layer), and flags calls that chose differently; the ctx knobs are noted too. */
START_TEST(test_auto_trace) {
    problem P;
    problem_init(&P, 1, 2, 40, 40, 64, 1.0f, 0, 9);
    problem Q;
    problem_init(&Q, 1, 2, 300, 300, 64, 1.0f, 0, 10);
    rp_trace t;
    rp_trace_init(&t);
    rp_ctx ctx = rp_ctx_default();
    ctx.attn.kind = RP_ATTN_AUTO;
    ctx.trace = &t;
    rp_error err;
    ck_assert_int_eq(rp_device_profile_parse("cpu-avx512-24g", &ctx.device, &err), RP_OK);
    float out[2 * 300 * 64];
    for (int rep = 0; rep < 5; rep++)
        ck_assert_int_eq(rp_attention(&ctx, out, P.q, P.k, P.v, NULL, 1, 2, 40, 40, 64, P.scale, &err), RP_OK);
    ck_assert_str_eq(note_value(&t, "attention.auto"), "flash");
    ck_assert_str_eq(note_value(&t, "attention.auto.backend"), "sdpa-flash");
    ck_assert_str_eq(note_value(&t, "attention.auto.q_chunk"), "32");
    ck_assert_str_eq(note_value(&t, "attention.auto.kv_chunk"), "512");
    ck_assert_ptr_nonnull(strstr(note_value(&t, "attention.auto.reason"), "flash OK"));
    const int n5 = t.n_notes;
    ck_assert_int_eq(count_prefix(&t, "attention.auto="), 1);
    /* another shape choosing differently (q tile 64 for Tq >= 192) */
    for (int rep = 0; rep < 3; rep++) {
        ck_assert_int_eq(rp_attention(&ctx, out, Q.q, Q.k, Q.v, NULL, 1, 2, 300, 300, 64, Q.scale, &err), RP_OK);
        ck_assert_int_eq(rp_attention(&ctx, out, P.q, P.k, P.v, NULL, 1, 2, 40, 40, 64, P.scale, &err), RP_OK);
    }
    ck_assert_str_eq(note_value(&t, "attention.auto.mixed"), "yes");
    ck_assert_str_eq(note_value(&t, "attention.auto.1x2x300x300x64"), "flash sdpa-flash q=64 kv=512");
    /* and the kernel that ran, once per distinct tile (rp_attn_note_ran) */
    ck_assert_int_eq(count_prefix(&t, "attention.ran.flash="), 2);
    ck_assert_str_eq(note_value(&t, "attention.ran.flash"), "q=64 kv=512"); /* the latest */
    ck_assert_int_eq(t.n_notes, n5 + 3);
    ck_assert_str_eq(note_value(&t, "attention.auto"), "flash"); /* the first call's choice stays */

    /* the knobs */
    ctx.reduce_split = 1;
    ctx.threads = 2;
    ctx.precision = RP_PREC_BF16;
    ctx.attn.q_chunk = 16;
    rp_ctx_trace_notes(&ctx, &t);
    ck_assert_str_eq(note_value(&t, "precision"), "bf16");
    ck_assert_str_eq(note_value(&t, "reduce_split"), "1");
    ck_assert_str_eq(note_value(&t, "threads"), "2");
    ck_assert_ptr_nonnull(note_value(&t, "openblas.threads"));
    ck_assert_str_eq(note_value(&t, "openblas.coretype"), "default");
    ck_assert_str_eq(note_value(&t, "openblas.core"), rp_blas_core_loaded());
    ck_assert_str_eq(note_value(&t, "attention"), "auto");
    ck_assert_str_eq(note_value(&t, "attention.q_chunk"), "16");
    ck_assert_str_eq(note_value(&t, "attention.kv_chunk"), "0");
    ck_assert_str_eq(note_value(&t, "device_profile"), "cpu-avx512-24g");
    ck_assert_str_eq(note_value(&t, "device_profile.spec"), "mem=24g,simd=avx512,sdpa=1,split=0,flash_hd=256");
    int n = t.n_notes;
    rp_ctx_trace_notes(&ctx, &t); /* unchanged knobs: nothing new */
    ck_assert_int_eq(t.n_notes, n);
    rp_trace_free(&t);
    problem_free(&P);
    problem_free(&Q);
}
END_TEST

/* ---- the variants inside the models ---------------------------------------------------- */

typedef struct model_run {
    const char *label;
    rp_attn_kind kind;
    int qc, kc;
    const char *profile;   /* auto: device profile */
} model_run;

static const model_run MODEL_RUNS[] = {
    {"math", RP_ATTN_MATH, 0, 0, NULL},         {"split q7", RP_ATTN_SPLIT, 7, 0, NULL},
    {"subquad q7 kv5", RP_ATTN_SUBQUAD, 7, 5, NULL}, {"subquad default", RP_ATTN_SUBQUAD, 0, 0, NULL},
    {"flash 7x5", RP_ATTN_FLASH, 7, 5, NULL},   {"flash default", RP_ATTN_FLASH, 0, 0, NULL},
    {"auto avx512", RP_ATTN_AUTO, 0, 0, "cpu-avx512-24g"}, {"auto lowmem", RP_ATTN_AUTO, 0, 0, "cpu-lowmem-2g"},
    {"auto host", RP_ATTN_AUTO, 0, 0, "host"},
};
#define NRUNS ((int)(sizeof MODEL_RUNS / sizeof MODEL_RUNS[0]))

typedef rp_status (*forward_fn)(void *model, const rp_ctx *ctx, float *out, void *inputs, rp_error *err);

/* Runs fwd under every MODEL_RUNS variant; each output must be finite and within
 * tol * max|math output| of math's (the attention differences are O(1e-7) and pass
 * through a few blocks of synthetic weights). */
static void check_model(const char *name, forward_fn fwd, void *model, void *inputs, size_t n_out, double tol) {
    float *ref = malloc(n_out * sizeof(float)), *out = malloc(n_out * sizeof(float));
    rp_error err;
    printf("\n=== %s: each attention variant vs math ===\n", name);
    for (int i = 0; i < NRUNS; i++) {
        rp_ctx ctx = rp_ctx_default();
        ctx.attn.kind = MODEL_RUNS[i].kind;
        ctx.attn.q_chunk = MODEL_RUNS[i].qc;
        ctx.attn.kv_chunk = MODEL_RUNS[i].kc;
        rp_trace t;
        rp_trace_init(&t);
        ctx.trace = &t;
        if (MODEL_RUNS[i].profile)
            ck_assert_int_eq(rp_device_profile_parse(MODEL_RUNS[i].profile, &ctx.device, &err), RP_OK);
        rp_error_clear(&err);
        float *dst = i == 0 ? ref : out;
        rp_status st = fwd(model, &ctx, dst, inputs, &err);
        ck_assert_msg(st == RP_OK, "%s %s: %s", name, MODEL_RUNS[i].label, err.msg);
        double mx = 0, md = 0;
        for (size_t j = 0; j < n_out; j++) {
            ck_assert_msg(isfinite(dst[j]), "%s %s: out[%zu] = %g", name, MODEL_RUNS[i].label, j, dst[j]);
            mx = fmax(mx, fabs(ref[j]));
            md = fmax(md, fabs((double)dst[j] - ref[j]));
        }
        const char *chose = note_value(&t, "attention.auto.summary");
        printf("  %-16s max|diff| %.3g (max|out| %.3g)%s%s\n", MODEL_RUNS[i].label, md, mx, chose ? "  auto: " : "",
               chose ? chose : "");
        ck_assert_msg(md <= tol * mx, "%s %s: max|diff to math| %.3g > %.3g", name, MODEL_RUNS[i].label, md, tol * mx);
        if (MODEL_RUNS[i].kind == RP_ATTN_AUTO) ck_assert_ptr_nonnull(note_value(&t, "attention.auto.reason"));
        rp_trace_free(&t);
    }
    fflush(stdout);
    free(ref);
    free(out);
}

typedef struct dit_in { float *x, *t; int *y; int B; } dit_in;
static rp_status dit_fwd(void *m, const rp_ctx *ctx, float *out, void *in, rp_error *err) {
    dit_in *d = in;
    return rp_dit_forward(m, ctx, out, d->x, d->t, d->y, d->B, err);
}

typedef struct flow_in { float *x, *t, *g, *context, *pooled; uint8_t *mask; int B, L, H, W; } flow_in;
static rp_status sd3_fwd(void *m, const rp_ctx *ctx, float *out, void *in, rp_error *err) {
    flow_in *d = in;
    return rp_sd3_forward(m, ctx, out, d->x, d->t, d->context, d->mask, d->pooled, d->B, d->L, d->H, d->W, err);
}
static rp_status flux_fwd(void *m, const rp_ctx *ctx, float *out, void *in, rp_error *err) {
    flow_in *d = in;
    return rp_flux_forward(m, ctx, out, d->x, d->t, d->g, d->context, d->mask, d->pooled, d->B, d->H, d->W, d->L,
                           err);
}

START_TEST(test_models_dit) {
    rp_error err;
    rp_dit_config cfg;
    ck_assert_int_eq(rp_dit_preset("dit-tiny", &cfg, &err), RP_OK);
    rp_param_list l = {0};
    rp_dit_param_specs(&cfg, &l);
    rp_st_file *w = NULL;
    rp_dit *m = NULL;
    ck_assert_int_eq(rp_st_synthetic(&l, 0, "dit-tiny", &w, &err), RP_OK);
    ck_assert_int_eq(rp_dit_load(&cfg, w, &m, &err), RP_OK);
    rp_st_close(w);
    rp_params_free(&l);
    const int B = 2, S = cfg.input_size, C = cfg.in_channels, Cout = cfg.learn_sigma ? 2 * C : C;
    dit_in in = {malloc(sizeof(float) * B * C * S * S), malloc(sizeof(float) * B), malloc(sizeof(int) * B), B};
    rp_randn(in.x, (size_t)B * C * S * S, 5, 0, 0);
    in.t[0] = 999.f; in.t[1] = 400.f;
    in.y[0] = 207; in.y[1] = cfg.num_classes;
    check_model("dit-tiny", dit_fwd, m, &in, (size_t)B * Cout * S * S, 1e-4);
    free(in.x); free(in.t); free(in.y);
    rp_dit_free(m);
}
END_TEST

START_TEST(test_models_sd3) {
    rp_error err;
    rp_sd3_config cfg;
    ck_assert_int_eq(rp_sd3_preset("sd3-tiny", &cfg, &err), RP_OK);
    rp_param_list l = {0};
    rp_sd3_param_specs(&cfg, &l);
    rp_st_file *w = NULL;
    rp_sd3 *m = NULL;
    ck_assert_int_eq(rp_st_synthetic(&l, 0, "sd3-tiny", &w, &err), RP_OK);
    ck_assert_int_eq(rp_sd3_load(&cfg, w, &m, &err), RP_OK);
    rp_st_close(w);
    rp_params_free(&l);
    const int B = 2, L = cfg.context_len, H = cfg.sample_size, W = cfg.sample_size;
    flow_in in = {0};
    in.B = B; in.L = L; in.H = H; in.W = W;
    in.x = malloc(sizeof(float) * B * cfg.in_channels * H * W);
    in.t = malloc(sizeof(float) * B);
    in.context = malloc(sizeof(float) * B * L * cfg.joint_attention_dim);
    in.pooled = malloc(sizeof(float) * B * cfg.pooled_projection_dim);
    in.mask = malloc((size_t)B * L);
    rp_randn(in.x, (size_t)B * cfg.in_channels * H * W, 6, 0, 0);
    rp_randn(in.context, (size_t)B * L * cfg.joint_attention_dim, 6, 1, 0);
    rp_randn(in.pooled, (size_t)B * cfg.pooled_projection_dim, 6, 2, 0);
    in.t[0] = 900.f; in.t[1] = 250.f;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < L; j++) in.mask[b * L + j] = j < L - 7 * b; /* item 1: 7 padding tokens */
    check_model("sd3-tiny (text mask)", sd3_fwd, m, &in, (size_t)B * cfg.out_channels * H * W, 1e-4);
    free(in.x); free(in.t); free(in.context); free(in.pooled); free(in.mask);
    rp_sd3_free(m);
}
END_TEST

START_TEST(test_models_flux) {
    rp_error err;
    rp_flux_config cfg;
    ck_assert_int_eq(rp_flux_preset("flux-tiny", &cfg, &err), RP_OK);
    rp_param_list l = {0};
    rp_flux_param_specs(&cfg, &l);
    rp_st_file *w = NULL;
    rp_flux *m = NULL;
    ck_assert_int_eq(rp_st_synthetic(&l, 0, "flux-tiny", &w, &err), RP_OK);
    ck_assert_int_eq(rp_flux_load(&cfg, w, &m, &err), RP_OK);
    rp_st_close(w);
    rp_params_free(&l);
    const int B = 2, L = cfg.text_len, H = cfg.sample_size, W = cfg.sample_size, C = cfg.in_channels;
    flow_in in = {0};
    in.B = B; in.L = L; in.H = H; in.W = W;
    in.x = malloc(sizeof(float) * B * C * H * W);
    in.t = malloc(sizeof(float) * B);
    in.g = malloc(sizeof(float) * B);
    in.context = malloc(sizeof(float) * B * L * cfg.joint_attention_dim);
    in.pooled = malloc(sizeof(float) * B * cfg.pooled_dim);
    in.mask = malloc((size_t)B * L);
    rp_randn(in.x, (size_t)B * C * H * W, 7, 0, 0);
    rp_randn(in.context, (size_t)B * L * cfg.joint_attention_dim, 7, 1, 0);
    rp_randn(in.pooled, (size_t)B * cfg.pooled_dim, 7, 2, 0);
    in.t[0] = 0.9f; in.t[1] = 0.3f;
    in.g[0] = 3.5f; in.g[1] = 3.5f;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < L; j++) in.mask[b * L + j] = j < L - 5 * b;
    check_model("flux-tiny (text mask)", flux_fwd, m, &in, (size_t)B * C * H * W, 1e-4);
    uint8_t *mask = in.mask;
    in.mask = NULL;
    check_model("flux-tiny (no mask)", flux_fwd, m, &in, (size_t)B * C * H * W, 1e-4);
    free(mask);
    free(in.x); free(in.t); free(in.g); free(in.context); free(in.pooled);
    rp_flux_free(m);
}
END_TEST

/* bf16 GEMM inputs go through every variant's GEMMs alike: each variant stays
 * close to math in bf16 and runs. */
START_TEST(test_variants_bf16) {
    problem P;
    problem_init(&P, 1, 2, 65, 97, 64, 1.0f, 1, 55);
    rp_ctx ctx = rp_ctx_default();
    ctx.precision = RP_PREC_BF16;
    const size_t no = (size_t)P.B * P.H * P.Tq * P.D;
    float *o = malloc(no * sizeof(float)), *om = malloc(no * sizeof(float));
    vspec mth = {"math", RP_ATTN_MATH, 0, 0};
    ck_assert_int_eq(run_spec(&ctx, &mth, om, P.q, P.k, P.v, P.mask, P.B, P.H, P.Tq, P.Tk, P.D, P.scale), RP_OK);
    const vspec v[3] = {{"split", RP_ATTN_SPLIT, 8, 0}, {"subquad", RP_ATTN_SUBQUAD, 8, 9},
                        {"flash", RP_ATTN_FLASH, 8, 9}};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(run_spec(&ctx, &v[i], o, P.q, P.k, P.v, P.mask, P.B, P.H, P.Tq, P.Tk, P.D, P.scale), RP_OK);
        for (size_t j = 0; j < no; j++) ck_assert_msg(fabs(o[j] - om[j]) < 2e-2, "%s bf16", v[i].label);
    }
    free(o); free(om);
    problem_free(&P);
}
END_TEST

/* The CLIs' shared option handling: strict chunk sizes, names checked against
 * the variant, the core-type name, and the profile (host only when auto reads it). */
START_TEST(test_ctx_configure) {
    rp_error err;
    rp_ctx c = rp_ctx_default();
    c.attn.kind = RP_ATTN_FLASH;
    ck_assert_int_eq(rp_ctx_configure(&c, "48", "96", "Haswell", NULL, &err), RP_OK);
    ck_assert_int_eq(c.attn.q_chunk, 48);
    ck_assert_int_eq(c.attn.kv_chunk, 96);
    ck_assert_str_eq(c.blas_core, "Haswell");
    ck_assert_str_eq(c.device.name, ""); /* not auto, not given: unset */
    c = rp_ctx_default();
    c.attn.kind = RP_ATTN_AUTO;
    ck_assert_int_eq(rp_ctx_configure(&c, NULL, NULL, NULL, NULL, &err), RP_OK);
    ck_assert_str_eq(c.device.name, "host");
    ck_assert_int_eq(rp_ctx_configure(&c, NULL, NULL, NULL, "cpu-lowmem-2g", &err), RP_OK);
    ck_assert_str_eq(c.device.name, "cpu-lowmem-2g");
    struct { rp_attn_kind kind; const char *q, *kv, *core, *prof, *want; } bad[] = {
        {RP_ATTN_FLASH, "0", NULL, NULL, NULL, "--attention-q-chunk: '0'"},
        {RP_ATTN_FLASH, "-4", NULL, NULL, NULL, "--attention-q-chunk: '-4'"},
        {RP_ATTN_FLASH, NULL, "12x", NULL, NULL, "--attention-kv-chunk: '12x'"},
        {RP_ATTN_FLASH, NULL, "", NULL, NULL, "--attention-kv-chunk"},
        {RP_ATTN_FLASH, "99999999999", NULL, NULL, NULL, "1..16777216"},
        {RP_ATTN_MATH, "8", NULL, NULL, NULL, "math attention takes no chunk sizes"},
        {RP_ATTN_SPLIT, NULL, "8", NULL, NULL, "split attention slices queries only"},
        {RP_ATTN_MATH, NULL, NULL, "", NULL, "--openblas-coretype"},
        {RP_ATTN_MATH, NULL, NULL, "Sky lake", NULL, "not a kernel-set name"},
        {RP_ATTN_AUTO, NULL, NULL, NULL, "tpu", "--device-profile: device profile 'tpu' is not known"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = rp_ctx_default();
        c.attn.kind = bad[i].kind;
        rp_error_clear(&err);
        ck_assert_int_eq(rp_ctx_configure(&c, bad[i].q, bad[i].kv, bad[i].core, bad[i].prof, &err), RP_ERR_INVALID);
        ck_assert_msg(strstr(err.msg, bad[i].want), "case %zu: '%s' lacks '%s'", i, err.msg, bad[i].want);
    }
}
END_TEST

/* ---- OpenBLAS core type ---------------------------------------------------------------- */

/* Child mode: `test_attention_variants --coretype-child CORE` makes sure CORE is
 * loaded (re-executing itself) and exits 0 when it is, 3 on the expected
 * "library loaded another core" error, 1 otherwise. */
static int coretype_child(const char *core) {
    rp_error err;
    rp_error_clear(&err);
    rp_status st = rp_ctx_ensure_coretype(core, NULL, &err);
    if (st == RP_OK) {
        int ok = !strcasecmp(rp_blas_core_loaded(), core) && getenv("REPRO_CORETYPE_REEXEC") == NULL;
        printf("coretype child: loaded %s\n", rp_blas_core_loaded());
        return ok ? 0 : 1;
    }
    fprintf(stderr, "coretype child: %s\n", err.msg);
    return st == RP_ERR_UNSUPPORTED && strstr(err.msg, "loaded") ? 3 : 1;
}

static char self_path[4096];

static int run_child(const char *core) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        unsetenv("OPENBLAS_CORETYPE");
        unsetenv("REPRO_CORETYPE_REEXEC");
        execl(self_path, "test_attention_variants", "--coretype-child", core, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

START_TEST(test_coretype) {
    rp_error err;
    /* in process: no request, the loaded core, bad names */
    ck_assert_int_eq(rp_ctx_ensure_coretype(NULL, NULL, &err), RP_OK);
    ck_assert_int_eq(rp_ctx_ensure_coretype("", NULL, &err), RP_OK);
    ck_assert_int_eq(rp_ctx_ensure_coretype(rp_blas_core_loaded(), NULL, &err), RP_OK);
    ck_assert_int_eq(rp_ctx_ensure_coretype("Haswell;rm", NULL, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "kernel-set name"));
    ck_assert_int_eq(rp_ctx_ensure_coretype("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", NULL, &err), RP_ERR_INVALID);
    /* across a re-exec */
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    ck_assert(n > 0);
    self_path[n] = '\0';
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && strcasecmp(rp_blas_core_loaded(), "Haswell")) {
        ck_assert_int_eq(run_child("Haswell"), 0);
        ck_assert_int_eq(run_child("haswell"), 0); /* case-insensitive, as OpenBLAS */
    }
    ck_assert_int_eq(run_child(rp_blas_core_loaded()), 0);
    ck_assert_int_eq(run_child("NoSuchCore"), 3); /* one re-exec, then a clear error, no loop */
}
END_TEST

static Suite *variants_suite(void) {
    Suite *s = suite_create("attention_variants");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_variants_unmasked);
    tcase_add_test(tc, test_variants_masked);
    tcase_add_test(tc, test_variants_reduce_split);
    tcase_add_test(tc, test_variants_large_scores);
    tcase_add_test(tc, test_variants_masked_tiles);
    tcase_add_test(tc, test_variants_empty);
    tcase_add_test(tc, test_variants_bf16);
    tcase_add_test(tc, test_bitwise_report);
    tcase_add_test(tc, test_profile_parse);
    tcase_add_test(tc, test_auto_choices);
    tcase_add_test(tc, test_auto_trace);
    tcase_add_test(tc, test_models_dit);
    tcase_add_test(tc, test_models_sd3);
    tcase_add_test(tc, test_models_flux);
    tcase_add_test(tc, test_ctx_configure);
    tcase_add_test(tc, test_coretype);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--coretype-child")) return coretype_child(argv[2]);
    SRunner *sr = srunner_create(variants_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
