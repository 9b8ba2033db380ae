/* test_matrix.c — matrix files: expansion (product, GitHub-Actions include/exclude,
 * group axes, references, labels, items), filters, the malformed-matrix set in
 * tests/matrix/bad/ (each with its expected one-line error in NAME.err), and the
 * result store's helpers (harness/sweep/runner.h). */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/case/case.h"
#include "harness/sweep/matrix.h"
#include "harness/sweep/runner.h"

/* tests/cmake/matrix.cmake defines these; a build without the fragment skips the file tests */
#ifndef REPRO_SOURCE_DIR
#define REPRO_SOURCE_DIR ""
#endif
#ifndef REPRO_TEST_SCRATCH
#define REPRO_TEST_SCRATCH "matrix-unit-scratch"
#endif

/* Parses text; fails the test with the message when it does not parse. */
static void parse_ok(const char *text, rp_matrix *m) {
    rp_error err;
    rp_error_clear(&err);
    rp_status st = rp_matrix_parse(text, strlen(text), "t.yaml", m, &err);
    ck_assert_msg(st == RP_OK, "parse failed: %s", err.msg);
}

/* Parses text, which must fail with exactly want (after "t.yaml:"). */
static void parse_fails(const char *text, const char *want) {
    rp_matrix m;
    rp_error err;
    rp_error_clear(&err);
    ck_assert_int_ne(rp_matrix_parse(text, strlen(text), "t.yaml", &m, &err), RP_OK);
    char full[1200];
    snprintf(full, sizeof full, "t.yaml:%s", want);
    ck_assert_str_eq(err.msg, full);
    rp_matrix_free(&m);
}

/* Index of the swept case named name, or -1. */
static int by_name(const rp_matrix *m, const char *name) {
    for (int i = 0; i < m->n_cases; i++)
        if (!strcmp(m->cases[i].c.name, name)) return i;
    return -1;
}

static int n_swept(const rp_matrix *m) {
    int n = 0;
    for (int i = 0; i < m->n_cases; i++) n += m->cases[i].swept;
    return n;
}

START_TEST(every_case_field_is_a_matrix_field) {
    /* the default case's JSON (minus items) is valid YAML: as the base it must give the default case */
    rp_case d;
    rp_case_defaults(&d);
    cJSON *j = rp_case_to_json(&d);
    cJSON_DeleteItemFromObject(j, "items");
    cJSON_DeleteItemFromObject(j, "name");
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    char yaml[8192];
    snprintf(yaml, sizeof yaml, "base: %s\n", text);
    free(text);
    rp_matrix m;
    parse_ok(yaml, &m);
    ck_assert_int_eq(m.n_cases, 1);
    char id[17];
    rp_case_id(&d, id);
    ck_assert_str_eq(m.cases[0].id, id);
    ck_assert_str_eq(m.cases[0].c.name, "base");
    ck_assert_int_eq(m.cases[0].ref, 0);
    ck_assert_int_eq(m.cases[0].is_ref, 1);
    rp_matrix_free(&m);
}
END_TEST

START_TEST(product_order_and_references) {
    rp_matrix m;
    parse_ok("name: p\nbase: {backend: gloo}\nseeds: [0, 1]\naxes:\n  dp: [1, 2]\n  attention: [math, flash]\n"
             "reference: {dp: 1, attention: math}\n",
             &m);
    ck_assert_str_eq(m.name, "p");
    ck_assert_int_eq(m.n_cases, 4);
    const char *want[] = {"dp=1 attention=math", "dp=1 attention=flash", "dp=2 attention=math",
                          "dp=2 attention=flash"};
    for (int i = 0; i < 4; i++) {
        ck_assert_str_eq(m.cases[i].c.name, want[i]);
        ck_assert_int_eq(m.cases[i].ref, 0);  /* the first case is everyone's reference */
        ck_assert_int_eq(m.cases[i].swept, 1);
        ck_assert_int_eq(m.cases[i].c.n_items, 2);
        ck_assert_str_eq(m.cases[i].c.backend, "gloo");
    }
    ck_assert_int_eq(m.cases[0].is_ref, 1);
    ck_assert_int_eq(m.cases[3].is_ref, 0);
    ck_assert_int_eq(m.cases[3].c.dp, 2);
    ck_assert_str_eq(m.cases[3].c.attention, "flash");
    /* items: seeds with the DiT default class 0 */
    ck_assert(m.cases[0].c.items[1].seed == 1);
    ck_assert_int_eq(m.cases[0].c.items[1].class_id, 0);
    rp_matrix_free(&m);
}
END_TEST

