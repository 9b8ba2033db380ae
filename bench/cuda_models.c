/* bench/cuda_models — whole-model forwards on the CUDA device (engine/device.h):
 * DiT-XL/2 at 256 px (a CFG pair, batch 2) and FLUX.1-dev at 1024 x 1024 (batch 1,
 * 19 double + 38 single blocks = 57), timed through the models' own entry points
 * (rp_dit_forward / rp_flux_forward with ctx->dev set: host inputs in, host output out).
 *
 *   build/bench/cuda_models --model dit-xl-2-256|flux-dev [--precision fp32|tf32|bf16|fp16]
 *       [--mode deterministic|fast] [--attention math|split|flash|auto] [--warmup N] [--iters N]
 *       [--peak TFLOPS] [--batch B] [--res PX] [--weights full|shared] [--device SELECT]
 *       [--check] [--seed S]
 *
 * Defaults: bf16, deterministic, attention auto, warmup 3, iters 10, peak 989 (the
 * H200's dense BF16 tensor-core TFLOP/s; for fp32/tf32 runs pass the matching peak),
 * batch 2 for DiT (conditional class 207 + the null class, as classifier-free guidance
 * evaluates them) and 1 for FLUX, res = the preset's (256 / 1024), device "cuda"
 * (or "cuda:H200", "cuda:#1": rp_device_cuda_create's select; "host-check" runs the
 * same code on the CPU's checked device, for testing this program without a GPU).
 * Any DiT or FLUX preset is accepted (dit-tiny, flux-tiny: quick runs).
 *
 * Timing: host wall clock (CLOCK_MONOTONIC) around each rp_*_forward call, which
 * uploads its inputs, runs, and downloads the output (a synchronising copy), so each
 * sample is one complete forward as a caller sees it, including the per-call activation
 * allocation (cudaMalloc/cudaFree) and the input/output copies; no CUDA events. The
 * first forward also mirrors the weights to the GPU (48 GB for FLUX-dev) and is reported
 * separately ("first_ms"); then `warmup` untimed forwards, then `iters` timed ones:
 * median and min ms. TFLOP/s = 2 x MACs / median time; "frac_peak" = that / --peak.
 *
 * MACs (multiply-accumulates, one per GEMM product term; norms, activations, softmax,
 * RoPE and elementwise work are not counted):
 *   DiT:  rp_dit_macs(cfg) per image (engine/models/dit.c: patch embed, timestep MLP,
 *         per block adaLN 6C^2 + qkv 3TC^2 + attention 2T^2C + proj TC^2 + MLP 2TCM, final
 *         layer) x batch. DiT-XL/2 256: 118.62 GMAC per image (the DiT paper's 118.6
 *         "Gflops" are fvcore MACs), 237.2 GMAC for the pair.
 *   FLUX: counted here, layer by layer from the config (flux_macs below: every nn.Linear
 *         as rows x in x out, attention as QK^T + PV = 2 T^2 C over all heads, with
 *         N = (H/2)(W/2) image tokens, L text tokens, T = N + L), and cross-checked
 *         against the engine's rp_flux_macs (printed; a mismatch is reported).
 *         FLUX-dev 1024 px (N 4096, L 512): 37.19 TMAC = 74.38 TFLOP per forward.
 *
 * Weights are synthetic (no checkpoint): --weights full draws every tensor with the
 * engine's generator (rp_st_synthetic: bitwise what `repro weights` writes); --weights
 * shared draws the tensors of block 0 of each block stack the same way and gives every
 * later block of that stack block 0's values (same shapes, same init scales, so the
 * same work and sane activations), which takes seconds instead of drawing 12 G normal
 * samples for FLUX-dev, and holds one 48 GB copy on the host instead of two (the
 * synthetic file and the model's own block). Default: full for DiT, shared for FLUX.
 * The timing does not depend on the values (dense GEMMs, no data-dependent work).
 *
 * --check runs the same forward once on the CPU (fp32, math attention) and reports the
 * relative L2 distance of the device output from it (bf16 GEMMs: ~1e-2 expected; the
 * host-check device: 0); above 0.1 the run fails. On FLUX-dev that CPU forward takes
 * minutes.
 *
 * Output: "#" lines (environment, device, the device's GEMM algorithm notes from
 * rp_device_cuda_trace_notes, the attention variant that ran) and one JSON line per
 * result, prefixed "RESULT ". Exit 0 on success and when there is no CUDA device (a
 * "no CUDA device: skipped" line), 1 on a failure (including non-finite output), 2 on
 * bad options. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "engine/ctx.h"
#include "engine/device.h"
#include "engine/models/dit.h"
#include "engine/models/flux.h"
#include "engine/params.h"
#include "engine/rng.h"
#include "engine/safetensors.h"
#include "engine/synthetic.h"
#include "engine/trace.h"
#include "harness/cli/args.h"
#include "harness/sweep/env.h"

#ifdef REPRO_HAVE_CUDA
#include "engine/cuda/cuda_gemm.h"
#include "engine/cuda/cuda_info.h"
#include "engine/cuda/device_cuda.h"
#endif

#define PFX "cuda_models: "

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- options ------------------------------------------------------------------------- */

typedef struct opts {
    const char *model, *precision, *mode, *attention, *weights, *device, *numerics;
    int warmup, iters, batch, res, check, blocks;
    double peak;
    uint64_t seed;
} opts;

