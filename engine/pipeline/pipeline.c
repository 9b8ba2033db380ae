/* pipeline.c — the DiT denoiser with classifier-free guidance, the SD3 / FLUX
 * flow-matching denoiser, and rp_generate:
 *   DiT:        weights -> initial noise -> sampler loop -> VAE decode -> RGB8
 *   SD3 / FLUX: text encoder -> prompt states -> weights -> initial noise ->
 *               flow Euler loop -> VAE decode -> RGB8 */
#include "pipeline.h"
#include "device.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "model_cache.h"
#include "models/registry.h"
#include "models/text_encoder.h"
#include "parallel/parallel.h"
#include "prompt_embeds.h"
#include "sampler_own.h"
#include "rng.h"
#include "safetensors.h"
#include "st_compose.h"
#include "trace.h"
#include "vae/vae.h"
#include "weights_cache.h"

/* ---- parallel layouts ---------------------------------------------------------------- */

/* This rank's items in the whole run: the position of its first, and how many the run has
 * (the request's own B without dp). */
static void par_items(const rp_ctx *ctx, int B, int *first, int *total) {
    const rp_parallel *p = ctx->par;
    *first = p && p->n_items_total > 0 ? p->item_first : 0;
    *total = p && p->n_items_total > 0 ? p->n_items_total : B;
}

/* Trace rows of a joint forward over segments [s0, s0 + nseg) of B local items each, in the
 * single-rank layout [segment 0 x total items; segment 1 x total items] (nseg_all segments). */
static void joint_rows(const rp_ctx *ctx, int *rows, int B, int s0, int nseg, int nseg_all) {
    int first, total;
    par_items(ctx, B, &first, &total);
    for (int s = 0; s < nseg; s++)
        for (int b = 0; b < B; b++) rows[s * B + b] = (s0 + s) * total + first + b;
    rp_par_set_trace_rows(ctx->par, rows, nseg * B, nseg_all * total);
}

/* The model inputs that are one value per evaluation, fingerprinted for the WORLD replica
 * check before the forward (every rank feeds its rows the same timestep and guidance,
 * whatever its items): t (rows), and the guidance: the embedded g (rows, FLUX) or else the
 * CFG scale as the combine uses it. A no-op without a layout. */
static void note_eval_inputs(const rp_ctx *ctx, int eval, const float *t, const float *g, int rows, double cfg) {
    if (!ctx->par) return;
    rp_par_replica_note_at(ctx, eval, RP_PAR_RG_WORLD, "timestep", t, (size_t)rows);
    const float s = (float)cfg;
    if (g) rp_par_replica_note_at(ctx, eval, RP_PAR_RG_WORLD, "guidance", g, (size_t)rows);
    else rp_par_replica_note_at(ctx, eval, RP_PAR_RG_WORLD, "guidance", &s, 1);
}

/* The sampler's coefficients of loop step k (n doubles), fingerprinted for the WORLD replica
 * check: every rank steps its items with the same schedule, so a rank whose schedule or
 * solver coefficients differ (another shift, another respacing, another final alpha) is
 * named at the step it acts on, "sampler.step", whatever its effect on the latents. The
 * bytes of the doubles are what is fingerprinted. A no-op without a layout. */
static void note_sampler_step(const rp_ctx *ctx, int k, const double *coef, int n) {
    if (!ctx->par) return;
    rp_par_replica_note_at(ctx, k, RP_PAR_RG_WORLD, "sampler.step", (const float *)(const void *)coef,
                           (size_t)n * (sizeof(double) / sizeof(float)));
}

/* ---- DiT denoiser ------------------------------------------------------------------ */

/* One DiT forward's arguments, for rp_par_forward's callback. */
typedef struct dit_fwd {
    const rp_dit *model;
    const float *x, *t;   /* (B, Cin, S, S), (B) */
    const int *y;         /* (B) */
    int B;
} dit_fwd;

static rp_status dit_fwd_run(void *u, const rp_ctx *ctx, float *out, rp_error *err) {
    const dit_fwd *f = u;
    return rp_dit_forward(f->model, ctx, out, f->x, f->t, f->y, f->B, err);
}

/* The model on B rows -> out (B, Cout, S, S). Under a parallel layout through
 * rp_par_forward (pipefusion and patch keep per-step state); else the plain call. */
static rp_status dit_forward(const rp_dit_denoiser *d, float *out, const float *x, const int *y, int B,
                             rp_error *err) {
    if (!d->ctx->par) return rp_dit_forward(d->model, d->ctx, out, x, d->t, y, B, err);
    const rp_dit_config *c = rp_dit_cfg(d->model);
    const size_t n_out = (size_t)B * (c->learn_sigma ? 2 : 1) * c->in_channels * c->input_size * c->input_size;
    dit_fwd f = {d->model, x, d->t, y, B};
    return rp_par_forward(d->ctx, d->n_evals, dit_fwd_run, &f, out, n_out, err);
}

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
    if (ctx->par) {
        d->half = malloc(sizeof(float) * B * Cout * SS);
        d->rows = malloc(sizeof(int) * Bm);
    }
    if (!d->xin || !d->out || !d->t || !d->yy || (ctx->par && (!d->half || !d->rows))) {
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
    free(d->half);
    free(d->rows);
    d->xin = d->out = d->half = NULL;
    d->t = NULL;
    d->yy = d->rows = NULL;
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

    /* a strategy that splits the guided batch: this rank evaluates one segment (0 cond,
     * 1 uncond) of [cond; uncond] */
    const rp_par_strategy_info *split = rp_par_batch_split(d->ctx);
    if (!guided && split)
        return RP_FAIL(err, RP_ERR_INVALID, "%s parallelism needs classifier-free guidance (cfg %g <= 1)", split->name,
                       d->cfg);
    const int seg = rp_par_batch_segment(d->ctx);
    const float tt = d->ctx->par ? rp_par_timestep(d->ctx, d->n_evals, (float)t, d->prev_t) : (float)t;
    d->prev_t = (float)t;
    for (int b = 0; b < Bm; b++) d->t[b] = tt;
    note_eval_inputs(d->ctx, d->n_evals, d->t, NULL, Bm, d->cfg);
    if (seg < 0) {
        /* DiT's forward_with_cfg feeds the same latent twice: [x; x] with [y; null]. */
        memcpy(d->xin, x, sizeof(float) * B * per_in);
        if (guided) memcpy(d->xin + B * per_in, x, sizeof(float) * B * per_in);
        if (d->ctx->par) joint_rows(d->ctx, d->rows, B, 0, guided ? 2 : 1, guided ? 2 : 1);
        RP_TRY(dit_forward(d, d->out, d->xin, d->yy, Bm, err));
    } else {
        joint_rows(d->ctx, d->rows, B, seg, 1, 2);
        RP_TRY(dit_forward(d, d->half, x, d->yy + seg * B, B, err));
        const uint64_t produced = rp_par_fingerprint(d->half, B * per_out); /* the contract's: as produced */
        RP_TRY(rp_par_batch_exchange(d->ctx, d->half, B * per_out, produced, d->out, err)); /* -> [cond; uncond] */
    }
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
    rp_par_nondet(d->ctx, eps, B * per_in);
    /* every rank of the dp group combined the same halves: the copies must be equal */
    rp_par_replica_note(d->ctx, RP_PAR_RG_REPLICA, "guided_output", eps, B * per_in);
    (void)i;
    return RP_OK;
}

/* The latents the loop carries from step to step: the layout's (rp_par_carry). */
static void dit_carry(void *self, float *x, size_t n) { rp_par_carry(((const rp_dit_denoiser *)self)->ctx, x, n); }

rp_denoiser rp_dit_denoiser_as(rp_dit_denoiser *d) {
    rp_denoiser r = {d, rp_dit_cfg(d->model)->learn_sigma, dit_eval, dit_carry};
    return r;
}

/* ---- per-item noise ----------------------------------------------------------------- */

typedef struct item_noise {
    const rp_ctx *ctx;
    const rp_gen_item *items;
    int B;
    size_t per;   /* floats per item */
} item_noise;

