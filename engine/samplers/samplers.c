/* samplers.c — DDIM, DDPM, DPM-Solver++(2M) and Euler ancestral as free
 * functions over the respaced schedule, plus the loop that drives them.
 *
 * Each step works element by element in double on float inputs and rounds
 * once to float, so the sampler adds about one float ulp per step on top of
 * the model's own error; the model, not the sampler, dominates any mismatch. */
#include "samplers.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct { rp_sampler_kind kind; const char *name; } SAMPLERS[] = {
    {RP_SAMPLER_DDIM, "ddim"},
    {RP_SAMPLER_DDPM, "ddpm"},
    {RP_SAMPLER_DPMPP_2M, "dpmpp-2m"},
    {RP_SAMPLER_EULER_A, "euler-a"},
};

rp_status rp_sampler_parse(const char *s, rp_sampler_kind *out, rp_error *err) {
    for (size_t i = 0; i < sizeof SAMPLERS / sizeof *SAMPLERS; i++)
        if (s && !strcmp(s, SAMPLERS[i].name)) { *out = SAMPLERS[i].kind; return RP_OK; }
    return RP_FAIL(err, RP_ERR_INVALID, "unknown sampler '%s' (known: ddim ddpm dpmpp-2m euler-a)",
                   s ? s : "(null)");
}

const char *rp_sampler_name(rp_sampler_kind k) {
    for (size_t i = 0; i < sizeof SAMPLERS / sizeof *SAMPLERS; i++)
        if (SAMPLERS[i].kind == k) return SAMPLERS[i].name;
    return "unknown";
}


double rp_sampler_default_eta(rp_sampler_kind k) { return k == RP_SAMPLER_EULER_A ? 1.0 : 0.0; }

int rp_sampler_uses_eta(rp_sampler_kind k) { return k == RP_SAMPLER_DDIM || k == RP_SAMPLER_EULER_A; }

int rp_sampler_is_stochastic(const rp_sampler_cfg *cfg) {
    switch (cfg->kind) {
    case RP_SAMPLER_DDIM: return cfg->eta > 0.0;
    case RP_SAMPLER_DDPM: return 1;
    case RP_SAMPLER_DPMPP_2M: return 0;
    case RP_SAMPLER_EULER_A: return cfg->eta > 0.0;
    }
    return 0;
}

/* ---- single steps ------------------------------------------------------------------ */

void rp_predict_x0(float *x0, const float *x, const float *eps, double abar, size_t n) {
    assert(abar > 0.0 && abar <= 1.0);
    const double ra = sqrt(1.0 / abar), rm1 = sqrt(1.0 / abar - 1.0);
    for (size_t j = 0; j < n; j++) x0[j] = (float)(ra * (double)x[j] - rm1 * (double)eps[j]);
}

double rp_ddim_sigma(double abar, double abar_prev, double eta) {
    assert(abar > 0.0 && abar < 1.0 && abar_prev >= abar && abar_prev <= 1.0);
    return eta * sqrt((1.0 - abar_prev) / (1.0 - abar)) * sqrt(1.0 - abar / abar_prev);
}

void rp_ddim_step(float *x_prev, const float *x, const float *eps, double abar, double abar_prev,
                  double eta, const float *noise, size_t n) {
    const double sigma = rp_ddim_sigma(abar, abar_prev, eta);
    assert(sigma == 0.0 || noise);
    const double ra = sqrt(1.0 / abar), rm1 = sqrt(1.0 / abar - 1.0);
    const double c0 = sqrt(abar_prev);
    /* 1 - abar_prev - sigma^2 >= 0 for eta <= 1 in exact arithmetic; clamp the
     * rounding-level negative that can appear at eta = 1. */
    double ce2 = 1.0 - abar_prev - sigma * sigma;
    const double ce = ce2 > 0.0 ? sqrt(ce2) : 0.0;
    for (size_t j = 0; j < n; j++) {
        const double e = eps[j];
        const double x0 = ra * (double)x[j] - rm1 * e;
        double v = c0 * x0 + ce * e;
        if (sigma > 0.0) v += sigma * (double)noise[j];
        x_prev[j] = (float)v;
    }
}

