/* test_attention_canonical.c — the layout-invariant (canonical) attention of
 * attention.h: its block rule, its accuracy against double precision, and the
 * invariance the contract promises (bitwise, whatever the split of the rows, the
 * batch, the heads, or the order in which the key blocks arrive).
 *
 * Error bound (u = 2^-24, gamma_n = n u / (1 - n u)), per query row and output channel.
 * e_j = gamma_{D+1} |scale| sum_d |q_d k_jd| bounds key j's score error (D fmaf
 * roundings, then the product with scale); R is the range of the row's unmasked scores
 * (+ 2 max e). Key j's unnormalised weight exp(s_j - m_b) exp(m_b - m) carries the
 * relative error
 *   rho_j = e_j + u (|s_j - m| + 2 max e) + 2u    score, the subtraction (its argument
 *                                                  |s_j - m_b| <= |s_j - m|), exp
 *         + u R + (3 nb + 3) u                     the fold: a block's weights are
 * multiplied by up to nb factors rp_expf(m_old - m_new) (exp 2u, product u, argument
 * rounded by u |m_old - m_new|, whose sum telescopes to <= R). The numerator and the
 * denominator are sums whose terms pass at most L = Bk + nb + 4 further roundings (the
 * fmaf chain or lane tree inside a block, <= Bk; one add a fold) and the final division
 * adds u. So, as in test_attention_variants.c,
 *   |out - exact| <= sum_j p_j |v_j| (rho_j + rhobar + gamma_L + 2u)
 *                    + gamma_L sum_j p_j |v_j| (1 + rho_j + rhobar + gamma_L + 2u)
 * with rhobar = sum_j p_j rho_j; second-order terms are covered by a factor 1.01.
 * (rp_expf: <= 2 ulp, tests/unit/test_ops.c.) Masked keys have p_j = 0 exactly. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention/attention.h"
#include "engine/ctx.h"
#include "engine/fastmath.h"
#include "engine/ops.h"
#include "tests/common/test_rng.h"

static const double U32 = 0x1p-24;
static double gamma_n(double n) { return n * U32 / (1.0 - n * U32); }

static float *randf(size_t n, float a, uint64_t *s) {
    float *x = malloc(sizeof(float) * n + 4);
    for (size_t i = 0; i < n; i++) x[i] = a * rng_unif(s);
    return x;
}

/* ---- the block rule ------------------------------------------------------------------ */

START_TEST(block_rule) {
    const int n[] = {1, 3, 8, 12, 16, 24, 77, 256, 333, 512, 768, 4096, 4608, 1 << 20};
    const int bk[] = {1, 1, 1, 1, 2, 1, 1, 32, 1, 64, 32, 64, 64, 64};
    for (size_t i = 0; i < sizeof n / sizeof *n; i++)
        ck_assert_msg(rp_attn_canon_block(n[i]) == bk[i], "Bk(%d) = %d, expected %d", n[i],
                      rp_attn_canon_block(n[i]), bk[i]);
    /* the property the rule exists for: a ring of R <= 8 ranks never splits a block */
    for (int m = 1; m <= 20000; m++) {
        const int b = rp_attn_canon_block(m);
        ck_assert(b >= 1 && b <= 64 && m % b == 0);
        for (int R = 1; R <= 8; R++)
            if (m % R == 0) ck_assert_msg((m / R) % b == 0, "n %d, R %d: shard %d, Bk %d", m, R, m / R, b);
    }
}
END_TEST

/* ---- against double precision ----------------------------------------------------------- */

typedef struct acc_case {
    int B, H, Tq, D;
    int seg[3], nseg, nsplit; /* segments nsplit.. no layout splits: blocks of 64 */
    int masked;
    float qscale;
} acc_case;

static const acc_case ACC[] = {
    {2, 3, 40, 72, {256, 0, 0}, 1, 1, 0, 3.0f},   /* DiT-like: Bk 32 */
    {1, 2, 33, 64, {64, 200, 0}, 2, 2, 1, 3.0f},  /* FLUX-like [text | image], masked text */
    {2, 2, 17, 32, {96, 77, 0}, 2, 2, 0, 4.0f},   /* SD3-like [image | text]: Bk 4 and 1 */
    {2, 2, 17, 32, {96, 333, 0}, 2, 1, 1, 4.0f},  /* SD3 [image | replicated text]: 5 x 64 + 13 */
    {1, 1, 9, 16, {0, 13, 48}, 3, 3, 1, 2.0f},    /* an empty segment */
    {3, 1, 5, 8, {24, 0, 0}, 1, 1, 1, 1.0f},      /* batch 1 every key masked */
};