/* out (B, per): item b's ancestral noise of loop step k. */
static rp_status item_noise_fill(void *self, int k, float *out, rp_error *err) {
    const item_noise *n = self;
    /* step-noise-index: each item keyed by its place in this rank's batch (right only where
     * that batch starts the whole one) */
    const int local = rp_par_fault(n->ctx, RP_INJECT_STEP_NOISE_INDEX);
    for (int b = 0; b < n->B; b++)
        rp_randn(out + (size_t)b * n->per, n->per, n->items[b].seed, local ? (uint64_t)b : n->items[b].global_index,
                 RP_STREAM_STEP_NOISE_BASE + (uint32_t)k);
    return RP_OK;
}

/* z (B, per): the step noise of loop step k drawn again for the sampler's own check
 * (rp_sampler_own_check_dit), apart from item_noise_fill: Philox keyed by each item's seed
 * and global index on step k's stream, as the reference's run draws it. */
static void item_noise_own(const item_noise *n, int k, float *z) {
    for (int b = 0; b < n->B; b++) {
        const rp_gen_item *it = &n->items[b];
        rp_randn(z + (size_t)b * n->per, n->per, it->seed, it->global_index, RP_STREAM_STEP_NOISE_BASE + (uint32_t)k);
    }
}

/* ---- teacher forcing (the classifier's local-error runs; see rp_gen_request) ------------- */

/* Checks a teacher step mask against the multistep rule: DPM-Solver++(2M)'s step k > 0
 * uses the data prediction of step k - 1, so that step must run too. */
static rp_status teacher_mask_check(const unsigned char *mask, int N, int multistep, rp_error *err) {
    if (!mask || !multistep) return RP_OK;
    for (int k = 1; k < N; k++)
        if (mask[k] && !mask[k - 1])
            return RP_FAIL(err, RP_ERR_INVALID, "teacher forcing with dpmpp-2m: step %d needs step %d run too "
                           "(multistep history)", k, k - 1);
    return RP_OK;
}

/* res->teacher_input for a teacher run of N steps of n floats: (N, n). */
static rp_status teacher_input_alloc(rp_gen_result *res, size_t n, int N, rp_error *err) {
    if (!(res->teacher_input = malloc(sizeof(float) * n * (size_t)(N > 0 ? N : 1))))
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for the teacher run's inputs");
    return RP_OK;
}

/* Row k of a teacher run's inputs (rp_gen_result.teacher_input) for a step it did not run:
 * NaN, which no reference row is, so nothing reads it as evidence. */
static void teacher_input_unrun(float *inputs, int k, size_t n) {
    for (size_t i = 0; i < n; i++) inputs[(size_t)k * n + i] = NAN;
}

/* DiT: rp_sample's loop with every selected step k started from teacher[k] (n floats per row),
 * through the same restart and rp_sampler_step, so the reference's own config reproduces its
 * trajectory bit for bit, every sampler (rp_sample starts each step from the stored latent). */
static rp_status dit_teacher(const rp_ctx *ctx, const rp_sampler_cfg *cfg, const rp_schedule *s,
                             const rp_denoiser *d, const rp_noise_src *noise, const item_noise *inoise,
                             const float *teacher,
                             const unsigned char *mask, size_t n, float *trajectory, float *inputs,
                             double *timesteps, rp_error *err) {
    const int N = s->steps;
    RP_TRY(teacher_mask_check(mask, N, cfg->kind == RP_SAMPLER_DPMPP_2M, err));
    if (rp_sampler_is_stochastic(cfg) && (!noise || !noise->fill))
        return RP_FAIL(err, RP_ERR_INVALID, "sampler %s needs an ancestral noise source", rp_sampler_name(cfg->kind));
    const int own_noise = rp_sampler_is_stochastic(cfg) && inoise && ctx->par && ctx->par->check_own;
    float *x = malloc(n * sizeof(float));                                  /* (n) */
    float *z_own = own_noise ? malloc(n * sizeof(float)) : NULL;           /* (n) */
    if (!x || (own_noise && !z_own)) {
        free(x);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for teacher-forcing buffers (%zu floats)", n);
    }
    rp_sampler_state ss;
    rp_status st = rp_sampler_state_init(&ss, cfg, d, n, err);
    if (st != RP_OK) {
        free(x);
        free(z_own);
        return st;
    }
    memcpy(trajectory, teacher, n * sizeof(float));
    for (int k = 0; k < N && st == RP_OK; k++) {
        if (timesteps) timesteps[k] = s->timestep[N - 1 - k];
        float *out = trajectory + (size_t)(k + 1) * n;
        if (mask && !mask[k]) {
            memcpy(out, teacher + (size_t)(k + 1) * n, n * sizeof(float));
            teacher_input_unrun(inputs, k, n);
            ss.have_last = 0; /* the multistep history is broken here */
            continue;
        }
        memcpy(x, teacher + (size_t)k * n, n * sizeof(float));
        memcpy(inputs + (size_t)k * n, x, n * sizeof(float)); /* what the step starts from */
        rp_sampler_state_restart(&ss, cfg, s, k, x);
        const int had = ss.have_last;
        const double abar_last = ss.abar_last;
        st = rp_sampler_step(cfg, s, d, noise, k, x, &ss, err);
        if (st == RP_OK) memcpy(out, x, n * sizeof(float));
        /* the update again, by code of its own (the step swapped DPM-Solver++'s history into x0) */
        const rp_sampler_own_step own = {.cfg = cfg, .s = s, .k = k, .n = n, .x = teacher + (size_t)k * n,
                                         .eps = ss.eps, .var = ss.var, .z = ss.z, .x0_last = had ? ss.x0 : NULL,
                                         .abar_last = abar_last};
        if (st == RP_OK && z_own) item_noise_own(inoise, k, z_own);
        if (st == RP_OK) st = rp_sampler_own_check_dit(ctx, &own, z_own, out, err);
    }
    rp_sampler_state_free(&ss);
    free(x);
    free(z_own);
    return st;
}

/* SD3 / FLUX: rp_flow_sample_euler's loop with every selected step k started from teacher[k]
 * (the same two calls per step, so the reference's config reproduces its trajectory bit for bit). */
static rp_status flow_teacher(const rp_ctx *ctx, const rp_flow_schedule *s, const rp_flow_denoiser *d,
                              const float *teacher, const unsigned char *mask, size_t n, float *trajectory,
                              float *inputs, rp_error *err) {
    float *x = malloc(sizeof(float) * (n ? n : 1)); /* (n) */
    float *v = malloc(sizeof(float) * (n ? n : 1)); /* (n) velocity */
    rp_status st = RP_OK;
    if (!x || !v) st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory for teacher-forcing buffers (%zu floats)", n);
    if (st == RP_OK) memcpy(trajectory, teacher, n * sizeof(float));
    for (int i = 0; i < s->steps && st == RP_OK; i++) {
        float *out = trajectory + (size_t)(i + 1) * n;
        if (mask && !mask[i]) {
            memcpy(out, teacher + (size_t)(i + 1) * n, n * sizeof(float));
            teacher_input_unrun(inputs, i, n);
            continue;
        }
        memcpy(x, teacher + (size_t)i * n, n * sizeof(float));
        memcpy(inputs + (size_t)i * n, x, n * sizeof(float)); /* what the step starts from */
        st = d->eval(d->self, x, i, s->sigmas[i], s->timesteps[i], v, err);
        if (st != RP_OK) break;
        rp_flow_euler_step(out, x, v, s->sigmas[i], s->sigmas[i + 1], n);
        st = rp_sampler_own_check_flow(ctx, s, i, x, v, out, n, err); /* by code of its own */
    }
    free(x);
    free(v);
    return st;
}

/* The final latents of a teacher run (n floats): its last step's output, or with
 * decode_teacher_final the teacher's last row (the reference's final latents). They are then
 * decoded by the same code as any run's own final latents, so the images' teacher forcing
 * runs the case's decode path, whatever it does with them, and not a path of its own. */
