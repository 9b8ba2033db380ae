/* test_cuda_attention.c — every CUDA attention variant (engine/cuda/cuda_attention.h)
 * against the CPU math attention (rp_attention_math), in the style of ggml's
 * test-backend-ops: one line per case and variant with its NMSE and the threshold.
 *
 * Per case (odd lengths, tiles that do not divide them, key masks with a fully masked
 * batch item, D in {32, 40, 64, 72, 96, 128}, fp32 and bf16 inputs) and GPU variant:
 *   - the call succeeds (or, for flash tiles whose shared memory this device lacks, is
 *     refused with RP_ERR_UNSUPPORTED and reported as skipped);
 *   - no NaN/Inf in the output (the inputs are finite);
 *   - rows whose keys are all masked are exactly 0; rows left with a single key are
 *     exactly that key's v row (p = 1 exactly in every variant; not for TF32);
 *   - NMSE = sum (gpu - cpu)^2 / sum cpu^2 <= tau (below);
 *   - a second run (output buffer refilled with NaN first) is bitwise identical;
 *   - bf16 inputs: flash on bf16 equals flash on the same values in fp32, bit for bit.
 * Also: the argument checks (unsupported head dims and tiles, chunk sizes a variant does
 * not take, TF32 with flash, misaligned flash pointers, bad shapes), Tk = 0 (zeros) and
 * Tq = 0 (nothing written). Informational: whether split gives math's bits on this GPU
 * (a property of cuBLAS's per-shape kernel choice, like on the CPU).
 *
 * Threshold. u = 2^-24. Model every fp32 rounding as an independent relative error of
 * variance <= u^2/3 (round to nearest; the probabilistic analysis of Higham & Mary 2019:
 * a depth-n reduction errs by ~sqrt(n) u, not n u) and propagate it to first order to
 * out_i = sum_j p_ij v_j, p = softmax(s), s_ij = scale q_i . k_j, for one implementation:
 *   - P V, depth Tk: each of the Tk additions errs by <= u |partial sum|; with the test's
 *     i.i.d. zero-mean v the partial sums' mean square never exceeds the final sum's, so
 *     this contributes <= Tk u^2 / 3 to the NMSE. The softmax denominator (flash: an fp32
 *     running sum of Tk positive terms, each rounding relative to a partial sum <= l;
 *     math: double, negligible): <= Tk u^2 / 3. Flash's rescales (O and l times alpha,
 *     alpha within 2 ulp, at most ceil(Tk / 32) times): <= (5/3)(Tk / 32) u^2.
 *   - Q K^T, depth D: by Cauchy-Schwarz every partial dot product is <= s_b / |scale|
 *     with s_b = |scale| max_i ||q_i|| max_j ||k_j||, so a score's absolute error has
 *     variance <= D u^2 s_b^2 / 3, plus the scale multiply (u s_b) and s - max (2 u s_b):
 *     <= (D + 8) s_b^2 u^2 / 3. An absolute error d in s_j multiplies p_j by (1 + d),
 *     so the NMSE gains the same amount.
 *   - exp within 2 ulp, the final division: <= (4 + 1) u^2 / 3.
 *   Sum <= u^2 (Tk + (D + 8) s_b^2 + 8). For the difference of two implementations,
 *   ||a - b||^2 <= 2 ||a||^2 + 2 ||b||^2 gives a factor 4 whatever their correlation, and
 *   lambda^2 = 16 covers the model (an expectation, not a worst case):
 *     tau = 64 u^2 (Tk + (D + 8) s_b^2 + 8)
 *   e.g. 1.0e-9 at Tk = 4096, D = 64 (s_b^2 = 7.1); a dropped key tile or a missing
 *   rescale gives NMSE >= 1e-4, a wrong mask or row far more.
 * TF32 (math/split with tf32 = 1): q, k, P, v rounded to 10 mantissa bits (u_t = 2^-11,
 *   relative error <= 2 u_t even if truncated, variance <= (4/3) u_t^2 per input, so
 *   <= 3 u_t^2 per product of two). The score error variance is <= 3 u_t^2 w_b with
 *   w_b = scale^2 max_i ||q_i||^2 max_jd k_jd^2 (>= sum_d (scale q_d k_d)^2: independent
 *   input roundings do not accumulate along the sum), and P V's is <= 3 u_t^2, so
 *     tau_tf32 = tau + 64 * 3 u_t^2 (w_b + 1).
 *
 * Exit 0 all passed, 1 any failure, 77 (ctest skip) without a CUDA build or device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention/attention.h"
#include "engine/ctx.h"

#ifdef REPRO_HAVE_CUDA
#include <cuda_runtime.h>

#include "engine/cuda/cuda_attention.h"
#include "engine/cuda/cuda_info.h"
#include "engine/ops.h"
#include "tests/common/test_rng.h"

static const double U32 = 0x1p-24, UTF32 = 0x1p-11;

#define CK(call)                                                                                     \
    do {                                                                                             \
        cudaError_t ck_e_ = (call);                                                                  \
        if (ck_e_ != cudaSuccess) {                                                                  \
            printf("FAIL: %s: %s (%s) at %s:%d\n", #call, cudaGetErrorString(ck_e_),                 \
                   cudaGetErrorName(ck_e_), __FILE__, __LINE__);                                     \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

typedef struct gcase {
    const char *label;
    int B, H, Tq, Tk, D;
    float qscale;   /* q ~ qscale * U(-1, 1); k, v ~ U(-1, 1) */
    int mask;       /* 1: a random quarter of keys masked per batch item; B > 1: the last item
                       keeps only key Tk/2; B > 2: item 1 has every key masked */
    int bf16;       /* inputs rounded to bf16 and passed to the GPU as bf16 */
    int tf32;       /* also run math and split with TF32 */
} gcase;

