/* test_sharpen.c — engine/sharpen.c: the sharpened variant scales exactly the attention
 * projections' weights (q, k, v; DiT's fused qkv and diffusers' separate ones), exactly
 * (a float times a small integer rounds once), and refuses what it cannot scale. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/safetensors.h"
#include "engine/sharpen.h"

/* Writes a file with the named F32 tensors of 4 values each: 0.1, -2.5, 3.0e-3, 7 (+ i).
 * (The writer keeps the data pointers until it writes.) */
static void write_file(const char *path, const char *const *names, int n) {
    rp_st_writer *w = rp_st_writer_new();
    rp_error err = {0};
    const int64_t shape[1] = {4};
    float v[8][4];
    ck_assert_int_le(n, 8);
    for (int i = 0; i < n; i++) {
        const float vi[4] = {0.1f, -2.5f, 3.0e-3f, 7.0f + (float)i};
        memcpy(v[i], vi, sizeof vi);
        ck_assert_int_eq(rp_st_writer_add(w, names[i], RP_DT_F32, 1, shape, v[i], &err), RP_OK);
    }
    ck_assert_int_eq(rp_st_writer_write(w, path, &err), RP_OK);
    rp_st_writer_free(w);
}

static float value(const rp_st_file *f, const char *name, int k) {
    const rp_st_tensor *t = rp_st_find(f, name);
    ck_assert_ptr_nonnull(t);
    float v;
    memcpy(&v, (const unsigned char *)t->data + 4 * k, 4);
    return v;
}

START_TEST(scales_the_projections_only) {
    char path[] = "/tmp/test-sharpen-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    const char *names[] = {"blocks.0.attn.qkv.weight", "blocks.0.attn.qkv.bias", "blocks.0.mlp.fc1.weight",
                           "transformer_blocks.1.attn.to_k.weight", "transformer_blocks.1.attn.add_v_proj.weight",
                           "blocks.0.xattn.qkv.weight"};
    write_file(path, names, 6);
    rp_st_file *f = NULL;
    rp_error err = {0};
    ck_assert_int_eq(rp_st_open(path, &f, &err), RP_OK);
    ck_assert_int_eq(rp_weights_sharpen(f, 16, &err), RP_OK);
    for (int k = 0; k < 4; k++) {
        const float base[4] = {0.1f, -2.5f, 3.0e-3f, 7.0f};
        ck_assert(value(f, "blocks.0.attn.qkv.weight", k) == base[k] * 16.0f);
        ck_assert(value(f, "transformer_blocks.1.attn.to_k.weight", k) == (k == 3 ? 10.0f : base[k]) * 16.0f);
        ck_assert(value(f, "transformer_blocks.1.attn.add_v_proj.weight", k) == (k == 3 ? 11.0f : base[k]) * 16.0f);
        ck_assert(value(f, "blocks.0.attn.qkv.bias", k) == (k == 3 ? 8.0f : base[k]));   /* biases: no */
        ck_assert(value(f, "blocks.0.mlp.fc1.weight", k) == (k == 3 ? 9.0f : base[k])); /* not attention */
        ck_assert(value(f, "blocks.0.xattn.qkv.weight", k) == (k == 3 ? 12.0f : base[k])); /* a name boundary */
    }
    /* 0 and 1 change nothing; beyond the range is an error */
    ck_assert_int_eq(rp_weights_sharpen(f, 1, &err), RP_OK);
    ck_assert(value(f, "blocks.0.attn.qkv.weight", 0) == 0.1f * 16.0f);
    ck_assert_int_eq(rp_weights_sharpen(f, RP_SHARPEN_MAX + 1, &err), RP_ERR_INVALID);
    ck_assert(strstr(err.msg, "sharpen=65"));
    rp_st_close(f);
    /* a file without attention projections */
    const char *none[] = {"blocks.0.mlp.fc1.weight"};
    write_file(path, none, 1);
    ck_assert_int_eq(rp_st_open(path, &f, &err), RP_OK);
    ck_assert_int_eq(rp_weights_sharpen(f, 4, &err), RP_ERR_INVALID);
    ck_assert(strstr(err.msg, "no attention projection weights"));
    rp_st_close(f);
    unlink(path);
}
END_TEST

int main(void) {
    Suite *s = suite_create("sharpen");
    TCase *tc = tcase_create("sharpen");
    tcase_add_test(tc, scales_the_projections_only);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
