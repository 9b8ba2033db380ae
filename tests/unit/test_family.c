/* test_family.c — the family table (engine/models/family_ops.h): every family has one row
 * that knows its presets and, for the denoisers, facts that agree with the model's own
 * config, and one forward that is the model's forward with the arguments in place. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine/models/dit.h"
#include "engine/models/family_ops.h"
#include "engine/models/flux.h"
#include "engine/models/registry.h"
#include "engine/models/sd3.h"
#include "engine/rng.h"
#include "engine/synthetic.h"

/* Calls fn(word) for each space-separated word of list; returns how many. */
static int each_word(const char *list, void (*fn)(const char *, const rp_family_ops *), const rp_family_ops *o) {
    char buf[512];
    int n = 0;
    ck_assert_uint_lt(strlen(list), sizeof buf);
    strcpy(buf, list);
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save), n++) fn(w, o);
    return n;
}

static void resolves_to(const char *preset, const rp_family_ops *o) {
    const rp_family_ops *got = NULL;
    rp_error err = {0};
    ck_assert_int_eq(rp_model_ops(preset, &got, &err), RP_OK);
    ck_assert_ptr_eq(got, o);
}

START_TEST(one_row_per_family) {
    const rp_family all[] = {RP_FAMILY_DIT, RP_FAMILY_VAE, RP_FAMILY_SD3, RP_FAMILY_FLUX, RP_FAMILY_TEXT_ENCODER};
    ck_assert_int_eq(rp_family_count(), 5);
    int presets = 0;
    for (int i = 0; i < 5; i++) {
        const rp_family_ops *o = rp_family_ops_of(all[i]);
        ck_assert_int_eq(o->family, all[i]);
        ck_assert(o->label && o->presets && o->param_specs);
        presets += each_word(o->presets, resolves_to, o);
        /* a denoiser has every hook; a flow (text-conditional) one its schedule too */
        ck_assert_int_eq(o->denoiser, all[i] == RP_FAMILY_DIT || all[i] == RP_FAMILY_SD3 || all[i] == RP_FAMILY_FLUX);
        if (o->denoiser) ck_assert(o->facts && o->load && o->forward && o->free && o->macs && o->takes_depth);
        else ck_assert(!o->facts && !o->load && !o->forward && !o->takes_depth);
        ck_assert_int_eq(o->denoiser && o->cond == RP_COND_TEXT, o->schedule && o->model_t);
    }
    /* the registry's lists are the table's */
    char buf[512];
    strcpy(buf, rp_model_presets());
    int words = 0;
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) words++;
    ck_assert_int_eq(words, presets);
    ck_assert_str_eq(rp_denoiser_presets(),
                     "dit-tiny dit-digits dit-xl-2-128 dit-xl-2-256 dit-xl-2-512 sd3-tiny sd3-digits sd3-medium "
                     "sd3.5-large sd3.5-medium sd3.5-medium-tiny flux-tiny flux-dev flux-schnell flux-tiny-schnell");
    ck_assert_int_eq(rp_family_ops_of(RP_FAMILY_FLUX)->guidance, RP_GUIDE_EMBEDDED);
    ck_assert_int_eq(rp_family_ops_of(RP_FAMILY_SD3)->guidance, RP_GUIDE_CFG);
    ck_assert_int_eq(rp_family_ops_of(RP_FAMILY_DIT)->cond, RP_COND_CLASS);
}
END_TEST

/* The facts are the model configs' numbers, with the depth options applied as the
 * registry documents them. */
