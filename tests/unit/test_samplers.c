/* test_samplers.c — schedule respacing and sampler steps against closed forms.
 *
 * Oracle tests: for data that is a single point x0, x_t = sqrt(abar) x0 +
 * sqrt(1 - abar) eps lies on a line every deterministic sampler follows
 * exactly in real arithmetic, so the sampler must return x0 up to the
 * rounding it adds. Tolerances are running first-order error bounds of the
 * float roundings (unit roundoff u = 2^-24 per stored float; the double
 * arithmetic inside a step adds ~1e-16 relative and is neglected), times a
 * safety factor of 2. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"
#include "engine/samplers/samplers.h"

#define U_F (1.0 / 16777216.0) /* float unit roundoff 2^-24 */
#define U_D (1.0 / 9007199254740992.0) /* double unit roundoff 2^-53 */
#define NX 256

/* ---- respacing ------------------------------------------------------------------------ */

/* For these N the running sum DiT uses and the closed form round(k * frac_stride)
 * (half to even, as Python) agree; see test_space_running_sum for N where they do not. */
START_TEST(test_space_formula) {
    const int Ns[] = {1, 2, 10, 250, 1000};
    for (size_t c = 0; c < sizeof Ns / sizeof *Ns; c++) {
        const int N = Ns[c];
        int *idx = malloc(sizeof(int) * N);
        rp_error err;
        ck_assert_int_eq(rp_space_timesteps(1000, N, idx, &err), RP_OK);
        const double fs = N == 1 ? 1.0 : 999.0 / (N - 1);
        for (int k = 0; k < N; k++) ck_assert_int_eq(idx[k], (int)rint(k * fs));
        ck_assert_int_eq(idx[0], 0);
        ck_assert_int_eq(idx[N - 1], N == 1 ? 0 : 999);
        if (N == 10) { /* DiT's list for "10": 0, 111, ..., 999 */
            for (int k = 0; k < N; k++) ck_assert_int_eq(idx[k], 111 * k);
        }
        if (N == 1000)
            for (int k = 0; k < N; k++) ck_assert_int_eq(idx[k], k);
        free(idx);
    }
}
END_TEST

/* Values from DiT's space_timesteps itself (Python): N = 7 has exact ties
 * (166.5, 499.5, 832.5) that round half to even; N = 21 has a running sum that
 * lands just below 499.5 (the product k * frac_stride would give 500). */
START_TEST(test_space_running_sum) {
    int idx[21];
    ck_assert_int_eq(rp_space_timesteps(1000, 7, idx, NULL), RP_OK);
    const int e7[] = {0, 166, 333, 500, 666, 832, 999};
    for (int k = 0; k < 7; k++) ck_assert_int_eq(idx[k], e7[k]);
    ck_assert_int_eq(rp_space_timesteps(1000, 21, idx, NULL), RP_OK);
    ck_assert_int_eq(idx[10], 499);
    ck_assert_int_eq(idx[11], 549);
    ck_assert_int_eq(idx[20], 999);
    rp_error err;
    ck_assert_int_eq(rp_space_timesteps(1000, 0, idx, &err), RP_ERR_INVALID);
    ck_assert_int_eq(rp_space_timesteps(1000, 1001, idx, &err), RP_ERR_INVALID);
}
END_TEST

START_TEST(test_betas_linear) {
    double b[1000];
    rp_betas_linear(b, 1000, 1e-4, 0.02);
    ck_assert(b[0] == 1e-4);
    ck_assert(b[999] == 0.02);
    const double step = (0.02 - 1e-4) / 999.0;
    for (int i = 1; i < 999; i++) ck_assert(fabs(b[i] - (1e-4 + i * step)) <= 4 * U_D * 0.02);
    /* abar_T of DiT's linear schedule: 4.0358e-05 (printed from DiT's diffusion). */
    double a = 1.0;
    for (int i = 0; i < 1000; i++) a *= 1.0 - b[i];
    ck_assert(fabs(a - 4.0358e-05) < 1e-8);
}
END_TEST

