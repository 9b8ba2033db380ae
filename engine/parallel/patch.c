/* patch.c — displaced patch parallelism (DistriFusion; Li et al., "DistriFusion:
 * Distributed Parallel Inference for High-Resolution Diffusion Models") for the
 * transformers, through the K/V hook of parallel.h.
 *
 * The patch group is the sequence slot of the layout (rp_parallel.sp): rank r of n owns
 * the image tokens [r T/n, (r + 1) T/n) — a horizontal band of the image, since tokens
 * are row-major — through rp_par_shard, exactly as a sequence shard; the text tokens are
 * whole on every rank (rp_par_shard_text; SD3's text stream is whole anyway). Every block
 * runs on every rank; the outputs are allgathered before unpatchify
 * (rp_par_gather_tokens), so every rank holds the whole output.
 *
 * Each attention (the K/V hook, on k, v (B, H, Tk, D) = [text | this patch | text]):
 *   1. the patch's fresh image K/V is allgathered over the group:
 *      (n, 2, B, H, T/n, D), rank q's [K | V];
 *   2. warmup (eval < warmup_steps): the keys are [text | every patch's fresh K/V |
 *      text] in the single rank's order: the same attention as one rank's (exact up to
 *      the GEMM row counts);
 *      later: [text | this patch fresh, every other patch from the PREVIOUS step's
 *      exchange | text] (stale by one step; DistriFusion overlaps this exchange with the
 *      next step's compute, here it is synchronous but used one step later). With no
 *      previous exchange (warmup 0, first step) the other patches are left out;
 *   3. this step's exchange is kept for the next step.
 * The stale K/V is per (forward slot within the evaluation, attention layer) and reset by
 * rp_par_generate_begin. The text tokens attend to the same mixed keys, so after warmup
 * the ranks' copies of the text stream drift apart (each is used by its rank only). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel.h"

/* One attention's previous exchange. */
typedef struct pp_kv {
    int B, H, T, D;        /* T: the whole image's tokens */
    float *k, *v;          /* (B, H, T, D) each */
    int valid;             /* holds a step of this generation */
    /* the staleness contract (stale_check.c): what the exchange held when it was kept */
    uint64_t *print;       /* (n) fingerprint of each rank's [K | V] as it arrived */
    int n, eval, gen, who; /* ranks; the evaluation, generation and items it was made for */
    float *text;           /* patch-text-stale only: (2, B, H, Tl + Tr, D) the last forward's text rows */
    size_t text_n;         /* floats in text (0: none kept) */
} pp_kv;

typedef struct pp_slot {
    int n;
    pp_kv *layers;         /* (n) by attention index */
} pp_slot;

struct rp_par_pp {
    int warmup;
    int n_slots;
    pp_slot *slots;        /* (n_slots) by forward slot */
    float *xch;            /* (1 + n, 2, B, H, T/n, D): this rank's [K | V], then the allgather */
    size_t xch_cap;        /* floats */
    float *kv_out;         /* (2, B, H, Tk, D) the keys, then the values handed to attention */
    size_t kv_cap;         /* floats */
    float *chk;            /* (2, B, H, T/n, D) the contract check's scratch */
    size_t chk_cap;        /* floats */
    uint64_t *now;         /* (now_cap) fingerprints of this step's exchange, rank by rank */
    int now_cap;
};

static void kv_free(pp_kv *e) {
    free(e->k);
    free(e->v);
    free(e->print);
    free(e->text);
    memset(e, 0, sizeof *e);
}

/* The stale K/V of (slot, layer) shaped (B, H, T, D) from n ranks, grown or reshaped (then
 * invalid). */
