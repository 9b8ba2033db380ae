/* sp_attention.c — attention under sequence parallelism: Ulysses, ring, and both (USP).
 * The K/V hook (pipefusion's cache, parallel.h) applies after the first Ulysses all-to-all
 * (on the head group's whole sequence) or, with ring, to the keys the ring passes; patch
 * parallelism does not come here (its attention is the hook's, patch.c).
 *
 * Every sp rank holds q, k, v (B, H, T, D) for its tokens: the first Ts = T - Trep are
 * its shard of the sequence, the last Trep are the same on every rank (SD3's text
 * stream; 0 for DiT and FLUX). The shard may be two segments sharded separately: the
 * first Tlead tokens (FLUX's text) and the rest (its image); the global order is every
 * rank's first segment, then every rank's second.
 *
 * Ulysses (u ranks, H % u == 0, Hu = H / u), ulysses rank i:
 *   all-to-all 1: block p of the send buffer is [q | k | v] of head group p (heads
 *     p Hu .. p Hu + Hu - 1) for the Ts local tokens, each (B, Hu, Ts, D); block p of
 *     the receive buffer is rank p's tokens of head group i. Assembled as
 *     Q, K, V (B, Hu, Tg, D), Tg = u Ts + Trep, in sequence order (a ulysses group
 *     holds consecutive shards): the first segments of ranks 0 .. u-1, the second
 *     segments, then head group i of the replicated tokens. So a math attention sees
 *     its keys in the single rank's order (bitwise the same attention, given the same
 *     q, k, v).
 *   attention over the Tg tokens (the ctx's variant), or the ring below.
 *   all-to-all 2: block p = the output rows of rank p's tokens -> received block p is
 *     head group p of this rank's tokens (ulysses-head-order: written to slot u-1-p).
 *     The replicated tokens' outputs (one head group per rank) are allgathered.
 * Ring (R ranks, ring rank r; within USP each ring rank holds one ulysses slot's
 * consecutive Tg - Trep tokens of its head group):
 *   the sharded K/V block travels r -> r + 1 (sendrecv, R - 1 times); at step s the
 *   block of ring rank (r - s) mod R is here. For every block and (b, h):
 *     S = scale Q K_j^T (GEMM), m_j = rowmax S, P = exp(S - m_j) (rp_expf), l_j = rowsum P
 *     (double), O_j = P V_j (GEMM)
 *   and this rank's sharded query rows merge it online, in arrival order:
 *     m' = max(m, m_j); a = exp(m - m'), c = exp(m_j - m'); l = a l + c l_j; O = a O + c O_j
 *   (ring-no-rescale: l += l_j, O += O_j). The replicated block's K/V (Trep keys) comes
 *   last. The replicated QUERY rows keep each block's partial and merge them in block
 *   order 0 .. R - 1, then the replicated block, so every ring rank computes the same
 *   bits for them (they must stay identical copies). out = O / l.
 * Numerics invariant (ctx->numerics; a K/V hook under ulysses / ring is refused): the
 * canonical attention of attention.h over the key segments of the single process's
 * sequence [all lead | all second | replicated] (zero-length ones dropped). Plain and
 * Ulysses see those keys in that order and call the canonical attention with the segments
 * (attend_canonical: on the host, or on a host-staged forward's device, whose kernel is the
 * CPU's bit for bit). The ring's partials and fold below run on the host in a device
 * forward too: the same arithmetic as the device kernel's, not a second one.
 * The ring computes, for each arriving shard of ring rank src (ring ranks hold consecutive
 * sp shards: sp rank = ring rank * ulysses + ulysses rank, parallel.c), the partials of
 * all its query rows (sharded and replicated alike) against the shard's lead piece — the
 * lead segment's keys src Tl .. src Tl + Tl - 1, Tl its lead keys per ring rank — and its
 * second piece (src Tsec .. in the second segment) into their canonical block slots; after
 * the ring, a tile of rows at a time, the replicated segment's blocks (last in canonical
 * order, local) join them and every row folds its slots in canonical order
 * (rp_attn_canon_merge; ring-no-rescale: the fold without the max correction). A piece
 * that is not a whole number of its segment's canonical blocks is RP_ERR_INVALID. Memory:
 * the ring blocks' partials of every query row, B Hh Tg (R Tl / Bk_lead + R Tsec / Bk_sec)
 * (D + 2) floats (FLUX at 1024^2, ring 2: 2 GB; the price of folding in one fixed order
 * while the shards arrive in a rank-dependent one).
 * Tags on the ring comm: TAG_RING. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../attention/attention.h"
#include "../device.h"
#include "../fastmath.h"
#include "../ops.h"
#include "../threads.h"
#include "parallel.h"

enum { TAG_RING = 41 };

/* ---- ring attention ---------------------------------------------------------------- */

/* One block for one (b, h): q (nq, D), k, v (nk, D) -> mb (nq) row max of s = scale q k^T,
 * lb (nq) = sum_j exp(s_j - mb) (double), Ob (nq, D) = exp(s - mb) v. S: (nq, nk) scratch. */
/* C (M, N) = alpha op(A) op(B), beta 0, on host buffers: rp_gemm, or during a host-staged
 * device forward (p->stage_dev) the device's GEMM on uploaded copies — the reductions are
 * what differs between devices; the elementwise rest of the ring (rp_expf, the merge) is
 * the same IEEE arithmetic on either side. */
static void ring_gemm(const rp_ctx *ctx, int tB, int M, int N, int K, float alpha, const float *A, const float *B,
                      float *C) {
    rp_device *dev = ctx->par ? ctx->par->stage_dev : NULL;
    const int lda = K, ldb = tB ? K : N;
    if (!dev) {
        rp_gemm(ctx, 0, tB, M, N, K, alpha, A, lda, B, ldb, 0.0f, C, N);
        return;
    }
    rp_ctx dc = *ctx;
    dc.dev = dev;
    dc.par = NULL;
    const size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *buf = rp_d_alloc(&dc, na + nb + nc, NULL); /* failure: the device's sticky error */
    if (!buf) return;
    rp_d_upload(&dc, buf, A, na);
    rp_d_upload(&dc, buf + na, B, nb);
    rp_d_gemm(&dc, 0, tB, M, N, K, alpha, buf, lda, buf + na, ldb, 0.0f, buf + na + nb, N);
    rp_d_download(&dc, C, buf + na + nb, nc);
    rp_d_free(&dc, buf);
}

static void block_partial(const rp_ctx *ctx, const float *q, const float *k, const float *v, int nq, int nk,
                          int D, float scale, float *mb, double *lb, float *Ob, float *S) {
    ring_gemm(ctx, 1, nq, nk, D, scale, q, k, S);
    for (int r = 0; r < nq; r++) {
        float *row = S + (size_t)r * nk;
        float m = row[0];
        for (int j = 1; j < nk; j++) m = row[j] > m ? row[j] : m;
        double sum = 0.0;
        for (int j = 0; j < nk; j++) {
            row[j] = rp_expf(row[j] - m);
            sum += row[j];
        }
        mb[r] = m;
        lb[r] = sum;
    }
    ring_gemm(ctx, 0, nq, D, nk, 1.0f, S, v, Ob);
}

