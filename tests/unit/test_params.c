/* test_params.c — parameter lists: synthetic write + load round trip, load
 * errors that name the tensor, and the statistics of the init rules. */
#include <check.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/ops.h"
#include "engine/params.h"
#include "engine/rng.h"

static char g_dir[256];

static const char *tmp_path(const char *name) {
    static char bufs[4][512];
    static int k;
    char *b = bufs[k++ % 4];
    snprintf(b, 512, "%s/%s", g_dir, name);
    return b;
}

/* A small list exercising every init rule and every rank up to 4. */
static void small_list(rp_param_list *l) {
    rp_params_add(l, RP_INIT_FANIN, 1.0f, 4, (int64_t[]){16, 4, 2, 2}, "x_embedder.proj.weight");
    rp_params_add(l, RP_INIT_ZERO, 0.0f, 1, (int64_t[]){16}, "x_embedder.proj.bias");
    rp_params_add(l, RP_INIT_SINCOS_2D, 0.0f, 3, (int64_t[]){1, 16, 8}, "pos_embed");
    for (int b = 0; b < 2; b++) {
        rp_params_add(l, RP_INIT_FANIN, 0.5f, 2, (int64_t[]){48, 16}, "blocks.%d.attn.qkv.weight", b);
        rp_params_add(l, RP_INIT_NORMAL, 0.02f, 1, (int64_t[]){48}, "blocks.%d.attn.qkv.bias", b);
        rp_params_add(l, RP_INIT_ONE_NORMAL, 0.1f, 1, (int64_t[]){16}, "blocks.%d.norm.weight", b);
    }
}

static rp_st_file *open_ok(const char *path) {
    rp_st_file *f = NULL;
    rp_error err;
    rp_error_clear(&err);
    ck_assert_msg(rp_st_open(path, &f, &err) == RP_OK, "%s", err.msg);
    return f;
}

START_TEST(test_counts) {
    rp_param_list l = {0};
    small_list(&l);
    ck_assert_int_eq(l.n, 9);
    ck_assert_str_eq(l.specs[3].name, "blocks.0.attn.qkv.weight");
    ck_assert_uint_eq(rp_param_numel(&l.specs[0]), 256);
    ck_assert_uint_eq(rp_params_total(&l), 256 + 16 + 128 + 2 * (768 + 48 + 16));
    rp_params_free(&l);
    ck_assert_int_eq(l.n, 0);
    ck_assert_ptr_null(l.specs);
}
END_TEST

