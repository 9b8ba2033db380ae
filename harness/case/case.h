/* case.h — one case of a sweep: everything that decides its numbers.
 *
 * A case is the unit the runner schedules, the worker executes, the store keys
 * and the classifier compares. It is plain data: parsed from a matrix (YAML),
 * written as case.json next to its results, read back by `repro worker --job
 * case`. Its id is a hash of its normalised JSON (every field, defaults filled
 * in, fixed key order) plus the engine version, so the same config always maps
 * to the same result directory and nothing is computed twice.
 *
 * Rank layout (xDiT's order, innermost to outermost): tensor (always 1 here),
 * sequence = ulysses x ring (ulysses innermost), pipefusion, cfg, dp.
 * world = dp * cfg * pipefusion * ulysses * ring (patch parallel, the
 * DistriFusion-style strategy, replaces ulysses/ring: world = dp * cfg * patch). */
#ifndef REPRO_CASE_H
#define REPRO_CASE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "engine/error.h"
#include "engine/parallel/strategy.h"
#include "engine/strutil.h"

#define RP_CASE_MAX_ITEMS 64
#define RP_CASE_MAX_STR 256
#define RP_CASE_MAX_STAGES 16

typedef struct rp_case_item {
    uint64_t seed;
    int class_id;                       /* DiT; -1 unused */
    char prompt[RP_CASE_MAX_STR];       /* SD3 / FLUX; "" = unconditional */
} rp_case_item;

typedef struct rp_case {
    /* model */
    char model[64];           /* preset: dit-tiny, sd3-tiny, flux-tiny, dit-xl-2-256, ... */
    int depth;                /* 0 = preset */
    int single_depth;         /* FLUX single blocks; 0 = registry rule */
    char weights[RP_CASE_MAX_STR]; /* "" = synthetic from weight_seed */
    char prompt_embeds[RP_CASE_MAX_STR]; /* SD3 / FLUX: precomputed conditioning (engine/pipeline/prompt_embeds.h),
                                 item i uses row i; "" = the text encoder on the items' prompts */
    uint64_t weight_seed;
    int sharpen;              /* attention q/k/v weights x sharpen (engine/sharpen.h): the
                                 sensitivity of a trained model's sharp attention; 0 = off
                                 (not part of the id then) */
    char vae[64];             /* "" = the model's default */
    int width, height;        /* pixels; 0 = preset native */
    int vae_scale_factor;     /* 0 = from the VAE preset. Set explicitly only to reproduce
                                 configs that compute latent sizes with another factor
                                 (the diffusers 0.32 doubled-factor bug): validation then
                                 checks it against the VAE */
    /* sampling */
    int steps;
    char sampler[32];         /* DiT: ddim|ddpm|dpmpp-2m|euler-a; SD3/FLUX: euler */
    double eta;
    double cfg;               /* DiT/SD3 guidance scale */
    double guidance;          /* FLUX embedded guidance */
    /* numerics */
    char precision[16];       /* fp32 | bf16 (tf32, fp16: GPU) */
    char attention[16];       /* math | split | subquad | flash | auto */
    int attn_q_chunk, attn_kv_chunk;
    char device_profile[128]; /* auto attention's profile; "" = host */
    int threads;              /* GEMM threads per rank; 0 = runner's choice */
    char blas_core[32];       /* OPENBLAS_CORETYPE; "" = library's pick */
    int reduce_split;
    char mode[16];            /* deterministic | fast */
    char numerics[16];        /* default | invariant: layout-invariant arithmetic (engine/ctx.h
                                 rp_numerics): every exact layout bitwise the serial run */
    /* placement */
    char backend[16];         /* self | gloo | nccl */
    char device[64];          /* cpu | cuda | cuda:<name substring> | cuda:#<ordinal> */
    char gpu_mode[16];        /* the CUDA GEMMs: deterministic (fixed cuBLASLt algorithm, no
                                 split-K) | fast (the heuristic's pick per call, TF32 allowed);
                                 engine/cuda/cuda_gemm.h. Only meaningful with a cuda device */
    /* parallel degrees: deg has one member per strategy with a degree (strategy.h's table;
     * their case keys are the table's fields), also readable by those keys (c->cfg_parallel) */
    union {
        rp_par_degrees deg;
        struct { RP_PAR_KEYS(int) }; /* deg's members, in its order */
    };
    int num_pipeline_patch;   /* pipefusion: latent patches along height; 0 = pipefusion degree */
    int n_pipefusion_layers;  /* pipefusion: 0 = blocks split evenly over the stages, else = pipefusion */
    int pipefusion_layers[RP_CASE_MAX_STAGES]; /* blocks per stage, in order; must sum to the
                                 depth (FLUX: double + single blocks). JSON "pipefusion_layers": [..] */
    int warmup_steps;         /* pipefusion / patch: synchronous steps before stale activations */
    char batch_forward[16];   /* joint | per-item */
    /* testing only: fault injection (never in normal runs) */
    char inject[64];          /* "" or a name from rp_inject_names() */
    /* items */
    int n_items;
    rp_case_item items[RP_CASE_MAX_ITEMS];
    /* labels from the matrix, not part of the id */
    char expect[32];          /* "" or an expected verdict, e.g. CONFIG_ERROR */
    char name[128];           /* human-readable label */
} rp_case;