/* One step of the ring: this rank's K/V block (*cur, bytes) goes to ring rank ri + 1 while
 * ri - 1's arrives in *next; then the buffers swap, so *cur is the block now here. The
 * ring-reverse-rank fault turns the last ring rank the other way (to ri - 1, from ri + 1):
 * with R >= 3 its neighbours wait for messages it never sends, a deadlock. */
static rp_status ring_pass(const rp_parallel *p, float **cur, float **next, size_t bytes, rp_error *err) {
    rp_comm *c = p->ring.comm;
    const int R = p->ring.size, ri = p->ring.pos; /* pos: the comm's numbering */
    const int dir = p->fault == RP_INJECT_RING_REVERSE_RANK && p->ring.rank == R - 1 ? -1 : 1;
    rp_status st = c->ops->sendrecv(c, *cur, bytes, (ri + dir + R) % R, *next, bytes, (ri - dir + R) % R, TAG_RING,
                                    err);
    float *t = *cur;
    *cur = *next;
    *next = t;
    return st;
}

/* Merges a block partial (mb, lb, Ob) into the running (m, l, O) of nq rows; `first`
 * initialises. The injected faults: no_rescale adds without the max correction; skew is
 * added to the block's row max (ring-lse-skew; 0 otherwise). */
static void merge(float *m, double *l, float *O, const float *mb, const double *lb, const float *Ob, int nq, int D,
                  int first, int no_rescale, float skew) {
    if (first) {
        memcpy(m, mb, sizeof(float) * nq);
        memcpy(l, lb, sizeof(double) * nq);
        memcpy(O, Ob, sizeof(float) * nq * (size_t)D);
        return;
    }
    for (int r = 0; r < nq; r++) {
        float *o = O + (size_t)r * D;
        const float *ob = Ob + (size_t)r * D;
        if (no_rescale) {
            l[r] += lb[r];
            for (int d = 0; d < D; d++) o[d] += ob[d];
            m[r] = mb[r] > m[r] ? mb[r] : m[r];
            continue;
        }
        const float mbr = skew != 0.0f ? mb[r] + skew : mb[r]; /* (-0 + 0 would be +0) */
        const float mn = mbr > m[r] ? mbr : m[r];
        const float a = rp_expf(m[r] - mn), c = rp_expf(mbr - mn);
        l[r] = (double)a * l[r] + (double)c * lb[r];
        for (int d = 0; d < D; d++) o[d] = a * o[d] + c * ob[d];
        m[r] = mn;
    }
}

/* out rows (n, D) = O / l. */
static void finish(float *out, const float *O, const double *l, int n, int D) {
    for (int r = 0; r < n; r++)
        for (int d = 0; d < D; d++) out[(size_t)r * D + d] = (float)(O[(size_t)r * D + d] / l[r]);
}

/* ---- the ring's own check ------------------------------------------------------------
 * The default ring is arithmetic only a layout runs: the serial run has no merge, and the
 * invariant shadow runs the canonical ring instead, so a systematic error of a few
 * roundings in it (a log-sum-exp off by 1e-5, one rank rounding its scores to bf16) stays
 * inside every rounding envelope. With p->check_own (the classifier's teacher run; at the
 * evaluations rp_par_own_now names) each
 * ring rank keeps the shards it received and computes its output again (ring_own_check),
 * written apart from block_partial / merge / finish and organised otherwise (one fold per
 * block into running rows; the replicated query rows fold the blocks as they come, in block
 * order, instead of keeping every partial to the end), with the same IEEE operations in
 * the same order: the same rp_gemm calls, rp_expf, double row sums, the same rescale. A
 * correct ring gives the same bits; rp_par_own_hold sends both fingerprints to the replica
 * check's own group. This is an oracle, so it is deliberately a second implementation. */

/* Scratch of one fold: S (nq, nk), Ob (nq, D), bm (nq), bl (nq). */
typedef struct own_scratch {
    float *S, *Ob, *bm;
    double *bl;
} own_scratch;

/* Folds key block (k, v) (nk keys) into the running (m, l, O) of nq query rows q: the
 * block's scores S = scale q k^T, row max, exp and double row sum, exp-weighted values;
 * then each running row moves to the larger max (`first`: the block becomes the rows). */
static void own_fold(const rp_ctx *ctx, const float *q, const float *k, const float *v, int nq, int nk, int D,
                     float scale, int first, float *m, double *l, float *O, const own_scratch *w) {
    /* rp_gemm itself, with the arguments ring_gemm's host path passes: not ring_gemm, so a
     * fault in the ring's own wrapper is not shared (the check runs on the host path only) */
    rp_gemm(ctx, 0, 1, nq, nk, D, scale, q, D, k, D, 0.0f, w->S, nk);
    for (int i = 0; i < nq; i++) {
        float *s = w->S + (size_t)i * nk, top = s[0];
        for (int j = 1; j < nk; j++) top = s[j] > top ? s[j] : top;
        double sum = 0.0;
        for (int j = 0; j < nk; j++) sum += (s[j] = rp_expf(s[j] - top));
        w->bm[i] = top;
        w->bl[i] = sum;
    }
    float *dst = first ? O : w->Ob; /* (nq, D) */
    rp_gemm(ctx, 0, 0, nq, D, nk, 1.0f, w->S, nk, v, D, 0.0f, dst, D);
    if (first) {
        memcpy(m, w->bm, sizeof(float) * nq);
        memcpy(l, w->bl, sizeof(double) * nq);
        return;
    }
    for (int i = 0; i < nq; i++) {
        const float top = w->bm[i] > m[i] ? w->bm[i] : m[i];
        const float a = rp_expf(m[i] - top), c = rp_expf(w->bm[i] - top);
        l[i] = (double)a * l[i] + (double)c * w->bl[i];
        m[i] = top;
        float *o = O + (size_t)i * D;
        const float *ob = w->Ob + (size_t)i * D;
        for (int d = 0; d < D; d++) o[d] = a * o[d] + c * ob[d];
    }
}

/* The own check of ring_attention's out (B, Hh, Tg, D): recomputed from seen (R, [K | V]
 * (B, Hh, Tks, D) each), the shards in the order they arrived (slot s: ring rank ri - s's),
 * and the replicated keys of K, V; then both to rp_par_own_hold. Errors: RP_ERR_NOMEM. */