START_TEST(test_write_load_round_trip) {
    const char *p = tmp_path("synth.safetensors"), *p2 = tmp_path("synth2.safetensors");
    rp_param_list l = {0};
    small_list(&l);
    rp_error err;
    rp_error_clear(&err);
    ck_assert_msg(rp_params_write_synthetic(&l, "tiny-test", 1234, p, &err) == RP_OK, "%s", err.msg);
    ck_assert_msg(rp_params_write_synthetic(&l, "tiny-test", 1234, p2, &err) == RP_OK, "%s", err.msg);
    rp_st_file *f = open_ok(p);
    ck_assert_str_eq(rp_st_meta(f, "repro.model"), "tiny-test");
    ck_assert_str_eq(rp_st_meta(f, "repro.weight_seed"), "1234");
    ck_assert_str_eq(rp_st_meta(f, "repro.init"), RP_SYNTHETIC_INIT_VERSION);
    ck_assert_int_eq(f->n, l.n);

    float *block = NULL, *ptrs[9];
    ck_assert_msg(rp_params_load(&l, f, &block, ptrs, &err) == RP_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(block);
    size_t off = 0;
    for (int i = 0; i < l.n; i++) {
        size_t n = rp_param_numel(&l.specs[i]);
        ck_assert_ptr_eq(ptrs[i], block + off); /* one allocation, in list order */
        float *want = malloc(n * sizeof *want);
        rp_param_init_values(&l.specs[i], 1234, want);
        ck_assert_msg(memcmp(want, ptrs[i], n * sizeof *want) == 0, "%s differs", l.specs[i].name);
        free(want);
        off += n;
    }
    free(block);

    /* byte-identical on a second write */
    rp_st_file *f2 = open_ok(p2);
    ck_assert_uint_eq(f->size, f2->size);
    ck_assert(memcmp(f->map, f2->map, f->size) == 0);
    rp_st_close(f2);
    rp_st_close(f);
    rp_params_free(&l);
}
END_TEST

/* Values depend on (seed, name) only, never on list position. */
START_TEST(test_init_keyed_by_name) {
    rp_param_spec a = {.name = "blocks.1.mlp.fc1.weight", .ndim = 2, .shape = {8, 4}, .init = RP_INIT_FANIN,
                       .scale = 1.0f};
    rp_param_spec b = a;
    snprintf(b.name, sizeof b.name, "blocks.2.mlp.fc1.weight");
    float va[32], va2[32], vb[32], vs[32];
    rp_param_init_values(&a, 7, va);
    rp_param_init_values(&a, 7, va2);
    rp_param_init_values(&b, 7, vb);
    rp_param_init_values(&a, 8, vs);
    ck_assert(memcmp(va, va2, sizeof va) == 0);
    ck_assert(memcmp(va, vb, sizeof va) != 0);
    ck_assert(memcmp(va, vs, sizeof va) != 0);

    /* FANIN is z * scale / sqrt(fan_in) with z = rp_randn(seed, fnv1a(name), stream 0) */
    float z[32];
    rp_randn(z, 32, 7, rp_fnv1a64(a.name), 0);
    for (int i = 0; i < 32; i++) ck_assert(va[i] == (float)((double)z[i] * (1.0 / sqrt(4.0))));
}
END_TEST

START_TEST(test_load_missing_tensor) {
    const char *p = tmp_path("miss.safetensors");
    rp_param_list l = {0};
    small_list(&l);
    ck_assert_int_eq(rp_params_write_synthetic(&l, "tiny-test", 0, p, NULL), RP_OK);
    rp_params_add(&l, RP_INIT_FANIN, 1.0f, 2, (int64_t[]){64, 16}, "blocks.3.mlp.fc1.weight");
    rp_st_file *f = open_ok(p);
    rp_error err;
    rp_error_clear(&err);
    float *block = (float *)(uintptr_t)0x99, *ptrs[10];
    ck_assert_int_eq(rp_params_load(&l, f, &block, ptrs, &err), RP_ERR_NOT_FOUND);
    ck_assert_ptr_eq(block, (float *)(uintptr_t)0x99); /* untouched on failure */
    ck_assert_msg(strstr(err.msg, "missing tensor 'blocks.3.mlp.fc1.weight'") && strstr(err.msg, p) &&
                      strstr(err.msg, "needs 10 tensors") && strstr(err.msg, "file has 9"),
                  "%s", err.msg);
    rp_st_close(f);
    rp_params_free(&l);
}
END_TEST

START_TEST(test_load_shape_mismatch) {
    const char *p = tmp_path("shape.safetensors");
    rp_param_list l = {0};
    rp_params_add(&l, RP_INIT_FANIN, 1.0f, 2, (int64_t[]){288, 96}, "blocks.0.attn.qkv.weight");
    ck_assert_int_eq(rp_params_write_synthetic(&l, "m", 0, p, NULL), RP_OK);
    rp_params_free(&l);
    rp_params_add(&l, RP_INIT_FANIN, 1.0f, 2, (int64_t[]){384, 128}, "blocks.0.attn.qkv.weight");
    rp_st_file *f = open_ok(p);
    rp_error err;
    rp_error_clear(&err);
    float *block = NULL, *ptrs[1];
    ck_assert_int_eq(rp_params_load(&l, f, &block, ptrs, &err), RP_ERR_SHAPE);
    ck_assert_ptr_null(block);
    ck_assert_msg(strstr(err.msg, "tensor 'blocks.0.attn.qkv.weight' has shape [288, 96], model needs [384, 128]") &&
                      strstr(err.msg, p),
                  "%s", err.msg);
    rp_st_close(f);
    rp_params_free(&l);
}
END_TEST

/* A reduced list loads from a fuller file: extra tensors are ignored. */
START_TEST(test_load_ignores_extra) {
    const char *p = tmp_path("extra.safetensors");
    rp_param_list full = {0}, part = {0};
    small_list(&full);
    ck_assert_int_eq(rp_params_write_synthetic(&full, "m", 5, p, NULL), RP_OK);
    rp_params_add(&part, RP_INIT_ONE_NORMAL, 0.1f, 1, (int64_t[]){16}, "blocks.1.norm.weight");
    rp_params_add(&part, RP_INIT_ZERO, 0.0f, 1, (int64_t[]){16}, "x_embedder.proj.bias");
    rp_st_file *f = open_ok(p);
    float *block = NULL, *ptrs[2];
    rp_error err;
    ck_assert_int_eq(rp_params_load(&part, f, &block, ptrs, &err), RP_OK);
    float want[16];
    rp_param_init_values(&part.specs[0], 5, want);
    ck_assert(memcmp(ptrs[0], want, sizeof want) == 0);
    for (int i = 0; i < 16; i++) ck_assert(ptrs[1][i] == 0.0f);
    free(block);
    rp_st_close(f);
    rp_params_free(&full);
    rp_params_free(&part);
}
END_TEST

/* mean and std of n values */
static void moments(const float *x, size_t n, double *mean, double *sd) {
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) { s += x[i]; s2 += (double)x[i] * x[i]; }
    *mean = s / n;
    *sd = sqrt(s2 / n - *mean * *mean);
}

