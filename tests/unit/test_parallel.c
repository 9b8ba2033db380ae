/* test_parallel.c — engine/parallel below the worker:
 *   - the rank layout (xDiT's order) and the strategy table;
 *   - a world-1 context is bitwise the plain single-rank path (DiT, SD3, FLUX forwards
 *     and their traces), and the pipeline hooks (block ranges with the residual stream
 *     handed between two "stages", a pass-through K/V hook) are bitwise the plain forward;
 *   - in forked Gloo ranks: rp_par_attention (Ulysses, ring, USP; DiT-, SD3- and FLUX-like
 *     token layouts) against one process and against float64, and the faults that act there;
 *   - in forked Gloo ranks: the dp item broadcast, its verification and the dp blocks.
 * The end-to-end strategies (whole generations through `repro worker --job case`) are
 * tests/parallel/parallel.sh. Also labelled "parallel" (tests/cmake/parallel.cmake). */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/comm.h"
#include "engine/attention/attention.h"
#include "engine/models/dit.h"
#include "engine/models/flux.h"
#include "engine/models/registry.h"
#include "engine/models/sd3.h"
#include "engine/parallel/parallel.h"
#include "engine/rng.h"
#include "engine/synthetic.h"
#include "engine/trace.h"

/* ---- layout and table ------------------------------------------------------------- */

START_TEST(layout_round_trip_and_order) {
    const rp_par_degrees sets[] = {{2, 2, 1, 2, 1, 1}, {1, 2, 1, 2, 2, 1}, {2, 1, 1, 2, 2, 1}, {3, 2, 1, 1, 2, 1},
                                   {2, 1, 1, 1, 1, 2}, {1, 1, 2, 2, 1, 1}};
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        const int W = rp_par_world(&sets[s]);
        for (int r = 0; r < W; r++) {
            rp_par_coords c;
            rp_par_coords_of(&sets[s], r, &c);
            ck_assert_int_eq(rp_par_rank_of(&sets[s], &c), r);
        }
    }
    /* dp 2 x cfg 2 x ring 2 x ulysses 2 (16 ranks): ulysses innermost, dp outermost */
    const rp_par_degrees d = {2, 2, 1, 2, 2, 1};
    rp_par_coords c;
    rp_par_coords_of(&d, 1, &c);
    ck_assert(c.ulysses == 1 && c.ring == 0 && c.cfg == 0 && c.dp == 0 && c.sp == 1);
    rp_par_coords_of(&d, 2, &c);
    ck_assert(c.ulysses == 0 && c.ring == 1 && c.sp == 2);
    rp_par_coords_of(&d, 4, &c);
    ck_assert(c.cfg == 1 && c.sp == 0 && c.dp == 0);
    rp_par_coords_of(&d, 11, &c);
    ck_assert(c.dp == 1 && c.cfg == 0 && c.ring == 1 && c.ulysses == 1 && c.sp == 3);
    /* patch inside pipefusion: pipefusion 2 x patch 2 */
    const rp_par_degrees pp = {.dp = 1, .cfg = 1, .pipefusion = 2, .ulysses = 1, .ring = 1, .patch = 2};
    rp_par_coords_of(&pp, 1, &c);
    ck_assert(c.patch == 1 && c.pipefusion == 0 && c.sp == 1);
    rp_par_coords_of(&pp, 2, &c);
    ck_assert(c.patch == 0 && c.pipefusion == 1);
}
END_TEST

/* The groups derived from the rows' splits are the ones parallel.c spelled out before:
 * sequence = ulysses x ring x patch with index (patch * ring + ring) * ulysses + ulysses,
 * replica = all but dp with index rank % (world / dp), each led by the rank with those
 * coordinates 0; a one-strategy group's index is that coordinate. Every layout of
 * degrees 1..2 (3 for dp and ring), every rank. */
START_TEST(groups_follow_the_rows) {
    rp_par_degrees seq, rep;
    rp_par_span_of(RP_PAR_SPAN_SEQUENCE, &seq);
    rp_par_span_of(RP_PAR_SPAN_REPLICA, &rep);
    ck_assert(!seq.dp && !seq.cfg && !seq.pipefusion && seq.ulysses && seq.ring && seq.patch);
    ck_assert(!rep.dp && rep.cfg && rep.pipefusion && rep.ulysses && rep.ring && rep.patch);
    for (int code = 0; code < 3 * 2 * 2 * 2 * 3 * 2; code++) {
        int k = code;
        rp_par_degrees d;
        d.dp = k % 3 + 1, k /= 3;
        d.cfg = k % 2 + 1, k /= 2;
        d.pipefusion = k % 2 + 1, k /= 2;
        d.ulysses = k % 2 + 1, k /= 2;
        d.ring = k % 3 + 1, k /= 3;
        d.patch = k % 2 + 1;
        const int W = rp_par_world(&d), per_dp = W / d.dp;
        for (int r = 0; r < W; r++) {
            rp_par_coords c;
            rp_par_coords_of(&d, r, &c);
            int n;
            ck_assert_int_eq(c.sp, (c.patch * d.ring + c.ring) * d.ulysses + c.ulysses);
            ck_assert_int_eq(rp_par_index_in(&d, &c, &seq, &n), c.sp);
            ck_assert_int_eq(n, d.ulysses * d.ring * d.patch);
            ck_assert_int_eq(rp_par_index_in(&d, &c, &rep, &n), r % per_dp);
            ck_assert_int_eq(n, per_dp);
            ck_assert_int_eq(rp_par_leader_of(&d, &c, &rep), r - r % per_dp);
            rp_par_coords l = c;
            l.ulysses = l.ring = l.patch = 0;
            ck_assert_int_eq(rp_par_leader_of(&d, &c, &seq), rp_par_rank_of(&d, &l));
            for (int i = 0; i < RP_PAR_N_DEGREES; i++) {
                const rp_par_strategy_info *s = rp_par_member_strategy(i);
                rp_par_degrees one = {0};
                *rp_par_degree_ptr(&one, s) = 1;
                ck_assert_int_eq(rp_par_index_in(&d, &c, &one, &n), rp_par_degree(&c.of, s));
                ck_assert_int_eq(n, rp_par_degree(&d, s));
            }
        }
    }
}
END_TEST

START_TEST(strategy_table) {
    const char *exact[] = {"dp", "cfg", "ulysses", "ring", "usp"};
    for (int i = 0; i < 5; i++) {
        const rp_par_strategy_info *s = rp_par_strategy(exact[i]);
        ck_assert_ptr_nonnull(s);
        ck_assert_int_eq(s->exactness, RP_PAR_EXACT);
        ck_assert(s->reorders && s->reorders[0] && s->bitwise_when && s->bitwise_when[0]);
    }
    ck_assert_int_eq(rp_par_strategy("pipefusion")->exactness, RP_PAR_WARMUP_EXACT);
    ck_assert_int_eq(rp_par_strategy("patch")->exactness, RP_PAR_WARMUP_EXACT);
    ck_assert_ptr_null(rp_par_strategy("tensor"));
    ck_assert_int_eq(rp_par_strategy_count(), 7);
    ck_assert_str_eq(rp_par_exactness_name(RP_PAR_WARMUP_EXACT), "warmup-exact");
    const rp_par_degrees usp = {2, 2, 1, 2, 2, 1}, pf = {1, 1, 2, 1, 1, 1};
    ck_assert_int_eq(rp_par_layout_exactness(&usp), RP_PAR_EXACT);
    ck_assert_int_eq(rp_par_layout_exactness(&pf), RP_PAR_WARMUP_EXACT);
    const rp_par_strategy_info *used[RP_PAR_N_DEGREES];
    ck_assert_int_eq(rp_par_layout_strategies(&usp, used), 3);
    ck_assert_str_eq(used[0]->name, "dp");
    ck_assert_str_eq(used[1]->name, "cfg");
    ck_assert_str_eq(used[2]->name, "usp");
    const rp_par_degrees one = {1, 1, 1, 1, 1, 1};
    ck_assert_int_eq(rp_par_layout_strategies(&one, used), 0);
    /* xDiT's order, outermost first; a sequence split alone is its own strategy */
    const rp_par_degrees pf_ring = {.dp = 1, .cfg = 2, .pipefusion = 2, .ulysses = 1, .ring = 2, .patch = 1};
    ck_assert_int_eq(rp_par_layout_strategies(&pf_ring, used), 3);
    ck_assert_str_eq(used[0]->name, "cfg");
    ck_assert_str_eq(used[1]->name, "pipefusion");
    ck_assert_str_eq(used[2]->name, "ring");
    const rp_par_degrees dp_patch = {.dp = 2, .cfg = 1, .pipefusion = 1, .ulysses = 1, .ring = 1, .patch = 2};
    ck_assert_int_eq(rp_par_layout_strategies(&dp_patch, used), 2);
    ck_assert_str_eq(used[1]->name, "patch");
    /* every degree of rp_par_degrees is one strategy's, each a distinct field, each with
     * what it replicates and an axis; the world is their product (saturating) */
    rp_par_degrees d = {0};
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) {
        const rp_par_strategy_info *s = rp_par_degree_strategy(i);
        ck_assert(s->field && s->replicated && s->axis);
        ck_assert_int_eq(*rp_par_degree_ptr(&d, s), 0);
        *rp_par_degree_ptr(&d, s) = i + 2;
    }
    ck_assert(d.dp && d.cfg && d.pipefusion && d.ulysses && d.ring && d.patch); /* each set once */
    int nests = 0; /* each nest index 0..N-1 once: the rank layout's axes */
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) {
        ck_assert_int_eq(rp_par_degree_strategy(i)->id_optional, 0); /* in stored case ids from the start */
        const int k = rp_par_degree_strategy(i)->nest;
        ck_assert(k >= 0 && k < RP_PAR_N_DEGREES && !(nests & 1 << k));
        nests |= 1 << k;
    }
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) /* the members in order, each one strategy's */
        ck_assert_ptr_eq(rp_par_degree_ptr(&d, rp_par_member_strategy(i)), (int *)&d + i);
    /* each entry of strategy.h's list: its member's row has the entry's case key as its field */
#define KEY_IS_FIELD(T, member, key)                                                                              \
    for (int i = 0; i < RP_PAR_N_DEGREES; i++)                                                                    \
        if (rp_par_degree_strategy(i)->degree == offsetof(rp_par_degrees, member))                                \
            ck_assert_str_eq(rp_par_degree_strategy(i)->field, #key);
    RP_PAR_DEGREE_LIST(KEY_IS_FIELD, int)
#undef KEY_IS_FIELD
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) { /* the rows' rules and hooks are whole */
        const rp_par_strategy_info *s = rp_par_degree_strategy(i);
        ck_assert(!s->max_degree == !s->max_rule && s->max_degree >= 0);
        ck_assert(!(s->splits == RP_PAR_SPLITS_BATCH) == !(s->batch_segment && s->batch_exchange));
    }
    ck_assert_int_eq(rp_par_world(&d), 2 * 3 * 4 * 5 * 6 * 7);
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) *rp_par_degree_ptr(&d, rp_par_degree_strategy(i)) = 1 << 20;
    ck_assert(rp_par_world_ll(&d) == LLONG_MAX);
    ck_assert_int_eq(rp_par_layout_exactness(&one), RP_PAR_EXACT);
    /* FNV-1a 64 known answers */
    ck_assert(rp_par_fnv1a64("", 0) == 0xcbf29ce484222325ull);
    ck_assert(rp_par_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
}
END_TEST

/* The replica / own fingerprint: equal bits fingerprint equal; one bit flipped anywhere (a
 * full 4-word block, the word tail, an odd float at the end) always changes it, as the
 * lanes' one-to-one steps promise; so do the length and the order of two words. */