enum { NACC = sizeof ACC / sizeof *ACC };

/* Loops NACC .. 2 NACC - 1: precision bf16, against the exact attention of the bf16-rounded
 * q, k, v; the rounding of p_j to bf16 for the P V sums (not for l_b) adds 2^-9 sum_j p_j |v_j|. */
START_TEST(accuracy_vs_double) {
    const acc_case *c = &ACC[_i % NACC];
    const int bf16 = _i >= NACC;
    int Tk = 0, nb = 0, bkmax = 1;
    for (int s = 0; s < c->nseg; s++) {
        const int whole = s >= c->nsplit, b = whole ? rp_attn_canon_block_whole() : rp_attn_canon_block(c->seg[s]);
        Tk += c->seg[s];
        nb += rp_attn_canon_nblocks(c->seg[s], whole);
        if (c->seg[s] && b > bkmax) bkmax = b;
    }
    const int B = c->B, H = c->H, Tq = c->Tq, D = c->D;
    const float scale = 1.0f / sqrtf((float)D);
    uint64_t rs = 1234 + _i;
    float *q = randf((size_t)B * H * Tq * D, c->qscale, &rs), *k = randf((size_t)B * H * Tk * D, 1, &rs);
    float *v = randf((size_t)B * H * Tk * D, 1, &rs), *out = malloc(sizeof(float) * B * H * Tq * D);
    uint8_t *mask = NULL;
    if (c->masked) {
        mask = malloc((size_t)B * Tk);
        for (int i = 0; i < B * Tk; i++) mask[i] = (rng_next(&rs) % 4) != 0;
        if (B > 2) memset(mask + Tk, 0, Tk);
    }
    rp_ctx ctx = rp_ctx_default();
    if (bf16) ctx.precision = RP_PREC_BF16;
    rp_error err = {0};
    ck_assert_msg(rp_attention_canonical(&ctx, out, q, k, v, mask, B, H, Tq, Tk, D, scale, c->seg, c->nseg, c->nsplit, &err) ==
                  RP_OK, "%s", err.msg);
    if (bf16) { /* the reference sees the inputs the products saw */
        rp_bf16_round(q, q, (size_t)B * H * Tq * D);
        rp_bf16_round(k, k, (size_t)B * H * Tk * D);
        rp_bf16_round(v, v, (size_t)B * H * Tk * D);
    }
    double *sc = malloc(sizeof(double) * Tk), *es = malloc(sizeof(double) * Tk), *p = malloc(sizeof(double) * Tk);
    const double gL = gamma_n(bkmax + nb + 4);
    double worst = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const size_t bh = (size_t)b * H + h;
            const float *kb = k + bh * Tk * D, *vb = v + bh * Tk * D;
            const uint8_t *m = mask ? mask + (size_t)b * Tk : NULL;
            for (int i = 0; i < Tq; i++) {
                const float *qi = q + (bh * Tq + i) * D, *oi = out + (bh * Tq + i) * D;
                double mx = -INFINITY, mn = INFINITY, emax = 0, sum = 0, rbar = 0;
                for (int j = 0; j < Tk; j++) {
                    double d = 0, a = 0;
                    for (int e = 0; e < D; e++) {
                        d += (double)qi[e] * kb[(size_t)j * D + e];
                        a += fabs((double)qi[e] * kb[(size_t)j * D + e]);
                    }
                    sc[j] = d * scale;
                    es[j] = gamma_n(D + 1) * scale * a;
                    emax = fmax(emax, es[j]);
                    if (!m || m[j]) {
                        mx = fmax(mx, sc[j]);
                        mn = fmin(mn, sc[j]);
                    }
                }
                if (mx == -INFINITY) { /* every key masked: zeros */
                    for (int e = 0; e < D; e++) ck_assert_msg(oi[e] == 0.0f, "dead row %d gives %g", i, oi[e]);
                    continue;
                }
                const double Rg = (mx - mn) + 2 * emax, fold = U32 * Rg + (3.0 * nb + 3) * U32;
                for (int j = 0; j < Tk; j++) sum += p[j] = (!m || m[j]) ? exp(sc[j] - mx) : 0.0;
                for (int j = 0; j < Tk; j++) {
                    p[j] /= sum;
                    es[j] = es[j] + U32 * (fabs(sc[j] - mx) + 2 * emax) + 2 * U32 + fold; /* now rho_j */
                    rbar += p[j] * es[j];
                }
                for (int e = 0; e < D; e++) {
                    double ref = 0, A = 0, Bv = 0;
                    for (int j = 0; j < Tk; j++) {
                        const double vv = vb[(size_t)j * D + e];
                        ref += p[j] * vv;
                        A += p[j] * fabs(vv);
                        Bv += p[j] * fabs(vv) * es[j];
                    }
                    const double bound =
                        1.01 * (Bv + A * (rbar + gL + 2 * U32) + gL * (A + Bv + A * (rbar + gL + 2 * U32)) +
                                (bf16 ? 0x1p-9 * A : 0.0));
                    const double dev = fabs(oi[e] - ref);
                    ck_assert_msg(dev <= bound, "b %d h %d row %d ch %d: |out - exact| %g > bound %g", b, h, i, e,
                                  dev, bound);
                    if (bound > 0) worst = fmax(worst, dev / bound);
                }
            }
        }
    printf("  canonical case %d%s: worst error / bound %.3f\n", _i % NACC, bf16 ? " bf16" : "", worst);
    ck_assert(worst > 0); /* the comparison ran on rounded values, not on nothing */
    free(sc); free(es); free(p); free(q); free(k); free(v); free(out); free(mask);
}
END_TEST

