/* pipeline.h — from a generation request to latents and RGB images.
 *
 * A request is a list of items, each (seed, class or prompt, global index):
 * the global index is the item's position in the whole run, so its noise
 * (initial: rp_randn(seed, index, RP_STREAM_INIT_NOISE); ancestral step k:
 * stream RP_STREAM_STEP_NOISE_BASE + k) does not depend on how items are
 * batched or spread over ranks.
 *
 * Two paths, by the model's family:
 *   DiT (class-conditional, VP diffusion): samplers.h over DiT's 1000-step schedule.
 *   SD3 / FLUX (text-conditional, flow matching): prompts encoded once by the text
 *     encoder preset matching the model (rp_gen_default_text_encoder), initial noise
 *     (16, h, w) per item, Euler over flow.h's schedules: SD3 with the static shift
 *     3.0 and classifier-free guidance, FLUX-dev with the resolution-dependent shift
 *     mu and embedded guidance, FLUX-schnell (no guidance embedder) unshifted. The text
 *     states can come from a file instead (req->prompt_embeds, prompt_embeds.h).
 *     Parallel layouts plug in at the denoisers. */
#ifndef REPRO_PIPELINE_H
#define REPRO_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "ctx.h"
#include "error.h"
#include "gen.h"
#include "models/dit.h"
#include "models/family_ops.h"
#include "models/registry.h"
#include "samplers/flow.h"
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
    /* parallel layouts (ctx->par; NULL without): see "Parallel layouts" below */
    float *half;         /* (B, Cout, S, S) this rank's CFG segment's output */
    int *rows;           /* (2B) trace row map of a forward */
    float prev_t;        /* the previous evaluation's model timestep (timestep-skew) */
} rp_dit_denoiser;

rp_status rp_dit_denoiser_init(rp_dit_denoiser *d, const rp_dit *model, const rp_ctx *ctx, int B,
                               const int *y, double cfg, rp_error *err);
void rp_dit_denoiser_free(rp_dit_denoiser *d);
/* The sampler's view of it (self = d). */
rp_denoiser rp_dit_denoiser_as(rp_dit_denoiser *d);

/* ---- the SD3 / FLUX denoiser (flow matching) --------------------------------------------
 * rp_flow_sample_euler's model: x (B, C, h, w) at step i -> velocity (B, C, h, w), the
 * loop body of diffusers' pipelines:
 *   SD3 (StableDiffusion3Pipeline): cfg > 1 runs ONE forward of 2B items,
 *     [uncond x B; cond] (diffusers' torch.cat([negative, positive]) order, the
 *     negative being the "" prompt's encoding), all at t = timesteps[i] in [0, 1000],
 *     and combines them with rp_flow_cfg (v = v_u + cfg (v_c - v_u)); cfg <= 1 runs the
 *     B conditional items alone.
 *   FLUX (FluxPipeline, FLUX.1-dev): one forward of the B conditional items at
 *     t = rp_flow_flux_model_t(i) (timesteps[i] / 1000, the model multiplies by 1000)
 *     with embedded guidance float32(guidance) per item; no CFG.
 * Neither passes a text mask (diffusers' pipelines pass none: pad tokens are attended,
 * their context rows being the encoder's zeros).
 * Batching: joint (per_item 0, as diffusers) runs one forward over all Bm rows per
 * step; per item (per_item 1) runs one forward per item (of 2 rows under CFG), so no
 * GEMM mixes items and an item's bits cannot depend on the batch. That matters because
 * a BLAS may pick its kernel by the GEMM's M: OpenBLAS 0.3.21 (AVX-512 build) gives
 * rows whose bits depend on M for the small GEMMs whose rows are items (timestep and
 * modulation linears, M = B or 2B), so a joint batch of 4 differs from 4 lone runs in
 * the last bits (tests/cli/generate_batch.sh shows the GEMM and the latents). With
 * per_item the trace records item 0's forward only. */
