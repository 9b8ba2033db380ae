/* test_sampler_own.c — the sampler's own check (engine/pipeline/sampler_own.c) gives the
 * bits of rp_sampler_step and rp_flow_euler_step for every sampler, every step of a
 * schedule, with and without noise, learned variance and multistep history; and it tells
 * one ulp of one output value. Inputs are odd-valued floats from a fixed stream, the model a
 * stub whose output depends on its input (so each step's input matters). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pipeline/sampler_own.h"
#include "engine/samplers/flow.h"
#include "engine/samplers/samplers.h"

enum { N = 257 };

static uint64_t lcg = 12345;
static float draw(void) { /* in (-2, 2), most bits set */
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(lcg >> 11) / 9007199254740992.0 * 4.0 - 2.0);
}

/* the model: eps = tanh(x) / 2 + a drawn offset per index; var in (-1, 1) */
typedef struct stub {
    float off[N], voff[N];
} stub;

static rp_status stub_eval(void *self, const float *x, int i, double t, float *eps, float *var, rp_error *err) {
    const stub *s = self;
    (void)i, (void)t, (void)err;
    for (int j = 0; j < N; j++) {
        eps[j] = tanhf(x[j]) * 0.5f + s->off[j];
        if (var) var[j] = tanhf(x[j] + s->voff[j]);
    }
    return RP_OK;
}

/* self: an int counting the calls (the steps that drew noise) */
static rp_status noise_fill(void *self, int k, float *out, rp_error *err) {
    (void)err;
    ++*(int *)self;
    for (int j = 0; j < N; j++) out[j] = sinf((float)(k * N + j)) * 1.5f;
    return RP_OK;
}

/* Every step of cfg over a 7-step DiT schedule, each from a drawn latent: the step's output
 * against the own recomputation, bitwise; one ulp moved in one output value differs; the own
 * code says it read the noise exactly at the steps where the sampler drew it (the steps whose
 * noise the own check holds, sampler_own.h). */
static void check_sampler(rp_sampler_kind kind, double eta, int has_var) {
    rp_schedule s;
    rp_error err;
    ck_assert_int_eq(rp_schedule_dit(&s, 7, &err), RP_OK);
    stub m;
    for (int j = 0; j < N; j++) m.off[j] = draw() * 0.25f, m.voff[j] = draw();
    const rp_denoiser d = {&m, has_var, stub_eval, NULL};
    int draws = 0;
    const rp_noise_src ns = {&draws, noise_fill};
    const rp_sampler_cfg cfg = {kind, eta};
    rp_sampler_state ss;
    ck_assert_int_eq(rp_sampler_state_init(&ss, &cfg, &d, N, &err), RP_OK);
    float x[N], in[N], y[N];
    for (int k = 0; k < s.steps; k++) {
        for (int j = 0; j < N; j++) in[j] = draw();
        memcpy(x, in, sizeof x);
        rp_sampler_state_restart(&ss, &cfg, &s, k, x);
        const int had = ss.have_last;
        const double abar_last = ss.abar_last;
        const int before = draws;
        ck_assert_int_eq(rp_sampler_step(&cfg, &s, &d, &ns, k, x, &ss, &err), RP_OK);
        const rp_sampler_own_step st = {.cfg = &cfg, .s = &s, .k = k, .n = N, .x = in, .eps = ss.eps,
                                        .var = ss.var, .z = ss.z, .x0_last = had ? ss.x0 : NULL,
                                        .abar_last = abar_last};
        ck_assert_msg(rp_sampler_own_dit(&st, y) == (draws > before), "%s eta %g: step %d drew %d, own says %d",
                      rp_sampler_name(kind), eta, k, draws - before, !(draws > before));
        ck_assert_msg(memcmp(x, y, sizeof x) == 0, "%s eta %g var %d: step %d differs", rp_sampler_name(kind), eta,
                      has_var, k);
        x[N / 2] = nextafterf(x[N / 2], INFINITY);
        ck_assert(memcmp(x, y, sizeof x) != 0);
    }
    ck_assert_int_eq(draws > 0, rp_sampler_is_stochastic(&cfg)); /* the property above is not vacuous */
    rp_sampler_state_free(&ss);
    rp_schedule_free(&s);
}

START_TEST(test_ddim) {
    check_sampler(RP_SAMPLER_DDIM, 0.0, 0);
    check_sampler(RP_SAMPLER_DDIM, 1.0, 0);
}
END_TEST

START_TEST(test_ddpm) {
    check_sampler(RP_SAMPLER_DDPM, 0.0, 0);
    check_sampler(RP_SAMPLER_DDPM, 0.0, 1);
}
END_TEST

START_TEST(test_dpmpp) { check_sampler(RP_SAMPLER_DPMPP_2M, 0.0, 0); }
END_TEST

START_TEST(test_euler_a) {
    check_sampler(RP_SAMPLER_EULER_A, 0.0, 0);
    check_sampler(RP_SAMPLER_EULER_A, 1.0, 0);
}
END_TEST

START_TEST(test_flow) {
    rp_flow_schedule s;
    rp_error err;
    ck_assert_int_eq(rp_flow_schedule_sd3(&s, 9, 3.0, &err), RP_OK);
    float x[N], v[N], out[N], y[N];
    for (int i = 0; i < s.steps; i++) {
        for (int j = 0; j < N; j++) x[j] = draw(), v[j] = draw();
        rp_flow_euler_step(out, x, v, s.sigmas[i], s.sigmas[i + 1], N);
        rp_sampler_own_flow(&s, i, x, v, N, y);
        ck_assert_msg(memcmp(out, y, sizeof out) == 0, "flow step %d differs", i);
        out[3] = nextafterf(out[3], 0.0f);
        ck_assert(memcmp(out, y, sizeof out) != 0);
    }
    rp_flow_schedule_free(&s);
}
END_TEST

int main(void) {
    Suite *su = suite_create("sampler_own");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_ddim);
    tcase_add_test(tc, test_ddpm);
    tcase_add_test(tc, test_dpmpp);
    tcase_add_test(tc, test_euler_a);
    tcase_add_test(tc, test_flow);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
