/* strategy.c — the strategy table and the rank layout (see strategy.h). */
#include "strategy.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../strutil.h"

#define DEG(f) offsetof(rp_par_degrees, f)

static const rp_par_strategy_info STRATEGIES[] = {
    {.name = "dp", .field = "dp", .degree = DEG(dp), .exactness = RP_PAR_EXACT,
     .reorders = "none inside an item; the GEMMs whose rows are items (timestep, modulation) and, with a joint "
                 "batch, every GEMM run with fewer rows, and a BLAS may pick other kernels by the row count",
     .bitwise_when = "with per-item batches (SD3/FLUX): each item's forwards are the single rank's",
     .replicated = "the item list (broadcast, checksummed); the latents gathered to rank 0",
     .axis = "data parallel", .tag = "dp", .nest = 5, .splits = RP_PAR_SPLITS_ITEMS},
    {.name = "cfg", .field = "cfg_parallel", .degree = DEG(cfg), .exactness = RP_PAR_EXACT,
     .reorders = "none inside a row; each rank's GEMMs have half the rows (the BLAS may pick other kernels); "
                 "the guidance combine is the single rank's formula on the same two outputs",
     .bitwise_when = "when the BLAS gives a row the same bits for the halved row count (measured by the tests)",
     .replicated = "the allgathered guidance halves, the guided prediction and the latents after every step",
     .axis = "CFG parallel", .tag = "cfg", .nest = 4, .splits = RP_PAR_SPLITS_BATCH, .max_degree = 2,
     .max_rule = "must be 1 or 2 (one rank per CFG branch)", .batch_segment = rp_par_cfg_segment,
     .batch_exchange = rp_par_cfg_exchange},
    {.name = "ulysses", .field = "ulysses", .degree = DEG(ulysses), .exactness = RP_PAR_EXACT,
     .reorders = "the token GEMMs run on T/sp rows; attention sees the whole sequence per head group in the "
                 "single rank's key order, so the math variant does the single rank's arithmetic",
     .bitwise_when = "with math attention, when the BLAS gives a row the same bits for T/sp rows (measured by "
                     "the tests)",
     .replicated = "every whole-sequence tensor on each sp rank (conditioning, SD3's text stream, the gathered "
                   "output) and the latents",
     .axis = "Ulysses (sequence, all-to-all)", .tag = "u", .nest = 0, .splits = RP_PAR_SPLITS_SEQUENCE},
    {.name = "ring", .field = "ring", .degree = DEG(ring), .exactness = RP_PAR_EXACT,
     .reorders = "softmax sums and P V products split into one block per ring rank, merged with the (max, sum) "
                 "correction in ring order",
     .bitwise_when = "never (the softmax is summed in another order)",
     .replicated = "every whole-sequence tensor on each sp rank (conditioning, SD3's text stream, the gathered "
                   "output) and the latents",
     .axis = "ring attention (sequence, K/V passed)", .tag = "r", .nest = 1, .splits = RP_PAR_SPLITS_SEQUENCE},
    {.name = "usp", .exactness = RP_PAR_EXACT, .reorders = "ulysses and ring together: both of the above",
     .bitwise_when = "never (ring's order)", .replicated = "as ulysses and ring", .axis = "USP (Ulysses x ring)"},
    {.name = "pipefusion", .field = "pipefusion", .degree = DEG(pipefusion), .exactness = RP_PAR_WARMUP_EXACT,
     .reorders = "warmup: none but the GEMM row counts (the stages run the single rank's blocks in order); "
                 "after it, each pipeline patch attends to the K/V its stage cached for the patches not yet "
                 "computed in this step (one step stale), and GEMMs run on patch-sized row counts",
     .bitwise_when = "in warmup, when the BLAS gives a row the same bits for the row counts (measured by the "
                     "tests); never after warmup",
     .replicated = "the latents after every step on every stage",
     .axis = "PipeFusion (blocks over stages)", .tag = "pf", .nest = 3, .splits = RP_PAR_SPLITS_BLOCKS},
    {.name = "patch", .field = "patch", .degree = DEG(patch), .exactness = RP_PAR_WARMUP_EXACT,
     .reorders = "warmup: the token GEMMs run on T/patch rows, attention keys in the single rank's order; after "
                 "it, each patch attends to the other patches' K/V of the previous step (DistriFusion)",
     .bitwise_when = "in warmup, when the BLAS gives a row the same bits for T/patch rows (measured by the "
                     "tests); never after warmup",
     .replicated = "the latents after every step; whole-sequence tensors during warmup",
     .axis = "patch parallel (DistriFusion)", .tag = "patch", .nest = 2, .splits = RP_PAR_SPLITS_SEQUENCE,
     .on_sequence_group = 1},
};

