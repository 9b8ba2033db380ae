/* family_ops.h — a model family is one ops table (in the spirit of stable-diffusion.cpp's
 * runners and ggml's backend structs): its presets, how it takes its depth options, its
 * parameter specs (synthetic weights, the cache), its shape facts, loading and one forward,
 * its flow schedule, and the data the case rules read (what conditions it, how it guides,
 * what sequence parallelism splits). Code outside the model asks the table, looked up by
 * rp_family or by preset name; no caller needs a switch over the families.
 *
 * The denoisers' ops live at the end of their model files (dit.c, sd3.c, flux.c), the
 * VAE's and text encoder's (presets and specs only) in family_ops.c with the table. A new
 * family is its model file with its ops, one row of the table and its rp_family value
 * (engine/family.h). */
#ifndef REPRO_FAMILY_OPS_H
#define REPRO_FAMILY_OPS_H

#include <stdint.h>

#include "../ctx.h"
#include "../error.h"
#include "../family.h"
#include "../params.h"
#include "../safetensors.h"
#include "../samplers/flow.h"

/* What conditions a denoiser. */
typedef enum rp_conditioning {
    RP_COND_CLASS = 0,   /* class ids (DiT): VP diffusion, samplers.h */
    RP_COND_TEXT         /* text encoder states (SD3, FLUX): flow matching, Euler */
} rp_conditioning;

/* How a denoiser is guided. */
typedef enum rp_guidance_kind {
    RP_GUIDE_CFG = 0,    /* classifier-free: a second, unconditional pass (cfg > 1) */
    RP_GUIDE_EMBEDDED    /* a guidance scale embedded in the model (FLUX-dev); cfg must be <= 1 */
} rp_guidance_kind;

/* The shape facts of one preset with its depth options applied: what the pipeline, the
 * case rules and the CLI need without loading weights. */
typedef struct rp_model_facts {
    int heads;
    int blocks;             /* transformer blocks a pipeline splits (FLUX: double + single) */
    int n_double, n_single; /* FLUX's two block kinds; 0 for one-kind families */
    int patch;              /* tokens are patch x patch latent pixels (FLUX: its 2x2 packing) */
    int latent_c;           /* latent channels in (and, flow models, out) */
    int out_c;              /* output channels of a forward (DiT with learned sigma: 2 latent_c) */
    int native;             /* latent side of the preset's nominal size */
    int num_classes;        /* class-conditional: the classes (the null class is num_classes) */
    int pos_max;            /* position table side in patches (SD3); 0: no bound (RoPE, DiT) */
    int Dctx, Dpool;        /* text-conditional: context and pooled widths */
    int guidance_embeds;    /* embedded guidance: the model has a guidance embedder
                               (FLUX-dev 1, FLUX-schnell 0) */
} rp_model_facts;

/* One forward's inputs, whichever family (the fields a family does not take are 0/NULL). */
typedef struct rp_model_input {
    int B;                   /* items (rows) */
    int h, w;                /* latent size */
    const float *x;          /* (B, latent_c, h, w) */
    const float *t;          /* (B) the model's timestep (its own scale: rp_family_ops.model_t) */
    const int *y;            /* class-conditional: (B) class ids */
    const float *context;    /* text-conditional: (B, L, Dctx) */
    int L;                   /* text tokens */
    const float *pooled;     /* (B, Dpool) */
    const float *guidance;   /* embedded guidance: (B), or NULL without a guidance embedder */
} rp_model_input;

/* A loaded model of some family. */
typedef struct rp_model {
    const struct rp_family_ops *ops;
    void *impl;              /* rp_dit *, rp_sd3 *, rp_flux * */
    rp_model_facts facts;    /* of the loaded configuration */
} rp_model;

typedef struct rp_family_ops {
    rp_family family;
    const char *label;       /* "DiT", "SD3", "FLUX": the family in messages */
    const char *presets;     /* space-separated preset names (registry.h lists them all) */
    int denoiser;            /* 1: samples latents (the hooks below are set); 0: VAE, text encoder */
    rp_conditioning cond;
    rp_guidance_kind guidance;
    int takes_depth;         /* --depth applies (denoisers) */
    int takes_single_depth;  /* --single-depth applies (FLUX's single-stream blocks) */
    int splits_text;         /* sequence parallelism splits the text tokens too (FLUX's joint
                                sequence): the text length must divide ulysses x ring */
    /* Appends the parameter specs of preset model with (depth, single_depth) applied (both
     * checked >= 0 and allowed by the flags above by the registry). */
    rp_status (*param_specs)(const char *model, int depth, int single_depth, rp_param_list *l, rp_error *err);
    /* ---- denoisers only ---- */
    /* The facts of model with (depth, single_depth) applied (0: the preset's). */
    rp_status (*facts)(const char *model, int depth, int single_depth, rp_model_facts *f, rp_error *err);
    /* Loads model with (depth, single_depth) from f (the model copies its parameters). */
    rp_status (*load)(const char *model, int depth, int single_depth, const rp_st_file *f, rp_model *out,
                      rp_error *err);
    /* One forward: in -> out (B, out_c, h, w). */
    rp_status (*forward)(const rp_model *m, const rp_ctx *ctx, float *out, const rp_model_input *in,
                         rp_error *err);
    void (*free)(rp_model *m);
    /* Multiply-accumulates of one forward for one image at latent h x w with L text tokens. */
    double (*macs)(const rp_model *m, int L, int h, int w);
    /* ---- text-conditional (flow-matching) denoisers ---- */
    /* The sampling schedule of steps at latent h x w (f: the model's facts). */
    rp_status (*schedule)(rp_flow_schedule *s, int steps, int h, int w, const rp_model_facts *f, rp_error *err);
    /* The model's timestep input at step i of s. */
    float (*model_t)(const rp_flow_schedule *s, int i);
} rp_family_ops;

/* The ops of family f (every rp_family has a row). */
const rp_family_ops *rp_family_ops_of(rp_family f);
/* The ops of preset model's family; RP_ERR_NOT_FOUND with the list of known presets. */
rp_status rp_model_ops(const char *model, const rp_family_ops **out, rp_error *err);
/* The table's rows in order (i in 0..rp_family_count()-1): for listings. */
int rp_family_count(void);
const rp_family_ops *rp_family_at(int i);

#endif
