/* test_safetensors.c — round trips, a file written by tests/reference/st.py, and
 * every class of malformed input the reader must refuse with a message naming
 * the file and the tensor. */
#include <check.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/safetensors.h"

static char g_dir[256]; /* scratch directory, removed at exit */

/* Returns dir/name in a static rotating buffer (tests use at most a few at once). */
static const char *tmp_path(const char *name) {
    static char bufs[4][512];
    static int k;
    char *b = bufs[k++ % 4];
    snprintf(b, 512, "%s/%s", g_dir, name);
    return b;
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(data, 1, n, fp), n);
    ck_assert_int_eq(fclose(fp), 0);
}

/* Writes a safetensors file with a literal header (stored length = strlen
 * unless len_override != 0) and data region. */
static void write_st(const char *path, const char *header, const void *data, size_t ndata,
                     unsigned long long len_override) {
    size_t hl = strlen(header);
    unsigned long long len = len_override ? len_override : hl;
    unsigned char *buf = malloc(8 + hl + ndata + 1);
    ck_assert_ptr_nonnull(buf);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(len >> (8 * i));
    memcpy(buf + 8, header, hl);
    if (ndata) memcpy(buf + 8 + hl, data, ndata);
    write_bytes(path, buf, 8 + hl + ndata);
    free(buf);
}

/* Opens path expecting failure with status `want` and every substring in subs
 * (NULL-terminated) in the message; checks *out is left untouched. */
static void expect_open_fail(const char *path, rp_status want, const char *const *subs) {
    rp_st_file *sentinel = (rp_st_file *)(uintptr_t)0x1234, *f = sentinel;
    rp_error err;
    rp_error_clear(&err);
    rp_status s = rp_st_open(path, &f, &err);
    ck_assert_msg(s == want, "%s: status %s, want %s (msg: %s)", path, rp_status_name(s), rp_status_name(want),
                  err.msg);
    ck_assert_ptr_eq(f, sentinel);
    ck_assert_msg(strstr(err.msg, path) != NULL, "message lacks the path: %s", err.msg);
    for (int i = 0; subs && subs[i]; i++)
        ck_assert_msg(strstr(err.msg, subs[i]) != NULL, "message lacks '%s': %s", subs[i], err.msg);
    ck_assert_msg(err.where[0] != '\0', "no source location");
}

static rp_st_file *open_ok(const char *path) {
    rp_st_file *f = NULL;
    rp_error err;
    rp_error_clear(&err);
    rp_status s = rp_st_open(path, &f, &err);
    ck_assert_msg(s == RP_OK, "open %s: %s", path, err.msg);
    ck_assert_ptr_nonnull(f);
    return f;
}

/* ---- fixtures ------------------------------------------------------------ */

/* Written by tests/reference/st.py (json.dumps header, space padding,
 * "__metadata__" last, F16 and I32 data at odd offsets):
 *   a.weight F32 [2,3] = [[1.5,-2,0.25],[3,1e-3,-7]]   b F64 [2] = [0.1,-1e10]
 *   c I64 [3] = [-1,2,2^40]   d U8 [3] = [0,1,255]   h F16 [4] = [1,-2,65504,6e-8]
 *   i I32 [2,1] = [[-5],[7]]   metadata {"format": "pt", "note": "made by st.py"} */