/* The respaced abar is cumprod(1 - beta') with beta' = 1 - abar[t_i] / abar[t_{i-1}],
 * which equals abar[t_i] in real arithmetic. In floating point, with
 * r_i = abar[t_i] / abar[t_{i-1}]: the division, 1 - r and 1 - beta' each round
 * (absolute errors <= u r, u beta', u), so 1 - beta' = r_i (1 + d_i) with
 * |d_i| <= u (r_i + beta' + 1) / r_i <= 2u / r_i (plus u for the cumprod multiply).
 * Small ratios (N = 2: r ~ 4e-5) are the weak spot; the bound says so. */
START_TEST(test_respaced_abar) {
    const int Ns[] = {1, 2, 10, 250, 1000};
    double bt[1000], at[1000];
    rp_betas_linear(bt, 1000, 1e-4, 0.02);
    double acc = 1.0;
    for (int i = 0; i < 1000; i++) { acc *= 1.0 - bt[i]; at[i] = acc; }
    for (size_t c = 0; c < sizeof Ns / sizeof *Ns; c++) {
        rp_schedule s;
        ck_assert_int_eq(rp_schedule_dit(&s, Ns[c], NULL), RP_OK);
        double bound = 0.0, last = 1.0;
        for (int i = 0; i < s.steps; i++) {
            const int t = (int)s.timestep[i];
            ck_assert(s.timestep[i] == (double)t);
            const double r = at[t] / last;
            bound += 2.0 * U_D / r + 2.0 * U_D;
            last = at[t];
            const double rel = fabs(s.alphas_cumprod[i] - at[t]) / at[t];
            ck_assert_msg(rel <= 2.0 * bound, "N=%d i=%d rel %.3g > %.3g", Ns[c], i, rel, 2.0 * bound);
            /* and the betas are exactly what was multiplied */
            ck_assert(s.betas[i] == 1.0 - at[t] / (i ? at[(int)s.timestep[i - 1]] : 1.0));
        }
        if (Ns[c] == 1000) /* identity respacing: 1 - (1 - a/l) changes nothing but rounding */
            for (int i = 0; i < 1000; i++) ck_assert(fabs(s.betas[i] - bt[i]) <= 4 * U_D);
        rp_schedule_free(&s);
    }
}
END_TEST

/* ---- oracle denoisers ------------------------------------------------------------------- */

typedef struct oracle {
    const rp_schedule *s;
    const float *x0;  /* (NX) the single data point */
    const float *eps; /* (NX) the fixed noise: constant-eps oracle */
    int point_mass;   /* 1: eps derived from x and x0 (exact denoiser of a point mass) */
    int evals;
} oracle;

static rp_status oracle_eval(void *self, const float *x, int i, double t, float *eps, float *var,
                             rp_error *err) {
    oracle *o = self;
    ck_assert(t == o->s->timestep[i]);
    o->evals++;
    const double a = o->s->alphas_cumprod[i];
    for (int j = 0; j < NX; j++)
        eps[j] = o->point_mass ? (float)(((double)x[j] - sqrt(a) * o->x0[j]) / sqrt(1.0 - a)) : o->eps[j];
    if (var)
        for (int j = 0; j < NX; j++) var[j] = 0.25f * (float)((j % 9) - 4) / 4.0f; /* in [-1, 1] */
    return RP_OK;
}

static rp_status test_noise_fill(void *self, int k, float *out, rp_error *err) {
    rp_randn(out, NX, 1234, 0, RP_STREAM_STEP_NOISE_BASE + (uint32_t)k);
    return RP_OK;
}

static void fill_data(float *x0, float *eps) {
    rp_randn(x0, NX, 7, 0, 100);
    rp_randn(eps, NX, 7, 1, 100);
    for (int j = 0; j < NX; j++) x0[j] = 0.8f * x0[j]; /* latents of about unit scale */
}

static double maxabs(const float *v, int n) {
    double m = 0;
    for (int j = 0; j < n; j++) m = fmax(m, fabs(v[j]));
    return m;
}

/* Runs the sampler with the oracle from x_T = sqrt(abar_T) x0 + sqrt(1 - abar_T) eps
 * and returns max |x_final - x0|. */
