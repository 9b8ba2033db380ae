/* samplers.h — the DiT discrete-time schedule and samplers as small free functions.
 *
 * Schedule (facebookresearch/DiT diffusion/gaussian_diffusion.py + respace.py):
 * linear betas over 1000 training steps, np.linspace(1e-4, 0.02, 1000) in
 * float64; alphas_cumprod = cumprod(1 - beta). Respaced to N steps as
 * space_timesteps(1000, "N"): frac_stride = 999 / (N - 1) (1 when N = 1), kept
 * training timesteps round(k * frac_stride), k = 0 .. N-1, with Python's
 * round-half-to-even applied to a running sum (DiT adds frac_stride each time;
 * see rp_space_timesteps). The respaced betas are 1 - abar[t_k] / abar[t_{k-1}]
 * and the respaced abar is recomputed as their cumprod, as SpacedDiffusion
 * does. The model is always fed the ORIGINAL training timestep t_k.
 *
 * Index convention: schedule index i = 0 .. steps-1 runs in ascending time
 * (i = 0 is the least noisy); sampling visits i = steps-1 down to 0. "Loop step"
 * k = steps-1-i counts model evaluations from 0 and keys the ancestral noise.
 *
 * Every latent handed to a denoiser and stored in a trajectory is in the VP
 * ("model-space") parametrisation x_t = sqrt(abar) x0 + sqrt(1 - abar) eps, for
 * every sampler, so trajectories of different samplers are comparable and all
 * start at the same x_T = noise. Euler ancestral works internally in the VE
 * (k-diffusion) parametrisation x_sigma = x_t / sqrt(abar) and converts. */
#ifndef REPRO_SAMPLERS_H
#define REPRO_SAMPLERS_H

#include <stddef.h>

#include "../error.h"

#define RP_DIT_TRAIN_STEPS 1000
#define RP_DIT_BETA_START 1e-4
#define RP_DIT_BETA_END 0.02

typedef enum rp_sampler_kind {
    RP_SAMPLER_DDIM = 0,     /* eta = 0 deterministic; eta > 0 stochastic */
    RP_SAMPLER_DDPM,         /* ancestral, learned-range variance when the model has it */
    RP_SAMPLER_DPMPP_2M,     /* DPM-Solver++(2M), data prediction, multistep */
    RP_SAMPLER_EULER_A       /* Euler ancestral (k-diffusion) over sigma = sqrt((1-a)/a) */
} rp_sampler_kind;

/* "ddim" | "ddpm" | "dpmpp-2m" | "euler-a"; RP_ERR_INVALID listing them otherwise. */
rp_status rp_sampler_parse(const char *s, rp_sampler_kind *out, rp_error *err);
const char *rp_sampler_name(rp_sampler_kind k);
/* The eta a sampler uses when none is given: 0 for DDIM, 1 for Euler ancestral,
 * 0 (unused) for the others. */
double rp_sampler_default_eta(rp_sampler_kind k);
/* Whether the sampler takes an eta at all (DDIM, Euler ancestral). */
int rp_sampler_uses_eta(rp_sampler_kind k);

/* ---- schedule ----------------------------------------------------------------- */

/* betas (T) = np.linspace(start, end, T) in float64, bit for bit: i * step + start
 * with step = (end - start) / (T - 1), and the last value set to end exactly. */
void rp_betas_linear(double *betas, int T, double start, double end);

/* Kept training timesteps of space_timesteps(T, "N"), ascending, into out (N).
 * RP_ERR_INVALID if N < 1 or N > T. */
rp_status rp_space_timesteps(int T, int N, int *out, rp_error *err);

/* The respaced schedule; index i = 0 .. steps-1 in *ascending* time. */
typedef struct rp_schedule {
    int steps;
    double *timestep;       /* (steps) training timestep fed to the model (an integer for DiT) */
    double *alphas_cumprod; /* (steps) respaced abar_i = cumprod(1 - betas)[i] */
    double *betas;          /* (steps) respaced beta_i = 1 - abar_train[t_i] / abar_train[t_{i-1}] */
} rp_schedule;

/* DiT's linear 1000-step schedule respaced to `steps`. Free with rp_schedule_free. */
rp_status rp_schedule_dit(rp_schedule *s, int steps, rp_error *err);
void rp_schedule_free(rp_schedule *s);