START_TEST(fingerprint_tells_one_bit) {
    enum { N = 37 }; /* 18 words and a float: blocks, a word tail and a byte tail */
    float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = (float)i * 0.37f - 3.0f;
    memcpy(y, x, sizeof x);
    const uint64_t h = rp_par_fingerprint(x, N);
    ck_assert(rp_par_fingerprint(y, N) == h);
    for (int i = 0; i < N; i++)
        for (int bit = 0; bit < 32; bit += 7) {
            uint32_t u;
            memcpy(&u, &y[i], 4);
            u ^= 1u << bit;
            memcpy(&y[i], &u, 4);
            ck_assert_msg(rp_par_fingerprint(y, N) != h, "float %d bit %d", i, bit);
            y[i] = x[i];
        }
    ck_assert(rp_par_fingerprint(x, N - 1) != h);
    y[0] = x[2], y[1] = x[3], y[2] = x[0], y[3] = x[1]; /* words 0 and 1 swapped */
    ck_assert(rp_par_fingerprint(y, N) != h);
}
END_TEST

/* The degrees' texts the messages and labels are built from: the table's fields in its
 * order, the values likewise, the names in xDiT's order, the tags of the degrees above 1. */
START_TEST(strategy_texts) {
    const rp_par_degrees d = {.dp = 2, .cfg = 1, .pipefusion = 3, .ulysses = 4, .ring = 1, .patch = 1};
    char buf[160];
    rp_par_fields_text(" x ", buf, sizeof buf);
    ck_assert_str_eq(buf, "dp x cfg_parallel x ulysses x ring x pipefusion x patch");
    rp_par_values_text(&d, "x", buf, sizeof buf);
    ck_assert_str_eq(buf, "2x1x4x1x3x1");
    rp_par_named_text(&d, "=", " ", buf, sizeof buf);
    ck_assert_str_eq(buf, "dp=2 cfg=1 pipefusion=3 ulysses=4 ring=1 patch=1");
    rp_par_named_text(&d, " ", " x ", buf, sizeof buf); /* rp_par_init's world message */
    ck_assert_str_eq(buf, "dp 2 x cfg 1 x pipefusion 3 x ulysses 4 x ring 1 x patch 1");
    rp_par_tags_text(&d, buf, sizeof buf);
    ck_assert_str_eq(buf, "dp2 u4 pf3");
    const rp_par_degrees one = {1, 1, 1, 1, 1, 1};
    rp_par_tags_text(&one, buf, sizeof buf);
    ck_assert_str_eq(buf, "1");
    rp_par_named_text(&d, "=", " ", buf, 8); /* truncated, terminated */
    ck_assert_str_eq(buf, "dp=2 cf");
}
END_TEST

/* ---- models in memory ------------------------------------------------------------------ */

typedef struct model_run {
    rp_family fam;
    rp_dit *dit;
    rp_sd3 *sd3;
    rp_flux *flux;
    int B, C, H, W, L, Dctx, Dpool;
    float *x, *t, *g, *ctx, *pooled; /* inputs */
    int *y;
} model_run;

static void model_open(model_run *m, const char *preset) {
    memset(m, 0, sizeof *m);
    rp_error err = {0};
    ck_assert_int_eq(rp_model_family(preset, &m->fam, &err), RP_OK);
    rp_param_list l = {0};
    ck_assert_int_eq(rp_model_param_specs(preset, 0, &l, &err), RP_OK);
    rp_st_file *f = NULL;
    ck_assert_int_eq(rp_st_synthetic(&l, 7, preset, &f, &err), RP_OK);
    m->B = 2;
    if (m->fam == RP_FAMILY_DIT) {
        rp_dit_config c;
        ck_assert_int_eq(rp_dit_preset(preset, &c, &err), RP_OK);
        ck_assert_int_eq(rp_dit_load(&c, f, &m->dit, &err), RP_OK);
        m->C = c.in_channels;
        m->H = m->W = c.input_size;
    } else if (m->fam == RP_FAMILY_SD3) {
        rp_sd3_config c;
        ck_assert_int_eq(rp_sd3_preset(preset, &c, &err), RP_OK);
        ck_assert_int_eq(rp_sd3_load(&c, f, &m->sd3, &err), RP_OK);
        m->C = c.in_channels;
        m->H = m->W = c.sample_size;
        m->L = 8;
        m->Dctx = c.joint_attention_dim;
        m->Dpool = c.pooled_projection_dim;
        m->ctx = malloc(sizeof(float) * m->B * m->L * c.joint_attention_dim);
        m->pooled = malloc(sizeof(float) * m->B * c.pooled_projection_dim);
        rp_randn(m->ctx, (size_t)m->B * m->L * c.joint_attention_dim, 3, 0, 0);
        rp_randn(m->pooled, (size_t)m->B * c.pooled_projection_dim, 4, 0, 0);
    } else {
        rp_flux_config c;
        ck_assert_int_eq(rp_flux_preset(preset, &c, &err), RP_OK);
        ck_assert_int_eq(rp_flux_load(&c, f, &m->flux, &err), RP_OK);
        m->C = c.in_channels;
        m->H = 8;
        m->W = 16; /* not square: the RoPE rows and columns differ */
        m->L = 8;
        m->Dctx = c.joint_attention_dim;
        m->Dpool = c.pooled_dim;
        m->ctx = malloc(sizeof(float) * m->B * m->L * c.joint_attention_dim);
        m->pooled = malloc(sizeof(float) * m->B * c.pooled_dim);
        rp_randn(m->ctx, (size_t)m->B * m->L * c.joint_attention_dim, 3, 0, 0);
        rp_randn(m->pooled, (size_t)m->B * c.pooled_dim, 4, 0, 0);
    }
    rp_st_close(f);
    rp_params_free(&l);
    const size_t n = (size_t)m->B * m->C * m->H * m->W;
    m->x = malloc(sizeof(float) * n);
    rp_randn(m->x, n, 1, 0, 0);
    m->t = malloc(sizeof(float) * m->B);
    m->g = malloc(sizeof(float) * m->B);
    m->y = malloc(sizeof(int) * m->B);
    for (int b = 0; b < m->B; b++) {
        m->t[b] = m->fam == RP_FAMILY_FLUX ? 0.7f : 500.0f + 100.0f * b;
        m->g[b] = 3.5f;
        m->y[b] = b == 0 ? 207 : 1000; /* a class and the null class */
    }
}

static void model_close(model_run *m) {
    rp_dit_free(m->dit);
    rp_sd3_free(m->sd3);
    rp_flux_free(m->flux);
    free(m->x); free(m->t); free(m->g); free(m->ctx); free(m->pooled); free(m->y);
}

static size_t out_floats(const model_run *m) {
    const int Cout = m->fam == RP_FAMILY_DIT ? 2 * m->C : m->C;
    return (size_t)m->B * Cout * m->H * m->W;
}

static rp_status forward(const model_run *m, const rp_ctx *ctx, float *out, rp_error *err) {
    if (m->fam == RP_FAMILY_DIT) return rp_dit_forward(m->dit, ctx, out, m->x, m->t, m->y, m->B, err);
    if (m->fam == RP_FAMILY_SD3)
        return rp_sd3_forward(m->sd3, ctx, out, m->x, m->t, m->ctx, NULL, m->pooled, m->B, m->L, m->H, m->W, err);
    return rp_flux_forward(m->flux, ctx, out, m->x, m->t, m->g, m->ctx, NULL, m->pooled, m->B, m->H, m->W, m->L,
                           err);
}

/* A parallel context of one rank over the self comm (*self: free with rp_comm_destroy after
 * rp_par_free). */
static void par_world_one(rp_parallel *par, rp_comm **self) {
    rp_error err = {0};
    rp_comm_opts co = {.kind = RP_COMM_SELF, .rank = 0, .world = 1};
    *self = NULL;
    ck_assert_int_eq(rp_comm_create(&co, self, &err), RP_OK);
    const rp_par_degrees one = {1, 1, 1, 1, 1, 1};
    ck_assert_int_eq(rp_par_init(par, *self, &one, RP_INJECT_NONE, &err), RP_OK);
}

/* Two traces record the same layers with the same bits. */
static void same_trace(const rp_trace *a, const rp_trace *b) {
    ck_assert_int_eq(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        ck_assert_str_eq(a->recs[i].name, b->recs[i].name);
        ck_assert(a->recs[i].numel == b->recs[i].numel && a->recs[i].l2 == b->recs[i].l2 &&
                  a->recs[i].maxabs == b->recs[i].maxabs && a->recs[i].nsample == b->recs[i].nsample);
        ck_assert(!memcmp(a->recs[i].sample, b->recs[i].sample, sizeof(float) * a->recs[i].nsample));
    }
}

/* sd3.5-medium-tiny: MMDiT-X, whose attn2 goes through the same parallel entry points */
static const char *const PRESETS[] = {"dit-tiny", "sd3-tiny", "flux-tiny", "sd3.5-medium-tiny"};
#define N_PRESETS (int)(sizeof PRESETS / sizeof *PRESETS)

/* A world of one: the parallel context must not change a bit, output or trace (loops
 * N_PRESETS .. 2 N_PRESETS - 1: under numerics invariant, whose attention is the canonical
 * one on both sides). */
START_TEST(world_one_is_the_plain_path) {
    model_run m;
    model_open(&m, PRESETS[_i % N_PRESETS]);
    rp_error err = {0};
    rp_comm *self = NULL;
    rp_parallel par;
    par_world_one(&par, &self);
    ck_assert(par.sp.size == 1 && par.sp.comm == NULL && par.replica.size == 1);
    const size_t n = out_floats(&m);
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    rp_trace ta, tb;
    rp_trace_init(&ta);
    rp_trace_init(&tb);
    rp_ctx ctx = rp_ctx_default();
    if (_i >= N_PRESETS) ctx.numerics = RP_NUMERICS_INVARIANT;
    ctx.trace = &ta;
    ck_assert_msg(forward(&m, &ctx, a, &err) == RP_OK, "%s", err.msg);
    ctx.trace = &tb;
    ctx.par = &par;
    int rows[2] = {0, 1};
    rp_par_set_trace_rows(&par, rows, 2, 2);
    ck_assert_msg(forward(&m, &ctx, b, &err) == RP_OK, "%s", err.msg);
    ck_assert(!memcmp(a, b, sizeof(float) * n));
    same_trace(&ta, &tb);
    rp_trace_free(&ta);
    rp_trace_free(&tb);
    free(a);
    free(b);
    rp_par_free(&par);
    rp_comm_destroy(self);
    model_close(&m);
}
END_TEST

/* m's item b alone: a view of its inputs (owns nothing; not for model_close). */
static model_run item_view(const model_run *m, int b) {
    model_run r = *m;
    r.B = 1;
    r.x = m->x + (size_t)b * m->C * m->H * m->W;
    r.t = m->t + b;
    r.g = m->g + b;
    r.y = m->y + b;
    if (m->ctx) r.ctx = m->ctx + (size_t)b * m->L * m->Dctx;
    if (m->pooled) r.pooled = m->pooled + (size_t)b * m->Dpool;
    return r;
}

/* One evaluation as one forward per item (a per-item batch) with the trace held open
 * (rp_par_trace_hold), each item's row placed where the joint forward has it: under
 * invariant numerics, where an item's rows are the same bits in a batch of any size, the
 * trace is the joint forward's bit for bit, and so are the outputs. A held forward that
 * reaches other trace points than the first (here: the other family's model) is an error
 * at its end, not a silently mixed record. */
