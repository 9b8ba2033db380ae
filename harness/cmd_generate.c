/* cmd_generate.c — `repro generate`: sample latents with a model, decode them to PNG.
 *
 * Items: one per --seed, in order; item i has global index i (its noise key).
 * Classes: either one --class for every seed, or exactly one --class per seed
 * (paired in order); any other count is a usage error. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention/attention.h"
#include "engine/ctx.h"
#include "engine/image.h"
#include "engine/models/dit.h"
#include "engine/models/registry.h"
#include "engine/pipeline.h"
#include "engine/safetensors.h"
#include "engine/samplers/samplers.h"
#include "engine/trace.h"
#include "harness/args.h"
#include "harness/commands.h"

#define MAX_ITEMS 64

static const char USAGE[] =
    "usage: repro generate --model M --seed S [--seed S ...] --class K [--class K ...] --out img.png\n"
    "                      [options]\n"
    "\n"
    "Samples latents with a class-conditional DiT and decodes them with a VAE.\n"
    "\n"
    "  --model M          dit-tiny | dit-xl-2-256 | dit-xl-2-512\n"
    "  --depth N          override the preset's depth (real shapes, fewer blocks)\n"
    "  --weights W        checkpoint (safetensors); default: synthetic weights, generated\n"
    "                     once into the cache ($REPRO_CACHE, $XDG_CACHE_HOME/repro, ~/.cache/repro)\n"
    "  --weight-seed S    seed of the synthetic weights (model and VAE; default 0)\n"
    "  --vae V            vae-tiny | sd-vae (default: vae-tiny for dit-tiny, sd-vae otherwise)\n"
    "  --vae-weights W    VAE checkpoint; default: synthetic, cached\n"
    "  --seed S           one item per --seed (repeatable); item i's noise is keyed by (S, i)\n"
    "  --class K          ImageNet class; give one for all seeds, or one per seed\n"
    "  --steps N          sampling steps, 1..1000 (default 50); DiT respacing of 1000 steps\n"
    "  --sampler X        ddim | ddpm | dpmpp-2m | euler-a (default ddim)\n"
    "  --eta E            ddim: 0..1 (default 0); euler-a: >= 0 (default 1); not for others\n"
    "  --cfg G            classifier-free guidance scale >= 0 (default 4.0; <= 1: no\n"
    "                     unconditional pass); applied to all latent channels\n"
    "  --threads N        GEMM threads (default: OpenBLAS default)\n"
    "  --precision P      fp32 | bf16 GEMM inputs (default fp32)\n"
    "  --reduce-split     split every GEMM's K reduction in two halves\n"
    "  --attention A      math | split | subquad | flash (default math)\n"
    "  --trace T          write per-layer statistics of the first model evaluation\n"
    "  --out img.png      output image; several items write <stem>-<i>.png\n"
    "  --latents L        also write noise, final latents, trajectory and timesteps\n"
    "                     (safetensors, with every option as metadata); with --latents\n"
    "                     alone, nothing is decoded\n";

/* Prints "repro generate: <msg>" and returns the usage exit code 2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "repro generate: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see repro generate --help)\n");
    va_end(ap);
    return 2;
}

/* Strict unsigned 64-bit parse (no sign, no trailing junk). */
static int parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-' || *s == '+') return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return 0;
    *out = v;
    return 1;
}

static int parse_int(const char *s, int *out) {
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < -2147483647L || v > 2147483647L) return 0;
    *out = (int)v;
    return 1;
}

/* Output path of item i: the path itself for one item, else <stem>-<i><ext>. */
static void item_path(char *dst, size_t cap, const char *out, int i, int n) {
    if (n == 1) { snprintf(dst, cap, "%s", out); return; }
    const char *slash = strrchr(out, '/');
    const char *dot = strrchr(out, '.');
    if (!dot || (slash && dot < slash)) dot = out + strlen(out);
    snprintf(dst, cap, "%.*s-%d%s", (int)(dot - out), out, i, dot);
}

/* Joins values as "a,b,c" into buf. */
static void join_u64(char *buf, size_t cap, const uint64_t *v, int n) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%" PRIu64, i ? "," : "", v[i]);
}

typedef struct gen_opts {
    const char *model, *weights, *vae, *vae_weights, *trace, *out, *latents, *sampler_s,
        *precision_s, *attention_s;
    int depth, steps, threads, reduce_split, n;
    uint64_t weight_seed;
    double eta, cfg;
    int eta_given;
    uint64_t seeds[MAX_ITEMS];
    int classes[MAX_ITEMS];
} gen_opts;