static rp_status ring_own_check(const rp_ctx *ctx, const float *out, const float *Q, const float *K, const float *V,
                                const float *seen, int B, int Hh, int Ts, int Tks, int Trep, int D, float scale,
                                rp_error *err) {
    rp_parallel *p = ctx->par;
    const int R = p->ring.size, ri = p->ring.pos, Tg = Ts + Trep, Tkg = Tks + Trep;
    const size_t BH = (size_t)B * Hh, blk = BH * Tks * D;
    const int nq = Ts > Trep ? Ts : Trep, nk = Tks > Trep ? Tks : Trep;
    rp_ctx oc = *ctx; /* the oracle's GEMMs are not themselves checked (the ring's were) */
    oc.gemm_check = NULL;
    ctx = &oc;
    own_scratch w = {malloc(sizeof(float) * (size_t)nq * nk), malloc(sizeof(float) * (size_t)nq * D),
                     malloc(sizeof(float) * nq), malloc(sizeof(double) * nq)};
    float *chk = malloc(sizeof(float) * BH * Tg * D); /* (B, Hh, Tg, D) */
    float *m = malloc(sizeof(float) * Tg);            /* (Tg) running rows of one (b, h) */
    double *l = malloc(sizeof(double) * Tg);          /* (Tg) */
    float *O = malloc(sizeof(float) * (size_t)Tg * D); /* (Tg, D) */
    rp_status st = RP_OK;
    if (!w.S || !w.Ob || !w.bm || !w.bl || !chk || !m || !l || !O) {
        st = RP_FAIL(err, RP_ERR_NOMEM, "ring attention's own check: out of memory");
        goto done;
    }
    for (size_t bh = 0; bh < BH; bh++) {
        const float *q = Q + bh * Tg * D, *krep = K + (bh * Tkg + Tks) * D, *vrep = V + (bh * Tkg + Tks) * D;
        /* the sharded rows: the shards in arrival order, then the replicated keys */
        for (int s = 0; s < R; s++) {
            const float *kv = seen + (size_t)s * 2 * blk;
            own_fold(ctx, q, kv + bh * Tks * D, kv + blk + bh * Tks * D, Ts, Tks, D, scale, s == 0, m, l, O, &w);
        }
        if (Trep) own_fold(ctx, q, krep, vrep, Ts, Trep, D, scale, 0, m, l, O, &w);
        /* the replicated rows: ring ranks 0 .. R - 1's shards, then the replicated keys */
        const float *qr = q + (size_t)Ts * D;
        float *mr = m + Ts, *Or = O + (size_t)Ts * D;
        double *lr = l + Ts;
        for (int src = 0; Trep && src < R; src++) {
            const float *kv = seen + (size_t)((ri - src + R) % R) * 2 * blk;
            own_fold(ctx, qr, kv + bh * Tks * D, kv + blk + bh * Tks * D, Trep, Tks, D, scale, src == 0, mr, lr, Or,
                     &w);
        }
        if (Trep) own_fold(ctx, qr, krep, vrep, Trep, Trep, D, scale, 0, mr, lr, Or, &w);
        float *c = chk + bh * Tg * D;
        for (int i = 0; i < Tg; i++)
            for (int d = 0; d < D; d++) c[(size_t)i * D + d] = (float)(O[(size_t)i * D + d] / l[i]);
    }
    rp_par_own_hold(p, out, chk, BH * Tg * D, "ring attention");
done:
    free(w.S); free(w.Ob); free(w.bm); free(w.bl); free(chk); free(m); free(l); free(O);
    return st;
}

/* Ring attention of Q (B, Hh, Tg, D), Tg = Ts + Trep, over K, V (B, Hh, Tkg, D), Tkg =
 * Tks + Trep (Ts queries and Tks keys sharded over the ring group: Tks = Ts unless a K/V
 * hook replaced the keys; Trep replicated), into out (B, Hh, Tg, D). With p->check_own
 * (host only) the output's own check follows (ring_own_check). */
static rp_status ring_attention(const rp_ctx *ctx, float *out, const float *Q, const float *K, const float *V,
                                int B, int Hh, int Ts, int Tks, int Trep, int D, float scale, rp_error *err) {
    rp_parallel *p = ctx->par;
    const int R = p->ring.size, ri = p->ring.pos, Tg = Ts + Trep, Tkg = Tks + Trep;
    const int no_rescale = p->fault == RP_INJECT_RING_NO_RESCALE;
    const float skew = p->fault == RP_INJECT_RING_LSE_SKEW ? 1e-5f : 0.0f; /* the last block's max */
    const int own = rp_par_own_now(p) && !p->stage_dev;
    const size_t BH = (size_t)B * Hh, blk = BH * Tks * D;   /* one of K or V's sharded part */
    const int nmax = Ts > Trep ? Ts : Trep, nkmax = Tks > Trep ? Tks : Trep;
    const int nb = R + (Trep > 0);                           /* key blocks: ring + replicated */

    float *kv = malloc(sizeof(float) * 4 * blk);             /* 2 x [K (B,Hh,Tks,D) | V (B,Hh,Tks,D)] */
    float *S = malloc(sizeof(float) * (size_t)nmax * nkmax); /* (nq, nk) scores */
    float *mb = malloc(sizeof(float) * nmax);                /* (nq) */
    double *lb = malloc(sizeof(double) * nmax);              /* (nq) */
    float *Ob = malloc(sizeof(float) * (size_t)nmax * D);    /* (nq, D) */
    float *m = malloc(sizeof(float) * BH * Ts);              /* (B, Hh, Ts) running max */
    double *l = malloc(sizeof(double) * BH * Ts);            /* (B, Hh, Ts) running sum */
    float *O = malloc(sizeof(float) * BH * Ts * D);          /* (B, Hh, Ts, D) running output */
    /* replicated queries: each block's partial, merged in block order at the end */
    float *rm = Trep ? malloc(sizeof(float) * nb * BH * Trep) : NULL;          /* (nb, B, Hh, Trep) */
    double *rl = Trep ? malloc(sizeof(double) * nb * BH * Trep) : NULL;        /* (nb, B, Hh, Trep) */
    float *rO = Trep ? malloc(sizeof(float) * nb * BH * Trep * D) : NULL;      /* (nb, B, Hh, Trep, D) */
    float *seen = own ? malloc(sizeof(float) * 2 * blk * R) : NULL; /* (R, [K | V]) in arrival order */
    rp_status st = RP_OK;
    if (!kv || !S || !mb || !lb || !Ob || !m || !l || !O || (Trep && (!rm || !rl || !rO)) || (own && !seen)) {
        st = RP_FAIL(err, RP_ERR_NOMEM, "ring attention: out of memory (B %d, heads %d, %d + %d tokens)", B, Hh, Ts,
                     Trep);
        goto done;
    }
    float *cur = kv, *next = kv + 2 * blk;
    for (size_t bh = 0; bh < BH; bh++) {
        memcpy(cur + bh * Tks * D, K + bh * Tkg * D, sizeof(float) * Tks * D);
        memcpy(cur + blk + bh * Tks * D, V + bh * Tkg * D, sizeof(float) * Tks * D);
    }
    for (int s = 0; s < R && st == RP_OK; s++) {
        const int src = ((ri - s) % R + R) % R; /* whose block is here */
        if (own) memcpy(seen + (size_t)s * 2 * blk, cur, sizeof(float) * 2 * blk);
        for (size_t bh = 0; bh < BH; bh++) {
            const float *q = Q + bh * Tg * D, *k = cur + bh * Tks * D, *v = cur + blk + bh * Tks * D;
            block_partial(ctx, q, k, v, Ts, Tks, D, scale, mb, lb, Ob, S);
            merge(m + bh * Ts, l + bh * Ts, O + bh * Ts * D, mb, lb, Ob, Ts, D, s == 0, no_rescale,
                  s == R - 1 ? skew : 0.0f);
            if (Trep) {
                const size_t o = (size_t)src * BH + bh;
                block_partial(ctx, q + (size_t)Ts * D, k, v, Trep, Tks, D, scale, rm + o * Trep, rl + o * Trep,
                              rO + o * Trep * D, S);
            }
        }
        if (s + 1 < R) st = ring_pass(p, &cur, &next, sizeof(float) * 2 * blk, err);
    }
    if (st != RP_OK) goto done;
    if (Trep) /* the replicated keys, block nb - 1 */
        for (size_t bh = 0; bh < BH; bh++) {
            const float *q = Q + bh * Tg * D, *k = K + (bh * Tkg + Tks) * D, *v = V + (bh * Tkg + Tks) * D;
            block_partial(ctx, q, k, v, Ts, Trep, D, scale, mb, lb, Ob, S);
            merge(m + bh * Ts, l + bh * Ts, O + bh * Ts * D, mb, lb, Ob, Ts, D, 0, no_rescale, 0.0f);
            const size_t o = (size_t)(nb - 1) * BH + bh;
            block_partial(ctx, q + (size_t)Ts * D, k, v, Trep, Trep, D, scale, rm + o * Trep, rl + o * Trep,
                          rO + o * Trep * D, S);
        }
    for (size_t bh = 0; bh < BH; bh++) {
        finish(out + bh * Tg * D, O + bh * Ts * D, l + bh * Ts, Ts, D);
        if (!Trep) continue;
        /* the replicated queries: blocks in order 0 .. nb - 1 into block 0's slot */
        float *m0 = rm + bh * Trep, *O0 = rO + bh * Trep * D;
        double *l0 = rl + bh * Trep;
        for (int j = 1; j < nb; j++) {
            const size_t o = (size_t)j * BH + bh;
            merge(m0, l0, O0, rm + o * Trep, rl + o * Trep, rO + o * Trep * D, Trep, D, 0, no_rescale, 0.0f);
        }
        finish(out + (bh * Tg + Ts) * D, O0, l0, Trep, D);
    }
    if (own) st = ring_own_check(ctx, out, Q, K, V, seen, B, Hh, Ts, Tks, Trep, D, scale, err);
done:
    free(kv); free(S); free(mb); free(lb); free(Ob); free(m); free(l); free(O);
    free(rm); free(rl); free(rO); free(seen);
    return st;
}

