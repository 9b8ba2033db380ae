/* params.h — a model's parameter list, loaded into one allocation by name.
 *
 * A model describes its parameters as specs (upstream state_dict name, shape,
 * synthetic init rule). The same list drives three things: loading a
 * checkpoint (real or synthetic) by name with shape checks, writing synthetic
 * weights, and counting parameters. */
#ifndef REPRO_PARAMS_H
#define REPRO_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "ops.h"
#include "safetensors.h"

typedef enum rp_init {
    RP_INIT_FANIN,      /* normal(0, scale / sqrt(fan_in)); fan_in = prod(shape[1:]) */
    RP_INIT_NORMAL,     /* normal(0, scale) */
    RP_INIT_ONE_NORMAL, /* 1 + normal(0, scale)  (norm weights) */
    RP_INIT_ZERO,
    RP_INIT_SINCOS_2D   /* fixed 2-D sin-cos table (DiT pos_embed); shape (1, gh*gw, D), gh = gw */
} rp_init;

typedef struct rp_param_spec {
    char name[112];
    int ndim;
    int64_t shape[4];
    rp_init init;
    float scale;
} rp_param_spec;

typedef struct rp_param_list {
    rp_param_spec *specs;
    int n, cap;
} rp_param_list;

/* Appends a spec; shape given as ndim values. Name is printf-formatted. */
void rp_params_add(rp_param_list *l, rp_init init, float scale, int ndim, const int64_t *shape,
                   const char *name_fmt, ...) __attribute__((format(printf, 6, 7)));
void rp_params_free(rp_param_list *l);
size_t rp_param_numel(const rp_param_spec *s);
size_t rp_params_total(const rp_param_list *l);

/* Allocates one float block for all params (returned in *block, caller frees)
 * and fills ptrs[i] (l->n entries) to each param inside it, reading each by name
 * from f. Errors name the missing tensor or the shape mismatch. Extra tensors
 * in the file are ignored (a full checkpoint may hold more than a reduced-depth
 * preset uses). */
rp_status rp_params_load(const rp_param_list *l, const rp_st_file *f, float **block,
                         float **ptrs, rp_error *err);

/* Fills one param's values from its init rule with Philox keyed by
 * (weight_seed, fnv1a(name)), so values never depend on list order. */
void rp_param_init_values(const rp_param_spec *s, uint64_t weight_seed, float *dst);

/* Writes synthetic weights for the whole list to path (atomic), F32, with
 * metadata {"repro.model": model_name, "repro.weight_seed": "S",
 * "repro.init": "<version string>"}. */
rp_status rp_params_write_synthetic(const rp_param_list *l, const char *model_name,
                                    uint64_t weight_seed, const char *path, rp_error *err);

/* Version of the synthetic init rules; bump when they change (caches key on it). */
#define RP_SYNTHETIC_INIT_VERSION "init-v1"

/* ---- the specs every family writes alike ---------------------------------------------- */

/* An nn.Linear: "<module>.weight" (out, in), FANIN scaled by wscale (0.2 for the adaLN
 * modulations, 1 otherwise), then "<module>.bias" (out), NORMAL 0.02. */
void rp_params_add_linear(rp_param_list *l, const char *module, int64_t out, int64_t in, float wscale);
/* A norm's "<module>.weight" (n), ONE_NORMAL 0.1 (RMSNorm; a LayerNorm's bias is the caller's). */
void rp_params_add_norm(rp_param_list *l, const char *module, int64_t n);

/* ---- wiring a loaded list into a model ------------------------------------------------
 * A model's loader writes its specs into a cursor's list, loads them (rp_param_cursor_load),
 * walks them in the order its param_specs function wrote them, each take naming the
 * parameter it expects (prefix + name), and ends the cursor (rp_param_cursor_end), whose
 * assert keeps the wiring and the spec list from drifting apart. */
typedef struct rp_param_cursor {
    rp_param_list l;    /* the model's specs; the cursor's (rp_param_cursor_end frees them) */
    float **ptrs;       /* (l.n) from rp_params_load */
    int i;              /* the next spec */
    const char *prefix; /* prepended to every name ("" or NULL for none) */
} rp_param_cursor;

/* Reads every parameter of c->l from f into one block (*block: the model's, to free();
 * *n_params: its floats, unless n_params is NULL) and points c at the first spec. On
 * failure the list and pointers are freed and *block is left as it was; errors as
 * rp_params_load's. */
rp_status rp_param_cursor_load(rp_param_cursor *c, const rp_st_file *f, float **block, size_t *n_params,
                               rp_error *err);
/* Ends the wiring: every spec was taken (assert); frees the list and the pointers. */
void rp_param_cursor_end(rp_param_cursor *c);

/* The next parameter, which must be named prefix + name. */
const float *rp_param_take(rp_param_cursor *c, const char *name);
/* "<module>.weight" */
const float *rp_param_take_weight(rp_param_cursor *c, const char *module);
/* "<module>.weight", then "<module>.bias" */
void rp_param_take_wb(rp_param_cursor *c, const char *module, const float **w, const float **b);
/* an nn.Linear: "<module>.weight" (out, in), then "<module>.bias" (out) */
rp_linear_w rp_param_take_linear(rp_param_cursor *c, const char *module, int in, int out);

#endif
