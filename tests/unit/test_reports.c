/* test_reports.c — reports/: text helpers (base64, escaping), the verdict
 * classes and their red-first order, loading a synthetic store built here
 * (provisional and classified verdicts, expected labels, metrics computed when
 * the runner left none), the config axes, summary.json, junit.xml, markdown,
 * comparing runs, the SQLite history (append, replace, trend, prefixes) and
 * the whole report without gnuplot. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/image.h"
#include "engine/safetensors.h"
#include "harness/case/case.h"
#include "harness/sweep/runner.h"
#include "reports/report.h"
#include "reports/rutil.h"

/* tests/cmake/reports.cmake defines it */
#ifndef REPRO_TEST_SCRATCH
#define REPRO_TEST_SCRATCH "reports-unit-scratch"
#endif

/* a and b occur in s, a first. */
static void before(const char *s, const char *a, const char *b) {
    const char *pa = strstr(s, a), *pb = strstr(s, b);
    ck_assert_msg(pa && pb, "'%s' or '%s' missing", a, b);
    ck_assert_msg(pa < pb, "'%s' is not before '%s'", a, b);
}

static char *sb_take(rp_sb *b) {
    char *s = strdup(b->p ? b->p : "");
    rp_sb_free(b);
    return s;
}

START_TEST(base64_vectors) {
    /* RFC 4648 section 10 */
    static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        rp_sb b = {0};
        rp_sb_base64(&b, (const uint8_t *)in[i], strlen(in[i]));
        char *s = sb_take(&b);
        ck_assert_str_eq(s, out[i]);
        free(s);
    }
}
END_TEST