static const float *teacher_final_latents(const rp_gen_request *req, const float *trajectory, size_t n) {
    const float *rows = req->decode_teacher_final ? req->teacher : trajectory;
    return rows + (size_t)req->steps * n;
}

/* The noise-ulp twin: one ulp up on the first value of each of B items of per floats. */
static void perturb_first_values(float *noise, int B, size_t per) {
    for (int b = 0; b < B; b++) noise[(size_t)b * per] = nextafterf(noise[(size_t)b * per], INFINITY);
}

/* noise (B, per): every item's initial noise, a pure function of its seed and global index
 * drawn on the host whatever the layout, precision or device (the classifier holds it
 * bitwise); then the noise-bf16-rank fault where injected, and the noise-ulp twin's ulp. */
static void draw_initial_noise(const rp_gen_request *req, const rp_ctx *ctx, float *noise, int B, size_t per) {
    for (int b = 0; b < B; b++)
        rp_randn(noise + (size_t)b * per, per, req->items[b].seed, req->items[b].global_index, RP_STREAM_INIT_NOISE);
    rp_par_noise_fault(ctx, noise, (size_t)B * per);
    if (req->perturb_noise) perturb_first_values(noise, B, per);
}

/* ---- rp_generate --------------------------------------------------------------------- */

const char *rp_gen_default_vae(const char *model) {
    if (!model) return "sd-vae";
    if (!strcmp(model, "dit-tiny")) return "vae-tiny";
    if (!strcmp(model, "dit-digits") || !strcmp(model, "sd3-digits")) return "vae-digits";
    if (!strcmp(model, "sd3-tiny") || !strcmp(model, "sd3.5-medium-tiny") || !strcmp(model, "flux-tiny") ||
        !strcmp(model, "flux-tiny-schnell"))
        return "vae-tiny-16";
    if (!strcmp(model, "sd3-medium") || !strcmp(model, "sd3.5-large") || !strcmp(model, "sd3.5-medium"))
        return "sd3-vae";
    if (!strcmp(model, "flux-dev") || !strcmp(model, "flux-schnell")) return "flux-vae";
    return "sd-vae";
}

const char *rp_gen_default_text_encoder(const char *model) {
    if (!model) return NULL;
    if (!strcmp(model, "sd3-tiny") || !strcmp(model, "sd3.5-medium-tiny") || !strcmp(model, "flux-tiny") ||
        !strcmp(model, "flux-tiny-schnell"))
        return "te-tiny";
    if (!strcmp(model, "sd3-digits")) return "te-digits";
    if (!strcmp(model, "sd3-medium") || !strcmp(model, "sd3.5-large") || !strcmp(model, "sd3.5-medium"))
        return "te-sd3";
    if (!strcmp(model, "flux-dev") || !strcmp(model, "flux-schnell")) return "te-flux";
    return NULL;
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

static rp_status load_vae(const rp_vae_config *c, const char *path, rp_vae **out, rp_error *err) {
    rp_st_file *f = NULL;
    RP_TRY(rp_weights_open(path, &f, err));
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
    const int H = res->h * f, W = res->w * f;
    const size_t per_lat = (size_t)res->C * res->h * res->w, per_img = (size_t)3 * H * W;
    float *img = malloc(sizeof(float) * per_img);                   /* (1, 3, H, W) */
    res->rgb = malloc((size_t)res->B * H * W * 3);                   /* (B, H, W, 3) */
    const int truncate = rp_par_rgb8_truncates(ctx); /* 0 but for vae-decode-rank's group */
    const float *latents = res->latents; /* (B, C, h, w); a teacher run's: teacher_final_latents */
    rp_status st = RP_OK;
    if (!img || !res->rgb) {
        st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory for %d decoded %dx%d images", res->B, W, H);
    } else {
        /* One item at a time: bounded memory, and each image is independent of the
         * batch it was sampled in. */
        for (int b = 0; b < res->B && st == RP_OK; b++) {
            st = rp_vae_decode(vae, ctx, img, latents + b * per_lat, 1, res->h, res->w, err);
            if (st == RP_OK) rp_image_to_rgb8_cast(res->rgb + (size_t)b * H * W * 3, img, 1, H, W, truncate);
        }
    }
    if (st == RP_OK) { res->H = H; res->W = W; }
    free(img);
    rp_d_unmirror_all(ctx); /* the device copy of the weights goes with them */
    rp_vae_free(vae);
    return st;
}

/* decode_all with the request's decoder arithmetic (req->decode_ctx, else ctx). Its thread
 * count is process state (OpenBLAS's, rp_ctx_apply): set for the decode and ctx's again
 * after, so a teacher decode at the reference's thread count gives the reference's bits. */
static rp_status decode_run(const rp_gen_request *req, const rp_ctx *ctx, rp_gen_result *res, rp_error *err) {
    const rp_ctx *dc = req->decode_ctx ? req->decode_ctx : ctx;
    if (dc->threads != ctx->threads) rp_ctx_apply(dc);
    const rp_status st = decode_all(req, dc, res, err);
    if (dc->threads != ctx->threads) rp_ctx_apply(ctx);
    return st;
}

/* ---- SD3 / FLUX denoiser (flow matching) ------------------------------------------------ */

static int flow_guided(const rp_flow_gen_denoiser *d) {
    return d->model->ops->guidance == RP_GUIDE_CFG && d->cfg > 1.0;
}

/* Row of the model batch holding item b's conditional (cond = 1) or unconditional
 * (cond = 0, guided only) input. Joint: diffusers' [uncond x B; cond x B]. Per item:
 * [uncond_0, cond_0, uncond_1, cond_1, ...], so item b's forward reads rows 2b, 2b+1. */
static int flow_slot(const rp_flow_gen_denoiser *d, int b, int cond) {
    assert(b >= 0 && b < d->B && (cond || flow_guided(d)));
    if (!flow_guided(d)) return b;
    return d->per_item ? 2 * b + cond : cond * d->B + b;
}

rp_status rp_flow_gen_denoiser_init(rp_flow_gen_denoiser *d, const rp_model *model, const rp_ctx *ctx,
                                    const rp_flow_schedule *sched, int B, int h, int w, int L, const float *context,
                                    const float *pooled, const float *neg_context, const float *neg_pooled,
                                    double cfg, double guidance, int per_item, rp_error *err) {
    memset(d, 0, sizeof *d);
    assert(model && model->ops->cond == RP_COND_TEXT);
    assert(ctx && sched && B >= 1 && h >= 1 && w >= 1 && L >= 1 && context && pooled);
    d->model = model;
    d->ctx = ctx;
    d->sched = sched;
    d->B = B; d->h = h; d->w = w; d->L = L;
    d->cfg = cfg;
    d->guidance = guidance;
    d->per_item = per_item != 0;
    assert(model->facts.out_c == model->facts.latent_c); /* the velocity lives in the latent space */
    d->C = model->facts.latent_c;
    d->Dctx = model->facts.Dctx;
    d->Dpool = model->facts.Dpool;
    const int guided = flow_guided(d), Bm = guided ? 2 * B : B;
    const int embedded = model->ops->guidance == RP_GUIDE_EMBEDDED;
    if (guided && (!neg_context || !neg_pooled))
        return RP_FAIL(err, RP_ERR_INVALID, "%s with cfg %g > 1 needs the unconditional (\"\" prompt) encoding",
                       model->ops->label, cfg);
    const size_t per = (size_t)d->C * h * w, per_ctx = (size_t)L * d->Dctx;
    d->xin = malloc(sizeof(float) * Bm * per);
    d->out = malloc(sizeof(float) * Bm * per);
    d->t = malloc(sizeof(float) * Bm);
    d->g = embedded ? malloc(sizeof(float) * Bm) : NULL;
    d->context = malloc(sizeof(float) * Bm * per_ctx);
    d->pooled = malloc(sizeof(float) * Bm * (size_t)d->Dpool);
    if (ctx->par) {
        d->half = malloc(sizeof(float) * B * per);
        d->rows = malloc(sizeof(int) * Bm);
    }
    if (!d->xin || !d->out || !d->t || (embedded && !d->g) || !d->context || !d->pooled ||
        (ctx->par && (!d->half || !d->rows))) {
        rp_flow_gen_denoiser_free(d);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for a %s batch of %d at latent %dx%d",
                       model->ops->label, Bm, h, w);
    }
    for (int b = 0; b < B; b++) {
        const int c = flow_slot(d, b, 1);
        memcpy(d->context + c * per_ctx, context + b * per_ctx, sizeof(float) * per_ctx);
        memcpy(d->pooled + (size_t)c * d->Dpool, pooled + (size_t)b * d->Dpool, sizeof(float) * d->Dpool);
        if (!guided) continue;
        const int u = flow_slot(d, b, 0);
        memcpy(d->context + u * per_ctx, neg_context, sizeof(float) * per_ctx);
        memcpy(d->pooled + (size_t)u * d->Dpool, neg_pooled, sizeof(float) * d->Dpool);
    }
    /* FluxPipeline: torch.full([1], guidance_scale, dtype=float32).expand(B) */
    if (d->g)
        for (int b = 0; b < Bm; b++) d->g[b] = (float)guidance;
    return RP_OK;
}

