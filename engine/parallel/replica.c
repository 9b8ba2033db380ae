/* replica.c — replica consistency: every copy of a replicated tensor is the same bits.
 *
 * A layout keeps some tensors replicated: the latents of a dp group on every rank of
 * the group after every step, the guided (cfg-combined) prediction, the conditioning
 * and the other trace points that hold a whole sequence on every sp rank. Each copy is
 * computed by the same code from the same bits, so in a correct implementation every
 * copy is bitwise equal to every other — no envelope is needed, and a copy that
 * differs is a bug at that tensor and step (a rank combining the cfg halves in another
 * order, a constant perturbed on one rank), even when rank 0's own copy, the one the
 * trace and the outputs see, is right. This is the check PyTorch's
 * TORCH_DISTRIBUTED_DEBUG makes for collectives, made for the data.
 *
 * Each rank appends (evaluation, group, name, rp_par_fingerprint of the bits) to a log as the
 * run goes (rp_par_replica_note: no communication), and at the end one gather brings
 * every log to rank 0 (rp_par_replica_collect), which compares each rank's log with
 * its group leader's entry by entry. Two ranks whose BLAS kernel sets or devices
 * differ (a heterogeneous multi-node run) may legitimately round differently: such a
 * group is reported unchecked, never a bug.
 *
 * The OWN group holds pairs on one rank: a result of arithmetic only a layout runs and its
 * recomputation from the same inputs by separately written code (sp_attention.c's ring).
 * No other rank holds a copy of it, and no layout twin computes it, so a small systematic
 * error there would otherwise be judged by a rounding envelope alone. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel.h"

enum { TAG_REPLICA = 32 };

/* One fingerprint, sent as raw bytes (every rank runs the same build). */
typedef struct rp_par_rentry {
    int32_t eval;
    int32_t group;          /* rp_par_rgroup */
    uint64_t hash;
    char name[RP_PAR_REPLICA_NAME];
} rp_par_rentry;

struct rp_par_rlog {
    rp_par_rentry *e;
    int n, cap;
    int overflow;           /* entries past RP_PAR_REPLICA_MAX_ENTRIES were dropped */
};

uint64_t rp_par_fingerprint(const float *x, size_t n) {
    const uint64_t prime = 0x100000001b3ull;
    uint64_t h[4] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull, 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full};
    const unsigned char *b = (const unsigned char *)x;
    const size_t bytes = sizeof(float) * n, words = bytes / 8;
    size_t i = 0;
    for (; i + 4 <= words; i += 4)
        for (int l = 0; l < 4; l++) {
            uint64_t w;
            memcpy(&w, b + 8 * (i + (size_t)l), 8);
            h[l] = (h[l] ^ w) * prime;
        }
    for (; i < words; i++) {
        uint64_t w;
        memcpy(&w, b + 8 * i, 8);
        h[i & 3] = (h[i & 3] ^ w) * prime;
    }
    for (size_t j = 8 * words; j < bytes; j++) h[0] = (h[0] ^ b[j]) * prime;
    uint64_t r = bytes; /* the length enters too */
    for (int l = 0; l < 4; l++) r = (r ^ h[l]) * prime;
    return r ^ (r >> 29);
}

const char *rp_par_rgroup_name(rp_par_rgroup g) {
    assert(g >= 0 && g < RP_PAR_RG_COUNT);
    static const char *const NAME[RP_PAR_RG_COUNT] = {"sp", "replica", "world", "own", "stale"};
    return NAME[g];
}

void rp_par_replica_note(const rp_ctx *ctx, rp_par_rgroup group, const char *name, const float *x, size_t n) {
    if (ctx->par) rp_par_replica_note_at(ctx, ctx->par->fwd_eval, group, name, x, n);
}