START_TEST(escaping) {
    rp_sb b = {0};
    rp_sb_html(&b, "<a href=\"x\">&'</a>");
    char *s = sb_take(&b);
    ck_assert_str_eq(s, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    free(s);
    rp_sb_xml(&b, "a\x01\x1b[31mb\tc<");
    s = sb_take(&b);
    ck_assert_str_eq(s, "a[31mb\tc&lt;"); /* control characters cannot be in XML 1.0 */
    free(s);
    rp_sb_md(&b, "a|b\nc<d> 1 < 2 & R&D");
    s = sb_take(&b);
    ck_assert_str_eq(s, "a\\|b c&lt;d> 1 < 2 & R&amp;D");
    free(s);
    rp_sb_printf(&b, "%d-%s", 42, "x");
    s = sb_take(&b);
    ck_assert_str_eq(s, "42-x");
    free(s);
}
END_TEST

START_TEST(classes_red_first) {
    const int *ord = rp_rclass_order();
    int seen[RP_RC_COUNT] = {0};
    for (int k = 0; k < RP_RC_COUNT; k++) {
        ck_assert_int_ge(ord[k], 0);
        ck_assert_int_lt(ord[k], RP_RC_COUNT);
        seen[ord[k]]++;
        ck_assert_int_eq(rp_rclass_rank(ord[k]), k);
        ck_assert_int_eq(rp_rclass_parse(rp_rclass_name(ord[k])), ord[k]);
    }
    for (int k = 0; k < RP_RC_COUNT; k++) ck_assert_int_eq(seen[k], 1);
    /* every red class comes before every amber one, which come before green and grey */
    for (int k = 1; k < RP_RC_COUNT; k++) {
        const rp_tone a = rp_rclass_tone(ord[k - 1]), b = rp_rclass_tone(ord[k]);
        ck_assert_msg(!(a != RP_TONE_RED && b == RP_TONE_RED), "red after %s", rp_rclass_name(ord[k - 1]));
    }
    ck_assert_int_eq(rp_rclass_tone(RP_V_BUG), RP_TONE_RED);
    ck_assert_int_eq(rp_rclass_tone(RP_V_NONDETERMINISTIC), RP_TONE_RED);
    ck_assert_int_eq(rp_rclass_tone(RP_V_CONFIG_ERROR), RP_TONE_AMBER);
    ck_assert_int_eq(rp_rclass_tone(RP_V_APPROX), RP_TONE_AMBER);
    ck_assert_int_eq(rp_rclass_tone(RP_V_DRIFT), RP_TONE_GREEN);
    ck_assert_int_eq(rp_rclass_tone(RP_V_SKIPPED), RP_TONE_GREY);
    ck_assert_int_eq(rp_rclass_parse("nope"), -1);
}
END_TEST

START_TEST(sparkline) {
    const double v[] = {1, 2, 3, 4, 5, 6, 7, 8, NAN, INFINITY};
    char buf[128];
    rp_sparkline_text(v, 10, buf, sizeof buf);
    ck_assert_str_eq(buf, "▁▂▃▄▅▆▇█·↑");
    const double flat[] = {3, 3};
    rp_sparkline_text(flat, 2, buf, sizeof buf);
    ck_assert_str_eq(buf, "▄▄");
    rp_sparkline_text(v, 10, buf, 7); /* two glyphs of 3 bytes and the NUL */
    ck_assert_str_eq(buf, "▁▂");
}
END_TEST

/* ---- a synthetic store ---------------------------------------------------------------- */

static void mkdirs(const char *p) {
    rp_error e;
    ck_assert_msg(rp_store_mkdirs(p, &e) == RP_OK, "%s", e.msg);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static char *read_text(const char *path) {
    char *s;
    size_t n;
    rp_error e;
    ck_assert_msg(rp_read_file(path, SIZE_MAX, "a test file", &s, &n, &e) == RP_OK, "%s", e.msg);
    return s;
}

/* A 24x24 image: a gradient, offset by delta on pixel (3, 5) when delta != 0. */
static void write_png(const char *path, int delta) {
    uint8_t px[24 * 24 * 3];
    for (int i = 0; i < 24 * 24 * 3; i++) px[i] = (uint8_t)(i * 7 % 251);
    px[(5 * 24 + 3) * 3] = (uint8_t)(px[(5 * 24 + 3) * 3] + delta);
    rp_error e;
    ck_assert_msg(rp_png_write(path, px, 24, 24, &e) == RP_OK, "%s", e.msg);
}

/* latents (1, 4, 4, 4) and a trajectory (3, 64); eps added to latents[0] and the last step. */
static void write_latents(const char *path, float eps) {
    float lat[64], traj[3 * 64];
    for (int i = 0; i < 64; i++) lat[i] = (float)i / 64.0f - 0.5f;
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 64; i++) traj[t * 64 + i] = lat[i] * (float)(t + 1);
    lat[0] += eps;
    traj[2 * 64] += eps;
    rp_st_writer *w = rp_st_writer_new();
    const int64_t ls[4] = {1, 4, 4, 4}, ts[2] = {3, 64};
    rp_error e;
    ck_assert(rp_st_writer_add(w, "latents", RP_DT_F32, 4, ls, lat, &e) == RP_OK);
    ck_assert(rp_st_writer_add(w, "trajectory", RP_DT_F32, 2, ts, traj, &e) == RP_OK);
    ck_assert_msg(rp_st_writer_write(w, path, &e) == RP_OK, "%s", e.msg);
    rp_st_writer_free(w);
}

/* A case dir root/m/id with case.json (dp, attention), result.json (status),
 * outputs (unless status is not ok) differing from the reference by delta. */
static void make_case(const char *root, const char *id, int dp, const char *attention, const char *status,
                      int delta, const char *expect, const char *stamp) {
    char dir[1024], p[1200];
    snprintf(dir, sizeof dir, "%s/m/%s", root, id);
    mkdirs(dir);
    rp_case c;
    rp_case_defaults(&c);
    c.dp = dp;
    snprintf(c.attention, sizeof c.attention, "%s", attention);
    snprintf(c.name, sizeof c.name, "dp=%d attention=%s", dp, attention);
    snprintf(c.expect, sizeof c.expect, "%s", expect);
    rp_error e;
    snprintf(p, sizeof p, "%s/case.json", dir);
    ck_assert_msg(rp_case_save(&c, p, &e) == RP_OK, "%s", e.msg);
    char res[600];
    snprintf(res, sizeof res,
             "{\"id\": \"%s\", \"status\": \"%s\", \"reason\": \"%s\", \"wall_s\": 1.5, \"git\": \"abc\", "
             "\"engine\": \"0.1.0\", \"finished_at\": \"2026-01-01T00:00:0%dZ\", \"run_stamp\": \"%s-%s\"}",
             id, status, strcmp(status, "ok") ? "it broke\nsecond line" : "", dp, stamp, id);
    snprintf(p, sizeof p, "%s/result.json", dir);
    write_text(p, res);
    if (strcmp(status, "ok")) return;
    snprintf(p, sizeof p, "%s/image-0.png", dir);
    write_png(p, delta);
    snprintf(p, sizeof p, "%s/latents.safetensors", dir);
    write_latents(p, delta ? 1e-3f * (float)delta : 0.0f);
}

/* root/m: reference r1 (dp1 math), r2 identical (dp1 flash), r3 changed (dp2 math, BUG
 * classification), r4 CRASH (dp2 flash), r5 CONFIG_ERROR expected (dp3 math), and the
 * runner's summary.json with a SKIPPED case. */
static void make_store(const char *root, const char *stamp, int delta3) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
    make_case(root, "r1", 1, "math", "ok", 0, "", stamp);
    make_case(root, "r2", 1, "flash", "ok", 0, "", stamp);
    make_case(root, "r3", 2, "math", "ok", delta3, "", stamp);
    make_case(root, "r4", 2, "flash", "CRASH", 0, "", stamp);
    make_case(root, "r5", 3, "math", "CONFIG_ERROR", 0, "CONFIG_ERROR", stamp);
    char p[1200];
    snprintf(p, sizeof p, "%s/m/r3/classification.json", root);
    write_text(p, "{\"schema\": 1, \"case_id\": \"r3\", \"reference_id\": \"r1\", \"verdict\": \"BUG\", "
                  "\"pass\": false, \"summary\": \"blocks.0.attn breaks the envelope x9 at step 1\", "
                  "\"evidence\": {\"first_step\": {\"step\": 1, \"local\": 1e-3, \"envelope\": 1e-4, \"ratio\": 9},"
                  " \"local_errors\": [0, 1e-3, 2e-3], \"envelope\": {\"steps\": [1e-4, 1e-4, 1e-4]}}}");
    snprintf(p, sizeof p, "%s/m/summary.json", root);
    write_text(p, "{\"matrix\": \"m\", \"cases\": ["
                  "{\"id\": \"r1\", \"reference\": \"r1\", \"is_reference\": true},"
                  "{\"id\": \"r2\", \"reference\": \"r1\"}, {\"id\": \"r3\", \"reference\": \"r1\"},"
                  "{\"id\": \"r4\", \"reference\": \"r1\"}, {\"id\": \"r5\", \"reference\": \"r1\"},"
                  "{\"id\": \"r6\", \"name\": \"gpu\", \"degrees\": \"dp2\", \"reference\": \"r1\", "
                  "\"status\": \"SKIPPED\", \"reason\": \"no GPU here\"}]}");
}