void rp_flow_gen_denoiser_free(rp_flow_gen_denoiser *d) {
    if (!d) return;
    free(d->xin);
    free(d->out);
    free(d->t);
    free(d->g);
    free(d->context);
    free(d->pooled);
    free(d->half);
    free(d->rows);
    d->xin = d->out = d->t = d->g = d->context = d->pooled = d->half = NULL;
    d->rows = NULL;
}

/* One transformer forward's rows [r0, r0 + nb), for rp_par_forward's callback. */
typedef struct flow_fwd {
    const rp_flow_gen_denoiser *d;
    int r0, nb;
} flow_fwd;

static rp_status flow_fwd_run(void *u, const rp_ctx *ctx, float *o, rp_error *err) {
    const flow_fwd *f = u;
    const rp_flow_gen_denoiser *d = f->d;
    const int r0 = f->r0, nb = f->nb;
    const size_t per = (size_t)d->C * d->h * d->w, per_ctx = (size_t)d->L * d->Dctx;
    const rp_model_input in = {.B = nb, .h = d->h, .w = d->w, .x = d->xin + r0 * per, .t = d->t + r0,
                               .context = d->context + r0 * per_ctx, .L = d->L,
                               .pooled = d->pooled + (size_t)r0 * d->Dpool, .guidance = d->g ? d->g + r0 : NULL};
    return d->model->ops->forward(d->model, ctx, o, &in, err);
}

/* One transformer forward over rows [r0, r0 + nb) of the model batch: xin, t, g, context,
 * pooled (filled by the caller for this step) -> out, each row (C, h, w). Under a parallel
 * layout through rp_par_forward (pipefusion and patch keep per-step state). */
static rp_status flow_forward(const rp_flow_gen_denoiser *d, const rp_ctx *ctx, int r0, int nb, rp_error *err) {
    flow_fwd f = {d, r0, nb};
    float *o = d->out + r0 * (size_t)d->C * d->h * d->w;
    if (!ctx->par) return flow_fwd_run(&f, ctx, o, err);
    return rp_par_forward(ctx, d->n_evals, flow_fwd_run, &f, o, (size_t)nb * d->C * d->h * d->w, err);
}

/* x (B, C, h, w) at sigmas[i] -> v (B, C, h, w), the guided velocity (see pipeline.h). */
static rp_status flow_gen_eval(void *self, const float *x, int i, double sigma, double t, float *v,
                               rp_error *err) {
    rp_flow_gen_denoiser *d = self;
    const int B = d->B, guided = flow_guided(d), Bm = guided ? 2 * B : B;
    const size_t per = (size_t)d->C * d->h * d->w;
    assert(t == d->sched->timesteps[i] && sigma == d->sched->sigmas[i]);
    (void)t;
    (void)sigma;

    /* both pipelines feed the same latents to both halves: torch.cat([latents] * 2) */
    for (int b = 0; b < B; b++) {
        memcpy(d->xin + flow_slot(d, b, 1) * per, x + b * per, sizeof(float) * per);
        if (guided) memcpy(d->xin + flow_slot(d, b, 0) * per, x + b * per, sizeof(float) * per);
    }
    const float t_step = d->model->ops->model_t(d->sched, i);
    const float tt = d->ctx->par ? rp_par_timestep(d->ctx, d->n_evals, t_step, d->prev_t) : t_step;
    d->prev_t = t_step;
    for (int r = 0; r < Bm; r++) d->t[r] = tt;
    note_eval_inputs(d->ctx, d->n_evals, d->t, d->g, Bm, d->cfg);
    /* a strategy that splits the guided batch: this rank evaluates one segment (0 uncond,
     * 1 cond) of it */
    const rp_par_strategy_info *split = rp_par_batch_split(d->ctx);
    if (!guided && split)
        return RP_FAIL(err, RP_ERR_INVALID, "%s parallelism needs classifier-free guidance (SD3 with cfg > 1; got %s "
                       "cfg %g)", split->name, d->model->ops->label, d->cfg);
    const int seg = rp_par_batch_segment(d->ctx);
    if (!d->per_item) {
        if (seg < 0) {
            if (d->ctx->par) joint_rows(d->ctx, d->rows, B, 0, guided ? 2 : 1, guided ? 2 : 1);
            RP_TRY(flow_forward(d, d->ctx, 0, Bm, err));
        } else { /* rows [seg B, seg B + B) of [uncond x B; cond x B], then both segments in that layout */
            joint_rows(d->ctx, d->rows, B, seg, 1, 2);
            RP_TRY(flow_forward(d, d->ctx, seg * B, B, err));
            const uint64_t produced = rp_par_fingerprint(d->out + (size_t)seg * B * per, B * per); /* as produced */
            memcpy(d->half, d->out + (size_t)seg * B * per, sizeof(float) * B * per);
            RP_TRY(rp_par_batch_exchange(d->ctx, d->half, B * per, produced, d->out, err));
        }
    } else {
        /* each item its own forward (2 rows under CFG): no GEMM sees another item's rows,
         * so the BLAS's M-dependent kernel choice cannot couple items. Under a layout the
         * forwards' trace points go into one record each (rp_par_trace_hold), every item's
         * rows where the joint forward has them ([uncond x items; cond x items]), so the
         * trace is comparable with a joint run's; without one (a plain generate) the trace
         * covers the first item ("trace_items" note). */
        rp_ctx quiet = *d->ctx;
        quiet.trace = NULL;
        const int nb = guided && seg < 0 ? 2 : 1;
        int first = 0, total = B;
        if (d->ctx->par) {
            par_items(d->ctx, B, &first, &total);
            rp_par_trace_hold(d->ctx->par);
        }
        rp_status st = RP_OK;
        for (int b = 0; b < B && st == RP_OK; b++) {
            if (d->ctx->par) { /* item b's rows: [uncond, cond] (or this rank's segment of them) */
                for (int r = 0; r < nb; r++) d->rows[r] = (seg < 0 ? r : seg) * total + first + b;
                rp_par_set_trace_rows(d->ctx->par, d->rows, nb, (guided ? 2 : 1) * total);
            }
            /* per item rows [uncond_b, cond_b]; with a segment, row 2b + seg alone */
            const int r0 = seg < 0 ? b * nb : 2 * b + seg;
            st = flow_forward(d, d->ctx->par || b == 0 ? d->ctx : &quiet, r0, nb, err);
            if (st == RP_OK && seg >= 0) memcpy(d->half + (size_t)b * per, d->out + (size_t)r0 * per, sizeof(float) * per);
        }
        if (d->ctx->par) rp_par_trace_release(d->ctx);
        if (st != RP_OK) return st;
        if (seg >= 0) { /* xin (2, B, per) is free now: both segments, then into rows 2b + s */
            const uint64_t produced = rp_par_fingerprint(d->half, B * per); /* the forwards' outputs, in item order */
            RP_TRY(rp_par_batch_exchange(d->ctx, d->half, B * per, produced, d->xin, err));
            for (int s = 0; s < 2; s++)
                for (int b = 0; b < B; b++)
                    memcpy(d->out + (size_t)(2 * b + s) * per, d->xin + ((size_t)s * B + b) * per,
                           sizeof(float) * per);
        }
    }
    rp_trace_next_eval(d->ctx->trace);
    d->n_evals++;
    for (int b = 0; b < B; b++) {
        const float *cond = d->out + flow_slot(d, b, 1) * per; /* (C, h, w) */
        if (guided) rp_flow_cfg(v + b * per, d->out + flow_slot(d, b, 0) * per, cond, d->cfg, per);
        else memcpy(v + b * per, cond, sizeof(float) * per);
    }
    rp_par_nondet(d->ctx, v, B * per);
    /* every rank of the dp group combined the same halves: the copies must be equal */
    rp_par_replica_note(d->ctx, RP_PAR_RG_REPLICA, "guided_output", v, B * per);
    return RP_OK;
}