/* ---- the contract, written out ------------------------------------------------------------ */

static float bf(float x) { return rp_bf16_to_f32(rp_f32_to_bf16(x)); }

/* One query row q (D) of the header's contract, scalar and literal: keys k, v (Tk, D) in
 * segments seg (nseg), mask (Tk) or NULL; bf16: the precision's roundings. */
static void contract_row(float *out, const float *q, const float *k, const float *v, const uint8_t *mask, int Tk,
                         int D, float scale, const int *seg, int nseg, int bf16) {
    float m = 0, l = 0, *O = calloc(D, sizeof(float)), *Ob = calloc(D, sizeof(float)), s[64];
    int first = 1;
    for (int g = 0, j0 = 0; g < nseg; j0 += seg[g], g++) {
        const int bk = rp_attn_canon_block(seg[g]);
        for (int b0 = j0; b0 < j0 + seg[g]; b0 += bk) {
            float mb = -INFINITY, lane[8] = {0};
            for (int j = 0; j < bk; j++) {
                float acc = 0;
                for (int d = 0; d < D; d++)
                    acc = bf16 ? fmaf(bf(q[d]), bf(k[(size_t)(b0 + j) * D + d]), acc)
                               : fmaf(q[d], k[(size_t)(b0 + j) * D + d], acc);
                s[j] = acc * scale;
                if (mask && !mask[b0 + j]) s[j] = -INFINITY;
                if (s[j] > mb) mb = s[j];
            }
            for (int j = 0; j < bk; j++) {
                s[j] = mb == -INFINITY ? 0.0f : rp_expf(s[j] - mb);
                lane[j % 8] += s[j];
            }
            const float lb = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
            for (int d = 0; d < D; d++) {
                float acc = 0;
                for (int j = 0; j < bk; j++)
                    acc = bf16 ? fmaf(bf(s[j]), bf(v[(size_t)(b0 + j) * D + d]), acc)
                               : fmaf(s[j], v[(size_t)(b0 + j) * D + d], acc);
                Ob[d] = acc;
            }
            if (first) {
                m = mb;
                l = lb;
                memcpy(O, Ob, sizeof(float) * D);
                first = 0;
                continue;
            }
            const float mn = mb > m ? mb : m;
            if (mn == -INFINITY) continue;
            const float a = rp_expf(m - mn), c = rp_expf(mb - mn);
            l = a * l + c * lb;
            for (int d = 0; d < D; d++) O[d] = a * O[d] + c * Ob[d];
            m = mn;
        }
    }
    for (int d = 0; d < D; d++) out[d] = l == 0.0f ? 0.0f : O[d] / l;
    free(O);
    free(Ob);
}