static const rp_rcase *by_id(const rp_run *r, const char *id) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->cases[i].id, id)) return &r->cases[i];
    ck_abort_msg("no case %s", id);
    return NULL;
}

static void load(const char *dir, rp_run *r) {
    rp_error e;
    rp_error_clear(&e);
    ck_assert_msg(rp_run_load(dir, r, &e) == RP_OK, "%s", e.msg);
}

START_TEST(load_and_verdicts) {
    const char *root = REPRO_TEST_SCRATCH "/load";
    make_store(root, "s1", 20);
    rp_run r;
    /* the results root (holding matrix m) and the matrix directory load alike */
    load(root, &r);
    ck_assert_int_eq(r.n, 6);
    ck_assert_str_eq(r.title, "m");
    ck_assert_str_eq(r.cases[0].id, "r1"); /* the runner's order */
    ck_assert_str_eq(r.cases[5].id, "r6");
    const rp_rcase *c1 = by_id(&r, "r1"), *c2 = by_id(&r, "r2"), *c3 = by_id(&r, "r3");
    const rp_rcase *c4 = by_id(&r, "r4"), *c5 = by_id(&r, "r5"), *c6 = by_id(&r, "r6");
    ck_assert(c1->is_ref);
    ck_assert_int_eq(c1->verdict, RP_RC_UNCLASSIFIED); /* provisional: ok without classification */
    ck_assert_int_eq(c2->verdict, RP_RC_UNCLASSIFIED);
    ck_assert(c2->pass && !c2->classified);
    ck_assert_int_eq(c3->verdict, RP_V_BUG);
    ck_assert(!c3->pass && c3->classified);
    ck_assert_str_eq(c3->evidence, "blocks.0.attn breaks the envelope x9 at step 1");
    ck_assert_int_eq(c4->verdict, RP_V_CRASH);
    ck_assert(!c4->pass);
    ck_assert_str_eq(c4->evidence, "it broke"); /* the first line of the reason */
    ck_assert_int_eq(c5->verdict, RP_V_CONFIG_ERROR);
    ck_assert(c5->pass); /* expected */
    ck_assert_int_eq(c6->verdict, RP_V_SKIPPED);
    ck_assert(c6->pass && !c6->dir[0]);
    ck_assert_str_eq(c6->reason, "no GPU here");
    ck_assert_str_eq(c2->ref_id, "r1");
    ck_assert_ptr_nonnull(strstr(c2->ref_dir, "/m/r1"));
    ck_assert_int_eq(c2->n_images, 1);
    ck_assert_str_eq(c3->degrees, "dp2");
    ck_assert_str_eq(r.git, "abc");
    ck_assert_str_eq(r.finished_at, "2026-01-01T00:00:03Z");
    /* no metrics.json: computed from the outputs */
    ck_assert_ptr_null(rp_rcase_vs(c2));
    rp_run_fill_metrics(&r);
    c2 = by_id(&r, "r2");
    c3 = by_id(&r, "r3");
    ck_assert_ptr_nonnull(rp_rcase_vs(c2));
    ck_assert(isinf(rp_rcase_psnr(c2)));
    ck_assert_ptr_nonnull(strstr(c2->evidence, "bitwise identical"));
    ck_assert(isfinite(rp_rcase_psnr(c3)) && rp_rcase_psnr(c3) > 20);
    ck_assert_double_eq_tol(rp_rcase_changed(c3), 1.0 / (24 * 24), 1e-12);
    ck_assert_double_eq_tol(rp_rcase_max_abs(c3), 0.02, 1e-6);
    int n = 0;
    double *acc = rp_rcase_series(c2, "accumulated", &n);
    ck_assert_int_eq(n, 3); /* the trajectory */
    free(acc);
    double *loc = rp_rcase_series(c3, "local", &n);
    ck_assert_int_eq(n, 3);
    ck_assert_double_eq(loc[2], 2e-3);
    free(loc);
    double *env = rp_rcase_series(c3, "envelope", &n);
    ck_assert_int_eq(n, 3);
    free(env);
    /* the reference compares against nothing */
    ck_assert_ptr_null(rp_rcase_vs(by_id(&r, "r1")));
    rp_run_free(&r);
    /* the matrix directory itself */
    char md[512];
    snprintf(md, sizeof md, "%s/m/", root);
    load(md, &r);
    ck_assert_int_eq(r.n, 6);
    rp_run_free(&r);
    /* nothing there */
    rp_error e;
    ck_assert_int_eq(rp_run_load(REPRO_TEST_SCRATCH "/no-such-dir", &r, &e), RP_ERR_NOT_FOUND);
    rp_run_free(&r);
}
END_TEST

