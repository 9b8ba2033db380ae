/* flow.c — shifted flow-matching sigma schedules, the Euler step and CFG (see flow.h).
 *
 * The schedules follow diffusers' FlowMatchEulerDiscreteScheduler operation by
 * operation, in the precision each operation has there: torch/numpy float32
 * operations are written as C float operations (IEEE single on x86-64 SSE and
 * on every IEEE machine with FLT_EVAL_METHOD 0; the build's -ffp-contract=off
 * keeps the compiler from fusing a multiply and an add into an FMA, which would
 * skip a rounding diffusers does), float64 numpy as C double. So the stored
 * sigmas are bitwise diffusers' on any IEEE machine. */
#include "flow.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- closed forms -------------------------------------------------------------------- */

double rp_flow_shift_static(double shift, double s) { return shift * s / (1.0 + (shift - 1.0) * s); }

double rp_flow_time_shift(double mu, double s) {
    assert(s > 0.0 && s <= 1.0);
    return exp(mu) / (exp(mu) + (1.0 / s - 1.0));
}

double rp_flow_calculate_shift(double image_seq_len, double base_seq_len, double max_seq_len,
                               double base_shift, double max_shift) {
    assert(max_seq_len != base_seq_len);
    const double m = (max_shift - base_shift) / (max_seq_len - base_seq_len);
    const double b = base_shift - m * base_seq_len;
    return image_seq_len * m + b;
}

double rp_flow_flux_mu(int64_t image_seq_len) {
    return rp_flow_calculate_shift((double)image_seq_len, RP_FLOW_BASE_SEQ_LEN, RP_FLOW_MAX_SEQ_LEN,
                                   RP_FLOW_BASE_SHIFT, RP_FLOW_MAX_SHIFT);
}

int64_t rp_flow_flux_seq_len(int latent_h, int latent_w) {
    assert(latent_h > 0 && latent_w > 0 && latent_h % 2 == 0 && latent_w % 2 == 0);
    return (int64_t)(latent_h / 2) * (latent_w / 2);
}

/* ---- schedules --------------------------------------------------------------------- */

/* np.linspace(start, stop, N) in float64, element i: i * step + start with
 * step = (stop - start) / (N - 1), the last element set to stop; [start] for N = 1. */
static double linspace_at(double start, double stop, int N, int i) {
    if (N == 1) return start;
    if (i == N - 1) return stop;
    const double step = (stop - start) / (double)(N - 1);
    return (double)i * step + start;
}

void rp_flow_schedule_free(rp_flow_schedule *s) {
    if (!s) return;
    free(s->sigmas);
    free(s->timesteps);
    memset(s, 0, sizeof *s);
}

static rp_status schedule_alloc(rp_flow_schedule *s, int steps, rp_error *err) {
    memset(s, 0, sizeof *s);
    if (steps < 1 || steps > RP_FLOW_MAX_STEPS)
        return RP_FAIL(err, RP_ERR_INVALID, "flow schedule: steps must be in 1..%d (got %d)", RP_FLOW_MAX_STEPS,
                       steps);
    s->steps = steps;
    s->sigmas = malloc(sizeof(double) * (size_t)(steps + 1));
    s->timesteps = malloc(sizeof(double) * (size_t)steps);
    if (!s->sigmas || !s->timesteps) {
        rp_flow_schedule_free(s);
        return RP_FAIL(err, RP_ERR_NOMEM, "flow schedule: out of memory for %d steps", steps);
    }
    return RP_OK;
}

/* sigmas[i] = f32 value; timesteps = sigmas * 1000 as a float32 multiply; sigmas[N] = 0.
 * A schedule whose float32 sigmas are not strictly decreasing (only an extreme
 * shift or mu with a huge N can do that) is refused rather than run with a
 * zero-length step; s is freed then. */