typedef struct rp_flow_gen_denoiser {
    const rp_model *model;         /* a text-conditional family's (its ops: forward, model_t, guidance) */
    const rp_ctx *ctx;             /* ctx->trace advances one eval per denoiser call */
    const rp_flow_schedule *sched;
    int B, C, h, w;                /* items, latent channels (16), latent size */
    int L, Dctx, Dpool;            /* text tokens, context and pooled widths */
    double cfg;                    /* classifier-free guidance scale (SD3; <= 1: conditional only) */
    double guidance;               /* embedded guidance scale (FLUX) */
    int per_item;                  /* 1: one forward per item (batch-invariant bits) */
    /* scratch, sized for the batch by rp_flow_gen_denoiser_init */
    /* rows: joint [uncond x B;] cond x B, per item [uncond_b,] cond_b for b = 0.. (flow_slot) */
    float *xin;                    /* (Bm, C, h, w) model input (x twice under CFG) */
    float *out;                    /* (Bm, C, h, w) model output */
    float *t;                      /* (Bm) model timesteps */
    float *g;                      /* (Bm) embedded guidance (FLUX); NULL for CFG families (SD3) */
    float *context;                /* (Bm, L, Dctx) [uncond x B;] cond text states */
    float *pooled;                 /* (Bm, Dpool) */
    int n_evals;                   /* model evaluations so far */
    /* parallel layouts (ctx->par; NULL without): see "Parallel layouts" below */
    float *half;                   /* (B, C, h, w) this rank's CFG segment's outputs */
    int *rows;                     /* (Bm) trace row map of a forward */
    float prev_t;                  /* the previous evaluation's model timestep (timestep-skew) */
} rp_flow_gen_denoiser;

/* Copies the text conditioning into the denoiser's own batch:
 *   context (B, L, Dctx), pooled (B, Dpool)   each item's prompt encoding
 *   neg_context (L, Dctx), neg_pooled (Dpool)  the "" prompt's; required iff the family
 *                                              guides classifier-free (SD3) with cfg > 1
 * model is a loaded text-conditional model (family_ops.h; it outlives d). Bm = 2B under
 * classifier-free guidance with cfg > 1, else B. */
rp_status rp_flow_gen_denoiser_init(rp_flow_gen_denoiser *d, const rp_model *model, const rp_ctx *ctx,
                                    const rp_flow_schedule *sched, int B, int h, int w, int L, const float *context,
                                    const float *pooled, const float *neg_context, const float *neg_pooled,
                                    double cfg, double guidance, int per_item, rp_error *err);
void rp_flow_gen_denoiser_free(rp_flow_gen_denoiser *d);
/* The Euler loop's view of it (self = d). */
rp_flow_denoiser rp_flow_gen_denoiser_as(rp_flow_gen_denoiser *d);

/* ---- Parallel layouts ----------------------------------------------------------------
 * With ctx->par (engine/parallel/parallel.h) both denoisers
 *   - under CFG parallelism evaluate only their rank's segment of the guided batch (DiT:
 *     segment 0 = the conditional rows, 1 = the unconditional; SD3: 0 = unconditional,
 *     1 = conditional, diffusers' order) and allgather the two outputs after each
 *     evaluation, then combine exactly as a single rank does;
 *   - tell the parallel context, before each forward, which single-rank trace row each
 *     model row is (items at their positions in the whole run: par->item_first ..);
 *   - apply the timestep-skew fault (rp_par_timestep).
 * The items of a request are this rank's (dp.c picks them); sequence parallelism lives in
 * the models. Without ctx->par nothing here changes a bit. */

/* ---- requests ---------------------------------------------------------------------- */


