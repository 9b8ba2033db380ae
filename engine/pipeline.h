/* pipeline.h — from a generation request to latents and RGB images.
 *
 * A request is a list of items, each (seed, class or prompt, global index):
 * the global index is the item's position in the whole run, so its noise
 * (initial: rp_randn(seed, index, RP_STREAM_INIT_NOISE); ancestral step k:
 * stream RP_STREAM_STEP_NOISE_BASE + k) does not depend on how items are
 * batched or spread over ranks. Only the DiT family exists today; the
 * family/prompt fields are where SD3 / FLUX text models and parallel layouts
 * plug in later. */
#ifndef REPRO_PIPELINE_H
#define REPRO_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "ctx.h"
#include "error.h"
#include "models/dit.h"
#include "samplers/samplers.h"

/* ---- the DiT denoiser ---------------------------------------------------------------
 * Classifier-free guidance as DiT's forward_with_cfg, but on all Cin eps
 * channels: eps = eps_u + cfg (eps_c - eps_u). DiT's official sample.py guides
 * only the first 3 of 4 channels "for exact reproducibility" of its paper
 * numbers (a quirk of the released code); guiding all channels is the standard
 * CFG every other pipeline uses, and what we document and test against.
 * cfg <= 1 runs the conditional pass alone (cfg == 1 is the same result, and
 * cfg < 1 guidance towards the unconditional is not offered). The
 * unconditional pass uses the null class num_classes. The learned-range
 * variance channels come from the conditional half. */
typedef struct rp_dit_denoiser {
    const rp_dit *model;
    const rp_ctx *ctx;   /* ctx->trace advances one eval per denoiser call */
    int B;               /* items in the batch */
    const int *y;        /* (B) class ids */
    double cfg;
    /* scratch, sized for the batch by rp_dit_denoiser_init */
    float *xin;          /* (2B, Cin, S, S) model input (x twice under CFG) */
    float *out;          /* (2B, Cout, S, S) model output */
    float *t;            /* (2B) timesteps */
    int *yy;             /* (2B) classes: y then the null class */
    int n_evals;         /* model evaluations so far */
} rp_dit_denoiser;

rp_status rp_dit_denoiser_init(rp_dit_denoiser *d, const rp_dit *model, const rp_ctx *ctx, int B,
                               const int *y, double cfg, rp_error *err);
void rp_dit_denoiser_free(rp_dit_denoiser *d);
/* The sampler's view of it (self = d). */
rp_denoiser rp_dit_denoiser_as(rp_dit_denoiser *d);

/* ---- requests ---------------------------------------------------------------------- */

typedef struct rp_gen_item {
    uint64_t seed;
    uint64_t global_index;  /* position in the whole run: keys the item's noise */
    int class_id;           /* DiT: ImageNet class (0 .. num_classes-1) */
    const char *prompt;     /* text families (not yet); NULL for DiT */
} rp_gen_item;

typedef struct rp_gen_request {
    const char *model;        /* preset, e.g. "dit-tiny" */
    int depth;                /* > 0 overrides the preset depth */
    const char *weights;      /* explicit checkpoint, or NULL: synthetic, cached */
    uint64_t weight_seed;     /* synthetic weights' seed (model and VAE) */
    const char *vae;          /* VAE preset, or NULL: rp_gen_default_vae(model) */
    const char *vae_weights;  /* explicit VAE checkpoint, or NULL: synthetic, cached */
    rp_sampler_kind sampler;
    double eta;               /* DDIM / Euler ancestral */
    int steps;
    double cfg;               /* guidance scale; <= 1: conditional only */
    int n_items;
    const rp_gen_item *items; /* (n_items) */
    int decode;               /* 0: stop at latents (no VAE, no rgb) */
} rp_gen_request;

/* "vae-tiny" for dit-tiny, "sd-vae" for the real-shape presets. */
const char *rp_gen_default_vae(const char *model);

typedef struct rp_gen_result {
    int B, C, S;             /* items, latent channels, latent side */
    int steps;
    float *noise;            /* (B, C, S, S) x_T */
    float *latents;          /* (B, C, S, S) final */
    float *trajectory;       /* (steps + 1, B, C, S, S) VP latents before each step, then final */
    double *timesteps;       /* (steps) training timestep of each evaluation, sampling order */
    double *alphas_cumprod;  /* (steps) abar of each evaluation, sampling order */
    int H, W;                /* image size (0 when not decoded) */
    uint8_t *rgb;            /* (B, H, W, 3) or NULL */
    char weights_path[4096];
    char vae_name[32];
    char vae_weights_path[4096];
    int n_evals;             /* model evaluations (forwards of up to 2B items) */
    double sample_seconds, decode_seconds;
} rp_gen_result;

void rp_gen_result_free(rp_gen_result *r);

/* Validates the request, resolves and loads the weights, samples and decodes.
 * On failure err names the bad field or file and *res is left empty. */
rp_status rp_generate(const rp_gen_request *req, const rp_ctx *ctx, rp_gen_result *res,
                      rp_error *err);

#endif