/* ---- synthetic weights ----------------------------------------------------------------- */

/* The name of block 0's tensor for a name "<...>blocks.<i>.<rest>" (i > 0): "<...>blocks.0.<rest>";
 * 0 when the name has no block index or the index is already 0. */
static int block0_name(const char *name, char *out, size_t cap) {
    const char *p = strstr(name, "blocks.");
    if (!p) return 0;
    const char *d = p + 7, *e = d;
    while (*e >= '0' && *e <= '9') e++;
    if (e == d || *e != '.') return 0;
    if (e - d == 1 && *d == '0') return 0;
    int n = snprintf(out, cap, "%.*s0%s", (int)(d - name), name, e);
    return n > 0 && (size_t)n < cap;
}

static int cmp_st_name(const void *a, const void *b) {
    return strcmp(((const rp_st_tensor *)a)->name, ((const rp_st_tensor *)b)->name);
}

/* An in-memory rp_st_file for l in which every "blocks.<i>." tensor with i > 0 points at
 * the data of the same tensor of block 0 (when that exists with the same shape); only
 * the distinct tensors are generated (rp_param_init_values, the engine's rules and
 * generator). rp_st_close frees it (one map block, names, path). */
static rp_status synthetic_shared(const rp_param_list *l, uint64_t seed, const char *label, rp_st_file **out,
                                  size_t *distinct_floats, rp_error *err) {
    int *src = malloc(sizeof(int) * (size_t)(l->n ? l->n : 1)); /* spec i takes spec src[i]'s data */
    size_t *off = malloc(sizeof(size_t) * (size_t)(l->n ? l->n : 1));
    if (!src || !off) {
        free(src); free(off);
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", label);
    }
    size_t total = 0;
    for (int i = 0; i < l->n; i++) {
        const rp_param_spec *s = &l->specs[i];
        char b0[sizeof s->name];
        src[i] = i;
        if (block0_name(s->name, b0, sizeof b0))
            for (int j = 0; j < l->n; j++) {
                const rp_param_spec *t = &l->specs[j];
                if (strcmp(t->name, b0) != 0) continue;
                int same = t->ndim == s->ndim && t->init == s->init && t->scale == s->scale;
                for (int k = 0; same && k < s->ndim; k++) same = t->shape[k] == s->shape[k];
                if (same) src[i] = j;
                break;
            }
        if (src[i] == i) {
            off[i] = total;
            total += rp_param_numel(s);
        }
    }
    rp_st_file *f = calloc(1, sizeof *f);
    float *block = malloc((total ? total : 1) * sizeof(float));
    rp_st_tensor *t = calloc((size_t)(l->n ? l->n : 1), sizeof *t);
    char *path = strdup(label);
    if (!f || !block || !t || !path) {
        free(f); free(block); free(t); free(path); free(src); free(off);
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: cannot allocate %zu synthetic parameters", label, total);
    }
    f->path = path;
    f->map = block;
    f->size = total * sizeof(float);
    f->tensors = t;
    for (int i = 0; i < l->n; i++) {
        const rp_param_spec *s = &l->specs[i];
        if (src[i] == i) rp_param_init_values(s, seed, block + off[i]);
        t[i].name = strdup(s->name);
        if (!t[i].name) {
            rp_st_close(f);
            free(src); free(off);
            return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", label);
        }
        f->n = i + 1;
        t[i].dtype = RP_DT_F32;
        t[i].ndim = s->ndim;
        for (int d = 0; d < s->ndim; d++) t[i].shape[d] = s->shape[d];
        t[i].numel = rp_param_numel(s);
        t[i].data = block + off[src[i]];
        t[i].nbytes = t[i].numel * sizeof(float);
    }
    qsort(t, (size_t)l->n, sizeof *t, cmp_st_name);
    free(src); free(off);
    *distinct_floats = total;
    *out = f;
    return RP_OK;
}

static rp_status make_weights(const rp_param_list *l, const opts *o, int shared, const char *label,
                              rp_st_file **w, rp_error *err) {
    double t0 = now();
    size_t distinct = rp_params_total(l);
    rp_status st = shared ? synthetic_shared(l, o->seed, label, w, &distinct, err)
                          : rp_st_synthetic(l, o->seed, label, w, err);
    if (st == RP_OK)
        printf("# weights: %s synthetic, seed %llu: %.3f G parameters (%.1f GB fp32), %.3f G drawn, %.1f s\n",
               shared ? "shared (block 0 per stack)" : "full", (unsigned long long)o->seed,
               rp_params_total(l) / 1e9, rp_params_total(l) * 4.0 / 1e9, distinct / 1e9, now() - t0);
    return st;
}

/* ---- FLUX MACs, layer by layer ----------------------------------------------------------- */

/* Multiply-accumulates of one FLUX forward for one item of latent H x W with L text
 * tokens: every Linear as rows x in x out, attention as QK^T + PV (2 T^2 C). */