/* Appends (eval, group, name, hash) to p's log (dropped past the cap or out of memory). */
static void log_append(rp_parallel *p, int eval, rp_par_rgroup group, const char *name, uint64_t hash) {
    rp_par_rlog *l = p->rlog;
    if (!l && !(l = p->rlog = calloc(1, sizeof *l))) return; /* out of memory: the check is skipped */
    if (l->n == l->cap) {
        if (l->cap >= RP_PAR_REPLICA_MAX_ENTRIES) {
            l->overflow = 1;
            return;
        }
        const int cap = l->cap ? 2 * l->cap : 256;
        rp_par_rentry *e = realloc(l->e, sizeof *e * (size_t)cap);
        if (!e) {
            l->overflow = 1;
            return;
        }
        l->e = e;
        l->cap = cap;
    }
    rp_par_rentry *e = &l->e[l->n++];
    memset(e, 0, sizeof *e);
    e->eval = eval;
    e->group = group;
    e->hash = hash;
    snprintf(e->name, sizeof e->name, "%s", name);
}

void rp_par_replica_note_at(const rp_ctx *ctx, int eval, rp_par_rgroup group, const char *name, const float *x,
                            size_t n) {
    rp_parallel *p = ctx->par;
    assert(group != RP_PAR_RG_OWN && group != RP_PAR_RG_STALE); /* pairs: rp_par_log_pair */
    if (!p || p->world == 1 || p->st != RP_OK) return;
    const int size = group == RP_PAR_RG_SP ? p->sp.size : group == RP_PAR_RG_REPLICA ? p->replica.size : p->world;
    if (size == 1) return; /* nothing replicated */
    /* with stale activations (patch, pipefusion after warmup) each sp rank mixes its own
     * fresh keys with the others' stale ones by design: its whole-sequence tensors (SD3's
     * text stream) differ once an attention of the forward has read stale K/V — not
     * before (the inputs noted ahead of the forward, the conditioning, the embeddings:
     * stale_seen is set by the K/V hooks, cleared by rp_par_forward). The REPLICA tensors
     * are broadcast or gathered: still equal. */
    if (group == RP_PAR_RG_SP && eval >= p->stale_from && eval == p->fwd_eval && p->stale_seen) return;
    log_append(p, eval, group, name, rp_par_fingerprint(x, n));
}

void rp_par_log_pair(rp_parallel *p, rp_par_rgroup g, const char *name, uint64_t a, const char *other, uint64_t b) {
    assert(g == RP_PAR_RG_OWN || g == RP_PAR_RG_STALE);
    if (p->st != RP_OK) return;
    log_append(p, p->fwd_eval, g, name, a);
    log_append(p, p->fwd_eval, g, other, b);
}

/* The held pair into the log: the result under `name`, its recomputation under own_what. */
static void own_note(rp_parallel *p, const char *name) {
    p->own_held = 0;
    rp_par_log_pair(p, RP_PAR_RG_OWN, name, p->own_hash[0], p->own_what, p->own_hash[1]);
}

void rp_par_own_hold(rp_parallel *p, const float *a, const float *b, size_t n, const char *what) {
    if (!p || !p->check_own || p->st != RP_OK) return;
    const uint64_t ha = rp_par_fingerprint(a, n), hb = rp_par_fingerprint(b, n);
    const int differed = p->own_held && p->own_hash[0] != p->own_hash[1];
    if (!differed) snprintf(p->own_what, sizeof p->own_what, "%s", what ? what : "");
    /* fold: h' = h * prime ^ new is one-to-one in h for a given new (the prime is odd), so a
     * pair that differed stays different, and equal sequences fold equal */
    const uint64_t prime = 0x100000001b3ull;
    p->own_hash[0] = p->own_held ? (p->own_hash[0] * prime) ^ ha : ha;
    p->own_hash[1] = p->own_held ? (p->own_hash[1] * prime) ^ hb : hb;
    p->own_held = 1;
}

int rp_par_own_now(const rp_parallel *p) {
    return p && p->check_own &&
           (p->fwd_eval == p->own_at[0] || p->fwd_eval == p->own_at[1] || p->fwd_eval == p->own_at[2]);
}

int rp_par_own_turn(int *call, int calls_last, int eval) {
    const int calls = calls_last > 0 ? calls_last : 1, c = (*call)++;
    return c == 0 ? 0 : c == eval % calls ? 1 : -1;
}

int rp_par_own_slice(rp_parallel *p, int parts) {
    if (!p || !p->check_own || parts < 1 || p->fwd_eval < 0) return -1;
    const int calls = p->own_calls_last > 0 ? p->own_calls_last : 1;
    switch (rp_par_own_turn(&p->own_call, p->own_calls_last, p->fwd_eval)) {
    case 0: return p->fwd_eval % parts; /* the first attention: a fault on every call is named there */
    case 1: return p->fwd_eval / calls % parts;
    default: return -1;
    }
}