START_TEST(held_per_item_trace_is_the_joint_trace) {
    model_run m;
    model_open(&m, PRESETS[_i]);
    rp_error err = {0};
    rp_comm *self = NULL;
    rp_parallel par;
    par_world_one(&par, &self);
    const size_t n = out_floats(&m), per = n / (size_t)m.B;
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    rp_trace ta, tb;
    rp_trace_init(&ta);
    rp_trace_init(&tb);
    rp_ctx ctx = rp_ctx_default();
    ctx.numerics = RP_NUMERICS_INVARIANT;
    ctx.par = &par;
    ctx.trace = &ta;
    int rows[2] = {0, 1};
    rp_par_set_trace_rows(&par, rows, 2, 2);
    ck_assert_msg(forward(&m, &ctx, a, &err) == RP_OK, "%s", err.msg);
    ctx.trace = &tb;
    rp_par_trace_hold(&par);
    for (int i = 0; i < m.B; i++) { /* the items in reverse: the rows place them, not the order */
        const int it = m.B - 1 - i;
        const model_run one_item = item_view(&m, it);
        rp_par_set_trace_rows(&par, &rows[it], 1, 2);
        ck_assert_msg(forward(&one_item, &ctx, b + (size_t)it * per, &err) == RP_OK, "%s", err.msg);
    }
    rp_par_trace_release(&ctx);
    ck_assert_int_eq(par.st, RP_OK);
    ck_assert(!memcmp(a, b, sizeof(float) * n));
    same_trace(&ta, &tb);
    ck_assert_int_eq(par.trace_incomplete, 0);
    /* a held forward with other trace points: the first forward's model, then another's */
    model_run other;
    model_open(&other, PRESETS[(_i + 1) % N_PRESETS]);
    rp_trace tc;
    rp_trace_init(&tc);
    ctx.trace = &tc;
    rp_par_trace_hold(&par);
    const model_run first = item_view(&m, 0), second = item_view(&other, 1);
    rp_par_set_trace_rows(&par, &rows[0], 1, 2);
    ck_assert_msg(forward(&first, &ctx, a, &err) == RP_OK, "%s", err.msg);
    rp_par_set_trace_rows(&par, &rows[1], 1, 2);
    float *c = malloc(sizeof(float) * out_floats(&other));
    ck_assert(forward(&second, &ctx, c, &err) != RP_OK);
    ck_assert_msg(strstr(err.msg, "held forward") != NULL, "%s", err.msg);
    rp_par_trace_release(&ctx);
    free(c);
    model_close(&other);
    rp_trace_free(&ta);
    rp_trace_free(&tb);
    rp_trace_free(&tc);
    free(a);
    free(b);
    rp_par_free(&par);
    rp_comm_destroy(self);
    model_close(&m);
}
END_TEST

/* The hooks a pipeline strategy uses: stage 1 runs blocks [0, k) and hands its residual
 * stream(s) over at LEAVE; stage 2 runs [k, n) from them at ENTER. A pass-through K/V hook
 * in both. The result must be the plain forward's, bit for bit. */
typedef struct stage_state {
    int a, b;             /* this call's block range */
    float *x, *c;         /* the handed-over streams */
    size_t nx, nc;
    int kv_calls, enter_calls, leave_calls;
} stage_state;

static void hook_range(void *u, int n, int *a, int *b) {
    stage_state *s = u;
    *a = s->a;
    *b = s->b < 0 ? n : s->b;
}

static rp_status hook_stream(void *u, int where, int block, float *x, size_t rows_x, float *c, size_t rows_c, int W,
                             rp_error *err) {
    stage_state *s = u;
    const size_t nx = rows_x * W, nc = rows_c * W;
    if (where == RP_PAR_STREAM_LEAVE) {
        s->leave_calls++;
        s->x = realloc(s->x, sizeof(float) * nx);
        memcpy(s->x, x, sizeof(float) * nx);
        s->nx = nx;
        if (c) {
            s->c = realloc(s->c, sizeof(float) * nc);
            memcpy(s->c, c, sizeof(float) * nc);
            s->nc = nc;
        }
    } else if (s->a > 0) { /* a later stage: start from what the earlier one left */
        s->enter_calls++;
        if (s->nx != nx || (c && s->nc != nc)) return RP_FAIL(err, RP_ERR_SHAPE, "stream sizes differ at block %d", block);
        memcpy(x, s->x, sizeof(float) * nx);
        if (c) memcpy(c, s->c, sizeof(float) * nc);
    }
    return RP_OK;
}

static rp_status hook_kv(void *u, int layer, const float *k, const float *v, int B, int H, int Tk, int D,
                         const float **ko, const float **vo, int *tko, rp_error *err) {
    stage_state *s = u;
    s->kv_calls++;
    *ko = k; /* "replace" by the same keys: the cache path with a fresh cache */
    *vo = v;
    *tko = Tk;
    return RP_OK;
}

START_TEST(pipeline_hooks_are_bitwise_the_plain_forward) {
    model_run m;
    model_open(&m, PRESETS[_i]);
    rp_error err = {0};
    rp_comm *self = NULL;
    rp_parallel par;
    par_world_one(&par, &self);
    const size_t n = out_floats(&m);
    float *plain = malloc(sizeof(float) * n), *staged = malloc(sizeof(float) * n);
    rp_ctx ctx = rp_ctx_default();
    ck_assert_int_eq(forward(&m, &ctx, plain, &err), RP_OK);
    stage_state s = {0};
    par.hooks = (rp_par_hooks){&s, hook_range, hook_stream, hook_kv};
    ctx.par = &par;
    const int split = 1; /* stage 1: block 0; stage 2: the rest */
    for (size_t i = 0; i < n; i++) staged[i] = -7.0f;
    s.a = 0;
    s.b = split;
    ck_assert_msg(forward(&m, &ctx, staged, &err) == RP_OK, "%s", err.msg);
    ck_assert(staged[0] == -7.0f && staged[n - 1] == -7.0f); /* stage 1 leaves the output alone */
    s.a = split;
    s.b = -1;
    ck_assert_msg(forward(&m, &ctx, staged, &err) == RP_OK, "%s", err.msg);
    ck_assert(!memcmp(plain, staged, sizeof(float) * n));
    ck_assert_int_eq(s.enter_calls, 1);
    ck_assert_int_eq(s.leave_calls, 2);
    ck_assert_int_gt(s.kv_calls, 1);
    free(s.x);
    free(s.c);
    free(plain);
    free(staged);
    rp_par_free(&par);
    rp_comm_destroy(self);
    model_close(&m);
}
END_TEST

/* ---- forked Gloo ranks ------------------------------------------------------------------ */

typedef int (*rank_fn)(int rank, int world, rp_comm *c, const void *arg);

/* Forks world ranks, each with a Gloo communicator on a fresh FileStore; each runs fn and
 * exits with its result (0 pass). Returns how many ranks failed. */
static int spawn(int world, rank_fn fn, const void *arg) {
    char dir[] = "/tmp/test-parallel-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    pid_t pids[16];
    ck_assert_int_le(world, 16);
    fflush(NULL);
    for (int r = 0; r < world; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0) {
            alarm(120);
            rp_error err = {0};
            rp_comm *c = NULL;
            rp_comm_opts o = {.kind = RP_COMM_GLOO, .rank = r, .world = world, .store_dir = dir,
                              .hostname = "127.0.0.1", .timeout_s = 60};
            if (rp_comm_create(&o, &c, &err) != RP_OK) {
                fprintf(stderr, "rank %d: %s\n", r, err.msg);
                _exit(2);
            }
            const int rc = fn(r, world, c, arg);
            rp_comm_destroy(c);
            fflush(NULL);
            _exit(rc);
        }
    }
    int failed = 0;
    for (int r = 0; r < world; r++) {
        int st = 0;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return failed;
}

/* ---- sequence-parallel attention ---------------------------------------------------------- */

typedef struct sp_case {
    int u, R;             /* ulysses, ring */
    int Ttxt, Timg;       /* global sharded segments: FLUX-like [text; image] (Ttxt > 0) or one (Ttxt 0) */
    int Trep;             /* replicated tokens (SD3-like) */
    rp_inject_id fault;
    int invariant;        /* 1: numerics invariant (bitwise the single process); 3: the same in bf16;
                             2: invariant with shards that split a canonical block (ring > 8):
                             RP_ERR_INVALID naming the segment */
    int threads;          /* the ranks' ctx->threads (0: the default); the reference runs on one */
} sp_case;

enum { SB = 2, SH = 4, SD = 8 };

/* Global q, k, v (SB, SH, Tglob, SD), Tglob = Ttxt + Timg + Trep, in global token order. */
static void sp_inputs(const sp_case *sc, float **q, float **k, float **v) {
    const size_t n = (size_t)SB * SH * (sc->Ttxt + sc->Timg + sc->Trep) * SD;
    *q = malloc(sizeof(float) * n);
    *k = malloc(sizeof(float) * n);
    *v = malloc(sizeof(float) * n);
    rp_randn(*q, n, 11, 0, 0);
    rp_randn(*k, n, 12, 0, 0);
    rp_randn(*v, n, 13, 0, 0);
    for (size_t i = 0; i < n; i++) (*q)[i] *= 1.5f; /* scores of a few units: the softmax is not flat */
}

/* Global token of this rank's local token j (local order: [text shard, image shard, replicated]). */
static int sp_global(const sp_case *sc, int sp_rank, int sp, int j) {
    const int lt = sc->Ttxt / sp, li = sc->Timg / sp;
    if (j < lt) return sp_rank * lt + j;
    if (j < lt + li) return sc->Ttxt + sp_rank * li + (j - lt);
    return sc->Ttxt + sc->Timg + (j - lt - li);
}

/* Attention in float64 for one (b, h) query row. */
static void attn_f64(const float *q, const float *k, const float *v, int T, int D, double scale, double *out) {
    double *s = malloc(sizeof(double) * T), m = -INFINITY, l = 0;
    for (int j = 0; j < T; j++) {
        double d = 0;
        for (int e = 0; e < D; e++) d += (double)q[e] * k[(size_t)j * D + e];
        s[j] = d * scale;
        if (s[j] > m) m = s[j];
    }
    for (int e = 0; e < D; e++) out[e] = 0;
    for (int j = 0; j < T; j++) {
        const double p = exp(s[j] - m);
        l += p;
        for (int e = 0; e < D; e++) out[e] += p * v[(size_t)j * D + e];
    }
    for (int e = 0; e < D; e++) out[e] /= l;
    free(s);
}