static rp_status write_latents(const gen_opts *o, const rp_gen_request *req, const rp_ctx *ctx,
                               const rp_gen_result *r, rp_error *err) {
    rp_st_writer *w = rp_st_writer_new();
    if (!w) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for the latents writer");
    const int B = r->B;
    const int64_t lat[4] = {B, r->C, r->S, r->S};
    const int64_t traj[5] = {r->steps + 1, B, r->C, r->S, r->S};
    const int64_t nsteps[1] = {r->steps}, nb[1] = {B};
    int64_t seeds[MAX_ITEMS], classes[MAX_ITEMS], gidx[MAX_ITEMS];
    uint64_t useeds[MAX_ITEMS], uclasses[MAX_ITEMS], ugidx[MAX_ITEMS];
    for (int b = 0; b < B; b++) {
        seeds[b] = (int64_t)req->items[b].seed;
        classes[b] = req->items[b].class_id;
        gidx[b] = (int64_t)req->items[b].global_index;
        useeds[b] = req->items[b].seed;
        uclasses[b] = (uint64_t)req->items[b].class_id;
        ugidx[b] = req->items[b].global_index;
    }
    rp_status st = RP_OK;
#define TRY(e) do { if (st == RP_OK) st = (e); } while (0)
    TRY(rp_st_writer_add(w, "noise", RP_DT_F32, 4, lat, r->noise, err));
    TRY(rp_st_writer_add(w, "latents", RP_DT_F32, 4, lat, r->latents, err));
    TRY(rp_st_writer_add(w, "trajectory", RP_DT_F32, 5, traj, r->trajectory, err));
    TRY(rp_st_writer_add(w, "timesteps", RP_DT_F64, 1, nsteps, r->timesteps, err));
    TRY(rp_st_writer_add(w, "alphas_cumprod", RP_DT_F64, 1, nsteps, r->alphas_cumprod, err));
    TRY(rp_st_writer_add(w, "seeds", RP_DT_I64, 1, nb, seeds, err));
    TRY(rp_st_writer_add(w, "classes", RP_DT_I64, 1, nb, classes, err));
    TRY(rp_st_writer_add(w, "global_index", RP_DT_I64, 1, nb, gidx, err));

    char v[8192];
    TRY(rp_st_writer_meta(w, "repro.format", "latents-v1", err));
    TRY(rp_st_writer_meta(w, "repro.command", "generate", err));
    TRY(rp_st_writer_meta(w, "repro.version", REPRO_VERSION, err));
    TRY(rp_st_writer_meta(w, "repro.git_revision", REPRO_GIT_REV, err));
    TRY(rp_st_writer_meta(w, "model", o->model, err));
    snprintf(v, sizeof v, "%d", o->depth);
    TRY(rp_st_writer_meta(w, "depth", v, err));
    TRY(rp_st_writer_meta(w, "weights", r->weights_path, err));
    TRY(rp_st_writer_meta(w, "weights_explicit", o->weights ? "1" : "0", err));
    snprintf(v, sizeof v, "%" PRIu64, o->weight_seed);
    TRY(rp_st_writer_meta(w, "weight_seed", v, err));
    TRY(rp_st_writer_meta(w, "vae", req->vae, err));
    TRY(rp_st_writer_meta(w, "vae_weights", r->vae_weights_path[0] ? r->vae_weights_path
                                                                   : (o->vae_weights ? o->vae_weights : ""), err));
    join_u64(v, sizeof v, useeds, B);
    TRY(rp_st_writer_meta(w, "seeds", v, err));
    join_u64(v, sizeof v, uclasses, B);
    TRY(rp_st_writer_meta(w, "classes", v, err));
    join_u64(v, sizeof v, ugidx, B);
    TRY(rp_st_writer_meta(w, "global_index", v, err));
    snprintf(v, sizeof v, "%d", o->steps);
    TRY(rp_st_writer_meta(w, "steps", v, err));
    TRY(rp_st_writer_meta(w, "sampler", rp_sampler_name(req->sampler), err));
    snprintf(v, sizeof v, "%.17g", req->eta);
    TRY(rp_st_writer_meta(w, "eta", v, err));
    snprintf(v, sizeof v, "%.17g", o->cfg);
    TRY(rp_st_writer_meta(w, "cfg", v, err));
    TRY(rp_st_writer_meta(w, "cfg_channels", "all", err));
    snprintf(v, sizeof v, "%d", o->threads);
    TRY(rp_st_writer_meta(w, "threads", v, err));
    TRY(rp_st_writer_meta(w, "precision", rp_precision_name(ctx->precision), err));
    TRY(rp_st_writer_meta(w, "reduce_split", ctx->reduce_split ? "1" : "0", err));
    TRY(rp_st_writer_meta(w, "attention", rp_attn_kind_name(ctx->attn.kind), err));
    TRY(rp_st_writer_meta(w, "trace", o->trace ? o->trace : "", err));
    TRY(rp_st_writer_meta(w, "out", o->out ? o->out : "", err));
    TRY(rp_st_writer_meta(w, "trajectory_space", "vp", err));
    TRY(rp_st_writer_meta(w, "schedule", "dit-linear-1000", err));
    TRY(rp_st_writer_write(w, o->latents, err));
#undef TRY
    rp_st_writer_free(w);
    return st;
}