START_TEST(axes_of_a_run) {
    const char *root = REPRO_TEST_SCRATCH "/axes";
    make_store(root, "s1", 20);
    rp_run r;
    load(root, &r);
    char ax[4][RP_AXIS_LEN];
    const int n = rp_run_axes(&r, ax, 4);
    ck_assert_int_eq(n, 2);
    /* degrees has 3 values (1, dp2, dp3) like dp itself: the plain field wins the tie */
    ck_assert_str_eq(ax[0], "dp");
    ck_assert_str_eq(ax[1], "attention");
    int nv = 0;
    char (*v)[RP_AXIS_VALUE_LEN] = rp_run_axis_values(&r, "dp", &nv);
    ck_assert_int_eq(nv, 3);
    ck_assert_str_eq(v[0], "1");
    ck_assert_str_eq(v[2], "3");
    free(v);
    rp_run_free(&r);
}
END_TEST

START_TEST(summary_json) {
    const char *root = REPRO_TEST_SCRATCH "/json";
    make_store(root, "s1", 20);
    rp_run r;
    load(root, &r);
    rp_run_fill_metrics(&r);
    cJSON *j = rp_report_json_tree(&r, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq((int)rp_j_num(j, "schema_version", 0), RP_REPORT_SCHEMA_VERSION);
    ck_assert_str_eq(rp_j_str(j, "kind", ""), "run");
    ck_assert_int_eq((int)rp_j_num(rp_j_get(j, "totals"), "failing", -1), 2);
    const cJSON *counts = rp_j_get(j, "counts");
    ck_assert_int_eq(cJSON_GetArraySize(counts), RP_RC_COUNT);
    ck_assert_str_eq(counts->child->string, "BUG"); /* red first */
    ck_assert_int_eq((int)rp_j_num(counts, "unclassified", 0), 2);
    const cJSON *cases = rp_j_get(j, "cases");
    ck_assert_int_eq(cJSON_GetArraySize(cases), 6);
    const cJSON *c3 = cJSON_GetArrayItem(cases, 2);
    ck_assert_str_eq(rp_j_str(c3, "verdict", ""), "BUG");
    ck_assert_str_eq(rp_j_str(c3, "verdict_source", ""), "classification");
    ck_assert(cJSON_IsFalse(rp_j_get(c3, "pass")));
    ck_assert_str_eq(rp_j_str(rp_j_get(c3, "evidence"), "summary", ""), "blocks.0.attn breaks the envelope x9 at step 1");
    ck_assert_ptr_nonnull(rp_j_path(c3, "evidence", "first_step", NULL));
    ck_assert_str_eq(rp_j_str(rp_j_get(c3, "metrics"), "source", ""), "report");
    ck_assert_int_eq((int)rp_j_num(rp_j_get(c3, "config"), "dp", 0), 2);
    const cJSON *c2 = cJSON_GetArrayItem(cases, 1);
    ck_assert_str_eq(rp_j_str(rp_j_path(c2, "metrics", "worst", NULL), "psnr", ""), "inf");
    const cJSON *c6 = cJSON_GetArrayItem(cases, 5);
    ck_assert(cJSON_IsNull(rp_j_get(c6, "config")));
    ck_assert_str_eq(rp_j_str(c6, "verdict", ""), "SKIPPED");
    ck_assert_str_eq(rp_j_str(cJSON_GetArrayItem(rp_j_get(j, "axes"), 0), "x", "dp"), "dp");
    cJSON_Delete(j);
    rp_run_free(&r);
}
END_TEST

START_TEST(junit_and_markdown) {
    const char *root = REPRO_TEST_SCRATCH "/junit";
    make_store(root, "s1", 20);
    rp_run r;
    load(root, &r);
    char p[512];
    snprintf(p, sizeof p, "%s/junit.xml", root);
    rp_error e;
    ck_assert_msg(rp_report_junit(&r, p, &e) == RP_OK, "%s", e.msg);
    char *x = read_text(p);
    ck_assert_ptr_nonnull(strstr(x, "<testsuites name=\"repro: m\" tests=\"6\" failures=\"2\" errors=\"0\" skipped=\"1\""));
    ck_assert_ptr_nonnull(strstr(x, "<failure message=\"it broke\" type=\"CRASH\">"));
    ck_assert_ptr_nonnull(strstr(x, "type=\"BUG\""));
    ck_assert_ptr_nonnull(strstr(x, "<skipped message=\"no GPU here\"/>"));
    ck_assert_ptr_nonnull(strstr(x, "name=\"dp=3 attention=math [r5]\""));
    int testcases = 0;
    for (const char *s = x; (s = strstr(s, "<testcase ")) != NULL; s++) testcases++;
    ck_assert_int_eq(testcases, 6);
    free(x);
    snprintf(p, sizeof p, "%s/report.md", root);
    ck_assert_msg(rp_report_markdown(&r, NULL, p, &e) == RP_OK, "%s", e.msg);
    char *m = read_text(p);
    ck_assert_ptr_nonnull(strstr(m, "**2 of 6 cases failing**"));
    ck_assert_ptr_nonnull(strstr(m, "| 🔴 BUG | 1 |"));
    ck_assert_ptr_nonnull(strstr(m, "## Failing cases (2)"));
    ck_assert_ptr_nonnull(strstr(m, "### dp × attention"));
    /* red first in the counts: BUG's row before the unclassified one */
    before(m, "| 🔴 BUG |", "| 🔵 unclassified |");
    free(m);
    /* the terminal summary */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    rp_report_terminal(&r, f, 0);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "m: 6 cases, 2 failing"));
    ck_assert_ptr_nonnull(strstr(buf, "failing:\n"));
    ck_assert_ptr_nonnull(strstr(buf, "r3"));
    ck_assert_ptr_null(strstr(buf, "\033[")); /* no colour asked */
    free(buf);
    rp_run_free(&r);
}
END_TEST

