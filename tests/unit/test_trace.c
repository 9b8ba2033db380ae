/* test_trace.c — trace records (stride, l2, maxabs, samples) on known inputs,
 * which evaluations get recorded, and the safetensors save format. */
#include <check.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/safetensors.h"
#include "engine/trace.h"

static char g_dir[256];

static const char *tmp_path(const char *name) {
    static char bufs[4][512];
    static int k;
    char *b = bufs[k++ % 4];
    snprintf(b, 512, "%s/%s", g_dir, name);
    return b;
}

START_TEST(test_defaults) {
    rp_trace t;
    rp_trace_init(&t);
    ck_assert_int_eq(t.record_evals, 1);
    ck_assert_int_eq(t.max_samples, 4096);
    ck_assert_int_eq(t.eval, 0);
    ck_assert_int_eq(t.n, 0);
    ck_assert_int_eq(t.n_notes, 0);
    rp_trace_free(&t);
    /* NULL trace: recording is a no-op (models call it unconditionally) */
    float x = 1;
    rp_trace_record(NULL, "a", &x, 1);
    rp_trace_next_eval(NULL);
    rp_trace_note(NULL, "k", "v");
}
END_TEST

START_TEST(test_record_stats) {
    rp_trace t;
    rp_trace_init(&t);
    const size_t n = 10000;
    float *x = malloc(n * sizeof *x);
    double ss = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((int)(i % 7) - 3) * 0.5f; /* exact in float; squares exact in double */
        ss += (double)x[i] * x[i];
    }
    x[1234] = -9.25f;
    ss += 9.25 * 9.25 - (double)(((int)(1234 % 7) - 3) * 0.5) * (((int)(1234 % 7) - 3) * 0.5);
    rp_trace_record(&t, "blocks.0.attn", x, n);
    ck_assert_int_eq(t.n, 1);
    const rp_trace_rec *r = &t.recs[0];
    ck_assert_str_eq(r->name, "blocks.0.attn");
    ck_assert_int_eq(r->eval, 0);
    ck_assert_uint_eq(r->numel, n);
    ck_assert_uint_eq(r->stride, 3);   /* ceil(10000 / 4096) */
    ck_assert_int_eq(r->nsample, 3334); /* indices 0, 3, ..., 9999 */
    ck_assert(r->l2 == sqrt(ss));
    ck_assert(r->maxabs == 9.25);
    for (int k = 0; k < r->nsample; k++) ck_assert(r->sample[k] == x[3 * k]);

    /* edge strides: exact multiple, fewer than max, empty */
    t.max_samples = 4;
    rp_trace_record(&t, "m8", x, 8);
    rp_trace_record(&t, "m10", x, 10);
    rp_trace_record(&t, "m3", x, 3);
    rp_trace_record(&t, "m0", NULL, 0);
    ck_assert_int_eq(t.n, 5);
    ck_assert(t.recs[1].stride == 2 && t.recs[1].nsample == 4);
    ck_assert(t.recs[2].stride == 3 && t.recs[2].nsample == 4 && t.recs[2].sample[3] == x[9]);
    ck_assert(t.recs[3].stride == 1 && t.recs[3].nsample == 3);
    ck_assert(t.recs[4].numel == 0 && t.recs[4].nsample == 0 && t.recs[4].l2 == 0 && t.recs[4].maxabs == 0);

    /* a NaN anywhere shows in both statistics */
    x[5] = NAN;
    rp_trace_record(&t, "nan", x, 10);
    ck_assert(isnan(t.recs[5].l2) && isnan(t.recs[5].maxabs));
    x[5] = -INFINITY;
    rp_trace_record(&t, "inf", x, 10);
    ck_assert(isinf(t.recs[6].maxabs));
    free(x);
    rp_trace_free(&t);
}
END_TEST

START_TEST(test_record_evals) {
    rp_trace t;
    rp_trace_init(&t);
    float x[4] = {1, 2, 3, 4};
    rp_trace_record(&t, "a", x, 4);
    rp_trace_next_eval(&t);
    rp_trace_record(&t, "a", x, 4); /* eval 1: not recorded by default */
    ck_assert_int_eq(t.n, 1);
    rp_trace_free(&t);

    rp_trace_init(&t);
    t.record_evals = 3;
    for (int e = 0; e < 5; e++) {
        rp_trace_record(&t, "a", x, 4);
        rp_trace_record(&t, "b", x, 2);
        rp_trace_next_eval(&t);
    }
    ck_assert_int_eq(t.eval, 5);
    ck_assert_int_eq(t.n, 6);
    for (int i = 0; i < 6; i++) ck_assert_int_eq(t.recs[i].eval, i / 2);
    rp_trace_free(&t);
}
END_TEST

/* A record assembled from cells visited in any order (as rp_par_trace does with the
 * ranks' parts) has rp_trace_record_cells' bits: every cell's sum is the same sequence
 * of operations and the sums are added in cell order either way. A NaN in one cell makes
 * l2 and maxabs NaN both ways. */
