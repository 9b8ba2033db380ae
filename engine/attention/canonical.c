/* canonical.c — the layout-invariant attention (contract in attention.h): canonical
 * key blocks, one partial (m_b, l_b, O_b) per query row and block, folded in one fixed
 * order. One block kernel (tile_chunk) computes partials and one fold step (fold_block)
 * merges them: the serial call folds each chunk's blocks as they come (they come in
 * canonical order); the ring (engine/parallel/sp_attention.c), whose shards arrive in a
 * rank-dependent order, stores them at their canonical slots (rp_attn_canon_partials) and
 * folds after (rp_attn_canon_merge).
 *
 * Speed: the dot products run QT query rows against a chunk of up to 64 keys (any number
 * of whole blocks) packed transposed (kt: (D, width)), so the inner loop is a vector of
 * keys times one broadcast q[d]; P V runs over d. Each output value is still one fmaf
 * chain in a fixed order; the vector lanes are different values, never parts of one sum,
 * so the bits do not depend on the ISA the clone runs (RP_SIMD_CLONES; tests/isa). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../fastmath.h"
#include "../ops.h"
#include "../threads.h"
#include "internal.h"

/* QT query rows a tile; keys in chunks of KC (a multiple of every Bk: the dots of a chunk
 * are computed together, then cut into its blocks). */
enum { QT = 4, BK_MAX = 64, KC = 64 };

int rp_attn_canon_block(int n) {
    if (n <= 0) return 1;
    const int p2 = n & -n; /* 2^v2(n) */
    const int b = p2 / 8;
    return b < 1 ? 1 : (b > BK_MAX ? BK_MAX : b);
}

int rp_attn_canon_block_whole(void) { return BK_MAX; }

int rp_attn_canon_nblocks(int n, int whole) {
    if (n <= 0) return 0;
    return whole ? (n + BK_MAX - 1) / BK_MAX : n / rp_attn_canon_block(n);
}

static inline float bf16_round(float x) { return rp_bf16_to_f32(rp_f32_to_bf16(x)); }

void rp_attn_canon_pack(float *kt, const float *k, int nk, int D, int bf16) {
    for (int j0 = 0; j0 < nk; j0 += KC) {
        const int w = nk - j0 < KC ? nk - j0 : KC;
        float *t = kt + (size_t)j0 * D;       /* (D, w) */
        const float *kb = k + (size_t)j0 * D; /* (w, D) */
        for (int j = 0; j < w; j++)
            for (int d = 0; d < D; d++) t[(size_t)d * w + j] = kb[(size_t)j * D + d];
    }
    if (bf16) rp_bf16_round(kt, kt, (size_t)nk * D);
}

/* Vectors of 16 floats (GCC vector extension: one zmm on AVX-512, two ymm on AVX2, four
 * xmm on the baseline). Lanes are separate values; vfma is fmaf lane by lane (one vfmadd
 * where the ISA has it, libm's correctly rounded fmaf where not: the same bits). */
#pragma GCC diagnostic ignored "-Wpsabi" /* 64-byte vectors only pass between inlined helpers */
typedef float vf __attribute__((vector_size(64)));
typedef float vfu __attribute__((vector_size(64), aligned(4))); /* an unaligned load / store */
enum { VL = 16 };

static inline __attribute__((always_inline)) vf vfma(vf a, vf b, vf c) {
    vf r;
    for (int i = 0; i < VL; i++) r[i] = fmaf(a[i], b[i], c[i]);
    return r;
}

static inline __attribute__((always_inline)) vf vbcast(float x) {
    vf r;
    for (int i = 0; i < VL; i++) r[i] = x;
    return r;
}

/* S[r][0 .. NV VL) = dot(q_r, k_j) for QT rows q (QT, D), kt (D, NV VL): each dot one fmaf
 * chain over d, the QT x NV accumulators in registers. */