/* ---- ring attention, numerics invariant ------------------------------------------------ */

/* What ring_canonical's (batch, head) pairs share; its two loops over them run in parts
 * on ctx->threads (rp_threads_for), each part with its own scratch. */
typedef struct ring_canon {
    const float *Q, *K, *V;  /* (B, Hh, Tg, D); Q as bf16 values in a bf16 call */
    const float *shard;      /* [K (BH, Ts, D) | V (BH, Ts, D)]: the shard here */
    float *pm, *pl, *pO;     /* (BH, Tg, nbr), (BH, Tg, nbr), (BH, Tg, nbr, D) */
    float *out;              /* (BH, Tg, D) */
    size_t blk;              /* BH Ts D */
    int Ts, Tg, Trep, D, nbr, nbt, RT, bf16, no_rescale;
    int piece[2], bk[3], i0[2]; /* this step's pieces and their first slots */
    float scale;
} ring_canon;

/* The partials of pairs [bh0, bh1) against the shard here (both its pieces). 1: no scratch. */
static int ring_canon_partials_part(void *user, int part, int bh0, int bh1) {
    (void)part;
    const ring_canon *J = user;
    const int Tg = J->Tg, Ts = J->Ts, D = J->D, nbr = J->nbr;
    float *kt = malloc(sizeof(float) * ((size_t)Ts * D + 1)); /* one piece's keys, packed */
    if (!kt) return 1;
    for (int bh = bh0; bh < bh1; bh++) {
        const float *q = J->Q + (size_t)bh * Tg * D, *k = J->shard + (size_t)bh * Ts * D,
                    *v = J->shard + J->blk + (size_t)bh * Ts * D;
        for (int g = 0, j0 = 0; g < 2; j0 += J->piece[g], g++) {
            if (!J->piece[g]) continue;
            rp_attn_canon_pack(kt, k + (size_t)j0 * D, J->piece[g], D, 0); /* rounded already */
            rp_attn_canon_partials(J->pm + (size_t)bh * Tg * nbr, J->pl + (size_t)bh * Tg * nbr,
                                   J->pO + (size_t)bh * Tg * nbr * D, nbr, J->i0[g], q, kt, v + (size_t)j0 * D, NULL,
                                   Tg, J->piece[g], J->bk[g], D, J->scale, J->bf16);
        }
    }
    free(kt);
    return 0;
}

/* After the ring, pairs [bh0, bh1): the replicated segment's blocks (computed here, RT rows
 * at a time next to a copy of those rows' ring slots) and every row's fold. 1: no scratch. */
static int ring_canon_merge_part(void *user, int part, int bh0, int bh1) {
    (void)part;
    const ring_canon *J = user;
    const int Tg = J->Tg, Ts = J->Ts, Trep = J->Trep, D = J->D, nbr = J->nbr, nbt = J->nbt, RT = J->RT;
    const size_t tile = (size_t)RT * nbt;
    float *kt = Trep ? malloc(sizeof(float) * ((size_t)Trep * D)) : NULL;            /* (Trep, D) packed */
    float *tm = Trep ? malloc(sizeof(float) * tile) : NULL;                           /* (RT, nbt) */
    float *tl = Trep ? malloc(sizeof(float) * tile) : NULL;                           /* (RT, nbt) */
    float *tO = Trep ? malloc(sizeof(float) * tile * D) : NULL;                       /* (RT, nbt, D) */
    float *vr = J->bf16 && Trep ? malloc(sizeof(float) * ((size_t)Trep * D)) : NULL;  /* (Trep, D) */
    int nomem = Trep && (!kt || !tm || !tl || !tO || (J->bf16 && !vr));
    for (int bh = bh0; bh < bh1 && !nomem; bh++) {
        const float *bm = J->pm + (size_t)bh * Tg * nbr, *bl = J->pl + (size_t)bh * Tg * nbr,
                    *bO = J->pO + (size_t)bh * Tg * nbr * D;
        float *out = J->out + (size_t)bh * Tg * D;
        if (!Trep) {
            rp_attn_canon_merge(out, bm, bl, bO, Tg, nbr, D, J->no_rescale);
            continue;
        }
        rp_attn_canon_pack(kt, J->K + ((size_t)bh * Tg + Ts) * D, Trep, D, J->bf16);
        const float *vrep = J->V + ((size_t)bh * Tg + Ts) * D; /* (Trep, D) */
        if (J->bf16) { rp_bf16_round(vr, vrep, (size_t)Trep * D); vrep = vr; }
        for (int r0 = 0; r0 < Tg; r0 += RT) {
            const int nr = Tg - r0 < RT ? Tg - r0 : RT;
            for (int r = 0; r < nr; r++) { /* the rows' ring slots, then their replicated blocks' */
                const size_t from = (size_t)(r0 + r) * nbr, to = (size_t)r * nbt;
                memcpy(tm + to, bm + from, sizeof(float) * nbr);
                memcpy(tl + to, bl + from, sizeof(float) * nbr);
                memcpy(tO + to * D, bO + from * D, sizeof(float) * nbr * D);
            }
            rp_attn_canon_partials(tm, tl, tO, nbt, nbr, J->Q + ((size_t)bh * Tg + r0) * D, kt, vrep, NULL, nr, Trep,
                                   J->bk[2], D, J->scale, J->bf16);
            rp_attn_canon_merge(out + (size_t)r0 * D, tm, tl, tO, nr, nbt, D, J->no_rescale);
        }
    }
    free(kt); free(tm); free(tl); free(tO); free(vr);
    return nomem;
}