/* The implementation is the documented contract, bit for bit (fp32 and bf16; blocks of
 * 64, 16, 4, 2 and 1 keys, masked keys, a fully masked block). */
START_TEST(implementation_is_the_contract) {
    enum { Tq = 7, D = 40 };
    const int seg[5] = {512, 128, 32, 16, 13}, Tk = 701;
    uint64_t s = 4242;
    float *q = randf((size_t)Tq * D, 3, &s), *k = randf((size_t)Tk * D, 1, &s), *v = randf((size_t)Tk * D, 1, &s);
    float *out = malloc(sizeof(float) * Tq * D), row[D];
    uint8_t *mask = malloc(Tk);
    for (int j = 0; j < Tk; j++) mask[j] = (rng_next(&s) % 6) != 0;
    memset(mask + 640, 0, 4); /* a whole block of the 32-key segment (Bk 4) */
    for (int bf16 = 0; bf16 < 2; bf16++) {
        rp_ctx ctx = rp_ctx_default();
        ctx.precision = bf16 ? RP_PREC_BF16 : RP_PREC_FP32;
        rp_error err = {0};
        ck_assert(rp_attention_canonical(&ctx, out, q, k, v, mask, 1, 1, Tq, Tk, D, 0.15f, seg, 5, 5, &err) == RP_OK);
        for (int i = 0; i < Tq; i++) {
            contract_row(row, q + (size_t)i * D, k, v, mask, Tk, D, 0.15f, seg, 5, bf16);
            ck_assert_msg(!memcmp(row, out + (size_t)i * D, sizeof row), "%s row %d: not the contract's bits",
                          bf16 ? "bf16" : "fp32", i);
        }
    }
    free(q); free(k); free(v); free(out); free(mask);
}
END_TEST

/* ---- invariance: the same bits whatever the layout ---------------------------------------- */

enum { ID = 24 };

/* One (b, h) of a two-segment problem: n0 lead keys, n1 second keys. */
typedef struct inv {
    int Tq, n0, n1;
    float *q, *k, *v;   /* (Tq, ID), (n0 + n1, ID) x 2 */
    float *ref;         /* (Tq, ID): one rp_attention_canonical call */
} inv;

static void inv_init(inv *P, int Tq, int n0, int n1, uint64_t seed) {
    uint64_t s = seed;
    P->Tq = Tq; P->n0 = n0; P->n1 = n1;
    P->q = randf((size_t)Tq * ID, 3, &s);
    P->k = randf((size_t)(n0 + n1) * ID, 1, &s);
    P->v = randf((size_t)(n0 + n1) * ID, 1, &s);
    P->ref = malloc(sizeof(float) * Tq * ID);
    rp_ctx ctx = rp_ctx_default();
    rp_error err = {0};
    const int seg[2] = {n0, n1};
    ck_assert(rp_attention_canonical(&ctx, P->ref, P->q, P->k, P->v, NULL, 1, 1, Tq, n0 + n1, ID, 0.2f, seg, 2, 2, &err) ==
              RP_OK);
}

static void inv_free(inv *P) { free(P->q); free(P->k); free(P->v); free(P->ref); }

/* Rows [r0, r0 + nr) of P as a ring of R ranks computes them on ring rank `me`: shards
 * arrive in ring order me, me - 1, ... (mod R); each shard's lead piece and second piece
 * go to their canonical slots; the fold at the end. no_rescale: the injected fault. */
