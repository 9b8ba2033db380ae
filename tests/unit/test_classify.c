/* test_classify.c — harness/analysis/classify.c on constructed data: the options and twins, the
 * teacher step mask, the distances (exact values worked by hand), envelope ratios and the
 * first break, the assignment, the layer order and a trace round trip, the decision's
 * precedence, and the driver on small directories written here (drift, a bug at a known
 * step and layer, a swap, repeats that differ, a crashed run). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/image.h"
#include "engine/rng.h"
#include "engine/safetensors.h"
#include "engine/trace.h"
#include "harness/case/case.h"
#include "harness/analysis/classify.h"
#include "harness/sweep/runner.h"
#include "harness/analysis/verdict.h"

#ifndef REPRO_TEST_SCRATCH
#define REPRO_TEST_SCRATCH "classify-unit-scratch"
#endif

/* ---- pure functions ------------------------------------------------------------------ */

START_TEST(test_opts_and_twins) {
    rp_classify_opts o;
    rp_classify_opts_default(&o);
    ck_assert(o.enabled && o.twins == 3 && o.factor == 64 && o.approx_ssim == 0.90 && o.approx_psnr == 25);
    ck_assert(o.teacher_steps == 0 && o.leak_check == 1);
    char a[256], b[256];
    rp_classify_opts_key(&o, a, sizeof a);
    o.factor = 32;
    rp_classify_opts_key(&o, b, sizeof b);
    ck_assert_str_ne(a, b);

    rp_case ref, tw;
    rp_case_defaults(&ref);
    snprintf(ref.name, sizeof ref.name, "dp=1");
    ref.threads = 0;
    int noise = -1;
    rp_cls_twin_case(&ref, 0, &tw, &noise);
    ck_assert_str_eq(rp_cls_twin_name(0), "reduce-split");
    ck_assert(tw.reduce_split == 1 && tw.threads == 0 && noise == 0);
    ck_assert_str_eq(tw.name, "twin reduce-split: dp=1");
    rp_cls_twin_case(&ref, 1, &tw, &noise);
    ck_assert(tw.reduce_split == 0 && tw.threads == 2 && noise == 0); /* threads 0 counts as 1 */
    rp_cls_twin_case(&ref, 2, &tw, &noise);
    ck_assert(tw.reduce_split == 0 && tw.threads == 0 && noise == 1);
    ref.reduce_split = 1;
    ref.threads = 2;
    snprintf(ref.expect, sizeof ref.expect, "drift");
    rp_cls_twin_case(&ref, 5, &tw, &noise);
    ck_assert(tw.reduce_split == 0 && tw.threads == 1 && noise == 0 && tw.expect[0] == '\0');
    char id1[17], id2[17];
    rp_case_id(&ref, id1);
    rp_case_id(&tw, id2);
    ck_assert_str_ne(id1, id2); /* a twin is another case */
}
END_TEST

START_TEST(test_teacher_mask) {
    unsigned char m[10];
    ck_assert_int_eq(rp_cls_teacher_mask(10, 10, 0, 0, m), 10);
    for (int k = 0; k < 10; k++) ck_assert(m[k] == 1);
    ck_assert_int_eq(rp_cls_teacher_mask(10, 10, 4, 0, m), 4); /* round(j 9 / 3): 0 3 6 9 */
    const unsigned char want[10] = {1, 0, 0, 1, 0, 0, 1, 0, 0, 1};
    ck_assert(memcmp(m, want, 10) == 0);
    ck_assert_int_eq(rp_cls_teacher_mask(10, 10, 1, 0, m), 1);
    ck_assert(m[0] == 1);
    /* multistep: a step alone would be another (first-order) step, so all of them */
    ck_assert_int_eq(rp_cls_teacher_mask(10, 10, 4, 1, m), 10);
    ck_assert_int_eq(rp_cls_teacher_mask(3, 3, 7, 1, m), 3); /* more than the steps: all */
    /* an approximate layout after warmup 3: steps 3.. are not checked, so not run */
    ck_assert_int_eq(rp_cls_teacher_mask(10, 3, 0, 1, m), 3);
    for (int k = 0; k < 10; k++) ck_assert(m[k] == (k < 3));
    ck_assert_int_eq(rp_cls_teacher_mask(10, 5, 4, 0, m), 2); /* of 0 3 6 9, 0 and 3 */
    ck_assert(m[0] == 1 && m[3] == 1 && m[6] == 0 && m[9] == 0);
    /* warmup 0: step 0 still, the step the leak check recomputes from the case's own input */
    ck_assert_int_eq(rp_cls_teacher_mask(10, 0, 0, 0, m), 1);
    ck_assert(m[0] == 1 && m[1] == 0);
}
END_TEST

START_TEST(test_distances) {
    ck_assert(rp_cls_unit_roundoff("fp32") == 0x1p-24 && rp_cls_unit_roundoff("bf16") == 0x1p-8);
    ck_assert(rp_cls_unit_roundoff("fp16") == 0x1p-11 && rp_cls_unit_roundoff(NULL) == 0x1p-24);
    /* the floor: fp32's own unit roundoff; a coarser precision both sides run, so that
     * factor x floor is 8 of its roundings (bf16 at 64: 2^-11), never below fp32's; one
     * side coarser than the other: the coarser's unit roundoff */
    ck_assert(rp_cls_floor("fp32", NULL, 64) == 0x1p-24 && rp_cls_floor("fp32", "fp32", 8) == 0x1p-24);
    ck_assert(rp_cls_floor("bf16", "bf16", 64) == 0x1p-11 && rp_cls_floor("bf16", NULL, 8) == 0x1p-8);
    ck_assert(rp_cls_floor("tf32", "tf32", 64) == 0x1p-14 && rp_cls_floor("bf16", "bf16", 0x1p30) == 0x1p-24);
    ck_assert(64 * rp_cls_floor("bf16", NULL, 64) == RP_CLS_COARSE_ROUNDINGS * rp_cls_unit_roundoff("bf16"));
    ck_assert(rp_cls_floor("tf32", "fp32", 64) == 0x1p-11 && rp_cls_floor("fp32", "bf16", 64) == 0x1p-8);
    /* a step's floor: fp32's u when both sides run one precision on one device (the sampler's
     * state is fp32; the twins measure what the model's roundings move it by); else the layer's */
    ck_assert(rp_cls_step_floor("bf16", "bf16", 1, 64) == 0x1p-24 && rp_cls_step_floor("fp32", "fp32", 1, 64) == 0x1p-24);
    ck_assert(rp_cls_step_floor("bf16", "bf16", 0, 64) == rp_cls_floor("bf16", "bf16", 64));
    ck_assert(rp_cls_step_floor("bf16", "fp32", 1, 64) == 0x1p-8 && rp_cls_step_floor("tf32", "fp32", 1, 64) == 0x1p-11);
    const float a[2] = {3, 4}, b[2] = {3, 5}, z[2] = {0, 0};
    ck_assert(rp_cls_rel_l2(a, b, 2) == 1.0 / 5.0);
    ck_assert(rp_cls_rel_l2(a, a, 2) == 0 && rp_cls_rel_l2(z, z, 2) == 0);
    ck_assert(isinf(rp_cls_rel_l2(z, a, 2)));
    const float n[2] = {3, NAN};
    ck_assert(isinf(rp_cls_rel_l2(a, n, 2))); /* a NaN is never within an envelope */
    /* rows (2 rows, 2 items, 2 values): max over items per row */
    const float r[8] = {3, 4, 1, 0, 3, 4, 1, 0}, x[8] = {3, 4, 1, 1, 3, 5, 1, 0};
    double out[2];
    rp_cls_rows_rel(r, x, 2, 2, 2, out);
    ck_assert(out[0] == 1.0 && out[1] == 0.2);

    /* layers: the sample's rel-L2, or the norm's when the sample missed the change */
    float s1[2] = {3, 4}, s2[2] = {3, 5};
    rp_trace_rec ra = {.numel = 4, .l2 = 10, .maxabs = 4, .stride = 2, .nsample = 2, .sample = s1};
    rp_trace_rec rb = ra;
    rb.sample = s2;
    ck_assert(rp_cls_layer_rel(&ra, &rb) == 0.2);
    rb.sample = s1;
    rb.l2 = 13; /* unsampled elements changed */
    ck_assert(fabs(rp_cls_layer_rel(&ra, &rb) - 0.3) < 1e-15);
    rb.numel = 5;
    ck_assert(isinf(rp_cls_layer_rel(&ra, &rb)));
    rb = ra;
    rb.l2 = NAN;
    ck_assert(isinf(rp_cls_layer_rel(&ra, &rb)));
    ck_assert(isinf(rp_cls_layer_rel(&ra, NULL)));
}
END_TEST

START_TEST(test_ratio_and_first_break) {
    const double u = 0x1p-24;
    ck_assert(rp_cls_ratio(2e-7, 1e-7, u) == 2);
    ck_assert(rp_cls_ratio(u * 10, 0, u) == 10); /* an empty envelope is floored at one rounding */
    ck_assert(isinf(rp_cls_ratio(NAN, 1, u)));
    const double v[5] = {1e-7, 5e-7, 1e-4, 1e-3, 1}, env[5] = {1e-7, 1e-7, 1e-7, 1e-7, 1e-7};
    double r;
    ck_assert_int_eq(rp_cls_first_break(v, env, NULL, 5, u, 64, &r), 2);
    ck_assert(r == 1e-4 / 1e-7);
    const unsigned char mask[5] = {1, 1, 0, 1, 1};
    ck_assert_int_eq(rp_cls_first_break(v, env, mask, 5, u, 64, &r), 3); /* step 2 not checked */
    ck_assert_int_eq(rp_cls_first_break(v, env, NULL, 2, u, 64, &r), -1);
    ck_assert(r == 0);
    /* exactly factor x the envelope is still rounding: the test is "exceeds" */
    const double edge[1] = {64e-7}, e1[1] = {1e-7};
    ck_assert_int_eq(rp_cls_first_break(edge, e1, NULL, 1, u, 64, NULL), -1);
}
END_TEST

