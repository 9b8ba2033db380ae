/* test_case.c — the case record: JSON round trip, id stability, strict parsing, files. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/case/case.h"

static rp_case sample_case(void) {
    rp_case c;
    rp_case_defaults(&c);
    snprintf(c.model, sizeof c.model, "flux-tiny");
    c.depth = 1;
    c.weight_seed = 12345678901234567890ULL;   /* > 2^53: written as a string */
    c.width = 128;
    c.height = 96;
    c.steps = 4;
    snprintf(c.sampler, sizeof c.sampler, "euler");
    c.cfg = 1.0;
    c.guidance = 3.25;
    c.eta = 0.1;
    c.ulysses = 2;
    c.ring = 2;
    c.n_pipefusion_layers = 2;
    c.pipefusion_layers[0] = 1;
    c.pipefusion_layers[1] = 3;
    snprintf(c.backend, sizeof c.backend, "gloo");
    c.n_items = 2;
    c.items[0].seed = 7;
    c.items[0].class_id = -1;
    snprintf(c.items[0].prompt, sizeof c.items[0].prompt, "a red \"cube\"");
    c.items[1].seed = 9007199254740993ULL;       /* 2^53 + 1 */
    c.items[1].class_id = -1;
    snprintf(c.expect, sizeof c.expect, "BITWISE");
    snprintf(c.name, sizeof c.name, "ulysses2-ring2");
    return c;
}

START_TEST(defaults_and_world) {
    rp_case c;
    rp_case_defaults(&c);
    ck_assert_str_eq(c.model, "dit-tiny");
    ck_assert_int_eq(c.steps, 10);
    ck_assert_str_eq(c.sampler, "ddim");
    ck_assert(c.cfg == 4.0);
    ck_assert_str_eq(c.precision, "fp32");
    ck_assert_str_eq(c.attention, "math");
    ck_assert_str_eq(c.mode, "deterministic");
    ck_assert_str_eq(c.backend, "self");
    ck_assert_str_eq(c.device, "cpu");
    ck_assert_str_eq(c.gpu_mode, "deterministic");
    ck_assert_int_eq(c.warmup_steps, 1);
    ck_assert_str_eq(c.batch_forward, "joint");
    ck_assert_int_eq(c.n_items, 1);
    ck_assert_int_eq(rp_case_world(&c), 1);
    c.dp = 2; c.cfg_parallel = 2; c.pipefusion = 2; c.ulysses = 2; c.ring = 2;
    ck_assert_int_eq(rp_case_world(&c), 32);
    rp_case_defaults(&c);
    c.dp = 2; c.patch = 4;
    ck_assert_int_eq(rp_case_world(&c), 8);
}
END_TEST

START_TEST(json_round_trip) {
    rp_case a = sample_case(), b;
    cJSON *j = rp_case_to_json(&a);
    ck_assert_ptr_nonnull(j);
    /* fixed key order: model first, then expect/name last */
    ck_assert_str_eq(j->child->string, "model");
    ck_assert_str_eq(cJSON_GetArrayItem(j, cJSON_GetArraySize(j) - 1)->string, "name");
    ck_assert(cJSON_IsString(cJSON_GetObjectItem(j, "weight_seed")));
    rp_error err = {0};
    ck_assert_int_eq(rp_case_from_json(j, "t", &b, &err), RP_OK);
    cJSON_Delete(j);
    /* compare through the normalised text (memcmp would see string tails) */
    cJSON *ja = rp_case_to_json(&a), *jb = rp_case_to_json(&b);
    char *ta = cJSON_PrintUnformatted(ja), *tb = cJSON_PrintUnformatted(jb);
    ck_assert_str_eq(ta, tb);
    free(ta); free(tb); cJSON_Delete(ja); cJSON_Delete(jb);
    ck_assert(b.weight_seed == 12345678901234567890ULL);
    ck_assert(b.items[1].seed == 9007199254740993ULL);
    ck_assert_str_eq(b.items[0].prompt, "a red \"cube\"");
    ck_assert_str_eq(b.name, "ulysses2-ring2");
    ck_assert(b.guidance == 3.25 && b.eta == 0.1);
    ck_assert_int_eq(b.n_pipefusion_layers, 2);
    ck_assert_int_eq(b.pipefusion_layers[1], 3);
}
END_TEST

