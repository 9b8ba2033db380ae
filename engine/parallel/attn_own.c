/* attn_own.c — the own check of the default attention variants (math, split, subquad,
 * flash; auto's pick), on every rank of the classifier's teacher runs (p->check_own): whole
 * at the evaluations rp_par_own_now names (the run's first and last, one drawn between), and
 * one (batch, head) slice of one call at every other evaluation (rp_par_own_slice, rotating
 * through the forward's calls and the heads).
 *
 * Why. Under the default numerics a rank's attention runs a variant's kernel
 * (engine/attention/) that no exact comparison executes: the invariant shadow runs the
 * canonical attention instead, and the serial reference of a dp / ulysses / cfg case runs
 * the same kernel on other rows, so its bits are no check either. A fault of a few
 * roundings in it, on one rank (a softmax scale one ulp off, a row sum in float instead
 * of double) or on every rank (a flash rescale skewed, in a case that runs flash against a
 * math reference), stays inside every rounding envelope, in fp32 and more so in bf16.
 *
 * How. After the kernel ran, the rank computes the same output again from the same q, k,
 * v with the code below, written apart from the kernels: the row work (max, exp, sums,
 * rescale, division) is its own, and only the shared primitives are called (rp_gemm with
 * the arguments each kernel passes, whose bits depend on the call's shape; rp_expf). The
 * IEEE operations and their order are the kernels' contracts (attention.h, rows.c,
 * rp_softmax_rows in ops.c), so a correct kernel gives the same bits, in fp32 and bf16;
 * rp_par_own_hold sends both fingerprints to the replica check's own group, under the
 * layer the attention feeds. This is an oracle, so it is deliberately a second
 * implementation: sharing the kernels' helpers would share their faults. A fault in
 * rp_gemm's hand-over to the BLAS is the GEMM's own check's (engine/gemm_check.c); one in
 * rp_expf acts in the reference run too. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../attention/attention.h"
#include "../fastmath.h"
#include "../ops.h"
#include "parallel.h"

/* The variant and tiles a default rp_attention call runs (its documented defaults; auto:
 * the selector's pick for this call). */
typedef struct own_plan {
    rp_attn_kind kind;
    int rows;   /* query rows per block (math: all) */
    int keys;   /* keys per block (subquad, flash; >= Tk: one block) */
} own_plan;

static rp_status own_plan_of(const rp_ctx *ctx, int B, int H, int Tq, int Tk, int D, int masked, own_plan *pl,
                             rp_error *err) {
    rp_attn_kind kind = ctx->attn.kind;
    int qc = ctx->attn.q_chunk, kc = ctx->attn.kv_chunk;
    if (kind == RP_ATTN_AUTO) {
        const rp_device_profile prof = rp_attn_profile_of(ctx);
        rp_attn_choice c;
        RP_TRY(rp_attn_auto_choose(&prof, &ctx->attn, B, H, Tq, Tk, D, masked, &c, err));
        kind = c.kind, qc = c.q_chunk, kc = c.kv_chunk;
    }
    pl->kind = kind;
    switch (kind) {
    case RP_ATTN_MATH: qc = Tq, kc = Tk; break;
    case RP_ATTN_SPLIT: qc = qc ? qc : RP_ATTN_SPLIT_Q_DEFAULT, kc = Tk; break;
    case RP_ATTN_SUBQUAD:
        qc = qc ? qc : RP_ATTN_SUBQUAD_Q_DEFAULT;
        if (!kc) kc = (int)sqrt((double)Tk) > 0 ? (int)sqrt((double)Tk) : 1;
        break;
    case RP_ATTN_FLASH:
        qc = qc ? qc : RP_ATTN_FLASH_Q_DEFAULT;
        kc = kc ? kc : RP_ATTN_FLASH_KV_DEFAULT;
        break;
    case RP_ATTN_AUTO: assert(0); break;
    }
    pl->rows = qc < Tq ? qc : Tq;
    pl->keys = kc < Tk ? kc : Tk;
    return RP_OK;
}

/* The largest of x (n), NaNs skipped; -Inf when none. Exact: any order gives it. */
static float own_max(const float *x, int n) {
    float top = -INFINITY;
    for (int j = 0; j < n; j++)
        if (x[j] > top) top = x[j];
    return top;
}

/* Whole-row softmax of s (n) in place, as rp_softmax_rows defines it: fp32 exp of s - max,
 * a double sum over 4 interleaved lanes (the tail past the last full group of 4 into lane
 * 0), then each weight times the double reciprocal, rounded to fp32. No finite score: NaN
 * if one is NaN, else zeros. */