void rp_ddpm_step(float *x_prev, const float *x, const float *eps, const float *var_v,
                  const rp_schedule *s, int i, const float *noise, size_t n) {
    assert(i >= 0 && i < s->steps);
    const double abar = s->alphas_cumprod[i], abar_prev = rp_schedule_abar_prev(s, i);
    const double beta = s->betas[i];
    const double ra = sqrt(1.0 / abar), rm1 = sqrt(1.0 / abar - 1.0);
    /* q(x_{t-1} | x_t, x0) mean coefficients (DiT posterior_mean_coef1/2). */
    const double coef1 = beta * sqrt(abar_prev) / (1.0 - abar);
    const double coef2 = (1.0 - abar_prev) * sqrt(1.0 - beta) / (1.0 - abar);
    const int add_noise = i > 0;
    double min_log = 0.0, max_log = 0.0;
    if (add_noise) {
        assert(noise);
        min_log = rp_schedule_posterior_logvar_clipped(s, i);
        max_log = log(beta);
    }
    for (size_t j = 0; j < n; j++) {
        const double xj = x[j];
        const double x0 = ra * xj - rm1 * (double)eps[j];
        double v = coef1 * x0 + coef2 * xj;
        if (add_noise) {
            double logvar = min_log;
            if (var_v) {
                const double frac = ((double)var_v[j] + 1.0) / 2.0;
                logvar = frac * max_log + (1.0 - frac) * min_log;
            }
            v += exp(0.5 * logvar) * (double)noise[j];
        }
        x_prev[j] = (float)v;
    }
}

/* lambda = log(alpha / sigma) = 0.5 log(abar / (1 - abar)); +inf at abar = 1. */
static double lambda_of(double abar) { return 0.5 * log(abar / (1.0 - abar)); }

void rp_dpmpp_2m_step(float *x_next, const float *x, const float *x0, const float *x0_last,
                      double abar_last, double abar, double abar_next, size_t n) {
    assert(abar > 0.0 && abar < 1.0 && abar_next > abar && abar_next <= 1.0);
    if (abar_next >= 1.0) {
        /* sigma_next = 0, h = inf: x_next = 0 * x - alpha_next expm1(-inf) x0 = x0.
         * The final step is first order by construction (as k-diffusion). */
        if (x_next != x0) memcpy(x_next, x0, n * sizeof *x0);
        return;
    }
    const double lam = lambda_of(abar), lam_next = lambda_of(abar_next);
    const double h = lam_next - lam;
    assert(h > 0.0);
    const double ratio = sqrt(1.0 - abar_next) / sqrt(1.0 - abar); /* sigma_next / sigma */
    const double cd = -sqrt(abar_next) * expm1(-h);                 /* -alpha_next (e^-h - 1) > 0 */
    if (!x0_last) {
        for (size_t j = 0; j < n; j++) x_next[j] = (float)(ratio * (double)x[j] + cd * (double)x0[j]);
        return;
    }
    assert(abar_last > 0.0 && abar_last < abar);
    const double r = (lam - lambda_of(abar_last)) / h;
    const double a = 1.0 + 1.0 / (2.0 * r), b = 1.0 / (2.0 * r);
    for (size_t j = 0; j < n; j++) {
        const double D = a * (double)x0[j] - b * (double)x0_last[j];
        x_next[j] = (float)(ratio * (double)x[j] + cd * D);
    }
}

void rp_ancestral_sigmas(double sigma_from, double sigma_to, double eta, double *sigma_down,
                         double *sigma_up) {
    assert(sigma_from > 0.0 && sigma_to >= 0.0 && sigma_to <= sigma_from && eta >= 0.0);
    if (eta == 0.0) { *sigma_down = sigma_to; *sigma_up = 0.0; return; }
    double up = eta * sqrt(sigma_to * sigma_to * (sigma_from * sigma_from - sigma_to * sigma_to) /
                           (sigma_from * sigma_from));
    if (up > sigma_to) up = sigma_to;
    *sigma_up = up;
    *sigma_down = sqrt(sigma_to * sigma_to - up * up);
}

void rp_euler_a_step(float *x_next, const float *x, const float *eps, double sigma,
                     double sigma_next, double eta, const float *noise, size_t n) {
    double down, up;
    rp_ancestral_sigmas(sigma, sigma_next, eta, &down, &up);
    const int add_noise = sigma_next > 0.0 && up > 0.0;
    assert(!add_noise || noise);
    const double dt = down - sigma;
    for (size_t j = 0; j < n; j++) {
        double v = (double)x[j] + (double)eps[j] * dt;
        if (add_noise) v += (double)noise[j] * up;
        x_next[j] = (float)v;
    }
}