static void flow_carry(void *self, float *x, size_t n) {
    rp_par_carry(((const rp_flow_gen_denoiser *)self)->ctx, x, n);
}

rp_flow_denoiser rp_flow_gen_denoiser_as(rp_flow_gen_denoiser *d) {
    rp_flow_denoiser r = {d, flow_gen_eval, flow_carry};
    return r;
}

/* ---- the SD3 / FLUX path of rp_generate ---------------------------------------------------- */

/* What generate_flow needs of the model preset, whichever family. */
typedef struct flow_model_cfg {
    const rp_family_ops *ops;
    rp_model_facts f;   /* with the request's depth options */
    int C;              /* latent channels */
    int native;         /* the preset's latent side */
    int Dctx, Dpool;    /* text widths the model takes */
} flow_model_cfg;

static rp_status flow_model_config(const rp_gen_request *req, const rp_family_ops *ops, flow_model_cfg *m,
                                   rp_error *err) {
    memset(m, 0, sizeof *m);
    m->ops = ops;
    if (req->depth < 0 || req->single_depth < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "depth %d and single_depth %d must be >= 0 (0 = the preset's)",
                       req->depth, req->single_depth);
    if (req->single_depth > 0 && !ops->takes_single_depth)
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s': single_depth applies to FLUX only", req->model);
    RP_TRY(ops->facts(req->model, req->depth, req->single_depth, &m->f, err));
    m->C = m->f.latent_c;
    m->native = m->f.native;
    m->Dctx = m->f.Dctx;
    m->Dpool = m->f.Dpool;
    return RP_OK;
}

static rp_status check_flow_request(const rp_gen_request *req, const flow_model_cfg *m, rp_error *err) {
    if (req->steps < 1 || req->steps > RP_FLOW_MAX_STEPS)
        return RP_FAIL(err, RP_ERR_INVALID, "steps must be in 1..%d (got %d)", RP_FLOW_MAX_STEPS, req->steps);
    if (!(req->cfg >= 0.0) || !isfinite(req->cfg))
        return RP_FAIL(err, RP_ERR_INVALID, "cfg scale must be a number >= 0 (got %g)", req->cfg);
    if (m->ops->guidance == RP_GUIDE_EMBEDDED && req->cfg > 1.0)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "model '%s': FLUX-dev uses embedded guidance (guidance, default %g), not classifier-free "
                       "guidance: cfg must be <= 1 (got %g)", req->model, RP_FLOW_FLUX_GUIDANCE, req->cfg);
    if (m->ops->guidance == RP_GUIDE_EMBEDDED && (!isfinite(req->guidance) || fabs(req->guidance) > 1e6))
        return RP_FAIL(err, RP_ERR_INVALID, "guidance must be a finite number (got %g)", req->guidance);
    if (m->ops->guidance == RP_GUIDE_CFG && req->guidance != 0.0)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "model '%s': %s uses classifier-free guidance (cfg), not embedded guidance (got guidance %g)",
                       req->model, m->ops->label, req->guidance);
    if (req->n_items < 1 || !req->items) return RP_FAIL(err, RP_ERR_INVALID, "nothing to generate (no items)");
    return RP_OK;
}

/* Latent size (h, w) from the request's pixels (0 = native), checked against the VAE
 * factor f, the 2x2 patch both families need, and a position table's bound (SD3). */
static rp_status flow_latent_size(const rp_gen_request *req, const flow_model_cfg *m, int f, int *h, int *w,
                                  rp_error *err) {
    const int unit = 2 * f; /* pixels per latent patch */
    const int W = req->width ? req->width : m->native * f, H = req->height ? req->height : m->native * f;
    if (W < unit || H < unit || W > 16384 || H > 16384 || W % unit || H % unit)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "image size %dx%d px: width and height must be multiples of %d in [%d, 16384] (VAE factor %d "
                       "x the 2x2 latent patch of %s)", W, H, unit, unit, f, req->model);
    *h = H / f;
    *w = W / f;
    if (m->f.pos_max) {
        const int M = m->f.pos_max, p = m->f.patch;
        if (*h / p > M || *w / p > M)
            return RP_FAIL(err, RP_ERR_INVALID,
                           "image size %dx%d px: %s's position table covers at most %dx%d px (%d patches a side)", W,
                           H, req->model, M * p * f, M * p * f, M);
    }
    return RP_OK;
}

/* Text conditioning of a batch: each item's prompt, and the "" prompt when SD3 guides. */
typedef struct flow_text {
    int L;
    float *context;      /* (B, L, Dctx) */
    float *pooled;       /* (B, Dpool) */
    float *neg_context;  /* (L, Dctx) or NULL */
    float *neg_pooled;   /* (Dpool) or NULL */
} flow_text;

static void flow_text_free(flow_text *t) {
    free(t->context);
    free(t->pooled);
    free(t->neg_context);
    free(t->neg_pooled);
    memset(t, 0, sizeof *t);
}

/* The items' rows of req->prompt_embeds (and the negative pair if need_uncond). */
static rp_status read_prompt_embeds(const rp_gen_request *req, const flow_model_cfg *m, int need_uncond,
                                    rp_gen_result *res, flow_text *out, rp_error *err) {
    snprintf(res->te_name, sizeof res->te_name, "prompt-embeds");
    snprintf(res->te_weights_path, sizeof res->te_weights_path, "%s", req->prompt_embeds);
    rp_prompt_embeds e;
    RP_TRY(rp_prompt_embeds_read(req->prompt_embeds, m->Dctx, m->Dpool, &e, err));
    const int B = req->n_items, L = e.L;
    rp_status st = RP_OK;
    for (int b = 0; b < B && st == RP_OK; b++)
        if (req->items[b].embed_row < 0 || req->items[b].embed_row >= e.R)
            st = RP_FAIL(err, RP_ERR_INVALID, "%s: item %d needs row %d of prompt_embeds, which has %d rows",
                         req->prompt_embeds, b, req->items[b].embed_row, e.R);
    if (st == RP_OK && need_uncond && !e.neg_context)
        st = RP_FAIL(err, RP_ERR_INVALID, "%s: classifier-free guidance (cfg %g > 1) needs negative_prompt_embeds "
                     "and negative_pooled_prompt_embeds (the negative prompt's encoding; diffusers' default is \"\")",
                     req->prompt_embeds, req->cfg);
    if (st != RP_OK) {
        rp_prompt_embeds_free(&e);
        return st;
    }
    out->L = L;
    out->context = malloc(sizeof(float) * B * (size_t)L * m->Dctx); /* (B, L, Dctx) */
    out->pooled = malloc(sizeof(float) * B * (size_t)m->Dpool);      /* (B, Dpool) */
    if (!out->context || !out->pooled) {
        rp_prompt_embeds_free(&e);
        flow_text_free(out);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for %d items' text states", B);
    }
    const size_t pc = (size_t)L * m->Dctx;
    for (int b = 0; b < B; b++) {
        const int r = req->items[b].embed_row;
        memcpy(out->context + b * pc, e.context + r * pc, sizeof(float) * pc);
        memcpy(out->pooled + (size_t)b * m->Dpool, e.pooled + (size_t)r * m->Dpool, sizeof(float) * m->Dpool);
    }
    if (need_uncond) { /* the file's buffers move over */
        out->neg_context = e.neg_context;
        out->neg_pooled = e.neg_pooled;
        e.neg_context = e.neg_pooled = NULL;
    }
    rp_prompt_embeds_free(&e);
    return RP_OK;
}