START_TEST(test_assignment) {
    int p[4];
    char msg[256];
    /* drift: the diagonal small */
    const double d1[4] = {1e-6, 1.4, 1.4, 1e-6};
    ck_assert_int_eq(rp_cls_assignment(d1, 2, 8, p), 0);
    ck_assert(p[0] == 0 && p[1] == 1);
    /* items come back as [0, 1, 0, 1] (dp-rank-layout): 2 and 3 are 0 and 1 */
    const double d2[16] = {0, 1.4, 1.4, 1.4, 1.4, 0, 1.4, 1.4, 0, 1.4, 1.4, 1.4, 1.4, 0, 1.4, 1.4};
    ck_assert_int_eq(rp_cls_assignment(d2, 4, 8, p), 1);
    ck_assert(p[0] == 0 && p[1] == 1 && p[2] == 0 && p[3] == 1);
    rp_cls_assignment_message(p, 4, msg, sizeof msg);
    ck_assert_str_eq(msg, "item 2 matches reference item 0, item 3 matches reference item 1");
    /* amplified drift: the own item is farther than a stranger, but not "much" */
    const double d3[4] = {0.9, 0.5, 0.5, 0.9};
    ck_assert_int_eq(rp_cls_assignment(d3, 2, 8, p), 0);
    ck_assert(p[0] == 0 && p[1] == 1);
    /* ties go to the item itself */
    const double d4[4] = {0.5, 0.5, 0.5, 0.5};
    ck_assert_int_eq(rp_cls_assignment(d4, 2, 8, p), 0);
}
END_TEST

START_TEST(test_layer_order) {
    static const char *const want[] = {"x_embedder", "t_embedder", "y_embedder",
                                       "blocks.0.attn", "blocks.0.mlp", "blocks.0",
                                       "blocks.2.attn", "blocks.2", "blocks.10.attn",
                                       "single_transformer_blocks.0.proj_out", "single_transformer_blocks.0",
                                       "final_layer", "proj_out", "zz_unknown"};
    const int n = (int)(sizeof want / sizeof want[0]);
    rp_trace_rec r[14];
    memset(r, 0, sizeof r);
    for (int i = 0; i < n; i++) snprintf(r[i].name, sizeof r[i].name, "%s", want[(i * 5 + 3) % n]); /* shuffled */
    rp_cls_sort_layers(r, n);
    for (int i = 0; i < n; i++) ck_assert_str_eq(r[i].name, want[i]);
    /* SD3's joint block: attention, its context half, feed-forwards, outputs */
    static const char *const sd3[] = {"pos_embed", "time_text_embed", "context_embedder", "transformer_blocks.0.attn",
                                      "transformer_blocks.0.attn.context", "transformer_blocks.0.ff",
                                      "transformer_blocks.0.ff_context", "transformer_blocks.0",
                                      "transformer_blocks.0.context", "proj_out"};
    for (int i = 0; i < 10; i++) snprintf(r[i].name, sizeof r[i].name, "%s", sd3[9 - i]);
    r[0].eval = 1; /* a later evaluation sorts after every layer of the first */
    rp_cls_sort_layers(r, 10);
    for (int i = 0; i < 9; i++) ck_assert_str_eq(r[i].name, sd3[i]);
    ck_assert(r[9].eval == 1);
}
END_TEST

START_TEST(test_trace_roundtrip) {
    mkdir(REPRO_TEST_SCRATCH, 0777);
    char path[512];
    snprintf(path, sizeof path, "%s/trace.safetensors", REPRO_TEST_SCRATCH);
    rp_trace t;
    rp_trace_init(&t);
    t.record_evals = 2;
    float x[10];
    for (int i = 0; i < 10; i++) x[i] = (float)i / 3.0f;
    rp_trace_record(&t, "final_layer", x, 10);
    rp_trace_record(&t, "blocks.1", x, 7);
    rp_trace_record(&t, "x_embedder", x, 3);
    rp_trace_next_eval(&t);
    rp_trace_record(&t, "x_embedder", x + 1, 3);
    rp_error e;
    ck_assert(rp_trace_save(&t, path, &e) == RP_OK);
    rp_trace l;
    ck_assert(rp_cls_trace_load(path, &l, &e) == RP_OK);
    ck_assert_int_eq(l.n, 4);
    ck_assert_str_eq(l.recs[0].name, "x_embedder");
    ck_assert_str_eq(l.recs[1].name, "blocks.1");
    ck_assert_str_eq(l.recs[2].name, "final_layer");
    ck_assert(l.recs[3].eval == 1);
    ck_assert(l.recs[2].l2 == t.recs[0].l2 && l.recs[2].numel == 10 && l.recs[2].nsample == 10);
    ck_assert(memcmp(l.recs[2].sample, x, sizeof x) == 0);
    ck_assert(rp_cls_layer_rel(&t.recs[0], &l.recs[2]) == 0);
    rp_trace_free(&l);
    rp_trace_free(&t);
}
END_TEST

/* A twin that moves a layer beyond factor x max(floor, the other twins there) is no rounding
 * of the reference (audit 13: a split-K fixup bug in the reduce-split twin's path); twins
 * that move by roundings, or by nothing, stay. */
START_TEST(test_twins_not_rounding) {
    float x[64], y[64], z[64], w[64];
    for (int i = 0; i < 64; i++) {
        x[i] = 1.0f + (float)i / 7.0f;
        y[i] = i == 5 ? nextafterf(x[i], 100.0f) : x[i]; /* one ulp in one value: a rounding */
        z[i] = x[i];                                       /* bitwise */
        w[i] = i < 32 ? 1.5f * x[i] : x[i];                /* half the values scaled: no rounding */
    }
    rp_trace base, tw[3];
    rp_trace_init(&base);
    for (int t = 0; t < 3; t++) rp_trace_init(&tw[t]);
    rp_trace_record(&base, "blocks.0", x, 64);
    rp_trace_record(&tw[0], "blocks.0", y, 64);
    rp_trace_record(&tw[1], "blocks.0", z, 64);
    rp_trace_record(&tw[2], "blocks.0", w, 64);
    const rp_trace *tr[3] = {&tw[0], &tw[1], &tw[2]};
    int ev[3] = {0, 0, 0};
    unsigned char out[3] = {0};
    char why[3][200];
    const double floor = 8 * 0x1p-24;
    ck_assert_int_eq(rp_cls_twins_not_rounding(&base, 0, tr, ev, 3, floor, 64, out, why), 1);
    ck_assert(!out[0] && !out[1] && out[2]);
    ck_assert_ptr_nonnull(strstr(why[2], "moves blocks.0 by"));
    /* without the bad one: none; a twin with no record there is not compared */
    memset(out, 0, sizeof out);
    ev[2] = -1;
    ck_assert_int_eq(rp_cls_twins_not_rounding(&base, 0, tr, ev, 3, floor, 64, out, why), 0);
    /* one twin alone has nothing to be held to */
    ev[2] = 0;
    ck_assert_int_eq(rp_cls_twins_not_rounding(&base, 0, &tr[2], &ev[2], 1, floor, 64, out, why), 0);
    rp_trace_free(&base);
    for (int t = 0; t < 3; t++) rp_trace_free(&tw[t]);

    /* audit 18: one twin moves the first layer by an ulp, and a later layer that amplifies
     * (a sharpened softmax) by far more than the floor, while the other twin leaves both
     * bitwise (a BLAS that splits no GEMM by threads): no peer measured the later layer,
     * so the twin stays; the same move at its first differing layer is judged */
    float a[64];
    for (int i = 0; i < 64; i++) a[i] = i < 8 ? 1.001f * x[i] : x[i]; /* ~1e-3 relative */
    rp_trace_init(&base);
    for (int t = 0; t < 2; t++) rp_trace_init(&tw[t]);
    rp_trace_record(&base, "x_embedder", x, 64);
    rp_trace_record(&base, "blocks.0.attn", x, 64);
    rp_trace_record(&tw[0], "x_embedder", y, 64);
    rp_trace_record(&tw[0], "blocks.0.attn", a, 64);
    rp_trace_record(&tw[1], "x_embedder", z, 64);
    rp_trace_record(&tw[1], "blocks.0.attn", z, 64);
    ev[0] = ev[1] = 0;
    memset(out, 0, sizeof out);
    ck_assert_int_eq(rp_cls_twins_not_rounding(&base, 0, tr, ev, 2, floor, 64, out, why), 0);
    rp_trace_free(&tw[0]);
    rp_trace_init(&tw[0]);
    rp_trace_record(&tw[0], "x_embedder", x, 64); /* bitwise there: the attention is its first move */
    rp_trace_record(&tw[0], "blocks.0.attn", a, 64);
    ck_assert_int_eq(rp_cls_twins_not_rounding(&base, 0, tr, ev, 2, floor, 64, out, why), 1);
    ck_assert(out[0] && !out[1]);
    ck_assert_ptr_nonnull(strstr(why[0], "moves blocks.0.attn by"));
    /* with a peer that moves the later layer, it is held to that peer as before */
    rp_trace_free(&tw[0]);
    rp_trace_free(&tw[1]);
    rp_trace_init(&tw[0]);
    rp_trace_init(&tw[1]);
    rp_trace_record(&tw[0], "x_embedder", y, 64);
    rp_trace_record(&tw[0], "blocks.0.attn", a, 64);
    rp_trace_record(&tw[1], "x_embedder", y, 64);
    rp_trace_record(&tw[1], "blocks.0.attn", y, 64); /* one ulp: x1e3 less than the other */
    memset(out, 0, sizeof out);
    ck_assert_int_eq(rp_cls_twins_not_rounding(&base, 0, tr, ev, 2, floor, 64, out, why), 1);
    ck_assert(out[0] && !out[1]);
    rp_trace_free(&base);
    for (int t = 0; t < 2; t++) rp_trace_free(&tw[t]);
}
END_TEST

/* A rank's copy of a replicated tensor that differs is a BUG without any envelope; it is
 * named first when it is the earliest evidence; fast mode reports it as NONDETERMINISTIC. */
START_TEST(test_decide_replicas) {
    rp_cls_facts f;
    char s[600];
    rp_cls_facts_init(&f);
    f.promised = 1;
    f.replica_break = 2;
    snprintf(f.replica_tensor, sizeof f.replica_tensor, "guided_output");
    snprintf(f.replica_msg, sizeof f.replica_msg, "rank 1's copy differs from rank 0's (replica group, case run)");
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert(strstr(s, "guided_output") && strstr(s, "step 2") && strstr(s, "rank 1"));
    f.promised = 0;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_NONDETERMINISTIC);
    /* fast mode, but two fresh runs of the case agree: the runs are shown deterministic, and
     * the copy that differs is a bug as in deterministic mode */
    f.fresh_agree = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert(!strstr(s, "fast mode"));
    f.fresh_agree = 0;
    /* a host-computed input (the world group's timestep) no kernel timing moves: a BUG in
     * fast mode too */
    f.replica_host = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert(!strstr(s, "fast mode"));
    /* two fresh runs of the case that differ from each other: a kernel-computed copy that
     * differs is that nondeterminism; a host-computed one is still a BUG */
    f.promised = 1;
    f.fresh_differs = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    f.replica_host = 0;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_NONDETERMINISTIC);
    ck_assert(strstr(s, "replicas differ") && strstr(s, "fresh runs"));
    f.fresh_differs = 0;
    f.promised = 0;
    /* an earlier layer break is named instead (and decides, in fast mode too) */
    f.layer_break = 4;
    snprintf(f.layer_name, sizeof f.layer_name, "blocks.0.attn");
    f.layer_ratio = 1e3;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert(strstr(s, "blocks.0.attn"));
    f.promised = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert(strstr(s, "blocks.0.attn"));
    f.replica_first = 1; /* the driver found the replica earlier (e.g. t_embedder at step 0) */
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert(strstr(s, "replicas differ"));
    /* a MISMATCH still decides first */
    f.mismatch = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_MISMATCH);
}
END_TEST