static rp_status stale_at(rp_par_pp *pp, int slot, int layer, int B, int H, int T, int D, int n, pp_kv **out,
                          rp_error *err) {
    assert(slot >= 0 && layer >= 0);
    if (slot >= pp->n_slots) {
        pp_slot *s = realloc(pp->slots, sizeof *s * (size_t)(slot + 1));
        if (!s) return RP_FAIL(err, RP_ERR_NOMEM, "patch parallel: out of memory for the stale K/V slots");
        memset(s + pp->n_slots, 0, sizeof *s * (size_t)(slot + 1 - pp->n_slots));
        pp->slots = s;
        pp->n_slots = slot + 1;
    }
    pp_slot *s = &pp->slots[slot];
    if (layer >= s->n) {
        pp_kv *l = realloc(s->layers, sizeof *l * (size_t)(layer + 1));
        if (!l) return RP_FAIL(err, RP_ERR_NOMEM, "patch parallel: out of memory for the stale K/V layers");
        memset(l + s->n, 0, sizeof *l * (size_t)(layer + 1 - s->n));
        s->layers = l;
        s->n = layer + 1;
    }
    pp_kv *e = &s->layers[layer];
    if (!e->k || e->B != B || e->H != H || e->T != T || e->D != D || e->n != n) {
        kv_free(e);
        const size_t len = (size_t)B * H * T * D;
        e->k = malloc(sizeof(float) * len);
        e->v = malloc(sizeof(float) * len);
        e->print = calloc((size_t)n, sizeof *e->print);
        if (!e->k || !e->v || !e->print) {
            kv_free(e);
            return RP_FAIL(err, RP_ERR_NOMEM, "patch parallel: out of memory for the stale K/V of attention %d", layer);
        }
        e->B = B; e->H = H; e->T = T; e->D = D; e->n = n;
    }
    *out = e;
    return RP_OK;
}

/* Grows *buf (capacity *cap floats) to n floats; contents are not kept. */
static rp_status grow(float **buf, size_t *cap, size_t n, const char *what, rp_error *err) {
    if (n <= *cap) return RP_OK;
    free(*buf);
    *buf = malloc(sizeof(float) * n);
    *cap = *buf ? n : 0;
    if (!*buf) return RP_FAIL(err, RP_ERR_NOMEM, "patch parallel: out of memory for %s (%zu floats)", what, n);
    return RP_OK;
}

/* patch-text-stale: after warmup (!sync) the keys K, V (BH, To, D) take the text rows the
 * previous forward of this (slot, attention) kept; then this forward's text rows, from k, v
 * (BH, Tk, D), are kept for the next. */
static rp_status text_stale(pp_kv *e, int sync, float *K, float *V, int To, const float *k, const float *v, int Tk,
                            int Tl, int Tr, size_t BH, int D, rp_error *err) {
    const size_t Tt = (size_t)Tl + Tr, n = 2 * BH * Tt * D;
    if (!Tt) return RP_OK;
    if (e->text_n != n) {
        free(e->text);
        if (!(e->text = malloc(sizeof(float) * n))) {
            e->text_n = 0;
            return RP_FAIL(err, RP_ERR_NOMEM, "patch parallel: out of memory for the kept text rows");
        }
        e->text_n = n;
        sync = 1; /* nothing kept yet */
    }
    for (int kv = 0; kv < 2; kv++) {
        float *dst = kv ? V : K, *kept = e->text + (size_t)kv * BH * Tt * D;
        const float *src = kv ? v : k;
        for (size_t bh = 0; bh < BH; bh++) {
            float *d = dst + bh * (size_t)To * D, *t = kept + bh * Tt * D;
            const float *s = src + bh * (size_t)Tk * D;
            if (!sync) {
                memcpy(d, t, sizeof(float) * Tl * D);
                memcpy(d + (size_t)(To - Tr) * D, t + (size_t)Tl * D, sizeof(float) * Tr * D);
            }
            memcpy(t, s, sizeof(float) * Tl * D);
            memcpy(t + (size_t)Tl * D, s + (size_t)(Tk - Tr) * D, sizeof(float) * Tr * D);
        }
    }
    return RP_OK;
}

