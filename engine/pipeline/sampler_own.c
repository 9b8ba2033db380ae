/* sampler_own.c — the sampler's update recomputed by code of its own (sampler_own.h).
 *
 * Each function below evaluates the same expressions as engine/samplers/ in the same order
 * (doubles where they use doubles, float products rounded where they round them; the build
 * has -ffp-contract=off), from the schedule's arrays and the step's inputs only: it calls
 * nothing of engine/samplers/ but the libm functions they call too, so a fault there, or a
 * state or global a step reads besides its inputs, gives the two sides other bits.
 * tests/unit/test_sampler_own.c holds it bitwise to rp_sampler_step and rp_flow_euler_step
 * for every sampler.
 */
#include "sampler_own.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "../parallel/parallel.h"

/* abar after sampling index i (1 past the last), as rp_schedule_abar_prev. */
static double abar_after(const rp_schedule *s, int i) { return i > 0 ? s->alphas_cumprod[i - 1] : 1.0; }

/* sqrt((1 - abar) / abar): the VE sigma of sampling index i. */
static double ve_sigma(const rp_schedule *s, int i) {
    const double a = s->alphas_cumprod[i];
    return sqrt((1.0 - a) / a);
}

static int own_ddim(const rp_sampler_own_step *st, int i, float *y) {
    const rp_schedule *s = st->s;
    const double abar = s->alphas_cumprod[i], prev = abar_after(s, i), eta = st->cfg->eta;
    const double sigma = eta * sqrt((1.0 - prev) / (1.0 - abar)) * sqrt(1.0 - abar / prev);
    const double ra = sqrt(1.0 / abar), rm1 = sqrt(1.0 / abar - 1.0), c0 = sqrt(prev);
    const double ce2 = 1.0 - prev - sigma * sigma, ce = ce2 > 0.0 ? sqrt(ce2) : 0.0;
    for (size_t j = 0; j < st->n; j++) {
        const double e = st->eps[j];
        double v = c0 * (ra * (double)st->x[j] - rm1 * e) + ce * e;
        if (sigma > 0.0) v += sigma * (double)st->z[j];
        y[j] = (float)v;
    }
    return sigma > 0.0;
}

static int own_ddpm(const rp_sampler_own_step *st, int i, float *y) {
    const rp_schedule *s = st->s;
    const double abar = s->alphas_cumprod[i], prev = abar_after(s, i), beta = s->betas[i];
    const double ra = sqrt(1.0 / abar), rm1 = sqrt(1.0 / abar - 1.0);
    const double c1 = beta * sqrt(prev) / (1.0 - abar), c2 = (1.0 - prev) * sqrt(1.0 - beta) / (1.0 - abar);
    double lo = 0.0, hi = 0.0;
    if (i > 0) { /* DiT's posterior log variance (its clip at index 0 is never read: no noise there) */
        lo = log(beta * (1.0 - prev) / (1.0 - abar));
        hi = log(beta);
    }
    for (size_t j = 0; j < st->n; j++) {
        const double xj = st->x[j];
        double v = c1 * (ra * xj - rm1 * (double)st->eps[j]) + c2 * xj;
        if (i > 0) {
            double lv = lo;
            if (st->var) {
                const double f = ((double)st->var[j] + 1.0) / 2.0;
                lv = f * hi + (1.0 - f) * lo;
            }
            v += exp(0.5 * lv) * (double)st->z[j];
        }
        y[j] = (float)v;
    }
    return i > 0;
}

static double half_log_snr(double abar) { return 0.5 * log(abar / (1.0 - abar)); }

static void own_dpmpp(const rp_sampler_own_step *st, int i, float *y) {
    const rp_schedule *s = st->s;
    const double abar = s->alphas_cumprod[i], next = abar_after(s, i);
    const double ra = sqrt(1.0 / abar), rm1 = sqrt(1.0 / abar - 1.0);
    if (next >= 1.0) { /* the last step: x0 itself */
        for (size_t j = 0; j < st->n; j++) y[j] = (float)(ra * (double)st->x[j] - rm1 * (double)st->eps[j]);
        return;
    }
    const double h = half_log_snr(next) - half_log_snr(abar);
    const double ratio = sqrt(1.0 - next) / sqrt(1.0 - abar), cd = -sqrt(next) * expm1(-h);
    double a = 1.0, b = 0.0;
    if (st->x0_last) {
        const double r = (half_log_snr(abar) - half_log_snr(st->abar_last)) / h;
        a = 1.0 + 1.0 / (2.0 * r), b = 1.0 / (2.0 * r);
    }
    for (size_t j = 0; j < st->n; j++) {
        const float x0 = (float)(ra * (double)st->x[j] - rm1 * (double)st->eps[j]); /* stored as float */
        const double D = st->x0_last ? a * (double)x0 - b * (double)st->x0_last[j] : (double)x0;
        y[j] = (float)(ratio * (double)st->x[j] + cd * D);
    }
}

