/* gen.h — what a generation is about and what it gives back: the items of a request and
 * the result (latents, trajectory, images). Plain data, below the pipeline (pipeline.h runs
 * it) and the parallel layer (parallel.h spreads items over ranks and gathers results), so
 * neither depends on the other for its types. */
#ifndef REPRO_GEN_H
#define REPRO_GEN_H

#include <stdint.h>

#include "family.h"

typedef struct rp_gen_item {
    uint64_t seed;
    uint64_t global_index;  /* position in the whole run: keys the item's noise */
    int class_id;           /* DiT: ImageNet class (0 .. num_classes-1); unused by SD3/FLUX */
    const char *prompt;     /* SD3 / FLUX: the prompt; NULL or "" = unconditional. NULL for DiT */
    int embed_row;          /* with rp_gen_request.prompt_embeds: the file's row for this item */
} rp_gen_item;

typedef struct rp_gen_result {
    rp_family family;
    int B, C;                /* items, latent channels */
    int h, w;                /* latent height, width */
    int S;                   /* latent side when h == w (always for DiT), else 0 */
    int steps;
    float *noise;            /* (B, C, h, w) x_T / x at sigma_0 */
    float *latents;          /* (B, C, h, w) final */
    float *trajectory;       /* (steps + 1, B, C, h, w) latents before each step, then final
                                (DiT: VP latents; SD3 / FLUX: the flow state x_sigma) */
    float *teacher_input;    /* (steps, B, C, h, w) teacher forcing: the latents each step that
                                ran was started from, as the loop took them (a step not run:
                                NaN); NULL in a free run. The classifier holds each row to the
                                reference's (what the run was fed, not only what it returned) */
    double *timesteps;       /* (steps) DiT: training timestep; SD3 / FLUX: the scheduler's
                                timesteps (float32(sigma * 1000)); sampling order */
    double *alphas_cumprod;  /* (steps) DiT: abar of each evaluation; NULL for SD3 / FLUX */
    double *sigmas;          /* (steps + 1) SD3 / FLUX: flow sigmas, last 0; NULL for DiT */
    double *model_t;         /* (steps) SD3 / FLUX: the t the transformer received (SD3
                                timesteps[i]; FLUX timesteps[i] / 1000); NULL for DiT */
    double shift, mu;        /* SD3: static shift; FLUX: dynamic-shift mu (0 otherwise) */
    int H, W;                /* image size (0 when not decoded) */
    uint8_t *rgb;            /* (B, H, W, 3) or NULL */
    char weights_path[4096];
    char vae_name[32];
    char vae_weights_path[4096];
    char te_name[32];        /* SD3 / FLUX: the text encoder preset ("" for DiT) */
    char te_weights_path[4096];
    int n_evals;             /* model evaluations (forwards of up to 2B items) */
    double encode_seconds, sample_seconds, decode_seconds;
} rp_gen_result;

void rp_gen_result_free(rp_gen_result *r);

#endif