static void ring_rows(const inv *P, int R, int me, int r0, int nr, int no_rescale, float *out) {
    const int bk0 = rp_attn_canon_block(P->n0), bk1 = rp_attn_canon_block(P->n1);
    const int nb0 = P->n0 / bk0, nb = nb0 + P->n1 / bk1, l = P->n0 / R, t = P->n1 / R;
    float *pm = malloc(sizeof(float) * nr * nb), *pl = malloc(sizeof(float) * nr * nb);
    float *pO = malloc(sizeof(float) * nr * nb * ID), *kt = malloc(sizeof(float) * (P->n0 + P->n1) * ID + 4);
    for (int s = 0; s < R; s++) {
        const int src = ((me - s) % R + R) % R;
        const float *kl = P->k + (size_t)src * l * ID, *ks = P->k + (size_t)(P->n0 + src * t) * ID;
        const float *vl = P->v + (size_t)src * l * ID, *vs = P->v + (size_t)(P->n0 + src * t) * ID;
        ck_assert(l % bk0 == 0 && t % bk1 == 0);
        rp_attn_canon_pack(kt, kl, l, ID, 0);
        rp_attn_canon_partials(pm, pl, pO, nb, src * (l / bk0), P->q + (size_t)r0 * ID, kt, vl, NULL, nr, l, bk0, ID,
                               0.2f, 0);
        rp_attn_canon_pack(kt, ks, t, ID, 0);
        rp_attn_canon_partials(pm, pl, pO, nb, nb0 + src * (t / bk1), P->q + (size_t)r0 * ID, kt, vs, NULL, nr, t, bk1,
                               ID, 0.2f, 0);
    }
    rp_attn_canon_merge(out, pm, pl, pO, nr, nb, ID, no_rescale);
    free(pm); free(pl); free(pO); free(kt);
}

START_TEST(ring_orders_are_bitwise_the_single_call) {
    /* lead 64 and second 192 keys (Bk 8 each): shards of whole blocks for every R below */
    inv P;
    inv_init(&P, 21, 64, 192, 77);
    float *out = malloc(sizeof(float) * P.Tq * ID);
    const int Rs[] = {1, 2, 4, 8};
    for (int a = 0; a < 4; a++)
        for (int me = 0; me < Rs[a]; me++) {
            ring_rows(&P, Rs[a], me, 0, P.Tq, 0, out);
            ck_assert_msg(!memcmp(out, P.ref, sizeof(float) * P.Tq * ID), "R %d rank %d differs from the single call",
                          Rs[a], me);
        }
    /* any query-row subset gives the same rows */
    const int sub[][2] = {{0, 1}, {3, 4}, {5, 11}, {20, 1}, {7, 14}};
    for (int i = 0; i < 5; i++) {
        ring_rows(&P, 4, 2, sub[i][0], sub[i][1], 0, out);
        ck_assert_msg(!memcmp(out, P.ref + (size_t)sub[i][0] * ID, sizeof(float) * sub[i][1] * ID),
                      "rows %d + %d differ", sub[i][0], sub[i][1]);
    }
    /* the ring-no-rescale fold is a different computation (the maxima of the blocks differ) */
    ring_rows(&P, 2, 1, 0, P.Tq, 1, out);
    double d = 0;
    for (int i = 0; i < P.Tq * ID; i++) d = fmax(d, fabs(out[i] - P.ref[i]));
    ck_assert_msg(d > 1e-2, "ring-no-rescale changes the output by %g only", d);
    free(out);
    inv_free(&P);
}
END_TEST