void rp_par_own_flush(const rp_ctx *ctx, const char *name) {
    rp_parallel *p = ctx->par;
    if (p && p->own_held) own_note(p, name);
}

void rp_par_replica_free(rp_parallel *p) {
    if (!p) return;
    p->own_held = 0;
    if (!p->rlog) return;
    free(p->rlog->e);
    free(p->rlog);
    p->rlog = NULL;
}

/* What every rank sends rank 0 before its entries. */
typedef struct rhdr {
    int32_t n, overflow;
    char kernels[96];       /* "<BLAS kernel set>/<device>": ranks that differ may round differently */
} rhdr;

/* The group leader of rank r for group g: the rank with the same coordinates except the
 * ones the group spans (SP: the sequence's; REPLICA: all but dp's; WORLD: all), and those 0. */
static int leader_of(const rp_parallel *p, int r, rp_par_rgroup g) {
    if (g == RP_PAR_RG_WORLD) return 0;
    rp_par_coords c;
    rp_par_degrees vary;
    rp_par_coords_of(&p->deg, r, &c);
    rp_par_span_of(g == RP_PAR_RG_SP ? RP_PAR_SPAN_SEQUENCE : RP_PAR_SPAN_REPLICA, &vary);
    return rp_par_leader_of(&p->deg, &c, &vary);
}

/* Rank r's pairs of group g (OWN, STALE: consecutive entries of its log, n in all) into
 * *out: a pair whose two fingerprints differ is a difference between rank r and itself,
 * ordered with the others by evaluation, then by position in the log. */
static void own_pairs(int n, const rp_par_rentry *log, int r, rp_par_rgroup g, rp_par_replica_report *out) {
    int held = -1; /* the pair's first entry */
    for (int i = 0; i < n; i++) {
        if (log[i].group != (int32_t)g) continue;
        if (held < 0) {
            held = i;
            continue;
        }
        const rp_par_rentry *a = &log[held], *b = &log[i];
        held = -1;
        out->checked++;
        if (a->hash == b->hash) continue;
        if (out->first.eval < 0 || a->eval < out->first.eval ||
            (a->eval == out->first.eval && i < out->first.index)) {
            out->first.eval = a->eval;
            out->first.index = i;
            out->first.group = g;
            out->first.rank_a = out->first.rank_b = r;
            snprintf(out->first.name, sizeof out->first.name, "%s", a->name);
            snprintf(out->first.other, sizeof out->first.other, "%s", b->name); /* what was recomputed */
        }
    }
    if (held >= 0)
        snprintf(out->unchecked, sizeof out->unchecked, "rank %d noted an %s check without its pair", r,
                 rp_par_rgroup_name(g));
}

int rp_par_replica_logged(const rp_parallel *p) { return p && p->rlog ? p->rlog->n : 0; }