/* Canonical ring attention (the header's "numerics invariant") of Q (B, Hh, Tg, D), Tg =
 * Ts + Trep, over K, V (B, Hh, Tg, D) whose first Ts keys are this ring rank's shard:
 * [Tl lead | Ts - Tl second] (Tl: lead keys per ring rank), the last Trep replicated.
 * Each loop over the (batch, head) pairs runs in parts on ctx->threads: a pair is the same
 * code over the same inputs on whichever thread, so the bits do not move. */
static rp_status ring_canonical(const rp_ctx *ctx, float *out, const float *Q, const float *K, const float *V, int B,
                                int Hh, int Ts, int Tl, int Trep, int D, float scale, rp_error *err) {
    rp_parallel *p = ctx->par;
    const int R = p->ring.size, ri = p->ring.pos, Tg = Ts + Trep, Tsec = Ts - Tl;
    const int no_rescale = p->fault == RP_INJECT_RING_NO_RESCALE;
    /* the single process's segments: every ring rank's lead pieces, second pieces, replicated */
    const long long n[3] = {(long long)R * Tl, (long long)R * Tsec, Trep};
    const int piece[3] = {Tl, Tsec, Trep};
    const char *name[3] = {"lead (text)", "second (image)", "replicated (text)"};
    int bk[3], nb[3];
    for (int s = 0; s < 3; s++) {
        if (n[s] > 0x7fffffff)
            return RP_FAIL(err, RP_ERR_INVALID, "ring attention: the %s segment has %lld keys", name[s], n[s]);
        const int whole = s == 2; /* the replicated segment: no rank splits it */
        bk[s] = whole ? rp_attn_canon_block_whole() : rp_attn_canon_block((int)n[s]);
        if (!whole && piece[s] % bk[s])
            return RP_FAIL(err, RP_ERR_INVALID, "numerics invariant ring attention: the %s segment's %lld keys over "
                           "ring %d give shards of %d keys, not a multiple of its canonical block Bk(%lld) = %d",
                           name[s], n[s], R, piece[s], n[s], bk[s]);
        nb[s] = rp_attn_canon_nblocks((int)n[s], whole);
    }
    /* Slots for the ring's blocks only (nbr a row): the replicated segment comes last in the
     * canonical order and is here, so its blocks are computed after the ring, RT rows at a
     * time (rp_attn_canon_pass_rows), next to a copy of those rows' ring slots. */
    const int nbr = nb[0] + nb[1], nbt = nbr + nb[2], RT = rp_attn_canon_pass_rows(nbt, D);
    const size_t BH = (size_t)B * Hh, blk = BH * Ts * D, slots = BH * Tg * nbr;
    const int bf16 = ctx->precision == RP_PREC_BF16;
    float *kv = malloc(sizeof(float) * 4 * blk);               /* 2 x [K (B,Hh,Ts,D) | V (B,Hh,Ts,D)] */
    float *pm = malloc(sizeof(float) * (slots + 1));           /* (B, Hh, Tg, nbr) */
    float *pl = malloc(sizeof(float) * (slots + 1));           /* (B, Hh, Tg, nbr) */
    float *pO = malloc(sizeof(float) * (slots * D + 1));       /* (B, Hh, Tg, nbr, D) */
    /* bf16: the products' inputs as bf16 values (the shards travel rounded) */
    float *qr = bf16 ? malloc(sizeof(float) * (BH * Tg * D + 1)) : NULL; /* (B, Hh, Tg, D) */
    rp_status st = RP_OK;
    const char *oom = "ring attention: out of memory for %zu canonical partials of %d floats (B %d, heads %d, %d + %d "
                      "tokens, %d ring blocks a row)";
    if (!kv || !pm || !pl || !pO || (bf16 && !qr)) {
        st = RP_FAIL(err, RP_ERR_NOMEM, oom, slots, D + 2, B, Hh, Ts, Trep, nbr);
        goto done;
    }
    float *cur = kv, *next = kv + 2 * blk;
    for (size_t bh = 0; bh < BH; bh++) {
        memcpy(cur + bh * Ts * D, K + bh * Tg * D, sizeof(float) * Ts * D);
        memcpy(cur + blk + bh * Ts * D, V + bh * Tg * D, sizeof(float) * Ts * D);
    }
    if (bf16) {
        rp_bf16_round(cur, cur, 2 * blk);
        rp_bf16_round(qr, Q, BH * Tg * D);
        Q = qr;
    }
    ring_canon J = {.Q = Q, .K = K, .V = V, .pm = pm, .pl = pl, .pO = pO, .out = out, .blk = blk, .Ts = Ts,
                    .Tg = Tg, .Trep = Trep, .D = D, .nbr = nbr, .nbt = nbt, .RT = RT, .bf16 = bf16,
                    .no_rescale = no_rescale, .piece = {Tl, Tsec}, .bk = {bk[0], bk[1], bk[2]}, .scale = scale};
    const int nt = rp_attn_canon_threads(ctx, (int)BH, (double)BH * Tg * (double)Ts * D);
    for (int s = 0; s < R && st == RP_OK; s++) {
        const int src = ((ri - s) % R + R) % R; /* whose shard is here */
        J.shard = cur;
        J.i0[0] = src * (Tl / bk[0]);
        J.i0[1] = nb[0] + src * (Tsec / bk[1]);
        if (rp_threads_for(nt, (int)BH, ring_canon_partials_part, &J)) {
            st = RP_FAIL(err, RP_ERR_NOMEM, oom, slots, D + 2, B, Hh, Ts, Trep, nbr);
            break;
        }
        if (s + 1 < R) st = ring_pass(p, &cur, &next, sizeof(float) * 2 * blk, err);
    }
    if (st != RP_OK) goto done;
    if (rp_threads_for(rp_attn_canon_threads(ctx, (int)BH, (double)BH * Tg * (double)(Trep + nbr) * D), (int)BH,
                       ring_canon_merge_part, &J))
        st = RP_FAIL(err, RP_ERR_NOMEM, oom, slots, D + 2, B, Hh, Ts, Trep, nbr);
done:
    free(kv); free(pm); free(pl); free(pO); free(qr);
    return st;
}

