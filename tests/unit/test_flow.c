/* test_flow.c — flow-matching schedules (SD3 static shift, FLUX dynamic shift), the
 * Euler step and CFG (engine/samplers/flow.h) against closed forms.
 *
 * Tolerances are first-order bounds of the float32 roundings each computation
 * does (unit roundoff u = 2^-24 per float32 operation; float64 operations add
 * ~1e-16 relative and are neglected), times a safety factor of 2. The derivation
 * is next to each check.
 *
 * `test_flow --dump sd3 N SHIFT` | `--dump flux N SEQ_LEN` | `--dump dyn N MU` prints the
 * schedule ("i sigma timestep" per line, C99 hex floats, then "final sigma") for
 * tests/reference/test_flow_schedule.py, which checks it against numpy. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"
#include "engine/samplers/flow.h"

#define U_F (1.0 / 16777216.0) /* float32 unit roundoff 2^-24 */
#define NX 512

static const int NS[] = {1, 2, 3, 4, 10, 28, 50, 1000};
#define N_NS ((int)(sizeof NS / sizeof *NS))

/* Shared schedule invariants: N + 1 sigmas, strictly decreasing, last exactly 0,
 * every sigma a float32 value, timesteps = float32(sigma * 1000) exactly. */
static void check_invariants(const rp_flow_schedule *s, int N) {
    ck_assert_int_eq(s->steps, N);
    ck_assert(s->sigmas[N] == 0.0);
    for (int i = 0; i < N; i++) {
        ck_assert_msg(s->sigmas[i] > s->sigmas[i + 1], "N %d: sigma %d not > sigma %d", N, i, i + 1);
        ck_assert(s->sigmas[i] <= 1.0);
        ck_assert((double)(float)s->sigmas[i] == s->sigmas[i]);
        ck_assert(s->timesteps[i] == (double)((float)s->sigmas[i] * 1000.0f));
    }
}

/* ---- SD3 --------------------------------------------------------------------------- */

/* Closed form: f(s) = 3s / (1 + 2s); t_i = linspace(1, f(1/1000), N); sigma_i = f(t_i).
 * Error of the C value (diffusers' arithmetic) against this float64 formula:
 *   sigma_min is computed in float32: 1/1000, 3s, 1 + 2s, the quotient: 4 roundings
 *   (2s is exact), and f's relative condition number t f'/f = 1/(1 + 2t) <= 1, so
 *   <= 4u relative; linspace carries that error into t_i as an absolute error
 *   <= 4u t_min <= 4u t_i, i.e. <= 4u relative, and f passes it on with condition
 *   <= 1; the final float32 rounding adds u. Bound 5u relative, x2: 10u. */
START_TEST(test_sd3_closed_form) {
    const double shift = RP_FLOW_SD3_SHIFT;
    const double tmin = rp_flow_shift_static(shift, 1.0 / 1000.0);
    ck_assert(fabs(tmin - 0.003 / 1.002) < 1e-15);
    for (int c = 0; c < N_NS; c++) {
        const int N = NS[c];
        rp_flow_schedule s;
        rp_error err;
        ck_assert_int_eq(rp_flow_schedule_sd3(&s, N, shift, &err), RP_OK);
        check_invariants(&s, N);
        ck_assert(s.sigmas[0] == 1.0); /* f(1) = 1 exactly, in float32 too */
        ck_assert(s.dynamic == 0 && s.shift == shift);
        for (int i = 0; i < N; i++) {
            const double t = N == 1 ? 1.0 : 1.0 + (tmin - 1.0) * i / (N - 1);
            const double want = rp_flow_shift_static(shift, t);
            ck_assert_msg(fabs(s.sigmas[i] - want) <= 10 * U_F * want, "N %d i %d: %.9g vs %.9g", N, i,
                          s.sigmas[i], want);
        }
        /* the smallest nonzero sigma is f(f(1/1000)) ~ 0.00893: SD3's double shift */
        if (N >= 2) ck_assert(fabs(s.sigmas[N - 1] - rp_flow_shift_static(shift, tmin)) <= 10 * U_F * 0.009);
        rp_flow_schedule_free(&s);
    }
}
END_TEST