static int sp_rank_main(int rank, int world, rp_comm *c, const void *arg) {
    const sp_case *sc = arg;
    rp_error err = {0};
    rp_parallel par;
    const rp_par_degrees d = {1, 1, 1, sc->u, sc->R, 1};
    if (rp_par_init(&par, c, &d, sc->fault, &err) != RP_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        return 1;
    }
    const int sp = world, Tg = sc->Ttxt + sc->Timg + sc->Trep;
    const int Tl = sc->Ttxt / sp + sc->Timg / sp + sc->Trep;
    float *q, *k, *v;
    sp_inputs(sc, &q, &k, &v);
    const float scale = 1.0f / sqrtf((float)SD);
    /* the single process: math attention over the whole sequence (invariant: the model's call
     * without a layout, i.e. the canonical attention over the segments [text | image | replicated]) */
    float *ref = malloc(sizeof(float) * SB * SH * Tg * SD);
    rp_ctx ctx = rp_ctx_default();
    if (sc->invariant) {
        ctx.numerics = RP_NUMERICS_INVARIANT;
        if (sc->invariant == 3) ctx.precision = RP_PREC_BF16;
        if (rp_par_attention(&ctx, 0, ref, q, k, v, NULL, SB, SH, Tg, sc->Ttxt, sc->Trep, SD, scale, &err) != RP_OK) {
            fprintf(stderr, "rank %d: single process: %s\n", rank, err.msg);
            return 1;
        }
    } else
        rp_attention(&ctx, ref, q, k, v, NULL, SB, SH, Tg, Tg, SD, scale, &err);
    /* this rank's shard */
    float *lq = malloc(sizeof(float) * SB * SH * Tl * SD), *lk = malloc(sizeof(float) * SB * SH * Tl * SD);
    float *lv = malloc(sizeof(float) * SB * SH * Tl * SD), *lo = malloc(sizeof(float) * SB * SH * Tl * SD);
    for (int bh = 0; bh < SB * SH; bh++)
        for (int j = 0; j < Tl; j++) {
            const size_t g = ((size_t)bh * Tg + sp_global(sc, par.sp.rank, sp, j)) * SD, l = ((size_t)bh * Tl + j) * SD;
            memcpy(lq + l, q + g, sizeof(float) * SD);
            memcpy(lk + l, k + g, sizeof(float) * SD);
            memcpy(lv + l, v + g, sizeof(float) * SD);
        }
    ctx.par = &par;
    if (sc->threads) ctx.threads = sc->threads;
    /* the default ring checks itself: its output recomputed from the shards it received */
    const int own = !sc->invariant && sc->R > 1;
    par.check_own = own;
    par.fwd_eval = 0;
    const rp_status st = rp_par_attention(&ctx, 0, lo, lq, lk, lv, NULL, SB, SH, Tl, sc->Ttxt / sp, sc->Trep, SD, scale,
                                          &err);
    if (sc->invariant == 2) { /* the shards split a canonical block: refused, naming the numbers */
        const int ok = st == RP_ERR_INVALID && strstr(err.msg, "canonical block") && strstr(err.msg, "image");
        if (!ok) fprintf(stderr, "rank %d: expected the canonical-block error, got %d: %s\n", rank, (int)st, err.msg);
        free(q); free(k); free(v); free(ref); free(lq); free(lk); free(lv); free(lo);
        rp_par_free(&par);
        return !ok;
    }
    if (st != RP_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        return 1;
    }
    /* the own check: one pair per rank, equal unless a fault acts in the ring's merge */
    int bad = 0;
    if (own) {
        rp_par_own_flush(&ctx, "attn");
        rp_par_replica_report rep;
        if (rp_par_replica_collect(&par, "test/cpu", &rep, &err) != RP_OK) {
            fprintf(stderr, "rank %d: replica collect: %s\n", rank, err.msg);
            bad = 1;
        }
        const int merge_fault = sc->fault == RP_INJECT_RING_NO_RESCALE || sc->fault == RP_INJECT_RING_LSE_SKEW;
        /* one own pair per rank, and the attention's scale each rank > 0 noted as rank 0 did
         * (the WORLD replica: rp_par_attention) */
        if (!bad && rank == 0 && (rep.checked != 2 * world - 1 || rep.unchecked[0])) {
            fprintf(stderr, "own check: %ld pairs checked over %d ranks (%s)\n", rep.checked, world, rep.unchecked);
            bad = 1;
        } else if (!bad && rank == 0 && merge_fault != (rep.first.eval == 0 && rep.first.group == RP_PAR_RG_OWN)) {
            fprintf(stderr, "own check: fault %s, first difference at eval %d group %d (%s)\n",
                    rp_inject_name(sc->fault), rep.first.eval, (int)rep.first.group, rep.first.name);
            bad = 1;
        }
    }
    /* the replicated tokens' outputs must be identical copies on every rank */
    if (sc->Trep) {
        const size_t nr = (size_t)SB * SH * sc->Trep * SD;
        float *mine = malloc(sizeof(float) * nr), *all = malloc(sizeof(float) * nr * world);
        for (int bh = 0; bh < SB * SH; bh++)
            memcpy(mine + (size_t)bh * sc->Trep * SD, lo + ((size_t)bh * Tl + Tl - sc->Trep) * SD,
                   sizeof(float) * sc->Trep * SD);
        if (c->ops->allgather(c, mine, nr, all, &err) != RP_OK) bad = 1;
        for (int r = 1; r < world && !bad; r++)
            if (memcmp(all, all + (size_t)r * nr, sizeof(float) * nr)) {
                fprintf(stderr, "rank %d: rank %d's replicated outputs differ from rank 0's\n", rank, r);
                bad = 1;
            }
        free(mine);
        free(all);
    }
    /* errors against float64: this rank's rows, and the single process's same rows */
    double e_par = 0, e_ref = 0, d_ref = 0, mx = 0, o64[SD];
    for (int bh = 0; bh < SB * SH; bh++)
        for (int j = 0; j < Tl; j++) {
            const int g = sp_global(sc, par.sp.rank, sp, j);
            attn_f64(q + ((size_t)bh * Tg + g) * SD, k + (size_t)bh * Tg * SD, v + (size_t)bh * Tg * SD, Tg, SD, scale,
                     o64);
            for (int e = 0; e < SD; e++) {
                const float p = lo[((size_t)bh * Tl + j) * SD + e], r = ref[((size_t)bh * Tg + g) * SD + e];
                e_par = fmax(e_par, fabs(p - o64[e]));
                e_ref = fmax(e_ref, fabs(r - o64[e]));
                d_ref = fmax(d_ref, fabs((double)p - r));
                mx = fmax(mx, fabs(o64[e]));
            }
        }
    /* the bound: as accurate as the single process within 4x, floored at 8 ulp of the values */
    const double bound = fmax(4 * e_ref, 8 * mx * 0x1p-24);
    if (sc->fault == RP_INJECT_NONE) {
        if (sc->invariant && d_ref != 0.0) { /* the contract of numerics invariant */
            fprintf(stderr, "rank %d (u %d, R %d, invariant): not bitwise the single process (max diff %g)\n", rank,
                    sc->u, sc->R, d_ref);
            bad = 1;
        }
        if (sc->R == 1 && d_ref != 0.0) { /* Ulysses: the same GEMMs on the same rows, keys in the same order */
            fprintf(stderr, "rank %d (u %d): Ulysses is not bitwise the single process (max diff %g)\n", rank, sc->u,
                    d_ref);
            bad = 1;
        }
        if (!(e_par <= bound)) {
            fprintf(stderr, "rank %d (u %d, R %d): error vs float64 %g > bound %g (single process %g)\n", rank, sc->u,
                    sc->R, e_par, bound, e_ref);
            bad = 1;
        }
    } else if (sc->fault == RP_INJECT_RING_LSE_SKEW) { /* a few roundings: only the own check tells */
        if (!(d_ref > 0)) {
            fprintf(stderr, "rank %d: fault %s changes nothing\n", rank, rp_inject_name(sc->fault));
            bad = 1;
        }
    } else if (!(d_ref > 1e3 * bound) && (rank == 0 || sc->fault != RP_INJECT_ATTN_SCALE || rank == world - 1)) {
        fprintf(stderr, "rank %d: fault %s changes the output by %g only\n", rank, rp_inject_name(sc->fault), d_ref);
        bad = 1;
    }
    if (rank == 0)
        printf("  u %d R %d text %d image %d replicated %d %-18s%s: |par - f64| %.3g, |single - f64| %.3g, |par - "
               "single| %.3g\n", sc->u, sc->R, sc->Ttxt, sc->Timg, sc->Trep, rp_inject_name(sc->fault),
               sc->invariant == 3 ? " invariant bf16" : sc->invariant ? " invariant" : "", e_par, e_ref, d_ref);
    free(q); free(k); free(v); free(ref); free(lq); free(lk); free(lv); free(lo);
    rp_par_free(&par);
    return bad;
}

static const sp_case SP_CASES[] = {
    /* DiT-like: one sharded sequence */
    {2, 1, 0, 48, 0, RP_INJECT_NONE, 0, 0}, {4, 1, 0, 48, 0, RP_INJECT_NONE, 0, 0}, {1, 2, 0, 48, 0, RP_INJECT_NONE, 0, 0},
    {1, 4, 0, 48, 0, RP_INJECT_NONE, 0, 0}, {2, 2, 0, 48, 0, RP_INJECT_NONE, 0, 0},
    /* FLUX-like: text and image sharded separately */
    {2, 1, 16, 32, 0, RP_INJECT_NONE, 0, 0}, {4, 1, 16, 32, 0, RP_INJECT_NONE, 0, 0}, {1, 2, 16, 32, 0, RP_INJECT_NONE, 0, 0},
    {2, 2, 16, 32, 0, RP_INJECT_NONE, 0, 0},
    /* SD3-like: image sharded, text replicated */
    {2, 1, 0, 32, 12, RP_INJECT_NONE, 0, 0}, {1, 2, 0, 32, 12, RP_INJECT_NONE, 0, 0}, {1, 4, 0, 32, 12, RP_INJECT_NONE, 0, 0},
    {2, 2, 0, 32, 12, RP_INJECT_NONE, 0, 0},
    /* the faults that act inside attention */
    {2, 1, 0, 48, 0, RP_INJECT_ULYSSES_HEAD_ORDER, 0, 0}, {1, 2, 0, 48, 0, RP_INJECT_RING_NO_RESCALE, 0, 0},
    {1, 2, 0, 32, 12, RP_INJECT_RING_NO_RESCALE, 0, 0}, {2, 1, 0, 48, 0, RP_INJECT_ATTN_SCALE, 0, 0},
    {1, 2, 0, 48, 0, RP_INJECT_RING_LSE_SKEW, 0, 0}, {1, 4, 0, 32, 12, RP_INJECT_RING_LSE_SKEW, 0, 0},
    {2, 2, 16, 32, 0, RP_INJECT_RING_LSE_SKEW, 0, 0},
    /* the default ring and its own check on 3 threads, with a replicated segment */
    {1, 2, 0, 1024, 12, RP_INJECT_NONE, 0, 3},
    /* numerics invariant: bitwise the single process at every degree (canonical blocks: 64 keys
     * -> Bk 8, 48 -> 2, 32 -> 4, 24 and 12 -> 1) */
    {2, 1, 0, 64, 0, RP_INJECT_NONE, 1, 0}, {1, 2, 0, 64, 0, RP_INJECT_NONE, 1, 0}, {1, 8, 0, 64, 0, RP_INJECT_NONE, 1, 0},
    {2, 2, 0, 64, 0, RP_INJECT_NONE, 1, 0}, {1, 3, 0, 48, 0, RP_INJECT_NONE, 1, 0}, {1, 6, 0, 48, 0, RP_INJECT_NONE, 1, 0},
    {2, 1, 32, 64, 0, RP_INJECT_NONE, 1, 0}, {1, 4, 32, 64, 0, RP_INJECT_NONE, 1, 0}, {1, 8, 32, 64, 0, RP_INJECT_NONE, 1, 0},
    {2, 2, 32, 64, 0, RP_INJECT_NONE, 1, 0}, {1, 3, 24, 48, 0, RP_INJECT_NONE, 1, 0},
    {2, 1, 0, 64, 12, RP_INJECT_NONE, 1, 0}, {1, 2, 0, 64, 12, RP_INJECT_NONE, 1, 0}, {1, 4, 0, 64, 12, RP_INJECT_NONE, 1, 0},
    {2, 2, 0, 64, 12, RP_INJECT_NONE, 1, 0}, {1, 2, 0, 256, 12, RP_INJECT_NONE, 1, 0}, /* 140 rows: 3 tiles of the fold */
    {1, 2, 0, 64, 0, RP_INJECT_RING_NO_RESCALE, 1, 0}, {1, 2, 0, 64, 12, RP_INJECT_RING_NO_RESCALE, 1, 0},
    {2, 2, 32, 64, 0, RP_INJECT_RING_NO_RESCALE, 1, 0}, {2, 1, 0, 64, 0, RP_INJECT_ATTN_SCALE, 1, 0},
    {2, 1, 0, 64, 0, RP_INJECT_ULYSSES_HEAD_ORDER, 1, 0},
    /* ... in bf16 */
    {1, 4, 0, 64, 0, RP_INJECT_NONE, 3, 0}, {2, 1, 32, 64, 0, RP_INJECT_NONE, 3, 0}, {2, 2, 32, 64, 0, RP_INJECT_NONE, 3, 0},
    {1, 2, 0, 64, 12, RP_INJECT_NONE, 3, 0},
    /* ring 16 over 16 image keys: shards of 1 key, Bk(16) = 2 */
    {1, 16, 0, 16, 0, RP_INJECT_NONE, 2, 0},
    /* the ring's canonical partials and fold shared over 3 threads (calls large enough to be
     * shared: rp_attn_canon_threads), fp32 and bf16, with a replicated segment: the bits of
     * the single process on one thread */
    {1, 2, 0, 1024, 12, RP_INJECT_NONE, 1, 3}, {2, 2, 512, 1024, 0, RP_INJECT_NONE, 3, 3},
};