static int own_euler_a(const rp_sampler_own_step *st, int i, float *y) {
    const rp_schedule *s = st->s;
    const double sg = ve_sigma(s, i), sn = i > 0 ? ve_sigma(s, i - 1) : 0.0, eta = st->cfg->eta;
    double up = 0.0, down = sn;
    if (eta != 0.0) {
        up = eta * sqrt(sn * sn * (sg * sg - sn * sn) / (sg * sg));
        if (up > sn) up = sn;
        down = sqrt(sn * sn - up * up);
    }
    const int add = sn > 0.0 && up > 0.0;
    const double scale = sqrt(1.0 + sg * sg), dt = down - sg, c_next = 1.0 / sqrt(sn * sn + 1.0);
    for (size_t j = 0; j < st->n; j++) {
        const float xk = (float)((double)st->x[j] * scale); /* the VE state, restarted from x */
        double v = (double)xk + (double)st->eps[j] * dt;
        if (add) v += (double)st->z[j] * up;
        const float xk1 = (float)v;
        y[j] = sn > 0.0 ? (float)((double)xk1 * c_next) : xk1;
    }
    return add;
}

int rp_sampler_own_dit(const rp_sampler_own_step *st, float *y) {
    assert(st && st->k >= 0 && st->k < st->s->steps);
    const int i = st->s->steps - 1 - st->k;
    switch (st->cfg->kind) {
    case RP_SAMPLER_DDIM: return own_ddim(st, i, y);
    case RP_SAMPLER_DDPM: return own_ddpm(st, i, y);
    case RP_SAMPLER_DPMPP_2M: own_dpmpp(st, i, y); return 0;
    case RP_SAMPLER_EULER_A: return own_euler_a(st, i, y);
    }
    return 0;
}

void rp_sampler_own_flow(const rp_flow_schedule *s, int i, const float *x, const float *v, size_t n, float *y) {
    assert(s && i >= 0 && i < s->steps);
    const float dt = (float)s->sigmas[i + 1] - (float)s->sigmas[i];
    for (size_t j = 0; j < n; j++) {
        const float p = dt * v[j];
        y[j] = x[j] + p;
    }
}

/* y against x_next as an own pair under "sampler.update" (the pair's other name says which
 * sampler recomputed it). */
static void note(const rp_ctx *ctx, const float *x_next, const float *y, size_t n, const char *what) {
    rp_par_own_hold(ctx->par, x_next, y, n, what);
    rp_par_own_flush(ctx, "sampler.update");
}

rp_status rp_sampler_own_check_dit(const rp_ctx *ctx, const rp_sampler_own_step *st, const float *z_own,
                                   const float *x_next, rp_error *err) {
    if (!ctx->par || !ctx->par->check_own) return RP_OK;
    float *y = malloc(sizeof(float) * (st->n ? st->n : 1));
    if (!y) return RP_FAIL(err, RP_ERR_NOMEM, "sampler own check: out of memory (%zu floats)", st->n);
    /* the noise first: the update below reads the z it was handed, so a wrong draw is named
     * here (before, by elimination, "the sampler's update") */
    if (rp_sampler_own_dit(st, y) && z_own) {
        rp_par_own_hold(ctx->par, st->z, z_own, st->n, "step noise");
        rp_par_own_flush(ctx, "sampler.noise");
    }
    note(ctx, x_next, y, st->n, rp_sampler_name(st->cfg->kind));
    free(y);
    return RP_OK;
}

rp_status rp_sampler_own_check_flow(const rp_ctx *ctx, const rp_flow_schedule *s, int i, const float *x,
                                    const float *v, const float *x_next, size_t n, rp_error *err) {
    if (!ctx->par || !ctx->par->check_own) return RP_OK;
    float *y = malloc(sizeof(float) * (n ? n : 1));
    if (!y) return RP_FAIL(err, RP_ERR_NOMEM, "sampler own check: out of memory (%zu floats)", n);
    rp_sampler_own_flow(s, i, x, v, n, y);
    note(ctx, x_next, y, n, "flow euler");
    free(y);
    return RP_OK;
}