/* A reference's twins: the option's kinds, plus the attention twin when it rounds coarser
 * than fp32; none for a case that is not a reference (twins 0). */
START_TEST(test_twin_list) {
    rp_case ref, tw;
    rp_case_defaults(&ref);
    int k[RP_CLS_TWIN_KINDS], noise = -1;
    ck_assert_int_eq(rp_cls_twin_list(&ref, 3, k), 3);
    ck_assert(k[0] == 0 && k[1] == 1 && k[2] == 2);
    ck_assert_int_eq(rp_cls_twin_list(&ref, 0, k), 0);
    snprintf(ref.precision, sizeof ref.precision, "bf16");
    ck_assert_int_eq(rp_cls_twin_list(&ref, 3, k), 4);
    ck_assert_int_eq(k[3], RP_CLS_TWIN_ATTENTION);
    ck_assert_str_eq(rp_cls_twin_name(RP_CLS_TWIN_ATTENTION), "attention");
    rp_cls_twin_case(&ref, RP_CLS_TWIN_ATTENTION, &tw, &noise);
    ck_assert_str_eq(tw.attention, "subquad");
    ck_assert(noise == 0 && tw.reduce_split == ref.reduce_split && tw.threads == ref.threads);
    snprintf(ref.device, sizeof ref.device, "cuda"); /* no subquad kernel on a GPU: flash's tiles */
    rp_cls_twin_case(&ref, RP_CLS_TWIN_ATTENTION, &tw, &noise);
    ck_assert_str_eq(tw.attention, "flash");
    snprintf(ref.device, sizeof ref.device, "cpu");
    snprintf(ref.attention, sizeof ref.attention, "flash");
    rp_cls_twin_case(&ref, RP_CLS_TWIN_ATTENTION, &tw, &noise);
    ck_assert_str_eq(tw.attention, "math");
    ck_assert(rp_cls_twin_other_math(0) && rp_cls_twin_other_math(1) && !rp_cls_twin_other_math(2));
    ck_assert(rp_cls_twin_other_math(RP_CLS_TWIN_ATTENTION));
    /* whose envelope a case takes: every twin's, but the attention twin's only where the case's
     * attention may run another algorithm or order than the reference's */
    rp_case c = ref;
    c.dp = 2, c.cfg_parallel = 2, c.threads = 2, c.reduce_split = 1;
    snprintf(c.backend, sizeof c.backend, "gloo");
    ck_assert(!rp_cls_twin_applies(RP_CLS_TWIN_ATTENTION, &c, &ref));
    for (int t = 0; t < RP_CLS_MAX_TWINS; t++) ck_assert(rp_cls_twin_applies(t, &c, &ref));
    c.ring = 2;
    ck_assert(rp_cls_twin_applies(RP_CLS_TWIN_ATTENTION, &c, &ref));
    c.ring = 1, c.ulysses = 2;
    ck_assert(rp_cls_twin_applies(RP_CLS_TWIN_ATTENTION, &c, &ref));
    c.ulysses = 1;
    snprintf(c.attention, sizeof c.attention, "subquad");
    ck_assert(rp_cls_twin_applies(RP_CLS_TWIN_ATTENTION, &c, &ref));
    c = ref;
    snprintf(c.blas_core, sizeof c.blas_core, "Haswell");
    ck_assert(rp_cls_twin_applies(RP_CLS_TWIN_ATTENTION, &c, &ref));
}
END_TEST

/* The floor follows the precision the GEMMs really run: fp32 on a GPU in fast mode is TF32. */
START_TEST(test_effective_precision) {
    rp_case c;
    rp_case_defaults(&c);
    ck_assert_str_eq(rp_cls_effective_precision(&c), "fp32");
    snprintf(c.device, sizeof c.device, "cuda:H100");
    ck_assert_str_eq(rp_cls_effective_precision(&c), "fp32"); /* deterministic: no TF32 */
    snprintf(c.gpu_mode, sizeof c.gpu_mode, "fast");
    ck_assert_str_eq(rp_cls_effective_precision(&c), "tf32");
    ck_assert(rp_cls_unit_roundoff(rp_cls_effective_precision(&c)) == 0x1p-11);
    snprintf(c.precision, sizeof c.precision, "bf16");
    ck_assert_str_eq(rp_cls_effective_precision(&c), "bf16");
    snprintf(c.precision, sizeof c.precision, "fp32");
    snprintf(c.device, sizeof c.device, "cpu");
    ck_assert_str_eq(rp_cls_effective_precision(&c), "fp32");
}
END_TEST

/* invariant pairs: both invariant, only layout / fault apart; then any break is a BUG that
 * names the first differing tensor, however small its ratio */
START_TEST(test_invariant_pair) {
    rp_case ref, c;
    rp_case_defaults(&ref);
    snprintf(ref.numerics, sizeof ref.numerics, "invariant");
    c = ref;
    c.dp = 2, c.ring = 2, c.threads = 2;
    snprintf(c.backend, sizeof c.backend, "gloo");
    snprintf(c.blas_core, sizeof c.blas_core, "Haswell");
    snprintf(c.inject, sizeof c.inject, "norm-eps-rank");
    ck_assert(rp_cls_invariant_pair(&c, &ref));
    /* one forward per item: an item's rows are the same bits in a batch of any size there */
    snprintf(c.batch_forward, sizeof c.batch_forward, "per-item");
    ck_assert(rp_cls_invariant_pair(&c, &ref));
    snprintf(c.precision, sizeof c.precision, "bf16"); /* other arithmetic: an envelope again */
    ck_assert(!rp_cls_invariant_pair(&c, &ref));
    c = ref;
    snprintf(c.numerics, sizeof c.numerics, "default");
    ck_assert(!rp_cls_invariant_pair(&c, &ref));
    ck_assert(!rp_cls_invariant_pair(&ref, &c));
    c = ref;
    c.pipefusion = 2; /* approximate: never a pair */
    ck_assert(!rp_cls_invariant_pair(&c, &ref));
    rp_case tw;
    int noise = 0;
    rp_cls_twin_case(&ref, 0, &tw, &noise); /* its twins vary the default numerics' rounding */
    ck_assert_str_eq(tw.numerics, "default");

    rp_cls_facts f;
    char s[1024];
    rp_cls_facts_init(&f);
    f.invariant = 1;
    f.layer_break = 3;
    f.layer_ratio = INFINITY;
    snprintf(f.layer_name, sizeof f.layer_name, "blocks.0.mlp");
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert_msg(strstr(s, "numerics invariant: blocks.0.mlp differs from the reference at step 0"), "%s", s);
    rp_cls_facts_init(&f);
    f.invariant = 1;
    f.identical = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_IDENTICAL);
}
END_TEST

/* The decoder's rule (docs/classification.md §8): bitwise for the reference's decoder
 * arithmetic, whatever the layout; one level for other fp32 arithmetic; none for a coarser
 * precision with other arithmetic (the worker then makes no decode of it). */
