/* flow.h — rectified-flow (flow-matching) sampling for SD3 and FLUX as small free functions.
 *
 * The models are trained on x_sigma = (1 - sigma) x0 + sigma noise, sigma in [0, 1],
 * and predict the velocity v = dx/dsigma = noise - x0. Sampling integrates x from
 * sigma = 1 (pure noise) to sigma = 0 with Euler steps over a "shifted" schedule,
 * exactly as diffusers' FlowMatchEulerDiscreteScheduler (num_train_timesteps 1000):
 *
 * SD3 (StableDiffusion3Pipeline; scheduler config shift 3.0, no dynamic shifting):
 *   the scheduler's training table, in float32: s_k = k / 1000 (k = 1000 .. 1),
 *   shifted by f(s) = shift s / (1 + (shift - 1) s); sigma_max = f(1) (= 1),
 *   sigma_min = f(1/1000) (= 0.0029940...). set_timesteps(N) then takes, in float64,
 *   t_i = np.linspace(sigma_max * 1000, sigma_min * 1000, N) / 1000 and applies
 *   the shift AGAIN: sigma_i = f(t_i), rounded to float32. (The double shift is
 *   diffusers' behaviour: the end point is the shifted sigma_min, then the whole
 *   range is shifted.)
 * FLUX (FluxPipeline; use_dynamic_shifting, base/max_image_seq_len 256/4096,
 *   base/max_shift 0.5/1.15): the pipeline passes sigmas = np.linspace(1, 1/N, N),
 *   which the scheduler rounds to float32 and maps, in float32 arithmetic, through
 *   time_shift(mu, s) = exp(mu) / (exp(mu) + (1/s - 1)), with
 *   mu = calculate_shift(image_seq_len) = m image_seq_len + b (float64),
 *   m = (1.15 - 0.5) / (4096 - 256), b = 0.5 - 256 m. image_seq_len is the number
 *   of packed 2x2 latent patches: (latent_h / 2) (latent_w / 2) (4096 at 1024 px).
 * Both: a final sigma 0 is appended (sigmas has N + 1 entries), and
 *   timesteps[i] = float32(sigmas[i] * 1000) (float32 multiply), diffusers'
 *   scheduler.timesteps.
 *
 * Every value here reproduces diffusers' float32/float64 operation order, so the
 * stored sigmas are bitwise diffusers' (they are float32 values held in doubles).
 *
 * How the models consume the timestep (this is where SD3 and FLUX differ):
 *   SD3:  transformer(timestep = timesteps[i]) — t in [0, 1000], fed to the sinusoidal
 *         embedding as is (rp_flow_sd3_model_t).
 *   FLUX: the pipeline passes timesteps[i] / 1000 (a float32 division, so NOT
 *         exactly sigma) and the transformer multiplies by 1000 itself before its
 *         embedding: t_embed = float32(float32(timesteps[i] / 1000) * 1000)
 *         (rp_flow_flux_model_t returns the [0, 1] value passed in). torch's CUDA
 *         kernel divides a tensor by a CPU scalar as a multiply by the float
 *         reciprocal, which can differ from the CPU division by an ulp — one of
 *         the hardware-dependent differences this tool exists to explain.
 *
 * Guidance: SD3 uses classifier-free guidance, one batched evaluation of
 * [uncond ("" prompt), cond] per step combined by rp_flow_cfg (default scale 7.0).
 * FLUX.1-dev has guidance distillation instead: one conditional evaluation per
 * step, with guidance = float32(g) (default 3.5) passed to the transformer, which
 * also multiplies it by 1000 before its own sinusoidal embedding; no CFG
 * combination (FluxPipeline's optional "true_cfg" uses the same rp_flow_cfg formula).
 *
 * Index convention: i = 0 .. steps-1 in SAMPLING order (sigmas descending), as
 * diffusers; step i moves x from sigmas[i] to sigmas[i + 1]. */
#ifndef REPRO_FLOW_H
#define REPRO_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "../error.h"

#define RP_FLOW_TRAIN_STEPS 1000   /* num_train_timesteps: timestep = sigma * 1000 */
#define RP_FLOW_SD3_SHIFT 3.0      /* SD3 / SD3.5 scheduler_config "shift" */
#define RP_FLOW_SD3_CFG 7.0        /* StableDiffusion3Pipeline guidance_scale default */
#define RP_FLOW_FLUX_GUIDANCE 3.5  /* FluxPipeline guidance_scale default (embedded) */
#define RP_FLOW_BASE_SEQ_LEN 256   /* calculate_shift defaults (FLUX scheduler_config) */
#define RP_FLOW_MAX_SEQ_LEN 4096
#define RP_FLOW_BASE_SHIFT 0.5
#define RP_FLOW_MAX_SHIFT 1.15
#define RP_FLOW_MAX_STEPS 100000   /* sanity bound on N (allocation size) */

/* ---- closed forms (float64; what the schedules approximate to float32) ---------- */

/* Static shift: shift s / (1 + (shift - 1) s). */
double rp_flow_shift_static(double shift, double s);
/* Dynamic shift (diffusers time_shift with exponent 1): exp(mu) / (exp(mu) + (1/s - 1)).
 * s must be in (0, 1]. */
double rp_flow_time_shift(double mu, double s);
/* diffusers calculate_shift: m = (max_shift - base_shift) / (max_seq_len - base_seq_len),
 * b = base_shift - m base_seq_len, mu = image_seq_len m + b, in that float64 order. */