START_TEST(default_reference_is_the_serial_run) {
    rp_matrix m;
    parse_ok("base: {backend: gloo, inject: dp-shared-noise}\nseeds: [0, 1]\naxes:\n  dp: [2]\n", &m);
    ck_assert_int_eq(m.n_cases, 2);
    /* the added reference comes first, then the case using it */
    ck_assert_int_eq(m.cases[0].swept, 0);
    ck_assert_int_eq(m.cases[0].is_ref, 1);
    ck_assert_int_eq(m.cases[1].ref, 0);
    ck_assert_int_eq(m.cases[0].c.dp, 1);
    ck_assert_str_eq(m.cases[0].c.backend, "self");
    ck_assert_str_eq(m.cases[0].c.inject, "");
    ck_assert_str_eq(m.cases[0].c.name, "ref dp=1");
    ck_assert_str_eq(m.cases[1].c.inject, "dp-shared-noise");
    rp_matrix_free(&m);
}
END_TEST

/* A reference must be an exact layout: one that keeps pipefusion or patch (a reference line
 * that resets dp and the sequence degrees only) would make an approximate case its own
 * reference, compared with nothing. The default reference is serial, so it never is. */
START_TEST(approximate_reference_is_refused) {
    parse_fails("base: {model: dit-tiny}\nseeds: [0]\ninclude:\n  - {pipefusion: 2, warmup_steps: 1, name: pf2}\n"
                "reference: {dp: 1, attention: math}\n",
                "5:12: field 'reference': the reference of case 'pf2' is an approximate layout (pipefusion 2, "
                "patch 1): a reference must be exact; give the reference pipefusion: 1 and patch: 1 (the default "
                "reference is the serial run)");
    /* a reference that keeps the pipeline's patches on one stage is PipeFusion's emulation */
    parse_fails("base: {model: dit-tiny}\nseeds: [0]\ninclude:\n  - {pipefusion: 2, num_pipeline_patch: 4, "
                "warmup_steps: 1, name: pf2}\nreference: {pipefusion: 1}\n",
                "5:12: field 'reference': the reference of case 'pf2' is an approximate layout (pipefusion 1, "
                "num_pipeline_patch 4, patch 1): a reference must be exact; give the reference pipefusion: 1, "
                "num_pipeline_patch: 0 and patch: 1 (the default reference is the serial run)");
    rp_matrix m;
    parse_ok("base: {model: dit-tiny}\nseeds: [0]\ninclude:\n  - {patch: 2, warmup_steps: 1, name: p2}\n", &m);
    ck_assert_int_eq(m.n_cases, 2);
    ck_assert_int_eq(m.cases[0].c.patch, 1); /* the default reference: serial */
    rp_matrix_free(&m);
}
END_TEST

START_TEST(groups_share_references) {
    /* a reference per model: the overrides apply to each case */
    rp_matrix m;
    parse_ok("base: {backend: gloo, steps: 2}\nseeds: [0, 1]\naxes:\n  model: [dit-tiny, sd3-tiny]\n  dp: [1, 2]\n"
             "reference: {dp: 1}\n",
             &m);
    ck_assert_int_eq(m.n_cases, 4);
    for (int i = 0; i < 4; i++) {
        const rp_matrix_case *r = &m.cases[m.cases[i].ref];
        ck_assert_str_eq(r->c.model, m.cases[i].c.model);
        ck_assert_int_eq(r->c.dp, 1);
        ck_assert(m.cases[i].ref <= i); /* references first */
    }
    /* SD3 items have no class */
    const int s = by_name(&m, "model=sd3-tiny dp=2");
    ck_assert_int_ge(s, 0);
    ck_assert_int_eq(m.cases[s].c.items[0].class_id, -1);
    rp_matrix_free(&m);
}
END_TEST