START_TEST(sp_attention_ranks) {
    if (!rp_comm_available(RP_COMM_GLOO)) return; /* no Gloo in this build: nothing to fork */
    const sp_case *sc = &SP_CASES[_i];
    const int failed = spawn(sc->u * sc->R, sp_rank_main, sc);
    ck_assert_msg(failed == 0, "%d of %d ranks failed (u %d, R %d, fault %s)", failed, sc->u * sc->R, sc->u, sc->R,
                  rp_inject_name(sc->fault));
}
END_TEST

/* ---- dp: items broadcast, verified, split ---------------------------------------------------- */

static const char *const PROMPTS[4] = {"a red fox", "", "na\xc3\xafve caf\xc3\xa9", "a lighthouse"};

static int dp_rank_main(int rank, int world, rp_comm *c, const void *arg) {
    const int scenario = *(const int *)arg; /* 0 agree, 1 rank 1's own list differs, 2 dp-rank-layout */
    rp_error err = {0};
    rp_parallel par;
    const rp_par_degrees d = {world, 1, 1, 1, 1, 1};
    if (rp_par_init(&par, c, &d, scenario == 2 ? RP_INJECT_DP_RANK_LAYOUT : RP_INJECT_NONE, &err) != RP_OK) return 1;
    rp_gen_item mine[4];
    for (int i = 0; i < 4; i++)
        mine[i] = (rp_gen_item){.seed = 100u + (uint64_t)i, .global_index = (uint64_t)i, .class_id = 0,
                                .prompt = PROMPTS[i]};
    if (scenario == 1 && rank == 1) mine[2].prompt = "naive cafe"; /* what xDiT's batch bug looked like */
    rp_gen_item *all = NULL, local[4];
    char *strings = NULL;
    int n = 0, first = -1, count = 0, bad = 0;
    const rp_status st = rp_par_dp_share_items(&par, mine, 4, &all, &n, &strings, &err);
    if (scenario == 1) {
        /* every rank fails, naming rank 1 */
        bad = !(st == RP_ERR_INVALID && strstr(err.msg, "rank 1 (differs from its own case)"));
        if (bad) fprintf(stderr, "rank %d: expected the mismatch naming rank 1, got %d: %s\n", rank, st, err.msg);
        rp_par_free(&par);
        return bad;
    }
    if (st != RP_OK || n != 4) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        return 1;
    }
    for (int i = 0; i < 4; i++)
        bad |= all[i].seed != mine[i].seed || strcmp(all[i].prompt, mine[i].prompt) || all[i].global_index != (uint64_t)i;
    if (rp_par_dp_select(&par, all, n, local, &first, &count, &err) != RP_OK) bad = 1;
    const int want_first = scenario == 2 ? 0 : rank * (4 / world); /* rank // dp = 0 for world 2 */
    bad |= first != want_first || count != 4 / world || par.item_first != want_first || par.n_items_total != 4;
    for (int i = 0; i < count && !bad; i++)
        bad |= local[i].global_index != (uint64_t)(want_first + i) || strcmp(local[i].prompt, PROMPTS[want_first + i]);
    if (bad) fprintf(stderr, "rank %d: items wrong (first %d count %d)\n", rank, first, count);
    free(all);
    free(strings);
    rp_par_free(&par);
    return bad;
}

START_TEST(dp_items_are_shared_and_verified) {
    if (!rp_comm_available(RP_COMM_GLOO)) return;
    const int scenario = _i;
    const int failed = spawn(2, dp_rank_main, &scenario);
    ck_assert_msg(failed == 0, "scenario %d: %d ranks failed", scenario, failed);
}
END_TEST

/* ---- the dp gather and its check ------------------------------------------------------- */

/* dp 2 (one rank per group), 2 items each, 3 steps, 5 floats per item, 2x2 images; every
 * value a function of (item, row), so rank 0 knows the whole gathered result:
 *   0  the gather as it is              -> every part the leaders hold, row -1
 *   1  rank 0's stored copy of group 1's trajectory row 2 loses one bit
 *                                       -> row 2, group 1, rank 1
 *   2  group 1's final latents          -> row steps + 1
 *   3  group 1's images                 -> row steps + 2 */
static int gather_rank_main(int rank, int world, rp_comm *c, const void *arg) {
    const int scenario = *(const int *)arg;
    enum { B = 2, N = 3, PER = 5, IMG = 2 * 2 * 3 };
    rp_error err = {0};
    rp_parallel par;
    const rp_par_degrees d = {world, 1, 1, 1, 1, 1};
    if (rp_par_init(&par, c, &d, RP_INJECT_NONE, &err) != RP_OK) return 1;
    par.item_first = rank * B;
    par.n_items_total = world * B;
    float noise[B * PER], lat[B * PER], traj[(N + 1) * B * PER];
    double ts[N] = {3, 2, 1};
    uint8_t rgb[B * IMG];
    for (int s = 0; s <= N; s++)
        for (int b = 0; b < B; b++)
            for (int e = 0; e < PER; e++)
                traj[(s * B + b) * PER + e] = (float)(100 * (rank * B + b) + 10 * s + e);
    memcpy(noise, traj, sizeof noise);
    memcpy(lat, traj + N * B * PER, sizeof lat);
    for (int i = 0; i < B * IMG; i++) rgb[i] = (uint8_t)(rank * 50 + i);
    rp_gen_result local = {.B = B, .C = 1, .h = 1, .w = PER, .steps = N, .noise = noise, .latents = lat,
                           .trajectory = traj, .timesteps = ts, .H = 2, .W = 2, .rgb = rgb};
    rp_gen_result all;
    rp_par_gather_report r;
    int bad = rp_par_dp_gather(&par, &local, world * B, &all, &err) != RP_OK;
    if (!bad && rank == 0) {
        const size_t n = (size_t)world * B;
        if (scenario == 1) all.trajectory[(2 * n + B) * PER + 3] = nextafterf(all.trajectory[(2 * n + B) * PER + 3], 0);
        if (scenario == 2) all.latents[B * PER] += 1.0f;
        if (scenario == 3) all.rgb[B * IMG + 5] ^= 1;
    }
    if (!bad) bad = rp_par_dp_gather_check(&par, &local, &all, &r, &err) != RP_OK;
    static const int ROW[] = {-1, 2, N + 1, N + 2};
    if (!bad && rank == 0)
        bad = r.row != ROW[scenario] || (scenario && (r.group != 1 || r.rank != 1));
    if (!bad && rank != 0) bad = r.row != -1; /* only rank 0 finds anything */
    if (bad) fprintf(stderr, "rank %d scenario %d: row %d group %d rank %d (%s)\n", rank, scenario, r.row, r.group,
                     r.rank, err.msg);
    if (rank == 0) rp_gen_result_free(&all);
    rp_par_free(&par);
    return bad;
}

START_TEST(dp_gather_is_checked) {
    if (!rp_comm_available(RP_COMM_GLOO)) return;
    const int scenario = _i;
    const int failed = spawn(2, gather_rank_main, &scenario);
    ck_assert_msg(failed == 0, "scenario %d: %d ranks failed", scenario, failed);
}
END_TEST

/* ---- the sequence gather's coverage contract --------------------------------------------- */

/* ulysses 3 over T = 12 tokens (B 2, W 2), every value a function of (item, token, column),
 * so every rank knows the gathered result. Each rank says it computed [t0, t0 + n):
 *   0  the shards as cut ([0, 4), [4, 8), [8, 12)) -> the gather, every value in place
 *   1  floor shards of T = 13 on a 13-token call   -> refused: token 12 computed by no rank
 *   2  rank 1 says [8, 12) (rank 2's)              -> refused: a gap at 4..7
 *   3  rank 2 starts one token early, [7, 11)      -> refused: token 7 computed twice
 * (1-3 move no data: the ranges are exchanged first, so the same ranks agree to refuse.) */
typedef struct {
    int T, t0[3], n[3];
    const char *says; /* the refusal's words, NULL: gathered */
} coverage_case;
static const coverage_case COVERAGE_CASES[] = {
    {12, {0, 4, 8}, {4, 4, 4}, NULL},
    {13, {0, 4, 8}, {4, 4, 4}, "tokens 12..12 of [0, 13) were computed by no rank"},
    {12, {0, 8, 8}, {4, 4, 4}, "tokens 4..7 of [0, 12) were computed by no rank"},
    {12, {0, 4, 7}, {4, 4, 4}, "tokens 7..7 of [0, 12) were computed by sequence ranks 1 and 2"},
};

static float coverage_value(int b, int t, int w) { return (float)(1000 * b + 10 * t + w); }

static int coverage_rank_main(int rank, int world, rp_comm *c, const void *arg) {
    const coverage_case *cc = arg;
    enum { B = 2, W = 2 };
    rp_error err = {0};
    rp_parallel par;
    const rp_par_degrees d = {.dp = 1, .cfg = 1, .pipefusion = 1, .ulysses = world, .ring = 1, .patch = 1};
    if (rp_par_init(&par, c, &d, RP_INJECT_NONE, &err) != RP_OK) return 1;
    rp_ctx ctx = rp_ctx_default();
    ctx.par = &par;
    const int pos = par.sp.pos, t0 = cc->t0[pos], n = cc->n[pos];
    float *full = calloc((size_t)B * cc->T * W, sizeof(float)); /* (B, T, W); local: (B, n, W) first */
    for (int b = 0; b < B; b++)
        for (int j = 0; j < n; j++)
            for (int w = 0; w < W; w++) full[((size_t)b * n + j) * W + w] = coverage_value(b, t0 + j, w);
    const rp_status st = rp_par_gather_tokens(&ctx, full, full, B, cc->T, W, t0, n, &err);
    int bad = 0;
    if (!cc->says) {
        bad = st != RP_OK;
        for (int b = 0; b < B && !bad; b++)
            for (int t = 0; t < cc->T && !bad; t++)
                for (int w = 0; w < W && !bad; w++) bad = full[((size_t)b * cc->T + t) * W + w] != coverage_value(b, t, w);
    } else {
        bad = st != RP_ERR_INVALID || !strstr(err.msg, cc->says);
    }
    if (bad) fprintf(stderr, "rank %d: status %d (%s)\n", rank, (int)st, err.msg);
    free(full);
    rp_par_free(&par);
    return bad;
}