/* Defaults: dit-tiny, 10 steps, ddim, cfg 4, guidance 0, fp32, math, deterministic,
 * self, cpu, gpu_mode deterministic, all degrees 1, warmup 1, batch_forward joint, one item (seed 0, class 0).
 * They suit DiT; an SD3 case sets sampler euler, a FLUX case also cfg <= 1 and its
 * guidance (FluxPipeline's default is 3.5). */
void rp_case_defaults(rp_case *c);

/* rp_edit_distance (did-you-mean suggestions) lives in engine/strutil.h. */

/* name for a terminal line: control bytes (ESC, CR, LF, ...) become '?', so a name cannot
 * move the cursor or forge a line; width > 0 cuts it to width characters ending "...". */
void rp_case_display_name(const char *name, size_t width, char *out, size_t cap);

/* The case's parallel degrees (its dp, cfg_parallel, ... fields: the one place they map
 * to the engine's rp_par_degrees). */
void rp_case_degrees(const rp_case *c, rp_par_degrees *d);

/* world size implied by the degrees */
int rp_case_world(const rp_case *c);

/* The pipeline patches M the case runs PipeFusion's patch loop over (pipefusion.c), or 0
 * when it runs none: with pipefusion > 1, num_pipeline_patch or (0) the degree; with
 * pipefusion = 1, num_pipeline_patch when >= 2 — PipeFusion's serial emulation, one stage
 * running every block over the M patches, whose arithmetic is any stage count's with the
 * same patches (docs/classification.md §13). */
int rp_case_pipeline_patches(const rp_case *c);

/* Whether the case is exact at every step or only through its warmup steps: its layout's
 * (strategy.h), or warmup-exact when it runs a pipeline's patches (rp_case_pipeline_patches)
 * on one stage. */
rp_par_exactness rp_case_exactness(const rp_case *c);

/* "dp2 ulysses2" — the degrees that are not 1 (and pipeline options), or "1". */
void rp_case_degrees_text(const rp_case *c, char *buf, size_t cap);

/* The engine request of case c's model and sampling fields (model, depth, weights and
 * their seed, sharpen, vae, prompt embeddings, eta, steps, cfg, guidance, size, batch
 * forward), *req zeroed first. The caller sets the sampler (parsed per family), the items
 * and what to decode. The strings point into c. */
struct rp_gen_request;
void rp_case_gen_request(const rp_case *c, struct rp_gen_request *req);

/* Normalised JSON (every field, fixed order). Caller deletes. 64-bit seeds above
 * 2^53 (not exact as JSON numbers) are written as decimal strings; the reader
 * takes either form. */
cJSON *rp_case_to_json(const rp_case *c);

/* Reads a case.json object. Unknown keys (with the nearest known key as a
 * suggestion: "case.json: unknown field 'ulyses' (did you mean 'ulysses'?)"),
 * wrong types ("case.json: field 'ulysses': expected an integer, got string"),
 * duplicate keys and over-long strings are RP_ERR_INVALID naming the key; c is
 * untouched then. Missing keys keep their defaults; "items" replaces the default
 * item list, each item {seed, class, prompt} with missing keys 0, 0, "". */
rp_status rp_case_from_json(const cJSON *j, const char *origin, rp_case *c, rp_error *err);

/* Hex id (16 chars) of the normalised JSON without expect/name, and the engine
 * version, into out (>= 17 bytes): FNV-1a 64 of cJSON_PrintUnformatted(json)
 * followed by "\nrepro " REPRO_VERSION. Stable across runs and machines. Fields
 * added after results were first stored leave the JSON hashed when they hold their
 * default (gpu_mode "deterministic"), so the ids of existing cases do not change. */
void rp_case_id(const rp_case *c, char *out);

/* 1 when a and b are the same case: the normalised JSON the id hashes is the same text
 * (the full comparison the id stands for: a stored result is reused only for the very case
 * it was made for, whatever the hash). */
int rp_case_same(const rp_case *a, const rp_case *b);

/* 1 when a and b pose different problems, with "field 'precision': \"bf16\" against
 * \"fp32\"" (the first such field) into what (cap bytes); else 0 and "". The fields that say
 * how a case runs (its layout, backend, device, kernels, threads, numerics, injected fault,
 * labels) may differ; every other one (model, weights, size, steps, sampler, guidance, the
 * items, the precision) may not: a reference's twins measure rounding at its own problem
 * and precision, so a case posing another has no envelope there. */
int rp_case_problem_diff(const rp_case *a, const rp_case *b, char *what, size_t cap);

/* Writes/reads case.json (atomic write). */
rp_status rp_case_save(const rp_case *c, const char *path, rp_error *err);
rp_status rp_case_load(const char *path, rp_case *c, rp_error *err);

#endif