static rp_status finish(rp_flow_schedule *s, const float *sig32, rp_error *err) {
    for (int i = 0; i < s->steps; i++) {
        s->sigmas[i] = (double)sig32[i];
        s->timesteps[i] = (double)(sig32[i] * (float)RP_FLOW_TRAIN_STEPS);
    }
    s->sigmas[s->steps] = 0.0;
    for (int i = 0; i < s->steps; i++)
        if (!(s->sigmas[i] > s->sigmas[i + 1]) || !(s->sigmas[i] <= 1.0 + 1e-6)) {
            const int steps = s->steps;
            const double a = s->sigmas[i], b = s->sigmas[i + 1];
            rp_flow_schedule_free(s);
            return RP_FAIL(err, RP_ERR_INVALID,
                           "flow schedule: float32 sigmas not strictly decreasing in (0, 1] at step %d of %d "
                           "(%.9g -> %.9g); use fewer steps or a milder shift",
                           i, steps, a, b);
        }
    return RP_OK;
}

rp_status rp_flow_schedule_sd3(rp_flow_schedule *s, int steps, double shift, rp_error *err) {
    if (!(shift > 0.0) || !isfinite(shift))
        return RP_FAIL(err, RP_ERR_INVALID, "flow schedule: shift must be a positive number (got %g)", shift);
    RP_TRY(schedule_alloc(s, steps, err));
    s->shift = shift;
    s->dynamic = 0;

    /* Scheduler __init__, torch float32: the training sigmas k / 1000 (a float32
     * division of exact integers) shifted by shift s / (1 + (shift - 1) s), where the
     * Python scalars shift and shift - 1 (the latter computed in float64) enter the
     * float32 kernels rounded to float32. Only the two ends are used later. */
    const float T = (float)RP_FLOW_TRAIN_STEPS;
    const float sh = (float)shift, shm1 = (float)(shift - 1.0);
    const float s_hi = T / T, s_lo = 1.0f / T;
    const float sig_max = (sh * s_hi) / (1.0f + shm1 * s_hi); /* 1 for shift 3 */
    const float sig_min = (sh * s_lo) / (1.0f + shm1 * s_lo);

    /* set_timesteps(N), numpy float64: t = linspace(sigma_max * 1000, sigma_min * 1000, N),
     * sigma = t / 1000, shifted again in float64, then stored as float32. */
    const double start = (double)sig_max * RP_FLOW_TRAIN_STEPS, stop = (double)sig_min * RP_FLOW_TRAIN_STEPS;
    float *sig32 = malloc(sizeof(float) * (size_t)steps); /* (steps) */
    if (!sig32) {
        rp_flow_schedule_free(s);
        return RP_FAIL(err, RP_ERR_NOMEM, "flow schedule: out of memory for %d steps", steps);
    }
    for (int i = 0; i < steps; i++) {
        const double t = linspace_at(start, stop, steps, i) / RP_FLOW_TRAIN_STEPS;
        sig32[i] = (float)(shift * t / (1.0 + (shift - 1.0) * t));
    }
    const rp_status st = finish(s, sig32, err);
    free(sig32);
    return st;
}

rp_status rp_flow_schedule_dynamic(rp_flow_schedule *s, int steps, double mu, rp_error *err) {
    if (!isfinite(mu) || fabs(mu) > 80.0) /* exp(mu) must stay a finite float32 */
        return RP_FAIL(err, RP_ERR_INVALID, "flow schedule: mu must be finite with |mu| <= 80 (got %g)", mu);
    RP_TRY(schedule_alloc(s, steps, err));
    s->mu = mu;
    s->dynamic = 1;

    float *sig32 = malloc(sizeof(float) * (size_t)steps); /* (steps) */
    if (!sig32) {
        rp_flow_schedule_free(s);
        return RP_FAIL(err, RP_ERR_NOMEM, "flow schedule: out of memory for %d steps", steps);
    }
    /* FluxPipeline: sigmas = np.linspace(1.0, 1 / N, N) (float64); set_timesteps
     * casts them to float32 and evaluates exp(mu) / (exp(mu) + (1 / s - 1) ** 1.0)
     * in numpy float32: the Python float exp(mu) is rounded to float32 once, and
     * every operation rounds to float32 (** 1.0 is exact). */
    const float e = (float)exp(mu);
    for (int i = 0; i < steps; i++) {
        const float t = (float)linspace_at(1.0, 1.0 / (double)steps, steps, i);
        const float d = 1.0f / t - 1.0f;
        sig32[i] = e / (e + d);
    }
    const rp_status st = finish(s, sig32, err);
    free(sig32);
    return st;
}