START_TEST(compare_runs) {
    const char *ra = REPRO_TEST_SCRATCH "/cmp-a", *rb = REPRO_TEST_SCRATCH "/cmp-b", *rc = REPRO_TEST_SCRATCH "/cmp-c";
    make_store(ra, "a", 20);
    make_store(rb, "b", 20);
    make_store(rc, "c", 60);
    rp_run a, b, c, ab, ac;
    load(ra, &a);
    load(rb, &b);
    load(rc, &c);
    rp_error e;
    rp_compare_opts o;
    rp_compare_opts_default(&o);
    ck_assert_msg(rp_run_compare(&a, &b, &o, &ab, &e) == RP_OK, "%s", e.msg);
    ck_assert_str_eq(ab.kind, "compare");
    ck_assert_int_eq(ab.n, 6);
    ck_assert_int_eq(by_id(&ab, "r1")->verdict, RP_V_IDENTICAL);
    ck_assert_int_eq(by_id(&ab, "r3")->verdict, RP_V_IDENTICAL); /* same outputs on both */
    ck_assert_str_eq(by_id(&ab, "r3")->verdict_a, "BUG");
    ck_assert_int_eq(by_id(&ab, "r4")->verdict, RP_V_CRASH);
    ck_assert(!by_id(&ab, "r4")->pass);
    ck_assert_int_eq(by_id(&ab, "r5")->verdict, RP_V_CONFIG_ERROR);
    ck_assert(by_id(&ab, "r5")->pass); /* the same on both */
    /* a larger change in run C: r3 differs from A by more than rounding */
    o.psnr_min = 99;
    ck_assert_msg(rp_run_compare(&a, &c, &o, &ac, &e) == RP_OK, "%s", e.msg);
    const rp_rcase *x = by_id(&ac, "r3");
    ck_assert_int_eq(x->verdict, RP_V_BUG);
    ck_assert_ptr_nonnull(strstr(x->evidence, "beyond"));
    ck_assert_ptr_nonnull(rp_rcase_vs(x));
    ck_assert_ptr_nonnull(strstr(x->ref_dir, "cmp-a/m/r3"));
    o.psnr_min = 0;
    o.ssim_min = 0;
    rp_run_free(&ac);
    ck_assert_msg(rp_run_compare(&a, &c, &o, &ac, &e) == RP_OK, "%s", e.msg);
    ck_assert_int_eq(by_id(&ac, "r3")->verdict, RP_V_DRIFT);
    rp_run_free(&a);
    rp_run_free(&b);
    rp_run_free(&c);
    rp_run_free(&ab);
    rp_run_free(&ac);
}
END_TEST