/* shift 1 is the unshifted schedule linspace(1, 1/1000, N) (same 5u x 2 bound). */
START_TEST(test_sd3_shift_one) {
    rp_flow_schedule s;
    ck_assert_int_eq(rp_flow_schedule_sd3(&s, 10, 1.0, NULL), RP_OK);
    check_invariants(&s, 10);
    for (int i = 0; i < 10; i++) {
        const double want = 1.0 + (0.001 - 1.0) * i / 9.0;
        ck_assert(fabs(s.sigmas[i] - want) <= 10 * U_F * want);
    }
    rp_flow_schedule_free(&s);
}
END_TEST

/* ---- FLUX -------------------------------------------------------------------------- */

/* FLUX.1-schnell: the pipeline's linspace(1, 1/N, N) unshifted. For N = 4 every value is a
 * dyadic rational, exact in float32: sigmas 1, 3/4, 1/2, 1/4, 0 and timesteps x1000. For
 * N = 7 each sigma is linspace's float64 value rounded once to float32. */
START_TEST(test_schnell_linear) {
    rp_flow_schedule s;
    ck_assert_int_eq(rp_flow_schedule_linear(&s, 4, NULL), RP_OK);
    check_invariants(&s, 4);
    const double want[5] = {1.0, 0.75, 0.5, 0.25, 0.0};
    for (int i = 0; i <= 4; i++) ck_assert(s.sigmas[i] == want[i]);
    for (int i = 0; i < 4; i++) ck_assert(s.timesteps[i] == 1000.0 * want[i]);
    ck_assert(s.shift == 1.0 && s.mu == 0.0 && !s.dynamic);
    rp_flow_schedule_free(&s);
    ck_assert_int_eq(rp_flow_schedule_linear(&s, 7, NULL), RP_OK);
    check_invariants(&s, 7);
    const double step = (1.0 / 7.0 - 1.0) / 6.0;
    for (int i = 0; i < 6; i++) ck_assert(s.sigmas[i] == (double)(float)(i * step + 1.0));
    ck_assert(s.sigmas[6] == (double)(float)(1.0 / 7.0));
    rp_flow_schedule_free(&s);
    ck_assert_int_eq(rp_flow_schedule_linear(&s, 0, NULL), RP_ERR_INVALID);
}
END_TEST

START_TEST(test_flux_mu) {
    /* calculate_shift is the line through (256, 0.5) and (4096, 1.15) */
    ck_assert(fabs(rp_flow_flux_mu(256) - 0.5) < 1e-15);
    ck_assert(fabs(rp_flow_flux_mu(4096) - 1.15) < 1e-15);
    ck_assert(fabs(rp_flow_flux_mu(1024) - (0.5 + 0.65 * 768.0 / 3840.0)) < 1e-15);
    /* 1024 x 1024 px -> latent 128 x 128 -> 64 x 64 packed patches */
    ck_assert_int_eq(rp_flow_flux_seq_len(128, 128), 4096);
    ck_assert_int_eq(rp_flow_flux_seq_len(16, 8), 32);
}
END_TEST

/* Closed form: t_i = 1 - i/N (linspace(1, 1/N, N)), sigma_i = e / (e + 1/t_i - 1), e = exp(mu).
 * Float32 roundings of the C value, for mu >= 0 (e >= 1):
 *   t_i to float32: u, passed on with condition (1/t) / (e + 1/t - 1) <= 1;
 *   e to float32: u, condition (1/t - 1) / (e + 1/t - 1) <= 1;
 *   1/t: absolute error u/t, and 1/t - 1 is then exact (Sterbenz) or adds u |d|;
 *     sigma moves by sigma (u/t + u d) / (e + d) <= 2u sigma (as 1/t = d + 1 <= d + e);
 *   e + d: u; the quotient: u.
 * Bound 6u relative, x2: 12u. */