START_TEST(sequence_gather_coverage_contract) {
    if (!rp_comm_available(RP_COMM_GLOO)) return;
    const int failed = spawn(3, coverage_rank_main, &COVERAGE_CASES[_i]);
    ck_assert_msg(failed == 0, "case %d: %d ranks failed", _i, failed);
}
END_TEST

/* ---- replica consistency -------------------------------------------------------------- */

/* Scenario s on a (cfg 2, ulysses 2) layout of 4 ranks, every rank noting the same tensors:
 *   0  every copy equal                    -> no difference
 *   1  rank 3 perturbs its guided_output at eval 2 (one bit of one value)
 *                                          -> eval 2, guided_output, ranks (0, 3), replica
 *   2  rank 1 perturbs t_embedder at eval 1 -> eval 1, t_embedder, ranks (0, 1), sp
 *      (rank 2's sp tensors differ from rank 0's by design: another cfg segment, other group)
 *   3  ranks report other kernel sets      -> unchecked, never a difference
 *   4  rank 2 (another cfg segment, its own sp group) feeds another timestep at eval 3,
 *      noted before that evaluation's forward -> eval 3, timestep, ranks (0, 2), world */
static int replica_rank_main(int rank, int world, rp_comm *c, const void *arg) {
    const int s = *(const int *)arg;
    const rp_par_degrees d = {1, 2, 1, 2, 1, 1};
    rp_parallel par;
    rp_error err = {0};
    if (rp_par_init(&par, c, &d, RP_INJECT_NONE, &err) != RP_OK) return 10;
    rp_ctx ctx = rp_ctx_default();
    ctx.par = &par;
    float x[64];
    int bad = 0;
    for (int e = 0; e < 4; e++) {
        float t = 1000.0f - (float)e; /* one value per evaluation on every rank */
        if (s == 4 && rank == 2 && e == 3) t = nextafterf(t, 0.0f);
        rp_par_replica_note_at(&ctx, e, RP_PAR_RG_WORLD, "timestep", &t, 1); /* before eval e's forward */
        par.fwd_eval = e;
        for (int i = 0; i < 64; i++) x[i] = (float)(i + 100 * e + 1000 * par.at.cfg); /* per cfg segment */
        if (s == 2 && rank == 1 && e == 1) x[5] = nextafterf(x[5], INFINITY);
        rp_par_replica_note(&ctx, RP_PAR_RG_SP, "t_embedder", x, 64);
        for (int i = 0; i < 64; i++) x[i] = (float)(i + 100 * e);                     /* combined: all equal */
        if (s == 1 && rank == 3 && e == 2) x[7] = nextafterf(x[7], INFINITY);
        rp_par_replica_note(&ctx, RP_PAR_RG_REPLICA, "guided_output", x, 64);
    }
    rp_par_replica_report rep;
    const char *kern = s == 3 && rank == 2 ? "SkylakeX/cpu" : "Haswell/cpu";
    if (rp_par_replica_collect(&par, kern, &rep, &err) != RP_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        bad = 11;
    } else if (rank == 0) {
        const int want_eval[] = {-1, 2, 1, -1, 3};
        if (rep.first.eval != want_eval[s]) bad = 12;
        if (s == 1 && (strcmp(rep.first.name, "guided_output") || rep.first.rank_a != 0 || rep.first.rank_b != 3 ||
                       rep.first.group != RP_PAR_RG_REPLICA))
            bad = 13;
        if (s == 2 && (strcmp(rep.first.name, "t_embedder") || rep.first.rank_a != 0 || rep.first.rank_b != 1 ||
                       rep.first.group != RP_PAR_RG_SP))
            bad = 14;
        if (s == 4 && (strcmp(rep.first.name, "timestep") || rep.first.rank_a != 0 || rep.first.rank_b != 2 ||
                       rep.first.group != RP_PAR_RG_WORLD))
            bad = 17;
        if (s == 3 && !strstr(rep.unchecked, "different kernels")) bad = 15;
        /* per eval: sp copies of ranks 1, 3 against 0, 2; replica and world copies of 1, 2, 3
         * against 0 */
        if (s != 3 && (rep.unchecked[0] || rep.checked != (2 + 3 + 3) * 4)) bad = 16;
        if (bad) fprintf(stderr, "scenario %d: eval %d name %s ranks %d %d checked %ld unchecked '%s'\n", s,
                         rep.first.eval, rep.first.name, rep.first.rank_a, rep.first.rank_b, rep.checked,
                         rep.unchecked);
    }
    (void)world;
    rp_par_free(&par);
    return bad;
}

/* The groups rp_par_init makes on 4 ranks: one per degree with the rank's coordinate and
 * the degree, the named groups the array's, the sequence and replica groups their spans';
 * patch's group is the sequence group itself (no second split), the others their own. */
static const rp_par_degrees GROUP_LAYOUTS[] = {
    {.dp = 1, .cfg = 1, .pipefusion = 1, .ulysses = 2, .ring = 2, .patch = 1},
    {.dp = 2, .cfg = 1, .pipefusion = 1, .ulysses = 1, .ring = 1, .patch = 2},
    {.dp = 1, .cfg = 2, .pipefusion = 2, .ulysses = 1, .ring = 1, .patch = 1},
};

static int groups_rank_main(int rank, int world, rp_comm *c, const void *arg) {
    const rp_par_degrees *d = arg;
    rp_parallel par;
    rp_error err = {0};
    if (rp_par_init(&par, c, d, RP_INJECT_NONE, &err) != RP_OK) return 10;
    int bad = 0;
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) {
        const rp_par_strategy_info *s = rp_par_member_strategy(i);
        const rp_par_group *g = &par.group[i];
        const int n = rp_par_degree(d, s);
        if (g->size != n || g->rank != rp_par_degree(&par.at.of, s) || (n > 1) != (g->comm != NULL)) bad = 11;
        if (g->comm && (g->comm->world != n || g->comm->rank != g->rank)) bad = 12;
        if (g->comm && (g->comm == par.sp.comm) != (s->on_sequence_group && n > 1)) bad = 13;
    }
    if (&par.cfg != &par.group[1] || &par.patch != &par.group[RP_PAR_N_DEGREES - 1]) bad = 14;
    if (par.sp.size != d->ulysses * d->ring * d->patch || par.sp.rank != par.at.sp) bad = 15;
    if (par.replica.size != world / d->dp || par.replica.rank != rank % (world / d->dp)) bad = 16;
    rp_par_free(&par); /* the shared comm is destroyed once (a double free aborts) */
    if (bad) fprintf(stderr, "rank %d: groups check %d\n", rank, bad);
    return bad;
}

START_TEST(groups_are_made_from_the_table) {
    if (!rp_comm_available(RP_COMM_GLOO)) return;
    const int failed = spawn(4, groups_rank_main, &GROUP_LAYOUTS[_i]);
    ck_assert_msg(failed == 0, "layout %d: %d ranks failed", _i, failed);
}
END_TEST

START_TEST(replica_copies_are_compared) {
    if (!rp_comm_available(RP_COMM_GLOO)) return;
    const int scenario = _i;
    const int failed = spawn(4, replica_rank_main, &scenario);
    ck_assert_msg(failed == 0, "scenario %d: %d ranks failed", scenario, failed);
}
END_TEST

/* The scale every rank hands its attention is a WORLD replica (rp_par_attention): on ulysses 2
 * (u 2) or ring 2, scenario 1 has rank 1 hand a scale one ulp low at layer 1 of eval 0, which
 * moves its output far less than any envelope, and must be named exactly: eval 0, "attention
 * scale (layer 1)", ranks (0, 1), world; scenario 0 hands the same scale everywhere: no
 * difference. */
static int scale_rank_main(int rank, int world, rp_comm *c, const void *arg) {
    const int s = *(const int *)arg, ring = s >= 2;
    const sp_case sc = {ring ? 1 : 2, ring ? 2 : 1, 0, 16, 0, RP_INJECT_NONE, 0, 0};
    rp_error err = {0};
    rp_parallel par;
    const rp_par_degrees d = {1, 1, 1, sc.u, sc.R, 1};
    if (rp_par_init(&par, c, &d, RP_INJECT_NONE, &err) != RP_OK) return 10;
    float *q, *k, *v;
    sp_inputs(&sc, &q, &k, &v);
    const int Tl = sc.Timg / world;
    float *o = malloc(sizeof(float) * SB * SH * Tl * SD);
    rp_ctx ctx = rp_ctx_default();
    ctx.par = &par;
    par.fwd_eval = 0;
    int bad = 0;
    for (int layer = 0; layer < 2 && !bad; layer++) {
        float scale = 1.0f / sqrtf((float)SD);
        if (s % 2 == 1 && rank == 1 && layer == 1) scale = nextafterf(scale, 0.0f);
        /* the first Tl tokens of the global sequence stand for every rank's shard: only the
         * scale is under test here */
        if (rp_par_attention(&ctx, layer, o, q, k, v, NULL, SB, SH, Tl, 0, 0, SD, scale, &err) != RP_OK) bad = 11;
    }
    rp_par_replica_report rep;
    if (!bad && rp_par_replica_collect(&par, "test/cpu", &rep, &err) != RP_OK) bad = 12;
    if (!bad && rank == 0) {
        const int want = s % 2 == 1;
        if (want && (rep.first.eval != 0 || strcmp(rep.first.name, "attention scale (layer 1)") ||
                     rep.first.group != RP_PAR_RG_WORLD || rep.first.rank_a != 0 || rep.first.rank_b != 1))
            bad = 13;
        if (!want && rep.first.eval != -1) bad = 14;
        if (bad) fprintf(stderr, "scenario %d: eval %d name %s group %d\n", s, rep.first.eval, rep.first.name,
                         (int)rep.first.group);
    }
    free(q); free(k); free(v); free(o);
    (void)world;
    rp_par_free(&par);
    return bad;
}

START_TEST(attention_scale_is_a_world_replica) {
    if (!rp_comm_available(RP_COMM_GLOO)) return;
    const int scenario = _i;
    const int failed = spawn(2, scale_rank_main, &scenario);
    ck_assert_msg(failed == 0, "scenario %d: %d ranks failed", scenario, failed);
}
END_TEST

/* ---- the layouts' exact contracts (STALE group) ------------------------------------------ */

/* A fault and where its contract breaks first (eval -1: nowhere). */
typedef struct contract_case {
    rp_inject_id fault;
    int eval;
    const char *name;
    int altered; /* cfg: rank 1 hands the exchange one value other than its forward produced */
} contract_case;

/* A rank's end: bad, or rank 0's report of the run's replica log against the case's
 * expectation (other ranks: their collect); par is freed. */
static int contract_end(rp_parallel *par, int rank, const contract_case *cc, int bad) {
    rp_error err = {0};
    rp_par_replica_report rep;
    const rp_status st = rp_par_replica_collect(par, "test/cpu", &rep, &err);
    rp_par_free(par);
    if (st != RP_OK) {
        fprintf(stderr, "rank %d: collect: %s\n", rank, err.msg);
        return 1;
    }
    if (bad || rank != 0) return bad;
    const int ok = cc->eval < 0 ? rep.first.eval == -1
                                : rep.first.eval == cc->eval && rep.first.group == RP_PAR_RG_STALE &&
                                      !strcmp(rep.first.name, cc->name);
    if (!ok)
        fprintf(stderr, "fault %s: first difference eval %d group %d name %s (%s); expected eval %d %s\n",
                rp_inject_name(cc->fault), rep.first.eval, (int)rep.first.group, rep.first.name, rep.first.other,
                cc->eval, cc->name ? cc->name : "");
    return !ok;
}

