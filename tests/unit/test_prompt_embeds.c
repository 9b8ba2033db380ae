/* test_prompt_embeds.c — the prompt-embeddings file (engine/pipeline/prompt_embeds.h): a written file
 * reads back bit for bit; every broken shape or pairing is refused naming the file and tensor. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/pipeline/prompt_embeds.h"
#include "engine/safetensors.h"

static char g_path[256];

START_TEST(test_round_trip) {
    enum { R = 3, L = 5, DC = 8, DP = 4 };
    float ctx[R * L * DC], pool[R * DP], nctx[L * DC], npool[DP];
    for (int i = 0; i < R * L * DC; i++) ctx[i] = (float)i * 0.37f - 3.0f;
    for (int i = 0; i < R * DP; i++) pool[i] = 1.0f / (float)(i + 1);
    for (int i = 0; i < L * DC; i++) nctx[i] = -(float)i;
    for (int i = 0; i < DP; i++) npool[i] = (float)i + 0.5f;
    rp_error err;
    ck_assert_msg(rp_prompt_embeds_write(g_path, R, L, DC, DP, ctx, pool, nctx, npool, &err) == RP_OK, "%s", err.msg);
    rp_prompt_embeds e;
    ck_assert_msg(rp_prompt_embeds_read(g_path, DC, DP, &e, &err) == RP_OK, "%s", err.msg);
    ck_assert(e.R == R && e.L == L && e.Dctx == DC && e.Dpool == DP);
    ck_assert(!memcmp(e.context, ctx, sizeof ctx) && !memcmp(e.pooled, pool, sizeof pool));
    ck_assert(!memcmp(e.neg_context, nctx, sizeof nctx) && !memcmp(e.neg_pooled, npool, sizeof npool));
    rp_prompt_embeds_free(&e);
    /* without the negative pair */
    ck_assert(rp_prompt_embeds_write(g_path, R, L, DC, DP, ctx, pool, NULL, NULL, &err) == RP_OK);
    ck_assert(rp_prompt_embeds_read(g_path, DC, DP, &e, &err) == RP_OK);
    ck_assert_ptr_null(e.neg_context);
    ck_assert_ptr_null(e.neg_pooled);
    rp_prompt_embeds_free(&e);
    /* the model's widths are checked */
    ck_assert_int_eq(rp_prompt_embeds_read(g_path, 16, DP, &e, &err), RP_ERR_SHAPE);
    ck_assert_msg(strstr(err.msg, g_path) && strstr(err.msg, "prompt_embeds [3, 5, 8]") && strstr(err.msg, "(R, L, 16)"),
                  "%s", err.msg);
    ck_assert_ptr_null(e.context);
}
END_TEST

/* Writes the given tensors (F32, data zero) to g_path. */
static void write_raw(int n, const char *const *names, const int *ndim, const int64_t (*shapes)[3]) {
    static float zero[4096];
    rp_st_writer *w = rp_st_writer_new();
    rp_error err;
    for (int i = 0; i < n; i++) ck_assert(rp_st_writer_add(w, names[i], RP_DT_F32, ndim[i], shapes[i], zero, &err) == RP_OK);
    ck_assert(rp_st_writer_write(w, g_path, &err) == RP_OK);
    rp_st_writer_free(w);
}

static void expect_error(rp_status want, const char *needle) {
    rp_prompt_embeds e;
    rp_error err;
    rp_error_clear(&err);
    ck_assert_int_eq(rp_prompt_embeds_read(g_path, 8, 4, &e, &err), want);
    ck_assert_msg(strstr(err.msg, g_path) && strstr(err.msg, needle), "%s (want '%s')", err.msg, needle);
    ck_assert_ptr_null(e.context);
}

START_TEST(test_errors) {
    const char *pe = "prompt_embeds", *pp = "pooled_prompt_embeds", *ne = "negative_prompt_embeds",
               *np = "negative_pooled_prompt_embeds";
    write_raw(1, (const char *[]){pe}, (int[]){3}, (const int64_t[][3]){{2, 5, 8}});
    expect_error(RP_ERR_NOT_FOUND, "pooled_prompt_embeds");
    write_raw(2, (const char *[]){pe, pp}, (int[]){2, 2}, (const int64_t[][3]){{5, 8}, {2, 4}});
    expect_error(RP_ERR_SHAPE, "tensor 'prompt_embeds' has rank 2, prompt embeddings need rank 3");
    write_raw(2, (const char *[]){pe, pp}, (int[]){3, 2}, (const int64_t[][3]){{2, 5, 8}, {3, 4}});
    expect_error(RP_ERR_SHAPE, "pooled_prompt_embeds [3, 4]");
    write_raw(3, (const char *[]){pe, pp, ne}, (int[]){3, 2, 3}, (const int64_t[][3]){{2, 5, 8}, {2, 4}, {1, 5, 8}});
    expect_error(RP_ERR_INVALID, "come as a pair");
    write_raw(4, (const char *[]){pe, pp, ne, np}, (int[]){3, 2, 3, 2},
              (const int64_t[][3]){{2, 5, 8}, {2, 4}, {1, 6, 8}, {1, 4}});
    expect_error(RP_ERR_SHAPE, "negative_prompt_embeds [1, 6, 8]");
}
END_TEST

int main(void) {
    snprintf(g_path, sizeof g_path, "%s/test_prompt_embeds_%ld.safetensors", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (long)getpid());
    Suite *s = suite_create("prompt_embeds");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* the tests share g_path in order */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    unlink(g_path);
    return failed ? 1 : 0;
}