/* The K/V hook; see the header. */
static rp_status pp_kv_hook(void *u, int layer, const float *k, const float *v, int B, int H, int Tk, int D,
                            const float **ko, const float **vo, int *tko, rp_error *err) {
    rp_parallel *p = u;
    rp_par_pp *pp = p->pp;
    const int n = p->sp.size, r = p->sp.pos;
    const int Tl = p->kv_lead, Tr = p->kv_rep, Ti = Tk - Tl - Tr, T = Ti * n;
    if (Ti < 1)
        return RP_FAIL(err, RP_ERR_INVALID, "patch parallel: attention %d has %d keys, %d + %d of them text: no "
                       "image tokens", layer, Tk, Tl, Tr);
    pp_kv *e = NULL;
    RP_TRY(stale_at(pp, p->fwd_slot, layer, B, H, T, D, n, &e, err));
    const size_t BH = (size_t)B * H, piece = BH * Ti * D, chunk = 2 * piece; /* chunk: one rank's [K | V] */
    RP_TRY(grow(&pp->xch, &pp->xch_cap, chunk * (size_t)(n + 1), "the K/V exchange", err));
    float *mine = pp->xch, *all = pp->xch + chunk; /* (2, B, H, Ti, D), (n, 2, B, H, Ti, D) */
    for (size_t bh = 0; bh < BH; bh++) {
        memcpy(mine + bh * Ti * D, k + (bh * Tk + Tl) * D, sizeof(float) * Ti * D);
        memcpy(mine + piece + bh * Ti * D, v + (bh * Tk + Tl) * D, sizeof(float) * Ti * D);
    }
    rp_comm *c = p->sp.comm;
    RP_TRY(c->ops->allgather(c, mine, chunk, all, err));

    /* the keys: fresh for all (warmup, and p->fresh_kv), else fresh here and the previous
     * exchange elsewhere (warmup-late: one synchronous step more than the warmup) */
    const int sync = p->fwd_eval < pp->warmup + (p->fault == RP_INJECT_WARMUP_LATE) || p->fresh_kv,
              others = sync || e->valid;
    const int To = Tl + (others ? T : Ti) + Tr;
    RP_TRY(grow(&pp->kv_out, &pp->kv_cap, 2 * BH * To * D, "the attention keys", err));
    float *K = pp->kv_out, *V = pp->kv_out + BH * To * D; /* (B, H, To, D) each */
    for (size_t bh = 0; bh < BH; bh++) {
        float *kd = K + bh * To * D, *vd = V + bh * To * D;
        memcpy(kd, k + bh * Tk * D, sizeof(float) * Tl * D);
        memcpy(vd, v + bh * Tk * D, sizeof(float) * Tl * D);
        size_t pos = (size_t)Tl;
        for (int q = 0; q < n; q++) {
            const float *ks, *vs;
            if (sync) { /* rank q's fresh part of the exchange */
                ks = all + (size_t)q * chunk + bh * Ti * D;
                vs = ks + piece;
            } else if (q == r) { /* this patch: always fresh */
                ks = k + (bh * Tk + Tl) * D;
                vs = v + (bh * Tk + Tl) * D;
            } else if (e->valid) { /* the others: one step old (patch-stale-rows: one token late on
                                     * the last patch rank, the band's last row its neighbour's) */
                const size_t at = (size_t)q * Ti + (p->fault == RP_INJECT_PATCH_STALE_ROWS && r == n - 1);
                ks = e->k + (bh * T + at) * D;
                vs = e->v + (bh * T + at) * D;
            } else {
                continue;
            }
            memcpy(kd + pos * D, ks, sizeof(float) * Ti * D);
            memcpy(vd + pos * D, vs, sizeof(float) * Ti * D);
            pos += (size_t)Ti;
        }
        memcpy(kd + pos * D, k + (bh * Tk + Tl + Ti) * D, sizeof(float) * Tr * D);
        memcpy(vd + pos * D, v + (bh * Tk + Tl + Ti) * D, sizeof(float) * Tr * D);
        assert(pos + (size_t)Tr == (size_t)To);
    }
    /* The staleness contract (stale_check.c): each patch's rows as placed in the keys are
     * this step's exchange of rank q (warmup, and this rank's own patch), or else the
     * exchange of the previous step kept for these items in this generation. */
    RP_TRY(grow(&pp->chk, &pp->chk_cap, chunk, "the staleness check", err));
    if (n > pp->now_cap) {
        uint64_t *w = realloc(pp->now, sizeof *w * (size_t)n);
        if (!w) return RP_FAIL(err, RP_ERR_NOMEM, "patch parallel: out of memory for the staleness check");
        pp->now = w;
        pp->now_cap = n;
    }
    for (int q = 0; q < n; q++) pp->now[q] = rp_par_fingerprint(all + (size_t)q * chunk, chunk); /* as exchanged */
    const int who = rp_par_stale_who(p);
    size_t pos = (size_t)Tl;
    for (int q = 0; q < n; q++) {
        const int fresh = sync || q == r;
        if (!fresh && !e->valid) continue;
        const uint64_t got = rp_par_kv_print(K + pos * D, V + pos * D, BH, (size_t)Ti, (size_t)D, (size_t)To * D,
                                             pp->chk);
        const int due = fresh ? p->fwd_eval : p->fwd_eval - 1;
        const uint64_t want = fresh ? pp->now[q]
                              : e->eval == due && e->gen == p->generation && e->who == who ? e->print[q] : 0;
        rp_par_stale_kv(p, layer, q, due, got, want);
        pos += (size_t)Ti;
    }
    p->stale_seen |= !sync; /* the keys are not the whole fresh sequence: copies part here */
    /* this step's exchange becomes the next step's stale K/V (after it was read above) */
    for (int q = 0; q < n; q++) {
        for (size_t bh = 0; bh < BH; bh++) {
            const float *ks = all + (size_t)q * chunk + bh * Ti * D;
            memcpy(e->k + (bh * T + (size_t)q * Ti) * D, ks, sizeof(float) * Ti * D);
            memcpy(e->v + (bh * T + (size_t)q * Ti) * D, ks + piece, sizeof(float) * Ti * D);
        }
        e->print[q] = pp->now[q]; /* from the exchange, not the copy */
    }
    e->eval = p->fwd_eval;
    e->gen = p->generation;
    e->who = who;
    e->valid = 1;
    if (p->fault == RP_INJECT_PATCH_TEXT_STALE) RP_TRY(text_stale(e, sync, K, V, To, k, v, Tk, Tl, Tr, BH, D, err));
    /* the text rows: this forward's, whatever the step (only image K/V is kept across steps) */
    RP_TRY(grow(&pp->chk, &pp->chk_cap, 2 * BH * (size_t)(Tl > Tr ? Tl : Tr) * D, "the staleness check", err));
    rp_par_stale_text(p, layer, K, V, To, k, v, Tk, Tl, Tr, BH, D, pp->chk);
    *ko = K;
    *vo = V;
    *tko = To;
    return RP_OK;
}