START_TEST(test_flux_closed_form) {
    const int64_t seqs[] = {1, 256, 1024, 4096, 6400};
    for (size_t q = 0; q < sizeof seqs / sizeof *seqs; q++) {
        const double mu = rp_flow_flux_mu(seqs[q]);
        ck_assert(mu >= 0.0);
        for (int c = 0; c < N_NS; c++) {
            const int N = NS[c];
            rp_flow_schedule s;
            rp_error err;
            ck_assert_int_eq(rp_flow_schedule_flux(&s, N, seqs[q], &err), RP_OK);
            check_invariants(&s, N);
            ck_assert(s.dynamic == 1 && s.mu == mu);
            ck_assert(s.sigmas[0] == 1.0); /* t = 1: 1/t - 1 = 0 exactly, e / e = 1 */
            for (int i = 0; i < N; i++) {
                const double t = 1.0 - (double)i / N;
                const double want = exp(mu) / (exp(mu) + (1.0 / t - 1.0));
                ck_assert(fabs(want - rp_flow_time_shift(mu, t)) <= 1e-15);
                ck_assert_msg(fabs(s.sigmas[i] - want) <= 12 * U_F * want, "seq %lld N %d i %d: %.9g vs %.9g",
                              (long long)seqs[q], N, i, s.sigmas[i], want);
                /* shifting towards noise: sigma_i >= t_i when mu >= 0 (up to the rounding) */
                ck_assert(s.sigmas[i] >= t * (1 - 12 * U_F));
            }
            rp_flow_schedule_free(&s);
        }
    }
}
END_TEST

/* mu = 0 makes time_shift the identity: sigmas = linspace(1, 1/N, N) to float32 rounding. */
START_TEST(test_dynamic_mu_zero) {
    rp_flow_schedule s;
    ck_assert_int_eq(rp_flow_schedule_dynamic(&s, 8, 0.0, NULL), RP_OK);
    check_invariants(&s, 8);
    for (int i = 0; i < 8; i++) {
        const double t = 1.0 - i / 8.0; /* exact in float32 */
        ck_assert(fabs(s.sigmas[i] - t) <= 12 * U_F * t);
    }
    rp_flow_schedule_free(&s);
}
END_TEST

START_TEST(test_model_timesteps) {
    rp_flow_schedule s;
    ck_assert_int_eq(rp_flow_schedule_flux(&s, 28, 4096, NULL), RP_OK);
    for (int i = 0; i < s.steps; i++) {
        const float t = (float)s.timesteps[i];
        ck_assert(rp_flow_sd3_model_t(&s, i) == t);
        const float tf = rp_flow_flux_model_t(&s, i);
        ck_assert(tf == t / 1000.0f);
        ck_assert(tf >= 0.0f && tf <= 1.0f);
        /* FLUX's transformer multiplies by 1000 again: within 2 float32 roundings of t */
        ck_assert(fabs((double)(tf * 1000.0f) - t) <= 2 * U_F * 2 * t);
        /* and the timestep is sigma * 1000 to one rounding */
        ck_assert(fabs(s.timesteps[i] - 1000.0 * s.sigmas[i]) <= U_F * 2 * 1000.0 * s.sigmas[i]);
    }
    ck_assert(s.timesteps[0] == 1000.0);
    rp_flow_schedule_free(&s);
}
END_TEST

START_TEST(test_schedule_errors) {
    rp_flow_schedule s;
    rp_error err;
    ck_assert_int_eq(rp_flow_schedule_sd3(&s, 0, 3.0, &err), RP_ERR_INVALID);
    ck_assert(s.sigmas == NULL && s.timesteps == NULL);
    ck_assert_int_eq(rp_flow_schedule_sd3(&s, 10, 0.0, &err), RP_ERR_INVALID);
    ck_assert_int_eq(rp_flow_schedule_sd3(&s, 10, NAN, &err), RP_ERR_INVALID);
    ck_assert_int_eq(rp_flow_schedule_flux(&s, 10, 0, &err), RP_ERR_INVALID);
    ck_assert(s.sigmas == NULL);
    ck_assert_int_eq(rp_flow_schedule_flux(&s, RP_FLOW_MAX_STEPS + 1, 4096, &err), RP_ERR_INVALID);
    ck_assert_int_eq(rp_flow_schedule_dynamic(&s, 10, INFINITY, &err), RP_ERR_INVALID);
    rp_flow_schedule_free(&s); /* freeing a zeroed schedule is fine */
}
END_TEST