static const unsigned char PY_FILE[] = {
    0xc0, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7b, 0x22, 0x61, 0x2e, 0x77, 0x65, 0x69, 0x67,
    0x68, 0x74, 0x22, 0x3a, 0x20, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x22,
    0x46, 0x33, 0x32, 0x22, 0x2c, 0x20, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x5b,
    0x32, 0x2c, 0x20, 0x33, 0x5d, 0x2c, 0x20, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66,
    0x73, 0x65, 0x74, 0x73, 0x22, 0x3a, 0x20, 0x5b, 0x30, 0x2c, 0x20, 0x32, 0x34, 0x5d, 0x7d, 0x2c,
    0x20, 0x22, 0x62, 0x22, 0x3a, 0x20, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x20,
    0x22, 0x46, 0x36, 0x34, 0x22, 0x2c, 0x20, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3a, 0x20,
    0x5b, 0x32, 0x5d, 0x2c, 0x20, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66, 0x73, 0x65,
    0x74, 0x73, 0x22, 0x3a, 0x20, 0x5b, 0x32, 0x34, 0x2c, 0x20, 0x34, 0x30, 0x5d, 0x7d, 0x2c, 0x20,
    0x22, 0x63, 0x22, 0x3a, 0x20, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x22,
    0x49, 0x36, 0x34, 0x22, 0x2c, 0x20, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x5b,
    0x33, 0x5d, 0x2c, 0x20, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66, 0x73, 0x65, 0x74,
    0x73, 0x22, 0x3a, 0x20, 0x5b, 0x34, 0x30, 0x2c, 0x20, 0x36, 0x34, 0x5d, 0x7d, 0x2c, 0x20, 0x22,
    0x64, 0x22, 0x3a, 0x20, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x22, 0x55,
    0x38, 0x22, 0x2c, 0x20, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x5b, 0x33, 0x5d,
    0x2c, 0x20, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66, 0x73, 0x65, 0x74, 0x73, 0x22,
    0x3a, 0x20, 0x5b, 0x36, 0x34, 0x2c, 0x20, 0x36, 0x37, 0x5d, 0x7d, 0x2c, 0x20, 0x22, 0x68, 0x22,
    0x3a, 0x20, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x22, 0x46, 0x31, 0x36,
    0x22, 0x2c, 0x20, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x5b, 0x34, 0x5d, 0x2c,
    0x20, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66, 0x73, 0x65, 0x74, 0x73, 0x22, 0x3a,
    0x20, 0x5b, 0x36, 0x37, 0x2c, 0x20, 0x37, 0x35, 0x5d, 0x7d, 0x2c, 0x20, 0x22, 0x69, 0x22, 0x3a,
    0x20, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x22, 0x49, 0x33, 0x32, 0x22,
    0x2c, 0x20, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x5b, 0x32, 0x2c, 0x20, 0x31,
    0x5d, 0x2c, 0x20, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66, 0x73, 0x65, 0x74, 0x73,
    0x22, 0x3a, 0x20, 0x5b, 0x37, 0x35, 0x2c, 0x20, 0x38, 0x33, 0x5d, 0x7d, 0x2c, 0x20, 0x22, 0x5f,
    0x5f, 0x6d, 0x65, 0x74, 0x61, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x5f, 0x22, 0x3a, 0x20, 0x7b, 0x22,
    0x66, 0x6f, 0x72, 0x6d, 0x61, 0x74, 0x22, 0x3a, 0x20, 0x22, 0x70, 0x74, 0x22, 0x2c, 0x20, 0x22,
    0x6e, 0x6f, 0x74, 0x65, 0x22, 0x3a, 0x20, 0x22, 0x6d, 0x61, 0x64, 0x65, 0x20, 0x62, 0x79, 0x20,
    0x73, 0x74, 0x2e, 0x70, 0x79, 0x22, 0x7d, 0x7d, 0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0,
    0x00, 0x00, 0x80, 0x3e, 0x00, 0x00, 0x40, 0x40, 0x6f, 0x12, 0x83, 0x3a, 0x00, 0x00, 0xe0, 0xc0,
    0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f, 0x00, 0x00, 0x00, 0x20, 0x5f, 0xa0, 0x02, 0xc2,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0xff, 0x00, 0x3c, 0x00, 0xc0, 0xff,
    0x7b, 0x01, 0x00, 0xfb, 0xff, 0xff, 0xff, 0x07, 0x00, 0x00, 0x00,
};

