/* params.c — parameter specs, loading by name, and synthetic weights.
 *
 * Synthetic init rules (RP_SYNTHETIC_INIT_VERSION "init-v1"; bump it when any
 * of this changes, because weight caches are keyed on it):
 *   z = rp_randn(numel, seed = weight_seed, index = rp_fnv1a64(name), stream 0),
 *   computed per element in double and rounded to float once:
 *   FANIN       z * scale / sqrt(fan_in), fan_in = prod(shape[1:]) (1 for 0-D/1-D)
 *               — matches the variance of a trained layer's inputs-to-outputs
 *               map so activations stay O(1) through depth;
 *   NORMAL      z * scale;
 *   ONE_NORMAL  1 + z * scale (norm weights near identity);
 *   ZERO        0 (no random draw);
 *   SINCOS_2D   DiT's fixed sin-cos table from rp_pos_embed_2d_sincos, shape
 *               (1, T, D), gh = gw = sqrt(T) (no random draw).
 * Keying on the name (not the list position) means adding, removing or
 * reordering parameters never changes any other parameter's values, and a
 * reduced-depth preset shares its blocks' weights with the full one. */
#include "params.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "rng.h"
#include "strutil.h"

void rp_params_add(rp_param_list *l, rp_init init, float scale, int ndim, const int64_t *shape,
                   const char *name_fmt, ...) {
    assert(l && ndim >= 0 && ndim <= 4 && (shape || ndim == 0));
    if (l->n == l->cap) {
        int nc = l->cap ? 2 * l->cap : 64;
        rp_param_spec *ns = realloc(l->specs, (size_t)nc * sizeof *ns);
        /* No status to return here: a spec list is a few hundred entries, so
         * failing to grow it means the process is already lost. */
        if (!ns) { fprintf(stderr, "repro: out of memory growing a parameter list\n"); abort(); }
        l->specs = ns;
        l->cap = nc;
    }
    rp_param_spec *s = &l->specs[l->n];
    memset(s, 0, sizeof *s);
    va_list ap;
    va_start(ap, name_fmt);
    int len = vsnprintf(s->name, sizeof s->name, name_fmt, ap);
    va_end(ap);
    assert(len > 0 && (size_t)len < sizeof s->name); /* names are compile-time shaped */
    (void)len;
    s->ndim = ndim;
    for (int i = 0; i < ndim; i++) { assert(shape[i] >= 0); s->shape[i] = shape[i]; }
    s->init = init;
    s->scale = scale;
    l->n++;
}

void rp_params_free(rp_param_list *l) {
    if (!l) return;
    free(l->specs);
    l->specs = NULL;
    l->n = l->cap = 0;
}

size_t rp_param_numel(const rp_param_spec *s) {
    size_t n = 1;
    for (int i = 0; i < s->ndim; i++) n *= (size_t)s->shape[i];
    return n;
}

size_t rp_params_total(const rp_param_list *l) {
    size_t t = 0;
    for (int i = 0; i < l->n; i++) t += rp_param_numel(&l->specs[i]);
    return t;
}

/* f's tensor name nearest to name when close (distance <= max(2, len / 4): a typo or a
 * one-word difference, not another tensor), else NULL. */
static const char *nearest_name(const rp_st_file *f, const char *name) {
    if (f->n > 65536) return NULL; /* checkpoints hold thousands; bounded time on a hostile header */
    const char *best = NULL;
    int best_d = 1 << 30;
    for (int i = 0; i < f->n; i++) {
        const int d = rp_edit_distance(name, f->tensors[i].name);
        if (d < best_d) { best_d = d; best = f->tensors[i].name; }
    }
    int lim = (int)strlen(name) / 4;
    return best && best_d <= (lim > 2 ? lim : 2) ? best : NULL;
}

