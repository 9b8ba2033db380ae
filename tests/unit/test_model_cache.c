/* test_model_cache.c — engine/pipeline/model_cache.h:
 *   - for every denoiser family, two generations with a cache in ctx.models load the
 *     weights once (the second takes the kept model) and both are bitwise a generation
 *     without the cache: noise, trajectory, latents and 8-bit images;
 *   - the cache keys the model by what its parameters depend on: the same preset and depth
 *     is the same model (the same block), another depth or sharpening loads again and
 *     replaces it; a model released without the cache (a failed call's) is not kept. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/models/family_ops.h"
#include "engine/pipeline/model_cache.h"
#include "engine/pipeline/pipeline.h"
#include "engine/pipeline/weights_cache.h"
#include "tests/common/small_gen.h"

static void same_bits(const rp_gen_result *a, const rp_gen_result *b, const char *model) {
    const size_t n = (size_t)a->B * a->C * a->h * a->w;
    ck_assert_int_eq(a->B, b->B);
    ck_assert_int_eq(a->steps, b->steps);
    ck_assert_msg(!memcmp(a->noise, b->noise, sizeof(float) * n), "%s: noise", model);
    ck_assert_msg(!memcmp(a->trajectory, b->trajectory, sizeof(float) * n * (size_t)(a->steps + 1)), "%s: trajectory",
                  model);
    ck_assert_msg(!memcmp(a->latents, b->latents, sizeof(float) * n), "%s: latents", model);
    ck_assert_ptr_nonnull(a->rgb);
    ck_assert_ptr_nonnull(b->rgb);
    ck_assert_int_eq(a->W, b->W);
    ck_assert_int_eq(a->H, b->H);
    ck_assert_msg(!memcmp(a->rgb, b->rgb, (size_t)a->B * a->W * a->H * 3), "%s: images", model);
}

START_TEST(reuse_is_bitwise_a_fresh_load) {
    static const char *models[] = {"dit-tiny", "sd3-tiny", "flux-tiny"};
    const char *model = models[_i];
    rp_error err;
    rp_gen_result plain, first, second;
    rp_ctx ctx = rp_ctx_default();
    ck_assert_msg(small_generation_ctx(model, 4.0, &ctx, &plain, &err) == RP_OK, "%s: %s", model, err.msg);
    rp_model_cache cache;
    rp_model_cache_init(&cache);
    ctx.models = &cache;
    ck_assert_msg(small_generation_ctx(model, 4.0, &ctx, &first, &err) == RP_OK, "%s: %s", model, err.msg);
    ck_assert_int_eq(cache.loads, 1);
    ck_assert_int_eq(cache.hits, 0);
    ck_assert(cache.have); /* kept after the call */
    ck_assert_msg(small_generation_ctx(model, 4.0, &ctx, &second, &err) == RP_OK, "%s: %s", model, err.msg);
    ck_assert_int_eq(cache.loads, 1);
    ck_assert_int_eq(cache.hits, 1);
    same_bits(&plain, &first, model);
    same_bits(&plain, &second, model);
    rp_model_cache_free(&cache);
    ck_assert(!cache.have);
    rp_gen_result_free(&plain);
    rp_gen_result_free(&first);
    rp_gen_result_free(&second);
}
END_TEST

START_TEST(keyed_by_what_the_parameters_depend_on) {
    const rp_family_ops *ops;
    rp_error err;
    char path1[4096], path2[4096];
    ck_assert_int_eq(rp_model_ops("dit-tiny", &ops, &err), RP_OK);
    ck_assert_int_eq(rp_weights_resolve("dit-tiny", 0, 1, NULL, path1, sizeof path1, &err), RP_OK);
    ck_assert_int_eq(rp_weights_resolve("dit-tiny", 1, 1, NULL, path2, sizeof path2, &err), RP_OK);
    rp_model_cache cache;
    rp_model_cache_init(&cache);
    rp_model m;
    ck_assert_int_eq(rp_model_acquire(&cache, ops, "dit-tiny", 0, 0, path1, 0, &m, &err), RP_OK);
    void *impl = m.impl;
    rp_model_release(&cache, &m);
    ck_assert(cache.have && m.impl == NULL);
    /* the same model: the kept block, lent (not in the cache while in use) */
    ck_assert_int_eq(rp_model_acquire(&cache, ops, "dit-tiny", 0, 0, path1, 0, &m, &err), RP_OK);
    ck_assert_ptr_eq(m.impl, impl);
    ck_assert(!cache.have);
    rp_model_release(&cache, &m);
    /* sharpened weights are other parameters */
    ck_assert_int_eq(rp_model_acquire(&cache, ops, "dit-tiny", 0, 0, path1, 16, &m, &err), RP_OK);
    ck_assert_int_eq(cache.loads, 2);
    rp_model_release(&cache, &m);
    /* another depth (another file): loaded, replacing the kept one */
    ck_assert_int_eq(rp_model_acquire(&cache, ops, "dit-tiny", 1, 0, path2, 0, &m, &err), RP_OK);
    ck_assert_int_eq(cache.loads, 3);
    ck_assert_int_eq(cache.hits, 1);
    /* released without the cache (a failed call's): freed, nothing kept */
    rp_model_release(NULL, &m);
    ck_assert(!cache.have);
    ck_assert_int_eq(rp_model_acquire(&cache, ops, "dit-tiny", 1, 0, path2, 0, &m, &err), RP_OK);
    ck_assert_int_eq(cache.loads, 4);
    rp_model_release(&cache, &m);
    /* a weights file made for another preset is refused by name */
    ck_assert_int_ne(rp_model_acquire(&cache, ops, "dit-digits", 0, 0, path1, 0, &m, &err), RP_OK);
    ck_assert_msg(strstr(err.msg, "weights are for model 'dit-tiny'"), "%s", err.msg);
    rp_model_cache_free(&cache);
}
END_TEST

int main(void) {
    Suite *s = suite_create("model_cache");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, reuse_is_bitwise_a_fresh_load, 0, 3);
    tcase_add_test(tc, keyed_by_what_the_parameters_depend_on);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
