/* schedule.c — DiT's linear beta schedule and its respacing (see samplers.h).
 *
 * Everything here is float64 and follows the numpy expressions of DiT's
 * gaussian_diffusion.py / respace.py operation by operation, so the respaced
 * abar matches DiT's to the last bit on any IEEE machine (the build uses
 * -ffp-contract=off, so no FMA contraction changes a rounding). */
#include "samplers.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void rp_betas_linear(double *betas, int T, double start, double end) {
    assert(betas && T >= 1);
    if (T == 1) { betas[0] = start; return; }
    /* numpy.linspace: y = arange(T) * step + start, then y[-1] = stop. */
    const double step = (end - start) / (double)(T - 1);
    for (int i = 0; i < T; i++) betas[i] = (double)i * step + start;
    betas[T - 1] = end;
}

rp_status rp_space_timesteps(int T, int N, int *out, rp_error *err) {
    if (N < 1 || N > T)
        return RP_FAIL(err, RP_ERR_INVALID, "steps must be in 1..%d (got %d)", T, N);
    /* DiT accumulates cur_idx += frac_stride and applies Python's round(), which
     * rounds half to even: rint() in the default rounding mode does the same.
     * A running sum, not k * frac_stride: the two can round differently, and
     * ties (e.g. N = 7: 166.5) must go to even (166) as in Python, not away
     * from zero as C's round() would. */
    const double frac_stride = N <= 1 ? 1.0 : (double)(T - 1) / (double)(N - 1);
    double cur = 0.0;
    for (int k = 0; k < N; k++) {
        out[k] = (int)rint(cur);
        cur += frac_stride;
    }
    for (int k = 1; k < N; k++) assert(out[k] > out[k - 1]); /* stride >= 1: distinct, ascending */
    assert(out[N - 1] <= T - 1);
    return RP_OK;
}

void rp_schedule_free(rp_schedule *s) {
    if (!s) return;
    free(s->timestep);
    free(s->alphas_cumprod);
    free(s->betas);
    memset(s, 0, sizeof *s);
}

rp_status rp_schedule_dit(rp_schedule *s, int steps, rp_error *err) {
    memset(s, 0, sizeof *s);
    const int T = RP_DIT_TRAIN_STEPS;
    if (steps < 1 || steps > T)
        return RP_FAIL(err, RP_ERR_INVALID, "steps must be in 1..%d (got %d)", T, steps);
    double *betas_train = malloc(sizeof(double) * T);     /* (T) */
    double *abar_train = malloc(sizeof(double) * T);      /* (T) */
    int *kept = malloc(sizeof(int) * steps);               /* (steps) */
    s->timestep = malloc(sizeof(double) * steps);
    s->alphas_cumprod = malloc(sizeof(double) * steps);
    s->betas = malloc(sizeof(double) * steps);
    if (!betas_train || !abar_train || !kept || !s->timestep || !s->alphas_cumprod || !s->betas) {
        free(betas_train); free(abar_train); free(kept);
        rp_schedule_free(s);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for a %d-step schedule", steps);
    }
    s->steps = steps;

    /* get_named_beta_schedule("linear", 1000): scale = 1000 / T = 1 exactly. */
    rp_betas_linear(betas_train, T, RP_DIT_BETA_START, RP_DIT_BETA_END);
    /* np.cumprod is a sequential product. */
    double acc = 1.0;
    for (int t = 0; t < T; t++) {
        acc *= 1.0 - betas_train[t];
        abar_train[t] = acc;
    }

    rp_status st = rp_space_timesteps(T, steps, kept, err);
    assert(st == RP_OK); /* range checked above */
    (void)st;

    /* SpacedDiffusion: new_betas from the kept abar, then GaussianDiffusion
     * recomputes abar = cumprod(1 - new_betas). That is abar_train[t_i] only up to
     * rounding (1 - (1 - r) != r in floating point); DiT samples with the
     * recomputed one, so we do too. */
    double last = 1.0;
    acc = 1.0;
    for (int i = 0; i < steps; i++) {
        const double a = abar_train[kept[i]];
        s->betas[i] = 1.0 - a / last;
        last = a;
        acc *= 1.0 - s->betas[i];
        s->alphas_cumprod[i] = acc;
        s->timestep[i] = (double)kept[i];
        assert(s->betas[i] > 0.0 && s->betas[i] <= 1.0);
    }
    free(betas_train);
    free(abar_train);
    free(kept);
    return RP_OK;
}

double rp_schedule_abar_prev(const rp_schedule *s, int i) {
    assert(i >= 0 && i < s->steps);
    return i > 0 ? s->alphas_cumprod[i - 1] : 1.0;
}

double rp_schedule_sigma(const rp_schedule *s, int i) {
    assert(i >= 0 && i < s->steps);
    const double a = s->alphas_cumprod[i];
    return sqrt((1.0 - a) / a);
}

/* posterior_variance_i = beta_i (1 - abar_prev_i) / (1 - abar_i), as DiT (0 at i = 0). */
static double posterior_variance(const rp_schedule *s, int i) {
    return s->betas[i] * (1.0 - rp_schedule_abar_prev(s, i)) / (1.0 - s->alphas_cumprod[i]);
}

double rp_schedule_posterior_logvar_clipped(const rp_schedule *s, int i) {
    assert(s->steps >= 2 && i >= 0 && i < s->steps);
    return log(posterior_variance(s, i == 0 ? 1 : i));
}