rp_status rp_params_load(const rp_param_list *l, const rp_st_file *f, float **block, float **ptrs,
                         rp_error *err) {
    assert(l && f && block && (ptrs || l->n == 0));
    size_t total = rp_params_total(l);
    float *b = malloc((total ? total : 1) * sizeof *b);
    if (!b)
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: cannot allocate %zu parameters (%.1f GB)", f->path, total,
                       (double)total * 4 / 1e9);
    size_t off = 0;
    for (int i = 0; i < l->n; i++) {
        const rp_param_spec *s = &l->specs[i];
        ptrs[i] = b + off;
        rp_error e;
        rp_error_clear(&e);
        rp_status st = rp_st_read_f32(f, s->name, s->ndim, s->shape, ptrs[i], &e);
        if (st != RP_OK) {
            free(b);
            for (int k = 0; k <= i; k++) ptrs[k] = NULL;
            if (st == RP_ERR_NOT_FOUND) {
                /* say how far off the file is: a wrong preset or depth shows as many missing;
                 * a near name in the file is a typo or another naming */
                size_t k = strlen(e.msg);
                const char *near = nearest_name(f, s->name);
                if (near)
                    k += (size_t)snprintf(e.msg + k, sizeof e.msg - k, " (did you mean '%s'?)", near);
                if (k < sizeof e.msg)
                    snprintf(e.msg + k, sizeof e.msg - k, " (the model needs %d tensors, the file has %d)", l->n,
                             f->n);
            }
            if (err) *err = e;
            return st;
        }
        off += rp_param_numel(s);
    }
    assert(off == total);
    *block = b;
    return RP_OK;
}

void rp_param_init_values(const rp_param_spec *s, uint64_t weight_seed, float *dst) {
    size_t n = rp_param_numel(s);
    double scale = s->scale;
    switch (s->init) {
    case RP_INIT_ZERO:
        memset(dst, 0, n * sizeof *dst);
        return;
    case RP_INIT_SINCOS_2D: {
        assert(s->ndim == 3 && s->shape[0] == 1);
        int T = (int)s->shape[1], D = (int)s->shape[2];
        int g = 0;
        while ((g + 1) * (g + 1) <= T) g++; /* integer sqrt: g*g never exceeds T */
        assert(g * g == T && D % 4 == 0);   /* a spec bug; below keeps release builds in bounds */
        memset(dst, 0, n * sizeof *dst);
        if (g > 0) rp_pos_embed_2d_sincos(dst, D, g, g);
        return;
    }
    case RP_INIT_FANIN: {
        size_t fan_in = 1;
        for (int i = 1; i < s->ndim; i++) fan_in *= (size_t)s->shape[i];
        scale = fan_in ? scale / sqrt((double)fan_in) : 0.0;
        break;
    }
    case RP_INIT_NORMAL:
    case RP_INIT_ONE_NORMAL:
        break;
    }
    rp_randn(dst, n, weight_seed, rp_fnv1a64(s->name), 0);
    double base = s->init == RP_INIT_ONE_NORMAL ? 1.0 : 0.0;
    for (size_t i = 0; i < n; i++) dst[i] = (float)(base + (double)dst[i] * scale);
}

typedef struct synth_fill {
    const rp_param_spec *spec;
    uint64_t seed;
} synth_fill;

/* rp_st_fill_fn: generates one parameter's F32 bytes at write time. */
static void fill_param(void *user, void *dst, size_t nbytes) {
    const synth_fill *sf = user;
    assert(nbytes == rp_param_numel(sf->spec) * sizeof(float));
    (void)nbytes;
    rp_param_init_values(sf->spec, sf->seed, dst);
}