/* The blocks' partials in any order of arrival: stored at their index, the fold is the same. */
START_TEST(block_arrival_order_does_not_matter) {
    inv P;
    inv_init(&P, 6, 32, 48, 91);
    const int bk0 = rp_attn_canon_block(32), bk1 = rp_attn_canon_block(48);
    const int nb0 = 32 / bk0, nb = nb0 + 48 / bk1;
    float *pm = malloc(sizeof(float) * P.Tq * nb), *pl = malloc(sizeof(float) * P.Tq * nb);
    float *pO = malloc(sizeof(float) * P.Tq * nb * ID), *kt = malloc(sizeof(float) * 64 * ID);
    float *out = malloc(sizeof(float) * P.Tq * ID);
    int order[64];
    for (int i = 0; i < nb; i++) order[i] = i;
    uint64_t s = 5;
    for (int i = nb - 1; i > 0; i--) { /* a random permutation of the blocks */
        const int j = (int)(rng_next(&s) % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < nb; i++) {
        const int blk = order[i], seg1 = blk >= nb0, bk = seg1 ? bk1 : bk0;
        const int key = seg1 ? 32 + (blk - nb0) * bk1 : blk * bk0;
        rp_attn_canon_pack(kt, P.k + (size_t)key * ID, bk, ID, 0);
        rp_attn_canon_partials(pm, pl, pO, nb, blk, P.q, kt, P.v + (size_t)key * ID, NULL, P.Tq, bk, bk, ID, 0.2f, 0);
    }
    rp_attn_canon_merge(out, pm, pl, pO, P.Tq, nb, ID, 0);
    ck_assert(!memcmp(out, P.ref, sizeof(float) * P.Tq * ID));
    free(pm); free(pl); free(pO); free(kt); free(out);
    inv_free(&P);
}
END_TEST

/* Batch and heads: a (b, h)'s output is the same computed alone, in a batch of 3 x 4, or
 * in any row range; rp_attention under numerics invariant is the one-segment call. */
START_TEST(batch_heads_and_dispatch) {
    enum { B = 3, H = 4, T = 48, D = 40 };
    uint64_t s = 17;
    const size_t n = (size_t)B * H * T * D;
    float *q = randf(n, 3, &s), *k = randf(n, 1, &s), *v = randf(n, 1, &s);
    float *all = malloc(sizeof(float) * n), *one = malloc(sizeof(float) * n), *disp = malloc(sizeof(float) * n);
    uint8_t mask[B * T];
    for (int i = 0; i < B * T; i++) mask[i] = (rng_next(&s) % 5) != 0;
    rp_ctx ctx = rp_ctx_default();
    rp_error err = {0};
    ck_assert(rp_attention_canonical(&ctx, all, q, k, v, mask, B, H, T, T, D, 0.15f, NULL, 0, 0, &err) == RP_OK);
    for (int b = 0; b < B; b++) /* each batch alone, heads split 1 + 3 */
        for (int h0 = 0; h0 < H;) {
            const int nh = h0 == 0 ? 1 : 3;
            const size_t o = ((size_t)b * H + h0) * T * D;
            ck_assert(rp_attention_canonical(&ctx, one + o, q + o, k + o, v + o, mask + b * T, 1, nh, T, T, D, 0.15f,
                                             NULL, 0, 0, &err) == RP_OK);
            h0 += nh;
        }
    ck_assert(!memcmp(all, one, sizeof(float) * n));
    /* query rows 13 .. 29 of (b 2, h 1) alone */
    const size_t o = ((size_t)2 * H + 1) * T * D;
    ck_assert(rp_attention_canonical(&ctx, one, q + o + 13 * D, k + o, v + o, mask + 2 * T, 1, 1, 17, T, D, 0.15f, NULL,
                                     0, 0, &err) == RP_OK);
    ck_assert(!memcmp(one, all + o + 13 * D, sizeof(float) * 17 * D));
    /* the dispatcher */
    ctx.numerics = RP_NUMERICS_INVARIANT;
    ck_assert(rp_attention(&ctx, disp, q, k, v, mask, B, H, T, T, D, 0.15f, &err) == RP_OK);
    ck_assert(!memcmp(all, disp, sizeof(float) * n));
    /* another variant under invariant: refused, naming it */
    ctx.attn.kind = RP_ATTN_FLASH;
    ck_assert(rp_attention(&ctx, disp, q, k, v, mask, B, H, T, T, D, 0.15f, &err) == RP_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "flash") && strstr(err.msg, "invariant"), "%s", err.msg);
    ctx.attn.kind = RP_ATTN_MATH;
    ctx.reduce_split = 1;
    ck_assert(rp_attention(&ctx, disp, q, k, v, mask, B, H, T, T, D, 0.15f, &err) == RP_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "reduce_split"), "%s", err.msg);
    ctx.reduce_split = 0;
    /* segments that do not sum to Tk */
    const int bad[2] = {20, 20};
    ck_assert(rp_attention_canonical(&ctx, disp, q, k, v, NULL, B, H, T, T, D, 0.15f, bad, 2, 2, &err) == RP_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "sum to 40"), "%s", err.msg);
    free(q); free(k); free(v); free(all); free(one); free(disp);
}
END_TEST

/* The (b, h) pairs are shared out over ctx->threads: every thread count, fewer pairs than
 * threads included, gives the one-thread call's bits, in fp32 and bf16, with a mask and
 * with split segments. The shape is large enough that the call does start threads. */