/* ---- Euler on an exactly linear flow ---------------------------------------------------
 * Data x0 and noise n; x_s = (1 - s) x0 + s n is a straight line with the constant
 * velocity v = n - x0, which Euler integrates exactly in real arithmetic for ANY
 * schedule. So the sampler must return x0 up to its roundings; per element:
 *   start x = fl((1 - s0) x0 + s0 n) (computed in double): u |x_start|;
 *   v = fl(n - x0): u |n - x0|, carried over the travel s0: u s0 |n - x0|;
 *   step k: dt = fl(s_{k+1} - s_k): u |ds_k| |v|; fl(dt v): u |ds_k| |v|;
 *           fl(x + p): u |x_{k+1}|;   sum |ds_k| = s0.
 * bound = u (|x_start| + s0 |n - x0| + 2 s0 |v| + sum_k |x_{k+1}|), x2 (first order). */

typedef struct const_v {
    const float *v;
    size_t n;
    int calls;
} const_v;

static rp_status eval_const(void *self, const float *x, int i, double sigma, double t, float *v, rp_error *err) {
    const_v *c = self;
    ck_assert_int_eq(i, c->calls);
    c->calls++;
    memcpy(v, c->v, c->n * sizeof(float));
    return RP_OK;
}

static void run_linear(const rp_flow_schedule *s, uint64_t seed) {
    const int N = s->steps;
    float *x0 = malloc(NX * sizeof(float)), *nz = malloc(NX * sizeof(float)), *v = malloc(NX * sizeof(float));
    float *x = malloc(NX * sizeof(float)), *traj = malloc((size_t)(N + 1) * NX * sizeof(float));
    rp_randn(x0, NX, seed, 0, 0);
    rp_randn(nz, NX, seed, 1, 0);
    const double s0 = s->sigmas[0];
    for (int j = 0; j < NX; j++) {
        x0[j] *= 0.5f; /* latents of data scale and unit noise */
        x[j] = (float)((1.0 - s0) * x0[j] + s0 * nz[j]);
        v[j] = nz[j] - x0[j];
    }
    const_v cv = {v, NX, 0};
    rp_flow_denoiser d = {&cv, eval_const, NULL};
    rp_error err;
    ck_assert_int_eq(rp_flow_sample_euler(s, &d, x, NX, traj, &err), RP_OK);
    ck_assert_int_eq(cv.calls, N);
    ck_assert_mem_eq(traj + (size_t)N * NX, x, NX * sizeof(float));
    for (int j = 0; j < NX; j++) {
        double bound = fabs(traj[j]) + s0 * fabs((double)nz[j] - x0[j]) + 2 * s0 * fabs(v[j]);
        for (int k = 1; k <= N; k++) {
            bound += fabs(traj[(size_t)k * NX + j]);
            /* every intermediate point also lies on the line, within the bound so far */
            const double sk = s->sigmas[k];
            const double on_line = (1.0 - sk) * x0[j] + sk * nz[j];
            ck_assert_msg(fabs(traj[(size_t)k * NX + j] - on_line) <= 2 * U_F * bound,
                          "N %d step %d elem %d off the line by %g (bound %g)", N, k, j,
                          fabs(traj[(size_t)k * NX + j] - on_line), 2 * U_F * bound);
        }
        const double e = fabs((double)x[j] - x0[j]);
        ck_assert_msg(e <= 2 * U_F * bound, "N %d elem %d: |x - x0| = %g > %g", N, j, e, 2 * U_F * bound);
    }
    free(x0); free(nz); free(v); free(x); free(traj);
}

START_TEST(test_euler_linear_flow_sd3) {
    for (int c = 0; c < N_NS; c++) {
        rp_flow_schedule s;
        ck_assert_int_eq(rp_flow_schedule_sd3(&s, NS[c], RP_FLOW_SD3_SHIFT, NULL), RP_OK);
        run_linear(&s, 11 + c);
        rp_flow_schedule_free(&s);
    }
}
END_TEST

START_TEST(test_euler_linear_flow_flux) {
    for (int c = 0; c < N_NS; c++) {
        rp_flow_schedule s;
        ck_assert_int_eq(rp_flow_schedule_flux(&s, NS[c], 4096, NULL), RP_OK);
        run_linear(&s, 31 + c);
        rp_flow_schedule_free(&s);
    }
}
END_TEST

/* One step: the float32 order of diffusers (dt rounded, product rounded, sum rounded);
 * x_next may alias x. */