static inline __attribute__((always_inline)) void dots_vec(float S[QT][KC], const float *q, const float *kt,
                                                           const int NV, int D) {
    vf a[QT][KC / VL];
#pragma GCC unroll 4
    for (int r = 0; r < QT; r++)
#pragma GCC unroll 4
        for (int c = 0; c < NV; c++) a[r][c] = vbcast(0.0f);
    for (int d = 0; d < D; d++) {
        vf kv[KC / VL];
#pragma GCC unroll 4
        for (int c = 0; c < NV; c++) kv[c] = *(const vfu *)(kt + ((size_t)d * NV + c) * VL);
#pragma GCC unroll 4
        for (int r = 0; r < QT; r++) {
            const vf qb = vbcast(q[(size_t)r * D + d]);
#pragma GCC unroll 4
            for (int c = 0; c < NV; c++) a[r][c] = vfma(qb, kv[c], a[r][c]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < QT; r++)
#pragma GCC unroll 4
        for (int c = 0; c < NV; c++) *(vfu *)&S[r][c * VL] = a[r][c];
}

/* S[r][0 .. bk) = dot(q_r, k_j) for nr <= QT rows, any bk: the same fmaf chains, scalar.
 * Inlined into each clone of tile_chunk, so fmaf is the clone's FMA instruction rather than
 * a libm call (same bits: fmaf is correctly rounded either way). */
static inline __attribute__((always_inline)) void dots_any(float S[QT][KC], const float *q, int nr, const float *kt, int bk, int D) {
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < bk; j++) S[r][j] = 0.0f;
    for (int d = 0; d < D; d++) {
        const float *kd = kt + (size_t)d * bk;
        for (int r = 0; r < nr; r++) {
            const float qr = q[(size_t)r * D + d];
            for (int j = 0; j < bk; j++) S[r][j] = fmaf(qr, kd[j], S[r][j]);
        }
    }
}

/* O row r (at O + r ldo) = sum_j P[r][j] v_j, one fmaf chain over j = 0 .. bk-1 a value,
 * for QT rows: 4 VL-wide column chunks x QT rows in registers, then single chunks (the
 * last one ending at D, overlapping its predecessor), D < VL scalar (the same chains). */
static inline __attribute__((always_inline)) void pv_vec(float *O, size_t ldo, const float *P, const float *v,
                                                         int bk, int D) {
    int d0 = 0;
    for (; d0 + 4 * VL <= D; d0 += 4 * VL) {
        vf a[QT][4];
#pragma GCC unroll 4
        for (int r = 0; r < QT; r++)
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) a[r][c] = vbcast(0.0f);
        for (int j = 0; j < bk; j++) {
            const float *vj = v + (size_t)j * D + d0;
            vf vv[4];
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) vv[c] = *(const vfu *)(vj + c * VL);
#pragma GCC unroll 4
            for (int r = 0; r < QT; r++) {
                const vf pb = vbcast(P[r * KC + j]);
#pragma GCC unroll 4
                for (int c = 0; c < 4; c++) a[r][c] = vfma(pb, vv[c], a[r][c]);
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < QT; r++)
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) *(vfu *)(O + r * ldo + d0 + c * VL) = a[r][c];
    }
    for (; d0 < D && D >= VL; d0 += VL) {
        if (d0 + VL > D) d0 = D - VL; /* the last chunk overlaps the previous: the same chains again */
        vf a[QT];
#pragma GCC unroll 4
        for (int r = 0; r < QT; r++) a[r] = vbcast(0.0f);
        for (int j = 0; j < bk; j++) {
            const vf vv = *(const vfu *)(v + (size_t)j * D + d0);
#pragma GCC unroll 4
            for (int r = 0; r < QT; r++) a[r] = vfma(vbcast(P[r * KC + j]), vv, a[r]);
        }
#pragma GCC unroll 4
        for (int r = 0; r < QT; r++) *(vfu *)(O + r * ldo + d0) = a[r];
    }
    for (int r = 0; r < QT; r++)
        for (int d = d0; d < D; d++) {
            float o = 0.0f;
            for (int j = 0; j < bk; j++) o = fmaf(P[r * KC + j], v[(size_t)j * D + d], o);
            O[r * ldo + d] = o;
        }
}