static double flux_macs(const rp_flux_config *c, int H, int W, int L) {
    const double C = c->hidden, M = (double)c->mlp_ratio * c->hidden, P = 4.0 * c->in_channels;
    const double N = (double)(H / 2) * (W / 2), Lt = L, T = N + Lt, F = c->freq_dim;
    const double attn = T * T * C  /* Q K^T: heads x T x T x head_dim */
                        + T * T * C; /* P V */
    double m = 0;
    m += N * P * C;                                /* x_embedder (packed 2x2 latents -> C) */
    m += Lt * c->joint_attention_dim * C;          /* context_embedder */
    m += F * C + C * C;                            /* timestep_embedder linear_1, linear_2 */
    if (c->guidance_embeds) m += F * C + C * C;    /* guidance_embedder */
    m += (double)c->pooled_dim * C + C * C;        /* text_embedder */
    double dbl = 0;
    dbl += C * 6 * C + C * 6 * C;                  /* norm1.linear, norm1_context.linear (one row) */
    dbl += 3 * N * C * C;                          /* to_q, to_k, to_v (image) */
    dbl += 3 * Lt * C * C;                         /* add_q_proj, add_k_proj, add_v_proj (text) */
    dbl += attn;                                   /* joint attention over T */
    dbl += N * C * C + Lt * C * C;                 /* to_out.0, to_add_out */
    dbl += N * (C * M + M * C);                    /* ff.net.0.proj, ff.net.2 */
    dbl += Lt * (C * M + M * C);                   /* ff_context */
    double sgl = 0;
    sgl += C * 3 * C;                              /* norm.linear (one row) */
    sgl += 3 * T * C * C;                          /* to_q, to_k, to_v */
    sgl += attn;
    sgl += T * C * M;                              /* proj_mlp */
    sgl += T * (C + M) * C;                        /* proj_out on [attn, mlp] */
    m += c->n_double * dbl + c->n_single * sgl;
    m += C * 2 * C;                                /* norm_out.linear (one row) */
    m += N * C * P;                                /* proj_out */
    return m;
}

/* ---- device ------------------------------------------------------------------------------ */

/* 0: *out made; 1: failed (printed); -1: no CUDA device (skip). */
static int make_device(const opts *o, rp_device **out) {
    *out = NULL;
    if (!strcmp(o->device, "host-check")) {
        *out = rp_device_host_check_create();
        if (!*out) { fprintf(stderr, PFX "out of memory\n"); return 1; }
        return 0;
    }
#ifndef REPRO_HAVE_CUDA
    return -1;
#else
    if (rp_cuda_device_count() == 0) return -1;
    rp_error err;
    rp_error_clear(&err);
    rp_cuda_device_opts co;
    memset(&co, 0, sizeof co);
    co.select = o->device;
    co.local_rank = 0;
    if (rp_cuda_prec_parse(o->precision, &co.precision, &err) != RP_OK ||
        rp_cuda_gemm_mode_parse(o->mode, &co.mode, &err) != RP_OK ||
        rp_device_cuda_create(&co, out, &err) != RP_OK) {
        fprintf(stderr, PFX "%s\n", err.msg);
        return 1;
    }
    return 0;
#endif
}

/* ---- one model, generically -------------------------------------------------------------- */

typedef struct run_fn {
    rp_status (*fwd)(void *u, const rp_ctx *ctx, float *out, rp_error *err);
    void *u;
    size_t out_n;
} run_fn;

/* One forward into out; prints and returns 1 on failure. */
static int forward(const run_fn *r, const rp_ctx *ctx, float *out, const char *what) {
    rp_error err;
    rp_error_clear(&err);
    if (r->fwd(r->u, ctx, out, &err) != RP_OK) {
        fprintf(stderr, PFX "%s forward failed: %s (%s)\n", what, err.msg, err.where);
        return 1;
    }
    return 0;
}

typedef struct timing {
    double first_ms, median_ms, min_ms, max_ms;
    size_t nonfinite;
    double out_l2;
    double check_rel_l2, check_maxabs; /* < 0: not run */
    int check_failed;
} timing;

/* --check: the largest relative L2 distance from the CPU fp32 forward taken as correct.
 * bf16 / fp16 GEMM operands give ~1e-2 on these models; 0.1 only catches real bugs. */
#define CHECK_TOL 0.1