START_TEST(exclude_and_include_follow_github_actions) {
    rp_matrix m;
    parse_ok("base: {backend: gloo}\nseeds: [0, 1]\naxes:\n  dp: [1, 2]\n  attention: [math, flash]\n"
             "exclude:\n  - {dp: 1, attention: flash}\n"
             "include:\n"
             "  - {attention: flash, threads: 2}\n"      /* added to every flash combination */
             "  - {dp: 2, attention: flash, threads: 1}\n" /* overwrites the added value */
             "  - {dp: 4, attention: math}\n"            /* changes an axis value: a new combination */
             "  - {mode: fast}\n",                       /* no axis key: added everywhere */
             &m);
    ck_assert_int_eq(n_swept(&m), 4);
    int k = by_name(&m, "dp=2 attention=flash threads=1 mode=fast");
    ck_assert_msg(k >= 0, "no dp=2 flash case; first is '%s'", m.cases[0].c.name);
    ck_assert_int_eq(m.cases[k].c.threads, 1);
    ck_assert_int_lt(by_name(&m, "dp=1 attention=flash threads=0 mode=fast"), 0); /* excluded */
    k = by_name(&m, "dp=4 attention=math threads=0 mode=deterministic");
    ck_assert_msg(k >= 0, "the include of dp=4 is not its own case");
    ck_assert_str_eq(m.cases[k].c.mode, "deterministic");
    k = by_name(&m, "dp=1 attention=math threads=0 mode=fast");
    ck_assert_int_ge(k, 0);
    rp_matrix_free(&m);
}
END_TEST

START_TEST(includes_without_axes_are_cases) {
    rp_matrix m;
    parse_ok("base: {backend: gloo}\nseeds: [0, 1]\ninclude:\n  - {dp: 2}\n  - {dp: 2, attention: flash, name: fl}\n",
             &m);
    ck_assert_int_eq(n_swept(&m), 2);
    ck_assert_int_ge(by_name(&m, "fl"), 0);
    ck_assert_int_ge(by_name(&m, "dp=2 attention=math"), 0);
    rp_matrix_free(&m);
    parse_ok("base: {steps: 3}\n", &m);
    ck_assert_int_eq(m.n_cases, 1);
    ck_assert_int_eq(m.cases[0].c.steps, 3);
    rp_matrix_free(&m);
}
END_TEST

START_TEST(group_axes_and_resolution) {
    rp_matrix m;
    parse_ok("base: {model: sd3-tiny, steps: 2, backend: gloo, cfg: 1.0}\n"
             "axes:\n"
             "  layout: [{dp: 1}, {ulysses: 2}, {ring: 2, dp: 1}]\n"
             "  resolution: [128, [256, 128]]\n",
             &m);
    ck_assert_int_eq(n_swept(&m), 6);
    const int k = by_name(&m, "dp=1 ulysses=1 ring=2 width=256 height=128");
    ck_assert_msg(k >= 0, "names: %s / %s", m.cases[0].c.name, m.cases[1].c.name);
    ck_assert_int_eq(m.cases[k].c.width, 256);
    ck_assert_int_eq(m.cases[k].c.height, 128);
    ck_assert_int_eq(m.cases[k].c.ring, 2);
    rp_matrix_free(&m);
}
END_TEST

START_TEST(labels_items_and_options) {
    rp_matrix m;
    parse_ok("name: lab\nbase: {model: sd3-tiny, backend: gloo, steps: 2}\n"
             "seeds: [3, 18446744073709551615]\nprompts: [\"a red fox\", \"\"]\n"
             "axes: {dp: [1, 3]}\nrepeat: 3\ntimeout: 12.5\n"
             "tolerances: {latents_max_abs: 1e-5, psnr_min: 40, changed_max: 0.5}\n"
             "expect: [{dp: 3, label: CONFIG_ERROR}]\n",
             &m);
    ck_assert_int_eq(m.repeat, 3);
    ck_assert(m.timeout_s == 12.5);
    ck_assert(m.tol.latents_max_abs == 1e-5 && m.tol.psnr_min == 40 && m.tol.changed_max == 0.5);
    ck_assert(m.tol.ssim_min != m.tol.ssim_min); /* NaN: not set */
    const int k = by_name(&m, "dp=3");
    ck_assert_int_ge(k, 0);
    ck_assert_str_eq(m.cases[k].c.expect, "CONFIG_ERROR");
    ck_assert_str_eq(m.cases[m.cases[k].ref].c.expect, "");
    /* items: for each prompt, each seed */
    const rp_case *c = &m.cases[k].c;
    ck_assert_int_eq(c->n_items, 4);
    ck_assert(c->items[1].seed == 18446744073709551615ULL);
    ck_assert_str_eq(c->items[1].prompt, "a red fox");
    ck_assert_str_eq(c->items[2].prompt, "");
    ck_assert(c->items[2].seed == 3);
    ck_assert_int_eq(c->items[0].class_id, -1);
    rp_matrix_free(&m);
}
END_TEST