/* The same for nr <= QT rows, scalar (inlined like dots_any). */
static inline __attribute__((always_inline)) void pv_any(float *O, size_t ldo, const float *P, int nr, const float *v, int bk, int D) {
    for (int r = 0; r < nr; r++) {
        float *o = O + r * ldo;
        for (int d = 0; d < D; d++) o[d] = 0.0f;
        for (int j = 0; j < bk; j++) {
            const float p = P[r * KC + j];
            const float *vj = v + (size_t)j * D;
            for (int d = 0; d < D; d++) o[d] = fmaf(p, vj[d], o[d]);
        }
    }
}

/* The partials of nr <= QT rows q (nr, D) and one chunk of w keys (kt (D, w), v (w, D),
 * mask (w) or NULL), w a multiple of bk: the chunk's block i (keys i bk ..) of row r goes
 * to pm[r ld + i], pl[r ld + i], pO + (r ld + i) D. */
RP_SIMD_CLONES
static void tile_chunk(float *pm, float *pl, float *pO, size_t ld, const float *q, int nr, const float *kt,
                       const float *v, const uint8_t *mask, int w, int bk, int D, float scale, int bf16) {
    float S[QT][KC]; /* dots, scores, then p */
    if (nr == QT && w == 64) dots_vec(S, q, kt, 4, D);
    else if (nr == QT && w == 32) dots_vec(S, q, kt, 2, D);
    else if (nr == QT && w == 16) dots_vec(S, q, kt, 1, D);
    else dots_any(S, q, nr, kt, w, D);
    for (int r = 0; r < nr; r++) {
        float *s = S[r];
        for (int j = 0; j < w; j++) s[j] = s[j] * scale;
        if (mask)
            for (int j = 0; j < w; j++) s[j] = mask[j] ? s[j] : -INFINITY;
        if (bk == 1) /* what rp_attn_rowmax and rp_attn_exp_sum give for one key (NaN skipped by the max,
                      * p = exp(0) = 1, the lane tree adds zeros), across the chunk's blocks at once */
            for (int j = 0; j < w; j++) {
                const float m = s[j] > -INFINITY ? s[j] : -INFINITY;
                const float pj = m == -INFINITY ? 0.0f : rp_expf(s[j] - m);
                pm[(size_t)r * ld + j] = m;
                pl[(size_t)r * ld + j] = pj;
                s[j] = pj;
            }
        else
            for (int j0 = 0, i = 0; j0 < w; j0 += bk, i++) { /* each block: its max, p_j in place, l_b */
                const float m = rp_attn_rowmax(s + j0, bk);
                pl[(size_t)r * ld + i] = rp_attn_exp_sum(s + j0, bk, m); /* zeros when m = -Inf */
                pm[(size_t)r * ld + i] = m;
            }
        if (bf16) /* the P V product's input, after l_b took the fp32 p_j */
            for (int j = 0; j < w; j++) s[j] = bf16_round(s[j]);
    }
    for (int j0 = 0, i = 0; j0 < w; j0 += bk, i++) {
        float *o = pO + (size_t)i * D;
        if (nr == QT) pv_vec(o, ld * D, &S[0][j0], v + (size_t)j0 * D, bk, D);
        else pv_any(o, ld * D, &S[0][j0], nr, v + (size_t)j0 * D, bk, D);
    }
}