/* Times r on ctx (a device). Returns 0, or 1 on failure (printed). */
static int time_forward(const run_fn *r, const rp_ctx *ctx, const opts *o, timing *tm) {
    float *out = malloc(sizeof(float) * (r->out_n ? r->out_n : 1));
    double *ms = malloc(sizeof(double) * (size_t)o->iters);
    if (!out || !ms) { free(out); free(ms); fprintf(stderr, PFX "out of host memory\n"); return 1; }
    const int mirrors0 = ctx->dev->n_mirrors;
    double t0 = now();
    if (forward(r, ctx, out, "first")) goto fail;
    tm->first_ms = (now() - t0) * 1e3;
    if (ctx->dev->n_mirrors <= mirrors0) {
        fprintf(stderr, PFX "the forward mirrored no weights on %s: it did not run on the device "
                        "(is this model's forward ported to engine/device.h?)\n", ctx->dev->name);
        goto fail;
    }
    printf("# first forward (weights upload included): %.1f ms\n", tm->first_ms);
    fflush(stdout);
    for (int i = 0; i < o->warmup; i++)
        if (forward(r, ctx, out, "warmup")) goto fail;
    for (int i = 0; i < o->iters; i++) {
        t0 = now();
        if (forward(r, ctx, out, "timed")) goto fail;
        ms[i] = (now() - t0) * 1e3;
    }
    qsort(ms, (size_t)o->iters, sizeof *ms, cmp_double);
    tm->median_ms = o->iters % 2 ? ms[o->iters / 2] : 0.5 * (ms[o->iters / 2 - 1] + ms[o->iters / 2]);
    tm->min_ms = ms[0];
    tm->max_ms = ms[o->iters - 1];
    double l2 = 0;
    tm->nonfinite = 0;
    for (size_t i = 0; i < r->out_n; i++) {
        if (!isfinite(out[i])) tm->nonfinite++;
        else l2 += (double)out[i] * out[i];
    }
    tm->out_l2 = sqrt(l2);
    tm->check_rel_l2 = tm->check_maxabs = -1;
    tm->check_failed = 0;
    if (o->check) {
        float *ref = malloc(sizeof(float) * (r->out_n ? r->out_n : 1));
        if (!ref) { fprintf(stderr, PFX "out of host memory\n"); goto fail; }
        rp_ctx cpu = rp_ctx_default(); /* fp32, math attention, no device */
        double tc = now();
        if (forward(r, &cpu, ref, "CPU reference")) { free(ref); goto fail; }
        double num = 0, den = 0, mx = 0;
        for (size_t i = 0; i < r->out_n; i++) {
            double d = (double)out[i] - ref[i];
            num += d * d;
            den += (double)ref[i] * ref[i];
            if (fabs(d) > mx || d != d) mx = d != d ? INFINITY : fabs(d);
        }
        tm->check_rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
        tm->check_maxabs = mx;
        printf("# check: CPU fp32 reference forward %.1f s; relative L2 %.3e, max |diff| %.3e\n", now() - tc,
               tm->check_rel_l2, mx);
        free(ref);
        if (!(tm->check_rel_l2 <= CHECK_TOL)) {
            fprintf(stderr, PFX "check failed: the device output is %.3e (relative L2) from the CPU fp32 forward "
                            "(bar %.2g: bf16 rounding gives ~1e-2)\n", tm->check_rel_l2, CHECK_TOL);
            tm->check_failed = 1;
        }
    }
    free(out); free(ms);
    return 0;
fail:
    free(out); free(ms);
    return 1;
}

/* Prints the device's notes (GEMM algorithms etc.) and the attention that ran. */
static void print_device_notes(rp_device *d) {
    rp_trace t;
    rp_trace_init(&t);
#ifdef REPRO_HAVE_CUDA
    rp_device_cuda_trace_notes(d, &t);
#endif
    for (int i = 0; i < t.n_notes; i++) printf("# note: %s\n", t.notes[i]);
    rp_trace_free(&t);
    if (d->last_attn.kind[0])
        printf("# attention ran: %s: %s%s%s\n", d->last_attn.kind, d->last_attn.desc,
               d->last_attn.reason[0] ? " | auto: " : "", d->last_attn.reason);
}

static void print_result(const opts *o, rp_device *d, rp_numerics num, const char *family, int B, int res, int L,
                         double macs_img, double macs_engine, const timing *tm) {
    const double macs = macs_img * B, tflops = 2.0 * macs / (tm->median_ms * 1e-3) / 1e12,
                 tflops_best = 2.0 * macs / (tm->min_ms * 1e-3) / 1e12;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "bench", "cuda_models");
    cJSON_AddStringToObject(j, "model", o->model);
    cJSON_AddStringToObject(j, "family", family);
    cJSON_AddStringToObject(j, "device", d->name);
    cJSON_AddStringToObject(j, "precision", o->precision);
    cJSON_AddStringToObject(j, "mode", o->mode);
    cJSON_AddStringToObject(j, "attention", o->attention);
    cJSON_AddStringToObject(j, "attention_ran", d->last_attn.kind);
    cJSON_AddStringToObject(j, "numerics", rp_numerics_name(num));
    cJSON_AddStringToObject(j, "weights", o->weights);
    cJSON_AddNumberToObject(j, "batch", B);
    cJSON_AddNumberToObject(j, "res", res);
    if (L >= 0) cJSON_AddNumberToObject(j, "text_tokens", L);
    cJSON_AddNumberToObject(j, "macs_per_image", macs_img);
    if (macs_engine > 0) cJSON_AddNumberToObject(j, "macs_per_image_engine", macs_engine);
    cJSON_AddNumberToObject(j, "macs", macs);
    cJSON_AddNumberToObject(j, "warmup", o->warmup);
    cJSON_AddNumberToObject(j, "iters", o->iters);
    cJSON_AddNumberToObject(j, "first_ms", tm->first_ms);
    cJSON_AddNumberToObject(j, "median_ms", tm->median_ms);
    cJSON_AddNumberToObject(j, "min_ms", tm->min_ms);
    cJSON_AddNumberToObject(j, "max_ms", tm->max_ms);
    cJSON_AddNumberToObject(j, "tflops", tflops);
    cJSON_AddNumberToObject(j, "tflops_best", tflops_best);
    cJSON_AddNumberToObject(j, "peak_tflops", o->peak);
    cJSON_AddNumberToObject(j, "frac_peak", tflops / o->peak);
    cJSON_AddNumberToObject(j, "nonfinite", (double)tm->nonfinite);
    cJSON_AddNumberToObject(j, "out_l2", tm->out_l2);
    if (tm->check_rel_l2 >= 0) {
        cJSON_AddNumberToObject(j, "check_rel_l2", tm->check_rel_l2);
        cJSON_AddNumberToObject(j, "check_maxabs", tm->check_maxabs);
    }
    cJSON_AddStringToObject(j, "repro", rp_git_revision());
    char *s = cJSON_PrintUnformatted(j);
    printf("# %s %s numerics %s: batch %d, %.1f GMAC/image, median %.2f ms (min %.2f), %.1f TFLOP/s = %.3f of %.0f "
           "peak\n", o->model, o->precision, rp_numerics_name(num), B, macs_img / 1e9, tm->median_ms, tm->min_ms,
           tflops, tflops / o->peak, o->peak);
    printf("RESULT %s\n", s ? s : "{}");
    fflush(stdout);
    free(s);
    cJSON_Delete(j);
}

