/* test_png.c — rp_png_write / rp_png_read: round trips, conversions on read,
 * damaged files, and byte-identical output for identical pixels; plus the
 * float -> 8-bit rule (rp_image_to_rgb8) that produces the pixels. */
#include <math.h>
#include <check.h>
#include <dirent.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/image.h"
#include "engine/vae/vae.h"

/* ---- helpers --------------------------------------------------------------- */

/* A fresh empty directory under $TMPDIR (or /tmp); removed by rm_dir. */
static void make_dir(char *dir, size_t cap) {
    const char *base = getenv("TMPDIR");
    snprintf(dir, cap, "%s/test_png.XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Removes dir and the plain files in it; returns how many files there were. */
static int rm_dir(const char *dir) {
    int n = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
        n++;
    }
    closedir(d);
    rmdir(dir);
    return n;
}

/* rgb (H, W, 3) of deterministic pseudo-random bytes. */
static uint8_t *noise(int W, int H, uint32_t seed) {
    uint8_t *p = malloc((size_t)W * H * 3);
    ck_assert_ptr_nonnull(p);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < (size_t)W * H * 3; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (uint8_t)(x >> 24);
    }
    return p;
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(sz > 0 ? (size_t)sz : 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    *n = (size_t)sz;
    return b;
}

static void spit(const char *path, const uint8_t *b, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* Writes a PNG of any colour type with libpng directly (not through the code
 * under test). px (H, W, channels) bytes, or 16-bit big-endian pairs at depth 16. */
static void write_raw_png(const char *path, const uint8_t *px, int W, int H, int color_type, int depth,
                          int channels) {
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    ck_assert(png && info);
    ck_assert_int_eq(setjmp(png_jmpbuf(png)), 0);
    png_init_io(png, fp);
    png_set_IHDR(png, info, W, H, depth, color_type, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    size_t row = (size_t)W * channels * (depth / 8);
    for (int y = 0; y < H; y++) png_write_row(png, px + (size_t)y * row);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(fp);
}

/* The read must fail, with a message naming the file. */
static void expect_read_error(const char *path, rp_status want) {
    uint8_t *rgb = (uint8_t *)0x1;
    int W = -1, H = -1;
    rp_error err = {0};
    rp_status s = rp_png_read(path, &rgb, &W, &H, &err);
    ck_assert_int_ne(s, RP_OK);
    if (want != RP_OK) ck_assert_int_eq(s, want);
    ck_assert_int_eq(err.code, s);
    ck_assert_msg(strstr(err.msg, path) != NULL, "error '%s' does not name '%s'", err.msg, path);
    ck_assert_ptr_eq(rgb, (uint8_t *)0x1); /* outputs untouched on failure */
}

/* ---- tests ------------------------------------------------------------------ */

START_TEST(test_round_trip_sizes) {
    static const int sizes[][2] = {{1, 1}, {7, 5}, {3, 64}, {64, 3}, {257, 31}, {128, 128}};
    char dir[256], path[512];
    make_dir(dir, sizeof dir);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        int W = sizes[i][0], H = sizes[i][1];
        uint8_t *px = noise(W, H, (uint32_t)i);
        snprintf(path, sizeof path, "%s/img-%zu.png", dir, i);
        rp_error err = {0};
        ck_assert_msg(rp_png_write(path, px, W, H, &err) == RP_OK, "%s", err.msg);
        uint8_t *back = NULL;
        int W2 = 0, H2 = 0;
        ck_assert_msg(rp_png_read(path, &back, &W2, &H2, &err) == RP_OK, "%s", err.msg);
        ck_assert_int_eq(W2, W);
        ck_assert_int_eq(H2, H);
        ck_assert_mem_eq(back, px, (size_t)W * H * 3);
        free(back);
        free(px);
    }
    /* atomic write leaves only the finished files, no tmp */
    ck_assert_int_eq(rm_dir(dir), (int)(sizeof sizes / sizeof *sizes));
}
END_TEST

START_TEST(test_identical_pixels_identical_bytes) {
    char dir[256], a[512], b[512];
    make_dir(dir, sizeof dir);
    snprintf(a, sizeof a, "%s/a.png", dir);
    snprintf(b, sizeof b, "%s/b.png", dir);
    uint8_t *px = noise(33, 17, 7);
    rp_error err = {0};
    ck_assert_int_eq(rp_png_write(a, px, 33, 17, &err), RP_OK);
    sleep(1); /* a time stamp, if one were written, would now differ */
    ck_assert_int_eq(rp_png_write(b, px, 33, 17, &err), RP_OK);
    size_t na, nb;
    uint8_t *ba = slurp(a, &na), *bb = slurp(b, &nb);
    ck_assert_uint_eq(na, nb);
    ck_assert_mem_eq(ba, bb, na);
    ck_assert_ptr_null(memmem(ba, na, "tIME", 4));
    /* overwriting an existing file works (rename over it) and stays identical */
    ck_assert_int_eq(rp_png_write(a, px, 33, 17, &err), RP_OK);
    free(ba);
    ba = slurp(a, &na);
    ck_assert_uint_eq(na, nb);
    ck_assert_mem_eq(ba, bb, na);
    free(ba);
    free(bb);
    free(px);
    rm_dir(dir);
}
END_TEST

START_TEST(test_read_converts_to_rgb) {
    char dir[256], path[512];
    make_dir(dir, sizeof dir);
    const int W = 5, H = 3;
    uint8_t *src = noise(W, H * 2, 3);   /* >= (H, W, 4) bytes, also (H, W, 6) for 16-bit RGB */
    rp_error err = {0};
    uint8_t *rgb;
    int W2, H2;

    /* RGBA: alpha dropped, colour kept */
    snprintf(path, sizeof path, "%s/rgba.png", dir);
    write_raw_png(path, src, W, H, PNG_COLOR_TYPE_RGB_ALPHA, 8, 4);
    ck_assert_msg(rp_png_read(path, &rgb, &W2, &H2, &err) == RP_OK, "%s", err.msg);
    ck_assert(W2 == W && H2 == H);
    for (int p = 0; p < W * H; p++)
        for (int c = 0; c < 3; c++) ck_assert_uint_eq(rgb[p * 3 + c], src[p * 4 + c]);
    free(rgb);

    /* gray: replicated to R = G = B */
    snprintf(path, sizeof path, "%s/gray.png", dir);
    write_raw_png(path, src, W, H, PNG_COLOR_TYPE_GRAY, 8, 1);
    ck_assert_msg(rp_png_read(path, &rgb, &W2, &H2, &err) == RP_OK, "%s", err.msg);
    ck_assert(W2 == W && H2 == H);
    for (int p = 0; p < W * H; p++)
        for (int c = 0; c < 3; c++) ck_assert_uint_eq(rgb[p * 3 + c], src[p]);
    free(rgb);

    /* gray + alpha */
    snprintf(path, sizeof path, "%s/graya.png", dir);
    write_raw_png(path, src, W, H, PNG_COLOR_TYPE_GRAY_ALPHA, 8, 2);
    ck_assert_msg(rp_png_read(path, &rgb, &W2, &H2, &err) == RP_OK, "%s", err.msg);
    for (int p = 0; p < W * H; p++)
        for (int c = 0; c < 3; c++) ck_assert_uint_eq(rgb[p * 3 + c], src[p * 2]);
    free(rgb);

    /* 16-bit RGB: the high byte (big-endian first) is kept */
    snprintf(path, sizeof path, "%s/rgb16.png", dir);
    write_raw_png(path, src, W, H, PNG_COLOR_TYPE_RGB, 16, 3);
    ck_assert_msg(rp_png_read(path, &rgb, &W2, &H2, &err) == RP_OK, "%s", err.msg);
    for (int p = 0; p < W * H; p++)
        for (int c = 0; c < 3; c++) ck_assert_uint_eq(rgb[p * 3 + c], src[(p * 3 + c) * 2]);
    free(rgb);

    free(src);
    rm_dir(dir);
}
END_TEST

START_TEST(test_damaged_files_fail_cleanly) {
    char dir[256], good[512], bad[512];
    make_dir(dir, sizeof dir);
    snprintf(good, sizeof good, "%s/good.png", dir);
    snprintf(bad, sizeof bad, "%s/bad.png", dir);
    uint8_t *px = noise(40, 30, 11);
    rp_error err = {0};
    ck_assert_int_eq(rp_png_write(good, px, 40, 30, &err), RP_OK);
    size_t n;
    uint8_t *b = slurp(good, &n);

    /* truncated at several points: inside the signature, the header, IDAT, IEND */
    const size_t cuts[] = {0, 4, 8, 20, 40, n / 2, n - 13, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        spit(bad, b, cuts[i]);
        expect_read_error(bad, RP_OK);
    }
    /* a flipped byte inside the image data: CRC mismatch */
    uint8_t *c = malloc(n);
    memcpy(c, b, n);
    c[n / 2] ^= 0x5a;
    spit(bad, c, n);
    expect_read_error(bad, RP_ERR_FORMAT);
    /* not a PNG at all */
    spit(bad, (const uint8_t *)"this is not a png file, just text\n", 34);
    expect_read_error(bad, RP_ERR_FORMAT);
    /* missing file */
    char missing[512];
    snprintf(missing, sizeof missing, "%s/missing.png", dir);
    expect_read_error(missing, RP_ERR_IO);

    /* writing into a directory that does not exist: error names the file */
    char nodir[512];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/out.png", dir);
    rp_error werr = {0};
    ck_assert_int_eq(rp_png_write(nodir, px, 40, 30, &werr), RP_ERR_IO);
    ck_assert_ptr_nonnull(strstr(werr.msg, nodir));
    ck_assert_int_ne(rp_png_write(good, px, 0, 30, &werr), RP_OK);

    free(c);
    free(b);
    free(px);
    rm_dir(dir);
}
END_TEST

START_TEST(test_rgb8_rule_and_layout) {
    /* img (B=2, 3, H=1, W=4) -> rgb (2, 1, 4, 3): channel-planar to interleaved */
    const float v[8] = {-1.0f, 1.0f, 0.0f, -5.0f, 7.0f, NAN, INFINITY, -INFINITY};
    const uint8_t want[8] = {0, 255, 128 /* 127.5 rounds away from zero */, 0, 255, 0, 255, 0};
    float img[2 * 3 * 4];
    for (int b = 0; b < 2; b++)
        for (int c = 0; c < 3; c++)
            for (int x = 0; x < 4; x++) img[(b * 3 + c) * 4 + x] = v[(b * 4 + x + c) % 8];
    uint8_t rgb[2 * 4 * 3];
    rp_image_to_rgb8(rgb, img, 2, 1, 4);
    for (int b = 0; b < 2; b++)
        for (int x = 0; x < 4; x++)
            for (int c = 0; c < 3; c++) ck_assert_uint_eq(rgb[(b * 4 + x) * 3 + c], want[(b * 4 + x + c) % 8]);
    /* every level is reachable and round-trips from its exact centre */
    for (int k = 0; k < 256; k++) {
        float x = (float)k / 255.0f * 2.0f - 1.0f, one[3] = {x, x, x};
        uint8_t o[3];
        rp_image_to_rgb8(o, one, 1, 1, 1);
        ck_assert_uint_eq(o[0], (unsigned)k);
    }
    /* the truncating cast (the vae-decode-rank fault): 127.5 -> 127, the ends stay, and a
     * value a quarter level below a centre goes one level down */
    const float tv[3] = {0.0f, -1.0f, 1.0f};
    uint8_t to[3];
    rp_image_to_rgb8_cast(to, tv, 1, 1, 1, 1);
    ck_assert_uint_eq(to[0], 127);
    ck_assert_uint_eq(to[1], 0);
    ck_assert_uint_eq(to[2], 255);
    const float below[3] = {(200.0f - 0.25f) / 255.0f * 2.0f - 1.0f, 0.0f, 0.0f};
    rp_image_to_rgb8_cast(to, below, 1, 1, 1, 1);
    ck_assert_uint_eq(to[0], 199);
    rp_image_to_rgb8_cast(to, below, 1, 1, 1, 0);
    ck_assert_uint_eq(to[0], 200);
}
END_TEST

static Suite *png_suite(void) {
    Suite *s = suite_create("png");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_round_trip_sizes);
    tcase_add_test(tc, test_identical_pixels_identical_bytes);
    tcase_add_test(tc, test_read_converts_to_rgb);
    tcase_add_test(tc, test_damaged_files_fail_cleanly);
    tcase_add_test(tc, test_rgb8_rule_and_layout);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(png_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