/* abar of the step after i in sampling order: abar_{i-1}, or 1 (clean data) at i = 0. */
double rp_schedule_abar_prev(const rp_schedule *s, int i);
/* VE noise level of step i: sigma_i = sqrt((1 - abar_i) / abar_i). */
double rp_schedule_sigma(const rp_schedule *s, int i);
/* log of DiT's posterior_variance clipped at index 0 (which would be log 0):
 * log(beta_i (1 - abar_{i-1}) / (1 - abar_i)) for i >= 1, the i = 1 value at i = 0.
 * Needs steps >= 2 (DiT leaves it empty for one step; the last step adds no noise). */
double rp_schedule_posterior_logvar_clipped(const rp_schedule *s, int i);

/* ---- single steps over flat arrays of n floats ---------------------------------
 * All arithmetic is per element in double (inputs and outputs are float), so a
 * step adds one float rounding per output. Outputs may alias x. */

/* DDIM (Song et al.; DiT ddim_sample, clip_denoised False), eps-prediction:
 * x0 = sqrt(1/abar) x - sqrt(1/abar - 1) eps,
 * sigma = eta sqrt((1 - abar_prev) / (1 - abar)) sqrt(1 - abar / abar_prev),
 * x_prev = sqrt(abar_prev) x0 + sqrt(1 - abar_prev - sigma^2) eps + sigma noise.
 * noise (n) is only read when sigma > 0 (may be NULL otherwise).
 * (DiT recomputes eps from x0; with no clipping that is the model's eps up to
 * rounding, so the model's eps is used directly.) */
void rp_ddim_step(float *x_prev, const float *x, const float *eps, double abar, double abar_prev,
                  double eta, const float *noise, size_t n);
/* The sigma of that DDIM step (0 when eta = 0 or abar_prev = 1). */
double rp_ddim_sigma(double abar, double abar_prev, double eta);

/* DDPM ancestral step at schedule index i (DiT p_sample, clip_denoised False):
 * mean = coef1_i x0 + coef2_i x with the posterior coefficients of the respaced
 * schedule; var_v (n) is the model's learned-range output in [-1, 1]:
 * log var = frac log(beta_i) + (1 - frac) posterior_logvar_clipped_i, frac = (v+1)/2;
 * var_v NULL = DiT's FIXED_SMALL (posterior_logvar_clipped_i).
 * x_prev = mean + exp(log var / 2) noise for i > 0; x_prev = mean at i = 0, where
 * noise and var_v are not read (may be NULL). */
void rp_ddpm_step(float *x_prev, const float *x, const float *eps, const float *var_v,
                  const rp_schedule *s, int i, const float *noise, size_t n);

/* DPM-Solver++(2M) (Lu et al. 2022, alg. 2; k-diffusion sample_dpmpp_2m) in the
 * VP parametrisation, lambda = log(alpha / sigma), alpha = sqrt(abar),
 * sigma = sqrt(1 - abar). Moves x from abar to abar_next given the data
 * prediction x0 (n) at abar:
 *   h = lambda_next - lambda,
 *   D = x0                                          (x0_last NULL: first order)
 *   D = (1 + 1/(2r)) x0 - 1/(2r) x0_last, r = (lambda - lambda_last) / h,
 *   x_next = (sigma_next / sigma) x - alpha_next expm1(-h) D.
 * x0_last (n) is the data prediction of the previous evaluation, at abar_last.
 * abar_next = 1 (clean data) is the final step: x_next = x0, first order (the
 * limit of the formula; k-diffusion's sigmas[i+1] == 0 branch). */
void rp_dpmpp_2m_step(float *x_next, const float *x, const float *x0, const float *x0_last,
                      double abar_last, double abar, double abar_next, size_t n);

/* x0 (n) = (x - sqrt(1 - abar) eps) / sqrt(abar), DiT's _predict_xstart_from_eps
 * (sqrt(1/abar) x - sqrt(1/abar - 1) eps). x0 may alias x or eps. */
void rp_predict_x0(float *x0, const float *x, const float *eps, double abar, size_t n);

/* k-diffusion get_ancestral_step: splits the move sigma_from -> sigma_to into a
 * deterministic part down to sigma_down and fresh noise of std sigma_up, with
 * sigma_down^2 + sigma_up^2 = sigma_to^2 and
 * sigma_up = min(sigma_to, eta sqrt(sigma_to^2 (sigma_from^2 - sigma_to^2) / sigma_from^2)).
 * eta = 0 gives (sigma_to, 0). */
void rp_ancestral_sigmas(double sigma_from, double sigma_to, double eta, double *sigma_down,
                         double *sigma_up);