/* Case i of a contract test: 2 Gloo ranks run fn on it; none may fail. */
static void contract_spawn(rank_fn fn, const contract_case *cc, int i) {
    if (!rp_comm_available(RP_COMM_GLOO)) return;
    const int failed = spawn(2, fn, cc);
    ck_assert_msg(failed == 0, "case %d (%s): %d ranks failed", i, rp_inject_name(cc->fault), failed);
}

/* The cfg exchange: 2 ranks exchange segments whose every value says (evaluation, rank,
 * index); a correct exchange returns them in rank order, bitwise, and its check holds;
 * cfg-combine-order (rank 1 swaps them at every evaluation) breaks it at evaluation 0,
 * cfg-stale-half (segment 1 of the previous evaluation) at evaluation 1. */
static const contract_case CFG_CASES[] = {
    {RP_INJECT_NONE, -1, NULL, 0},
    {RP_INJECT_CFG_COMBINE_ORDER, 0, "cfg.segment0", 0},
    {RP_INJECT_CFG_STALE_HALF, 1, "cfg.segment1", 0},
    /* the exchange is held to the fingerprint taken where the forward produced the segment:
     * a value changed on the way (audit 12: rounded to bf16) breaks it at once */
    {RP_INJECT_NONE, 0, "cfg.segment1", 1},
};

static int cfg_rank_main(int rank, int world, rp_comm *c, const void *arg) {
    const contract_case *cc = arg;
    rp_error err = {0};
    rp_parallel par;
    const rp_par_degrees d = {.dp = 1, .cfg = 2, .pipefusion = 1, .ulysses = 1, .ring = 1, .patch = 1};
    (void)world;
    if (rp_par_init(&par, c, &d, cc->fault, &err) != RP_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        return 1;
    }
    rp_ctx ctx = rp_ctx_default();
    ctx.par = &par;
    rp_par_generate_begin(&par);
    enum { N = 6 };
    float mine[N], both[2 * N];
    int bad = 0;
    for (int e = 0; e < 3 && !bad; e++) {
        par.fwd_eval = e;
        for (int i = 0; i < N; i++) mine[i] = (float)(100 * e + 10 * par.cfg.rank + i);
        const uint64_t produced = rp_par_fingerprint(mine, N);
        if (cc->altered && par.cfg.rank == 1) mine[2] = nextafterf(mine[2], 0.0f);
        if (rp_par_cfg_exchange(&ctx, mine, N, produced, both, &err) != RP_OK) {
            fprintf(stderr, "rank %d: exchange: %s\n", rank, err.msg);
            bad = 1;
        }
        for (int sg = 0; cc->fault == RP_INJECT_NONE && !cc->altered && sg < 2; sg++)
            for (int i = 0; i < N; i++)
                if (both[sg * N + i] != (float)(100 * e + 10 * sg + i)) bad = 1;
    }
    return contract_end(&par, rank, cc, bad);
}

START_TEST(cfg_exchange_contract) { contract_spawn(cfg_rank_main, &CFG_CASES[_i], _i); }
END_TEST

/* A stand-in PipeFusion model: 4 blocks, each one attention over 4 image tokens (B = H = 1,
 * D = 2); it runs the blocks its stage's range gives through the K/V hook, as a model's
 * forward does (one pass per pipeline patch after warmup). */
enum { PF_BLOCKS = 4, PF_T = 4, PF_D = 2 };

static rp_status pf_stand_in(void *user, const rp_ctx *ctx, float *out, rp_error *err) {
    (void)user;
    int a, b, m = -1, M = 1;
    rp_par_block_range(ctx, PF_BLOCKS, &a, &b);
    rp_par_pf_patch(ctx->par, &m, &M);
    const int Tk = m < 0 ? PF_T : PF_T / M;
    float k[PF_T * PF_D], v[PF_T * PF_D];
    for (int i = a; i < b; i++) {
        for (int j = 0; j < Tk * PF_D; j++) k[j] = (float)(i + j), v[j] = (float)(i - j);
        const float *ko, *vo;
        int tko;
        RP_TRY(ctx->par->hooks.kv(ctx->par->hooks.user, i, k, v, 1, 1, Tk, PF_D, &ko, &vo, &tko, err));
    }
    out[0] = (float)b;
    return RP_OK;
}

/* Block ownership: 2 stages, 2 pipeline patches, warmup 1, 3 evaluations; the stages' ranges
 * tile the blocks, and pipefusion-block-overlap (stage 1 starts a block early after warmup)
 * breaks it at evaluation 1, the first asynchronous one. */
static const contract_case PF_CASES[] = {
    {RP_INJECT_NONE, -1, NULL, 0},
    {RP_INJECT_PIPEFUSION_BLOCK_OVERLAP, 1, "pipefusion.blocks", 0},
};

static int pf_rank_main(int rank, int world, rp_comm *c, const void *arg) {
    const contract_case *cc = arg;
    rp_error err = {0};
    rp_parallel par;
    const rp_par_degrees d = {.dp = 1, .cfg = 1, .pipefusion = 2, .ulysses = 1, .ring = 1, .patch = 1};
    (void)world;
    if (rp_par_init(&par, c, &d, cc->fault, &err) != RP_OK ||
        rp_par_pipefusion_init(&par, 2, NULL, 0, 1, &err) != RP_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        return 1;
    }
    rp_ctx ctx = rp_ctx_default();
    ctx.par = &par;
    rp_par_generate_begin(&par);
    int bad = 0;
    for (int e = 0; e < 3 && !bad; e++) {
        float out[1] = {0};
        if (rp_par_forward(&ctx, e, pf_stand_in, NULL, out, 1, &err) != RP_OK) {
            fprintf(stderr, "rank %d: forward %d: %s\n", rank, e, err.msg);
            bad = 1;
        }
        bad |= out[0] != (float)PF_BLOCKS; /* the last stage's output, broadcast */
    }
    return contract_end(&par, rank, cc, bad);
}

START_TEST(pipefusion_block_ownership) { contract_spawn(pf_rank_main, &PF_CASES[_i], _i); }
END_TEST

/* ---- PipeFusion's serial emulation -------------------------------------------------------- */

/* With the pipeline patches fixed, PipeFusion's stages only hand each patch's streams on and
 * broadcast the output, so its arithmetic does not depend on the stage count: 2 Gloo stages
 * over 2 patches (warmup 1, then 2 asynchronous evaluations with stale K/V) return at every
 * evaluation the bits of one stage over the same patches (the classifier's emulation). */
enum { PFE_EVALS = 3, PFE_PATCHES = 2 };
typedef struct pfe_arg {
    const char *preset;
    char out[64]; /* rank 0's outputs, (PFE_EVALS, n) floats */
} pfe_arg;

static rp_status model_fn(void *u, const rp_ctx *ctx, float *out, rp_error *err) { return forward(u, ctx, out, err); }

/* The model's PFE_EVALS evaluations of one generation under pipefusion degree d->pipefusion
 * on comm c into outs (PFE_EVALS, n); evaluation e's input is the model's latents plus e/2,
 * so the K/V an asynchronous evaluation reads a step old are not its own. m->x is kept. */
static rp_status pfe_run(rp_comm *c, const rp_par_degrees *d, model_run *m, float *outs, rp_error *err) {
    const size_t nx = (size_t)m->B * m->C * m->H * m->W, n = out_floats(m);
    float *x0 = malloc(sizeof(float) * nx);
    if (!x0) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    memcpy(x0, m->x, sizeof(float) * nx);
    rp_parallel par;
    rp_status st = rp_par_init(&par, c, d, RP_INJECT_NONE, err);
    if (st == RP_OK) {
        st = rp_par_pipefusion_init(&par, PFE_PATCHES, NULL, 0, 1, err);
        rp_ctx ctx = rp_ctx_default();
        ctx.par = &par;
        rp_par_generate_begin(&par);
        for (int e = 0; st == RP_OK && e < PFE_EVALS; e++) {
            for (size_t i = 0; i < nx; i++) m->x[i] = x0[i] + 0.5f * (float)e;
            st = rp_par_forward(&ctx, e, model_fn, m, outs + e * n, n, err);
        }
        rp_par_free(&par);
    }
    memcpy(m->x, x0, sizeof(float) * nx);
    free(x0);
    return st;
}

static int pfe_rank_main(int rank, int world, rp_comm *c, const void *arg) {
    const pfe_arg *a = arg;
    const rp_par_degrees d = {.dp = 1, .cfg = 1, .pipefusion = 2, .ulysses = 1, .ring = 1, .patch = 1};
    (void)world;
    model_run m;
    model_open(&m, a->preset);
    const size_t n = out_floats(&m);
    float *outs = malloc(sizeof(float) * n * PFE_EVALS);
    rp_error err = {0};
    int bad = !outs || pfe_run(c, &d, &m, outs, &err) != RP_OK;
    if (bad) fprintf(stderr, "rank %d: %s\n", rank, err.msg);
    if (!bad && rank == 0) {
        FILE *f = fopen(a->out, "wb");
        bad = !f || fwrite(outs, sizeof(float), n * PFE_EVALS, f) != n * PFE_EVALS;
        if (f) bad |= fclose(f) != 0;
    }
    free(outs);
    model_close(&m);
    return bad;
}

START_TEST(pipefusion_emulation_is_bitwise_the_stages) {
    if (!rp_comm_available(RP_COMM_GLOO)) return;
    pfe_arg a = {.preset = PRESETS[_i]};
    snprintf(a.out, sizeof a.out, "/tmp/test-pfe-%d-%d", (int)getpid(), _i);
    ck_assert_int_eq(spawn(2, pfe_rank_main, &a), 0);
    model_run m;
    model_open(&m, PRESETS[_i]);
    const size_t n = out_floats(&m);
    float *staged = malloc(sizeof(float) * n * PFE_EVALS), *one = malloc(sizeof(float) * n * PFE_EVALS);
    FILE *f = fopen(a.out, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(staged, sizeof(float), n * PFE_EVALS, f), n * PFE_EVALS);
    fclose(f);
    remove(a.out);
    rp_error err = {0};
    rp_comm *self = NULL;
    rp_comm_opts co = {.kind = RP_COMM_SELF, .rank = 0, .world = 1};
    ck_assert_int_eq(rp_comm_create(&co, &self, &err), RP_OK);
    const rp_par_degrees d1 = {1, 1, 1, 1, 1, 1};
    ck_assert_msg(pfe_run(self, &d1, &m, one, &err) == RP_OK, "%s", err.msg);
    for (int e = 0; e < PFE_EVALS; e++)
        ck_assert_msg(!memcmp(staged + e * n, one + e * n, sizeof(float) * n),
                      "%s: evaluation %d of 2 stages differs from one stage's", PRESETS[_i], e);
    /* and the asynchronous evaluations are not the synchronous forward (stale K/V read) */
    float *plain = malloc(sizeof(float) * n);
    rp_ctx ctx = rp_ctx_default();
    ck_assert_int_eq(forward(&m, &ctx, plain, &err), RP_OK);
    ck_assert_msg(!memcmp(plain, one, sizeof(float) * n), "%s: the warmup evaluation is not the plain forward",
                  PRESETS[_i]);
    /* the last evaluation's input (+1) through the plain forward: the pipeline read stale K/V */
    const size_t nx = (size_t)m.B * m.C * m.H * m.W;
    for (size_t i = 0; i < nx; i++) m.x[i] += 0.5f * (PFE_EVALS - 1);
    ck_assert_int_eq(forward(&m, &ctx, plain, &err), RP_OK);
    ck_assert_msg(memcmp(plain, one + (PFE_EVALS - 1) * n, sizeof(float) * n), "%s: no stale K/V read", PRESETS[_i]);
    free(plain);
    free(staged);
    free(one);
    rp_comm_destroy(self);
    model_close(&m);
}
END_TEST