int rp_par_strategy_count(void) { return (int)(sizeof STRATEGIES / sizeof *STRATEGIES); }

const rp_par_strategy_info *rp_par_strategy_at(int i) {
    assert(i >= 0 && i < rp_par_strategy_count());
    return &STRATEGIES[i];
}

const rp_par_strategy_info *rp_par_strategy(const char *name) {
    for (int i = 0; name && i < rp_par_strategy_count(); i++)
        if (!strcmp(STRATEGIES[i].name, name)) return &STRATEGIES[i];
    return NULL;
}

const char *rp_par_exactness_name(rp_par_exactness e) {
    return e == RP_PAR_EXACT ? "exact" : "warmup-exact";
}


rp_par_exactness rp_par_layout_exactness(const rp_par_degrees *d) {
    const rp_par_strategy_info *s[RP_PAR_N_DEGREES];
    const int n = rp_par_layout_strategies(d, s);
    rp_par_exactness e = RP_PAR_EXACT;
    for (int i = 0; i < n; i++)
        if (s[i]->exactness == RP_PAR_WARMUP_EXACT) e = RP_PAR_WARMUP_EXACT;
    return e;
}

int rp_par_layout_strategies(const rp_par_degrees *d, const rp_par_strategy_info *out[RP_PAR_N_DEGREES]) {
    const int usp = d->ulysses > 1 && d->ring > 1; /* both sequence splits: one strategy, USP */
    int n = 0;
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) {
        const rp_par_strategy_info *s = rp_par_member_strategy(i);
        if (rp_par_degree(d, s) <= 1 || (usp && s->degree == offsetof(rp_par_degrees, ring))) continue;
        out[n++] = usp && s->degree == offsetof(rp_par_degrees, ulysses) ? rp_par_strategy("usp") : s;
    }
    return n;
}

const rp_par_strategy_info *rp_par_degree_strategy(int i) {
    assert(i >= 0 && i < RP_PAR_N_DEGREES);
    for (int k = 0, n = 0; k < rp_par_strategy_count(); k++)
        if (STRATEGIES[k].field && n++ == i) return &STRATEGIES[k];
    return NULL; /* unreachable: the table has RP_PAR_N_DEGREES fields (asserted in its test) */
}

const rp_par_strategy_info *rp_par_member_strategy(int i) {
    assert(i >= 0 && i < RP_PAR_N_DEGREES);
    for (int k = 0; k < RP_PAR_N_DEGREES; k++)
        if (rp_par_degree_strategy(k)->degree == (size_t)i * sizeof(int)) return rp_par_degree_strategy(k);
    return NULL; /* unreachable: every member is one strategy's (asserted in its test) */
}

int *rp_par_degree_ptr(rp_par_degrees *d, const rp_par_strategy_info *s) {
    assert(d && s && s->field);
    return (int *)((char *)d + s->degree);
}

int rp_par_degree(const rp_par_degrees *d, const rp_par_strategy_info *s) {
    return *rp_par_degree_ptr((rp_par_degrees *)d, s);
}

long long rp_par_world_ll(const rp_par_degrees *d) {
    long long w = 1;
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) {
        const long long v = rp_par_degree(d, rp_par_degree_strategy(i));
        w = v > 0 && w > LLONG_MAX / v ? LLONG_MAX : w * v; /* saturates: unvalidated degrees */
    }
    return w;
}

int rp_par_world(const rp_par_degrees *d) { return (int)rp_par_world_ll(d); }

/* ---- texts (rp_appendf: appends, truncating at cap) ------------------------------------- */

void rp_par_fields_text(const char *sep, char *buf, size_t cap) {
    if (cap) buf[0] = '\0';
    for (int i = 0; i < RP_PAR_N_DEGREES; i++)
        rp_appendf(buf, cap, "%s%s", i ? sep : "", rp_par_degree_strategy(i)->field);
}