START_TEST(test_record_from_parts) {
    enum { NC = 37, W = 53 }; /* numel 1961 with 64 samples: stride 31, cells of width 53 */
    static float x[NC * W];
    for (int i = 0; i < NC * W; i++) x[i] = (float)sin(0.37 * i) * (float)(1 + i % 7);
    for (int nan = 0; nan < 2; nan++) {
        if (nan) x[20 * W + 5] = NAN;
        rp_trace a, b;
        rp_trace_init(&a);
        rp_trace_init(&b);
        a.max_samples = b.max_samples = 64;
        rp_trace_record_cells(&a, "t", x, NC, W);
        rp_trace_rec *r = rp_trace_begin(&b, "t", (size_t)NC * W);
        ck_assert_ptr_nonnull(r);
        double ss[NC], mx = 0.0;
        for (int k = 0; k < NC; k++) { /* a stride coprime with NC visits every cell once */
            const int c = (k * 11 + 5) % NC;
            ss[c] = rp_trace_cell(r, x + (size_t)c * W, (size_t)c, W, &mx);
        }
        rp_trace_finish(r, ss, NC, mx);
        const rp_trace_rec *p = &a.recs[0];
        ck_assert_uint_eq(r->stride, p->stride);
        ck_assert_int_eq(r->nsample, p->nsample);
        for (int k = 0; k < p->nsample; k++)
            ck_assert(isnan(p->sample[k]) ? isnan(r->sample[k]) : r->sample[k] == p->sample[k]);
        if (nan) {
            ck_assert(isnan(p->l2) && isnan(r->l2) && isnan(p->maxabs) && isnan(r->maxabs));
        } else {
            ck_assert(memcmp(&r->l2, &p->l2, sizeof p->l2) == 0);
            ck_assert(memcmp(&r->maxabs, &p->maxabs, sizeof p->maxabs) == 0);
        }
        rp_trace_free(&a);
        rp_trace_free(&b);
    }
}
END_TEST

START_TEST(test_save_round_trip) {
    const char *p = tmp_path("trace.safetensors");
    rp_trace t;
    rp_trace_init(&t);
    t.record_evals = 2;
    t.max_samples = 5;
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = 0.1f * (float)i - 0.35f;
    rp_trace_note(&t, "attention", "math");
    rp_trace_note(&t, "precision", "fp32");
    rp_trace_record(&t, "x_embedder", x, 12);
    rp_trace_record(&t, "blocks.0", x + 1, 7);
    rp_trace_next_eval(&t);
    rp_trace_record(&t, "x_embedder", x, 3);
    ck_assert_int_eq(t.n_notes, 2);
    ck_assert_str_eq(t.notes[0], "attention=math");
    rp_error err;
    rp_error_clear(&err);
    ck_assert_msg(rp_trace_save(&t, p, &err) == RP_OK, "%s", err.msg);

    rp_st_file *f = NULL;
    ck_assert_msg(rp_st_open(p, &f, &err) == RP_OK, "%s", err.msg);
    ck_assert_int_eq(f->n, 3);
    ck_assert_str_eq(rp_st_meta(f, "note/attention"), "math");
    ck_assert_str_eq(rp_st_meta(f, "note/precision"), "fp32");
    ck_assert_str_eq(rp_st_meta(f, "trace.max_samples"), "5");
    static const char *keys[] = {"e0/x_embedder", "e0/blocks.0", "e1/x_embedder"};
    for (int i = 0; i < 3; i++) {
        const rp_trace_rec *r = &t.recs[i];
        const rp_st_tensor *st = rp_st_find(f, keys[i]);
        ck_assert_msg(st != NULL, "%s missing", keys[i]);
        ck_assert(st->dtype == RP_DT_F32 && st->ndim == 1 && st->shape[0] == r->nsample);
        float got[8];
        int64_t shape[1] = {r->nsample};
        ck_assert_int_eq(rp_st_read_f32(f, keys[i], 1, shape, got, NULL), RP_OK);
        ck_assert(memcmp(got, r->sample, (size_t)r->nsample * sizeof *got) == 0);
        const char *m = rp_st_meta(f, keys[i]);
        ck_assert_ptr_nonnull(m);
        size_t numel, stride;
        double l2, maxabs;
        ck_assert_int_eq(sscanf(m, "numel=%zu,l2=%lf,maxabs=%lf,stride=%zu", &numel, &l2, &maxabs, &stride), 4);
        ck_assert(numel == r->numel && stride == r->stride);
        ck_assert(l2 == r->l2 && maxabs == r->maxabs); /* %.17g round-trips exactly */
    }
    ck_assert_int_eq(t.recs[0].stride, 3); /* ceil(12 / 5) */
    ck_assert_int_eq(t.recs[0].nsample, 4);
    rp_st_close(f);

    /* the same name twice in one eval cannot be saved, and the error says which */
    t.eval = 0;
    rp_trace_record(&t, "blocks.0", x, 2);
    ck_assert_int_eq(rp_trace_save(&t, tmp_path("dup.safetensors"), &err), RP_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "e0/blocks.0") != NULL, "%s", err.msg);
    rp_trace_free(&t);
}
END_TEST

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s/test_trace_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir)) { perror("mkdtemp"); return 1; }
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_record_stats);
    tcase_add_test(tc, test_record_evals);
    tcase_add_test(tc, test_record_from_parts);
    tcase_add_test(tc, test_save_round_trip);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return failed ? 1 : 0;
}