/* Times rf under the numerics --numerics names (default, invariant, or both in this order) and
 * prints each result; with both, the ratio of the medians, invariant / default, measured in
 * this one process. Invariant numerics: the invariant GEMM and canonical attention, inputs
 * rounded to bf16 when --precision is bf16 (ctx->precision, the host rule), else fp32. */
static int time_numerics(const run_fn *rf, rp_ctx *ctx, const opts *o, rp_device *d, const char *family, int B,
                         int res, int L, double macs_img, double macs_engine) {
    const int both = !strcmp(o->numerics, "both");
    double median[2] = {0, 0};
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        const rp_numerics num = k ? RP_NUMERICS_INVARIANT : RP_NUMERICS_DEFAULT;
        if (!both && strcmp(o->numerics, rp_numerics_name(num))) continue;
        rp_d_unmirror_all(ctx); /* each pass's first forward mirrors the weights (time_forward checks it) */
        ctx->numerics = num;
        ctx->precision = num == RP_NUMERICS_INVARIANT && !strcmp(o->precision, "bf16") ? RP_PREC_BF16 : RP_PREC_FP32;
        timing tm;
        rc = time_forward(rf, ctx, o, &tm);
        if (rc) break;
        print_device_notes(d);
        print_result(o, d, num, family, B, res, L, macs_img, macs_engine, &tm);
        median[k] = tm.median_ms;
        if (tm.nonfinite) {
            fprintf(stderr, PFX "%zu non-finite output values\n", tm.nonfinite);
            rc = 1;
        }
        if (tm.check_failed) rc = 1;
    }
    if (rc == 0 && both)
        printf("# %s %s: invariant / default median forward time = %.3f (%.2f / %.2f ms, this process)\n", o->model,
               o->precision, median[1] / median[0], median[1], median[0]);
    return rc;
}

/* ---- DiT ------------------------------------------------------------------------------------- */

typedef struct dit_run {
    const rp_dit *m;
    const float *x, *t;
    const int *y;
    int B;
} dit_run;

static rp_status dit_fwd(void *u, const rp_ctx *ctx, float *out, rp_error *err) {
    const dit_run *r = u;
    return rp_dit_forward(r->m, ctx, out, r->x, r->t, r->y, r->B, err);
}

/* Builds a DiT preset with weights; NULL on failure (printed). */
static rp_dit *dit_build(const char *name, const opts *o, int shared, int quiet) {
    rp_error err;
    rp_error_clear(&err);
    rp_dit_config cfg;
    rp_param_list l = {0};
    rp_st_file *w = NULL;
    rp_dit *m = NULL;
    if (rp_dit_preset(name, &cfg, &err) != RP_OK) goto fail;
    rp_dit_param_specs(&cfg, &l);
    if ((quiet ? rp_st_synthetic(&l, o->seed, name, &w, &err) : make_weights(&l, o, shared, name, &w, &err)) != RP_OK)
        goto fail;
    if (rp_dit_load(&cfg, w, &m, &err) != RP_OK) goto fail;
    rp_st_close(w);
    rp_params_free(&l);
    return m;
fail:
    fprintf(stderr, PFX "%s: %s\n", name, err.msg);
    rp_st_close(w);
    rp_params_free(&l);
    return NULL;
}

/* DiT inputs for batch B: latents x (B, Cin, S, S), timesteps, classes (207 and the
 * null class alternating: the CFG pair). */
static int dit_run_make(const rp_dit *m, int B, dit_run *r, size_t *out_n) {
    const rp_dit_config *c = rp_dit_cfg(m);
    const int S = c->input_size, Cin = c->in_channels, Cout = c->learn_sigma ? 2 * Cin : Cin;
    float *x = malloc(sizeof(float) * (size_t)B * Cin * S * S), *t = malloc(sizeof(float) * (size_t)B);
    int *y = malloc(sizeof(int) * (size_t)B);
    if (!x || !t || !y) { free(x); free(t); free(y); return 1; }
    for (int b = 0; b < B; b++) {
        rp_randn(x + (size_t)b * Cin * S * S, (size_t)Cin * S * S, 0, (uint64_t)b / 2, 0); /* a pair shares x */
        t[b] = 500.0f;
        y[b] = b % 2 ? c->num_classes : 207 % c->num_classes;
    }
    *r = (dit_run){m, x, t, y, B};
    *out_n = (size_t)B * Cout * S * S;
    return 0;
}