/* ---- the entry point ------------------------------------------------------------------ */

/* The K/V hook (if any) on k, v (B, H, T, D) whose first Tlead and last Trep tokens are
 * text: *kk, *vv (B, H, *Tk, D) are its keys and values, or k, v themselves (*Tk = T). */
static rp_status kv_hook(const rp_ctx *ctx, int layer, const float *k, const float *v, int B, int H, int T,
                         int Tlead, int Trep, int D, const float **kk, const float **vv, int *Tk, rp_error *err) {
    rp_parallel *p = ctx->par;
    *kk = k;
    *vv = v;
    *Tk = T;
    if (!p || !p->hooks.kv) return RP_OK;
    p->kv_lead = Tlead;
    p->kv_rep = Trep;
    const float *ko = NULL, *vo = NULL;
    int tko = T;
    RP_TRY(p->hooks.kv(p->hooks.user, layer, k, v, B, H, T, D, &ko, &vo, &tko, err));
    if (!ko) return RP_OK;
    if (!vo || tko < Tlead + Trep + 1)
        return RP_FAIL(err, RP_ERR_INVALID, "attention %d: the K/V hook gave %s with %d keys (%d + %d text)", layer,
                       vo ? "keys" : "keys but no values", tko, Tlead, Trep);
    *kk = ko;
    *vv = vo;
    *Tk = tko;
    return RP_OK;
}

/* One attention on `dev` from host buffers (a host-staged device forward): q, k, v (and the
 * mask) go up, out comes back. seg: the canonical attention over those key segments
 * (numerics invariant), else the device's attention. */
static rp_status staged(const rp_ctx *ctx, rp_device *dev, float *out, const float *q, const float *k,
                        const float *v, const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale,
                        const int *seg, int nseg, int nsplit, rp_error *err) {
    rp_ctx dc = *ctx;
    dc.dev = dev;
    dc.par = NULL;
    const size_t nq = (size_t)B * H * Tq * D, nk = (size_t)B * H * Tk * D;
    const size_t nm = key_mask ? ((size_t)B * Tk + sizeof(float) - 1) / sizeof(float) : 0;
    float *buf = rp_d_alloc(&dc, 2 * nq + 2 * nk + nm, err); /* q, k, v, out, mask */
    if (!buf) return RP_ERR_NOMEM;
    float *dq = buf, *dk = dq + nq, *dv = dk + nk, *dout = dv + nk, *dm = dout + nq;
    rp_d_upload(&dc, dq, q, nq);
    rp_d_upload(&dc, dk, k, nk);
    rp_d_upload(&dc, dv, v, nk);
    if (key_mask && dev->status == RP_OK) dev->ops->upload(dev, dm, key_mask, (size_t)B * Tk);
    const uint8_t *mask = key_mask ? (const uint8_t *)dm : NULL;
    if (seg) rp_d_attention_canonical(&dc, dout, dq, dk, dv, mask, B, H, Tq, Tk, D, scale, seg, nseg, nsplit, err);
    else rp_d_attention(&dc, dout, dq, dk, dv, mask, B, H, Tq, Tk, D, scale, err);
    rp_d_download(&dc, out, dout, nq);
    rp_status st = rp_d_check(&dc, err);
    rp_d_free(&dc, buf);
    return st;
}

/* rp_attention on host buffers, then (rp_par_own_now) its own check (attn_own.c); during a
 * host-staged device forward (p->stage_dev) the computation itself runs on that device
 * (staged), so the parallel layout's data movement is the host's and its arithmetic the
 * device's (no own check: the oracle is the host's). The own check recomputes the model's
 * problem, not the kernel's arguments: model_mask is the key mask the model's call came with
 * (under sequence parallelism none: every key attended), so a layout that hands its kernel
 * another mask (audit 13: a bf16-only path masking the last key) differs from its oracle. */
static rp_status attend(const rp_ctx *ctx, float *out, const float *q, const float *k, const float *v,
                        const uint8_t *key_mask, const uint8_t *model_mask, int B, int H, int Tq, int Tk, int D,
                        float scale, rp_error *err) {
    rp_parallel *p = ctx->par;
    rp_device *dev = p ? p->stage_dev : NULL;
    if (!dev) {
        /* attn-scale-ulp-rank: the last rank's kernel gets its softmax scale one ulp low;
         * attn-scale-step-rank: the same at the third evaluation only */
        const int skew = p && p->rank == p->world - 1 &&
                         (p->fault == RP_INJECT_ATTN_SCALE_ULP_RANK ||
                          (p->fault == RP_INJECT_ATTN_SCALE_STEP_RANK && p->fwd_eval == 2));
        RP_TRY(rp_attention(ctx, out, q, k, v, key_mask, B, H, Tq, Tk, D, skew ? nextafterf(scale, 0.0f) : scale,
                            err));
        return rp_par_attn_own_check(ctx, out, q, k, v, model_mask, B, H, Tq, Tk, D, scale, err);
    }
    return staged(ctx, dev, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, NULL, 0, 0, err);
}

/* The canonical attention (numerics invariant) over the key segments seg (nseg, the first
 * nsplit split): on the host, or in a host-staged device forward on that device, whose kernel
 * gives the CPU's bits (tests/gpu/test_cuda_attention_canonical.c), so both are one arithmetic. */
static rp_status attend_canonical(const rp_ctx *ctx, float *out, const float *q, const float *k, const float *v,
                                  const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale,
                                  const int *seg, int nseg, int nsplit, rp_error *err) {
    rp_device *dev = ctx->par ? ctx->par->stage_dev : NULL;
    if (!dev)
        return rp_attention_canonical(ctx, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, seg, nseg, nsplit, err);
    return staged(ctx, dev, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, seg, nseg, nsplit, err);
}

/* Without ulysses / ring (or with patch parallelism, whose attention is the K/V hook's:
 * patch.c): the K/V hook, then rp_attention. */
static rp_status plain(const rp_ctx *ctx, int layer, float *out, const float *q, const float *k, const float *v,
                       const uint8_t *key_mask, int B, int H, int T, int Tlead, int Trep, int D, float scale,
                       rp_error *err) {
    const float *kk, *vv;
    int Tk;
    RP_TRY(kv_hook(ctx, layer, k, v, B, H, T, Tlead, Trep, D, &kk, &vv, &Tk, err));
    if (key_mask && Tk != T)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "attention %d: a key mask with a K/V hook that changes the key "
                       "count (%d -> %d)", layer, T, Tk);
    if (ctx->numerics == RP_NUMERICS_INVARIANT) {
        /* the keys' segments: a hook's keys (patch, pipefusion) hold the whole image in its
         * warmup, in the single rank's order, so the canonical blocks are the serial run's */
        const int seg[3] = {Tlead, Tk - Tlead - Trep, Trep};
        return attend_canonical(ctx, out, q, kk, vv, key_mask, B, H, T, Tk, D, scale, seg, 3, 2, err);
    }
    return attend(ctx, out, q, kk, vv, key_mask, key_mask, B, H, T, Tk, D, scale, err);
}