void rp_attn_canon_partials(float *pm, float *pl, float *pO, int nb, int i0, const float *q, const float *kt,
                            const float *v, const uint8_t *mask, int nq, int nk, int bk, int D, float scale,
                            int bf16) {
    /* chunk outer: its keys and values stay in cache while every row tile reads them */
    for (int j0 = 0; j0 < nk; j0 += KC) {
        const int w = nk - j0 < KC ? nk - j0 : KC, i = i0 + j0 / bk;
        const int b = w < bk ? w : bk; /* a whole segment's shorter last block */
        for (int r0 = 0; r0 < nq; r0 += QT) {
            const int nr = nq - r0 < QT ? nq - r0 : QT;
            const size_t slot = (size_t)r0 * nb + i;
            tile_chunk(pm + slot, pl + slot, pO + slot * D, (size_t)nb, q + (size_t)r0 * D, nr,
                       kt + (size_t)j0 * D, v + (size_t)j0 * D, mask ? mask + j0 : NULL, w, b, D, scale, bf16);
        }
    }
}

/* The fold of one block into up to NL <= MR rows at once: state m, l (NL lanes; lanes past
 * nr hold an empty row: -Inf, 0) and O rows (O + r ldo), the block's mb, lb (MR lanes) and
 * Ob rows (Ob + r ldb). The per-row scalars (max, the two factors, l) run across rows in
 * vector lanes, O row by row. Per row this is the contract's step, m' = max(m, m_b);
 * a = rp_expf(m - m'), c = rp_expf(m_b - m'); l = a l + c l_b; O = a O + c O_b; with
 * (a, c) = (1, 0) when m' = -Inf (both empty: l = 0 and O = +0 stay exactly what they
 * are) and (1, 1) for the ring-no-rescale fault (plain sums): products by 1 and 0 are
 * exact, so these are the same bits as skipping. The one merge step of this file. */
enum { MR = 16 };

static inline __attribute__((always_inline)) void fold_block(float *m, float *l, float *O, size_t ldo,
                                                             const float *mb, const float *lb, const float *Ob,
                                                             size_t ldb, int nr, int D, int no_rescale,
                                                             const int NL) {
    float mn[MR], xa[MR], xc[MR], a[MR], c[MR];
    for (int r = 0; r < NL; r++) {
        mn[r] = mb[r] > m[r] ? mb[r] : m[r];
        xa[r] = mn[r] == -INFINITY ? 0.0f : m[r] - mn[r];
        xc[r] = mn[r] == -INFINITY ? 0.0f : mb[r] - mn[r];
    }
    for (int r = 0; r < NL; r++) a[r] = rp_expf(xa[r]); /* separate loops: each vectorises */
    for (int r = 0; r < NL; r++) c[r] = rp_expf(xc[r]);
    for (int r = 0; r < NL; r++) {
        const int empty = mn[r] == -INFINITY;
        a[r] = no_rescale || empty ? 1.0f : a[r];
        c[r] = no_rescale ? 1.0f : (empty ? 0.0f : c[r]);
        l[r] = a[r] * l[r] + c[r] * lb[r];
        m[r] = mn[r];
    }
    for (int r = 0; r < nr; r++) {
        float *o = O + r * ldo;
        const float *ob = Ob + r * ldb, ar = a[r], cr = c[r];
        for (int d = 0; d < D; d++) o[d] = ar * o[d] + cr * ob[d];
    }
}

/* out rows (nr, D) = O rows (O + r ldo) / l[r]; l == 0 (every key masked): zeros. out may be O. */
static inline __attribute__((always_inline)) void finish_rows(float *out, const float *O, size_t ldo,
                                                              const float *l, int nr, int D) {
    for (int r = 0; r < nr; r++) {
        float *o = out + (size_t)r * D;
        const float *src = O + r * ldo;
        if (l[r] == 0.0f) memset(o, 0, sizeof(float) * D);
        else
            for (int d = 0; d < D; d++) o[d] = src[d] / l[r];
    }
}

/* Lanes r < nr of column i of the (nr, nb) slot arrays pm, pl into mb, lb; the rest empty. */
static inline __attribute__((always_inline)) void gather_col(float *mb, float *lb, const float *pm, const float *pl,
                                                             int nr, int nb, int i) {
    for (int r = 0; r < MR; r++) {
        mb[r] = r < nr ? pm[(size_t)r * nb + i] : -INFINITY;
        lb[r] = r < nr ? pl[(size_t)r * nb + i] : 0.0f;
    }
}