rp_status rp_par_replica_collect(rp_parallel *p, const char *kernels, rp_par_replica_report *out, rp_error *err) {
    assert(p && out);
    memset(out, 0, sizeof *out);
    out->first.eval = -1;
    if (p->world == 1) { /* no copies elsewhere; its own pairs only */
        if (p->rlog)
            for (int g = RP_PAR_RG_OWN; g <= RP_PAR_RG_STALE; g++) own_pairs(p->rlog->n, p->rlog->e, 0, g, out);
        return RP_OK;
    }
    rp_comm *c = p->world_comm;
    const rp_par_rlog *mine = p->rlog;
    rhdr h;
    memset(&h, 0, sizeof h);
    h.n = mine ? mine->n : 0;
    h.overflow = mine ? mine->overflow : 0;
    snprintf(h.kernels, sizeof h.kernels, "%s", kernels ? kernels : "");
    if (p->rank != 0) {
        RP_TRY(c->ops->send(c, &h, sizeof h, 0, TAG_REPLICA, err));
        if (h.n) RP_TRY(c->ops->send(c, mine->e, sizeof *mine->e * (size_t)h.n, 0, TAG_REPLICA, err));
        return RP_OK;
    }
    /* rank 0: every rank's log, then each against its leader's */
    rhdr *hs = calloc((size_t)p->world, sizeof *hs);
    rp_par_rentry **logs = calloc((size_t)p->world, sizeof *logs);
    rp_status st = hs && logs ? RP_OK : RP_FAIL(err, RP_ERR_NOMEM, "replica check: out of memory");
    if (st == RP_OK) {
        hs[0] = h;
        logs[0] = mine ? mine->e : NULL;
    }
    for (int r = 1; r < p->world && st == RP_OK; r++) {
        st = c->ops->recv(c, &hs[r], sizeof hs[r], r, TAG_REPLICA, err);
        if (st != RP_OK) break;
        if (hs[r].n < 0 || hs[r].n > RP_PAR_REPLICA_MAX_ENTRIES) {
            st = RP_FAIL(err, RP_ERR_COMM, "replica check: rank %d sent %d entries", r, hs[r].n);
            break;
        }
        hs[r].kernels[sizeof hs[r].kernels - 1] = 0;
        if (!hs[r].n) continue;
        if (!(logs[r] = malloc(sizeof **logs * (size_t)hs[r].n))) {
            st = RP_FAIL(err, RP_ERR_NOMEM, "replica check: out of memory for rank %d's %d entries", r, hs[r].n);
            break;
        }
        st = c->ops->recv(c, logs[r], sizeof **logs * (size_t)hs[r].n, r, TAG_REPLICA, err);
    }
    for (int r = 0; r < p->world && st == RP_OK; r++)
        for (int g = RP_PAR_RG_OWN; g <= RP_PAR_RG_STALE; g++) own_pairs(hs[r].n, logs[r], r, g, out);
    for (int r = 1; r < p->world && st == RP_OK; r++) {
        for (int g = 0; g < RP_PAR_RG_COUNT; g++) {
            if (g == RP_PAR_RG_OWN || g == RP_PAR_RG_STALE) continue; /* no copy elsewhere: own_pairs */
            const int L = leader_of(p, r, (rp_par_rgroup)g);
            if (L == r) continue;
            if (strcmp(hs[r].kernels, hs[L].kernels)) {
                snprintf(out->unchecked, sizeof out->unchecked,
                         "ranks %d and %d run different kernels (%s vs %s): their copies may round differently", L,
                         r, hs[L].kernels, hs[r].kernels);
                continue;
            }
            if (hs[r].overflow || hs[L].overflow) {
                snprintf(out->unchecked, sizeof out->unchecked, "more than %d fingerprints: the rest unchecked",
                         RP_PAR_REPLICA_MAX_ENTRIES);
            }
            /* the k-th entry of group g on r against the k-th on its leader */
            int i = 0, j = 0;
            for (;;) {
                while (i < hs[r].n && logs[r][i].group != g) i++;
                while (j < hs[L].n && logs[L][j].group != g) j++;
                if (i == hs[r].n || j == hs[L].n) {
                    if (i != hs[r].n || j != hs[L].n)
                        snprintf(out->unchecked, sizeof out->unchecked,
                                 "ranks %d and %d noted different numbers of %s tensors", L, r,
                                 rp_par_rgroup_name((rp_par_rgroup)g));
                    break;
                }
                const rp_par_rentry *a = &logs[L][j], *b = &logs[r][i];
                out->checked++;
                const int differs = a->hash != b->hash || a->eval != b->eval || strcmp(a->name, b->name);
                /* the earliest difference: by evaluation, then by position in the run */
                if (differs && (out->first.eval < 0 || a->eval < out->first.eval ||
                                (a->eval == out->first.eval && j < out->first.index))) {
                    out->first.eval = a->eval;
                    out->first.index = j;
                    out->first.group = (rp_par_rgroup)g;
                    out->first.rank_a = L;
                    out->first.rank_b = r;
                    snprintf(out->first.name, sizeof out->first.name, "%s", a->name);
                    if (strcmp(a->name, b->name))
                        snprintf(out->first.other, sizeof out->first.other, "%s", b->name);
                }
                i++, j++;
            }
        }
    }
    for (int r = 1; logs && r < p->world; r++) free(logs[r]);
    free(logs);
    free(hs);
    return st;
}