static void own_softmax(float *s, int n) {
    const float top = own_max(s, n);
    if (top == -INFINITY) {
        int nan = 0;
        for (int j = 0; j < n; j++) nan |= isnan(s[j]);
        for (int j = 0; j < n; j++) s[j] = nan ? NAN : 0.0f;
        return;
    }
    double lane[4] = {0.0, 0.0, 0.0, 0.0};
    const int full = n / 4 * 4;
    for (int j = 0; j < n; j++) {
        s[j] = rp_expf(s[j] - top);
        lane[j < full ? j % 4 : 0] += s[j];
    }
    const double inv = 1.0 / ((lane[0] + lane[1]) + (lane[2] + lane[3]));
    for (int j = 0; j < n; j++) s[j] = (float)((double)s[j] * inv);
}

/* s (n) <- fp32 exp(s - top) (zeros when top is -Inf) and their fp32 sum over 8 lanes
 * (key j in lane j mod 8), the lanes added ((0+1)+(2+3))+((4+5)+(6+7)): rows.c's contract. */
static float own_exp_sum(float *s, int n, float top) {
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int j = 0; j < n; j++) {
        s[j] = top == -INFINITY ? 0.0f : rp_expf(s[j] - top);
        lane[j % 8] += s[j];
    }
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/* S (n, nk) = scale q k^T with masked keys at -Inf: the first GEMM of every variant. */
static void own_scores(const rp_ctx *ctx, float *S, const float *q, const float *k, const uint8_t *m, int n, int nk,
                       int D, float scale) {
    rp_gemm(ctx, 0, 1, n, nk, D, scale, q, D, k, D, 0.0f, S, nk);
    for (int i = 0; m && i < n; i++)
        for (int j = 0; j < nk; j++)
            if (!m[j]) S[(size_t)i * nk + j] = -INFINITY;
}

/* Scratch for one (b, h): S (rows, keys), and per key block (nkb of them) the summaries
 * PV (rows, D), mx, ws (rows) — subquad keeps them all, flash uses block 0 as its state. */
typedef struct own_work {
    float *S, *PV, *mx, *ws;
} own_work;

/* One query block (n rows of q) against all Tk keys, into o (n, D).
 *   whole (keys >= Tk): scores, softmax, P v — math, split, subquad's one-chunk path;
 *   subquad: every key block summarised alone, then rescaled to the global max and summed
 *            in block order;
 *   flash:   a running (max, sum, output), rescaled as the max grows, divided at the end
 *            by the reciprocal of the sum. */
static void own_block(const rp_ctx *ctx, const own_plan *pl, float *o, const float *q, const float *k, const float *v,
                      const uint8_t *m, int n, int Tk, int D, float scale, const own_work *w) {
    const int kb = pl->keys, nkb = (Tk + kb - 1) / kb;
    if (pl->kind != RP_ATTN_FLASH && kb >= Tk) {
        own_scores(ctx, w->S, q, k, m, n, Tk, D, scale);
        for (int i = 0; i < n; i++) own_softmax(w->S + (size_t)i * Tk, Tk);
        rp_gemm(ctx, 0, 0, n, D, Tk, 1.0f, w->S, Tk, v, D, 0.0f, o, D);
        return;
    }
    if (pl->kind == RP_ATTN_SUBQUAD) {
        for (int c = 0; c < nkb; c++) {
            const int j0 = c * kb, nk = Tk - j0 < kb ? Tk - j0 : kb;
            own_scores(ctx, w->S, q, k + (size_t)j0 * D, m ? m + j0 : NULL, n, nk, D, scale);
            for (int i = 0; i < n; i++) {
                float *s = w->S + (size_t)i * nk;
                w->mx[(size_t)c * n + i] = own_max(s, nk);
                w->ws[(size_t)c * n + i] = own_exp_sum(s, nk, w->mx[(size_t)c * n + i]);
            }
            rp_gemm(ctx, 0, 0, n, D, nk, 1.0f, w->S, nk, v + (size_t)j0 * D, D, 0.0f, w->PV + (size_t)c * n * D, D);
        }
        for (int i = 0; i < n; i++) {
            float top = -INFINITY, wsum = 0.0f, *oi = o + (size_t)i * D;
            for (int c = 0; c < nkb; c++) top = w->mx[(size_t)c * n + i] > top ? w->mx[(size_t)c * n + i] : top;
            memset(oi, 0, sizeof(float) * D);
            if (top == -INFINITY) continue;
            for (int c = 0; c < nkb; c++) {
                const float cm = w->mx[(size_t)c * n + i], f = cm == -INFINITY ? 0.0f : rp_expf(cm - top);
                const float *pv = w->PV + ((size_t)c * n + i) * D;
                for (int d = 0; d < D; d++) oi[d] += pv[d] * f;
                wsum += w->ws[(size_t)c * n + i] * f;
            }
            for (int d = 0; d < D; d++) oi[d] /= wsum;
        }
        return;
    }
    assert(pl->kind == RP_ATTN_FLASH);
    float *run = w->mx, *sum = w->ws, *acc = w->PV; /* (n) running max, (n) running sum, (n, D) */
    for (int i = 0; i < n; i++) run[i] = -INFINITY, sum[i] = 0.0f;
    memset(acc, 0, sizeof(float) * (size_t)n * D);
    for (int j0 = 0; j0 < Tk; j0 += kb) {
        const int nk = Tk - j0 < kb ? Tk - j0 : kb;
        own_scores(ctx, w->S, q, k + (size_t)j0 * D, m ? m + j0 : NULL, n, nk, D, scale);
        for (int i = 0; i < n; i++) {
            float *s = w->S + (size_t)i * nk;
            const float bm = own_max(s, nk), top = bm > run[i] ? bm : run[i];
            const float bs = own_exp_sum(s, nk, top);
            if (top == -INFINITY) continue; /* no key seen yet */
            const float a = rp_expf(run[i] - top);
            sum[i] = a * sum[i] + bs;
            if (a != 1.0f)
                for (int d = 0; d < D; d++) acc[(size_t)i * D + d] *= a;
            run[i] = top;
        }
        rp_gemm(ctx, 0, 0, n, D, nk, 1.0f, w->S, nk, v + (size_t)j0 * D, D, 1.0f, acc, D);
    }
    for (int i = 0; i < n; i++) {
        const float r = sum[i] == 0.0f ? 0.0f : 1.0f / sum[i];
        for (int d = 0; d < D; d++) o[(size_t)i * D + d] = sum[i] == 0.0f ? 0.0f : acc[(size_t)i * D + d] * r;
    }
}