START_TEST(missing_keys_keep_defaults) {
    cJSON *j = cJSON_Parse("{\"model\":\"sd3-tiny\",\"items\":[{\"seed\":3,\"prompt\":\"x\"},{}]}");
    rp_case c;
    rp_error err = {0};
    ck_assert_int_eq(rp_case_from_json(j, "t", &c, &err), RP_OK);
    cJSON_Delete(j);
    ck_assert_str_eq(c.model, "sd3-tiny");
    ck_assert_int_eq(c.steps, 10);
    ck_assert_int_eq(c.n_items, 2);
    ck_assert(c.items[0].seed == 3);
    ck_assert_str_eq(c.items[0].prompt, "x");
    ck_assert(c.items[1].seed == 0);
    ck_assert_int_eq(c.items[1].class_id, 0);
}
END_TEST

START_TEST(id_stability) {
    rp_case a = sample_case(), b = sample_case();
    char ia[17], ib[17];
    rp_case_id(&a, ia);
    rp_case_id(&b, ib);
    ck_assert_int_eq((int)strlen(ia), 16);
    ck_assert_str_eq(ia, ib);
    for (int i = 0; i < 16; i++) ck_assert(strchr("0123456789abcdef", ia[i]));
    /* labels do not change it */
    snprintf(b.expect, sizeof b.expect, "CONFIG_ERROR");
    snprintf(b.name, sizeof b.name, "another label");
    rp_case_id(&b, ib);
    ck_assert_str_eq(ia, ib);
    /* fields added later (gpu_mode, prompt_embeds, sharpen, numerics) are outside the id while they hold their
     * defaults: the id is that of the same JSON without the keys, as computed before the
     * fields existed */
    {
        cJSON *j = rp_case_to_json(&a);
        cJSON_DeleteItemFromObject(j, "expect");
        cJSON_DeleteItemFromObject(j, "name");
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "gpu_mode")->valuestring, "deterministic");
        cJSON_DeleteItemFromObject(j, "gpu_mode");
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "prompt_embeds")->valuestring, "");
        cJSON_DeleteItemFromObject(j, "prompt_embeds");
        ck_assert(cJSON_GetObjectItemCaseSensitive(j, "sharpen")->valuedouble == 0);
        cJSON_DeleteItemFromObject(j, "sharpen");
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "numerics")->valuestring, "default");
        cJSON_DeleteItemFromObject(j, "numerics");
        char *text = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        unsigned long long h = 0xcbf29ce484222325ULL;
        for (const char *p = text; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
        for (const char *p = "\nrepro " REPRO_VERSION; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
        free(text);
        char want[17];
        snprintf(want, sizeof want, "%016llx", h);
        ck_assert_str_eq(ia, want);
    }
    /* every field does: one change per field, each id distinct from the base */
    rp_case v[29];
    for (int i = 0; i < 29; i++) v[i] = sample_case();
    int k = 0;
    snprintf(v[k++].model, 64, "flux-dev");
    v[k++].depth = 2;
    v[k++].single_depth = 1;
    snprintf(v[k++].weights, 8, "w.st");
    v[k++].weight_seed = 1;
    snprintf(v[k++].vae, 64, "flux-vae");
    v[k++].width = 64;
    v[k++].vae_scale_factor = 16;
    v[k++].steps = 5;
    v[k++].cfg = 2.0;
    v[k++].guidance = 3.5;
    snprintf(v[k++].precision, 16, "bf16");
    snprintf(v[k++].attention, 16, "split");
    v[k++].threads = 2;
    snprintf(v[k++].mode, 16, "fast");
    v[k++].dp = 2;
    v[k++].pipefusion = 2;
    v[k++].warmup_steps = 2;
    snprintf(v[k++].inject, 64, "rope-offset");
    v[k++].items[0].seed = 8;
    v[k++].items[1].class_id = 3;
    snprintf(v[k++].items[1].prompt, 8, "p");
    v[k++].n_items = 1;
    v[k++].eta = 0.2;
    v[k++].pipefusion_layers[1] = 2;
    snprintf(v[k++].gpu_mode, 16, "fast");
    snprintf(v[k++].prompt_embeds, 16, "e.safetensors");
    v[k++].sharpen = 16;
    snprintf(v[k++].numerics, 16, "invariant");
    ck_assert_int_eq(k, 29);
    char ids[29][17];
    for (int i = 0; i < 29; i++) {
        rp_case_id(&v[i], ids[i]);
        ck_assert_msg(strcmp(ids[i], ia) != 0, "change %d kept the id", i);
        for (int m = 0; m < i; m++) ck_assert_msg(strcmp(ids[i], ids[m]) != 0, "changes %d and %d collide", i, m);
    }
}
END_TEST