static const gcase CASES[] = {
    {"Tq=1", 1, 2, 1, 77, 64, 1.0f, 0, 0, 0},
    {"1x1", 1, 1, 1, 1, 32, 1.0f, 0, 0, 0},
    {"33x7 Tk<8", 3, 1, 33, 7, 96, 1.0f, 1, 0, 0},
    {"65x129", 3, 2, 65, 129, 32, 1.0f, 1, 0, 0},
    {"100x333", 2, 1, 100, 333, 40, 1.0f, 1, 0, 0},
    {"257x257", 3, 2, 257, 257, 72, 1.0f, 1, 0, 0},
    {"257x257 peaky", 1, 3, 257, 257, 128, 8.0f, 0, 0, 0},
    {"257x1000 bf16", 3, 2, 257, 1000, 72, 1.0f, 1, 1, 0},
    {"1024x1024", 3, 1, 1024, 1024, 64, 1.0f, 1, 0, 1},
    {"1024x1024", 1, 2, 1024, 1024, 128, 1.0f, 0, 0, 0},
    {"4096x4096", 1, 2, 4096, 4096, 64, 1.0f, 0, 0, 0},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

typedef struct gvar {
    char label[32];
    rp_cuda_attn_variant variant;
    int q_chunk, kv_chunk, tf32;
} gvar;

/* The GPU variants of a case: math, split (a slice that divides nothing here, and the
 * default), flash with every tile pair on small cases, a few on large ones. */
static int case_variants(const gcase *c, gvar *v) {
    int n = 0;
    v[n++] = (gvar){"math", RP_CUDA_ATTN_MATH, 0, 0, 0};
    v[n++] = (gvar){"split q100", RP_CUDA_ATTN_SPLIT, 100, 0, 0};
    v[n++] = (gvar){"split q(default)", RP_CUDA_ATTN_SPLIT, 0, 0, 0};
    if (c->tf32) {
        v[n++] = (gvar){"math tf32", RP_CUDA_ATTN_MATH, 0, 0, 1};
        v[n++] = (gvar){"split q100 tf32", RP_CUDA_ATTN_SPLIT, 100, 0, 1};
    }
    v[n++] = (gvar){"flash (default)", RP_CUDA_ATTN_FLASH, 0, 0, 0};
    static const int T[3] = {32, 64, 128};
    const int small = (long long)c->Tq * c->Tk <= 300000;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            const int qc = T[a], kc = T[b];
            if (!small && !((qc == 128 && kc == 64) || (qc == 32 && kc == 128) || (qc == 128 && kc == 128)))
                continue;
            v[n] = (gvar){"", RP_CUDA_ATTN_FLASH, qc, kc, 0};
            snprintf(v[n].label, sizeof v[n].label, "flash q%d kv%d", qc, kc);
            n++;
        }
    return n;
}

