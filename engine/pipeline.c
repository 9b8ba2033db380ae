/* pipeline.c — DiT denoiser with classifier-free guidance, and rp_generate:
 * weights -> initial noise -> sampler loop -> VAE decode -> RGB8. */
#include "pipeline.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "models/registry.h"
#include "rng.h"
#include "safetensors.h"
#include "trace.h"
#include "vae/vae.h"
#include "weights_cache.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- DiT denoiser ------------------------------------------------------------------ */

static int dit_guided(const rp_dit_denoiser *d) { return d->cfg > 1.0; }

rp_status rp_dit_denoiser_init(rp_dit_denoiser *d, const rp_dit *model, const rp_ctx *ctx, int B,
                               const int *y, double cfg, rp_error *err) {
    memset(d, 0, sizeof *d);
    assert(model && ctx && B >= 1 && y);
    const rp_dit_config *c = rp_dit_cfg(model);
    d->model = model;
    d->ctx = ctx;
    d->B = B;
    d->y = y;
    d->cfg = cfg;
    const int Bm = dit_guided(d) ? 2 * B : B;
    const size_t SS = (size_t)c->input_size * c->input_size;
    const int Cout = c->learn_sigma ? 2 * c->in_channels : c->in_channels;
    d->xin = malloc(sizeof(float) * Bm * c->in_channels * SS);
    d->out = malloc(sizeof(float) * Bm * Cout * SS);
    d->t = malloc(sizeof(float) * Bm);
    d->yy = malloc(sizeof(int) * Bm);
    if (!d->xin || !d->out || !d->t || !d->yy) {
        rp_dit_denoiser_free(d);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for a DiT batch of %d", Bm);
    }
    for (int b = 0; b < B; b++) {
        d->yy[b] = y[b];
        if (Bm > B) d->yy[B + b] = c->num_classes; /* the null class */
    }
    return RP_OK;
}

void rp_dit_denoiser_free(rp_dit_denoiser *d) {
    if (!d) return;
    free(d->xin);
    free(d->out);
    free(d->t);
    free(d->yy);
    d->xin = d->out = NULL;
    d->t = NULL;
    d->yy = NULL;
}

/* x (B, Cin, S, S) at training timestep t -> eps (B, Cin, S, S) guided, and
 * var (B, Cin, S, S) = the conditional pass's learned-range channels. */
static rp_status dit_eval(void *self, const float *x, int i, double t, float *eps, float *var,
                          rp_error *err) {
    rp_dit_denoiser *d = self;
    const rp_dit_config *c = rp_dit_cfg(d->model);
    const int B = d->B, guided = dit_guided(d);
    const int Bm = guided ? 2 * B : B;
    const int Cin = c->in_channels, Cout = c->learn_sigma ? 2 * Cin : Cin;
    const size_t SS = (size_t)c->input_size * c->input_size;
    const size_t per_in = (size_t)Cin * SS, per_out = (size_t)Cout * SS;

    /* DiT's forward_with_cfg feeds the same latent twice: [x; x] with [y; null]. */
    memcpy(d->xin, x, sizeof(float) * B * per_in);
    if (guided) memcpy(d->xin + B * per_in, x, sizeof(float) * B * per_in);
    for (int b = 0; b < Bm; b++) d->t[b] = (float)t;
    RP_TRY(rp_dit_forward(d->model, d->ctx, d->out, d->xin, d->t, d->yy, Bm, err));
    rp_trace_next_eval(d->ctx->trace);
    d->n_evals++;

    /* In float, in the order torch evaluates uncond + s * (cond - uncond), so the
     * guidance adds no difference of its own against the reference. */
    const float s = (float)d->cfg;
    for (int b = 0; b < B; b++) {
        const float *cond = d->out + b * per_out;           /* (Cout, S, S) */
        float *e = eps + b * per_in;                         /* (Cin, S, S) */
        if (guided) {
            const float *unc = d->out + (B + b) * per_out;   /* (Cout, S, S) */
            for (size_t j = 0; j < per_in; j++) e[j] = unc[j] + s * (cond[j] - unc[j]);
        } else {
            memcpy(e, cond, sizeof(float) * per_in);
        }
        if (var && c->learn_sigma) memcpy(var + b * per_in, cond + per_in, sizeof(float) * per_in);
    }
    (void)i;
    return RP_OK;
}

rp_denoiser rp_dit_denoiser_as(rp_dit_denoiser *d) {
    rp_denoiser r = {d, rp_dit_cfg(d->model)->learn_sigma, dit_eval};
    return r;
}

/* ---- per-item noise ----------------------------------------------------------------- */

typedef struct item_noise {
    const rp_gen_item *items;
    int B;
    size_t per;   /* floats per item */
} item_noise;