rp_status rp_params_write_synthetic(const rp_param_list *l, const char *model_name,
                                    uint64_t weight_seed, const char *path, rp_error *err) {
    assert(l && model_name && path);
    rp_st_writer *w = rp_st_writer_new();
    synth_fill *fills = calloc((size_t)l->n + 1, sizeof *fills);
    rp_status s = RP_OK;
    if (!w || !fills) { s = RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", path); goto out; }
    char seed_s[32];
    snprintf(seed_s, sizeof seed_s, "%" PRIu64, weight_seed);
    if ((s = rp_st_writer_meta(w, "repro.model", model_name, err)) != RP_OK) goto out;
    if ((s = rp_st_writer_meta(w, "repro.weight_seed", seed_s, err)) != RP_OK) goto out;
    if ((s = rp_st_writer_meta(w, "repro.init", RP_SYNTHETIC_INIT_VERSION, err)) != RP_OK) goto out;
    for (int i = 0; i < l->n; i++) {
        const rp_param_spec *sp = &l->specs[i];
        fills[i].spec = sp;
        fills[i].seed = weight_seed;
        s = rp_st_writer_add_fill(w, sp->name, RP_DT_F32, sp->ndim, sp->shape, fill_param, &fills[i], err);
        if (s != RP_OK) goto out;
    }
    s = rp_st_writer_write(w, path, err);
out:
    rp_st_writer_free(w);
    free(fills);
    return s;
}

/* ---- the specs every family writes alike ------------------------------------------------- */

void rp_params_add_linear(rp_param_list *l, const char *module, int64_t out, int64_t in, float wscale) {
    rp_params_add(l, RP_INIT_FANIN, wscale, 2, (int64_t[]){out, in}, "%s.weight", module);
    rp_params_add(l, RP_INIT_NORMAL, 0.02f, 1, (int64_t[]){out}, "%s.bias", module);
}

void rp_params_add_norm(rp_param_list *l, const char *module, int64_t n) {
    rp_params_add(l, RP_INIT_ONE_NORMAL, 0.1f, 1, (int64_t[]){n}, "%s.weight", module);
}

/* ---- wiring a loaded list into a model ---------------------------------------------------- */

static void cursor_free(rp_param_cursor *c) {
    free(c->ptrs);
    c->ptrs = NULL;
    rp_params_free(&c->l);
}

rp_status rp_param_cursor_load(rp_param_cursor *c, const rp_st_file *f, float **block, size_t *n_params,
                               rp_error *err) {
    c->i = 0;
    c->ptrs = calloc((size_t)c->l.n + 1, sizeof *c->ptrs); /* +1: calloc(0) may return NULL */
    rp_status st = c->ptrs ? rp_params_load(&c->l, f, block, c->ptrs, err)
                           : RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory for %d parameter pointers", f->path,
                                     c->l.n);
    if (st != RP_OK) {
        cursor_free(c);
        return st;
    }
    if (n_params) *n_params = rp_params_total(&c->l);
    return RP_OK;
}

void rp_param_cursor_end(rp_param_cursor *c) {
    assert(c->i == c->l.n);
    cursor_free(c);
}

const float *rp_param_take(rp_param_cursor *c, const char *name) {
    char full[192];
    snprintf(full, sizeof full, "%s%s", c->prefix ? c->prefix : "", name);
    assert(c->i < c->l.n);
    assert(strcmp(c->l.specs[c->i].name, full) == 0);
    (void)full;
    return c->ptrs[c->i++];
}

const float *rp_param_take_weight(rp_param_cursor *c, const char *module) {
    char name[160];
    snprintf(name, sizeof name, "%s.weight", module);
    return rp_param_take(c, name);
}

void rp_param_take_wb(rp_param_cursor *c, const char *module, const float **w, const float **b) {
    char name[160];
    *w = rp_param_take_weight(c, module);
    snprintf(name, sizeof name, "%s.bias", module);
    *b = rp_param_take(c, name);
}

rp_linear_w rp_param_take_linear(rp_param_cursor *c, const char *module, int in, int out) {
    rp_linear_w w = {0};
    rp_param_take_wb(c, module, &w.weight, &w.bias);
    w.in = in;
    w.out = out;
    return w;
}