START_TEST(test_decode_rule) {
    rp_case ref, c;
    rp_case_defaults(&ref);
    c = ref;
    c.dp = 2;
    c.ulysses = 2; /* the layout: each item is decoded alone, as the reference decodes it */
    ck_assert_int_eq(rp_cls_decode_rule_of(&c, &ref), RP_CLS_DECODE_BITWISE);
    snprintf(c.blas_core, sizeof c.blas_core, "Haswell"); /* other GEMM kernels, fp32 */
    ck_assert_int_eq(rp_cls_decode_rule_of(&c, &ref), RP_CLS_DECODE_ONE_LEVEL);
    snprintf(c.precision, sizeof c.precision, "bf16"); /* and a coarser rounding */
    ck_assert_int_eq(rp_cls_decode_rule_of(&c, &ref), RP_CLS_DECODE_NONE);
    snprintf(ref.precision, sizeof ref.precision, "bf16");
    snprintf(c.blas_core, sizeof c.blas_core, "%s", ref.blas_core); /* bf16 both, the same arithmetic */
    ck_assert_int_eq(rp_cls_decode_rule_of(&c, &ref), RP_CLS_DECODE_BITWISE);
    snprintf(c.attention, sizeof c.attention, "flash"); /* the VAE's attention too */
    ck_assert_int_eq(rp_cls_decode_rule_of(&c, &ref), RP_CLS_DECODE_NONE);
    /* the images' teacher forcing decodes with the reference's arithmetic where the case's
     * process can (rp_cls_decode_as): the flash case's teacher decode is then bitwise ... */
    rp_case as;
    c.reduce_split = 1;
    c.attn_kv_chunk = 16;
    ck_assert(rp_cls_decode_as(&c, &ref, &as));
    ck_assert_str_eq(as.attention, ref.attention);
    ck_assert(as.reduce_split == ref.reduce_split && as.attn_kv_chunk == ref.attn_kv_chunk && as.dp == 2);
    ck_assert_int_eq(rp_cls_teacher_decode_rule(&c, &ref), RP_CLS_DECODE_BITWISE);
    /* ... and at the reference's thread count (set for the decode alone: audit 12's bf16 image
     * on one rank escaped in a threads 2 case, whose rule was none) ... */
    c.threads = ref.threads + 1;
    ck_assert(rp_cls_decode_as(&c, &ref, &as) && as.threads == ref.threads);
    ck_assert_int_eq(rp_cls_teacher_decode_rule(&c, &ref), RP_CLS_DECODE_BITWISE);
    c.threads = ref.threads;
    /* ... but not across a kernel set or a CUDA device (process state) */
    snprintf(c.blas_core, sizeof c.blas_core, "Haswell");
    ck_assert(!rp_cls_decode_as(&c, &ref, &as) && as.reduce_split == 1);
    ck_assert_int_eq(rp_cls_teacher_decode_rule(&c, &ref), RP_CLS_DECODE_NONE);
    snprintf(c.blas_core, sizeof c.blas_core, "%s", ref.blas_core);
    snprintf(c.device, sizeof c.device, "cuda");
    snprintf(ref.device, sizeof ref.device, "cuda");
    ck_assert(!rp_cls_decode_as(&c, &ref, &as));
    /* the same arithmetic already: nothing to take */
    c = ref;
    c.dp = 2;
    snprintf(c.device, sizeof c.device, "cpu");
    snprintf(ref.device, sizeof ref.device, "cpu");
    ck_assert(!rp_cls_decode_as(&c, &ref, &as));
    /* the own-arithmetic decode: made (at fp32: one level) only where the teacher decode took
     * the reference's arithmetic */
    snprintf(c.attention, sizeof c.attention, "flash"); /* c: ref at dp 2 on the host */
    snprintf(c.precision, sizeof c.precision, "fp32");
    snprintf(ref.precision, sizeof ref.precision, "fp32");
    ck_assert_int_eq(rp_cls_own_decode_rule(&c, &ref), RP_CLS_DECODE_ONE_LEVEL);
    snprintf(c.precision, sizeof c.precision, "bf16");
    snprintf(ref.precision, sizeof ref.precision, "bf16");
    ck_assert_int_eq(rp_cls_own_decode_rule(&c, &ref), RP_CLS_DECODE_NONE); /* no rule holds a bf16 one */
    /* ... it is the fp32 shadow's decode then, against the reference's fp32 shadow's */
    ck_assert(rp_cls_decode_shadow(&c, &ref) && rp_cls_decode_shadow_ref(&c, &ref));
    snprintf(ref.precision, sizeof ref.precision, "fp32"); /* against the reference's own images */
    ck_assert(rp_cls_decode_shadow(&c, &ref) && !rp_cls_decode_shadow_ref(&c, &ref));
    snprintf(c.blas_core, sizeof c.blas_core, "Haswell"); /* another kernel set: still one level at fp32 */
    ck_assert(rp_cls_decode_shadow(&c, &ref));
    snprintf(c.blas_core, sizeof c.blas_core, "%s", ref.blas_core);
    snprintf(ref.precision, sizeof ref.precision, "bf16");
    snprintf(c.attention, sizeof c.attention, "%s", ref.attention); /* the same decoder: bitwise already */
    ck_assert(!rp_cls_decode_shadow(&c, &ref));
    c.threads = ref.threads + 1;
    ck_assert(rp_cls_decode_shadow(&c, &ref));
    snprintf(c.precision, sizeof c.precision, "fp32"); /* a decoder at fp32 has its own rule */
    ck_assert(!rp_cls_decode_shadow(&c, &ref));
    snprintf(c.precision, sizeof c.precision, "bf16");
    snprintf(c.device, sizeof c.device, "cuda"); /* no fp32 shadow on a device */
    ck_assert(!rp_cls_decode_shadow(&c, &ref));
    ck_assert(rp_cls_one_level_fraction(64) == 64 * 255 * 0x1p-24);
    /* the count: the Poisson(lambda) tail below 1e-6 (lambda = n x the fraction) */
    ck_assert_uint_eq(rp_cls_one_level_count(3072, 64), 14);     /* lambda 2.99 */
    ck_assert_uint_eq(rp_cls_one_level_count(196608, 64), 260);  /* lambda 191 */
    ck_assert_uint_eq(rp_cls_one_level_count(0, 64), 0);
    ck_assert(rp_cls_one_level_count(4 * 1024 * 1024 * 3, 64) > 12288 * 64 * 255 * 0x1p-24 * 1024); /* no underflow */
}
END_TEST

START_TEST(test_invariant_shadow) {
    rp_case ref, c, sh;
    rp_case_defaults(&ref);
    c = ref;
    c.ulysses = 2;
    snprintf(c.attention, sizeof c.attention, "flash");
    c.attn_q_chunk = 16;
    c.reduce_split = 1;
    snprintf(c.expect, sizeof c.expect, "drift");
    ck_assert(rp_cls_invariant_shadow(&c, &sh));
    ck_assert_str_eq(sh.numerics, "invariant");
    ck_assert_str_eq(sh.attention, "math");
    ck_assert_int_eq(sh.attn_q_chunk, 0);
    ck_assert_int_eq(sh.reduce_split, 0);
    ck_assert_int_eq(sh.ulysses, 2); /* the layout is what it tests */
    ck_assert_str_eq(sh.expect, "");
    ck_assert(rp_cls_invariant_shadow_pair(&c, &ref));
    /* only the rounding choices the shadow normalises differ: nothing to compare */
    c.ulysses = 1;
    ck_assert(!rp_cls_invariant_shadow_pair(&c, &ref));
    snprintf(c.inject, sizeof c.inject, "attn-scale"); /* a fault: the shadows differ */
    ck_assert(rp_cls_invariant_shadow_pair(&c, &ref));
    /* another OpenBLAS kernel set alone: no invariant kernel calls the BLAS, so the shadows
     * are the same operations; another thread count picks our own kernels' partitions */
    c = ref;
    snprintf(c.blas_core, sizeof c.blas_core, "Haswell");
    ck_assert(!rp_cls_invariant_shadow_pair(&c, &ref));
    c.threads = ref.threads + 1;
    ck_assert(rp_cls_invariant_shadow_pair(&c, &ref));
    /* one forward per item against a joint reference: the same rows' bits under invariant
     * numerics, but another run (audit 18: a per-item case's later items had no exact
     * comparison), with a layout or alone */
    c = ref;
    snprintf(c.batch_forward, sizeof c.batch_forward, "per-item");
    ck_assert(rp_cls_invariant_shadow_pair(&c, &ref));
    c.dp = 2;
    ck_assert(rp_cls_invariant_shadow_pair(&c, &ref));
    /* a bf16 case's shadow runs at fp32, as the fp32 case's does: the same layout code at a
     * resolution where a fault below bf16's rounding still moves bits; so a bf16 case pairs
     * with an fp32 reference (both shadows fp32) and with a bf16 one */
    c = ref;
    c.dp = 2;
    snprintf(c.precision, sizeof c.precision, "bf16");
    ck_assert(rp_cls_invariant_shadow(&c, &sh));
    ck_assert_str_eq(sh.precision, "fp32");
    ck_assert(rp_cls_invariant_shadow_pair(&c, &ref));
    rp_case bref = ref;
    snprintf(bref.precision, sizeof bref.precision, "bf16");
    ck_assert(rp_cls_invariant_shadow_pair(&c, &bref));
    c.dp = 1; /* only the precision differs: the shadows are one case, nothing to compare */
    ck_assert(!rp_cls_invariant_shadow_pair(&c, &ref));
    c = ref;
    c.pipefusion = 2;
    c.steps = 10;
    c.warmup_steps = 0; /* approximate from its first step: a shadow of that step, run with fresh keys */
    ck_assert(rp_cls_invariant_shadow(&c, &sh));
    ck_assert_int_eq(rp_cls_exact_steps(&c), 0);
    ck_assert_int_eq(rp_cls_shadow_steps(&c), 1);
    c.warmup_steps = 2; /* exact through its warmup: a shadow (compared there and at the first step after
                         * them, with fresh keys), paired with the serial one's */
    ck_assert(rp_cls_invariant_shadow(&c, &sh));
    ck_assert_int_eq(sh.pipefusion, 2);
    ck_assert_int_eq(rp_cls_shadow_steps(&c), 3);
    ck_assert(rp_cls_invariant_shadow_pair(&c, &ref));
    c.warmup_steps = 10; /* warmup covers every step: exact throughout, nothing after it */
    ck_assert_int_eq(rp_cls_shadow_steps(&c), 10);
    /* on a GPU: an exact layout in fp32 or bf16 has one, paired only with a reference on the
     * same device (a CPU reference's other kernels differ from the GPU's) */
    rp_case gref = ref;
    snprintf(gref.device, sizeof gref.device, "cuda");
    c = gref;
    c.dp = 2;
    snprintf(c.inject, sizeof c.inject, "norm-eps-rank");
    ck_assert(rp_cls_invariant_shadow(&c, &sh));
    ck_assert_str_eq(sh.device, "cuda");
    ck_assert(rp_cls_invariant_shadow_pair(&c, &gref));
    ck_assert(!rp_cls_invariant_shadow_pair(&c, &ref));
    snprintf(c.precision, sizeof c.precision, "bf16"); /* its shadow at fp32, as on the CPU */
    snprintf(gref.precision, sizeof gref.precision, "bf16");
    ck_assert(rp_cls_invariant_shadow(&c, &sh));
    ck_assert_str_eq(sh.precision, "fp32");
    ck_assert(rp_cls_invariant_shadow_pair(&c, &gref));
    snprintf(c.precision, sizeof c.precision, "tf32"); /* the invariant kernels take fp32 or bf16 */
    ck_assert(!rp_cls_invariant_shadow(&c, &sh));
    c = gref;
    c.pipefusion = 2;
    c.steps = 10;
    c.warmup_steps = 2; /* approximate: its fresh-key step has not run on a GPU */
    ck_assert(!rp_cls_invariant_shadow(&c, &sh));
    c = ref;
    snprintf(c.numerics, sizeof c.numerics, "invariant"); /* its own pair needs none */
    ck_assert(!rp_cls_invariant_shadow(&c, &sh));

    /* a shadow's difference is a BUG with no ratio, unless the runs are shown nondeterministic */
    rp_cls_facts f;
    char s[1024];
    rp_cls_facts_init(&f);
    f.step_break = 2;
    f.step_invariant = 1;
    f.step_ratio = INFINITY;
    snprintf(f.step_layer, sizeof f.step_layer, "blocks.0.mlp");
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert_msg(strstr(s, "blocks.0.mlp differs from the reference's at step 2 in the invariant shadow"), "%s", s);
    f.promised = 1;
    f.leak_differs = f.fresh_differs = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_NONDETERMINISTIC);
    /* the leak check agreed (a nondeterministic difference absorbed by rounding at step 0)
     * but the shadow differed: the fresh runs made for the shadow decide */
    f.leak_differs = 0;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_NONDETERMINISTIC);
    ck_assert_msg(strstr(s, "the invariant shadow differs") && strstr(s, "two fresh runs"), "%s", s);
    f.fresh_differs = 0; /* they agree: the shadow's difference is the case's own */
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert_msg(strstr(s, "in the invariant shadow"), "%s", s);
    /* ... unless the leak check differs too: the shadow ran after the case's run, so a leak
     * confirmed by the fresh pair reached it, and the leak is named, not the shadow's layer;
     * a later run's replica break and teacher decode likewise */
    f.leak_differs = 1;
    f.leak_step = 0;
    f.leak_fp32 = 1;
    f.image_break = 1;
    f.replica_break = 0;
    f.replica_later = 1;
    snprintf(f.replica_tensor, sizeof f.replica_tensor, "t_embedder");
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert_msg(strstr(s, "step 0 of the fp32 shadow recomputed") && strstr(s, "state leaks between calls"), "%s", s);
    /* the case's own run (the launch's first call) still names an earlier cause */
    f.replica_later = 0;
    f.replica_first = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert_msg(strstr(s, "replicas differ: t_embedder"), "%s", s);
    f.replica_break = -1;
    f.layer_break = 3;
    snprintf(f.layer_name, sizeof f.layer_name, "blocks.0.attn");
    f.layer_ratio = 900;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert_msg(strstr(s, "blocks.0.attn breaks the envelope"), "%s", s);
    /* where the fresh runs differ the leak is not confirmed: the nondeterminism is named */
    f.layer_break = -1;
    f.image_break = -1;
    f.fresh_differs = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_NONDETERMINISTIC);
}
END_TEST