/* rp_attn_canon_merge for nr <= MR rows. */
RP_SIMD_CLONES
static void merge_rows(float *out, const float *pm, const float *pl, const float *pO, int nr, int nb, int D,
                       int no_rescale) {
    float m[MR], l[MR], mb[MR], lb[MR];
    gather_col(m, l, pm, pl, nr, nb, 0); /* the first block initialises; the fold runs in out */
    for (int r = 0; r < nr; r++) memcpy(out + (size_t)r * D, pO + (size_t)r * nb * D, sizeof(float) * D);
    for (int i = 1; i < nb; i++) {
        gather_col(mb, lb, pm, pl, nr, nb, i);
        fold_block(m, l, out, (size_t)D, mb, lb, pO + (size_t)i * D, (size_t)nb * D, nr, D, no_rescale, MR);
    }
    finish_rows(out, out, (size_t)D, l, nr, D);
}

void rp_attn_canon_merge(float *out, const float *pm, const float *pl, const float *pO, int nq, int nb, int D,
                         int no_rescale) {
    if (nb < 1) { /* no keys */
        memset(out, 0, sizeof(float) * nq * (size_t)D);
        return;
    }
    for (int r0 = 0; r0 < nq; r0 += MR)
        merge_rows(out + (size_t)r0 * D, pm + (size_t)r0 * nb, pl + (size_t)r0 * nb, pO + (size_t)r0 * nb * D,
                   nq - r0 < MR ? nq - r0 : MR, nb, D, no_rescale);
}

/* The serial call's fold as the blocks come, in canonical order: the nbc block partials of
 * nr <= QT rows (slots (nr, nbc): tm, tl, tO) into those rows' running state sm, sl (nr)
 * and sO (nr, D); first: the first block of the rows initialises the state. */
RP_SIMD_CLONES
static void fold_chunk(float *sm, float *sl, float *sO, int nr, const float *tm, const float *tl, const float *tO,
                       int nbc, int D, int first) {
    float m[MR], l[MR], mb[MR], lb[MR];
    for (int r = 0; r < MR; r++) {
        m[r] = r < nr ? sm[r] : -INFINITY;
        l[r] = r < nr ? sl[r] : 0.0f;
    }
    for (int i = 0; i < nbc; i++) {
        gather_col(mb, lb, tm, tl, nr, nbc, i);
        if (first && i == 0) {
            for (int r = 0; r < nr; r++) {
                m[r] = mb[r];
                l[r] = lb[r];
                memcpy(sO + (size_t)r * D, tO + (size_t)r * nbc * D, sizeof(float) * D);
            }
            continue;
        }
        fold_block(m, l, sO, (size_t)D, mb, lb, tO + (size_t)i * D, (size_t)nbc * D, nr, D, 0, QT);
    }
    for (int r = 0; r < nr; r++) {
        sm[r] = m[r];
        sl[r] = l[r];
    }
}

/* out (nr, D) = sO / sl: the serial call's finish. */
RP_SIMD_CLONES
static void finish_state(float *out, const float *sO, const float *sl, int nr, int D) {
    finish_rows(out, sO, (size_t)D, sl, nr, D);
}

rp_status rp_attn_canon_check(const rp_ctx *ctx, rp_error *err) {
    if (!ctx) return RP_FAIL(err, RP_ERR_INVALID, "canonical attention: ctx is NULL");
    if (ctx->attn.kind != RP_ATTN_MATH)
        return RP_FAIL(err, RP_ERR_INVALID, "numerics invariant has its own attention order; attention %s would be "
                       "ignored (use math)", rp_attn_kind_name(ctx->attn.kind));
    if (ctx->reduce_split)
        return RP_FAIL(err, RP_ERR_INVALID, "numerics invariant attention has its own summation order; "
                       "reduce_split would be ignored");
    return RP_OK;
}