static void expect_parse_error(const char *json, const char *msg) {
    cJSON *j = cJSON_Parse(json);
    ck_assert_ptr_nonnull(j);
    rp_case c;
    rp_case_defaults(&c);
    snprintf(c.model, sizeof c.model, "untouched");
    rp_error err = {0};
    ck_assert_int_eq(rp_case_from_json(j, "case.json", &c, &err), RP_ERR_INVALID);
    cJSON_Delete(j);
    ck_assert_str_eq(err.msg, msg);
    ck_assert_str_eq(c.model, "untouched");   /* all or nothing */
}

START_TEST(strict_parsing) {
    expect_parse_error("{\"ulyses\":2}", "case.json: unknown field 'ulyses' (did you mean 'ulysses'?)");
    expect_parse_error("{\"num_pipline_patch\":2}",
                       "case.json: unknown field 'num_pipline_patch' (did you mean 'num_pipeline_patch'?)");
    expect_parse_error("{\"Steps\":2}", "case.json: unknown field 'Steps' (did you mean 'steps'?)");
}
END_TEST

START_TEST(strict_parsing_types) {
    expect_parse_error("{\"ulysses\":\"2\"}", "case.json: field 'ulysses': expected an integer, got string");
    expect_parse_error("{\"steps\":2.5}", "case.json: field 'steps': expected an integer, got number 2.5");
    expect_parse_error("{\"cfg\":true}", "case.json: field 'cfg': expected a number, got boolean");
    expect_parse_error("{\"model\":3}", "case.json: field 'model': expected a string, got number 3");
    expect_parse_error("{\"items\":{}}",
                       "case.json: field 'items': expected an array of {seed, class, prompt}, got object");
    expect_parse_error("{\"items\":[3]}",
                       "case.json: field 'items[0]': expected an object {seed, class, prompt}, got number 3");
    expect_parse_error("{\"items\":[{\"seed\":-1}]}",
                       "case.json: field 'items[0].seed': expected an unsigned integer (above 2^53 as a "
                       "decimal string), got number -1");
    expect_parse_error("{\"items\":[{\"seed\":\"12x\"}]}",
                       "case.json: field 'items[0].seed': expected an unsigned 64-bit integer, got string \"12x\"");
    expect_parse_error("{\"items\":[{\"seed\":1},{\"clas\":2}]}",
                       "case.json: unknown field 'clas' in items[1] (did you mean 'class'?)");
    expect_parse_error("{\"pipefusion_layers\":[1,\"2\"]}",
                       "case.json: field 'pipefusion_layers[1]': expected an integer, got string");
    expect_parse_error("{\"dp\":1,\"dp\":2}", "case.json: field 'dp' given twice");
    expect_parse_error("{\"mode\":\"deterministic-but-much-longer\"}",
                       "case.json: field 'mode': string longer than 15 characters");
}
END_TEST

START_TEST(unknown_key_far_from_all) {
    cJSON *j = cJSON_Parse("{\"zzzzzzzzzzzzzzzzzzzz\":1}");
    rp_case c;
    rp_error err = {0};
    ck_assert_int_eq(rp_case_from_json(j, "case.json", &c, &err), RP_ERR_INVALID);
    cJSON_Delete(j);
    ck_assert_ptr_nonnull(strstr(err.msg, "case.json: unknown field 'zzzzzzzzzzzzzzzzzzzz'; known fields: model depth"));
    ck_assert_ptr_nonnull(strstr(err.msg, " items expect name"));
}
END_TEST