rp_status rp_flow_schedule_linear(rp_flow_schedule *s, int steps, rp_error *err) {
    RP_TRY(schedule_alloc(s, steps, err));
    s->shift = 1.0;
    s->dynamic = 0;
    float *sig32 = malloc(sizeof(float) * (size_t)steps); /* (steps) */
    if (!sig32) {
        rp_flow_schedule_free(s);
        return RP_FAIL(err, RP_ERR_NOMEM, "flow schedule: out of memory for %d steps", steps);
    }
    for (int i = 0; i < steps; i++) sig32[i] = (float)linspace_at(1.0, 1.0 / (double)steps, steps, i);
    const rp_status st = finish(s, sig32, err);
    free(sig32);
    return st;
}

rp_status rp_flow_schedule_flux(rp_flow_schedule *s, int steps, int64_t image_seq_len, rp_error *err) {
    if (image_seq_len < 1) {
        memset(s, 0, sizeof *s);
        return RP_FAIL(err, RP_ERR_INVALID, "flow schedule: image_seq_len must be >= 1 (got %lld)",
                       (long long)image_seq_len);
    }
    return rp_flow_schedule_dynamic(s, steps, rp_flow_flux_mu(image_seq_len), err);
}

float rp_flow_sd3_model_t(const rp_flow_schedule *s, int i) {
    assert(s && i >= 0 && i < s->steps);
    return (float)s->timesteps[i];
}

float rp_flow_flux_model_t(const rp_flow_schedule *s, int i) {
    assert(s && i >= 0 && i < s->steps);
    /* FluxPipeline: timestep / 1000 on a float32 tensor (a true division on CPU). */
    return (float)s->timesteps[i] / (float)RP_FLOW_TRAIN_STEPS;
}

/* ---- steps ------------------------------------------------------------------------------ */

void rp_flow_euler_step(float *x_next, const float *x, const float *v, double sigma, double sigma_next,
                        size_t n) {
    /* The sigmas are float32 values (diffusers keeps them in a float32 tensor). */
    assert((double)(float)sigma == sigma && (double)(float)sigma_next == sigma_next);
    const float dt = (float)sigma_next - (float)sigma; /* 0-dim float32 tensor subtraction */
    for (size_t j = 0; j < n; j++) {
        const float p = dt * v[j]; /* separate torch kernels: the product is rounded first */
        x_next[j] = x[j] + p;
    }
}

void rp_flow_cfg(float *v, const float *v_uncond, const float *v_cond, double scale, size_t n) {
    const float s = (float)scale; /* a Python float entering a float32 kernel */
    for (size_t j = 0; j < n; j++) {
        const float u = v_uncond[j];
        const float d = v_cond[j] - u;
        const float p = s * d;
        v[j] = u + p;
    }
}

/* ---- the loop ----------------------------------------------------------------------------- */

rp_status rp_flow_sample_euler(const rp_flow_schedule *s, const rp_flow_denoiser *d, float *x, size_t n,
                               float *trajectory, rp_error *err) {
    assert(s && d && d->eval && x && s->steps >= 1);
    float *v = malloc(sizeof(float) * (n ? n : 1)); /* (n) velocity */
    if (!v) return RP_FAIL(err, RP_ERR_NOMEM, "flow sampler: cannot allocate %zu floats", n);
    rp_status st = RP_OK;
    for (int i = 0; i < s->steps; i++) {
        if (trajectory) memcpy(trajectory + (size_t)i * n, x, n * sizeof(float));
        st = d->eval(d->self, x, i, s->sigmas[i], s->timesteps[i], v, err);
        if (st != RP_OK) break;
        rp_flow_euler_step(x, x, v, s->sigmas[i], s->sigmas[i + 1], n);
        if (d->carry) d->carry(d->self, x, n);
    }
    if (st == RP_OK && trajectory) memcpy(trajectory + (size_t)s->steps * n, x, n * sizeof(float));
    free(v);
    return st;
}