typedef struct rp_gen_request {
    const char *model;        /* preset, e.g. "dit-tiny", "sd3-tiny", "flux-dev" */
    int depth;                /* > 0 overrides the preset depth (FLUX: double blocks) */
    int single_depth;         /* FLUX: > 0 single blocks kept; 0 = the registry's rule */
    const char *weights;      /* explicit checkpoint, or NULL: synthetic, cached */
    uint64_t weight_seed;     /* synthetic weights' seed (model and VAE) */
    int sharpen;              /* attention q/k/v weights x this (engine/sharpen.h); 0: off */
    const char *vae;          /* VAE preset, or NULL: rp_gen_default_vae(model) */
    const char *vae_weights;  /* explicit VAE checkpoint, or NULL: synthetic, cached */
    const char *text_encoder; /* SD3 / FLUX: encoder preset, or NULL: rp_gen_default_text_encoder */
    const char *te_weights;   /* explicit text-encoder checkpoint, or NULL: synthetic, cached */
    const char *prompt_embeds; /* SD3 / FLUX: precomputed conditioning (prompt_embeds.h) instead of
                                 the text encoder; items then carry no prompt, each its embed_row */
    const char *save_prompt_embeds; /* SD3 / FLUX: also write the encoder's conditioning of the
                                 items (rows in item order) there, in that format */
    rp_sampler_kind sampler;  /* DiT only (SD3 / FLUX: flow-matching Euler) */
    double eta;               /* DDIM / Euler ancestral */
    int steps;
    double cfg;               /* DiT / SD3 guidance scale; <= 1: conditional only. FLUX: must be <= 1 */
    double guidance;          /* FLUX embedded guidance (FluxPipeline's guidance_scale, 3.5 there) */
    int width, height;        /* SD3 / FLUX image size in pixels; 0 = the preset's native size */
    int per_item;             /* SD3 / FLUX: 1 = one transformer forward per item (see
                                 rp_flow_gen_denoiser: batch-invariant bits); 0 = joint */
    int n_items;
    const rp_gen_item *items; /* (n_items) */
    int decode;               /* 0: stop at latents (no VAE, no rgb) */
    /* ---- the classifier's hooks (harness/analysis/classify.h); all 0 / NULL in normal runs ---- */
    /* Teacher forcing: teacher (steps + 1, n_items, C, h, w) is a reference trajectory of
     * these items. Instead of one continuous run, each step k with teacher_steps[k] != 0
     * (every step when teacher_steps is NULL) starts from teacher[k]: res->trajectory[k + 1]
     * receives the state after that ONE step (its local error is then the distance to
     * teacher[k + 1]); a step not run gets teacher[k + 1] copied. res->trajectory[0] =
     * teacher[0], res->latents = the last row (see decode_teacher_final). Ancestral noise
     * is this request's own (keyed as usual), so a correct layout draws the reference's
     * noise. DPM-Solver++(2M) is multistep: a step k > 0 needs step k - 1 run too (its data
     * prediction), else RP_ERR_INVALID. One model evaluation per step run, in step order. */
    const float *teacher;
    const unsigned char *teacher_steps; /* (steps) or NULL */
    /* With teacher: res->latents = teacher's last row (the reference's final latents)
     * instead of the run's last row, decoded (with decode) like any run's final latents: the
     * images' teacher forcing, in the same run as the steps' and through the same decode. */
    int decode_teacher_final;
    /* With decode: the decoder's arithmetic when it is not ctx's (NULL: ctx). The images'
     * teacher forcing decodes with its reference's precision, attention, reduce_split and
     * threads, so its images are held bitwise whatever variant the case's transformer runs
     * (the threads are set for the decode and restored: rp_ctx_apply). Its par,
     * dev and trace must be ctx's (the layout's decode path). */
    const rp_ctx *decode_ctx;
    /* 1: one ulp added (nextafterf towards +inf) to the first value of every item's initial
     * noise — the "noise-ulp" rounding twin. */
    int perturb_noise;
} rp_gen_request;

/* "vae-tiny" for dit-tiny, "vae-digits" for dit-digits / sd3-digits, "vae-tiny-16" for
 * sd3-tiny / flux-tiny, "sd3-vae" for sd3-medium, "flux-vae" for flux-dev, "sd-vae" for the
 * other (DiT) presets. */
const char *rp_gen_default_vae(const char *model);

/* "te-tiny" for sd3-tiny / flux-tiny, "te-digits" for sd3-digits, "te-sd3" for sd3-medium,
 * "te-flux" for flux-dev; NULL for models that take no prompt. */
const char *rp_gen_default_text_encoder(const char *model);

/* rp_gen_item and rp_gen_result: engine/gen.h */

/* Checks a request without loading or computing anything: the model and its depth
 * options, steps / guidance / items, and for SD3 / FLUX the image size against the VAE
 * factor and the model, the VAE's latent channels and the text encoder's widths. These
 * are rp_generate's first checks; a CLI calls it to report bad options before any work. */
rp_status rp_gen_validate(const rp_gen_request *req, rp_error *err);

/* Validates the request, resolves and loads the weights, samples and decodes.
 * On failure err names the bad field or file and *res is left empty.
 * An item's noise and text states depend only on its own (seed, global index, prompt);
 * its latents too, bit for bit, with per_item (SD3 / FLUX); with joint batches they
 * can differ from a lone run in the last bits through the BLAS's M-dependent kernels
 * (see rp_flow_gen_denoiser; tests/cli/generate_batch.sh measures both). */
rp_status rp_generate(const rp_gen_request *req, const rp_ctx *ctx, rp_gen_result *res,
                      rp_error *err);

#endif