/* ---- one step ------------------------------------------------------------------------ */

rp_status rp_sampler_state_init(rp_sampler_state *ss, const rp_sampler_cfg *cfg, const rp_denoiser *d, size_t n,
                                rp_error *err) {
    memset(ss, 0, sizeof *ss);
    ss->n = n;
    const int want_var = cfg->kind == RP_SAMPLER_DDPM && d->has_var;
    const int need_x0 = cfg->kind == RP_SAMPLER_DPMPP_2M;
    const int need_ve = cfg->kind == RP_SAMPLER_EULER_A;
    const int stochastic = rp_sampler_is_stochastic(cfg);
    ss->eps = malloc(n * sizeof(float));
    if (want_var) ss->var = malloc(n * sizeof(float));
    if (stochastic) ss->z = malloc(n * sizeof(float));
    if (need_x0) ss->x0 = malloc(n * sizeof(float)), ss->x0_last = malloc(n * sizeof(float));
    if (need_ve) ss->xk = malloc(n * sizeof(float)), ss->xin = malloc(n * sizeof(float));
    if (!ss->eps || (want_var && !ss->var) || (stochastic && !ss->z) || (need_x0 && (!ss->x0 || !ss->x0_last)) ||
        (need_ve && (!ss->xk || !ss->xin))) {
        rp_sampler_state_free(ss);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for sampler buffers (%zu floats)", n);
    }
    return RP_OK;
}

void rp_sampler_state_free(rp_sampler_state *ss) {
    free(ss->eps); free(ss->var); free(ss->z); free(ss->x0); free(ss->x0_last); free(ss->xk); free(ss->xin);
    memset(ss, 0, sizeof *ss);
}

void rp_sampler_state_restart(rp_sampler_state *ss, const rp_sampler_cfg *cfg, const rp_schedule *s, int k,
                              const float *x) {
    if (cfg->kind != RP_SAMPLER_EULER_A) return;
    const double sigma = rp_schedule_sigma(s, s->steps - 1 - k);
    const double scale = sqrt(1.0 + sigma * sigma);
    for (size_t j = 0; j < ss->n; j++) ss->xk[j] = (float)((double)x[j] * scale);
}

rp_status rp_sampler_step(const rp_sampler_cfg *cfg, const rp_schedule *s, const rp_denoiser *d,
                          const rp_noise_src *noise, int k, float *x, rp_sampler_state *ss, rp_error *err) {
    const size_t n = ss->n;
    const int i = s->steps - 1 - k;
    const double t = s->timestep[i];
    const double abar = s->alphas_cumprod[i], abar_prev = rp_schedule_abar_prev(s, i);
    rp_status st = RP_OK;
    switch (cfg->kind) {
    case RP_SAMPLER_DDIM: {
        RP_TRY(d->eval(d->self, x, i, t, ss->eps, NULL, err));
        const double sigma = rp_ddim_sigma(abar, abar_prev, cfg->eta);
        if (sigma > 0.0) RP_TRY(noise->fill(noise->self, k, ss->z, err));
        rp_ddim_step(x, x, ss->eps, abar, abar_prev, cfg->eta, sigma > 0.0 ? ss->z : NULL, n);
        break;
    }
    case RP_SAMPLER_DDPM:
        RP_TRY(d->eval(d->self, x, i, t, ss->eps, ss->var, err));
        if (i > 0) RP_TRY(noise->fill(noise->self, k, ss->z, err));
        rp_ddpm_step(x, x, ss->eps, ss->var, s, i, i > 0 ? ss->z : NULL, n);
        break;
    case RP_SAMPLER_DPMPP_2M: {
        RP_TRY(d->eval(d->self, x, i, t, ss->eps, NULL, err));
        rp_predict_x0(ss->x0, x, ss->eps, abar, n);
        rp_dpmpp_2m_step(x, x, ss->x0, ss->have_last ? ss->x0_last : NULL, ss->abar_last, abar, abar_prev, n);
        float *tmp = ss->x0_last;
        ss->x0_last = ss->x0;
        ss->x0 = tmp;
        ss->abar_last = abar;
        ss->have_last = 1;
        break;
    }
    case RP_SAMPLER_EULER_A: {
        const double sigma = rp_schedule_sigma(s, i);
        const double sigma_next = i > 0 ? rp_schedule_sigma(s, i - 1) : 0.0;
        const double c_in = 1.0 / sqrt(sigma * sigma + 1.0);
        for (size_t j = 0; j < n; j++) ss->xin[j] = (float)((double)ss->xk[j] * c_in);
        RP_TRY(d->eval(d->self, ss->xin, i, t, ss->eps, NULL, err));
        double down, up;
        rp_ancestral_sigmas(sigma, sigma_next, cfg->eta, &down, &up);
        const int add = sigma_next > 0.0 && up > 0.0;
        if (add) RP_TRY(noise->fill(noise->self, k, ss->z, err));
        rp_euler_a_step(ss->xk, ss->xk, ss->eps, sigma, sigma_next, cfg->eta, add ? ss->z : NULL, n);
        /* the VP view of the new state (exactly xk at sigma_next = 0) */
        const double c_next = 1.0 / sqrt(sigma_next * sigma_next + 1.0);
        for (size_t j = 0; j < n; j++) x[j] = sigma_next > 0.0 ? (float)((double)ss->xk[j] * c_next) : ss->xk[j];
        break;
    }
    }
    return st;
}