START_TEST(test_read_python_file) {
    const char *p = tmp_path("py.safetensors");
    write_bytes(p, PY_FILE, sizeof PY_FILE);
    rp_st_file *f = open_ok(p);
    ck_assert_int_eq(f->n, 6);
    static const char *names[] = {"a.weight", "b", "c", "d", "h", "i"};
    for (int i = 0; i < 6; i++) ck_assert_str_eq(f->tensors[i].name, names[i]);
    ck_assert_str_eq(rp_st_meta(f, "format"), "pt");
    ck_assert_str_eq(rp_st_meta(f, "note"), "made by st.py");
    ck_assert_ptr_null(rp_st_meta(f, "absent"));

    float a[6];
    int64_t sa[2] = {2, 3};
    ck_assert_int_eq(rp_st_read_f32(f, "a.weight", 2, sa, a, NULL), RP_OK);
    const float wa[6] = {1.5f, -2.0f, 0.25f, 3.0f, 1e-3f, -7.0f};
    ck_assert(memcmp(a, wa, sizeof wa) == 0);

    float b[2];
    int64_t sb[1] = {2};
    ck_assert_int_eq(rp_st_read_f32(f, "b", 1, sb, b, NULL), RP_OK);
    ck_assert(b[0] == (float)0.1 && b[1] == (float)-1e10);

    float h[4];
    int64_t sh[1] = {4};
    ck_assert_int_eq(rp_st_read_f32(f, "h", 1, sh, h, NULL), RP_OK);
    ck_assert(h[0] == 1.0f && h[1] == -2.0f && h[2] == 65504.0f && h[3] == ldexpf(1.0f, -24));

    const rp_st_tensor *c = rp_st_find(f, "c");
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->dtype, RP_DT_I64);
    int64_t cv[3];
    memcpy(cv, c->data, sizeof cv);
    ck_assert(cv[0] == -1 && cv[1] == 2 && cv[2] == (int64_t)1 << 40);
    const rp_st_tensor *d = rp_st_find(f, "d");
    ck_assert(d && d->nbytes == 3 && ((const unsigned char *)d->data)[2] == 255);
    const rp_st_tensor *it = rp_st_find(f, "i");
    ck_assert(it && it->ndim == 2 && it->shape[0] == 2 && it->shape[1] == 1 && it->dtype == RP_DT_I32);
    int32_t iv[2];
    memcpy(iv, it->data, sizeof iv);
    ck_assert(iv[0] == -5 && iv[1] == 7);
    ck_assert_ptr_null(rp_st_find(f, "a"));
    ck_assert_ptr_null(rp_st_find(f, "zzz"));
    rp_st_close(f);
}
END_TEST

/* Header as torch's safetensors writes it: metadata first, no padding, so the
 * data region starts unaligned. */
START_TEST(test_read_unpadded_header) {
    const char *p = tmp_path("unpadded.safetensors");
    const char *hdr = "{\"__metadata__\":{\"format\":\"pt\"},\"x\":{\"dtype\":\"BF16\",\"shape\":[3],"
                      "\"data_offsets\":[0,6]}}";
    ck_assert(strlen(hdr) % 8 != 0);
    const uint16_t bf[3] = {0x3f80, 0xc040, 0x7f80}; /* 1, -3, +inf */
    write_st(p, hdr, bf, sizeof bf, 0);
    rp_st_file *f = open_ok(p);
    float x[3];
    int64_t s[1] = {3};
    ck_assert_int_eq(rp_st_read_f32(f, "x", 1, s, x, NULL), RP_OK);
    ck_assert(x[0] == 1.0f && x[1] == -3.0f && isinf(x[2]) && x[2] > 0);
    rp_st_close(f);
}
END_TEST