START_TEST(history_db) {
    const char *root = REPRO_TEST_SCRATCH "/hist";
    char db[512];
    snprintf(db, sizeof db, "%s-db.sqlite", root);
    unlink(db);
    rp_error e;
    rp_run r;
    make_store(root, "night1", 20);
    load(root, &r);
    rp_run_fill_metrics(&r);
    long long id1 = 0, id1b = 0, id2 = 0;
    ck_assert_msg(rp_history_append(db, &r, &id1, &e) == RP_OK, "%s", e.msg);
    /* the same stored run again: replaced, not added */
    ck_assert_msg(rp_history_append(db, &r, &id1b, &e) == RP_OK, "%s", e.msg);
    ck_assert_int_eq(id1, id1b);
    rp_run_free(&r);
    make_store(root, "night2", 40);
    load(root, &r);
    rp_run_fill_metrics(&r);
    ck_assert_msg(rp_history_append(db, &r, &id2, &e) == RP_OK, "%s", e.msg);
    ck_assert_int_ne(id1, id2);
    rp_run_free(&r);
    rp_hist_point *p = NULL;
    int n = 0;
    char full[40];
    ck_assert_msg(rp_history_trend(db, "r3", "psnr", 0, &p, &n, full, &e) == RP_OK, "%s", e.msg);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(full, "r3");
    ck_assert_str_eq(p[0].verdict, "BUG");
    ck_assert(p[0].value > p[1].value); /* a larger change, a lower PSNR */
    free(p);
    ck_assert_msg(rp_history_trend(db, "r2", "psnr", 1, &p, &n, full, &e) == RP_OK, "%s", e.msg);
    ck_assert_int_eq(n, 1);
    ck_assert(isinf(p[0].value)); /* identical: +inf kept */
    free(p);
    /* by name, by prefix; ambiguous; unknown */
    ck_assert_int_eq(rp_history_trend(db, "dp=1 attention=flash", "ssim", 0, &p, &n, full, &e), RP_OK);
    ck_assert_str_eq(full, "r2");
    free(p);
    ck_assert_int_eq(rp_history_trend(db, "r", "psnr", 0, &p, &n, full, &e), RP_ERR_INVALID);
    ck_assert_int_eq(rp_history_trend(db, "zz", "psnr", 0, &p, &n, full, &e), RP_ERR_NOT_FOUND);
    ck_assert_int_eq(rp_history_trend(db, "r2", "nope", 0, &p, &n, full, &e), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(e.msg, "first_step_ratio"));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(rp_history_print_runs(db, 0, f, &e), RP_OK);
    fclose(f);
    int lines = 0;
    for (const char *s = buf; *s; s++) lines += *s == '\n';
    ck_assert_int_eq(lines, 3); /* header and two runs */
    free(buf);
}
END_TEST