/* attn-scale: the last rank's softmax scale is 1/sqrt(d+1); attn-scale-late: the same after
 * an approximate layout's warmup only. */
static int attn_scale_skewed(const rp_parallel *p) {
    if (!p || p->rank != p->world - 1) return 0;
    return p->fault == RP_INJECT_ATTN_SCALE || (p->fault == RP_INJECT_ATTN_SCALE_LATE && p->fwd_eval >= p->stale_from);
}

/* rp_par_attention on host buffers (the whole algorithm above). */
static rp_status par_attention_host(const rp_ctx *ctx, int layer, float *out, const float *q, const float *k,
                                    const float *v, const uint8_t *key_mask, int B, int H, int T, int Tlead,
                                    int Trep, int D, float scale, rp_error *err) {
    rp_parallel *p = ctx->par;
    assert(Trep >= 0 && Tlead >= 0 && Tlead + Trep <= T);
    if (attn_scale_skewed(p)) scale = (float)(1.0 / sqrt((double)D + 1.0));
    const int invariant = ctx->numerics == RP_NUMERICS_INVARIANT;
    if (invariant) {
        RP_TRY(rp_attn_canon_check(ctx, err));
        /* a K/V hook's keys go to the canonical attention where the whole sequence is on the
         * rank (patch; pipefusion without ulysses / ring): exact through the warmup */
        if (p && p->hooks.kv && p->sp.size > 1 && p->deg.patch == 1)
            return RP_FAIL(err, RP_ERR_UNSUPPORTED, "attention %d: numerics invariant has no pipefusion with "
                           "ulysses / ring path (the canonical attention takes a K/V hook's keys over the whole "
                           "sequence)", layer);
    }
    if (!p || p->sp.size == 1 || p->deg.patch > 1)
        return plain(ctx, layer, out, q, k, v, key_mask, B, H, T, Tlead, Trep, D, scale, err);

    if (key_mask)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "attention %d: key masks with sequence parallelism (no pipeline "
                       "passes one)", layer);
    const int u = p->ulysses.size, R = p->ring.size, Ts = T - Trep;
    if (H % u)
        return RP_FAIL(err, RP_ERR_INVALID, "ulysses=%d needs the head count divisible by %d; the model has %d heads",
                       u, u, H);
    if (Ts < 1) return RP_FAIL(err, RP_ERR_INVALID, "attention %d: no sharded tokens on rank %d", layer, p->rank);
    if (u == 1) { /* the hook (pipefusion's cache) on this rank's shard; the ring passes its keys */
        const float *kk, *vv;
        int Tk;
        RP_TRY(kv_hook(ctx, layer, k, v, B, H, T, Tlead, Trep, D, &kk, &vv, &Tk, err));
        if (invariant) return ring_canonical(ctx, out, q, kk, vv, B, H, Ts, Tlead, Trep, D, scale, err);
        return ring_attention(ctx, out, q, kk, vv, B, H, Ts, Tk - Trep, Trep, D, scale, err);
    }

    const int Hu = H / u, me = p->ulysses.pos, Tg = u * Ts + Trep, Tsec = Ts - Tlead;
    /* where rank pr's token j of the shard sits in the gathered sequence */
#define GPOS(pr, j) ((j) < Tlead ? (pr) * Tlead + (j) : u * Tlead + (pr) * Tsec + ((j) - Tlead))
    const size_t BHu = (size_t)B * Hu, piece = BHu * Ts * D;  /* one tensor's (B, Hu, Ts, D) */
    const size_t qkv_blk = 3 * piece;                          /* a rank's [q | k | v] block */
    float *send = malloc(sizeof(float) * qkv_blk * u);        /* (u, 3, B, Hu, Ts, D) */
    float *recv = malloc(sizeof(float) * qkv_blk * u);        /* (u, 3, B, Hu, Ts, D) */
    float *G = malloc(sizeof(float) * 4 * BHu * Tg * D);      /* Q, K, V, O each (B, Hu, Tg, D) */
    float *rep = Trep ? malloc(sizeof(float) * BHu * Trep * D * (u + 1)) : NULL; /* mine + (u, B, Hu, Trep, D) */
    rp_status st = RP_OK;
    rp_comm *c = p->ulysses.comm;
    if (!send || !recv || !G || (Trep && !rep)) {
        st = RP_FAIL(err, RP_ERR_NOMEM, "ulysses attention: out of memory (B %d, %d heads, %d + %d tokens)", B, H, Ts,
                     Trep);
        goto done;
    }
    float *Q = G, *K = G + BHu * Tg * D, *V = G + 2 * BHu * Tg * D, *O = G + 3 * BHu * Tg * D;
    const float *src[3] = {q, k, v};
    float *dst[3] = {Q, K, V};
    /* all-to-all 1: token shards -> head groups */
    for (int pr = 0; pr < u; pr++)
        for (int j = 0; j < 3; j++)
            for (int b = 0; b < B; b++)
                for (int h = 0; h < Hu; h++)
                    memcpy(send + pr * qkv_blk + j * piece + ((size_t)b * Hu + h) * Ts * D,
                           src[j] + (((size_t)b * H + pr * Hu + h) * T) * D, sizeof(float) * Ts * D);
    st = c->ops->alltoall(c, send, recv, qkv_blk, err);
    if (st != RP_OK) goto done;
    for (int j = 0; j < 3; j++)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < Hu; h++) {
                float *d = dst[j] + ((size_t)b * Hu + h) * Tg * D;
                for (int pr = 0; pr < u; pr++) {
                    const float *r = recv + pr * qkv_blk + j * piece + ((size_t)b * Hu + h) * Ts * D;
                    if (Tlead) memcpy(d + (size_t)GPOS(pr, 0) * D, r, sizeof(float) * Tlead * D);
                    memcpy(d + (size_t)GPOS(pr, Tlead) * D, r + (size_t)Tlead * D, sizeof(float) * Tsec * D);
                }
                if (Trep)
                    memcpy(d + (size_t)u * Ts * D, src[j] + (((size_t)b * H + me * Hu + h) * T + Ts) * D,
                           sizeof(float) * Trep * D);
            }
    /* attention over the whole sequence, this rank's head group, after the hook (pipefusion's
     * cache, here of the head group's whole sequence: text first in the u Tlead tokens) */
    const float *KK, *VV;
    int Tgk;
    st = kv_hook(ctx, layer, K, V, B, Hu, Tg, u * Tlead, Trep, D, &KK, &VV, &Tgk, err);
    if (st != RP_OK) goto done;
    if (invariant) { /* the gathered sequence is the single process's order */
        const int seg[3] = {u * Tlead, u * Tsec, Trep};
        if (R == 1) st = attend_canonical(ctx, O, Q, KK, VV, NULL, B, Hu, Tg, Tgk, D, scale, seg, 3, 2, err);
        else st = ring_canonical(ctx, O, Q, KK, VV, B, Hu, u * Ts, u * Tlead, Trep, D, scale, err);
    } else if (R == 1) st = attend(ctx, O, Q, KK, VV, NULL, key_mask, B, Hu, Tg, Tgk, D, scale, err);
    else st = ring_attention(ctx, O, Q, KK, VV, B, Hu, u * Ts, Tgk - Trep, Trep, D, scale, err);
    if (st != RP_OK) goto done;
    /* all-to-all 2: head groups -> token shards (send reused: same size) */
    for (int pr = 0; pr < u; pr++)
        for (size_t bh = 0; bh < BHu; bh++) {
            float *sd = send + pr * piece + bh * Ts * D;
            if (Tlead) memcpy(sd, O + (bh * Tg + GPOS(pr, 0)) * D, sizeof(float) * Tlead * D);
            memcpy(sd + (size_t)Tlead * D, O + (bh * Tg + GPOS(pr, Tlead)) * D, sizeof(float) * Tsec * D);
        }
    st = c->ops->alltoall(c, send, recv, piece, err);
    if (st != RP_OK) goto done;
    const int swap = p->fault == RP_INJECT_ULYSSES_HEAD_ORDER;
    for (int pr = 0; pr < u; pr++) {
        const int slot = swap ? u - 1 - pr : pr;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < Hu; h++)
                memcpy(out + (((size_t)b * H + slot * Hu + h) * T) * D, recv + pr * piece + ((size_t)b * Hu + h) * Ts * D,
                       sizeof(float) * Ts * D);
    }
    if (Trep) { /* the replicated tokens: every rank's head group, allgathered */
        float *mine = rep, *all = rep + BHu * Trep * D;
        for (size_t bh = 0; bh < BHu; bh++)
            memcpy(mine + bh * Trep * D, O + (bh * Tg + (size_t)u * Ts) * D, sizeof(float) * Trep * D);
        st = c->ops->allgather(c, mine, BHu * Trep * D, all, err);
        if (st != RP_OK) goto done;
        for (int pr = 0; pr < u; pr++)
            for (int b = 0; b < B; b++)
                for (int h = 0; h < Hu; h++)
                    memcpy(out + (((size_t)b * H + pr * Hu + h) * T + Ts) * D,
                           all + (((size_t)pr * B + b) * Hu + h) * Trep * D, sizeof(float) * Trep * D);
    }