START_TEST(threads_do_not_change_bits) {
    enum { B = 2, H = 5, T = 160, D = 64 };
    uint64_t s = 29;
    const size_t n = (size_t)B * H * T * D;
    float *q = randf(n, 3, &s), *k = randf(n, 1, &s), *v = randf(n, 1, &s);
    float *one = malloc(sizeof(float) * n), *many = malloc(sizeof(float) * n);
    uint8_t mask[B * T];
    for (int i = 0; i < B * T; i++) mask[i] = (rng_next(&s) % 7) != 0;
    const int seg[3] = {96, 48, 16};
    rp_error err = {0};
    for (int prec = 0; prec < 2; prec++)
        for (int split = 0; split < 2; split++) {
            rp_ctx ctx = rp_ctx_default();
            ctx.precision = prec ? RP_PREC_BF16 : RP_PREC_FP32;
            ctx.threads = 1;
            const int *sg = split ? seg : NULL;
            ck_assert(rp_attention_canonical(&ctx, one, q, k, v, mask, B, H, T, T, D, 0.125f, sg, split ? 3 : 0,
                                             split ? 2 : 0, &err) == RP_OK);
            const int threads[] = {2, 3, 7, 16};
            for (int i = 0; i < 4; i++) {
                ctx.threads = threads[i];
                memset(many, 0xff, sizeof(float) * n);
                ck_assert(rp_attention_canonical(&ctx, many, q, k, v, mask, B, H, T, T, D, 0.125f, sg, split ? 3 : 0,
                                                 split ? 2 : 0, &err) == RP_OK);
                ck_assert_msg(!memcmp(one, many, sizeof(float) * n), "threads %d, bf16 %d, split %d", threads[i],
                              prec, split);
            }
        }
    free(q); free(k); free(v); free(one); free(many);
}
END_TEST

/* The kernels' vector paths (whole tiles of rows, blocks of 64 / 32 / 16 keys, column
 * chunks) and their scalar paths (a lone row) are the same fmaf chains: every row computed
 * alone equals it computed in a tile, for head dims with and without a partial chunk, and
 * in whichever pass of rows it falls. */
START_TEST(tiles_and_lone_rows_agree) {
    const int Ds[] = {8, 24, 72, 136};
    const int seg[3] = {512, 256, 128}, Tk = 896, Tq = 133; /* more rows than a pass (128) */
    for (int t = 0; t < 4; t++) {
        const int D = Ds[t];
        uint64_t s = 300 + t;
        float *q = randf((size_t)Tq * D, 3, &s), *k = randf((size_t)Tk * D, 1, &s), *v = randf((size_t)Tk * D, 1, &s);
        float *all = malloc(sizeof(float) * Tq * D), *one = malloc(sizeof(float) * Tq * D);
        uint8_t *mask = malloc(Tk);
        for (int j = 0; j < Tk; j++) mask[j] = (rng_next(&s) % 7) != 0;
        rp_ctx ctx = rp_ctx_default();
        rp_error err = {0};
        ck_assert(rp_attention_canonical(&ctx, all, q, k, v, mask, 1, 1, Tq, Tk, D, 0.1f, seg, 3, 3, &err) == RP_OK);
        for (int i = 0; i < Tq; i++) {
            ck_assert(rp_attention_canonical(&ctx, one, q + (size_t)i * D, k, v, mask, 1, 1, 1, Tk, D, 0.1f, seg, 3,
                                             3, &err) == RP_OK);
            ck_assert_msg(!memcmp(one, all + (size_t)i * D, sizeof(float) * D), "D %d: row %d alone differs", D, i);
        }
        ck_assert(rp_attention_canonical(&ctx, one, q + D, k, v, mask, 1, 1, Tq - 1, Tk, D, 0.1f, seg, 3, 3, &err) ==
                  RP_OK);
        ck_assert_msg(!memcmp(one, all + D, sizeof(float) * (Tq - 1) * D), "D %d: rows 1.. differ", D);
        free(q); free(k); free(v); free(all); free(one); free(mask);
    }
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("attention_canonical");
    TCase *tc = tcase_create("canonical");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, block_rule);
    tcase_add_loop_test(tc, accuracy_vs_double, 0, 2 * NACC);
    tcase_add_test(tc, implementation_is_the_contract);
    tcase_add_test(tc, ring_orders_are_bitwise_the_single_call);
    tcase_add_test(tc, block_arrival_order_does_not_matter);
    tcase_add_test(tc, batch_heads_and_dispatch);
    tcase_add_test(tc, tiles_and_lone_rows_agree);
    tcase_add_test(tc, threads_do_not_change_bits);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    const int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