START_TEST(whole_report_without_gnuplot) {
    const char *root = REPRO_TEST_SCRATCH "/whole";
    make_store(root, "s1", 20);
    rp_run r;
    load(root, &r);
    rp_run_fill_metrics(&r);
    char out[512], p[640];
    snprintf(out, sizeof out, "%s/out", root);
    setenv("REPRO_GNUPLOT", "", 1);
    rp_report_opts o = {out, NULL, 1};
    rp_error e;
    ck_assert_msg(rp_report_write(&r, &o, &e) == RP_OK, "%s", e.msg);
    static const char *const files[] = {"summary.json", "report.html", "report.md", "junit.xml",
                                        "images/m-r3-0-diff.png"};
    for (int k = 0; k < 5; k++) {
        snprintf(p, sizeof p, "%s/%s", out, files[k]);
        ck_assert_msg(rp_is_file(p), "no %s", p);
    }
    snprintf(p, sizeof p, "%s/summary.json", out);
    cJSON *j = NULL;
    ck_assert(rp_store_read_json(p, &j, &e) == RP_OK);
    const cJSON *pl = rp_j_get(j, "plots");
    ck_assert_int_ge(cJSON_GetArraySize(pl), 4);
    const cJSON *x;
    cJSON_ArrayForEach(x, pl) {
        ck_assert_str_eq(rp_j_str(x, "status", ""), "skipped");
        if (!strcmp(rp_j_str(x, "name", ""), "psnr_vs_degree"))
            ck_assert_ptr_nonnull(strstr(rp_j_str(x, "reason", ""), "gnuplot not found"));
    }
    cJSON_Delete(j);
    snprintf(p, sizeof p, "%s/report.html", out);
    char *h = read_text(p);
    /* self-contained: nothing fetched from elsewhere */
    ck_assert_ptr_null(strstr(h, "src=\"http"));
    ck_assert_ptr_null(strstr(h, "href=\"http"));
    ck_assert_ptr_null(strstr(h, "url(http"));
    ck_assert_ptr_nonnull(strstr(h, "data:image/png;base64,"));
    ck_assert_ptr_nonnull(strstr(h, "gnuplot not found"));
    ck_assert_ptr_nonnull(strstr(h, "2 of 6 cases failing"));
    /* red first: the BUG panel before the unclassified ones */
    before(h, "id=\"c-m-r3\"", "id=\"c-m-r2\"");
    free(h);
    /* rebuilt: the same bytes */
    char *first = read_text(p);
    ck_assert_msg(rp_report_write(&r, &o, &e) == RP_OK, "%s", e.msg);
    char *second = read_text(p);
    unsetenv("REPRO_GNUPLOT");
    ck_assert_msg(!strcmp(first, second), "report.html differs when rebuilt");
    free(first);
    free(second);
    rp_run_free(&r);
}
END_TEST

int main(void) {
    rp_error e;
    if (rp_store_mkdirs(REPRO_TEST_SCRATCH, &e) != RP_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    Suite *s = suite_create("reports");
    TCase *t = tcase_create("text");
    tcase_add_test(t, base64_vectors);
    tcase_add_test(t, escaping);
    tcase_add_test(t, classes_red_first);
    tcase_add_test(t, sparkline);
    suite_add_tcase(s, t);
    TCase *st = tcase_create("store");
    tcase_set_timeout(st, 120);
    tcase_add_test(st, load_and_verdicts);
    tcase_add_test(st, axes_of_a_run);
    tcase_add_test(st, summary_json);
    tcase_add_test(st, junit_and_markdown);
    tcase_add_test(st, compare_runs);
    tcase_add_test(st, history_db);
    tcase_add_test(st, whole_report_without_gnuplot);
    suite_add_tcase(s, st);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    const int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