/* out (B, per): item b's ancestral noise of loop step k. */
static rp_status item_noise_fill(void *self, int k, float *out, rp_error *err) {
    const item_noise *n = self;
    for (int b = 0; b < n->B; b++)
        rp_randn(out + (size_t)b * n->per, n->per, n->items[b].seed, n->items[b].global_index,
                 RP_STREAM_STEP_NOISE_BASE + (uint32_t)k);
    return RP_OK;
}

/* ---- rp_generate --------------------------------------------------------------------- */

const char *rp_gen_default_vae(const char *model) {
    return model && !strcmp(model, "dit-tiny") ? "vae-tiny" : "sd-vae";
}

void rp_gen_result_free(rp_gen_result *r) {
    if (!r) return;
    free(r->noise);
    free(r->latents);
    free(r->trajectory);
    free(r->timesteps);
    free(r->alphas_cumprod);
    free(r->rgb);
    memset(r, 0, sizeof *r);
}

static rp_status check_request(const rp_gen_request *req, const rp_dit_config *c, rp_error *err) {
    if (req->steps < 1 || req->steps > RP_DIT_TRAIN_STEPS)
        return RP_FAIL(err, RP_ERR_INVALID, "steps must be in 1..%d (got %d)", RP_DIT_TRAIN_STEPS,
                       req->steps);
    if (!(req->cfg >= 0.0))
        return RP_FAIL(err, RP_ERR_INVALID, "cfg scale must be >= 0 (got %g)", req->cfg);
    if (!(req->eta >= 0.0))
        return RP_FAIL(err, RP_ERR_INVALID, "eta must be >= 0 (got %g)", req->eta);
    if (req->sampler == RP_SAMPLER_DDIM && req->eta > 1.0)
        return RP_FAIL(err, RP_ERR_INVALID, "DDIM eta must be in [0, 1] (got %g)", req->eta);
    if (req->n_items < 1 || !req->items)
        return RP_FAIL(err, RP_ERR_INVALID, "nothing to generate (no items)");
    for (int b = 0; b < req->n_items; b++) {
        const rp_gen_item *it = &req->items[b];
        if (it->prompt)
            return RP_FAIL(err, RP_ERR_UNSUPPORTED, "model '%s' is class-conditional: prompts are not supported",
                           req->model);
        if (it->class_id < 0 || it->class_id >= c->num_classes)
            return RP_FAIL(err, RP_ERR_INVALID, "item %d: class %d out of range for %s (0..%d)", b,
                           it->class_id, req->model, c->num_classes - 1);
    }
    return RP_OK;
}

/* Opens path and loads a DiT from it. */
static rp_status load_dit(const rp_dit_config *c, const char *path, rp_dit **out, rp_error *err) {
    rp_st_file *f = NULL;
    RP_TRY(rp_st_open(path, &f, err));
    rp_status st = rp_dit_load(c, f, out, err);
    rp_st_close(f); /* rp_dit_load copies the parameters into its own block */
    return st;
}

static rp_status load_vae(const rp_vae_config *c, const char *path, rp_vae **out, rp_error *err) {
    rp_st_file *f = NULL;
    RP_TRY(rp_st_open(path, &f, err));
    rp_status st = rp_vae_load(c, f, out, err);
    rp_st_close(f);
    return st;
}

static rp_status decode_all(const rp_gen_request *req, const rp_ctx *ctx, rp_gen_result *res,
                            rp_error *err) {
    const char *vae_name = req->vae ? req->vae : rp_gen_default_vae(req->model);
    snprintf(res->vae_name, sizeof res->vae_name, "%s", vae_name);
    rp_vae_config vc;
    RP_TRY(rp_vae_preset(vae_name, &vc, err));
    if (vc.latent_channels != res->C)
        return RP_FAIL(err, RP_ERR_SHAPE, "VAE '%s' takes %d latent channels but model '%s' makes %d",
                       vae_name, vc.latent_channels, req->model, res->C);
    RP_TRY(rp_weights_resolve(vae_name, 0, req->weight_seed, req->vae_weights, res->vae_weights_path,
                              sizeof res->vae_weights_path, err));
    rp_vae *vae = NULL;
    RP_TRY(load_vae(&vc, res->vae_weights_path, &vae, err));
    const int f = rp_vae_scale_factor(&vc);
    const int H = res->S * f, W = res->S * f;
    const size_t per_lat = (size_t)res->C * res->S * res->S, per_img = (size_t)3 * H * W;
    float *img = malloc(sizeof(float) * per_img);                   /* (1, 3, H, W) */
    res->rgb = malloc((size_t)res->B * H * W * 3);                   /* (B, H, W, 3) */
    rp_status st = RP_OK;
    if (!img || !res->rgb) {
        st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory for %d decoded %dx%d images", res->B, W, H);
    } else {
        /* One item at a time: bounded memory, and each image is independent of the
         * batch it was sampled in. */
        for (int b = 0; b < res->B && st == RP_OK; b++) {
            st = rp_vae_decode(vae, ctx, img, res->latents + b * per_lat, 1, res->S, res->S, err);
            if (st == RP_OK) rp_image_to_rgb8(res->rgb + (size_t)b * H * W * 3, img, 1, H, W);
        }
    }
    if (st == RP_OK) { res->H = H; res->W = W; }
    free(img);
    rp_vae_free(vae);
    return st;
}