/* ---- the rotated layout (rp_par_rotate) ------------------------------------------------- */

/* Sequence parallelism rotated: every rank computes the next rank's shard and head group, and
 * the forward's output is bitwise the plain layout's (the same shapes and code on other
 * processes), before and after; a fault keyed to a rank's identity (norm-eps-rank: the last
 * rank's norms) moves with the rotation to another shard, so there the two differ. Loops
 * presets x {ulysses 2, ring 2, ulysses 2 x ring 2}; each launch runs clean, then with the
 * fault. */
typedef struct rot_arg {
    const char *preset;
    rp_par_degrees d;
} rot_arg;

static int rot_run(rp_comm *c, const rot_arg *a, rp_inject_id fault, model_run *m, float *out[3], size_t n,
                   int rank) {
    rp_error err = {0};
    rp_parallel par;
    int bad = rp_par_init(&par, c, &a->d, fault, &err) != RP_OK;
    rp_ctx ctx = rp_ctx_default();
    ctx.par = &par;
    const int u_rank = par.ulysses.rank, r_rank = par.ring.rank, sp_rank = par.sp.rank;
    for (int k = 0; k < 3 && !bad; k++) { /* plain, rotated, plain again */
        bad = rp_par_rotate(&par, k == 1, &err) != RP_OK;
        const int on = k == 1; /* who it is stays; what it computes moves on by one in each degree */
        if (!bad)
            bad = par.ulysses.rank != u_rank || par.ring.rank != r_rank || par.sp.rank != sp_rank ||
                  par.ulysses.pos != (u_rank + on) % par.ulysses.size || par.ring.pos != (r_rank + on) % par.ring.size ||
                  par.sp.pos != (par.ring.pos * par.ulysses.size + par.ulysses.pos) || par.rotated != on;
        rp_par_generate_begin(&par);
        if (!bad) bad = rp_par_forward(&ctx, 0, model_fn, m, out[k], n, &err) != RP_OK;
    }
    if (!bad) bad = memcmp(out[0], out[2], sizeof(float) * n) != 0; /* back to the plain layout */
    const int same = !bad && !memcmp(out[0], out[1], sizeof(float) * n);
    if (!bad) bad = fault == RP_INJECT_NONE ? !same : same;
    if (bad) fprintf(stderr, "rank %d (%s, %s): %s\n", rank, a->preset, rp_inject_name(fault), err.msg);
    rp_par_free(&par);
    return bad;
}

static int rot_rank_main(int rank, int world, rp_comm *c, const void *arg) {
    const rot_arg *a = arg;
    (void)world;
    model_run m;
    model_open(&m, a->preset);
    const size_t n = out_floats(&m);
    float *out[3] = {malloc(sizeof(float) * n), malloc(sizeof(float) * n), malloc(sizeof(float) * n)};
    const int bad = rot_run(c, a, RP_INJECT_NONE, &m, out, n, rank) ||
                    rot_run(c, a, RP_INJECT_NORM_EPS_RANK, &m, out, n, rank);
    for (int k = 0; k < 3; k++) free(out[k]);
    model_close(&m);
    return bad;
}

static const rp_par_degrees ROT_SP[] = {
    {.dp = 1, .cfg = 1, .pipefusion = 1, .ulysses = 2, .ring = 1, .patch = 1},
    {.dp = 1, .cfg = 1, .pipefusion = 1, .ulysses = 1, .ring = 2, .patch = 1},
    {.dp = 1, .cfg = 1, .pipefusion = 1, .ulysses = 2, .ring = 2, .patch = 1},
};
#define N_ROT_SP (int)(sizeof ROT_SP / sizeof *ROT_SP)

START_TEST(rotated_sequence_layout_is_bitwise_the_plain) {
    if (!rp_comm_available(RP_COMM_GLOO)) return;
    const rot_arg a = {.preset = PRESETS[_i / N_ROT_SP], .d = ROT_SP[_i % N_ROT_SP]};
    ck_assert_int_eq(spawn(rp_par_world(&a.d), rot_rank_main, &a), 0);
}
END_TEST

/* dp 2 x cfg 2 rotated: each rank selects the other dp group's items and computes the other
 * cfg segment; the gather (its leaders other ranks now, rank 0 none) returns rank 0 the
 * plain layout's result bit for bit, and its check finds every copy right. Results are a
 * function of the items, so rank 0 knows them. */
static int rot_dp_rank_main(int rank, int world, rp_comm *c, const void *arg) {
    enum { NI = 4, N = 2, PER = 3 };
    (void)arg;
    const rp_par_degrees d = {.dp = 2, .cfg = 2, .pipefusion = 1, .ulysses = 1, .ring = 1, .patch = 1};
    rp_error err = {0};
    rp_parallel par;
    int bad = rp_par_init(&par, c, &d, RP_INJECT_NONE, &err) != RP_OK;
    rp_gen_item all[NI], local[NI];
    for (int i = 0; i < NI; i++) all[i] = (rp_gen_item){.seed = 7u + (uint64_t)i, .global_index = (uint64_t)i};
    rp_gen_result got[2];
    memset(got, 0, sizeof got);
    const int dp_at = par.at.dp, cfg_at = par.at.cfg;
    for (int k = 0; k < 2 && !bad; k++) {
        int first = -1, count = 0;
        bad = rp_par_rotate(&par, k, &err) != RP_OK || rp_par_dp_select(&par, all, NI, local, &first, &count, &err);
        const int g = (dp_at + k) % 2;
        rp_ctx ctx = rp_ctx_default();
        ctx.par = &par;
        if (!bad) bad = first != g * (NI / 2) || count != NI / 2 || rp_par_cfg_segment(&ctx) != (cfg_at + k) % 2;
        float noise[NI / 2 * PER], lat[NI / 2 * PER], traj[(N + 1) * NI / 2 * PER];
        double ts[N] = {2, 1};
        for (int s = 0; s <= N; s++)
            for (int b = 0; b < count; b++)
                for (int e = 0; e < PER; e++)
                    traj[(s * count + b) * PER + e] = (float)(100 * (first + b) + 10 * s + e);
        memcpy(noise, traj, sizeof noise);
        memcpy(lat, traj + N * count * PER, sizeof lat);
        rp_gen_result res = {.B = count, .C = 1, .h = 1, .w = PER, .steps = N, .noise = noise, .latents = lat,
                             .trajectory = traj, .timesteps = ts};
        rp_par_gather_report r;
        if (!bad) bad = rp_par_dp_gather(&par, &res, NI, &got[k], &err) != RP_OK;
        if (!bad) bad = rp_par_dp_gather_check(&par, &res, &got[k], &r, &err) != RP_OK || r.row != -1;
    }
    if (!bad && rank == 0)
        bad = got[0].B != NI || got[1].B != NI ||
              memcmp(got[0].trajectory, got[1].trajectory, sizeof(float) * (N + 1) * NI * PER) ||
              memcmp(got[0].latents, got[1].latents, sizeof(float) * NI * PER) ||
              got[1].trajectory[(1 * NI + 3) * PER + 2] != 312.0f;
    if (!bad) bad = rp_par_rotate(&par, 0, &err) != RP_OK || par.dp.pos != dp_at || par.rotated;
    if (bad) fprintf(stderr, "rank %d of %d: rotated dp x cfg: %s\n", rank, world, err.msg);
    if (rank == 0) rp_gen_result_free(&got[0]), rp_gen_result_free(&got[1]);
    rp_par_free(&par);
    return bad;
}

START_TEST(rotated_dp_cfg_layout_gathers_the_plain_result) {
    if (!rp_comm_available(RP_COMM_GLOO)) return;
    ck_assert_int_eq(spawn(4, rot_dp_rank_main, NULL), 0);
}
END_TEST

/* PipeFusion has no rotation (its stages keep their blocks from their initialisation): asked
 * for one, a clear error; patch parallelism rotates with its sequence group. */
START_TEST(rotation_is_refused_where_it_is_not_built) {
    const rp_par_degrees pf = {.dp = 1, .cfg = 1, .pipefusion = 2, .ulysses = 1, .ring = 1, .patch = 1};
    const rp_par_degrees one = {1, 1, 1, 1, 1, 1};
    const rp_par_degrees dp = {.dp = 2, .cfg = 1, .pipefusion = 1, .ulysses = 1, .ring = 1, .patch = 1};
    const rp_par_degrees patch = {.dp = 1, .cfg = 1, .pipefusion = 1, .ulysses = 1, .ring = 1, .patch = 2};
    ck_assert(!rp_par_rotates(&pf) && !rp_par_rotates(&one) && rp_par_rotates(&dp) && rp_par_rotates(&patch));
    rp_parallel par;
    memset(&par, 0, sizeof par);
    par.deg = pf;
    rp_error err = {0};
    ck_assert_int_eq(rp_par_rotate(&par, 1, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "no rotation (one rank, or PipeFusion"));
    ck_assert_int_eq(rp_par_rotate(&par, 0, &err), RP_OK); /* not rotated: nothing to undo */
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("parallel");
    TCase *tc = tcase_create("layout");
    tcase_add_test(tc, layout_round_trip_and_order);
    tcase_add_test(tc, strategy_table);
    tcase_add_test(tc, fingerprint_tells_one_bit);
    tcase_add_test(tc, groups_follow_the_rows);
    tcase_add_test(tc, strategy_texts);
    suite_add_tcase(s, tc);
    tc = tcase_create("models");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, world_one_is_the_plain_path, 0, 2 * N_PRESETS);
    tcase_add_loop_test(tc, held_per_item_trace_is_the_joint_trace, 0, N_PRESETS);
    tcase_add_loop_test(tc, pipeline_hooks_are_bitwise_the_plain_forward, 0, N_PRESETS);
    suite_add_tcase(s, tc);
    tc = tcase_create("ranks");
    tcase_set_timeout(tc, 180);
    tcase_add_loop_test(tc, sp_attention_ranks, 0, (int)(sizeof SP_CASES / sizeof *SP_CASES));
    tcase_add_loop_test(tc, dp_items_are_shared_and_verified, 0, 3);
    tcase_add_loop_test(tc, dp_gather_is_checked, 0, 4);
    tcase_add_loop_test(tc, sequence_gather_coverage_contract, 0,
                        (int)(sizeof COVERAGE_CASES / sizeof *COVERAGE_CASES));
    tcase_add_loop_test(tc, replica_copies_are_compared, 0, 5);
    tcase_add_loop_test(tc, attention_scale_is_a_world_replica, 0, 4);
    tcase_add_loop_test(tc, cfg_exchange_contract, 0, (int)(sizeof CFG_CASES / sizeof *CFG_CASES));
    tcase_add_loop_test(tc, pipefusion_block_ownership, 0, (int)(sizeof PF_CASES / sizeof *PF_CASES));
    tcase_add_loop_test(tc, pipefusion_emulation_is_bitwise_the_stages, 0, N_PRESETS);
    tcase_add_loop_test(tc, rotated_sequence_layout_is_bitwise_the_plain, 0, N_ROT_SP * N_PRESETS);
    tcase_add_test(tc, rotated_dp_cfg_layout_gathers_the_plain_result);
    tcase_add_test(tc, rotation_is_refused_where_it_is_not_built);
    tcase_add_loop_test(tc, groups_are_made_from_the_table, 0, (int)(sizeof GROUP_LAYOUTS / sizeof *GROUP_LAYOUTS));
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