/* ---- the loop ---------------------------------------------------------------------- */

rp_status rp_sample(const rp_sampler_cfg *cfg, const rp_schedule *s, const rp_denoiser *d,
                    const rp_noise_src *noise, float *x, size_t n, float *trajectory,
                    double *timesteps, rp_error *err) {
    assert(cfg && s && d && d->eval && x && s->steps >= 1);
    const int N = s->steps;
    const int stochastic = rp_sampler_is_stochastic(cfg);
    if (stochastic && (!noise || !noise->fill))
        return RP_FAIL(err, RP_ERR_INVALID, "sampler %s (eta %g) needs an ancestral noise source",
                       rp_sampler_name(cfg->kind), cfg->eta);
    if (cfg->eta < 0.0)
        return RP_FAIL(err, RP_ERR_INVALID, "eta must be >= 0 (got %g)", cfg->eta);
    if (cfg->kind == RP_SAMPLER_DDIM && cfg->eta > 1.0)
        return RP_FAIL(err, RP_ERR_INVALID, "DDIM eta must be in [0, 1] (got %g)", cfg->eta);

    rp_sampler_state ss;
    RP_TRY(rp_sampler_state_init(&ss, cfg, d, n, err));
    if (trajectory) memcpy(trajectory, x, n * sizeof(float));
    /* Euler ancestral: k-diffusion starts at x = noise * sigma_max. We start at
     * noise * sqrt(1 + sigma_max^2) instead (rp_sampler_state_restart), so that the VP
     * latent the model sees first, x * c_in = x / sqrt(1 + sigma_max^2), is exactly the
     * x_T the other samplers start from (the noise): the same seed then feeds the same
     * first model input whatever the sampler. (sqrt(1 + sigma^2) = 1/sqrt(abar); the two
     * starts differ by a factor sqrt(1 + 1/sigma_max^2) ~ 1 + 2e-5 at DiT's sigma_max ~ 157.)
     * Every step starts so, from the stored VP latent x (after the carry hook): the latent
     * the trajectory stores is the loop's whole state between steps, so a step run again
     * from it (teacher forcing, the classifier's self check) is bitwise the loop's own step,
     * and a fault in the loop's state between steps has nowhere to hide. Against carrying
     * the VE state it costs two roundings a step (VE -> VP -> VE), far below the sampler's
     * own error (tests/unit/test_samplers.c's oracle bound holds). */
    rp_status st = RP_OK;
    for (int k = 0; k < N && st == RP_OK; k++) {
        if (timesteps) timesteps[k] = s->timestep[N - 1 - k];
        rp_sampler_state_restart(&ss, cfg, s, k, x);
        st = rp_sampler_step(cfg, s, d, noise, k, x, &ss, err);
        if (st == RP_OK && d->carry) d->carry(d->self, x, n);
        if (st == RP_OK && trajectory) memcpy(trajectory + (size_t)(k + 1) * n, x, n * sizeof(float));
    }
    rp_sampler_state_free(&ss);
    return st;
}