/* The encoder's probe, under a layout of several ranks: every rank encodes the same fixed
 * prompts, "" (mostly padding: the key mask matters) and a sentence, and notes them in the
 * WORLD replica group. The items' prompts differ between dp ranks, so without it a rank
 * whose encoder computes other bits (its attention's mask, a norm, a cached state) would
 * be judged by a rounding envelope alone; the probe's copies are the same bits by
 * construction. A case that rounds coarser than fp32 probes at fp32 first (named as an fp32
 * case's probe) and then at its own precision (`text_encoder.bf16(...)`): a fault below
 * bf16's rounding (one rank's norm epsilon) changes fp32 bits for certain, while at bf16
 * only an element that sits at a rounding boundary shows it, and which prompt has one is
 * the GEMM kernels' business (the machine's); the second probe holds the precision's own
 * path. */
static rp_status probe_encoder(rp_te *te, const rp_ctx *ctx, int L, const flow_model_cfg *m, rp_error *err) {
    if (!ctx->par || ctx->par->world == 1) return RP_OK;
    static const char *const PROBE[2] = {"", "a photograph of an astronaut riding a horse on the moon"};
    static const char *const NAME[2] = {"(\"\")", "(probe sentence)"};
    float *c = malloc(sizeof(float) * ((size_t)L * m->Dctx + (size_t)m->Dpool)); /* (L, Dctx), (Dpool) */
    if (!c) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for the text encoder's probe");
    rp_ctx at32 = *ctx;
    at32.precision = RP_PREC_FP32;
    const rp_ctx *pass[2] = {&at32, ctx}; /* the case's own precision second, when not fp32 */
    rp_status st = RP_OK;
    for (int p = 0; st == RP_OK && p < (ctx->precision == RP_PREC_FP32 ? 1 : 2); p++)
        for (int i = 0; i < 2 && st == RP_OK; i++) {
            float *pooled = c + (size_t)L * m->Dctx;
            st = rp_te_encode(te, pass[p], &PROBE[i], 1, c, NULL, pooled, err);
            char name[64];
            snprintf(name, sizeof name, "text_encoder%s%s%s", p ? "." : "", p ? rp_precision_name(ctx->precision) : "",
                     NAME[i]);
            if (st == RP_OK)
                rp_par_replica_note_at(ctx, 0, RP_PAR_RG_WORLD, name, c, (size_t)L * m->Dctx + (size_t)m->Dpool);
        }
    free(c);
    return st;
}

/* Loads the text encoder, encodes every item's prompt (and "" if need_uncond), frees it;
 * or reads them from req->prompt_embeds. */
static rp_status encode_prompts(const rp_gen_request *req, const flow_model_cfg *m, int need_uncond,
                                const rp_ctx *ctx, rp_gen_result *res, flow_text *out, rp_error *err) {
    memset(out, 0, sizeof *out);
    if (req->prompt_embeds) return read_prompt_embeds(req, m, need_uncond, res, out, err);
    /* flow_validate has checked the encoder's name and widths */
    const char *te_name = req->text_encoder ? req->text_encoder : rp_gen_default_text_encoder(req->model);
    assert(te_name);
    snprintf(res->te_name, sizeof res->te_name, "%s", te_name);
    rp_te_config tc;
    RP_TRY(rp_te_preset(te_name, &tc, err));
    assert(tc.context_dim == m->Dctx && tc.pooled_dim == m->Dpool);
    RP_TRY(rp_weights_resolve(te_name, 0, req->weight_seed, req->te_weights, res->te_weights_path,
                              sizeof res->te_weights_path, err));
    rp_st_file *f = NULL;
    rp_te *te = NULL;
    RP_TRY(rp_weights_open_for(res->te_weights_path, te_name, &f, err));
    rp_status st = rp_te_load(&tc, f, &te, err);
    rp_st_close(f); /* the encoder holds its own copy */
    if (st != RP_OK) return st;

    const int B = req->n_items, L = tc.max_len;
    out->L = L;
    out->context = malloc(sizeof(float) * B * (size_t)L * m->Dctx);   /* (B, L, Dctx) */
    out->pooled = malloc(sizeof(float) * B * (size_t)m->Dpool);        /* (B, Dpool) */
    if (need_uncond) {
        out->neg_context = malloc(sizeof(float) * (size_t)L * m->Dctx); /* (L, Dctx) */
        out->neg_pooled = malloc(sizeof(float) * (size_t)m->Dpool);     /* (Dpool) */
    }
    const char **prompts = malloc(sizeof(char *) * B);                 /* (B) */
    if (!out->context || !out->pooled || !prompts || (need_uncond && (!out->neg_context || !out->neg_pooled))) {
        st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory for %d prompts' text states", B);
    } else {
        for (int b = 0; b < B; b++) prompts[b] = req->items[b].prompt ? req->items[b].prompt : "";
        st = rp_te_encode(te, ctx, prompts, B, out->context, NULL, out->pooled, err);
        if (st == RP_OK && need_uncond) {
            const char *empty = ""; /* SD3's negative prompt default: "" */
            st = rp_te_encode(te, ctx, &empty, 1, out->neg_context, NULL, out->neg_pooled, err);
        }
        if (st == RP_OK) st = probe_encoder(te, ctx, L, m, err);
    }
    free(prompts);
    rp_te_free(te);
    if (st == RP_OK && req->save_prompt_embeds)
        st = rp_prompt_embeds_write(req->save_prompt_embeds, B, L, m->Dctx, m->Dpool, out->context, out->pooled,
                                    out->neg_context, out->neg_pooled, err);
    if (st != RP_OK) flow_text_free(out);
    return st;
}

/* Every check of an SD3 / FLUX request that needs no weights: the model options, the
 * request fields, the VAE's latent channels, the image size and the text encoder's
 * widths. Fills the model config and the latent size. */
static rp_status flow_validate(const rp_gen_request *req, const rp_family_ops *ops, flow_model_cfg *m, int *h,
                               int *w, rp_error *err) {
    RP_TRY(flow_model_config(req, ops, m, err));
    RP_TRY(check_flow_request(req, m, err));
    const char *vae_name = req->vae ? req->vae : rp_gen_default_vae(req->model);
    rp_vae_config vc;
    RP_TRY(rp_vae_preset(vae_name, &vc, err));
    if (vc.latent_channels != m->C) /* before any work: decode_all would find it only at the end */
        return RP_FAIL(err, RP_ERR_SHAPE, "VAE '%s' takes %d latent channels but model '%s' makes %d", vae_name,
                       vc.latent_channels, req->model, m->C);
    RP_TRY(flow_latent_size(req, m, rp_vae_scale_factor(&vc), h, w, err));
    if (req->prompt_embeds) { /* the file's shapes are checked when it is read */
        if (req->text_encoder || req->te_weights || req->save_prompt_embeds)
            return RP_FAIL(err, RP_ERR_INVALID, "prompt embeddings from %s replace the text encoder: no text encoder, "
                           "text-encoder weights or embeddings to save", req->prompt_embeds);
        for (int b = 0; b < req->n_items; b++)
            if (req->items[b].prompt && req->items[b].prompt[0])
                return RP_FAIL(err, RP_ERR_INVALID, "item %d has a prompt (\"%.40s\") and the request has prompt "
                               "embeddings (%s): give one or the other", b, req->items[b].prompt, req->prompt_embeds);
        return RP_OK;
    }
    const char *te_name = req->text_encoder ? req->text_encoder : rp_gen_default_text_encoder(req->model);
    if (!te_name) return RP_FAIL(err, RP_ERR_INVALID, "model '%s': no text encoder given", req->model);
    rp_te_config tc;
    RP_TRY(rp_te_preset(te_name, &tc, err));
    if (tc.context_dim != m->Dctx || tc.pooled_dim != m->Dpool)
        return RP_FAIL(err, RP_ERR_SHAPE,
                       "text encoder '%s' gives context width %d and pooled width %d; model '%s' takes %d and %d",
                       te_name, tc.context_dim, tc.pooled_dim, req->model, m->Dctx, m->Dpool);
    return RP_OK;
}