START_TEST(yaml_types_are_strict) {
    parse_fails("base: {dp: \"2\"}\n", "1:12: field 'base.dp': expected an integer, got string \"2\"");
    parse_fails("base: {cfg: true}\n", "1:13: field 'base.cfg': expected a number, got boolean true");
    parse_fails("base: {steps: 0x10, cfg: .inf}\n",
                "1:26: field 'base.cfg': expected a finite number, got number .inf");
    parse_fails("base: {model: ~}\n",
                "1:15: field 'base.model': expected a string, got null (write \"\" for an empty one)");
    parse_fails("base: {pipefusion_layers: [1, x]}\n",
                "1:31: field 'base.pipefusion_layers[1]': expected an integer, got string \"x\"");
    parse_fails("axes: {dp: [1, 2]}\nexclude: [{dp: 1}, {dp: 2}]\n", "1:7: the matrix expands to no case");
    parse_fails("expect: [{dp: 2, label: CONFIG_ERROR}]\n", "1:10: field 'expect[0]': matches no case");
    parse_fails("base: {expect: \"not a label\"}\n",
                "1:16: field 'base.expect': a label is a word like CONFIG_ERROR, got \"not a label\"");
    parse_fails("axes: {foo: [1, 2]}\n", "1:8: field 'axes.foo': unknown key; known keys: model depth single_depth "
                                         "weights prompt_embeds weight_seed sharpen vae width height vae_scale_factor steps sampler eta "
                                         "cfg guidance precision attention attn_q_chunk attn_kv_chunk device_profile "
                                         "threads blas_core reduce_split mode numerics backend device gpu_mode dp cfg_parallel ulysses "
                                         "ring pipefusion patch num_pipeline_patch pipefusion_layers warmup_steps "
                                         "batch_forward inject expect name items resolution");
    /* hex and octal integers are integers */
    rp_matrix m;
    parse_ok("base: {steps: 0x10, width: 0o200, weight_seed: 9007199254740993}\n", &m);
    ck_assert_int_eq(m.cases[0].c.steps, 16);
    ck_assert_int_eq(m.cases[0].c.width, 128);
    ck_assert(m.cases[0].c.weight_seed == 9007199254740993ULL);
    rp_matrix_free(&m);
}
END_TEST

START_TEST(filters_select_cases_and_their_references) {
    rp_matrix m;
    parse_ok("base: {backend: gloo}\nseeds: [0, 1]\naxes:\n  dp: [1, 2]\n  attention: [math, flash]\n"
             "reference: {dp: 1, attention: math}\n",
             &m);
    unsigned char keep[8];
    rp_error err;
    rp_error_clear(&err);
    const char *f1[] = {"dp=2", "attention=flash"};
    ck_assert_int_eq(rp_matrix_select(&m, f1, 2, keep, &err), RP_OK);
    ck_assert_int_eq(keep[0] + keep[1] + keep[2] + keep[3], 2); /* the case and its reference */
    ck_assert(keep[by_name(&m, "dp=2 attention=flash")] && keep[0]);
    const char *f2[] = {"attention=flash", "attention=math", "dp=1"}; /* same key: either */
    ck_assert_int_eq(rp_matrix_select(&m, f2, 3, keep, &err), RP_OK);
    ck_assert_int_eq(keep[0] + keep[1] + keep[2] + keep[3], 2);
    char id[32];
    snprintf(id, sizeof id, "id=%.6s", m.cases[3].id);
    const char *f3[] = {id};
    ck_assert_int_eq(rp_matrix_select(&m, f3, 1, keep, &err), RP_OK);
    ck_assert(keep[3]);
    const char *f4[] = {"name=dp=1 attention=flash"};
    ck_assert_int_eq(rp_matrix_select(&m, f4, 1, keep, &err), RP_OK);
    ck_assert_int_eq(keep[0] + keep[1] + keep[2] + keep[3], 2);
    const char *bad[] = {"atention=flash"};
    ck_assert_int_eq(rp_matrix_select(&m, bad, 1, keep, &err), RP_ERR_INVALID);
    ck_assert_str_eq(err.msg, "--filter 'atention=flash': unknown key 'atention' (did you mean 'attention'?)");
    const char *bad2[] = {"flash"};
    ck_assert_int_eq(rp_matrix_select(&m, bad2, 1, keep, &err), RP_ERR_INVALID);
    rp_matrix_free(&m);
}
END_TEST

START_TEST(degrees_text) {
    rp_case c;
    rp_case_defaults(&c);
    char b[64];
    rp_case_degrees_text(&c, b, sizeof b);
    ck_assert_str_eq(b, "1");
    c.dp = 2;
    c.ulysses = 4;
    c.pipefusion = 2;
    rp_case_degrees_text(&c, b, sizeof b);
    ck_assert_str_eq(b, "dp2 u4 pf2");
}
END_TEST