/* Euler ancestral step in VE space (x = x_sigma = x0 + sigma n): with the eps
 * model, k-diffusion's d = (x - denoised) / sigma is eps, so
 * x_next = x + eps (sigma_down - sigma) [+ sigma_up noise when sigma_next > 0].
 * noise (n) is read only when sigma_next > 0 and sigma_up > 0. */
void rp_euler_a_step(float *x_next, const float *x, const float *eps, double sigma,
                     double sigma_next, double eta, const float *noise, size_t n);

/* ---- the sampling loop ------------------------------------------------------------ */

/* What a sampler sees of the model: a guided eps-prediction denoiser over a fixed
 * batch. eval: x (n) VP latents at schedule index i (training timestep t) ->
 * eps (n) and, when has_var and var is non-NULL, the learned-range variance
 * channels (n). One call = one model evaluation (with CFG, one batched forward). */
typedef struct rp_denoiser {
    void *self;
    int has_var;
    rp_status (*eval)(void *self, const float *x, int i, double t, float *eps, float *var,
                      rp_error *err);
    /* The latents rp_sample's loop carries into the next step, or NULL: called on x (n)
     * after every step, before x is stored in the trajectory and fed to the next step.
     * Teacher forcing (a step started from a given latent) never calls it. */
    void (*carry)(void *self, float *x, size_t n);
} rp_denoiser;

/* Source of ancestral noise: fill(self, k, out) writes the standard-normal noise
 * (n) of loop step k (layout-independent: the pipeline keys it per item). */
typedef struct rp_noise_src {
    void *self;
    rp_status (*fill)(void *self, int k, float *out, rp_error *err);
} rp_noise_src;

typedef struct rp_sampler_cfg {
    rp_sampler_kind kind;
    double eta;    /* DDIM and Euler ancestral; ignored otherwise */
} rp_sampler_cfg;

/* Runs the whole sampler over schedule s: x (n) holds x_T (VP) on entry and the
 * final latents on return. trajectory (steps + 1, n) or NULL receives x before
 * each step and the final x (all VP). timesteps (steps) or NULL receives the
 * training timestep of each evaluation in sampling order. noise may be NULL
 * only for samplers that draw none (DDIM eta 0, DPM++2M); otherwise
 * RP_ERR_INVALID. */
rp_status rp_sample(const rp_sampler_cfg *cfg, const rp_schedule *s, const rp_denoiser *d,
                    const rp_noise_src *noise, float *x, size_t n, float *trajectory,
                    double *timesteps, rp_error *err);

/* One step at a time (rp_sample's loop body; the classifier's teacher forcing restarts
 * it from given latents). The state holds the step's scratch and what a sampler
 * carries between steps: DPM-Solver++(2M)'s previous data prediction (have_last),
 * Euler ancestral's VE state xk. */
typedef struct rp_sampler_state {
    size_t n;
    float *eps, *var, *z;  /* (n) each: model output, DDPM variance, ancestral noise */
    float *x0, *x0_last;   /* (n) DPM-Solver++(2M) data predictions */
    float *xk, *xin;       /* (n) Euler ancestral: VE state and the model's VP input */
    int have_last;         /* DPM-Solver++(2M): x0_last belongs to the previous step */
    double abar_last;
} rp_sampler_state;

/* Allocates the buffers cfg needs for n floats; RP_ERR_NOMEM on failure. */
rp_status rp_sampler_state_init(rp_sampler_state *ss, const rp_sampler_cfg *cfg, const rp_denoiser *d, size_t n,
                                rp_error *err);
void rp_sampler_state_free(rp_sampler_state *ss);

/* Euler ancestral: sets the VE state from the VP latent x (n) at loop step k,
 * xk = x sqrt(1 + sigma^2). A no-op for the other samplers. */
void rp_sampler_state_restart(rp_sampler_state *ss, const rp_sampler_cfg *cfg, const rp_schedule *s, int k,
                              const float *x);

/* Loop step k (model timestep index steps - 1 - k): x (n, VP) in, x after the step out.
 * noise as for rp_sample (already checked by the caller). */
rp_status rp_sampler_step(const rp_sampler_cfg *cfg, const rp_schedule *s, const rp_denoiser *d,
                          const rp_noise_src *noise, int k, float *x, rp_sampler_state *ss, rp_error *err);

/* Whether (kind, eta) draws ancestral noise at all. */
int rp_sampler_is_stochastic(const rp_sampler_cfg *cfg);


#endif