static double run_oracle(rp_sampler_kind kind, double eta, int steps, int point_mass, float *x0,
                         float *eps, rp_schedule *s, int *evals) {
    float x[NX];
    const double aT = s->alphas_cumprod[steps - 1];
    for (int j = 0; j < NX; j++) x[j] = (float)(sqrt(aT) * x0[j] + sqrt(1.0 - aT) * eps[j]);
    oracle o = {s, x0, eps, point_mass, 0};
    rp_denoiser d = {&o, 1, oracle_eval, NULL};
    rp_noise_src ns = {NULL, test_noise_fill};
    rp_sampler_cfg cfg = {kind, eta};
    float *traj = malloc(sizeof(float) * NX * (steps + 1));
    double *ts = malloc(sizeof(double) * steps);
    rp_error err;
    ck_assert_int_eq(rp_sample(&cfg, s, &d, &ns, x, NX, traj, ts, &err), RP_OK);
    ck_assert_int_eq(o.evals, steps);
    ck_assert(memcmp(traj + (size_t)steps * NX, x, sizeof x) == 0); /* last entry = result */
    for (int k = 0; k < steps; k++) ck_assert(ts[k] == s->timestep[steps - 1 - k]);
    free(traj);
    free(ts);
    double e = 0;
    for (int j = 0; j < NX; j++) e = fmax(e, fabs((double)x[j] - x0[j]));
    *evals = o.evals;
    return e;
}

/* DDIM eta 0 with the constant-eps oracle. Error E (absolute, in x) of the
 * stored state: x0_hat = x / sqrt(a) - sqrt(1/a - 1) eps is exact up to E / sqrt(a)
 * (kept in double), x_prev = sqrt(a_prev) x0_hat + ... rounds once:
 * E_prev = sqrt(a_prev / a) E + u |x_prev|, starting from E_T = u |x_T|. The
 * first step dominates: u |x_T| / sqrt(abar_T) ~ 3 * 6e-8 * 157 ~ 3e-5. */
static double ddim_bound(const rp_schedule *s, double X0, double EPS) {
    const int N = s->steps;
    double a = s->alphas_cumprod[N - 1];
    double E = U_F * (sqrt(a) * X0 + sqrt(1 - a) * EPS);
    for (int i = N - 1; i >= 0; i--) {
        const double ap = rp_schedule_abar_prev(s, i);
        E = sqrt(ap / a) * E + U_F * (sqrt(ap) * X0 + sqrt(1 - ap) * EPS);
        a = ap;
    }
    return 2.0 * E;
}

START_TEST(test_ddim_oracle) {
    float x0[NX], eps[NX];
    fill_data(x0, eps);
    const int Ns[] = {1, 2, 10, 50, 250, 1000};
    for (size_t c = 0; c < sizeof Ns / sizeof *Ns; c++) {
        rp_schedule s;
        ck_assert_int_eq(rp_schedule_dit(&s, Ns[c], NULL), RP_OK);
        int evals;
        const double e = run_oracle(RP_SAMPLER_DDIM, 0.0, Ns[c], 0, x0, eps, &s, &evals);
        const double tol = ddim_bound(&s, maxabs(x0, NX), maxabs(eps, NX));
        fprintf(stderr, "ddim N=%d err %.3g tol %.3g\n", Ns[c], e, tol);
        ck_assert_msg(e <= tol, "DDIM N=%d: max err %.3g > bound %.3g", Ns[c], e, tol);
        ck_assert(tol < 1e-2); /* the bound itself is small next to |x0| ~ 3: a real check */
        rp_schedule_free(&s);
    }
}
END_TEST

/* DPM-Solver++(2M) with the constant-eps oracle: every data prediction is x0,
 * so D = (1 + 1/2r) x0 - (1/2r) x0 = x0 and the update
 * x_next = (sigma_next/sigma) x + alpha_next (1 - e^-h) D stays on the line
 * (e^-h = alpha sigma_next / (sigma alpha_next)). Rounding, in x0 units
 * (e = state error / alpha): the update maps a state error e with D's error e
 * to e exactly (sigma_next/sigma alpha + alpha_next (1 - e^-h) = alpha_next), so
 * e_next = e + (1 - e^-h) dD + u |x_next| / alpha_next, where dD is D's error beyond
 * e: x0_hat is stored as float (u |x0| each), and x0_last carries the previous
 * state error e_last = e - g_last, so dD <= (1/2r) g_last + (1 + 1/r) u |x0|,
 * with g_last the growth of e in the previous update. Final step: x0_hat itself. */
