/* samplers.h — the DiT discrete-time schedule and samplers as small free functions.
 *
 * Schedule: linear betas over 1000 training steps (1e-4 .. 0.02), respaced to N
 * steps exactly as DiT's space_timesteps(1000, "N"): step i uses training
 * timestep round(i * 999 / (N - 1)) (ascending, sampled descending), and the
 * respaced betas are recomputed from alphas_cumprod at the kept timesteps. */
#ifndef REPRO_SAMPLERS_H
#define REPRO_SAMPLERS_H

#include <stddef.h>

#include "../error.h"

typedef enum rp_sampler_kind {
    RP_SAMPLER_DDIM = 0,     /* eta = 0 deterministic; eta > 0 stochastic */
    RP_SAMPLER_DDPM,         /* ancestral, learned-range variance when the model has it */
    RP_SAMPLER_DPMPP_2M,     /* DPM-Solver++(2M), data prediction, multistep */
    RP_SAMPLER_EULER_A       /* Euler ancestral (k-diffusion) over sigma = sqrt((1-a)/a) */
} rp_sampler_kind;

rp_status rp_sampler_parse(const char *s, rp_sampler_kind *out, rp_error *err);
const char *rp_sampler_name(rp_sampler_kind k);

/* The respaced schedule; index i = 0 .. steps-1 in *ascending* time. */
typedef struct rp_schedule {
    int steps;
    double *timestep;       /* (steps) training timestep fed to the model */
    double *alphas_cumprod; /* (steps) respaced abar_i */
    double *betas;          /* (steps) respaced beta_i = 1 - abar_i / abar_{i-1} */
} rp_schedule;

rp_status rp_schedule_dit(rp_schedule *s, int steps, rp_error *err);
void rp_schedule_free(rp_schedule *s);

/* ---- single steps over flat arrays of n floats (x is the current latent) ------ */

/* DDIM (Song et al.), eps-prediction. eta = 0 ignores noise. x_prev may alias x. */
void rp_ddim_step(float *x_prev, const float *x, const float *eps, double abar, double abar_prev,
                  double eta, const float *noise, size_t n);

/* DDPM ancestral step i of the respaced schedule. var_v (n) is the model's learned
 * range output in [-1, 1] or NULL for the fixed posterior variance. noise unused at i = 0. */
void rp_ddpm_step(float *x_prev, const float *x, const float *eps, const float *var_v,
                  const rp_schedule *s, int i, const float *noise, size_t n);

/* DPM-Solver++(2M) over lambda = log(alpha / sigma). x0 is the current data
 * prediction; x0_prev the previous one (NULL at the first step / first order). */
void rp_dpmpp_2m_step(float *x_prev, const float *x, const float *x0, const float *x0_prev,
                      double abar, double abar_prev, double abar_prevprev_step, size_t n);

/* Euler ancestral in sigma space (x here is x_sigma = x0 + sigma * n). */
void rp_euler_a_step(float *x_next, const float *x, const float *eps, double sigma,
                     double sigma_next, const float *noise, size_t n);

#endif