int rp_attn_canon_pass_rows(int nb, int D) {
    /* up to 128 rows (a block's keys and values are read once per pass, so more rows a pass
     * read them less often), slots within 2^20 floats; a multiple of the row tile */
    const long long per_row = (long long)(nb > 0 ? nb : 1) * (D + 2);
    long long r = (1LL << 20) / per_row;
    r = r > 128 ? 128 : r;
    r -= r % QT;
    return r < QT ? QT : (int)r;
}

int rp_attn_canon_threads(const rp_ctx *ctx, int pairs, double work) {
    if (work < (double)(1 << 21)) return 1; /* a thread's start would cost more than its share */
    const int nt = ctx->threads > 1 ? ctx->threads : 1;
    return nt < pairs ? nt : pairs;
}

/* rp_attention_canonical's call, shared by its threads: each part takes the (b, h) pairs
 * [bh0, bh1) with its own scratch. Which thread computes a pair changes nothing in its
 * bits: each pair is the same code over the same inputs. */
typedef struct canon_job {
    const uint8_t *key_mask;
    const float *q, *k, *v;
    float *out;
    int H, Tq, Tk, D, nseg, nsplit, bf16;
    const int *seg;
    float scale;
} canon_job;

enum { PASS = 128 };

/* rp_threads_part_fn: 1 when the part could not get its scratch. */
static int canon_part(void *user, int part, int bh0, int bh1) {
    (void)part;
    const canon_job *J = user;
    const int Tq = J->Tq, Tk = J->Tk, D = J->D, H = J->H, nseg = J->nseg, bf16 = J->bf16;
    const int *seg = J->seg;
    int nomem = 0;
    float *kt = malloc(sizeof(float) * ((size_t)Tk * D + 1));          /* (Tk, D) packed */
    float *sm = malloc(sizeof(float) * PASS), *sl = malloc(sizeof(float) * PASS); /* (PASS) */
    float *sO = malloc(sizeof(float) * (size_t)PASS * D);              /* (PASS, D) */
    float *tm = malloc(sizeof(float) * QT * KC), *tl = malloc(sizeof(float) * QT * KC); /* (QT, KC) */
    float *tO = malloc(sizeof(float) * (size_t)QT * KC * D);           /* (QT, KC, D) */
    float *qr = bf16 ? malloc(sizeof(float) * ((size_t)PASS * D)) : NULL;  /* (PASS, D) bf16 values */
    float *vr = bf16 ? malloc(sizeof(float) * ((size_t)Tk * D + 1)) : NULL; /* (Tk, D) bf16 values */
    if (!kt || !sm || !sl || !sO || !tm || !tl || !tO || (bf16 && (!qr || !vr))) {
        nomem = 1;
        goto done;
    }
    for (int bh = bh0; bh < bh1; bh++) {
        const int b = bh / H;
        const uint8_t *mb = J->key_mask ? J->key_mask + (size_t)b * Tk : NULL; /* (Tk) */
        const float *qb = J->q + (size_t)bh * Tq * D, *kb = J->k + (size_t)bh * Tk * D,
                    *vb = J->v + (size_t)bh * Tk * D;
        for (int s = 0, j0 = 0; s < nseg; j0 += seg[s], s++)
            rp_attn_canon_pack(kt + (size_t)j0 * D, kb + (size_t)j0 * D, seg[s], D, bf16);
        if (bf16) { rp_bf16_round(vr, vb, (size_t)Tk * D); vb = vr; }
        for (int r0 = 0; r0 < Tq; r0 += PASS) {
            const int nr = Tq - r0 < PASS ? Tq - r0 : PASS;
            const float *qp = qb + (size_t)r0 * D;
            if (bf16) { rp_bf16_round(qr, qp, (size_t)nr * D); qp = qr; }
            for (int r = 0; r < nr; r++) { /* no block yet: an empty row (Tk 0 stays so: zeros) */
                sm[r] = -INFINITY;
                sl[r] = 0.0f;
            }
            memset(sO, 0, sizeof(float) * nr * D);
            int first = 1;
            for (int s = 0, j0 = 0; s < nseg; j0 += seg[s], s++) {
                const int whole = s >= J->nsplit, bk = whole ? BK_MAX : rp_attn_canon_block(seg[s]);
                for (int c0 = 0; c0 < seg[s]; c0 += KC, first = 0) { /* a run's chunks start at c0 */
                    const int w = seg[s] - c0 < KC ? seg[s] - c0 : KC, j = j0 + c0;
                    const int bw = w < bk ? w : bk; /* a whole segment's shorter last block */
                    for (int t0 = 0; t0 < nr; t0 += QT) {
                        const int nt = nr - t0 < QT ? nr - t0 : QT;
                        tile_chunk(tm, tl, tO, (size_t)(w / bw), qp + (size_t)t0 * D, nt, kt + (size_t)j * D,
                                   vb + (size_t)j * D, mb ? mb + j : NULL, w, bw, D, J->scale, bf16);
                        fold_chunk(sm + t0, sl + t0, sO + (size_t)t0 * D, nt, tm, tl, tO, w / bw, D, first);
                    }
                }
            }
            finish_state(J->out + ((size_t)bh * Tq + r0) * D, sO, sl, nr, D);
        }
    }
done:
    free(kt); free(sm); free(sl); free(sO); free(tm); free(tl); free(tO); free(qr); free(vr);
    return nomem;
}

