/* small_gen.h — the small generation the device tests compare across devices: 2 items
 * (seeds 11, 12; classes 207, 208 for DiT, two prompts for SD3 / FLUX), 3 DDIM / Euler
 * steps, decoded; CFG `cfg` for DiT and SD3, embedded guidance 3.5 for FLUX. Header-only
 * (tests/unit/test_device.c, tests/unit/test_model_cache.c,
 * tests/gpu/test_cuda_models.c). */
#ifndef REPRO_TESTS_SMALL_GEN_H
#define REPRO_TESTS_SMALL_GEN_H

#include <string.h>

#include "engine/pipeline/pipeline.h"

/* Runs it with ctx (rp_ctx_default's, its dev and models set by the caller); returns
 * rp_generate's status (err filled on failure). */
static inline rp_status small_generation_ctx(const char *model, double cfg, const rp_ctx *ctx, rp_gen_result *res,
                                             rp_error *err) {
    static const char *prompts[] = {"a red fox in the snow", "a lighthouse at dusk"};
    const int flux = strncmp(model, "flux", 4) == 0, dit = strncmp(model, "dit", 3) == 0;
    rp_gen_item items[2];
    memset(items, 0, sizeof items);
    for (int i = 0; i < 2; i++) {
        items[i].seed = 11 + (uint64_t)i;
        items[i].global_index = (uint64_t)i;
        items[i].class_id = 207 + i;
        items[i].prompt = dit ? NULL : prompts[i];
    }
    rp_gen_request req;
    memset(&req, 0, sizeof req);
    req.model = model;
    req.weight_seed = 1;
    req.sampler = RP_SAMPLER_DDIM;
    req.steps = 3;
    req.cfg = flux ? 1.0 : cfg;
    req.guidance = flux ? 3.5 : 0.0;
    req.n_items = 2;
    req.items = items;
    req.decode = 1;
    rp_error_clear(err);
    memset(res, 0, sizeof *res);
    return rp_generate(&req, ctx, res, err);
}

/* The same on ctx->dev = dev, each call loading its own weights. */
static inline rp_status small_generation(const char *model, double cfg, struct rp_device *dev, rp_gen_result *res,
                                         rp_error *err) {
    rp_ctx ctx = rp_ctx_default();
    ctx.dev = dev;
    return small_generation_ctx(model, cfg, &ctx, res, err);
}

#endif