/* Every dtype, a 0-D scalar, an empty tensor and metadata survive write + read. */
START_TEST(test_round_trip_all_dtypes) {
    const char *p = tmp_path("rt.safetensors");
    const float f32[6] = {1, -2, 3.5f, 1e-30f, -0.0f, 65504};
    const uint16_t f16[8] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x0400, 0x8000, 0xfc00};
    const float f16_want[8] = {1, -2, 65504, ldexpf(1, -24), 1023 * ldexpf(1, -24), ldexpf(1, -14), -0.0f,
                               -INFINITY};
    const uint16_t bf16[2] = {0x4049, 0xbf80}; /* 3.140625, -1 */
    const double f64[3] = {1.0 / 3.0, -2.5, 1e300};
    const int64_t i64[2] = {INT64_MIN, INT64_MAX};
    const int32_t i32[3] = {-7, 0, 7};
    const uint8_t u8[5] = {0, 1, 2, 254, 255};
    const float scalar = 42.0f;
    int64_t s23[2] = {2, 3}, s8[1] = {8}, s2[1] = {2}, s3[1] = {3}, s5[1] = {5}, s0[1] = {0},
            s113[3] = {1, 1, 3};
    rp_error err;
    rp_error_clear(&err);
    rp_st_writer *w = rp_st_writer_new();
    /* added out of name order on purpose */
    ck_assert_int_eq(rp_st_writer_add(w, "u8", RP_DT_U8, 1, s5, u8, &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_add(w, "f32", RP_DT_F32, 2, s23, f32, &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_add(w, "f16", RP_DT_F16, 1, s8, f16, &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_add(w, "bf16", RP_DT_BF16, 1, s2, bf16, &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_add(w, "f64", RP_DT_F64, 3, s113, f64, &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_add(w, "i64", RP_DT_I64, 1, s2, i64, &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_add(w, "i32", RP_DT_I32, 1, s3, i32, &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_add(w, "scalar", RP_DT_F32, 0, NULL, &scalar, &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_add(w, "empty", RP_DT_F32, 1, s0, NULL, &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_meta(w, "k", "old", &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_meta(w, "k", "v \"quoted\" \\ é", &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_meta(w, "a", "1", &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_add(w, "f32", RP_DT_F32, 2, s23, f32, &err), RP_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "'f32'") != NULL, "%s", err.msg);
    ck_assert_int_eq(rp_st_writer_write(w, p, &err), RP_OK);
    rp_st_writer_free(w);
    ck_assert_int_eq(access(tmp_path("rt.safetensors.tmp"), F_OK), -1);

    /* header is space-padded to 8 bytes */
    FILE *fp = fopen(p, "rb");
    unsigned char len8[8];
    ck_assert_uint_eq(fread(len8, 1, 8, fp), 8);
    fclose(fp);
    ck_assert_int_eq(len8[0] % 8, 0);

    rp_st_file *f = open_ok(p);
    ck_assert_int_eq(f->n, 9);
    ck_assert_str_eq(rp_st_meta(f, "k"), "v \"quoted\" \\ é");
    ck_assert_str_eq(rp_st_meta(f, "a"), "1");
    for (int i = 1; i < f->n; i++) ck_assert(strcmp(f->tensors[i - 1].name, f->tensors[i].name) < 0);
    /* data offsets follow name order */
    for (int i = 1; i < f->n; i++)
        ck_assert((const char *)f->tensors[i - 1].data + f->tensors[i - 1].nbytes == f->tensors[i].data);

    float out[8];
    ck_assert_int_eq(rp_st_read_f32(f, "f32", 2, s23, out, NULL), RP_OK);
    ck_assert(memcmp(out, f32, sizeof f32) == 0);
    ck_assert_int_eq(rp_st_read_f32(f, "f16", 1, s8, out, NULL), RP_OK);
    for (int i = 0; i < 8; i++) {
        ck_assert_msg(out[i] == f16_want[i], "f16[%d] %g vs %g", i, out[i], f16_want[i]);
        ck_assert(signbit(out[i]) == signbit(f16_want[i]));
    }
    ck_assert_int_eq(rp_st_read_f32(f, "bf16", 1, s2, out, NULL), RP_OK);
    ck_assert(out[0] == 3.140625f && out[1] == -1.0f);
    ck_assert_int_eq(rp_st_read_f32(f, "f64", 3, s113, out, NULL), RP_OK);
    ck_assert(out[0] == (float)(1.0 / 3.0) && out[1] == -2.5f && isinf(out[2]));
    ck_assert_int_eq(rp_st_read_f32(f, "scalar", 0, NULL, out, NULL), RP_OK);
    ck_assert(out[0] == 42.0f);
    ck_assert_int_eq(rp_st_read_f32(f, "empty", 1, s0, out, NULL), RP_OK);

    /* borrowed floats: an aligned f32 tensor is a view into the file (no copy to free),
     * any other float dtype a converted copy; both give rp_st_read_f32's values */
    float *v = NULL, *own = NULL;
    const rp_st_tensor *tf = rp_st_find(f, "f32");
    ck_assert_int_eq(rp_st_f32_borrow(f, tf, &v, &own, NULL), RP_OK);
    if (((uintptr_t)tf->data & 3) == 0) ck_assert(own == NULL && v == rp_st_f32_view(f, tf) && (void *)v == tf->data);
    else ck_assert(own == v && rp_st_f32_view(f, tf) == NULL);
    ck_assert(memcmp(v, f32, sizeof f32) == 0);
    free(own);
    ck_assert_int_eq(rp_st_f32_borrow(f, rp_st_find(f, "bf16"), &v, &own, NULL), RP_OK);
    ck_assert(own != NULL && own == v && v[0] == 3.140625f && v[1] == -1.0f);
    ck_assert(rp_st_f32_view(f, rp_st_find(f, "bf16")) == NULL);
    free(own);
    rp_error_clear(&err);
    ck_assert_int_eq(rp_st_f32_borrow(f, rp_st_find(f, "i32"), &v, &own, &err), RP_ERR_SHAPE);
    ck_assert(v == NULL && own == NULL);

    const rp_st_tensor *t = rp_st_find(f, "i64");
    ck_assert(t && t->dtype == RP_DT_I64 && t->nbytes == 16 && memcmp(t->data, i64, 16) == 0);
    t = rp_st_find(f, "i32");
    ck_assert(t && t->dtype == RP_DT_I32 && memcmp(t->data, i32, 12) == 0);
    t = rp_st_find(f, "u8");
    ck_assert(t && t->dtype == RP_DT_U8 && memcmp(t->data, u8, 5) == 0);
    t = rp_st_find(f, "scalar");
    ck_assert(t && t->ndim == 0 && t->numel == 1);
    t = rp_st_find(f, "empty");
    ck_assert(t && t->ndim == 1 && t->numel == 0 && t->nbytes == 0);

    /* integer tensors cannot be read as floats */
    rp_error_clear(&err);
    ck_assert_int_eq(rp_st_read_f32(f, "i32", 1, s3, out, &err), RP_ERR_SHAPE);
    ck_assert_msg(strstr(err.msg, "'i32'") && strstr(err.msg, "I32") && strstr(err.msg, p), "%s", err.msg);
    rp_st_close(f);
}
END_TEST

static void write_two(const char *path, int reversed) {
    const float a[2] = {1, 2}, b[3] = {3, 4, 5};
    int64_t s2[1] = {2}, s3[1] = {3};
    rp_st_writer *w = rp_st_writer_new();
    if (reversed) {
        ck_assert_int_eq(rp_st_writer_meta(w, "z", "1", NULL), RP_OK);
        ck_assert_int_eq(rp_st_writer_meta(w, "y", "2", NULL), RP_OK);
        ck_assert_int_eq(rp_st_writer_add(w, "b", RP_DT_F32, 1, s3, b, NULL), RP_OK);
        ck_assert_int_eq(rp_st_writer_add(w, "a", RP_DT_F32, 1, s2, a, NULL), RP_OK);
    } else {
        ck_assert_int_eq(rp_st_writer_add(w, "a", RP_DT_F32, 1, s2, a, NULL), RP_OK);
        ck_assert_int_eq(rp_st_writer_add(w, "b", RP_DT_F32, 1, s3, b, NULL), RP_OK);
        ck_assert_int_eq(rp_st_writer_meta(w, "y", "2", NULL), RP_OK);
        ck_assert_int_eq(rp_st_writer_meta(w, "z", "1", NULL), RP_OK);
    }
    ck_assert_int_eq(rp_st_writer_write(w, path, NULL), RP_OK);
    rp_st_writer_free(w);
}

static size_t read_all(const char *path, unsigned char *buf, size_t cap) {
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    size_t n = fread(buf, 1, cap, fp);
    fclose(fp);
    return n;
}

START_TEST(test_writer_deterministic) {
    const char *p1 = tmp_path("det1.safetensors"), *p2 = tmp_path("det2.safetensors");
    write_two(p1, 0);
    write_two(p2, 1);
    unsigned char b1[1024], b2[1024];
    size_t n1 = read_all(p1, b1, sizeof b1), n2 = read_all(p2, b2, sizeof b2);
    ck_assert_uint_eq(n1, n2);
    ck_assert(memcmp(b1, b2, n1) == 0);
}
END_TEST

static void fill_iota(void *user, void *dst, size_t nbytes) {
    int *calls = user;
    (*calls)++;
    float *f = dst;
    for (size_t i = 0; i < nbytes / 4; i++) f[i] = (float)i;
}

START_TEST(test_writer_fill_and_errors) {
    const char *p = tmp_path("fill.safetensors");
    int calls = 0;
    int64_t s[2] = {4, 5};
    rp_error err;
    rp_error_clear(&err);
    rp_st_writer *w = rp_st_writer_new();
    ck_assert_int_eq(rp_st_writer_add_fill(w, "x", RP_DT_F32, 2, s, fill_iota, &calls, &err), RP_OK);
    int64_t bad[1] = {-3};
    ck_assert_int_eq(rp_st_writer_add(w, "neg", RP_DT_F32, 1, bad, s, &err), RP_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "'neg'") != NULL, "%s", err.msg);
    ck_assert_int_eq(rp_st_writer_add(w, "__metadata__", RP_DT_F32, 0, NULL, s, &err), RP_ERR_INVALID);
    ck_assert_int_eq(calls, 0); /* nothing generated before write */

    /* a write into a missing directory fails, names the path and leaves nothing */
    const char *bad_path = tmp_path("no/such/dir/x.safetensors");
    ck_assert_int_eq(rp_st_writer_write(w, bad_path, &err), RP_ERR_IO);
    ck_assert_msg(strstr(err.msg, bad_path) != NULL, "%s", err.msg);

    ck_assert_int_eq(rp_st_writer_write(w, p, &err), RP_OK);
    ck_assert_int_eq(calls, 1);
    rp_st_writer_free(w);
    rp_st_file *f = open_ok(p);
    float out[20];
    ck_assert_int_eq(rp_st_read_f32(f, "x", 2, s, out, NULL), RP_OK);
    for (int i = 0; i < 20; i++) ck_assert(out[i] == (float)i);
    rp_st_close(f);
}
END_TEST

/* ---- bad input ------------------------------------------------------------ */

START_TEST(test_truncated) {
    const char *p = tmp_path("trunc.safetensors");
    size_t hlen = PY_FILE[0] | (size_t)PY_FILE[1] << 8;
    size_t full = sizeof PY_FILE;
    /* cut inside the length field, inside the header, inside the data */
    const size_t cuts[] = {0, 3, 7, 8, 8 + hlen / 2, 8 + hlen - 1, 8 + hlen + 5, full - 1};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        write_bytes(p, PY_FILE, cuts[c]);
        if (cuts[c] < 8) {
            const char *subs[] = {"too short", NULL};
            expect_open_fail(p, RP_ERR_FORMAT, subs);
        } else if (cuts[c] < 8 + hlen) {
            const char *subs[] = {"header length", "exceeds", NULL};
            expect_open_fail(p, RP_ERR_FORMAT, subs);
        } else {
            /* the last tensor (by offset) no longer fits: "i" ends at the file's end */
            const char *subs[] = {"tensor '", "exceed the data region", NULL};
            expect_open_fail(p, RP_ERR_FORMAT, subs);
        }
    }
    /* cut inside data: the message names the tensor that sticks out */
    write_bytes(p, PY_FILE, full - 1);
    const char *subs[] = {"tensor 'i'", "[75, 83]", NULL};
    expect_open_fail(p, RP_ERR_FORMAT, subs);
}
END_TEST

START_TEST(test_header_length_too_large) {
    const char *p = tmp_path("hlen.safetensors");
    write_st(p, "{}", NULL, 0, 1000000);
    const char *subs[] = {"header length 1000000", NULL};
    expect_open_fail(p, RP_ERR_FORMAT, subs);
    write_st(p, "{}", NULL, 0, 0xffffffffffffffffull);
    expect_open_fail(p, RP_ERR_FORMAT, subs + 1);
}
END_TEST

START_TEST(test_bad_json) {
    const char *p = tmp_path("json.safetensors");
    const char *cases[][2] = {
        {"{\"a\": {\"dtype\": \"F32\", ", "not valid JSON"},
        {"[1, 2]", "not a JSON object"},
        {"{} xx", "trailing"},
        {"{\"__metadata__\": {\"k\": 3}}", "'k' is not a string"},
        {"{\"__metadata__\": []}", "__metadata__ is not a JSON object"},
        {"{\"w\": 5}", "tensor 'w'"},
        {"{\"w\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", "tensor 'w': missing or non-string dtype"},
        {"{\"w\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", "tensor 'w': missing or non-array shape"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1]}}", "tensor 'w': data_offsets"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]}}", "tensor 'w': data_offsets"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4.5]}}", "tensor 'w': data_offsets"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [\"0\", 4]}}", "tensor 'w': data_offsets"},
    };
    const float data[4] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_st(p, cases[i][0], data, sizeof data, 0);
        const char *subs[] = {cases[i][1], NULL};
        expect_open_fail(p, RP_ERR_FORMAT, subs);
    }
}
END_TEST

START_TEST(test_bad_tensor_entries) {
    const char *p = tmp_path("bad.safetensors");
    const char *cases[][3] = {
        /* header, expected substrings (2) */
        {"{\"blocks.0.attn.qkv.weight\": {\"dtype\": \"F32\", \"shape\": [10, 10], \"data_offsets\": [0, 400]}}",
         "tensor 'blocks.0.attn.qkv.weight'", "exceed the data region (64 bytes)"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]},"
         " \"b\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [8, 24]}}",
         "overlap", "tensor 'a'"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
         " \"b\": {\"dtype\": \"F32\", \"shape\": [16], \"data_offsets\": [0, 64]}}",
         "overlap", "tensor 'a'"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 12]}}",
         "tensor 'w'", "hold 12 bytes but shape [2, 2] of F32 needs 16"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [-1, 4], \"data_offsets\": [0, 16]}}",
         "tensor 'w'", "shape entry 0"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1e30], \"data_offsets\": [0, 16]}}",
         "tensor 'w'", "shape entry 0"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 4294967296], \"data_offsets\": [0, 16]}}",
         "tensor 'w'", "too many elements"},
        {"{\"w\": {\"dtype\": \"F64\", \"shape\": [1099511627776, 1048576], \"data_offsets\": [0, 16]}}",
         "tensor 'w'", "needs"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 16]}}", "tensor 'w'", "shape entry"},
        {"{\"w\": {\"dtype\": \"F8_E4M3\", \"shape\": [4], \"data_offsets\": [0, 4]}}",
         "tensor 'w'", "unknown dtype 'F8_E4M3'"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}",
         "tensor 'w'", "9 dimensions"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 4]}}", "tensor 'w'", "begin > end"},
        {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
         " \"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
         "tensor 'w'", "twice"},
        {"{\"__metadata__\": {}, \"__metadata__\": {}}", "__metadata__", "twice"},
    };
    unsigned char data[64] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_st(p, cases[i][0], data, sizeof data, 0);
        const char *subs[] = {cases[i][1], cases[i][2], NULL};
        expect_open_fail(p, RP_ERR_FORMAT, subs);
    }
    /* empty tensors may share offsets with anything; adjacent tensors are fine */
    write_st(p,
             "{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]},"
             " \"e\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [8, 8]},"
             " \"b\": {\"dtype\": \"U8\", \"shape\": [48], \"data_offsets\": [16, 64]}}",
             data, sizeof data, 0);
    rp_st_close(open_ok(p));
}
END_TEST