/* Every tests/matrix/bad/NAME.yaml fails with exactly "PATH:" + NAME.err, on one line. */
START_TEST(malformed_matrices) {
    if (!REPRO_SOURCE_DIR[0]) return;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/matrix/bad", REPRO_SOURCE_DIR);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".yaml")) continue;
        char path[8192], errp[8192], want[2048] = "";
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        snprintf(errp, sizeof errp, "%s/%.*s.err", dir, (int)(l - 5), de->d_name);
        FILE *f = fopen(errp, "r");
        ck_assert_msg(f != NULL, "%s has no sidecar %s", path, errp);
        ck_assert_ptr_nonnull(fgets(want, sizeof want, f));
        fclose(f);
        want[strcspn(want, "\n")] = '\0';
        rp_matrix m;
        rp_error err;
        rp_error_clear(&err);
        ck_assert_msg(rp_matrix_load(path, &m, &err) != RP_OK, "%s parsed", path);
        char full[12000];
        snprintf(full, sizeof full, "%s:%s", path, want);
        ck_assert_msg(!strcmp(err.msg, full), "%s:\n  got  %s\n  want %s", de->d_name, err.msg, full);
        ck_assert_msg(!strchr(err.msg, '\n'), "%s: the message is not one line", de->d_name);
        rp_matrix_free(&m);
        n++;
    }
    closedir(d);
    ck_assert_int_ge(n, 20);
}
END_TEST

START_TEST(store_helpers) {
    char base[4096], a[4200], b[4200], p[4300];
    snprintf(base, sizeof base, "%s/store", REPRO_TEST_SCRATCH);
    rp_error err;
    rp_error_clear(&err);
    ck_assert_int_eq(rp_store_remove_tree(base, &err), RP_OK);
    snprintf(a, sizeof a, "%s/x/y/tmp", base);
    snprintf(b, sizeof b, "%s/x/y/final", base);
    ck_assert_int_eq(rp_store_mkdirs(a, &err), RP_OK);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "v", "one");
    snprintf(p, sizeof p, "%s/r.json", a);
    ck_assert_int_eq(rp_store_write_json(p, j, &err), RP_OK);
    cJSON_Delete(j);
    /* publish, then replace by a second directory in one step */
    ck_assert_int_eq(rp_store_publish_dir(a, b, &err), RP_OK);
    ck_assert_int_eq(rp_store_mkdirs(a, &err), RP_OK);
    j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "v", "two");
    ck_assert_int_eq(rp_store_write_json(p, j, &err), RP_OK);
    cJSON_Delete(j);
    ck_assert_int_eq(rp_store_publish_dir(a, b, &err), RP_OK);
    struct stat st;
    ck_assert_int_ne(stat(a, &st), 0); /* the old one is gone */
    snprintf(p, sizeof p, "%s/r.json", b);
    ck_assert_int_eq(rp_store_read_json(p, &j, &err), RP_OK);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "v")->valuestring, "two");
    cJSON_Delete(j);
    snprintf(a, sizeof a, "%s/copy.json", base);
    ck_assert_int_eq(rp_store_copy_file(p, a, &err), RP_OK);
    ck_assert_int_eq(rp_store_read_json(a, &j, &err), RP_OK);
    cJSON_Delete(j);
    ck_assert_int_eq(rp_store_read_json(base, &j, &err) == RP_OK, 0);
    ck_assert_int_eq(rp_store_remove_tree(base, &err), RP_OK);
    ck_assert_int_ne(stat(base, &st), 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("matrix");
    TCase *tc = tcase_create("matrix");
    tcase_add_test(tc, every_case_field_is_a_matrix_field);
    tcase_add_test(tc, product_order_and_references);
    tcase_add_test(tc, default_reference_is_the_serial_run);
    tcase_add_test(tc, approximate_reference_is_refused);
    tcase_add_test(tc, groups_share_references);
    tcase_add_test(tc, exclude_and_include_follow_github_actions);
    tcase_add_test(tc, includes_without_axes_are_cases);
    tcase_add_test(tc, group_axes_and_resolution);
    tcase_add_test(tc, labels_items_and_options);
    tcase_add_test(tc, yaml_types_are_strict);
    tcase_add_test(tc, filters_select_cases_and_their_references);
    tcase_add_test(tc, degrees_text);
    tcase_add_test(tc, malformed_matrices);
    tcase_add_test(tc, store_helpers);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