START_TEST(test_init_statistics) {
    /* FANIN: std = scale / sqrt(fan_in), fan_in = 128 * 4 = 512 */
    rp_param_spec s = {.name = "blocks.0.mlp.fc2.weight", .ndim = 3, .shape = {256, 128, 4}, .init = RP_INIT_FANIN,
                       .scale = 2.0f};
    size_t n = rp_param_numel(&s);
    float *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    rp_param_init_values(&s, 99, v);
    double mean, sd, want = 2.0 / sqrt(512.0);
    moments(v, n, &mean, &sd);
    /* 6-sigma: sd(mean) = want / sqrt(n); sd of the sample std ~ want / sqrt(2n) */
    ck_assert_msg(fabs(mean) < 6 * want / sqrt((double)n), "mean %g", mean);
    ck_assert_msg(fabs(sd - want) < 6 * want / sqrt(2.0 * n), "sd %g want %g", sd, want);

    /* 1-D FANIN uses fan_in 1 */
    rp_param_spec s1 = {.name = "t", .ndim = 1, .shape = {n}, .init = RP_INIT_FANIN, .scale = 0.5f};
    rp_param_init_values(&s1, 99, v);
    moments(v, n, &mean, &sd);
    ck_assert_msg(fabs(sd - 0.5) < 6 * 0.5 / sqrt(2.0 * n), "sd %g", sd);

    rp_param_spec s2 = {.name = "norm", .ndim = 1, .shape = {n}, .init = RP_INIT_ONE_NORMAL, .scale = 0.1f};
    rp_param_init_values(&s2, 99, v);
    moments(v, n, &mean, &sd);
    ck_assert_msg(fabs(mean - 1.0) < 6 * 0.1 / sqrt((double)n), "mean %g", mean);
    ck_assert_msg(fabs(sd - 0.1) < 6 * 0.1 / sqrt(2.0 * n), "sd %g", sd);

    rp_param_spec s3 = {.name = "emb", .ndim = 2, .shape = {1000, n / 1000}, .init = RP_INIT_NORMAL,
                        .scale = 0.02f};
    size_t n3 = rp_param_numel(&s3);
    rp_param_init_values(&s3, 99, v);
    moments(v, n3, &mean, &sd);
    ck_assert_msg(fabs(sd - 0.02) < 6 * 0.02 / sqrt(2.0 * n3), "sd %g", sd);

    rp_param_spec s4 = {.name = "z", .ndim = 2, .shape = {16, 16}, .init = RP_INIT_ZERO, .scale = 1.0f};
    for (int i = 0; i < 256; i++) v[i] = 1.0f;
    rp_param_init_values(&s4, 99, v);
    for (int i = 0; i < 256; i++) ck_assert(v[i] == 0.0f);
    free(v);
}
END_TEST

START_TEST(test_init_sincos) {
    rp_param_spec s = {.name = "pos_embed", .ndim = 3, .shape = {1, 64, 32}, .init = RP_INIT_SINCOS_2D};
    float v[64 * 32], want[64 * 32];
    rp_param_init_values(&s, 1, v);
    rp_pos_embed_2d_sincos(want, 32, 8, 8);
    ck_assert(memcmp(v, want, sizeof v) == 0);
    /* token 0 sits at (0, 0): sin halves 0, cos halves 1; seed never matters */
    for (int d = 0; d < 8; d++) {
        ck_assert(v[d] == 0.0f && v[8 + d] == 1.0f && v[16 + d] == 0.0f && v[24 + d] == 1.0f);
    }
    rp_param_init_values(&s, 2, want);
    ck_assert(memcmp(v, want, sizeof v) == 0);
}
END_TEST

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s/test_params_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir)) { perror("mkdtemp"); return 1; }
    Suite *s = suite_create("params");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_counts);
    tcase_add_test(tc, test_write_load_round_trip);
    tcase_add_test(tc, test_init_keyed_by_name);
    tcase_add_test(tc, test_load_missing_tensor);
    tcase_add_test(tc, test_load_shape_mismatch);
    tcase_add_test(tc, test_load_ignores_extra);
    tcase_add_test(tc, test_init_statistics);
    tcase_add_test(tc, test_init_sincos);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return failed ? 1 : 0;
}