START_TEST(test_euler_step_order) {
    float x[3] = {1.0f, -2.5f, 0.1f}, v[3] = {0.3f, 1e-8f, -7.0f}, y[3];
    const double s = (double)0.7f, sn = (double)0.3f;
    rp_flow_euler_step(y, x, v, s, sn, 3);
    const float dt = 0.3f - 0.7f;
    for (int j = 0; j < 3; j++) {
        const float p = dt * v[j];
        ck_assert(y[j] == x[j] + p);
    }
    rp_flow_euler_step(x, x, v, s, sn, 3);
    ck_assert_mem_eq(x, y, sizeof y);
    /* to sigma 0 from 1: x - v */
    float a[1] = {2.0f}, b[1] = {0.5f};
    rp_flow_euler_step(a, a, b, 1.0, 0.0, 1);
    ck_assert(a[0] == 1.5f);
}
END_TEST

/* ---- CFG ------------------------------------------------------------------------------
 * v = v_u + s (v_c - v_u) in float32: fl(s) u|s d|, fl(d) u|s d|, fl(s d) u|s d|,
 * fl(v_u + p) u|v|: bound u (3 |s d| + |v|), x2. */
START_TEST(test_cfg) {
    float vu[NX], vc[NX], v[NX];
    rp_randn(vu, NX, 5, 0, 0);
    rp_randn(vc, NX, 5, 1, 0);
    const double scales[] = {0.0, 1.0, 3.5, 7.0, 7.3};
    for (size_t c = 0; c < sizeof scales / sizeof *scales; c++) {
        const double s = scales[c];
        rp_flow_cfg(v, vu, vc, s, NX);
        for (int j = 0; j < NX; j++) {
            const double d = (double)vc[j] - vu[j], want = vu[j] + s * d;
            ck_assert(fabs(v[j] - want) <= 2 * U_F * (3 * fabs(s * d) + fabs(want)));
        }
        if (s == 0.0) ck_assert_mem_eq(v, vu, sizeof v); /* 0 (c - u) = 0 exactly */
    }
    /* aliasing: v may be v_u */
    float w[NX];
    rp_flow_cfg(w, vu, vc, 7.0, NX);
    memcpy(v, vu, sizeof v);
    rp_flow_cfg(v, v, vc, 7.0, NX);
    ck_assert_mem_eq(v, w, sizeof v);
}
END_TEST

/* ---- dump mode for the numpy reference -------------------------------------------------- */

static int dump(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s --dump sd3|flux|dyn N PARAM\n", argv[0]);
        return 2;
    }
    const int N = atoi(argv[3]);
    rp_flow_schedule s;
    rp_error err;
    rp_status st;
    if (!strcmp(argv[2], "sd3")) st = rp_flow_schedule_sd3(&s, N, strtod(argv[4], NULL), &err);
    else if (!strcmp(argv[2], "flux")) st = rp_flow_schedule_flux(&s, N, strtoll(argv[4], NULL, 10), &err);
    else if (!strcmp(argv[2], "dyn")) st = rp_flow_schedule_dynamic(&s, N, strtod(argv[4], NULL), &err);
    else {
        fprintf(stderr, "unknown schedule '%s'\n", argv[2]);
        return 2;
    }
    if (st != RP_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("mu %a\n", s.mu);
    for (int i = 0; i < s.steps; i++)
        printf("%d %a %a %a\n", i, s.sigmas[i], s.timesteps[i], (double)rp_flow_flux_model_t(&s, i));
    printf("final %a\n", s.sigmas[s.steps]);
    rp_flow_schedule_free(&s);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--dump")) return dump(argc, argv);
    Suite *su = suite_create("flow");
    TCase *tc = tcase_create("schedules");
    tcase_add_test(tc, test_sd3_closed_form);
    tcase_add_test(tc, test_sd3_shift_one);
    tcase_add_test(tc, test_schnell_linear);
    tcase_add_test(tc, test_flux_mu);
    tcase_add_test(tc, test_flux_closed_form);
    tcase_add_test(tc, test_dynamic_mu_zero);
    tcase_add_test(tc, test_model_timesteps);
    tcase_add_test(tc, test_schedule_errors);
    suite_add_tcase(su, tc);
    TCase *ts = tcase_create("steps");
    tcase_add_test(ts, test_euler_linear_flow_sd3);
    tcase_add_test(ts, test_euler_linear_flow_flux);
    tcase_add_test(ts, test_euler_step_order);
    tcase_add_test(ts, test_cfg);
    suite_add_tcase(su, ts);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