START_TEST(test_missing_file) {
    const char *p = tmp_path("does-not-exist.safetensors");
    const char *subs[] = {"cannot open", NULL};
    expect_open_fail(p, RP_ERR_IO, subs);
    /* a directory is not a checkpoint */
    const char *subs2[] = {"not a regular file", NULL};
    expect_open_fail(g_dir, RP_ERR_IO, subs2);
}
END_TEST

START_TEST(test_read_shape_and_missing) {
    const char *p = tmp_path("w.safetensors");
    float data[288 * 96];
    memset(data, 0, sizeof data);
    int64_t s[2] = {288, 96};
    rp_st_writer *w = rp_st_writer_new();
    ck_assert_int_eq(rp_st_writer_add(w, "blocks.0.attn.qkv.weight", RP_DT_F32, 2, s, data, NULL), RP_OK);
    ck_assert_int_eq(rp_st_writer_write(w, p, NULL), RP_OK);
    rp_st_writer_free(w);
    rp_st_file *f = open_ok(p);
    rp_error err;
    rp_error_clear(&err);
    int64_t want[2] = {384, 128};
    static float dst[384 * 128];
    ck_assert_int_eq(rp_st_read_f32(f, "blocks.0.attn.qkv.weight", 2, want, dst, &err), RP_ERR_SHAPE);
    char expect[512];
    snprintf(expect, sizeof expect, "%s: tensor 'blocks.0.attn.qkv.weight' has shape [288, 96], model needs [384, 128]", p);
    ck_assert_str_eq(err.msg, expect);
    int64_t want1[1] = {288 * 96};
    ck_assert_int_eq(rp_st_read_f32(f, "blocks.0.attn.qkv.weight", 1, want1, dst, &err), RP_ERR_SHAPE);
    ck_assert_int_eq(rp_st_read_f32(f, "blocks.3.mlp.fc1.weight", 2, s, dst, &err), RP_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err.msg, p) && strstr(err.msg, "missing tensor 'blocks.3.mlp.fc1.weight'"), "%s",
                  err.msg);
    rp_st_close(f);
}
END_TEST