/* PipeFusion's serial emulation: the same case (and source: its fault, unless the fault sits
 * behind `stage > 0`) on one stage over the same patches; and what its comparison decides. */
START_TEST(test_emulation) {
    rp_case c, e;
    rp_case_defaults(&c);
    ck_assert(!rp_cls_emulation(&c, &e)); /* no stages: nothing to emulate */
    c.pipefusion = 4;
    c.warmup_steps = 2;
    c.n_pipefusion_layers = 4;
    for (int i = 0; i < 4; i++) c.pipefusion_layers[i] = 1;
    snprintf(c.expect, sizeof c.expect, "approx");
    snprintf(c.inject, sizeof c.inject, "pipefusion-skip-refresh");
    ck_assert(rp_cls_emulation(&c, &e));
    ck_assert_int_eq(e.pipefusion, 1);
    ck_assert_int_eq(e.num_pipeline_patch, 4); /* 0 meant the degree */
    ck_assert_int_eq(rp_case_pipeline_patches(&e), 4);
    ck_assert_int_eq(e.n_pipefusion_layers, 0);
    ck_assert_int_eq(e.warmup_steps, 2);
    ck_assert_str_eq(e.expect, "");
    ck_assert_str_eq(e.inject, "pipefusion-skip-refresh"); /* its one stage is the last: it acts there */
    ck_assert_int_eq(rp_case_exactness(&e), RP_PAR_WARMUP_EXACT); /* approximate, as the case */
    ck_assert_int_eq(rp_cls_exact_steps(&e), 2);
    c.num_pipeline_patch = 8;
    snprintf(c.inject, sizeof c.inject, "pipefusion-stream-stale"); /* behind stage > 0: never reached */
    ck_assert(rp_cls_emulation(&c, &e));
    ck_assert_int_eq(e.num_pipeline_patch, 8);
    ck_assert_str_eq(e.inject, "");
    c.steps = 2; /* warmup covers every step: all synchronous, nothing to emulate */
    ck_assert(!rp_cls_emulation(&c, &e));
    c.steps = 3;
    ck_assert(rp_cls_emulation(&c, &e));
    snprintf(c.device, sizeof c.device, "cuda"); /* not run on a GPU yet */
    ck_assert(!rp_cls_emulation(&c, &e));

    rp_cls_facts f;
    char s[600];
    rp_cls_facts_init(&f);
    f.approx = 1;
    f.have_quality = 1;
    f.ssim = 0.95, f.psnr = 30, f.bound_ssim = 0.9, f.bound_psnr = 25;
    f.emulation_patches = 2;
    f.emulation_equal = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_APPROX);
    ck_assert_msg(strstr(s, "bitwise its serial emulation (one stage, 2 patches)"), "%s", s);
    f.emulation_equal = 0;
    f.step_break = 3; /* within the images' bound, and still a bug: exact evidence */
    f.step_ratio = INFINITY;
    f.step_emulation = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert_msg(strstr(s, "differs from the case's serial emulation's at step 3"), "%s", s);
    f.fresh_differs = 1; /* an exact comparison of nondeterministic runs proves nothing */
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_NONDETERMINISTIC);
    ck_assert_msg(strstr(s, "the case differs from its serial emulation"), "%s", s);
}
END_TEST

/* The witnesses that are no other run come before the numbers' evidence: the teacher's input
 * (the harness's fault) even before an assignment, the kernel and the draw after it. */
START_TEST(test_decide_witnesses) {
    rp_cls_facts f;
    char s[600];
    rp_cls_facts_init(&f);
    f.step_break = 1; /* what a wrongly fed teacher shows */
    f.mismatch = 1;
    snprintf(f.mismatch_msg, sizeof f.mismatch_msg, "item 1 matches reference item 0");
    f.teacher_input_break = 1;
    snprintf(f.teacher_input_msg, sizeof f.teacher_input_msg, "the teacher-forcing run of item 1 holds row 0 ...");
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert(strstr(s, "teacher-forcing run of item 1"));
    f.teacher_input_break = -1;
    f.ran_break = 1;
    snprintf(f.ran_msg, sizeof f.ran_msg, "the case asks for attention flash but the math kernel ran");
    f.noise_draw_break = 0;
    snprintf(f.noise_draw_msg, sizeof f.noise_draw_msg, "item 0's initial noise is not the draw of its seed");
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_MISMATCH);
    f.mismatch = 0;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert(strstr(s, "math kernel ran"));
    f.ran_break = 0;
    f.identical = 1; /* bitwise the reference's: the draw still decides */
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert(strstr(s, "not the draw of its seed"));
}
END_TEST

START_TEST(test_decide) {
    rp_cls_facts f;
    char s[600];
    rp_cls_facts_init(&f);
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_DRIFT);
    f.identical = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_IDENTICAL);
    f.identical = 0;
    f.approx = 1;
    f.have_quality = 1;
    f.ssim = 0.95, f.psnr = 30, f.bound_ssim = 0.9, f.bound_psnr = 25;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_APPROX);
    ck_assert(!rp_cls_below_bound(&f));
    f.psnr = 20; /* below the bound, every exact check held: the approximation's loss, a failed
                  * requirement (rp_cls_below_bound), not a BUG */
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_APPROX);
    ck_assert(strstr(s, "below the quality bound"));
    ck_assert(rp_cls_below_bound(&f));
    f.step_break = 4; /* an exact check that broke still decides */
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    f.step_break = -1;
    f.approx = 0;
    /* determinism: promised -> the leak is a BUG; fast mode -> reported as NONDETERMINISTIC */
    f.leak_differs = 1;
    f.promised = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    f.promised = 0;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_NONDETERMINISTIC);
    ck_assert(!rp_verdict_fails(RP_V_NONDETERMINISTIC, 0) && rp_verdict_fails(RP_V_NONDETERMINISTIC, 1));
    /* the leak check differs and so does a fresh rerun: nondeterminism, in either mode */
    f.fresh_differs = 1;
    f.promised = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_NONDETERMINISTIC);
    ck_assert(strstr(s, "two fresh runs of the case alone differ too"));
    f.fresh_differs = 0;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert(strstr(s, "state leaks between calls"));
    /* the self check's steps differ as a fresh launch's first call too: no earlier call is
     * involved, the sampling loop is named (a BUG); with the fresh pair differing, the
     * nondeterminism still is */
    f.loop_differs = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert_msg(strstr(s, "the sampling loop computes other bits") && !strstr(s, "leaks"), "%s", s);
    f.fresh_differs = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_NONDETERMINISTIC);
    f.fresh_differs = f.loop_differs = 0;
    f.promised = 0;
    f.repeats_differ = 1;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_NONDETERMINISTIC);
    /* a step beyond the envelope, with the layer found in that step */
    f.step_break = 3;
    f.step_ratio = 1e5;
    snprintf(f.step_layer, sizeof f.step_layer, "t_embedder");
    f.step_layer_ratio = 4e6;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert(strstr(s, "t_embedder") && strstr(s, "at step 3"));
    /* a layer of the first evaluation comes first */
    f.layer_break = 4;
    f.layer_ratio = 812;
    snprintf(f.layer_name, sizeof f.layer_name, "blocks.3.attn");
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert_str_eq(s, "blocks.3.attn breaks the envelope x812 at step 0 (first evaluation); the first local error "
                        "beyond it is later");
    f.noise_break = 1;
    f.noise_ratio = 1e9;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_BUG);
    ck_assert(strstr(s, "initial noise") && strstr(s, "blocks.3.attn"));
    f.mismatch = 1;
    snprintf(f.mismatch_msg, sizeof f.mismatch_msg, "item 0 matches reference item 2");
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_MISMATCH);
    ck_assert_str_eq(s, "item 0 matches reference item 2");
    f.failed = RP_V_HANG;
    ck_assert(rp_cls_decide(&f, s, sizeof s) == RP_V_HANG);
    /* the labels */
    ck_assert(rp_cls_meets(RP_V_DRIFT, RP_V_IDENTICAL) && rp_cls_meets(RP_V_APPROX, RP_V_DRIFT));
    ck_assert(!rp_cls_meets(RP_V_BUG, RP_V_MISMATCH) && !rp_cls_meets(RP_V_DRIFT, RP_V_APPROX));
    ck_assert(rp_cls_meets(RP_V_MISMATCH, RP_V_MISMATCH));
}
END_TEST

/* ---- the driver on written directories ------------------------------------------------- */

enum { N = 4, B = 2, PER = 8 }; /* steps, items, floats per item */

/* A reproducible pseudo-random value in [-1, 1). */
static float prand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((double)(*s >> 8) / (1 << 23) - 1.0);
}

/* The reference trajectory (N + 1, B, PER): per item its own noise, then a smooth decay. */
/* Row 0: item b's noise as the pipeline draws it from seed b (write_run's items) at index b,
 * which the classifier draws again (cls_noise_draw). */
static void ref_traj(float *x) {
    for (int b = 0; b < B; b++) rp_randn(x + b * PER, PER, (uint64_t)b, (uint64_t)b, RP_STREAM_INIT_NOISE);
    for (int k = 1; k <= N; k++)
        for (int i = 0; i < B * PER; i++) x[k * B * PER + i] = 0.8f * x[(k - 1) * B * PER + i] + 0.1f;
}

/* x += amp * (pseudo-random) on rows [k0, N] (a rounding-sized or a bug-sized change). */
static void nudge(float *x, int k0, double amp, unsigned seed) {
    for (int k = k0; k <= N; k++)
        for (int i = 0; i < B * PER; i++) x[k * B * PER + i] += (float)(amp * prand(&seed)) * fabsf(x[k * B * PER + i]);
}