static void dit_run_free(dit_run *r) {
    free((void *)r->x); free((void *)r->t); free((void *)r->y);
}

/* A tiny model of the family, forwarded on a throwaway device of the same kind: its
 * weights must get mirrored, else the forward is not on the device (and the real model
 * would silently run on the CPU for minutes). Returns 0 when it ran on the device. */
static int probe(const opts *o, int is_flux);

static int bench_dit(const opts *o, rp_device *d) {
    rp_dit *m = dit_build(o->model, o, !strcmp(o->weights, "shared"), 0);
    if (!m) return 1;
    const rp_dit_config *c = rp_dit_cfg(m);
    const int B = o->batch > 0 ? o->batch : 2, res = 8 * c->input_size;
    if (o->res > 0 && o->res != res) {
        fprintf(stderr, PFX "%s is a %d px model (--res %d)\n", o->model, res, o->res);
        rp_dit_free(m);
        return 2;
    }
    dit_run r;
    size_t out_n = 0;
    if (dit_run_make(m, B, &r, &out_n)) { fprintf(stderr, PFX "out of host memory\n"); rp_dit_free(m); return 1; }
    const double macs_img = rp_dit_macs(c);
    printf("# %s: %d px (latent %dx%dx%d), patch %d, hidden %d, depth %d, heads %d; batch %d; "
           "MACs (rp_dit_macs) %.4f G per image, %.4f G per forward\n",
           o->model, res, c->in_channels, c->input_size, c->input_size, c->patch, c->hidden, c->depth, c->heads, B,
           macs_img / 1e9, macs_img * B / 1e9);
    rp_ctx ctx = rp_ctx_default();
    ctx.dev = d;
    ctx.attn.kind = !strcmp(o->attention, "split")   ? RP_ATTN_SPLIT
                    : !strcmp(o->attention, "flash") ? RP_ATTN_FLASH
                    : !strcmp(o->attention, "auto")  ? RP_ATTN_AUTO
                                                     : RP_ATTN_MATH;
    run_fn rf = {dit_fwd, &r, out_n};
    const int rc = time_numerics(&rf, &ctx, o, d, "dit", B, res, -1, macs_img, 0);
    rp_d_unmirror_all(&ctx); /* before the host block it mirrors is freed */
    dit_run_free(&r);
    rp_dit_free(m);
    return rc;
}

/* ---- FLUX ------------------------------------------------------------------------------------ */

typedef struct flux_run {
    const rp_flux *m;
    const float *x, *t, *g, *context, *pooled;
    int B, H, W, L;
} flux_run;

static rp_status flux_fwd(void *u, const rp_ctx *ctx, float *out, rp_error *err) {
    const flux_run *r = u;
    return rp_flux_forward(r->m, ctx, out, r->x, r->t, r->g, r->context, NULL, r->pooled, r->B, r->H, r->W, r->L,
                           err);
}

static rp_flux *flux_build(const char *name, const opts *o, int shared, int quiet) {
    rp_error err;
    rp_error_clear(&err);
    rp_flux_config cfg;
    rp_param_list l = {0};
    rp_st_file *w = NULL;
    rp_flux *m = NULL;
    if (rp_flux_preset(name, &cfg, &err) != RP_OK) goto fail;
    if (o->blocks > 0 && rp_flux_set_depth(&cfg, o->blocks, o->blocks, &err) != RP_OK) goto fail;
    rp_flux_param_specs(&cfg, &l);
    if ((quiet ? rp_st_synthetic(&l, o->seed, name, &w, &err) : make_weights(&l, o, shared, name, &w, &err)) != RP_OK)
        goto fail;
    double t0 = now();
    if (rp_flux_load(&cfg, w, &m, &err) != RP_OK) goto fail;
    rp_st_close(w);
    if (!quiet) printf("# model built (weights copied into the model's block): %.1f s\n", now() - t0);
    rp_params_free(&l);
    return m;
fail:
    fprintf(stderr, PFX "%s: %s\n", name, err.msg);
    rp_st_close(w);
    rp_params_free(&l);
    return NULL;
}

static int flux_run_make(const rp_flux *m, int B, int H, int W, int L, flux_run *r, size_t *out_n) {
    const rp_flux_config *c = rp_flux_cfg(m);
    const size_t nx = (size_t)B * c->in_channels * H * W, nc = (size_t)B * L * c->joint_attention_dim,
                 np = (size_t)B * c->pooled_dim;
    float *x = malloc(sizeof(float) * nx), *t = malloc(sizeof(float) * (size_t)B),
          *g = malloc(sizeof(float) * (size_t)B), *ctxt = malloc(sizeof(float) * (nc ? nc : 1)),
          *pooled = malloc(sizeof(float) * np);
    if (!x || !t || !g || !ctxt || !pooled) {
        free(x); free(t); free(g); free(ctxt); free(pooled);
        return 1;
    }
    rp_randn(x, nx, 0, 0, 0);
    rp_randn(ctxt, nc, 1, 0, 0);
    rp_randn(pooled, np, 2, 0, 0);
    for (int b = 0; b < B; b++) t[b] = 0.75f, g[b] = 3.5f;
    *r = (flux_run){m, x, t, c->guidance_embeds ? g : NULL, ctxt, pooled, B, H, W, L};
    if (!c->guidance_embeds) free(g);
    *out_n = nx;
    return 0;
}