static rp_status generate_flow(const rp_gen_request *req, const rp_family_ops *ops, const rp_ctx *ctx,
                               rp_gen_result *res, rp_error *err) {
    flow_model_cfg m;
    int h = 0, w = 0;
    RP_TRY(flow_validate(req, ops, &m, &h, &w, err));

    const int B = req->n_items, C = m.C, N = req->steps;
    const int guided = ops->guidance == RP_GUIDE_CFG && req->cfg > 1.0;
    const size_t per = (size_t)C * h * w, n = (size_t)B * per;
    res->family = ops->family;
    res->B = B; res->C = C; res->h = h; res->w = w; res->S = h == w ? h : 0; res->steps = N;

    flow_text text = {0};
    rp_flow_schedule sched = {0};
    rp_model model = {0};
    rp_flow_gen_denoiser dd = {0};
    rp_status st;

    /* 1. prompts -> text states (the encoder is freed before the transformer loads; a
     * transformer kept by ctx->models from an earlier call stays: model_cache.h bounds it) */
    double t0 = rp_now_s();
    if ((st = encode_prompts(req, &m, guided, ctx, res, &text, err)) != RP_OK) goto fail;
    res->encode_seconds = rp_now_s() - t0;

    /* 2. schedule: the family's (SD3 static shift 3; FLUX-dev mu from the packed image
     * sequence length; FLUX-schnell unshifted) */
    if ((st = ops->schedule(&sched, N, h, w, &m.f, err)) != RP_OK) goto fail;
    res->shift = sched.shift;
    res->mu = sched.mu;
    for (int i = 0; i < N; i++) {
        const double coef[3] = {sched.sigmas[i], sched.sigmas[i + 1], sched.timesteps[i]};
        note_sampler_step(ctx, i, coef, 3);
    }

    /* 3. the transformer */
    if ((st = rp_weights_resolve_depth(req->model, req->depth, req->single_depth, req->weight_seed, req->weights,
                                       res->weights_path, sizeof res->weights_path, err)) != RP_OK)
        goto fail;
    if ((st = rp_model_acquire(ctx->models, ops, req->model, req->depth, req->single_depth, res->weights_path,
                               req->sharpen, &model, err)) != RP_OK)
        goto fail;

    /* 4. per-item noise and result buffers */
    res->noise = malloc(sizeof(float) * n);                          /* (B, C, h, w) */
    res->latents = malloc(sizeof(float) * n);                        /* (B, C, h, w) */
    res->trajectory = malloc(sizeof(float) * n * (size_t)(N + 1));  /* (N+1, B, C, h, w) */
    res->timesteps = malloc(sizeof(double) * N);                    /* (N) */
    res->model_t = malloc(sizeof(double) * N);                      /* (N) */
    res->sigmas = malloc(sizeof(double) * (N + 1));                 /* (N+1) */
    if (!res->noise || !res->latents || !res->trajectory || !res->timesteps || !res->model_t || !res->sigmas) {
        st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory for %d items x %d steps of %dx%d latents", B, N, h, w);
        goto fail;
    }
    draw_initial_noise(req, ctx, res->noise, B, per);
    memcpy(res->sigmas, sched.sigmas, sizeof(double) * (N + 1));
    for (int i = 0; i < N; i++) {
        res->timesteps[i] = sched.timesteps[i];
        res->model_t[i] = ops->model_t(&sched, i);
    }

    if (ctx->trace) {
        char v[64];
        rp_trace_note(ctx->trace, "sampler", "flow-euler");
        snprintf(v, sizeof v, "%d", N);
        rp_trace_note(ctx->trace, "steps", v);
        snprintf(v, sizeof v, "%.17g", guided ? req->cfg : 1.0);
        rp_trace_note(ctx->trace, "cfg", v);
        if (sched.dynamic) { /* FLUX-dev: the embedded guidance and the shift's mu */
            snprintf(v, sizeof v, "%.17g", req->guidance);
            rp_trace_note(ctx->trace, "guidance", v);
            snprintf(v, sizeof v, "%.17g", sched.mu);
            rp_trace_note(ctx->trace, "mu", v);
        } else {
            snprintf(v, sizeof v, "%.17g", sched.shift);
            rp_trace_note(ctx->trace, "shift", v);
        }
        rp_trace_note(ctx->trace, "text_encoder", res->te_name);
        rp_trace_note(ctx->trace, "batch_forward", req->per_item ? "per-item" : "joint");
        /* a per-item batch under a layout traces every item (flow_gen_eval) */
        rp_trace_note(ctx->trace, "trace_items", req->per_item && !ctx->par ? "first" : "all");
    }

    /* 5. the Euler loop */
    if ((st = rp_flow_gen_denoiser_init(&dd, &model, ctx, &sched, B, h, w, text.L, text.context, text.pooled,
                                        text.neg_context, text.neg_pooled, req->cfg, req->guidance, req->per_item,
                                        err)) != RP_OK)
        goto fail;
    flow_text_free(&text); /* the denoiser holds its own batch copy */
    rp_flow_denoiser den = rp_flow_gen_denoiser_as(&dd);
    memcpy(res->latents, res->noise, sizeof(float) * n);
    t0 = rp_now_s();
    if (req->teacher) {
        st = teacher_input_alloc(res, n, N, err); /* (N, B, C, h, w) */
        if (st == RP_OK)
            st = flow_teacher(ctx, &sched, &den, req->teacher, req->teacher_steps, n, res->trajectory,
                              res->teacher_input, err);
        if (st == RP_OK) memcpy(res->latents, teacher_final_latents(req, res->trajectory, n), sizeof(float) * n);
    } else {
        st = rp_flow_sample_euler(&sched, &den, res->latents, n, res->trajectory, err);
    }
    res->sample_seconds = rp_now_s() - t0;
    res->n_evals = dd.n_evals;
    rp_flow_gen_denoiser_free(&dd);
    rp_d_unmirror_all(ctx);
    rp_model_release(st == RP_OK ? ctx->models : NULL, &model); /* a failed call's model is not kept */
    if (st != RP_OK) goto fail;

    /* 6. decode */
    if (req->decode) {
        t0 = rp_now_s();
        if ((st = decode_run(req, ctx, res, err)) != RP_OK) goto fail;
        res->decode_seconds = rp_now_s() - t0;
    }
    rp_flow_schedule_free(&sched);
    return RP_OK;

fail:
    rp_flow_gen_denoiser_free(&dd);
    rp_d_unmirror_all(ctx);
    rp_model_release(NULL, &model);
    flow_text_free(&text);
    rp_flow_schedule_free(&sched);
    rp_gen_result_free(res);
    return st;
}

/* Parameter count of model at depth (and FLUX's single_depth) without listing a huge
 * depth's specs: blocks are alike, so n(d) = n(1) + (d - 1) (n(2) - n(1)). */
static rp_status param_count(const char *model, int depth, int single_depth, double *out, rp_error *err) {
    rp_param_list l1 = {0}, l2 = {0};
    const int small = depth == 0 || depth <= 2; /* the preset's own depth, or a short list */
    rp_status st = rp_model_param_specs_depth(model, small ? depth : 1, single_depth, &l1, err);
    if (st == RP_OK && !small) st = rp_model_param_specs_depth(model, 2, single_depth, &l2, err);
    if (st == RP_OK) {
        const double n1 = (double)rp_params_total(&l1);
        *out = small ? n1 : n1 + (double)(depth - 1) * ((double)rp_params_total(&l2) - n1);
    }
    rp_params_free(&l1);
    rp_params_free(&l2);
    return st;
}