static double dpmpp_bound(const rp_schedule *s, double X0, double EPS) {
    const int N = s->steps;
    double a = s->alphas_cumprod[N - 1];
    double e = U_F * (sqrt(a) * X0 + sqrt(1 - a) * EPS) / sqrt(a), g_last = 0.0, lam_last = 0.0;
    for (int i = N - 1; i >= 0; i--) {
        const double ap = rp_schedule_abar_prev(s, i);
        const double lam = 0.5 * log(a / (1 - a));
        if (ap >= 1.0) { e += U_F * X0; break; }
        const double lam_n = 0.5 * log(ap / (1 - ap)), h = lam_n - lam;
        double dD = U_F * X0;
        if (i < N - 1) {
            const double r = (lam - lam_last) / h;
            dD = g_last / (2 * r) + (1 + 1 / r) * U_F * X0;
        }
        g_last = -expm1(-h) * dD + U_F * (sqrt(ap) * X0 + sqrt(1 - ap) * EPS) / sqrt(ap);
        e += g_last;
        lam_last = lam;
        a = ap;
    }
    return 2.0 * e;
}

START_TEST(test_dpmpp_oracle) {
    float x0[NX], eps[NX];
    fill_data(x0, eps);
    const int Ns[] = {1, 2, 10, 50, 250};
    for (size_t c = 0; c < sizeof Ns / sizeof *Ns; c++) {
        rp_schedule s;
        ck_assert_int_eq(rp_schedule_dit(&s, Ns[c], NULL), RP_OK);
        int evals;
        const double e = run_oracle(RP_SAMPLER_DPMPP_2M, 0.0, Ns[c], 0, x0, eps, &s, &evals);
        const double tol = dpmpp_bound(&s, maxabs(x0, NX), maxabs(eps, NX));
        fprintf(stderr, "dpmpp N=%d err %.3g tol %.3g\n", Ns[c], e, tol);
        ck_assert_msg(e <= tol, "DPM++2M N=%d: max err %.3g > bound %.3g", Ns[c], e, tol);
        ck_assert(tol < 1e-2);
        rp_schedule_free(&s);
    }
}
END_TEST

/* The 2M step against the exact solution of the data-prediction ODE for a data
 * prediction linear in lambda, x0(u) = A + u B, whose integral is closed form:
 * x(l_n) = (s_n/s) x + a_n int_l^l_n e^{-(l_n-u)} x0(u) du
 *        = (s_n/s) x + a_n [A (1 - e^-h) + B (l_n - 1 + e^-h (1 - l))].
 * The first-order step misses a_n B (h - 1 + e^-h) = O(h^2); 2M replaces the
 * slope term by (1 - e^-h) h/2 B (DPM-Solver++'s phi_2 approximation), so it
 * misses a_n B [(h - 1 + e^-h) - (1 - e^-h) h/2] = O(h^3). Both truncation
 * errors are checked to float rounding (values ~1: a few u). */
START_TEST(test_dpmpp_truncation) {
    rp_schedule s;
    ck_assert_int_eq(rp_schedule_dit(&s, 20, NULL), RP_OK);
    const int i = 10; /* step from i to i-1, previous evaluation at i+1 */
    const double al = s.alphas_cumprod[i + 1], a = s.alphas_cumprod[i], an = s.alphas_cumprod[i - 1];
    const double L = 0.5 * log(al / (1 - al)), l = 0.5 * log(a / (1 - a)), ln = 0.5 * log(an / (1 - an));
    const double A = 0.3, B = 0.7;
    const float x = 0.5f;
    const float x0 = (float)(A + l * B), x0l = (float)(A + L * B);
    const double h = ln - l, em = exp(-h);
    const double I = A * (1 - em) + B * (ln - 1 + em * (1 - l));
    const double exact = sqrt((1 - an) / (1 - a)) * x + sqrt(an) * I;
    float x1, x2;
    rp_dpmpp_2m_step(&x1, &x, &x0, NULL, 0, a, an, 1);
    rp_dpmpp_2m_step(&x2, &x, &x0, &x0l, al, a, an, 1);
    const double t1 = -sqrt(an) * B * (h - 1 + em);
    const double t2 = sqrt(an) * B * ((1 - em) * h / 2 - (h - 1 + em));
    ck_assert_msg(fabs((x1 - exact) - t1) < 8 * U_F, "first order: %.9g vs %.9g", x1 - exact, t1);
    ck_assert_msg(fabs((x2 - exact) - t2) < 8 * U_F, "2M: %.9g vs %.9g", x2 - exact, t2);
    ck_assert(fabs(t2) < 0.2 * fabs(t1)); /* and 2M is the better one at this h */
    rp_schedule_free(&s);
}
END_TEST