static void flux_run_free(flux_run *r) {
    free((void *)r->x); free((void *)r->t); free((void *)r->g); free((void *)r->context); free((void *)r->pooled);
}

static int bench_flux(const opts *o, rp_device *d) {
    rp_error err;
    rp_error_clear(&err);
    rp_flux_config pc;
    if (rp_flux_preset(o->model, &pc, &err) != RP_OK) { fprintf(stderr, PFX "%s\n", err.msg); return 2; }
    const int res = o->res > 0 ? o->res : 8 * pc.sample_size;
    if (res % 16) {
        fprintf(stderr, PFX "--res %d: FLUX needs a multiple of 16 px (latent /8, then 2x2 packing)\n", res);
        return 2;
    }
    rp_flux *m = flux_build(o->model, o, strcmp(o->weights, "full") != 0, 0);
    if (!m) return 1;
    const rp_flux_config *c = rp_flux_cfg(m);
    const int B = o->batch > 0 ? o->batch : 1, H = res / 8, W = res / 8, L = c->text_len;
    flux_run r;
    size_t out_n = 0;
    if (flux_run_make(m, B, H, W, L, &r, &out_n)) {
        fprintf(stderr, PFX "out of host memory\n");
        rp_flux_free(m);
        return 1;
    }
    const double macs_img = flux_macs(c, H, W, L), macs_engine = rp_flux_macs(c, H, W, L);
    const int N = (H / 2) * (W / 2);
    printf("# %s: %d px (latent %dx%dx%d), %d image + %d text tokens, hidden %d, heads %d x %d, %d double + %d "
           "single blocks; batch %d; MACs (counted here) %.4f G per image, engine's rp_flux_macs %.4f G\n",
           o->model, res, c->in_channels, H, W, N, L, c->hidden, c->heads, c->head_dim, c->n_double, c->n_single, B,
           macs_img / 1e9, macs_engine / 1e9);
    if (fabs(macs_img - macs_engine) > 1e-9 * macs_img)
        printf("# WARNING: the MAC counts differ (here %.6e, rp_flux_macs %.6e): TFLOP/s use the count made here\n",
               macs_img, macs_engine);
    rp_ctx ctx = rp_ctx_default();
    ctx.dev = d;
    ctx.attn.kind = !strcmp(o->attention, "split")   ? RP_ATTN_SPLIT
                    : !strcmp(o->attention, "flash") ? RP_ATTN_FLASH
                    : !strcmp(o->attention, "auto")  ? RP_ATTN_AUTO
                                                     : RP_ATTN_MATH;
    run_fn rf = {flux_fwd, &r, out_n};
    const int rc = time_numerics(&rf, &ctx, o, d, "flux", B, res, L, macs_img, macs_engine);
    rp_d_unmirror_all(&ctx);
    flux_run_free(&r);
    rp_flux_free(m);
    return rc;
}

static int probe(const opts *o, int is_flux) {
    rp_device *d = NULL;
    if (make_device(o, &d) != 0) return 1;
    rp_ctx ctx = rp_ctx_default();
    ctx.dev = d;
    int ok = 0;
    if (is_flux) {
        rp_flux *m = flux_build("flux-tiny", o, 0, 1);
        if (m) {
            const rp_flux_config *c = rp_flux_cfg(m);
            flux_run r;
            size_t n = 0;
            if (!flux_run_make(m, 1, c->sample_size, c->sample_size, c->text_len, &r, &n)) {
                float *out = malloc(sizeof(float) * n);
                run_fn rf = {flux_fwd, &r, n};
                ok = out && !forward(&rf, &ctx, out, "probe (flux-tiny)") && d->n_mirrors > 0;
                free(out);
                flux_run_free(&r);
            }
            rp_d_unmirror_all(&ctx);
            rp_flux_free(m);
        }
    } else {
        rp_dit *m = dit_build("dit-tiny", o, 0, 1);
        if (m) {
            dit_run r;
            size_t n = 0;
            if (!dit_run_make(m, 2, &r, &n)) {
                float *out = malloc(sizeof(float) * n);
                run_fn rf = {dit_fwd, &r, n};
                ok = out && !forward(&rf, &ctx, out, "probe (dit-tiny)") && d->n_mirrors > 0;
                free(out);
                dit_run_free(&r);
            }
            rp_d_unmirror_all(&ctx);
            rp_dit_free(m);
        }
    }
    rp_device_destroy(d);
    if (!ok)
        fprintf(stderr, PFX "probe: a %s forward did not run on the %s device (no weights mirrored, or it failed): "
                        "is rp_%s_forward ported to engine/device.h?\n",
                is_flux ? "flux-tiny" : "dit-tiny", o->device, is_flux ? "flux" : "dit");
    return !ok;
}

/* ---- main ---------------------------------------------------------------------------------- */

static int usage(const char *msg) {
    if (msg) fprintf(stderr, PFX "%s\n", msg);
    fprintf(stderr,
            "usage: cuda_models --model dit-xl-2-256|flux-dev [--precision fp32|tf32|bf16|fp16]\n"
            "         [--mode deterministic|fast] [--attention math|split|flash|auto] [--warmup N] [--iters N]\n"
            "         [--peak TFLOPS] [--batch B] [--res PX] [--weights full|shared] [--device cuda|cuda:NAME|host-check]\n"
            "         [--check] [--seed S] [--numerics default|invariant|both] [--blocks N (FLUX: N double + N single)]\n");
    return 2;
}