START_TEST(save_and_load) {
    char path[128];
    snprintf(path, sizeof path, "/tmp/repro-test-case-%d.json", (int)getpid());
    rp_case a = sample_case(), b;
    rp_error err = {0};
    ck_assert_int_eq(rp_case_save(&a, path, &err), RP_OK);
    ck_assert_int_eq(rp_case_load(path, &b, &err), RP_OK);
    char ia[17], ib[17];
    rp_case_id(&a, ia);
    rp_case_id(&b, ib);
    ck_assert_str_eq(ia, ib);
    ck_assert_str_eq(b.name, a.name);
    /* a broken file names itself */
    FILE *f = fopen(path, "w");
    fputs("{\"model\": ", f);
    fclose(f);
    ck_assert_int_eq(rp_case_load(path, &b, &err), RP_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.msg, path));
    /* an unknown key reports the file as origin */
    f = fopen(path, "w");
    fputs("{\"backnd\": \"gloo\"}", f);
    fclose(f);
    ck_assert_int_eq(rp_case_load(path, &b, &err), RP_ERR_INVALID);
    char want[256];
    snprintf(want, sizeof want, "%s: unknown field 'backnd' (did you mean 'backend'?)", path);
    ck_assert_str_eq(err.msg, want);
    unlink(path);
    /* non-regular targets are refused */
    ck_assert_int_eq(rp_case_save(&a, "/dev/null", &err), RP_ERR_IO);
    struct stat st;
    ck_assert_int_eq(stat("/dev/null", &st), 0);
    ck_assert(S_ISCHR(st.st_mode));
    ck_assert_int_eq(rp_case_load("/tmp/repro-test-case-missing.json", &b, &err), RP_ERR_IO);
}
END_TEST

/* rp_case_same compares the whole normalised text, labels aside; rp_case_problem_diff lets
 * the fields of how a case runs differ and names the first field of what it computes. */
START_TEST(same_and_problem) {
    rp_case a = sample_case(), b = a;
    char what[300];
    ck_assert(rp_case_same(&a, &b));
    snprintf(b.name, sizeof b.name, "another label");
    snprintf(b.expect, sizeof b.expect, "drift");
    ck_assert(rp_case_same(&a, &b));
    b.items[0].prompt[0] = 'A'; /* a prompt is part of the case */
    ck_assert(!rp_case_same(&a, &b));
    ck_assert(rp_case_problem_diff(&a, &b, what, sizeof what));
    ck_assert_ptr_nonnull(strstr(what, "field 'items'"));
    /* how it runs: layout, kernels, device, numerics, fault */
    b = a;
    b.ulysses = 1;
    b.ring = 4;
    b.dp = 2;
    b.n_pipefusion_layers = 0;
    b.threads = 3;
    snprintf(b.attention, sizeof b.attention, "flash");
    b.attn_kv_chunk = 40;
    snprintf(b.backend, sizeof b.backend, "self");
    snprintf(b.numerics, sizeof b.numerics, "invariant");
    snprintf(b.inject, sizeof b.inject, "attn-scale");
    ck_assert(!rp_case_same(&a, &b));
    ck_assert(!rp_case_problem_diff(&a, &b, what, sizeof what));
    ck_assert_str_eq(what, "");
    /* what it computes: the precision, the steps, an item's seed beyond 32 bits */
    snprintf(b.precision, sizeof b.precision, "bf16");
    ck_assert(rp_case_problem_diff(&a, &b, what, sizeof what));
    ck_assert_str_eq(what, "field 'precision': \"fp32\" against \"bf16\"");
    b = a;
    b.steps = 5;
    ck_assert(rp_case_problem_diff(&a, &b, what, sizeof what));
    ck_assert_ptr_nonnull(strstr(what, "field 'steps': 4 against 5"));
    b = a;
    b.items[1].seed = a.items[1].seed & 0xffffffffULL;
    ck_assert(rp_case_problem_diff(&a, &b, what, sizeof what));
    ck_assert_ptr_nonnull(strstr(what, "field 'items'"));
}
END_TEST

int main(void) {
    Suite *s = suite_create("case");
    TCase *tc = tcase_create("case");
    tcase_add_test(tc, defaults_and_world);
    tcase_add_test(tc, json_round_trip);
    tcase_add_test(tc, missing_keys_keep_defaults);
    tcase_add_test(tc, id_stability);
    tcase_add_test(tc, strict_parsing);
    tcase_add_test(tc, strict_parsing_types);
    tcase_add_test(tc, unknown_key_far_from_all);
    tcase_add_test(tc, save_and_load);
    tcase_add_test(tc, same_and_problem);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