START_TEST(test_euler_a_identities) {
    const double froms[] = {157.0, 10.0, 1.0, 0.5, 0.01};
    for (size_t c = 0; c < 5; c++) {
        for (double f = 0.0; f <= 1.0; f += 0.25) {
            const double sf = froms[c], stt = sf * f;
            double down, up;
            rp_ancestral_sigmas(sf, stt, 1.0, &down, &up);
            /* down^2 + up^2 = to^2 (a few double roundings relative to to^2) */
            ck_assert(fabs(down * down + up * up - stt * stt) <= 8 * U_D * stt * stt);
            ck_assert(up <= stt && down <= stt && down >= 0 && up >= 0);
            /* eta = 1: up = to sqrt(1 - to^2/from^2), down = to^2 / from */
            ck_assert(fabs(up - stt * sqrt(1 - f * f)) <= 8 * U_D * sf);
            ck_assert(fabs(down - stt * stt / sf) <= 8 * U_D * sf);
            rp_ancestral_sigmas(sf, stt, 0.0, &down, &up);
            ck_assert(down == stt && up == 0.0);
        }
    }
    double down, up;
    rp_ancestral_sigmas(3.0, 0.0, 1.0, &down, &up);
    ck_assert(down == 0.0 && up == 0.0);
    /* eta large: up capped at to, down 0 */
    rp_ancestral_sigmas(3.0, 2.0, 10.0, &down, &up);
    ck_assert(up == 2.0 && down == 0.0);
}
END_TEST

/* Euler with eta 0 and the constant-eps oracle is exact in VE space
 * (x + eps (s_next - s) = x0 + s_next eps), and the start at noise *
 * sqrt(1 + sigma_max^2) puts the first model input on x_T; same rounding
 * structure as DDIM, so the DDIM bound applies up to the c_in scalings
 * (two more roundings per step, covered by doubling it). */
START_TEST(test_euler_oracle) {
    float x0[NX], eps[NX];
    fill_data(x0, eps);
    const int Ns[] = {1, 10, 250};
    for (size_t c = 0; c < 3; c++) {
        rp_schedule s;
        ck_assert_int_eq(rp_schedule_dit(&s, Ns[c], NULL), RP_OK);
        int evals;
        const double e = run_oracle(RP_SAMPLER_EULER_A, 0.0, Ns[c], 0, x0, eps, &s, &evals);
        const double tol = 2 * ddim_bound(&s, maxabs(x0, NX), maxabs(eps, NX));
        ck_assert_msg(e <= tol, "Euler N=%d: err %.3g > %.3g", Ns[c], e, tol);
        rp_schedule_free(&s);
    }
}
END_TEST

/* Point-mass oracle: the exact denoiser of data concentrated at x0. Every sampler,
 * stochastic ones included, then ends exactly at x0, since its last step returns
 * the data prediction of the last evaluation: x0_hat = x / sqrt(a0) - sqrt(1/a0 - 1) eps
 * with eps = (x - sqrt(a0) x0) / sqrt(1 - a0) rounded to float. Error: the rounding of
 * x and eps, scaled by 1/sqrt(a0) ~ 1 and sqrt(1/a0 - 1) ~ 0.01 at a0 = 1 - 1e-4, plus
 * the output rounding: ~ 3u max(|x|, |eps|); 16u max(|x0| + |eps|) leaves room for
 * the VE conversions of Euler ancestral. */