int rp_cmd_generate(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(USAGE, stdout); return 0; }

    rp_args a;
    rp_args_init(&a, argc, argv);
    gen_opts o;
    memset(&o, 0, sizeof o);
    o.model = rp_arg_str(&a, "model", NULL);
    o.depth = (int)rp_arg_int(&a, "depth", 0);
    o.weights = rp_arg_str(&a, "weights", NULL);
    o.vae = rp_arg_str(&a, "vae", NULL);
    o.vae_weights = rp_arg_str(&a, "vae-weights", NULL);
    o.trace = rp_arg_str(&a, "trace", NULL);
    o.out = rp_arg_str(&a, "out", NULL);
    o.latents = rp_arg_str(&a, "latents", NULL);
    o.sampler_s = rp_arg_str(&a, "sampler", "ddim");
    o.precision_s = rp_arg_str(&a, "precision", "fp32");
    o.attention_s = rp_arg_str(&a, "attention", "math");
    const char *wseed_s = rp_arg_str(&a, "weight-seed", "0");
    long long steps_ll = rp_arg_int(&a, "steps", 50);
    long long threads_ll = rp_arg_int(&a, "threads", 0);
    o.eta_given = rp_arg_str(&a, "eta", NULL) != NULL;
    o.eta = rp_arg_double(&a, "eta", 0.0);
    o.cfg = rp_arg_double(&a, "cfg", 4.0);
    o.reduce_split = rp_arg_flag(&a, "reduce-split");
    const char *seed_s[MAX_ITEMS + 1], *class_s[MAX_ITEMS + 1];
    const int ns = rp_arg_strs(&a, "seed", seed_s, MAX_ITEMS + 1);
    const int nc = rp_arg_strs(&a, "class", class_s, MAX_ITEMS + 1);
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) {
        const char *m = err.msg; /* args.c prefixes some messages with the subcommand */
        if (!strncmp(m, "generate: ", 10)) m += 10;
        return usage_error("%s", m);
    }

    /* ---- validate (usage errors: exit 2, each naming its option) ---- */
    if (!o.model) return usage_error("missing --model (e.g. --model dit-tiny)");
    rp_dit_config dc;
    if (rp_dit_preset(o.model, &dc, &err) != RP_OK)
        return usage_error("--model: %s", err.msg);
    if (o.depth < 0) return usage_error("--depth must be >= 1, or 0 for the preset depth (got %s)", rp_arg_str(&a, "depth", ""));
    if (!parse_u64(wseed_s, &o.weight_seed))
        return usage_error("--weight-seed: '%s' is not a non-negative integer", wseed_s);
    if (o.vae) {
        rp_family fam;
        if (rp_model_family(o.vae, &fam, &err) != RP_OK || fam != RP_FAMILY_VAE)
            return usage_error("--vae: unknown VAE '%s' (known: vae-tiny sd-vae)", o.vae);
    }
    if (ns < 1) return usage_error("missing --seed (one per image, e.g. --seed 0)");
    if (ns > MAX_ITEMS || nc > MAX_ITEMS)
        return usage_error("at most %d items per run (--seed / --class given too often)", MAX_ITEMS);
    if (nc < 1) return usage_error("missing --class (ImageNet class id, e.g. --class 207)");
    if (nc != 1 && nc != ns)
        return usage_error("--class/--seed count mismatch: %d --class for %d --seed (give one --class "
                           "for all seeds, or one per seed)", nc, ns);
    o.n = ns;
    for (int i = 0; i < ns; i++)
        if (!parse_u64(seed_s[i], &o.seeds[i]))
            return usage_error("--seed: '%s' is not a non-negative integer", seed_s[i]);
    for (int i = 0; i < ns; i++) {
        const char *cs = class_s[nc == 1 ? 0 : i];
        if (!parse_int(cs, &o.classes[i]) || o.classes[i] < 0 || o.classes[i] >= dc.num_classes)
            return usage_error("--class: '%s' is not a class id in 0..%d for %s", cs, dc.num_classes - 1,
                               o.model);
    }
    if (steps_ll < 1 || steps_ll > RP_DIT_TRAIN_STEPS)
        return usage_error("--steps must be in 1..1000 (got %s)", rp_arg_str(&a, "steps", ""));
    o.steps = (int)steps_ll;
    rp_sampler_kind sk;
    if (rp_sampler_parse(o.sampler_s, &sk, &err) != RP_OK) return usage_error("--sampler: %s", err.msg);
    if (o.eta_given && !rp_sampler_uses_eta(sk))
        return usage_error("--eta applies to ddim and euler-a, not %s", o.sampler_s);
    if (!o.eta_given) o.eta = rp_sampler_default_eta(sk);
    if (!(o.eta >= 0.0) || (sk == RP_SAMPLER_DDIM && o.eta > 1.0))
        return usage_error("--eta must be in %s (got %s)", sk == RP_SAMPLER_DDIM ? "[0, 1] for ddim" : "[0, inf)",
                           rp_arg_str(&a, "eta", ""));
    if (!(o.cfg >= 0.0)) return usage_error("--cfg must be >= 0 (got %s)", rp_arg_str(&a, "cfg", ""));
    if (threads_ll < 0 || threads_ll > 4096)
        return usage_error("--threads must be in 0..4096 (got %s)", rp_arg_str(&a, "threads", ""));
    o.threads = (int)threads_ll;
    rp_ctx ctx = rp_ctx_default();
    ctx.threads = o.threads;
    ctx.reduce_split = o.reduce_split;
    if (!strcmp(o.precision_s, "fp32")) ctx.precision = RP_PREC_FP32;
    else if (!strcmp(o.precision_s, "bf16")) ctx.precision = RP_PREC_BF16;
    else return usage_error("--precision: '%s' is not fp32 or bf16", o.precision_s);
    if (rp_attn_kind_parse(o.attention_s, &ctx.attn.kind, &err) != RP_OK)
        return usage_error("--attention: %s", err.msg);
    if (!o.out && !o.latents) return usage_error("missing --out (PNG path) or --latents");

    /* ---- run ---- */
    rp_gen_item items[MAX_ITEMS];
    for (int i = 0; i < o.n; i++) {
        items[i].seed = o.seeds[i];
        items[i].global_index = (uint64_t)i;
        items[i].class_id = o.classes[i];
        items[i].prompt = NULL;
    }
    rp_gen_request req = {0};
    req.model = o.model;
    req.depth = o.depth;
    req.weights = o.weights;
    req.weight_seed = o.weight_seed;
    req.vae = o.vae ? o.vae : rp_gen_default_vae(o.model);
    req.vae_weights = o.vae_weights;
    req.sampler = sk;
    req.eta = o.eta;
    req.steps = o.steps;
    req.cfg = o.cfg;
    req.n_items = o.n;
    req.items = items;
    req.decode = o.out != NULL;

    rp_trace trace;
    if (o.trace) {
        rp_trace_init(&trace);
        ctx.trace = &trace;
    }
    rp_ctx_apply(&ctx);
    rp_gen_result res;
    int rc = 0;
    if (rp_generate(&req, &ctx, &res, &err) != RP_OK) {
        rc = rp_report_error(&err);
        goto out;
    }
    if (o.latents && write_latents(&o, &req, &ctx, &res, &err) != RP_OK) {
        rc = rp_report_error(&err);
        goto done;
    }
    if (o.out) {
        const size_t per = (size_t)res.H * res.W * 3;
        for (int i = 0; i < res.B; i++) {
            char path[4096];
            item_path(path, sizeof path, o.out, i, res.B);
            if (rp_png_write(path, res.rgb + i * per, res.W, res.H, &err) != RP_OK) {
                rc = rp_report_error(&err);
                goto done;
            }
            printf("wrote %s (%dx%d, seed %" PRIu64 ", class %d)\n", path, res.W, res.H,
                   items[i].seed, items[i].class_id);
        }
    }
    if (o.latents) printf("wrote %s\n", o.latents);
    if (o.trace) {
        if (rp_trace_save(&trace, o.trace, &err) != RP_OK) {
            rc = rp_report_error(&err);
            goto done;
        }
        printf("wrote %s\n", o.trace);
    }
    printf("generate: %s, %s, %d steps, cfg %g, %d item(s): sampling %.3f s (%d model evals), decode %.3f s\n",
           o.model, rp_sampler_name(sk), o.steps, o.cfg, res.B, res.sample_seconds, res.n_evals,
           res.decode_seconds);
done:
    rp_gen_result_free(&res);
out:
    if (o.trace) rp_trace_free(&trace);
    return rc;
}