double rp_flow_calculate_shift(double image_seq_len, double base_seq_len, double max_seq_len,
                               double base_shift, double max_shift);
/* mu of FluxPipeline: calculate_shift with the defaults above. */
double rp_flow_flux_mu(int64_t image_seq_len);
/* FLUX's image_seq_len for a latent of (latent_h, latent_w) pixels (16 channels),
 * packed into 2x2 patches: (latent_h / 2) * (latent_w / 2). Both must be even. */
int64_t rp_flow_flux_seq_len(int latent_h, int latent_w);

/* ---- schedules --------------------------------------------------------------------- */

typedef struct rp_flow_schedule {
    int steps;          /* N model evaluations */
    double *sigmas;     /* (steps + 1) descending, sigmas[steps] = 0; float32 values */
    double *timesteps;  /* (steps) float32(sigmas[i] * 1000): diffusers' scheduler.timesteps */
    double shift;       /* static shift (SD3); 0 when dynamic */
    double mu;          /* dynamic-shift mu (FLUX); 0 when static */
    int dynamic;        /* 1: FLUX time_shift with mu; 0: SD3 static shift */
} rp_flow_schedule;

/* Constructors: on error *s is left zeroed (nothing to free) and err says why.
 *
 * SD3: FlowMatchEulerDiscreteScheduler(shift = shift).set_timesteps(steps) (see the
 * header comment). shift must be > 0 (SD3 uses RP_FLOW_SD3_SHIFT); steps in
 * 1..RP_FLOW_MAX_STEPS. Free with rp_flow_schedule_free. */
rp_status rp_flow_schedule_sd3(rp_flow_schedule *s, int steps, double shift, rp_error *err);

/* FLUX: set_timesteps(sigmas = linspace(1, 1/steps, steps), mu = rp_flow_flux_mu(image_seq_len))
 * with dynamic shifting. image_seq_len >= 1; steps in 1..RP_FLOW_MAX_STEPS. */
rp_status rp_flow_schedule_flux(rp_flow_schedule *s, int steps, int64_t image_seq_len, rp_error *err);

/* FLUX.1-schnell: its scheduler has shift 1 and no dynamic shifting, so the pipeline's
 * sigmas = linspace(1, 1/steps, steps) are used as they are, rounded to float32
 * (shift * s / (1 + (shift - 1) s) is s exactly for shift 1). shift = 1, mu = 0,
 * dynamic = 0. FluxPipeline's schnell example runs 4 steps. */
rp_status rp_flow_schedule_linear(rp_flow_schedule *s, int steps, rp_error *err);

/* The same with an explicit mu (a FLUX variant with other calculate_shift constants). */
rp_status rp_flow_schedule_dynamic(rp_flow_schedule *s, int steps, double mu, rp_error *err);

void rp_flow_schedule_free(rp_flow_schedule *s);

/* The timestep SD3's transformer takes at step i: timesteps[i], in [0, 1000]. */
float rp_flow_sd3_model_t(const rp_flow_schedule *s, int i);
/* The timestep FluxPipeline passes to FLUX's transformer at step i:
 * float32(timesteps[i]) / 1000 in float32, in [0, 1] (the model multiplies by 1000). */
float rp_flow_flux_model_t(const rp_flow_schedule *s, int i);

/* ---- single steps over flat arrays of n floats (outputs may alias inputs) ---------
 * float32 arithmetic in diffusers' operation order, so a trajectory matches a
 * float32 diffusers run bit for bit given the same velocities. */

/* Euler step of FlowMatchEulerDiscreteScheduler.step:
 * dt = float32(sigma_next) - float32(sigma) (rounded to float32),
 * x_next = x + dt * v (two float32 roundings: product, sum).
 * sigma, sigma_next must be float32 values (schedule entries are). */
void rp_flow_euler_step(float *x_next, const float *x, const float *v, double sigma, double sigma_next,
                        size_t n);

/* Classifier-free guidance: v = v_u + s (v_c - v_u), float32, as both pipelines
 * write it (difference, times float32(s), plus v_u: three roundings). v may alias
 * v_u or v_c. */
void rp_flow_cfg(float *v, const float *v_uncond, const float *v_cond, double scale, size_t n);

/* ---- the sampling loop ------------------------------------------------------------ */

/* What the Euler loop sees of the model: eval(x (n) at sigmas[i]) -> v (n), the
 * (already guided) velocity. t is timesteps[i]; the model wrapper turns it into
 * its own input (rp_flow_sd3_model_t / rp_flow_flux_model_t). */
typedef struct rp_flow_denoiser {
    void *self;
    rp_status (*eval)(void *self, const float *x, int i, double sigma, double t, float *v, rp_error *err);
    /* The latents the free loop carries into the next step, or NULL: called on x (n) after
     * every update, before x is stored in the trajectory and fed to the next step (where a
     * pipeline would cast the scheduler's output back to its latents' dtype). Teacher
     * forcing, which starts each step from a given latent, never calls it. */
    void (*carry)(void *self, float *x, size_t n);
} rp_flow_denoiser;

/* Runs the Euler sampler over s: x (n) holds the noise (x at sigma = sigmas[0], which
 * is 1 for SD3's shift 3 and for FLUX) on entry and the final latents (sigma = 0) on return. trajectory (steps + 1, n)
 * or NULL receives x before each step and the final x. Deterministic (no noise). */
rp_status rp_flow_sample_euler(const rp_flow_schedule *s, const rp_flow_denoiser *d, float *x, size_t n,
                               float *trajectory, rp_error *err);

#endif