rp_status rp_generate(const rp_gen_request *req, const rp_ctx *ctx, rp_gen_result *res,
                      rp_error *err) {
    memset(res, 0, sizeof *res);
    assert(req && ctx && res);
    if (!req->model) return RP_FAIL(err, RP_ERR_INVALID, "no model given");
    rp_family fam;
    RP_TRY(rp_model_family(req->model, &fam, err));
    if (fam != RP_FAMILY_DIT)
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s' is not a diffusion transformer (known DiT presets: "
                       "dit-tiny dit-xl-2-256 dit-xl-2-512)", req->model);
    rp_dit_config c;
    RP_TRY(rp_dit_preset(req->model, &c, err));
    if (req->depth > 0) c.depth = req->depth;
    RP_TRY(check_request(req, &c, err));

    const int B = req->n_items, C = c.in_channels, S = c.input_size, N = req->steps;
    const size_t per = (size_t)C * S * S, n = (size_t)B * per;
    res->B = B; res->C = C; res->S = S; res->steps = N;

    rp_schedule sched = {0};
    rp_dit *model = NULL;
    rp_dit_denoiser dd = {0};
    int *y = NULL;
    rp_status st;
    if ((st = rp_schedule_dit(&sched, N, err)) != RP_OK) goto fail;
    if ((st = rp_weights_resolve(req->model, req->depth, req->weight_seed, req->weights,
                                 res->weights_path, sizeof res->weights_path, err)) != RP_OK)
        goto fail;
    if ((st = load_dit(&c, res->weights_path, &model, err)) != RP_OK) goto fail;

    res->noise = malloc(sizeof(float) * n);                          /* (B, C, S, S) */
    res->latents = malloc(sizeof(float) * n);                        /* (B, C, S, S) */
    res->trajectory = malloc(sizeof(float) * n * (size_t)(N + 1));  /* (N+1, B, C, S, S) */
    res->timesteps = malloc(sizeof(double) * N);                    /* (N) */
    res->alphas_cumprod = malloc(sizeof(double) * N);               /* (N) */
    y = malloc(sizeof(int) * B);                                     /* (B) */
    if (!res->noise || !res->latents || !res->trajectory || !res->timesteps || !res->alphas_cumprod || !y) {
        st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory for %d items x %d steps of latents", B, N);
        goto fail;
    }
    for (int b = 0; b < B; b++) {
        const rp_gen_item *it = &req->items[b];
        rp_randn(res->noise + b * per, per, it->seed, it->global_index, RP_STREAM_INIT_NOISE);
        y[b] = it->class_id;
    }
    for (int k = 0; k < N; k++) res->alphas_cumprod[k] = sched.alphas_cumprod[N - 1 - k];

    if (ctx->trace) {
        char v[64];
        rp_trace_note(ctx->trace, "sampler", rp_sampler_name(req->sampler));
        snprintf(v, sizeof v, "%d", N);
        rp_trace_note(ctx->trace, "steps", v);
        snprintf(v, sizeof v, "%.17g", req->cfg);
        rp_trace_note(ctx->trace, "cfg", v);
    }

    if ((st = rp_dit_denoiser_init(&dd, model, ctx, B, y, req->cfg, err)) != RP_OK) goto fail;
    rp_denoiser den = rp_dit_denoiser_as(&dd);
    item_noise inoise = {req->items, B, per};
    rp_noise_src nsrc = {&inoise, item_noise_fill};
    rp_sampler_cfg scfg = {req->sampler, req->eta};
    memcpy(res->latents, res->noise, sizeof(float) * n);
    double t0 = now_s();
    st = rp_sample(&scfg, &sched, &den, &nsrc, res->latents, n, res->trajectory, res->timesteps, err);
    res->sample_seconds = now_s() - t0;
    res->n_evals = dd.n_evals;
    rp_dit_denoiser_free(&dd);
    rp_dit_free(model);
    model = NULL;
    if (st != RP_OK) goto fail;

    if (req->decode) {
        t0 = now_s();
        if ((st = decode_all(req, ctx, res, err)) != RP_OK) goto fail;
        res->decode_seconds = now_s() - t0;
    }
    free(y);
    rp_schedule_free(&sched);
    return RP_OK;

fail:
    rp_dit_denoiser_free(&dd);
    if (model) rp_dit_free(model);
    free(y);
    rp_schedule_free(&sched);
    rp_gen_result_free(res);
    return st;
}