done:
#undef GPOS
    free(send);
    free(recv);
    free(G);
    free(rep);
    return st;
}

/* The scale the model hands this rank's attention of `layer`, fingerprinted for the WORLD
 * replica check: every rank of a layout attends with the one value the model's config gives
 * (1/sqrt(head dim)), so a rank that hands another (a rounding to bf16, a constant changed on
 * one rank) is named exactly at its first layer and step, in any precision; in bf16 such a
 * scale moves a layer by less than the attention's rounding envelope (audit 9: 2^-9 relative,
 * drift), and the own checks recompute with the scale they are given. Under PipeFusion the
 * stages attend in other layers, so their WORLD logs would not line up: not noted there. */
static void note_scale(const rp_ctx *ctx, int layer, float scale) {
    if (!ctx->par || ctx->par->pf) return;
    char name[48];
    snprintf(name, sizeof name, "attention scale (layer %d)", layer);
    rp_par_replica_note(ctx, RP_PAR_RG_WORLD, name, &scale, 1);
}

/* With a device (ctx->dev): no exchange and no K/V hook -> the device's attention on the
 * device buffers directly (numerics invariant: its canonical attention over the sequence's
 * segments); otherwise host-staged: q, k, v come down, the host algorithm above moves them
 * (collectives on host buffers, the hooks' caches on the host) and each attention it
 * computes runs on the device (attend, attend_canonical; ring: its block GEMMs, ring_gemm;
 * the invariant ring's partials on the host), then out goes up. */
rp_status rp_par_attention(const rp_ctx *ctx, int layer, float *out, const float *q, const float *k,
                           const float *v, const uint8_t *key_mask, int B, int H, int T, int Tlead, int Trep,
                           int D, float scale, rp_error *err) {
    rp_parallel *p = ctx->par;
    note_scale(ctx, layer, scale);
    if (!ctx->dev) return par_attention_host(ctx, layer, out, q, k, v, key_mask, B, H, T, Tlead, Trep, D, scale, err);
    const int exchange = p && p->sp.size > 1 && p->deg.patch <= 1;
    const int hooked = p && p->hooks.kv;
    const int skew = attn_scale_skewed(p);
    if (!exchange && !hooked) {
        if (skew) scale = (float)(1.0 / sqrt((double)D + 1.0));
        if (ctx->numerics == RP_NUMERICS_INVARIANT) { /* the serial sequence's segments, as plain() */
            const int seg[3] = {Tlead, T - Tlead - Trep, Trep};
            return rp_d_attention_canonical(ctx, out, q, k, v, key_mask, B, H, T, T, D, scale, seg, 3, 2, err);
        }
        return rp_d_attention(ctx, out, q, k, v, key_mask, B, H, T, T, D, scale, err);
    }
    RP_TRY(rp_d_check(ctx, err)); /* the forward's earlier ops, before their results are read */
    const size_t n = (size_t)B * H * T * D;
    float *h = malloc(sizeof(float) * 4 * n + (key_mask ? (size_t)B * T : 0)); /* q, k, v, out, mask */
    if (!h) return RP_FAIL(err, RP_ERR_NOMEM, "attention %d: out of host memory staging %d x %d x %d", layer, B, H, T);
    float *hq = h, *hk = hq + n, *hv = hk + n, *ho = hv + n;
    uint8_t *hm = key_mask ? (uint8_t *)(ho + n) : NULL;
    rp_d_download(ctx, hq, q, n);
    rp_d_download(ctx, hk, k, n);
    rp_d_download(ctx, hv, v, n);
    if (key_mask && ctx->dev->status == RP_OK) ctx->dev->ops->download(ctx->dev, hm, rp_d_map(ctx, (const float *)key_mask), (size_t)B * T);
    rp_status st = rp_d_check(ctx, err);
    if (st == RP_OK) {
        rp_ctx hc = *ctx;
        hc.dev = NULL;
        p->stage_dev = ctx->dev;
        st = par_attention_host(&hc, layer, ho, hq, hk, hv, hm, B, H, T, Tlead, Trep, D, scale, err);
        p->stage_dev = NULL;
        if (st == RP_OK) st = rp_d_check(ctx, err); /* a failed staged GEMM (ring_gemm) */
    }
    if (st == RP_OK) rp_d_upload(ctx, out, ho, n);
    free(h);
    return st;
}