rp_status rp_par_patch_init(rp_parallel *p, int warmup_steps, rp_error *err) {
    if (p->deg.patch < 2) return RP_FAIL(err, RP_ERR_INVALID, "patch parallel: degree %d (needs >= 2)", p->deg.patch);
    if (p->deg.ulysses > 1 || p->deg.ring > 1 || p->deg.pipefusion > 1)
        return RP_FAIL(err, RP_ERR_INVALID, "patch=%d with ulysses=%d ring=%d pipefusion=%d: patch parallelism "
                       "replaces them", p->deg.patch, p->deg.ulysses, p->deg.ring, p->deg.pipefusion);
    if (warmup_steps < 0) return RP_FAIL(err, RP_ERR_INVALID, "patch parallel: warmup_steps %d < 0", warmup_steps);
    if (p->pf || p->pp || p->hooks.block_range || p->hooks.stream || p->hooks.kv)
        return RP_FAIL(err, RP_ERR_INVALID, "patch parallel: the context already has a strategy's hooks");
    assert(p->sp.size == p->deg.patch);
    rp_par_pp *pp = calloc(1, sizeof *pp);
    if (!pp) return RP_FAIL(err, RP_ERR_NOMEM, "patch parallel: out of memory");
    pp->warmup = warmup_steps;
    p->stale_from = warmup_steps;
    p->pp = pp;
    p->hooks = (rp_par_hooks){p, NULL, NULL, pp_kv_hook};
    return RP_OK;
}

void rp_par_patch_free(rp_parallel *p) {
    if (!p || !p->pp) return;
    rp_par_pp *pp = p->pp;
    for (int s = 0; s < pp->n_slots; s++) {
        for (int l = 0; l < pp->slots[s].n; l++) kv_free(&pp->slots[s].layers[l]);
        free(pp->slots[s].layers);
    }
    free(pp->slots);
    free(pp->xch);
    free(pp->kv_out);
    free(pp->chk);
    free(pp->now);
    free(pp);
    p->pp = NULL;
    memset(&p->hooks, 0, sizeof p->hooks);
}

void rp_par_pp_reset(rp_parallel *p) {
    rp_par_pp *pp = p->pp;
    assert(pp);
    for (int s = 0; s < pp->n_slots; s++)
        for (int l = 0; l < pp->slots[s].n; l++) pp->slots[s].layers[l].valid = 0;
}