rp_status rp_par_attn_own_check(const rp_ctx *ctx, const float *out, const float *q, const float *k, const float *v,
                                const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale,
                                rp_error *err) {
    rp_parallel *p = ctx->par;
    if (!p || !p->check_own || ctx->numerics != RP_NUMERICS_DEFAULT || Tq == 0) return RP_OK;
    /* the (b, h) slices recomputed: all, or one; each slice's kernel calls have the same
     * shapes either way, so a slice's bits are the whole check's */
    const int whole = rp_par_own_now(p), first = whole ? 0 : rp_par_own_slice(p, B * H);
    const int last = whole ? B * H : first + 1;
    if (first < 0) return RP_OK;
    own_plan pl;
    RP_TRY(own_plan_of(ctx, B, H, Tq, Tk, D, key_mask != NULL, &pl, err));
    rp_ctx oc = *ctx; /* the oracle's GEMMs are not themselves checked (the kernel's were) */
    oc.gemm_check = NULL;
    ctx = &oc;
    const size_t slice = (size_t)Tq * D, n = (size_t)(last - first) * slice;
    const int kb = pl.keys > 0 ? pl.keys : 1, nkb = Tk ? (Tk + kb - 1) / kb : 0;
    float *chk = calloc(n, sizeof(float)); /* (last - first, Tq, D) the recomputation of the slices */
    own_work w = {malloc(sizeof(float) * ((size_t)pl.rows * (Tk > kb ? kb : Tk) + 1)),
                  malloc(sizeof(float) * ((size_t)(nkb > 1 ? nkb : 1) * pl.rows * D + 1)),
                  malloc(sizeof(float) * ((size_t)(nkb > 1 ? nkb : 1) * pl.rows + 1)),
                  malloc(sizeof(float) * ((size_t)(nkb > 1 ? nkb : 1) * pl.rows + 1))};
    rp_status st = RP_OK;
    if (!chk || !w.S || !w.PV || !w.mx || !w.ws) {
        st = RP_FAIL(err, RP_ERR_NOMEM, "attention's own check: out of memory (%d x %d scores)", pl.rows, Tk);
        goto done;
    }
    for (int bh = first; Tk > 0 && bh < last; bh++) {
        const size_t qo = (size_t)bh * slice, ko = (size_t)bh * Tk * D, co = (size_t)(bh - first) * slice;
        const uint8_t *m = key_mask ? key_mask + (size_t)(bh / H) * Tk : NULL;
        for (int i0 = 0; i0 < Tq; i0 += pl.rows) {
            const int rows = Tq - i0 < pl.rows ? Tq - i0 : pl.rows;
            own_block(ctx, &pl, chk + co + (size_t)i0 * D, q + qo + (size_t)i0 * D, k + ko, v + ko, m, rows, Tk, D,
                      scale, &w);
        }
    }
    char what[32];
    snprintf(what, sizeof what, "%s attention", rp_attn_kind_name(pl.kind));
    rp_par_own_hold(p, out + (size_t)first * slice, chk, n, what);
done:
    free(chk); free(w.S); free(w.PV); free(w.mx); free(w.ws);
    return st;
}