static int one_of(const char *v, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(v, *list)) return 1;
    return 0;
}

int main(int argc, char **argv) {
    rp_error err;
    rp_error_clear(&err); /* also pulls engine/error.o into the link early (see bench/cuda_gemm.c) */
    rp_args a;
    rp_args_init(&a, argc, argv);
    opts o;
    memset(&o, 0, sizeof o);
    o.model = rp_arg_str(&a, "model", "dit-xl-2-256");
    o.precision = rp_arg_str(&a, "precision", "bf16");
    o.mode = rp_arg_str(&a, "mode", "deterministic");
    o.attention = rp_arg_str(&a, "attention", "auto");
    o.weights = rp_arg_str(&a, "weights", NULL);
    o.device = rp_arg_str(&a, "device", "cuda");
    o.warmup = (int)rp_arg_int(&a, "warmup", 3);
    o.iters = (int)rp_arg_int(&a, "iters", 10);
    o.batch = (int)rp_arg_int(&a, "batch", 0);
    o.res = (int)rp_arg_int(&a, "res", 0);
    o.peak = rp_arg_double(&a, "peak", 989.0);
    o.seed = (uint64_t)rp_arg_int(&a, "seed", 0);
    o.check = rp_arg_flag(&a, "check");
    o.numerics = rp_arg_str(&a, "numerics", "default");
    o.blocks = (int)rp_arg_int(&a, "blocks", 0);
    if (rp_args_finish(&a, &err) != RP_OK) return usage(err.msg);
    static const char *const precs[] = {"fp32", "tf32", "bf16", "fp16", NULL};
    static const char *const modes[] = {"deterministic", "fast", NULL};
    static const char *const attns[] = {"math", "split", "flash", "auto", NULL};
    static const char *const wts[] = {"full", "shared", NULL};
    static const char *const nums[] = {"default", "invariant", "both", NULL};
    if (!one_of(o.precision, precs)) return usage("--precision must be fp32, tf32, bf16 or fp16");
    if (!one_of(o.numerics, nums)) return usage("--numerics must be default, invariant or both");
    if (strcmp(o.numerics, "default") && strcmp(o.precision, "fp32") && strcmp(o.precision, "bf16"))
        return usage("--numerics invariant rounds its inputs to fp32 or bf16 only: --precision fp32 or bf16");
    if (o.blocks < 0) return usage("--blocks must be >= 0");
    if (!one_of(o.mode, modes)) return usage("--mode must be deterministic or fast");
    if (!one_of(o.attention, attns)) return usage("--attention must be math, split, flash or auto");
    if (o.weights && !one_of(o.weights, wts)) return usage("--weights must be full or shared");
    if (o.warmup < 0 || o.iters < 1 || o.iters > 100000) return usage("--warmup must be >= 0, --iters 1..100000");
    if (o.batch < 0 || o.batch > 64 || o.res < 0) return usage("--batch must be 1..64, --res > 0");
    if (!(o.peak > 0)) return usage("--peak must be > 0 (TFLOP/s)");
    if (strcmp(o.device, "host-check") != 0 && strcmp(o.device, "cuda") != 0 && strncmp(o.device, "cuda:", 5) != 0)
        return usage("--device must be cuda, cuda:<GPU name substring>, cuda:#<ordinal> or host-check");
    rp_dit_config dc;
    rp_flux_config fc;
    rp_error e1, e2;
    rp_error_clear(&e1);
    rp_error_clear(&e2);
    const int is_dit = rp_dit_preset(o.model, &dc, &e1) == RP_OK;
    const int is_flux = !is_dit && rp_flux_preset(o.model, &fc, &e2) == RP_OK;
    if (!is_dit && !is_flux) {
        fprintf(stderr, PFX "--model %s: not a DiT or FLUX preset (%s; %s)\n", o.model, e1.msg, e2.msg);
        return 2;
    }
    if (!o.weights) o.weights = is_flux ? "shared" : "full";

    rp_device *d = NULL;
    int mk = make_device(&o, &d);
    if (mk < 0) {
#ifdef REPRO_HAVE_CUDA
        printf("cuda_models: no CUDA device: skipped (no driver or no visible GPU; %s %s not run)\n", o.model,
               o.precision);
#else
        printf("cuda_models: no CUDA device: skipped (this build has no CUDA: nvcc was not found at configure "
               "time; %s %s not run)\n", o.model, o.precision);
#endif
        return 0;
    }
    if (mk) return 1;
    printf("# cuda_models | device %s | %s %s, attention %s | repro %s\n", d->name, o.precision, o.mode, o.attention,
           rp_git_revision());
    if (!strcmp(o.device, "host-check"))
        printf("# host-check: the CPU ops behind the device interface (precision and mode do not apply; "
               "a test of this program, not a measurement)\n");
    fflush(stdout);
    /* the probe makes its own device: mirror and GEMM records of this one stay the model's */
    int rc = probe(&o, is_flux);
    if (rc == 0) rc = is_flux ? bench_flux(&o, d) : bench_dit(&o, d);
    rp_device_destroy(d);
    return rc;
}
