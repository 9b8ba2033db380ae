/* model_cache.c — a denoiser kept loaded across the generate calls of one process
 * (model_cache.h says when and why). */
#include "model_cache.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sharpen.h"
#include "st_compose.h"

void rp_model_cache_init(rp_model_cache *c) { memset(c, 0, sizeof *c); }

static void drop(rp_model_cache *c) {
    if (c->have) c->model.ops->free(&c->model);
    c->have = 0;
    c->key[0] = '\0';
    memset(&c->model, 0, sizeof c->model);
}

void rp_model_cache_free(rp_model_cache *c) {
    if (c) drop(c);
}

/* Everything the loaded parameters depend on. */
static void cache_key(char *out, size_t cap, const char *model, int depth, int single_depth, const char *path,
                      int sharpen) {
    snprintf(out, cap, "%s|%d|%d|%d|%s", model, depth, single_depth, sharpen, path);
}

/* Loads without the cache. */
static rp_status load(const rp_family_ops *ops, const char *model, int depth, int single_depth, const char *path,
                      int sharpen, rp_model *out, rp_error *err) {
    rp_st_file *f = NULL;
    memset(out, 0, sizeof *out);
    RP_TRY(rp_weights_open_for(path, model, &f, err));
    rp_status st = rp_weights_sharpen(f, sharpen, err);
    if (st == RP_OK) st = ops->load(model, depth, single_depth, f, out, err);
    rp_st_close(f); /* the model copies its parameters */
    if (st == RP_OK) out->ops = ops;
    return st;
}

rp_status rp_model_acquire(rp_model_cache *cache, const rp_family_ops *ops, const char *model, int depth,
                           int single_depth, const char *path, int sharpen, rp_model *out, rp_error *err) {
    assert(ops && ops->denoiser && model && path && out);
    if (!cache) return load(ops, model, depth, single_depth, path, sharpen, out, err);
    char key[sizeof cache->key];
    cache_key(key, sizeof key, model, depth, single_depth, path, sharpen);
    if (cache->have && !strcmp(cache->key, key)) {
        *out = cache->model; /* lent: rp_model_release hands it back */
        cache->have = 0;
        cache->hits++;
        return RP_OK;
    }
    drop(cache); /* one model at a time: the old one goes before the new one loads */
    RP_TRY(load(ops, model, depth, single_depth, path, sharpen, out, err));
    cache->loads++;
    snprintf(cache->key, sizeof cache->key, "%s", key);
    rp_param_list l = {0};
    rp_error e;
    cache->bytes = ops->param_specs(model, depth, single_depth, &l, &e) == RP_OK ? 4 * rp_params_total(&l) : 0;
    rp_params_free(&l);
    return RP_OK;
}

void rp_model_release(rp_model_cache *cache, rp_model *m) {
    if (!m->ops) return;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double mem = pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
    if (cache && cache->key[0] && !cache->have && cache->bytes > 0 && (double)cache->bytes <= mem / 4) {
        cache->model = *m; /* kept for the next call */
        cache->have = 1;
    } else {
        m->ops->free(m);
        if (cache) cache->key[0] = '\0';
    }
    memset(m, 0, sizeof *m);
}