/* Refuses a request whose latent trajectory (steps + 1 copies of (n_items, C, h, w)),
 * decoded images (n_items, 3, 8h, 8w) and, for a depth above the preset's, fp32 weights
 * exceed this machine's physical memory: a depth of 2^31 otherwise runs until the kernel
 * kills it. A preset's own weights are not judged here (a GPU case holds them on the
 * device; a too-small host fails cleanly at load). A lower bound (activations come on
 * top), checked before anything is allocated. */
static rp_status check_memory(const rp_gen_request *req, int C, int h, int w, rp_error *err) {
    double params = 0, preset = 0;
    if (req->depth > 0) {
        RP_TRY(param_count(req->model, 0, req->single_depth, &preset, err));
        RP_TRY(param_count(req->model, req->depth, req->single_depth, &params, err));
    }
    const double weights = params > preset ? 4.0 * params : 0.0;
    const double latents = 4.0 * (req->steps + 3.0) * req->n_items * C * (double)h * w;
    const double images = req->decode ? 4.0 * req->n_items * 3.0 * 64.0 * (double)h * w : 0.0;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double mem = pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
    if (mem > 0 && weights + latents + images > mem)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "model '%s' at depth %d, %d items x %d steps of %dx%d latents needs at least %.3g GiB "
                       "(weights %.3g GiB, latent trajectory %.3g GiB, images %.3g GiB); this machine has %.3g GiB",
                       req->model, req->depth, req->n_items, req->steps, h, w,
                       (weights + latents + images) / 1073741824.0, weights / 1073741824.0, latents / 1073741824.0,
                       images / 1073741824.0, mem / 1073741824.0);
    return RP_OK;
}

rp_status rp_gen_validate(const rp_gen_request *req, rp_error *err) {
    assert(req);
    if (!req->model) return RP_FAIL(err, RP_ERR_INVALID, "no model given");
    const rp_family_ops *ops;
    RP_TRY(rp_model_ops(req->model, &ops, err));
    if (!ops->denoiser)
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s' is a %s, not a denoiser (known: %s)", req->model,
                       rp_family_name(ops->family), rp_denoiser_presets());
    if (ops->cond == RP_COND_TEXT) {
        flow_model_cfg m;
        int h, w;
        RP_TRY(flow_validate(req, ops, &m, &h, &w, err));
        return check_memory(req, m.C, h, w, err);
    }
    /* the class-conditional path is DiT's (VP diffusion over its 1000-step schedule) */
    if (req->single_depth != 0)
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s': single_depth applies to FLUX only", req->model);
    if (req->width || req->height)
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s': the image size is fixed by the DiT preset (no width/height)",
                       req->model);
    if (req->depth < 0) return RP_FAIL(err, RP_ERR_INVALID, "depth %d must be >= 0", req->depth);
    rp_dit_config c;
    RP_TRY(rp_dit_preset(req->model, &c, err));
    if (req->depth > 0) c.depth = req->depth;
    RP_TRY(check_request(req, &c, err));
    return check_memory(req, c.in_channels, c.input_size, c.input_size, err);
}

rp_status rp_generate(const rp_gen_request *req, const rp_ctx *ctx, rp_gen_result *res,
                      rp_error *err) {
    memset(res, 0, sizeof *res);
    assert(req && ctx && res);
    RP_TRY(rp_gen_validate(req, err));
    rp_par_generate_begin(ctx->par); /* pipefusion / patch: no stale activations of an earlier call */
    const rp_family_ops *ops;
    RP_TRY(rp_model_ops(req->model, &ops, err));
    if (ops->cond == RP_COND_TEXT) return generate_flow(req, ops, ctx, res, err);
    rp_dit_config c;
    RP_TRY(rp_dit_preset(req->model, &c, err));
    if (req->depth > 0) c.depth = req->depth;
    RP_TRY(check_request(req, &c, err));

    const int B = req->n_items, C = c.in_channels, S = c.input_size, N = req->steps;
    const size_t per = (size_t)C * S * S, n = (size_t)B * per;
    res->family = ops->family;
    res->B = B; res->C = C; res->S = S; res->h = S; res->w = S; res->steps = N;

    rp_schedule sched = {0};
    rp_model model = {0};
    rp_dit_denoiser dd = {0};
    int *y = NULL;
    rp_status st;
    if ((st = rp_schedule_dit(&sched, N, err)) != RP_OK) goto fail;
    if ((st = rp_weights_resolve(req->model, req->depth, req->weight_seed, req->weights,
                                 res->weights_path, sizeof res->weights_path, err)) != RP_OK)
        goto fail;
    if ((st = rp_model_acquire(ctx->models, ops, req->model, req->depth, 0, res->weights_path, req->sharpen, &model,
                               err)) != RP_OK)
        goto fail;

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
    draw_initial_noise(req, ctx, res->noise, B, per);
    for (int b = 0; b < B; b++) y[b] = req->items[b].class_id;
    for (int k = 0; k < N; k++) res->alphas_cumprod[k] = sched.alphas_cumprod[N - 1 - k];
    for (int k = 0; k < N; k++) { /* loop step k uses the schedule's index N - 1 - k */
        const int i = N - 1 - k;
        /* the clipped posterior log-variance only where a sampler reads it (i > 0: the last
         * step adds no noise); at i = 0 of a one-step schedule it does not exist (audit 10: the
         * read past the schedule's arrays put heap bytes in the note, another on each rank) */
        const double coef[6] = {sched.timestep[i], sched.alphas_cumprod[i], sched.betas[i],
                                rp_schedule_abar_prev(&sched, i), rp_schedule_sigma(&sched, i),
                                i > 0 ? rp_schedule_posterior_logvar_clipped(&sched, i) : 0.0};
        note_sampler_step(ctx, k, coef, 6);
    }

    if (ctx->trace) {
        char v[64];
        rp_trace_note(ctx->trace, "sampler", rp_sampler_name(req->sampler));
        snprintf(v, sizeof v, "%d", N);
        rp_trace_note(ctx->trace, "steps", v);
        snprintf(v, sizeof v, "%.17g", req->cfg);
        rp_trace_note(ctx->trace, "cfg", v);
    }

    if ((st = rp_dit_denoiser_init(&dd, model.impl, ctx, B, y, req->cfg, err)) != RP_OK) goto fail;
    rp_denoiser den = rp_dit_denoiser_as(&dd);
    item_noise inoise = {ctx, req->items, B, per};
    rp_noise_src nsrc = {&inoise, item_noise_fill};
    rp_sampler_cfg scfg = {req->sampler, req->eta};
    memcpy(res->latents, res->noise, sizeof(float) * n);
    double t0 = rp_now_s();
    if (req->teacher) {
        st = teacher_input_alloc(res, n, N, err); /* (N, B, C, S, S) */
        if (st == RP_OK)
            st = dit_teacher(ctx, &scfg, &sched, &den, &nsrc, &inoise, req->teacher, req->teacher_steps, n,
                             res->trajectory, res->teacher_input, res->timesteps, err);
        if (st == RP_OK) memcpy(res->latents, teacher_final_latents(req, res->trajectory, n), sizeof(float) * n);
    } else {
        st = rp_sample(&scfg, &sched, &den, &nsrc, res->latents, n, res->trajectory, res->timesteps, err);
    }
    res->sample_seconds = rp_now_s() - t0;
    res->n_evals = dd.n_evals;
    rp_dit_denoiser_free(&dd);
    rp_d_unmirror_all(ctx);
    rp_model_release(st == RP_OK ? ctx->models : NULL, &model); /* a failed call's model is not kept */
    if (st != RP_OK) goto fail;

    if (req->decode) {
        t0 = rp_now_s();
        if ((st = decode_run(req, ctx, res, err)) != RP_OK) goto fail;
        res->decode_seconds = rp_now_s() - t0;
    }
    free(y);
    rp_schedule_free(&sched);
    return RP_OK;

fail:
    rp_dit_denoiser_free(&dd);
    rp_d_unmirror_all(ctx);
    rp_model_release(NULL, &model);
    free(y);
    rp_schedule_free(&sched);
    rp_gen_result_free(res);
    return st;
}