START_TEST(test_point_mass_all) {
    float x0[NX], eps[NX];
    fill_data(x0, eps);
    const struct { rp_sampler_kind k; double eta; } cases[] = {
        {RP_SAMPLER_DDIM, 0.0}, {RP_SAMPLER_DDIM, 1.0}, {RP_SAMPLER_DDPM, 0.0},
        {RP_SAMPLER_DPMPP_2M, 0.0}, {RP_SAMPLER_EULER_A, 1.0}};
    const double tol = 16 * U_F * (maxabs(x0, NX) + 4 * maxabs(eps, NX));
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rp_schedule s;
        ck_assert_int_eq(rp_schedule_dit(&s, 10, NULL), RP_OK);
        int evals;
        const double e = run_oracle(cases[c].k, cases[c].eta, 10, 1, x0, eps, &s, &evals);
        ck_assert_msg(e <= tol, "%s eta %g: err %.3g > %.3g", rp_sampler_name(cases[c].k),
                      cases[c].eta, e, tol);
        rp_schedule_free(&s);
    }
}
END_TEST

/* DDPM single step against the closed form of DiT's p_sample (learned range). */
START_TEST(test_ddpm_step) {
    rp_schedule s;
    ck_assert_int_eq(rp_schedule_dit(&s, 10, NULL), RP_OK);
    const int i = 5;
    const double a = s.alphas_cumprod[i], ap = s.alphas_cumprod[i - 1], b = s.betas[i];
    const float x = 0.7f, e = -0.4f, v = 0.3f, z = 1.1f;
    float out;
    rp_ddpm_step(&out, &x, &e, &v, &s, i, &z, 1);
    const double x0 = (x - sqrt(1 - a) * e) / sqrt(a);
    const double mean = b * sqrt(ap) / (1 - a) * x0 + (1 - ap) * sqrt(1 - b) / (1 - a) * x;
    const double pv1 = s.betas[1] * (1 - s.alphas_cumprod[0]) / (1 - s.alphas_cumprod[1]);
    const double pvi = b * (1 - ap) / (1 - a);
    const double frac = (v + 1) / 2.0;
    const double lv = frac * log(b) + (1 - frac) * log(pvi);
    ck_assert(fabs(out - (mean + exp(0.5 * lv) * z)) <= 4 * U_F * 2);
    ck_assert(fabs(rp_schedule_posterior_logvar_clipped(&s, 0) - log(pv1)) < 1e-15);
    /* i = 0: no noise, output = x0 prediction (coef1 = 1, coef2 = 0) */
    rp_ddpm_step(&out, &x, &e, NULL, &s, 0, NULL, 1);
    const double a0 = s.alphas_cumprod[0];
    ck_assert(fabs(out - (x - sqrt(1 - a0) * e) / sqrt(a0)) <= 2 * U_F);
    rp_schedule_free(&s);
}
END_TEST

/* A smooth denoiser that is not an oracle: it predicts x0_hat(x) = 0.8 tanh(x) + 0.1,
 * i.e. eps = (x - sqrt(abar) x0_hat) / sqrt(1 - abar) (self = the schedule), so the
 * trajectory is nonlinear but stays O(1), as a trained model's would. */
static rp_status smooth_eval(void *self, const float *x, int i, double t, float *eps, float *var,
                             rp_error *err) {
    const double a = ((const rp_schedule *)self)->alphas_cumprod[i];
    for (int j = 0; j < NX; j++) {
        const double x0 = 0.8 * tanh((double)x[j]) + 0.1;
        eps[j] = (float)(((double)x[j] - sqrt(a) * x0) / sqrt(1.0 - a));
    }
    return RP_OK;
}

static void run_smooth(rp_sampler_kind kind, double eta, const rp_schedule *s, float *x) {
    rp_randn(x, NX, 42, 0, RP_STREAM_INIT_NOISE);
    rp_denoiser d = {(void *)s, 0, smooth_eval, NULL};
    rp_noise_src ns = {NULL, test_noise_fill};
    rp_sampler_cfg cfg = {kind, eta};
    ck_assert_int_eq(rp_sample(&cfg, s, &d, &ns, x, NX, NULL, NULL, NULL), RP_OK);
}

/* Two equivalences of exact arithmetic, so only rounding may separate the results:
 *  - Euler in sigma space with an eps model and eta 0 is DDIM eta 0 (Karras et al.
 *    2022, sec. 4: DDIM is Euler on the VE ODE);
 *  - DDIM eta 1 is DDPM with the fixed posterior variance (FIXED_SMALL): sigma^2 =
 *    (1-a')/(1-a) (1-a/a') = beta~ and the means agree; same noise stream per step.
 * Rounding: a few u |x| per step in x0 units, amplified by at most 1/sqrt(abar_T) ~ 157
 * at the first step; 10 steps x 8u x 157 x max|x| is the bound used. */