START_TEST(test_dtype_names) {
    ck_assert_uint_eq(rp_dtype_size(RP_DT_F32), 4);
    ck_assert_uint_eq(rp_dtype_size(RP_DT_BF16), 2);
    ck_assert_uint_eq(rp_dtype_size(RP_DT_F64), 8);
    ck_assert_uint_eq(rp_dtype_size(RP_DT_U8), 1);
    ck_assert_str_eq(rp_dtype_name(RP_DT_I64), "I64");
    ck_assert_str_eq(rp_dtype_name((rp_dtype)99), "?");
    ck_assert_uint_eq(rp_dtype_size((rp_dtype)99), 0);
}
END_TEST

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s/test_safetensors_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir)) { perror("mkdtemp"); return 1; }
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_read_python_file);
    tcase_add_test(tc, test_read_unpadded_header);
    tcase_add_test(tc, test_round_trip_all_dtypes);
    tcase_add_test(tc, test_writer_deterministic);
    tcase_add_test(tc, test_writer_fill_and_errors);
    tcase_add_test(tc, test_truncated);
    tcase_add_test(tc, test_header_length_too_large);
    tcase_add_test(tc, test_bad_json);
    tcase_add_test(tc, test_bad_tensor_entries);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_read_shape_and_missing);
    tcase_add_test(tc, test_dtype_names);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return failed ? 1 : 0;
}