rp_status rp_attention_canonical(const rp_ctx *ctx, float *out, const float *q, const float *k, const float *v,
                                 const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale,
                                 const int *seg, int nseg, int nsplit, rp_error *err) {
    RP_TRY(rp_attn_check("canonical", ctx, out, q, k, v, B, H, Tq, Tk, D, err));
    RP_TRY(rp_attn_canon_check(ctx, err));
    int one = Tk;
    if (!seg) {
        seg = &one;
        nseg = nsplit = 1;
    }
    if (nseg < 1) return RP_FAIL(err, RP_ERR_INVALID, "canonical attention: %d key segments (need >= 1)", nseg);
    long long sum = 0;
    int nb = 0;
    for (int s = 0; s < nseg; s++) {
        if (seg[s] < 0)
            return RP_FAIL(err, RP_ERR_INVALID, "canonical attention: key segment %d has length %d", s, seg[s]);
        sum += seg[s];
        nb += rp_attn_canon_nblocks(seg[s], s >= nsplit);
    }
    if (sum != Tk)
        return RP_FAIL(err, RP_ERR_INVALID, "canonical attention: key segments sum to %lld, not Tk = %d", sum, Tk);
    if (Tq == 0) return RP_OK;
    /* Per (b, h), PASS rows a pass with their running state (m, l, O); for each chunk of
     * keys in canonical order (segment by segment), every QT-row tile's partials of the
     * chunk's blocks, folded at once into the tile's state. The blocks fold in canonical
     * order, so this is rp_attn_canon_merge's fold without holding every block's partial.
     * The (b, h) pairs are shared out over ctx->threads (as the default path's GEMMs use
     * that many), in contiguous ranges (rp_attn_canon_threads). */
    const int nbh = B * H;
    canon_job J = {.key_mask = key_mask, .q = q, .k = k, .v = v, .out = out, .H = H, .Tq = Tq, .Tk = Tk, .D = D,
                   .nseg = nseg, .nsplit = nsplit, .bf16 = ctx->precision == RP_PREC_BF16, .seg = seg, .scale = scale};
    if (rp_threads_for(rp_attn_canon_threads(ctx, nbh, (double)nbh * Tq * (double)Tk * D), nbh, canon_part, &J))
        return RP_FAIL(err, RP_ERR_NOMEM, "canonical attention: out of memory (Tk %d, D %d, %d blocks)", Tk, D, nb);
    return RP_OK;
}
