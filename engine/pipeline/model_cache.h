/* model_cache.h — a denoiser kept loaded across the generate calls of one process.
 *
 * A worker's launch makes several calls of one layout (the case's run, then its teacher
 * run and shadows: harness/worker/job_case.c). Each used to read and copy the weights
 * again: DiT-XL/2 at depth 4 is 405 MB, about 0.45 s a call on the CPU. With a cache in
 * rp_ctx.models, rp_generate takes the model from it when it holds the same one (preset,
 * block counts, weights file, sharpening) and leaves the model there after the call.
 *
 * Why reuse is sound: the parameters are only read by a forward. A call that wrote into
 * them would change the next call's bits, which is state leaking between calls, and the
 * leak check (a later call recomputing the case's first steps) sees it as such: exactly
 * what a server that keeps its weights loaded would suffer.
 *
 * Memory: the kept model is held while the next call encodes its prompts (the text
 * encoder used to load after the denoiser was freed), so only a model of at most a
 * quarter of physical memory is kept; a larger one is loaded and freed per call as
 * before. Owned by the caller, one model at a time, not thread-safe (one per rank). */
#ifndef REPRO_MODEL_CACHE_H
#define REPRO_MODEL_CACHE_H

#include <stddef.h>

#include "error.h"
#include "models/family_ops.h"

typedef struct rp_model_cache {
    int have;           /* model holds a loaded denoiser */
    char key[4608];     /* what it was loaded from (model_cache.c: cache_key) */
    rp_model model;
    size_t bytes;       /* its parameters' */
    int hits, loads;    /* calls that took the kept model / that loaded one */
} rp_model_cache;

/* An empty cache. */
void rp_model_cache_init(rp_model_cache *c);

/* Frees the kept model; the cache is empty again. NULL is a no-op. */
void rp_model_cache_free(rp_model_cache *c);

/* The denoiser of preset `model` with ops, at depth / single_depth (0: the preset's), from
 * the weights file `path` sharpened by `sharpen` (engine/sharpen.h), into *out: the cache's
 * when it holds that one, else loaded (the kept one, if any, freed first). cache may be
 * NULL (a plain load). Release it with rp_model_release. */
rp_status rp_model_acquire(rp_model_cache *cache, const rp_family_ops *ops, const char *model, int depth,
                           int single_depth, const char *path, int sharpen, rp_model *out, rp_error *err);

/* Ends a call's use of m (from rp_model_acquire): kept in the cache when there is one and
 * the model is small enough (above), else freed. *m is zeroed. */
void rp_model_release(rp_model_cache *cache, rp_model *m);

#endif