void rp_par_values_text(const rp_par_degrees *d, const char *sep, char *buf, size_t cap) {
    if (cap) buf[0] = '\0';
    for (int i = 0; i < RP_PAR_N_DEGREES; i++)
        rp_appendf(buf, cap, "%s%d", i ? sep : "", rp_par_degree(d, rp_par_degree_strategy(i)));
}

void rp_par_named_text(const rp_par_degrees *d, const char *kv, const char *sep, char *buf, size_t cap) {
    if (cap) buf[0] = '\0';
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) {
        const rp_par_strategy_info *s = rp_par_member_strategy(i);
        rp_appendf(buf, cap, "%s%s%s%d", i ? sep : "", s->name, kv, rp_par_degree(d, s));
    }
}

void rp_par_tags_text(const rp_par_degrees *d, char *buf, size_t cap) {
    if (cap) buf[0] = '\0';
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) {
        const rp_par_strategy_info *s = rp_par_degree_strategy(i);
        const int v = rp_par_degree(d, s);
        if (v != 1) rp_appendf(buf, cap, "%s%s%d", buf[0] ? " " : "", s->tag, v);
    }
    if (cap && !buf[0]) snprintf(buf, cap, "1");
}

/* ---- coordinates ------------------------------------------------------------------ */

/* The degree strategy at nest k (0 innermost). */
static const rp_par_strategy_info *nested(int k) {
    for (int i = 0; i < RP_PAR_N_DEGREES; i++)
        if (rp_par_degree_strategy(i)->nest == k) return rp_par_degree_strategy(i);
    assert(!"every nest index has one strategy (asserted in its test)");
    return NULL;
}

void rp_par_coords_of(const rp_par_degrees *d, int rank, rp_par_coords *c) {
    assert(rank >= 0 && rank < rp_par_world(d));
    int r = rank;
    for (int k = 0; k < RP_PAR_N_DEGREES; k++) { /* innermost first */
        const rp_par_strategy_info *s = nested(k);
        const int n = rp_par_degree(d, s);
        *rp_par_degree_ptr(&c->of, s) = r % n;
        r /= n;
    }
    /* the sequence slot: ulysses x ring, or patch */
    rp_par_degrees seq;
    int n;
    rp_par_span_of(RP_PAR_SPAN_SEQUENCE, &seq);
    c->sp = rp_par_index_in(d, c, &seq, &n);
}

int rp_par_rank_of(const rp_par_degrees *d, const rp_par_coords *c) {
    int r = 0;
    for (int k = RP_PAR_N_DEGREES - 1; k >= 0; k--) { /* outermost first */
        const rp_par_strategy_info *s = nested(k);
        r = r * rp_par_degree(d, s) + rp_par_degree(&c->of, s);
    }
    return r;
}


void rp_par_span_of(rp_par_span g, rp_par_degrees *vary) {
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) {
        const rp_par_strategy_info *s = rp_par_degree_strategy(i);
        *rp_par_degree_ptr(vary, s) = g == RP_PAR_SPAN_SEQUENCE ? s->splits == RP_PAR_SPLITS_SEQUENCE
                                                                 : s->splits != RP_PAR_SPLITS_ITEMS;
    }
}

int rp_par_index_in(const rp_par_degrees *d, const rp_par_coords *c, const rp_par_degrees *vary, int *size) {
    int idx = 0;
    *size = 1;
    for (int k = 0; k < RP_PAR_N_DEGREES; k++) { /* innermost first: a mixed-radix number */
        const rp_par_strategy_info *s = nested(k);
        if (!rp_par_degree(vary, s)) continue;
        idx += rp_par_degree(&c->of, s) * *size;
        *size *= rp_par_degree(d, s);
    }
    return idx;
}

int rp_par_leader_of(const rp_par_degrees *d, const rp_par_coords *c, const rp_par_degrees *vary) {
    rp_par_coords base = *c;
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) {
        const rp_par_strategy_info *s = rp_par_degree_strategy(i);
        if (rp_par_degree(vary, s)) *rp_par_degree_ptr(&base.of, s) = 0;
    }
    return rp_par_rank_of(d, &base);
}