/* One case's host and device data. */
typedef struct gdata {
    const gcase *c;
    size_t nq, nk, no;
    float *q, *k, *v;            /* host fp32 (bf16-representable when c->bf16) */
    uint8_t *mask;               /* host (B, Tk) or NULL */
    float *ref;                  /* CPU math output */
    float *out1, *out2;          /* GPU outputs, host copies */
    void *dq, *dk, *dv;          /* device inputs (fp32 or bf16) */
    float *dq32, *dk32, *dv32;   /* device fp32 copies (bf16 cases: for the bitwise check) */
    unsigned char *dmask;
    float *dout;
    float scale;
    double tau, tau_tf32, s_b2, w_b;
} gdata;

static int failures = 0;

static double max_row_norm2(const float *x, size_t rows, int D) {
    double m = 0;
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (int d = 0; d < D; d++) s += (double)x[r * D + d] * x[r * D + d];
        if (s > m) m = s;
    }
    return m;
}

static void data_init(gdata *g, const gcase *c, uint64_t seed) {
    memset(g, 0, sizeof *g);
    g->c = c;
    const int B = c->B, H = c->H, Tq = c->Tq, Tk = c->Tk, D = c->D;
    g->nq = (size_t)B * H * Tq * D;
    g->nk = (size_t)B * H * Tk * D;
    g->no = g->nq;
    g->scale = 1.0f / sqrtf((float)D);
    g->q = malloc(sizeof(float) * g->nq + 4);
    g->k = malloc(sizeof(float) * g->nk + 4);
    g->v = malloc(sizeof(float) * g->nk + 4);
    g->ref = malloc(sizeof(float) * g->no + 4);
    g->out1 = malloc(sizeof(float) * g->no + 4);
    g->out2 = malloc(sizeof(float) * g->no + 4);
    if (!g->q || !g->k || !g->v || !g->ref || !g->out1 || !g->out2) {
        printf("FAIL: out of host memory\n");
        exit(1);
    }
    uint64_t s = seed;
    for (size_t i = 0; i < g->nq; i++) g->q[i] = c->qscale * rng_unif(&s);
    for (size_t i = 0; i < g->nk; i++) g->k[i] = rng_unif(&s);
    for (size_t i = 0; i < g->nk; i++) g->v[i] = rng_unif(&s);
    if (c->bf16) {
        for (size_t i = 0; i < g->nq; i++) g->q[i] = rp_bf16_to_f32(rp_f32_to_bf16(g->q[i]));
        for (size_t i = 0; i < g->nk; i++) g->k[i] = rp_bf16_to_f32(rp_f32_to_bf16(g->k[i]));
        for (size_t i = 0; i < g->nk; i++) g->v[i] = rp_bf16_to_f32(rp_f32_to_bf16(g->v[i]));
    }
    if (c->mask) {
        g->mask = malloc((size_t)B * Tk + 1);
        for (int b = 0; b < B; b++)
            for (int j = 0; j < Tk; j++) g->mask[(size_t)b * Tk + j] = (rng_next(&s) % 4) != 0;
        if (B > 1) {
            memset(g->mask + (size_t)(B - 1) * Tk, 0, (size_t)Tk);
            g->mask[(size_t)(B - 1) * Tk + Tk / 2] = 1;
        }
        if (B > 2) memset(g->mask + (size_t)Tk, 0, (size_t)Tk);
    }
    /* the thresholds (header comment) */
    const double qn2 = max_row_norm2(g->q, (size_t)B * H * Tq, D), kn2 = max_row_norm2(g->k, (size_t)B * H * Tk, D);
    double kmax2 = 0;
    for (size_t i = 0; i < g->nk; i++) kmax2 = fmax(kmax2, (double)g->k[i] * g->k[i]);
    const double sc2 = (double)g->scale * g->scale;
    g->s_b2 = sc2 * qn2 * kn2;
    g->w_b = sc2 * qn2 * kmax2;
    g->tau = 64.0 * U32 * U32 * ((double)Tk + (D + 8.0) * g->s_b2 + 8.0);
    g->tau_tf32 = g->tau + 64.0 * 3.0 * UTF32 * UTF32 * (g->w_b + 1.0);

    /* the CPU reference */
    rp_ctx ctx = rp_ctx_default();
    rp_error err;
    rp_error_clear(&err);
    if (rp_attention_math(&ctx, g->ref, g->q, g->k, g->v, g->mask, B, H, Tq, Tk, D, g->scale, &err) != RP_OK) {
        printf("FAIL: CPU math attention: %s\n", err.msg);
        exit(1);
    }

    /* device copies */
    const size_t esz = c->bf16 ? 2 : 4;
    CK(cudaMalloc(&g->dq, g->nq * esz + 16));
    CK(cudaMalloc(&g->dk, g->nk * esz + 16));
    CK(cudaMalloc(&g->dv, g->nk * esz + 16));
    CK(cudaMalloc((void **)&g->dout, g->no * sizeof(float) + 16));
    if (c->bf16) {
        uint16_t *h = malloc(2 * (g->nq > g->nk ? g->nq : g->nk) + 2);
        for (size_t i = 0; i < g->nq; i++) h[i] = rp_f32_to_bf16(g->q[i]);
        CK(cudaMemcpy(g->dq, h, g->nq * 2, cudaMemcpyHostToDevice));
        for (size_t i = 0; i < g->nk; i++) h[i] = rp_f32_to_bf16(g->k[i]);
        CK(cudaMemcpy(g->dk, h, g->nk * 2, cudaMemcpyHostToDevice));
        for (size_t i = 0; i < g->nk; i++) h[i] = rp_f32_to_bf16(g->v[i]);
        CK(cudaMemcpy(g->dv, h, g->nk * 2, cudaMemcpyHostToDevice));
        free(h);
        CK(cudaMalloc((void **)&g->dq32, g->nq * sizeof(float) + 16));
        CK(cudaMalloc((void **)&g->dk32, g->nk * sizeof(float) + 16));
        CK(cudaMalloc((void **)&g->dv32, g->nk * sizeof(float) + 16));
        CK(cudaMemcpy(g->dq32, g->q, g->nq * sizeof(float), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(g->dk32, g->k, g->nk * sizeof(float), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(g->dv32, g->v, g->nk * sizeof(float), cudaMemcpyHostToDevice));
    } else {
        CK(cudaMemcpy(g->dq, g->q, g->nq * sizeof(float), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(g->dk, g->k, g->nk * sizeof(float), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(g->dv, g->v, g->nk * sizeof(float), cudaMemcpyHostToDevice));
    }
    if (g->mask) {
        CK(cudaMalloc((void **)&g->dmask, (size_t)B * Tk + 1));
        CK(cudaMemcpy(g->dmask, g->mask, (size_t)B * Tk, cudaMemcpyHostToDevice));
    }
}

static void data_free(gdata *g) {
    free(g->q); free(g->k); free(g->v); free(g->mask); free(g->ref); free(g->out1); free(g->out2);
    cudaFree(g->dq); cudaFree(g->dk); cudaFree(g->dv); cudaFree(g->dout); cudaFree(g->dmask);
    if (g->dq32) { cudaFree(g->dq32); cudaFree(g->dk32); cudaFree(g->dv32); }
}

/* Runs v on the GPU into host buffer `host` (the device output refilled with NaN first). */
static rp_status gpu_run(rp_cuda_attn *h, const gdata *g, const gvar *v, int use_f32_copy, float *host,
                         rp_error *err) {
    const gcase *c = g->c;
    rp_cuda_attn_opts o;
    memset(&o, 0, sizeof o);
    o.dtype = c->bf16 && !use_f32_copy ? RP_CUDA_ATTN_BF16 : RP_CUDA_ATTN_F32;
    o.tf32 = v->tf32;
    o.q_chunk = v->q_chunk;
    o.kv_chunk = v->kv_chunk;
    const void *q = use_f32_copy ? (const void *)g->dq32 : g->dq;
    const void *k = use_f32_copy ? (const void *)g->dk32 : g->dk;
    const void *vv = use_f32_copy ? (const void *)g->dv32 : g->dv;
    CK(cudaMemset(g->dout, 0xff, g->no * sizeof(float)));  /* NaN everywhere */
    rp_status st = rp_cuda_attention(h, v->variant, &o, g->dout, q, k, vv, g->dmask, c->B, c->H, c->Tq, c->Tk,
                                     c->D, g->scale, err);
    CK(cudaDeviceSynchronize());
    if (st == RP_OK) CK(cudaMemcpy(host, g->dout, g->no * sizeof(float), cudaMemcpyDeviceToHost));
    return st;
}

/* Runs and checks one variant of one case; prints its line. Returns 1 if it ran. */
static int check_variant(rp_cuda_attn *h, gdata *g, const gvar *v, float *math_out) {
    const gcase *c = g->c;
    const int B = c->B, H = c->H, Tq = c->Tq, Tk = c->Tk, D = c->D;
    char head[192];
    snprintf(head, sizeof head, "%-14.20s B%d H%d %4dx%-4d D%-3d%s%s  %-16.31s", c->label, B, H, Tq, Tk, D,
             c->mask ? " mask" : "", c->bf16 ? " bf16" : "", v->label);
    rp_error err;
    rp_error_clear(&err);
    rp_cuda_attn_opts o;
    memset(&o, 0, sizeof o);
    o.dtype = c->bf16 ? RP_CUDA_ATTN_BF16 : RP_CUDA_ATTN_F32;
    o.tf32 = v->tf32;
    o.q_chunk = v->q_chunk;
    o.kv_chunk = v->kv_chunk;
    rp_cuda_attn_used plan;
    if (rp_cuda_attn_plan(h, v->variant, &o, D, &plan, &err) != RP_OK) {
        rp_error e2;
        rp_error_clear(&e2);
        if (err.code == RP_ERR_UNSUPPORTED && rp_cuda_attn_plan(NULL, v->variant, &o, D, &plan, &e2) == RP_OK) {
            printf("%s  skipped on this device: %s\n", head, err.msg);
            return 0;
        }
        printf("%s  FAIL: plan: %s\n", head, err.msg);
        failures++;
        return 0;
    }
    if (gpu_run(h, g, v, 0, g->out1, &err) != RP_OK) {
        printf("%s  FAIL: %s (%s)\n", head, err.msg, err.where);
        failures++;
        return 0;
    }
    const rp_cuda_attn_used *used = rp_cuda_attn_last(h);
    char why[256] = "";
    if (!used || used->variant != v->variant || used->q_chunk != plan.q_chunk || used->kv_chunk != plan.kv_chunk)
        snprintf(why, sizeof why, "the call's record disagrees with its plan");

    /* finiteness, NMSE, masked rows */
    double num = 0, den = 0, maxabs = 0;
    size_t nonfinite = 0;
    for (size_t i = 0; i < g->no; i++) {
        const double o1 = g->out1[i], r = g->ref[i];
        if (!isfinite(g->out1[i])) { nonfinite++; continue; }
        num += (o1 - r) * (o1 - r);
        den += r * r;
        if (fabs(o1 - r) > maxabs) maxabs = fabs(o1 - r);
    }
    const double nmse = den > 0 ? num / den : num;
    const double tau = v->tf32 ? g->tau_tf32 : g->tau;
    if (nonfinite && !why[0]) snprintf(why, sizeof why, "%zu NaN/Inf outputs", nonfinite);
    if (!why[0] && !(nmse <= tau)) snprintf(why, sizeof why, "NMSE %.3e > tau %.3e", nmse, tau);
    if (c->mask && B > 2 && !why[0])  /* batch item 1: every key masked -> exact zeros */
        for (int hh = 0; hh < H && !why[0]; hh++)
            for (size_t i = 0; i < (size_t)Tq * D; i++) {
                const float o1 = g->out1[((size_t)1 * H + hh) * Tq * D + i];
                if (o1 != 0.0f) {
                    snprintf(why, sizeof why, "fully masked row (b 1, h %d, t %zu) has %g, want 0", hh, i / D, o1);
                    break;
                }
            }
    if (c->mask && B > 1 && !v->tf32 && !why[0])  /* last item: one key -> exactly its v row */
        for (int hh = 0; hh < H && !why[0]; hh++) {
            const size_t bh = (size_t)(B - 1) * H + hh;
            for (int t = 0; t < Tq && !why[0]; t++)
                for (int d = 0; d < D; d++) {
                    const float o1 = g->out1[(bh * Tq + t) * D + d], want = g->v[(bh * Tk + Tk / 2) * D + d];
                    if (o1 != want) {
                        snprintf(why, sizeof why, "single-key row (b %d, h %d, t %d, d %d) = %.9g, want v = %.9g",
                                 B - 1, hh, t, d, o1, want);
                        break;
                    }
                }
        }

    /* bitwise repeat */
    if (gpu_run(h, g, v, 0, g->out2, &err) != RP_OK) {
        printf("%s  FAIL: second run: %s\n", head, err.msg);
        failures++;
        return 0;
    }
    const int same = memcmp(g->out1, g->out2, g->no * sizeof(float)) == 0;
    if (!same && !why[0]) snprintf(why, sizeof why, "two runs differ bitwise");

    /* bf16 flash = fp32 flash on the same values */
    char extra[96] = "";
    if (c->bf16 && !why[0]) {
        if (gpu_run(h, g, v, 1, g->out2, &err) != RP_OK) {
            snprintf(why, sizeof why, "fp32 twin run: %.200s", err.msg);
        } else {
            const int eq = memcmp(g->out1, g->out2, g->no * sizeof(float)) == 0;
            snprintf(extra, sizeof extra, "  bf16-in==fp32-in %s%s", eq ? "yes" : "no",
                     v->variant == RP_CUDA_ATTN_FLASH ? "" : " (info)");
            if (!eq && v->variant == RP_CUDA_ATTN_FLASH) snprintf(why, sizeof why, "bf16 inputs differ from fp32 inputs");
        }
    }
    if (math_out && v->variant == RP_CUDA_ATTN_MATH && !v->tf32) memcpy(math_out, g->out1, g->no * sizeof(float));
    if (math_out && v->variant == RP_CUDA_ATTN_SPLIT && !v->tf32) {
        const int eq = memcmp(math_out, g->out1, g->no * sizeof(float)) == 0;
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "  ==math %s (info)", eq ? "yes" : "no");
    }
    printf("%s  nmse %9.3e <= %9.3e  maxabs %8.2e  repeat %s%s  [%s]  %s%s\n", head, nmse, tau, maxabs,
           same ? "bitwise" : "DIFFERS", extra, rp_cuda_attn_last_desc(h), why[0] ? "FAIL: " : "ok", why);
    if (why[0]) failures++;
    return 1;
}

/* ---- argument checks and empty shapes ----------------------------------------------- */

static void expect_error(rp_cuda_attn *h, const char *label, rp_status want, const char *needle,
                         rp_cuda_attn_variant var, const rp_cuda_attn_opts *o, float *out, const void *q,
                         const void *k, const void *v, int B, int H, int Tq, int Tk, int D) {
    rp_error err;
    rp_error_clear(&err);
    rp_status st = rp_cuda_attention(h, var, o, out, q, k, v, NULL, B, H, Tq, Tk, D, 0.125f, &err);
    const int ok = st == want && (!needle || strstr(err.msg, needle));
    printf("check %-40s -> %s: %s  %s\n", label, rp_status_name(st), err.msg, ok ? "ok" : "FAIL");
    if (!ok) {
        if (st != want) printf("    want %s\n", rp_status_name(want));
        else printf("    message lacks \"%s\"\n", needle);
        failures++;
    }
}

static void argument_checks(rp_cuda_attn *h) {
    const int n = 2 * 64 * 256;  /* room for B*H*T*D up to 32768 floats */
    float *buf;
    CK(cudaMalloc((void **)&buf, 4 * (size_t)n * sizeof(float) + 64));
    float *q = buf, *k = buf + n, *v = buf + 2 * n, *out = buf + 3 * n;
    CK(cudaMemset(buf, 0, 3 * (size_t)n * sizeof(float)));
    rp_cuda_attn_opts o;
    memset(&o, 0, sizeof o);
    const rp_cuda_attn_variant F = RP_CUDA_ATTN_FLASH, M = RP_CUDA_ATTN_MATH, S = RP_CUDA_ATTN_SPLIT;
    expect_error(h, "flash D=130", RP_ERR_UNSUPPORTED, "D=130", F, &o, out, q, k, v, 1, 1, 8, 8, 130);
    expect_error(h, "flash D=66", RP_ERR_UNSUPPORTED, "D=66", F, &o, out, q, k, v, 1, 1, 8, 8, 66);
    expect_error(h, "flash D=256", RP_ERR_UNSUPPORTED, "D=256", F, &o, out, q, k, v, 1, 1, 8, 8, 256);
    o.q_chunk = 48;
    expect_error(h, "flash q_chunk=48", RP_ERR_UNSUPPORTED, "q_chunk=48", F, &o, out, q, k, v, 1, 1, 8, 8, 64);
    o.q_chunk = 0;
    o.kv_chunk = 256;
    expect_error(h, "flash kv_chunk=256", RP_ERR_UNSUPPORTED, "kv_chunk=256", F, &o, out, q, k, v, 1, 1, 8, 8, 64);
    o.kv_chunk = 0;
    o.tf32 = 1;
    expect_error(h, "flash tf32=1", RP_ERR_INVALID, "tf32", F, &o, out, q, k, v, 1, 1, 8, 8, 64);
    o.tf32 = 0;
    o.q_chunk = 5;
    expect_error(h, "math q_chunk=5", RP_ERR_INVALID, "q_chunk 5", M, &o, out, q, k, v, 1, 1, 8, 8, 64);
    o.q_chunk = -3;
    expect_error(h, "split q_chunk=-3", RP_ERR_INVALID, "-3", S, &o, out, q, k, v, 1, 1, 8, 8, 64);
    o.q_chunk = 0;
    o.kv_chunk = 7;
    expect_error(h, "split kv_chunk=7", RP_ERR_INVALID, "kv_chunk (got 7)", S, &o, out, q, k, v, 1, 1, 8, 8, 64);
    o.kv_chunk = 0;
    o.dtype = (rp_cuda_attn_dtype)5;
    expect_error(h, "dtype 5", RP_ERR_INVALID, "dtype 5", M, &o, out, q, k, v, 1, 1, 8, 8, 64);
    o.dtype = RP_CUDA_ATTN_F32;
    expect_error(h, "Tk=-1", RP_ERR_INVALID, "Tk=-1", M, &o, out, q, k, v, 1, 1, 8, -1, 64);
    expect_error(h, "H=0", RP_ERR_INVALID, "H=0", F, &o, out, q, k, v, 1, 0, 8, 8, 64);
    expect_error(h, "NULL q", RP_ERR_INVALID, "(q)", M, &o, out, NULL, k, v, 1, 1, 8, 8, 64);
    expect_error(h, "flash misaligned q", RP_ERR_INVALID, "aligned", F, &o, out, q + 1, k, v, 1, 1, 8, 8, 64);
    expect_error(h, "flash misaligned out", RP_ERR_INVALID, "aligned", F, &o, out + 2, q, k, v, 1, 1, 8, 8, 64);
    expect_error(h, "unknown variant 9", RP_ERR_INVALID, "variant 9", (rp_cuda_attn_variant)9, &o, out, q, k, v, 1, 1,
                 8, 8, 64);

    /* Tk = 0: zeros; Tq = 0: nothing written. Every variant. */
    const rp_cuda_attn_variant all[3] = {M, S, F};
    float *host = malloc((size_t)n * sizeof(float));
    for (int i = 0; i < 3; i++) {
        rp_error err;
        rp_error_clear(&err);
        const size_t no = (size_t)2 * 3 * 5 * 64;
        CK(cudaMemset(out, 0xff, no * sizeof(float)));
        rp_status st = rp_cuda_attention(h, all[i], NULL, out, q, k, v, NULL, 2, 3, 5, 0, 64, 0.125f, &err);
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(host, out, no * sizeof(float), cudaMemcpyDeviceToHost));
        int zeros = 1;
        for (size_t j = 0; j < no; j++) zeros &= host[j] == 0.0f;
        const int ok0 = st == RP_OK && zeros;
        printf("check %-40s -> %s  %s\n", rp_cuda_attn_variant_name(all[i]), ok0 ? "zeros" : err.msg,
               ok0 ? "ok" : "FAIL");
        failures += !ok0;
        CK(cudaMemset(out, 0x7f, no * sizeof(float)));
        st = rp_cuda_attention(h, all[i], NULL, out, q, k, v, NULL, 2, 3, 0, 9, 64, 0.125f, &err);
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(host, out, no * sizeof(float), cudaMemcpyDeviceToHost));
        int untouched = 1;
        for (size_t j = 0; j < no; j++) {
            uint32_t b;
            memcpy(&b, &host[j], 4);
            untouched &= b == 0x7f7f7f7fu;
        }
        const int ok1 = st == RP_OK && untouched;
        printf("check %-40s -> %s  %s\n", rp_cuda_attn_variant_name(all[i]), ok1 ? "nothing written" : err.msg,
               ok1 ? "ok" : "FAIL");
        failures += !ok1;
    }
    free(host);
    CK(cudaFree(buf));
}
#endif

int main(void) {
#ifndef REPRO_HAVE_CUDA
    printf("SKIP: this build has no CUDA (nvcc was not found at configure time)\n");
    return 77;
#else
    if (rp_cuda_device_count() == 0) {
        printf("SKIP: no CUDA device visible (no driver, or CUDA_VISIBLE_DEVICES empty)\n");
        return 77;
    }
    rp_cuda_device_info info;
    char msg[256];
    if (rp_cuda_device_describe(0, &info, msg, sizeof msg) == 0)
        printf("device 0: %s, cc %d.%d, %d SMs, cuBLAS %d\n", info.name, info.cc_major, info.cc_minor,
               info.sm_count, info.cublas_version);
    CK(cudaSetDevice(0));
    rp_ctx ctx = rp_ctx_default();
    rp_ctx_apply(&ctx);
    rp_error err;
    rp_error_clear(&err);
    rp_cuda_attn *h = NULL;
    if (rp_cuda_attn_create(&h, 0, &err) != RP_OK) {
        printf("FAIL: rp_cuda_attn_create: %s (%s)\n", err.msg, err.where);
        return 1;
    }
    argument_checks(h);
    for (int ci = 0; ci < NCASES; ci++) {
        gdata g;
        data_init(&g, &CASES[ci], 7000 + 13 * (uint64_t)ci);
        printf("case %-14s B%d H%d Tq%d Tk%d D%d%s%s: s_b^2 %.3g, tau %.3e", CASES[ci].label, CASES[ci].B,
               CASES[ci].H, CASES[ci].Tq, CASES[ci].Tk, CASES[ci].D, CASES[ci].mask ? " mask" : "",
               CASES[ci].bf16 ? " bf16" : "", g.s_b2, g.tau);
        if (CASES[ci].tf32) printf(", w_b %.3g, tau_tf32 %.3e", g.w_b, g.tau_tf32);
        printf("\n");
        gvar v[24];
        const int nv = case_variants(&CASES[ci], v);
        float *math_out = malloc(sizeof(float) * g.no + 4);
        for (int i = 0; i < nv; i++) check_variant(h, &g, &v[i], math_out);
        free(math_out);
        data_free(&g);
        fflush(stdout);
    }
    rp_cuda_attn_destroy(h);
    if (failures) {
        printf("FAILED: %d check(s)\n", failures);
        return 1;
    }
    printf("all CUDA attention checks passed\n");
    return 0;
#endif
}