START_TEST(facts_follow_the_configs) {
    rp_error err = {0};
    rp_model_facts f;
    const rp_family_ops *dit = rp_family_ops_of(RP_FAMILY_DIT), *sd3 = rp_family_ops_of(RP_FAMILY_SD3),
                        *flux = rp_family_ops_of(RP_FAMILY_FLUX);
    rp_dit_config dc;
    ck_assert_int_eq(rp_dit_preset("dit-digits", &dc, &err), RP_OK);
    ck_assert_int_eq(dit->facts("dit-digits", 0, 0, &f, &err), RP_OK);
    ck_assert(f.heads == dc.heads && f.blocks == dc.depth && f.patch == dc.patch && f.latent_c == dc.in_channels &&
              f.native == dc.input_size && f.num_classes == dc.num_classes && f.pos_max == 0);
    ck_assert_int_eq(f.out_c, dc.learn_sigma ? 2 * dc.in_channels : dc.in_channels);
    ck_assert_int_eq(dit->facts("dit-tiny", 3, 0, &f, &err), RP_OK);
    ck_assert_int_eq(f.blocks, 3);

    rp_sd3_config sc;
    ck_assert_int_eq(rp_sd3_preset("sd3-tiny", &sc, &err), RP_OK);
    ck_assert_int_eq(sd3->facts("sd3-tiny", 1, 0, &f, &err), RP_OK);
    ck_assert(f.blocks == 1 && f.pos_max == sc.pos_embed_max_size && f.Dctx == sc.joint_attention_dim &&
              f.Dpool == sc.pooled_projection_dim && f.num_classes == 0 && f.n_single == 0);

    /* FLUX: depth alone keeps the preset's single:double ratio (flux-dev 19 + 38 -> 2 + 4) */
    ck_assert_int_eq(flux->facts("flux-dev", 2, 0, &f, &err), RP_OK);
    ck_assert(f.n_double == 2 && f.n_single == 4 && f.blocks == 6 && f.patch == 2 && f.guidance_embeds == 1);
    ck_assert_int_eq(flux->facts("flux-tiny-schnell", 0, 0, &f, &err), RP_OK);
    ck_assert_int_eq(f.guidance_embeds, 0);
    ck_assert_int_eq(flux->facts("flux-tiny", 9, 0, &f, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "exceeds the preset's 2 double blocks"));
    /* the registry refuses what a family does not take, naming the family */
    rp_param_list l = {0};
    ck_assert_int_eq(rp_model_param_specs_depth("sd3-tiny", 0, 1, &l, &err), RP_ERR_INVALID);
    ck_assert_int_eq(rp_model_param_specs_depth("vae-tiny", 1, 0, &l, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "not VAEs"));
    rp_params_free(&l);
}
END_TEST

/* ops->forward on a text-conditional model = the model's own forward on the same inputs,
 * bit for bit: checks that the shared input struct reaches each family's argument order
 * (FLUX takes H, W, L; SD3 L, H, W). A non-square latent and L != h tell them apart. */
static void forward_is_the_models(const char *preset) {
    rp_error err = {0};
    const rp_family_ops *o = NULL;
    ck_assert_int_eq(rp_model_ops(preset, &o, &err), RP_OK);
    rp_param_list l = {0};
    ck_assert_int_eq(rp_model_param_specs_depth(preset, 1, 0, &l, &err), RP_OK);
    rp_st_file *wf = NULL;
    ck_assert_int_eq(rp_st_synthetic(&l, 3, preset, &wf, &err), RP_OK);
    rp_model m = {.ops = o};
    ck_assert_msg(o->load(preset, 1, 0, wf, &m, &err) == RP_OK, "%s", err.msg);
    const int B = 2, h = 4, w = 6, L = 3, C = m.facts.latent_c;
    const size_t nx = (size_t)B * C * h * w;
    float *x = malloc(sizeof(float) * nx), *ctx_states = malloc(sizeof(float) * B * L * m.facts.Dctx);
    float *pooled = malloc(sizeof(float) * B * m.facts.Dpool), *a = malloc(sizeof(float) * nx);
    float *b = malloc(sizeof(float) * nx);
    const float t[2] = {0.75f, 0.25f}, g[2] = {3.5f, 3.5f};
    ck_assert(x && ctx_states && pooled && a && b);
    rp_randn(x, nx, 1, 0, 0);
    rp_randn(ctx_states, (size_t)B * L * m.facts.Dctx, 2, 0, 0);
    rp_randn(pooled, (size_t)B * m.facts.Dpool, 3, 0, 0);
    rp_ctx ctx = rp_ctx_default();
    const rp_model_input in = {.B = B, .h = h, .w = w, .x = x, .t = t, .context = ctx_states, .L = L,
                               .pooled = pooled, .guidance = g};
    ck_assert_int_eq(o->forward(&m, &ctx, a, &in, &err), RP_OK);
    if (o->family == RP_FAMILY_SD3)
        ck_assert_int_eq(rp_sd3_forward(m.impl, &ctx, b, x, t, ctx_states, NULL, pooled, B, L, h, w, &err), RP_OK);
    else
        ck_assert_int_eq(rp_flux_forward(m.impl, &ctx, b, x, t, rp_flux_cfg(m.impl)->guidance_embeds ? g : NULL,
                                         ctx_states, NULL, pooled, B, h, w, L, &err), RP_OK);
    ck_assert_msg(memcmp(a, b, sizeof(float) * nx) == 0, "%s: the table's forward differs", preset);
    o->free(&m);
    ck_assert_ptr_null(m.impl);
    free(x), free(ctx_states), free(pooled), free(a), free(b);
    rp_st_close(wf);
    rp_params_free(&l);
}

START_TEST(forward_reaches_the_model) {
    forward_is_the_models("sd3-tiny");
    forward_is_the_models("flux-tiny");
    forward_is_the_models("flux-tiny-schnell");
}
END_TEST

int main(void) {
    Suite *s = suite_create("family");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, one_row_per_family);
    tcase_add_test(tc, facts_follow_the_configs);
    tcase_add_test(tc, forward_reaches_the_model);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