/* A drifting case of the reference trajectory r: t, its teacher run, every step one
 * rounding-sized local error (3e-7 relative) off r; x, its free run, t's step 0 and from
 * step 1 on an amplified difference (1e-2 relative): a large final difference. */
static void drift_of(const float *r, float *x, float *t) {
    memcpy(t, r, sizeof(float) * (N + 1) * B * PER);
    nudge(t, 1, 3e-7, 6);
    memcpy(x, r, sizeof(float) * (N + 1) * B * PER);
    nudge(x, 2, 1e-2, 5);
    memcpy(x + B * PER, t + B * PER, sizeof(float) * B * PER);
}

static void mkdirs(const char *d) {
    rp_error e;
    ck_assert_msg(rp_store_mkdirs(d, &e) == RP_OK, "%s", e.msg);
}

static void write_st(const char *dir, const char *file, const char *name, const float *traj, const float *steps) {
    char p[2048];
    snprintf(p, sizeof p, "%.1000s/%.100s", dir, file);
    rp_st_writer *w = rp_st_writer_new();
    const int64_t shape[5] = {N + 1, B, 2, 2, 2}, ns[1] = {N};
    rp_error e;
    ck_assert(rp_st_writer_add(w, name, RP_DT_F32, 5, shape, traj, &e) == RP_OK);
    if (steps) ck_assert(rp_st_writer_add(w, "steps", RP_DT_F32, 1, ns, steps, &e) == RP_OK);
    ck_assert_msg(rp_st_writer_write(w, p, &e) == RP_OK, "%s", e.msg);
    rp_st_writer_free(w);
}

/* A trace of two layers whose samples are the trajectory's row 0 (x_embedder) and row 0
 * scaled by attn_scale (blocks.0.attn). */
static void write_trace(const char *dir, const float *traj, float attn_scale) {
    rp_trace t;
    rp_trace_init(&t);
    float y[B * PER];
    for (int i = 0; i < B * PER; i++) y[i] = traj[i] * attn_scale;
    rp_trace_record(&t, "x_embedder", traj, B * PER);
    rp_trace_record(&t, "blocks.0.attn", y, B * PER);
    char p[2048];
    snprintf(p, sizeof p, "%.1000s/trace.safetensors", dir);
    rp_error e;
    ck_assert(rp_trace_save(&t, p, &e) == RP_OK);
    rp_trace_free(&t);
}

/* The trace of a teacher run in dir/teacher: for every step k, x_embedder = the trajectory's
 * row k and blocks.0.attn = that row scaled by attn_scale (at step bad_step by bad_scale). */
static void write_teacher_trace(const char *dir, const float *traj, float attn_scale, int bad_step, float bad_scale) {
    rp_trace t;
    rp_trace_init(&t);
    t.record_evals = N;
    float y[B * PER];
    for (int k = 0; k < N; k++) {
        const float sc = k == bad_step ? bad_scale : attn_scale;
        for (int i = 0; i < B * PER; i++) y[i] = traj[k * B * PER + i] * sc;
        rp_trace_record(&t, "x_embedder", traj + k * B * PER, B * PER);
        rp_trace_record(&t, "blocks.0.attn", y, B * PER);
        rp_trace_next_eval(&t);
    }
    char p[2048];
    snprintf(p, sizeof p, "%.1000s/teacher/trace.safetensors", dir);
    rp_error e;
    ck_assert_msg(rp_trace_save(&t, p, &e) == RP_OK, "%s", e.msg);
    rp_trace_free(&t);
}

static void write_text(const char *dir, const char *file, const char *text) {
    char p[2048];
    snprintf(p, sizeof p, "%.1000s/%.100s", dir, file);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* A finished run in dir: case.json (model dit-tiny, N steps, expect label), its trajectory,
 * trace, done.json, optionally a teacher run. */
static void write_run(const char *dir, const char *expect, const float *traj, float attn_scale, const float *teacher) {
    mkdirs(dir);
    rp_case c;
    rp_case_defaults(&c);
    c.steps = N;
    c.n_items = B;
    c.items[1].seed = 1;
    snprintf(c.expect, sizeof c.expect, "%s", expect);
    char p[2048];
    snprintf(p, sizeof p, "%.1000s/case.json", dir);
    rp_error e;
    ck_assert(rp_case_save(&c, p, &e) == RP_OK);
    write_st(dir, "latents.safetensors", "trajectory", traj, NULL);
    write_trace(dir, traj, attn_scale);
    write_text(dir, "done.json", "{}\n");
    if (teacher) {
        char td[2048];
        snprintf(td, sizeof td, "%.1000s/teacher", dir);
        mkdirs(td);
        const float steps[N] = {1, 1, 1, 1};
        write_st(td, "teacher.safetensors", "teacher", teacher, steps);
        write_text(td, "done.json", "{}\n");
    }
}

/* Rewrites dir's latents.safetensors with the trajectory, the final latents the run
 * returned (B, 2, 2, 2) and, unless NULL, the initial noise it returned (B, 2, 2, 2). */
static void write_outputs(const char *dir, const float *traj, const float *final, const float *noise) {
    char p[2048];
    snprintf(p, sizeof p, "%.1000s/latents.safetensors", dir);
    rp_st_writer *w = rp_st_writer_new();
    const int64_t shape[5] = {N + 1, B, 2, 2, 2}, lat[4] = {B, 2, 2, 2};
    rp_error e;
    ck_assert(rp_st_writer_add(w, "trajectory", RP_DT_F32, 5, shape, traj, &e) == RP_OK);
    ck_assert(rp_st_writer_add(w, "latents", RP_DT_F32, 4, lat, final, &e) == RP_OK);
    if (noise) ck_assert(rp_st_writer_add(w, "noise", RP_DT_F32, 4, lat, noise, &e) == RP_OK);
    ck_assert_msg(rp_st_writer_write(w, p, &e) == RP_OK, "%s", e.msg);
    rp_st_writer_free(w);
}

static void write_latents(const char *dir, const float *traj, const float *final) {
    write_outputs(dir, traj, final, NULL);
}

/* Classifies cd against rd with the twins of twin_base (NULL: rd's own, a reference made
 * here; else rd is a golden from elsewhere). */
static rp_verdict classify_with(const char *cd, const char *rd, const char *twin_base, int repeat, cJSON **j) {
    rp_cls_inputs in;
    memset(&in, 0, sizeof in);
    in.case_dir = cd;
    in.ref_dir = rd;
    in.twin_base_dir = twin_base;
    in.repeat = repeat;
    rp_classify_opts_default(&in.opts);
    rp_verdict v = RP_V_COUNT;
    int pass = -1;
    rp_error e;
    ck_assert_msg(rp_classify_dir(&in, &v, &pass, &e) == RP_OK, "%s", e.msg);
    char p[2048];
    snprintf(p, sizeof p, "%.1000s/classification.json", cd);
    ck_assert(rp_store_read_json(p, j, &e) == RP_OK);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(*j, "pass")) == pass);
    return v;
}

static rp_verdict classify(const char *cd, const char *rd, int repeat, cJSON **j) {
    return classify_with(cd, rd, NULL, repeat, j);
}

static const cJSON *path(const cJSON *j, const char *a, const char *b, const char *c) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    if (c) x = cJSON_GetObjectItemCaseSensitive(x, c);
    return x;
}