START_TEST(test_sampler_equivalences) {
    rp_schedule s;
    ck_assert_int_eq(rp_schedule_dit(&s, 10, NULL), RP_OK);
    float a[NX], b[NX];
    const double amp = 1.0 / sqrt(s.alphas_cumprod[9]);
    run_smooth(RP_SAMPLER_DDIM, 0.0, &s, a);
    run_smooth(RP_SAMPLER_EULER_A, 0.0, &s, b);
    double e = 0, m = maxabs(a, NX);
    for (int j = 0; j < NX; j++) e = fmax(e, fabs((double)a[j] - b[j]));
    double tol = 10 * 8 * U_F * amp * m;
    fprintf(stderr, "ddim vs euler eta 0: %.3g (tol %.3g, max|x| %.3g)\n", e, tol, m);
    ck_assert_msg(e <= tol, "DDIM eta 0 vs Euler eta 0: %.3g > %.3g", e, tol);
    run_smooth(RP_SAMPLER_DDIM, 1.0, &s, a);
    run_smooth(RP_SAMPLER_DDPM, 0.0, &s, b);
    e = 0;
    m = maxabs(a, NX);
    for (int j = 0; j < NX; j++) e = fmax(e, fabs((double)a[j] - b[j]));
    tol = 10 * 8 * U_F * amp * m;
    fprintf(stderr, "ddim eta 1 vs ddpm fixed-small: %.3g (tol %.3g, max|x| %.3g)\n", e, tol, m);
    ck_assert_msg(e <= tol, "DDIM eta 1 vs DDPM: %.3g > %.3g", e, tol);
    rp_schedule_free(&s);
}
END_TEST

START_TEST(test_parse) {
    rp_sampler_kind k;
    rp_error err;
    ck_assert_int_eq(rp_sampler_parse("dpmpp-2m", &k, &err), RP_OK);
    ck_assert_int_eq(k, RP_SAMPLER_DPMPP_2M);
    ck_assert_str_eq(rp_sampler_name(RP_SAMPLER_EULER_A), "euler-a");
    ck_assert_int_eq(rp_sampler_parse("heun", &k, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "heun"));
    rp_schedule s;
    ck_assert_int_eq(rp_schedule_dit(&s, 0, &err), RP_ERR_INVALID);
    /* a stochastic sampler without a noise source is refused, not crashed */
    ck_assert_int_eq(rp_schedule_dit(&s, 3, &err), RP_OK);
    float x[NX] = {0}, x0[NX] = {0}, eps[NX] = {0};
    oracle o = {&s, x0, eps, 0, 0};
    rp_denoiser d = {&o, 0, oracle_eval, NULL};
    rp_sampler_cfg cfg = {RP_SAMPLER_DDPM, 0};
    ck_assert_int_eq(rp_sample(&cfg, &s, &d, NULL, x, NX, NULL, NULL, &err), RP_ERR_INVALID);
    cfg.kind = RP_SAMPLER_DDIM;
    cfg.eta = 1.5;
    rp_noise_src ns = {NULL, test_noise_fill};
    ck_assert_int_eq(rp_sample(&cfg, &s, &d, &ns, x, NX, NULL, NULL, &err), RP_ERR_INVALID);
    rp_schedule_free(&s);
}
END_TEST

int main(void) {
    Suite *su = suite_create("samplers");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_space_formula);
    tcase_add_test(tc, test_space_running_sum);
    tcase_add_test(tc, test_betas_linear);
    tcase_add_test(tc, test_respaced_abar);
    tcase_add_test(tc, test_ddim_oracle);
    tcase_add_test(tc, test_dpmpp_oracle);
    tcase_add_test(tc, test_dpmpp_truncation);
    tcase_add_test(tc, test_euler_a_identities);
    tcase_add_test(tc, test_euler_oracle);
    tcase_add_test(tc, test_point_mass_all);
    tcase_add_test(tc, test_ddpm_step);
    tcase_add_test(tc, test_sampler_equivalences);
    tcase_add_test(tc, test_parse);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