START_TEST(test_driver) {
    char root[512], ref[600], d[700];  /* sizes: the scratch path is short */
    snprintf(root, sizeof root, "%s/driver", REPRO_TEST_SCRATCH);
    rp_error e;
    (void)rp_store_remove_tree(root, &e);
    snprintf(ref, sizeof ref, "%s/ref", root);
    static float r[(N + 1) * B * PER], x[(N + 1) * B * PER], t[(N + 1) * B * PER];
    ref_traj(r);
    write_run(ref, "", r, 0.5f, r); /* its own teacher run reproduces it */
    /* twins: a rounding-sized change everywhere but the noise (and one noise twin) */
    const char *names[3] = {"reduce-split", "threads", "noise-ulp"};
    for (int k = 0; k < 3; k++) {
        snprintf(d, sizeof d, "%s/twins/%s", ref, names[k]);
        memcpy(x, r, sizeof r);
        nudge(x, k == 2 ? 0 : 1, 4e-7, 11 + k);
        memcpy(t, r, sizeof r);
        nudge(t, 1, 2e-7, 21 + k);
        write_run(d, "", x, 0.5f * (1 + 3e-7f * (float)k), k == 2 ? NULL : t);
    }
    cJSON *j = NULL;

    /* the reference itself */
    ck_assert(classify(ref, ref, 1, &j) == RP_V_IDENTICAL);
    cJSON_Delete(j);

    /* drift: accumulated drift far beyond rounding, every local error at rounding. Step 0
     * starts from the same noise in the case's run and its teacher run, so (a deterministic
     * engine without leaks) both give the same row 1: rp_cls_rerun_check compares them */
    snprintf(d, sizeof d, "%s/drift", root);
    drift_of(r, x, t);
    write_run(d, "drift", x, 0.5f, t);
    ck_assert(classify(d, ref, 1, &j) == RP_V_DRIFT);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "pass")));
    ck_assert_int_eq(cJSON_GetArraySize(path(j, "evidence", "envelope", "twins")), 3);
    ck_assert(cJSON_GetNumberValue(path(j, "evidence", "envelope", "twins_ok")) == 3);
    cJSON_Delete(j);

    /* a bug at step 2: the teacher-forced local error jumps there */
    snprintf(d, sizeof d, "%s/bug", root);
    memcpy(t, r, sizeof r);
    nudge(t, 1, 3e-7, 7);
    for (int i = 0; i < B * PER; i++) t[3 * B * PER + i] += 0.01f; /* row 3 = after step 2 */
    memcpy(x, r, sizeof r);
    nudge(x, 2, 1e-2, 8); /* (a run bitwise equal to the reference is identical: nothing to check) */
    memcpy(x + B * PER, t + B * PER, sizeof(float) * B * PER); /* step 0 as its teacher run's */
    write_run(d, "BUG", x, 0.5f, t);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert(cJSON_GetNumberValue(path(j, "evidence", "first_step", "step")) == 2);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_step", "what")), "local error");
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "determinism", "leak_check")), "ok");
    cJSON_Delete(j);

    /* the leak check: the teacher run recomputes step 0 from the case's own noise with other
     * bits. No fresh reruns yet: a leak (BUG); two fresh reruns that differ from each other:
     * NONDETERMINISTIC; that agree: the leak */
    snprintf(d, sizeof d, "%s/leak", root);
    drift_of(r, x, t);
    t[B * PER] = nextafterf(t[B * PER], INFINITY); /* row 1, the recomputed step 0: one ulp */
    write_run(d, "", x, 0.5f, t);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "state leaks between calls"));
    ck_assert(cJSON_GetNumberValue(path(j, "evidence", "determinism", "leak_first_step")) == 0);
    cJSON_Delete(j);
    char fd[800];
    snprintf(fd, sizeof fd, "%s/fresh", d);
    write_run(fd, "", x, 0.5f, NULL);
    snprintf(fd, sizeof fd, "%s/fresh-2", d);
    write_run(fd, "", x, 0.5f, NULL);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG); /* the fresh runs agree */
    cJSON_Delete(j);
    /* a pair that decoded (after a difference in decoded images) is compared in its images
     * too: equal latents, one pixel apart in image 0 */
    uint8_t rgb[4 * 4 * 3] = {0};
    char png[900];
    snprintf(png, sizeof png, "%s/fresh/image-0.png", d);
    ck_assert(rp_png_write(png, rgb, 4, 4, &e) == RP_OK);
    snprintf(png, sizeof png, "%s/fresh-2/image-0.png", d);
    ck_assert(rp_png_write(png, rgb, 4, 4, &e) == RP_OK);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG); /* the same images */
    cJSON_Delete(j);
    rgb[5] = 1;
    ck_assert(rp_png_write(png, rgb, 4, 4, &e) == RP_OK);
    ck_assert(classify(d, ref, 1, &j) == RP_V_NONDETERMINISTIC);
    cJSON_Delete(j);
    ck_assert(remove(png) == 0); /* one run decoded, the other not: not the same run either */
    ck_assert(classify(d, ref, 1, &j) == RP_V_NONDETERMINISTIC);
    cJSON_Delete(j);
    snprintf(png, sizeof png, "%s/fresh/image-0.png", d);
    ck_assert(remove(png) == 0);
    x[(N + 1) * B * PER - 1] += 1e-3f;
    write_run(fd, "", x, 0.5f, NULL); /* fresh-2 differs from fresh */
    ck_assert(classify(d, ref, 1, &j) == RP_V_NONDETERMINISTIC);
    cJSON_Delete(j);

    /* a bug in the first evaluation: blocks.0.attn off by 1% */
    snprintf(d, sizeof d, "%s/layer", root);
    write_run(d, "BUG", x, 0.505f, r);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_layer", "name")), "blocks.0.attn");
    ck_assert(cJSON_GetNumberValue(path(j, "evidence", "first_step", "step")) == 0);
    ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "blocks.0.attn"));
    cJSON_Delete(j);

    /* a bug in one layer at a later step only: every step's output within the envelope (one
     * layer of many moves it little), but teacher-forced layer by layer, step 2's
     * blocks.0.attn is 1% off where the twins' teacher traces differ by rounding */
    snprintf(d, sizeof d, "%s/layer-later", root);
    drift_of(r, x, t);
    write_run(d, "BUG", x, 0.5f, t);
    write_teacher_trace(ref, r, 0.5f, -1, 0);
    for (int k = 0; k < 2; k++) { /* the twins with a teacher run */
        snprintf(fd, sizeof fd, "%s/twins/%s", ref, names[k]);
        write_teacher_trace(fd, r, 0.5f * (1 + 3e-7f * (float)(k + 1)), -1, 0);
    }
    write_teacher_trace(d, r, 0.5f, -1, 0);
    ck_assert(classify(d, ref, 1, &j) == RP_V_DRIFT); /* the same traces: nothing beyond */
    cJSON_Delete(j);
    write_teacher_trace(d, r, 0.5f, 2, 0.505f);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert(cJSON_GetNumberValue(path(j, "evidence", "first_step", "step")) == 2);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_layer", "name")), "blocks.0.attn");
    ck_assert(cJSON_GetNumberValue(path(j, "evidence", "first_layer", "step")) == 2);
    cJSON_Delete(j);

    /* the step's output jumps at step 2 while every traced layer of its evaluation is the
     * reference's: the difference entered after the model (the guidance, the sampler's update) */
    snprintf(d, sizeof d, "%s/after-model", root);
    memcpy(t, r, sizeof r);
    nudge(t, 1, 3e-7, 7);
    for (int i = 0; i < B * PER; i++) t[3 * B * PER + i] += 0.01f; /* row 3 = after step 2 */
    memcpy(x, r, sizeof r);
    nudge(x, 2, 1e-2, 8);
    memcpy(x + B * PER, t + B * PER, sizeof(float) * B * PER); /* step 0 as its teacher run's */
    write_run(d, "BUG", x, 0.5f, t);
    write_teacher_trace(d, r, 0.5f, -1, 0);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert(cJSON_GetNumberValue(path(j, "evidence", "first_step", "step")) == 2);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_layer", "name")), "guidance+sampler.update");
    ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "enters after the model's last layer"));
    cJSON_Delete(j);
    /* the same in one item's row only: the summary names the item */
    memcpy(t, r, sizeof r);
    nudge(t, 1, 3e-7, 7);
    for (int i = PER; i < B * PER; i++) t[3 * B * PER + i] += 0.01f; /* item 1 of row 3 */
    write_run(d, "BUG", x, 0.5f, t);
    write_teacher_trace(d, r, 0.5f, -1, 0);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert_msg(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "at step 2 (teacher-forced, in item 1 only)"),
                  "%s", cJSON_GetStringValue(path(j, "summary", NULL, NULL)));
    cJSON_Delete(j);
    /* the same with a layer of step 2 beyond its envelope: that layer is named, not the update */
    write_teacher_trace(d, r, 0.5f, 2, 0.505f);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_layer", "name")), "blocks.0.attn");
    cJSON_Delete(j);

    /* items swapped: MISMATCH naming the permutation */
    snprintf(d, sizeof d, "%s/swap", root);
    for (int k = 0; k <= N; k++)
        for (int b = 0; b < B; b++) memcpy(x + (k * B + b) * PER, r + (k * B + (1 - b)) * PER, sizeof(float) * PER);
    write_run(d, "MISMATCH", x, 0.5f, x);
    ck_assert(classify(d, ref, 1, &j) == RP_V_MISMATCH);
    /* the summary names the permutation; the evidence's message what each image shows
     * (these two items differ only by seed) */
    ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)),
                     "item 0 matches reference item 1, item 1 matches reference item 0"));
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "assignment", "message")),
                     "image 0, asked for seed 0, shows item 1's seed 1; image 1, asked for seed 1, shows item 0's seed 0");
    cJSON_Delete(j);

    /* the initial noise changed: a bug at step 0 */
    snprintf(d, sizeof d, "%s/noise", root);
    memcpy(x, r, sizeof r);
    for (int i = PER; i < 2 * PER; i++) x[i] += 0.5f; /* item 1's noise */
    write_run(d, "", x, 0.5f, r);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_step", "what")), "initial noise");
    ck_assert(!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "pass"))); /* no label: BUG fails */
    cJSON_Delete(j);

    /* the initial noise one ulp off in one value: far inside any envelope (the noise twin's
     * included), but every item's noise is drawn from its seed by the same host code in any
     * layout, so against a reference made here it must be bitwise: a bug at step 0 */
    snprintf(d, sizeof d, "%s/noise-ulp", root);
    memcpy(x, r, sizeof r);
    x[PER] = nextafterf(x[PER], INFINITY);
    write_run(d, "", x, 0.5f, r);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "initial_noise", "rule")), "bitwise");
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_step", "what")), "initial noise");
    ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "any difference is a bug"));
    cJSON_Delete(j);
    /* against a golden recorded elsewhere (the twins are the local reference's) another libm
     * may round a draw differently: the same ulp is held to the noise envelope instead */
    char gd[800];
    snprintf(gd, sizeof gd, "%s/golden", root);
    write_run(gd, "", r, 0.5f, r);
    ck_assert(classify_with(d, gd, ref, 1, &j) == RP_V_DRIFT);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "initial_noise", "rule")), "envelope");
    cJSON_Delete(j);

    /* the final latents the run returned must be its trajectory's last row. The drift case
     * again, its returned latents: as the trajectory (drift), the two items swapped after the
     * sampler loop (MISMATCH: assigned against the reference's returned latents), one value
     * changed (BUG at the last step, "latents") */
    static float fin[B * PER], rfin[B * PER];
    memcpy(rfin, r + N * B * PER, sizeof rfin);
    write_latents(ref, r, rfin);
    snprintf(d, sizeof d, "%s/drift", root);
    drift_of(r, x, t);
    memcpy(fin, x + N * B * PER, sizeof fin);
    write_latents(d, x, fin);
    ck_assert(classify(d, ref, 1, &j) == RP_V_DRIFT);
    ck_assert(cJSON_IsTrue(path(j, "evidence", "final_latents", "last_step_state")));
    cJSON_Delete(j);
    for (int b = 0; b < B; b++) memcpy(fin + b * PER, x + (N * B + (1 - b)) * PER, sizeof(float) * PER);
    write_latents(d, x, fin);
    ck_assert(classify(d, ref, 1, &j) == RP_V_MISMATCH);
    ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "not in the order the sampler left them"));
    cJSON_Delete(j);
    memcpy(fin, x + N * B * PER, sizeof fin);
    fin[PER + 3] += 0.25f;
    write_latents(d, x, fin);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert(cJSON_GetNumberValue(path(j, "evidence", "first_step", "step")) == N);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_layer", "name")), "latents");
    ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "item 1"));
    cJSON_Delete(j);
    /* a trajectory bitwise the reference's is not identical when the returned latents differ */
    snprintf(d, sizeof d, "%s/same-trajectory", root);
    write_run(d, "", r, 0.5f, NULL);
    memcpy(fin, rfin, sizeof fin);
    fin[0] += 0.25f;
    write_latents(d, r, fin);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    cJSON_Delete(j);

    /* the trajectory must start at the noise the run returned: the noise (held bitwise) is
     * read from the returned noise, and a first row that is not it is a trajectory changed
     * after sampling (a gather), a BUG named "trajectory" at step 0, not a noise bug */
    static float nz[B * PER];
    memcpy(nz, r, sizeof nz);
    write_outputs(ref, r, rfin, nz);
    snprintf(d, sizeof d, "%s/traj-start", root);
    drift_of(r, x, t);
    write_run(d, "", x, 0.5f, t);
    memcpy(fin, x + N * B * PER, sizeof fin);
    ck_assert(!memcmp(x, r, sizeof nz)); /* drift starts from the same noise */
    write_outputs(d, x, fin, nz);
    ck_assert(classify(d, ref, 1, &j) == RP_V_DRIFT);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "initial_noise", "read")), "the returned noise");
    cJSON_Delete(j);
    x[PER + 5] += 0.125f; /* item 1's first row, as a damaged gather leaves it */
    write_outputs(d, x, fin, nz);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_step", "what")), "trajectory");
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_layer", "name")), "trajectory");
    ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "item 1"));
    cJSON_Delete(j);
    static float nz2[B * PER];
    memcpy(nz2, nz, sizeof nz2);
    nz2[PER + 5] += 0.125f; /* the run drew that noise itself: a noise bug, the trajectory consistent */
    write_outputs(d, x, fin, nz2);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_step", "what")), "initial noise");
    cJSON_Delete(j);
    /* both runs drew item 1 from another seed (an item selection that loses seed bits acts in
     * the reference too): they agree with each other, not with the draw of case.json's seed */
    static float xs[(N + 1) * B * PER], rs[(N + 1) * B * PER];
    memcpy(rs, r, sizeof rs);
    rp_randn(rs + PER, PER, 1ULL << 32, 1, RP_STREAM_INIT_NOISE);
    memcpy(xs, rs, sizeof xs);
    nudge(xs, 1, 3e-7, 9);
    char rsd[800];
    snprintf(rsd, sizeof rsd, "%s/ref-seed", root);
    write_run(rsd, "", rs, 0.5f, rs);
    write_outputs(rsd, rs, rs + N * B * PER, rs);
    write_outputs(d, xs, xs + N * B * PER, xs);
    ck_assert(classify_with(d, rsd, ref, 1, &j) == RP_V_BUG);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_step", "what")), "initial noise");
    ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "item 1's initial noise is not the draw"));
    cJSON_Delete(j);
    /* one ulp off the draw in a value (another host's libm): within the draw's rule */
    memcpy(xs + PER, nz + PER, sizeof(float) * PER);
    xs[PER + 3] = nextafterf(xs[PER + 3], INFINITY);
    write_outputs(d, xs, xs + N * B * PER, xs);
    ck_assert(classify_with(d, rsd, ref, 1, &j) != RP_V_BUG ||
              !strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "not the draw"));
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "initial_noise", "drawn_here")), "within one ulp");
    cJSON_Delete(j);
    write_latents(ref, r, rfin);

    /* the fp32 shadow's leak check: its first step recomputed later in the worker (shadow/leak)
     * against the shadow's own (shadow/teacher). Equal: drift; one ulp off while the case's own
     * check agrees (a bf16 case's rounding hid it): state leaks (BUG), unless the case twice
     * at fp32 in fresh launches differs (their traces here): NONDETERMINISTIC */
    snprintf(d, sizeof d, "%s/shadow-leak", root);
    drift_of(r, x, t);
    write_run(d, "", x, 0.5f, t);
    {
        const float every[N] = {1, 1, 1, 1}, first[N] = {1, 0, 0, 0};
        static float lk[(N + 1) * B * PER];
        char sd[900];
        snprintf(sd, sizeof sd, "%s/shadow/teacher", d);
        mkdirs(sd);
        write_st(sd, "teacher.safetensors", "teacher", t, every);
        snprintf(sd, sizeof sd, "%s/shadow/leak", d);
        mkdirs(sd);
        memcpy(lk, t, sizeof lk);
        write_st(sd, "teacher.safetensors", "teacher", lk, first);
        ck_assert(classify(d, ref, 1, &j) == RP_V_DRIFT);
        ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "determinism", "leak_check_fp32_shadow")), "ok");
        cJSON_Delete(j);
        lk[B * PER + 2] = nextafterf(lk[B * PER + 2], INFINITY); /* step 0's output, one ulp */
        write_st(sd, "teacher.safetensors", "teacher", lk, first);
        ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
        ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "determinism", "leak_check")), "ok");
        ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "fp32 shadow"));
        ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "state leaks"));
        ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "first_step", "what")), "leak check (fp32 shadow)");
        cJSON_Delete(j);
        snprintf(sd, sizeof sd, "%s/fresh-fp32", d);
        write_run(sd, "", x, 0.5f, NULL);
        snprintf(sd, sizeof sd, "%s/fresh-fp32-2", d);
        write_run(sd, "", x, 0.5f, NULL);
        ck_assert(classify(d, ref, 1, &j) == RP_V_BUG); /* the fresh pair agrees: a leak */
        cJSON_Delete(j);
        write_run(sd, "", x, 0.51f, NULL); /* the fresh pair differs in a traced layer */
        ck_assert(classify(d, ref, 1, &j) == RP_V_NONDETERMINISTIC);
        ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "at fp32"));
        cJSON_Delete(j);
    }

    /* the invariant shadow one ulp off the reference's at step 1, the leak check ok: a BUG,
     * unless two fresh runs of the case (the runner makes them when the shadow decided a
     * BUG) differ from each other: then the runs are nondeterministic */
    snprintf(d, sizeof d, "%s/shadow-nondet", root);
    drift_of(r, x, t);
    write_run(d, "", x, 0.5f, t);
    static float sh[(N + 1) * B * PER];
    const float all[N] = {1, 1, 1, 1};
    char sd[900];
    snprintf(sd, sizeof sd, "%s/invariant/teacher", ref);
    mkdirs(sd);
    write_st(sd, "teacher.safetensors", "teacher", r, all);
    write_text(sd, "done.json", "{}\n");
    memcpy(sh, r, sizeof sh);
    sh[2 * B * PER + 3] = nextafterf(sh[2 * B * PER + 3], INFINITY);
    snprintf(sd, sizeof sd, "%s/invariant/teacher", d);
    mkdirs(sd);
    write_st(sd, "teacher.safetensors", "teacher", sh, all);
    write_text(sd, "done.json", "{}\n");
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG);
    ck_assert(cJSON_GetNumberValue(path(j, "evidence", "first_step", "step")) == 1);
    cJSON_Delete(j);
    snprintf(fd, sizeof fd, "%s/fresh", d);
    write_run(fd, "", x, 0.5f, NULL);
    snprintf(fd, sizeof fd, "%s/fresh-2", d);
    write_run(fd, "", x, 0.5f, NULL);
    ck_assert(classify(d, ref, 1, &j) == RP_V_BUG); /* the fresh runs agree: the shadow's difference stands */
    cJSON_Delete(j);
    write_run(fd, "", x, 0.51f, NULL); /* the same latents, but a traced layer differs (bf16 absorbed it) */
    ck_assert(classify(d, ref, 1, &j) == RP_V_NONDETERMINISTIC);
    cJSON_Delete(j);
    memcpy(sh, x, sizeof sh);
    sh[(N + 1) * B * PER - 1] += 1e-3f;
    write_run(fd, "", sh, 0.5f, NULL);
    ck_assert(classify(d, ref, 1, &j) == RP_V_NONDETERMINISTIC);
    ck_assert(strstr(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "two fresh runs"));
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "evidence", "determinism", "leak_check")), "ok");
    cJSON_Delete(j);
    snprintf(sd, sizeof sd, "%s/invariant", ref);
    rp_error re;
    ck_assert(rp_store_remove_tree(sd, &re) == RP_OK); /* later cases compare no shadow */

    /* bitwise equal, but a repeat differs: NONDETERMINISTIC (deterministic mode: fails) */
    snprintf(d, sizeof d, "%s/rep", root);
    write_run(d, "", r, 0.5f, NULL);
    char rd[800];
    snprintf(rd, sizeof rd, "%s/repeat-2", d);
    memcpy(x, r, sizeof r);
    x[(N + 1) * B * PER - 1] += 1e-3f;
    write_run(rd, "", x, 0.5f, NULL);
    ck_assert(classify(d, ref, 2, &j) == RP_V_NONDETERMINISTIC);
    ck_assert(!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "pass")));
    cJSON_Delete(j);
    ck_assert(classify(d, ref, 1, &j) == RP_V_IDENTICAL); /* without the repeat */
    cJSON_Delete(j);

    /* a run that crashed (result.json), and a case whose teacher run hung */
    snprintf(d, sizeof d, "%s/crash", root);
    write_run(d, "", r, 0.5f, NULL);
    write_text(d, "result.json", "{\"status\": \"CRASH\", \"reason\": \"rank 1 of 2: SIGSEGV\"}\n");
    ck_assert(classify(d, ref, 1, &j) == RP_V_CRASH);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "rank 1 of 2: SIGSEGV");
    cJSON_Delete(j);
    snprintf(d, sizeof d, "%s/hang", root);
    write_run(d, "", x, 0.5f, r);
    snprintf(rd, sizeof rd, "%s/teacher", d);
    write_text(rd, "aux.json", "{\"status\": \"HANG\", \"reason\": \"deadline\"}\n");
    ck_assert(classify(d, ref, 1, &j) == RP_V_HANG);
    ck_assert_str_eq(cJSON_GetStringValue(path(j, "summary", NULL, NULL)), "teacher-forcing run: deadline");
    cJSON_Delete(j);

    /* another shape than the reference's is an error, not a verdict */
    snprintf(d, sizeof d, "%s/shape", root);
    write_run(d, "", r, 0.5f, NULL);
    snprintf(rd, sizeof rd, "%s/latents.safetensors", d);
    rp_st_writer *w = rp_st_writer_new();
    const int64_t shape[5] = {N, B, 2, 2, 2};
    ck_assert(rp_st_writer_add(w, "trajectory", RP_DT_F32, 5, shape, r, &e) == RP_OK);
    ck_assert(rp_st_writer_write(w, rd, &e) == RP_OK);
    rp_st_writer_free(w);
    rp_cls_inputs in;
    memset(&in, 0, sizeof in);
    in.case_dir = d;
    in.ref_dir = ref;
    rp_classify_opts_default(&in.opts);
    ck_assert(rp_classify_dir(&in, NULL, NULL, &e) == RP_ERR_SHAPE);
}
END_TEST

static Suite *classify_suite(void) {
    Suite *s = suite_create("classify");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_opts_and_twins);
    tcase_add_test(tc, test_teacher_mask);
    tcase_add_test(tc, test_distances);
    tcase_add_test(tc, test_twins_not_rounding);
    tcase_add_test(tc, test_ratio_and_first_break);
    tcase_add_test(tc, test_assignment);
    tcase_add_test(tc, test_layer_order);
    tcase_add_test(tc, test_trace_roundtrip);
    tcase_add_test(tc, test_decide_replicas);
    tcase_add_test(tc, test_twin_list);
    tcase_add_test(tc, test_effective_precision);
    tcase_add_test(tc, test_invariant_pair);
    tcase_add_test(tc, test_decode_rule);
    tcase_add_test(tc, test_invariant_shadow);
    tcase_add_test(tc, test_emulation);
    tcase_add_test(tc, test_decide);
    tcase_add_test(tc, test_decide_witnesses);
    tcase_add_test(tc, test_driver);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(classify_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
