/* cmd_generate.c — `repro generate`: sample latents with a model, decode them to PNG.
 *
 * Items, DiT: one per --seed, in order; classes: either one --class for every seed,
 * or exactly one --class per seed (paired in order); any other count is a usage error.
 * Items, SD3 / FLUX: from --prompt (one for every --seed, or one per --seed, paired)
 * or from --prompts-file (format in USAGE; parsed by read_prompts_file).
 * Item i has global index --first-index + i (default 0 + i): its noise key, so a lone
 * run with --first-index i reproduces item i of a batch. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention/attention.h"
#include "engine/ctx.h"
#include "engine/device.h"
#include "engine/image.h"
#include "engine/models/family_ops.h"
#include "engine/models/registry.h"
#include "engine/pipeline/pipeline.h"
#include "engine/safetensors.h"
#include "engine/samplers/flow.h"
#include "engine/samplers/samplers.h"
#include "engine/trace.h"
#ifdef REPRO_HAVE_CUDA
#include "engine/cuda/device_cuda.h"
#endif
#include "engine/strutil.h"
#include "engine/vae/vae.h"
#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "harness/store/store.h"
#include "harness/sweep/env.h"

#define MAX_ITEMS 256
#define MAX_PROMPT_BYTES 65536   /* one line of a prompts file */

static const char USAGE[] =
    "usage: repro generate --model M --seed S [--seed S ...] --class K [--class K ...] --out img.png  (DiT)\n"
    "       repro generate --model M --prompt P --seed S [--seed S ...] --out img.png             (SD3, FLUX)\n"
    "       repro generate --model M --prompts-file F [--seed S ...] --out img.png                (SD3, FLUX)\n"
    "                      [options]\n"
    "\n"
    "Samples latents with a diffusion transformer and decodes them with a VAE: the\n"
    "class-conditional DiT (VP diffusion), or the text-conditional SD3 (MMDiT, flow matching\n"
    "with static shift 3 and classifier-free guidance) and FLUX.1-dev (flow matching with\n"
    "the resolution-dependent shift and embedded guidance), both sampled with Euler.\n"
    "\n"
    "Model and weights:\n"
    "  --model M          dit-tiny | dit-xl-2-128 | dit-xl-2-256 | dit-xl-2-512 | sd3-tiny | sd3-medium |\n"
    "                     sd3.5-large | sd3.5-medium | sd3.5-medium-tiny |\n"
    "                     dit-digits | sd3-digits (trained on the ten digits, 16x16 images: weights\n"
    "                     shipped in engine/models/digits/, or under $REPRO_WEIGHTS_DIR/digits/) |\n"
    "                     flux-tiny | flux-dev | flux-schnell | flux-tiny-schnell\n"
    "  --depth N          override the preset's depth (real shapes, fewer blocks). FLUX: the\n"
    "                     double-stream blocks; the single-stream blocks follow the preset's\n"
    "                     ratio (flux-dev 19:38 -> 2 per double block, flux-tiny 1)\n"
    "  --single-depth N   FLUX: keep N single-stream blocks instead\n"
    "  --weights W        checkpoint (safetensors); default: synthetic weights, generated\n"
    "                     once into the cache ($REPRO_CACHE, $XDG_CACHE_HOME/repro, ~/.cache/repro);\n"
    "                     the trained *-digits presets: their shipped files\n"
    "  --weight-seed S    seed of the synthetic weights (model, text encoder, VAE; default 0;\n"
    "                     no effect on the trained presets)\n"
    "  --vae V            vae-tiny | vae-mini | vae-digits | sd-vae | vae-tiny-16 | vae-mini-16 |\n"
    "                     sd3-vae | flux-vae (default:\n"
    "                     vae-tiny for dit-tiny, vae-digits for the digits, vae-tiny-16 for sd3-tiny\n"
    "                     and flux-tiny, sd3-vae for sd3-medium, flux-vae for flux-dev, sd-vae otherwise)\n"
    "  --vae-weights W    VAE checkpoint; default: synthetic, cached\n"
    "  --text-encoder T   SD3/FLUX prompt encoder: te-tiny | te-digits | te-sd3 | te-flux (default:\n"
    "                     te-tiny for the tiny presets, te-digits for sd3-digits, te-sd3 for\n"
    "                     sd3-medium, te-flux for flux-dev)\n"
    "  --te-weights W     text-encoder checkpoint; default: synthetic, cached\n"
    "  --prompt-embeds F  SD3/FLUX: precomputed text conditioning instead of the text encoder\n"
    "                     (safetensors: prompt_embeds (R, L, Dctx), pooled_prompt_embeds (R, Dpool),\n"
    "                     for SD3 with cfg > 1 also negative_prompt_embeds (1, L, Dctx) and\n"
    "                     negative_pooled_prompt_embeds (1, Dpool), as diffusers' encode_prompt\n"
    "                     returns them). One item per row; one --seed for all rows or one per row\n"
    "  --save-prompt-embeds F  SD3/FLUX: also write the text encoder's conditioning of the items\n"
    "                     there, in --prompt-embeds' format\n"
    "\n"
    "Items (one image each):\n"
    "  --seed S           one item per --seed (repeatable), unless --prompts-file gives seeds\n"
    "  --first-index N    global index of the first item (default 0): item i's noise is keyed\n"
    "                     by (seed_i, N + i), so --first-index i alone reproduces item i of a batch\n"
    "  --class K          DiT: ImageNet class (dit-digits: the digit 0..9); give one for all\n"
    "                     seeds, or one per seed\n"
    "  --prompt P         SD3/FLUX: the prompt; give one for all seeds, or one per seed (paired\n"
    "                     in order). \"\" is the unconditional (empty) prompt\n"
    "  --prompts-file F   SD3/FLUX: one item per line, either\n"
    "                       SEED<TAB>PROMPT   an explicit seed (a decimal integer before the\n"
    "                                         first TAB), or\n"
    "                       PROMPT            the seed comes from --seed: one --seed for every\n"
    "                                         such line, or one --seed per such line, in order.\n"
    "                     Items are numbered in file order. Empty lines are skipped; \"SEED<TAB>\"\n"
    "                     with nothing after it is an unconditional item; a trailing CR is\n"
    "                     dropped; the bytes are otherwise the prompt (UTF-8, not validated)\n"
    "\n"
    "Sampling:\n"
    "  --steps N          sampling steps, 1..1000 (default: DiT 50, SD3/FLUX 28, FLUX-schnell 4)\n"
    "  --sampler X        DiT: ddim | ddpm | dpmpp-2m | euler-a (default ddim);\n"
    "                     SD3/FLUX: euler (flow-matching Euler, the only one)\n"
    "  --eta E            ddim: 0..1 (default 0); euler-a: >= 0 (default 1); not for others\n"
    "  --sharpen S        attention q/k/v weights x S (0..64; default 0, and 1: off): the sharpened\n"
    "                     variant the classifier is calibrated on (engine/sharpen.h)\n"
    "  --cfg G            classifier-free guidance scale >= 0 (<= 1: no unconditional pass).\n"
    "                     DiT: default 4.0, applied to all latent channels. SD3: default 7.0,\n"
    "                     the unconditional input is the encoding of \"\". FLUX: not available\n"
    "                     (FLUX-dev uses embedded guidance, --guidance)\n"
    "  --guidance G       FLUX: embedded guidance scale (default 3.5; FLUX-schnell has none)\n"
    "  --width W          SD3/FLUX image width in pixels, a multiple of 16 (default: the\n"
    "                     preset's native size, 128 for the tiny presets, 1024 otherwise)\n"
    "  --height H         SD3/FLUX image height in pixels, likewise\n"
    "  --batch-forward B  SD3/FLUX: joint (default; one transformer forward per step for the\n"
    "                     whole batch, as diffusers) | per-item (one forward per item: an\n"
    "                     item's bits never depend on the other items, whatever the BLAS's\n"
    "                     kernel choice for the batch's GEMM sizes; --trace then covers item 0)\n"
    "\n"
    "Engine:\n"
    "  --threads N        GEMM threads (default: OpenBLAS default)\n"
    "  --precision P      fp32 | bf16 GEMM inputs (default fp32); on cuda also tf32 | fp16\n"
    "  --device D         where the models run: cpu (default) | cuda | cuda:<GPU name\n"
    "                     substring> (cuda:H200) | cuda:#<ordinal> | host-check (the CPU ops\n"
    "                     on checked device memory: bitwise the cpu result)\n"
    "  --gpu-mode M       deterministic (default) | fast (cuBLASLt heuristic per call,\n"
    "                     split-K and TF32 allowed); cuda only\n"
    "  --reduce-split     split every GEMM's K reduction in two halves\n"
    "  --numerics N       default | invariant: layout-invariant kernels (every row's bits\n"
    "                     independent of batch size, batch composition and ranks; CPU,\n"
    "                     attention math; docs/invariant.md)\n"
    "  --attention A      math | split | subquad | flash | auto (default math)\n"
    "  --attention-q-chunk N   query rows per slice/chunk/tile (split, subquad, flash,\n"
    "                     auto; default: the variant's, or auto's pick)\n"
    "  --attention-kv-chunk N  keys per chunk/tile (subquad, flash, auto)\n"
    "  --device-profile P what auto decides from: cpu-avx512-24g | cpu-avx2-8g |\n"
    "                     cpu-lowmem-2g | cpu-sse2-4g | host (default), or key=val,...\n"
    "                     (mem=SIZE, simd=sse2|avx2|avx512, sdpa=0|1, split=0|1, flash_hd=N);\n"
    "                     auto's choice and reason go to the --trace notes\n"
    "  --openblas-coretype C  OpenBLAS kernel set (Haswell, SkylakeX, ...); re-executes\n"
    "                     with OPENBLAS_CORETYPE=C when the loaded one differs\n"
    "  --trace T          write per-layer statistics of the first model evaluation\n"
    "\n"
    "Output:\n"
    "  --out img.png      output image; several items write <stem>-<i>.png (i from 0, in order)\n"
    "  --latents L        also write noise, final latents, trajectory and schedule\n"
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
        *precision_s, *attention_s, *text_encoder, *te_weights, *prompts_file, *device_s, *gpu_mode_s,
        *prompt_embeds, *save_prompt_embeds, *numerics_s;
    rp_family family;
    const rp_family_ops *ops;  /* the model's family (engine/models/family_ops.h) */
    int depth, single_depth, steps, threads, reduce_split, n, width, height, per_item, sharpen;
    uint64_t weight_seed, first_index;
    double eta, cfg, guidance;
    int schnell; /* FLUX without a guidance embedder (FLUX.1-schnell): no guidance, 4 steps */
    int eta_given;
    uint64_t seeds[MAX_ITEMS];
    int classes[MAX_ITEMS];
    char *prompts[MAX_ITEMS];  /* SD3 / FLUX: owned copies ("" = unconditional) */
} gen_opts;

static void gen_opts_free(gen_opts *o) {
    for (int i = 0; i < MAX_ITEMS; i++) free(o->prompts[i]);
    memset(o->prompts, 0, sizeof o->prompts);
}

/* ---- prompts file --------------------------------------------------------------------- */

/* Reads F (format in USAGE) into o->prompts / o->seeds / o->n. Seedless lines take
 * seeds[0] when nseeds == 1, else seeds[k] for the k-th seedless line (nseeds must
 * then equal their count). On error prints a usage message and returns 2. */
static int read_prompts_file(gen_opts *o, const char *path, const uint64_t *seeds, int nseeds) {
    FILE *f = fopen(path, "rb");
    if (!f) return usage_error("--prompts-file: cannot open '%s': %s", path, strerror(errno));
    char *line = malloc(MAX_PROMPT_BYTES + 2);
    if (!line) { fclose(f); return usage_error("--prompts-file: out of memory"); }
    int n = 0, seedless = 0, lineno = 0, rc = 0;
    while (fgets(line, MAX_PROMPT_BYTES + 2, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == MAX_PROMPT_BYTES + 1 && line[len - 1] != '\n') {
            rc = usage_error("--prompts-file %s:%d: line longer than %d bytes", path, lineno, MAX_PROMPT_BYTES);
            break;
        }
        if (len && line[len - 1] == '\n') line[--len] = '\0';
        if (len && line[len - 1] == '\r') line[--len] = '\0';
        if (len == 0) continue; /* empty lines are skipped */
        if (n == MAX_ITEMS) {
            rc = usage_error("--prompts-file %s: more than %d items", path, MAX_ITEMS);
            break;
        }
        /* "SEED<TAB>PROMPT": an unsigned decimal before the first TAB */
        const char *prompt = line;
        char *tab = strchr(line, '\t');
        int has_seed = 0;
        if (tab && tab > line) {
            *tab = '\0';
            uint64_t s;
            size_t k = 0;
            while (line[k] >= '0' && line[k] <= '9') k++;
            if (line[k] == '\0' && rp_parse_u64(line, &s)) {
                o->seeds[n] = s;
                has_seed = 1;
                prompt = tab + 1;
            } else {
                *tab = '\t'; /* not a seed: the TAB is part of the prompt */
            }
        }
        if (!has_seed) {
            if (nseeds == 0) {
                rc = usage_error("--prompts-file %s:%d: no seed for this line (write \"SEED<TAB>PROMPT\" or give "
                                 "--seed)", path, lineno);
                break;
            }
            if (nseeds > 1 && seedless >= nseeds) {
                rc = usage_error("--prompts-file %s:%d: more lines without a seed than --seed values (%d)", path,
                                 lineno, nseeds);
                break;
            }
            o->seeds[n] = seeds[nseeds == 1 ? 0 : seedless];
            seedless++;
        }
        o->prompts[n] = strdup(prompt);
        if (!o->prompts[n]) { rc = usage_error("--prompts-file: out of memory"); break; }
        n++;
    }
    if (!rc && ferror(f)) rc = usage_error("--prompts-file: error reading '%s'", path);
    fclose(f);
    free(line);
    if (rc) return rc;
    if (n == 0) return usage_error("--prompts-file %s: no prompts (the file is empty or has only empty lines)", path);
    if (nseeds > 1 && seedless != nseeds)
        return usage_error("--prompts-file %s: %d --seed values for %d lines without a seed (give one --seed for "
                           "all, or one per such line)", path, nseeds, seedless);
    if (nseeds > 0 && seedless == 0)
        return usage_error("--prompts-file %s: every line has its own seed; --seed is not used (drop it)", path);
    o->n = n;
    return 0;
}

/* ---- latents file ------------------------------------------------------------------------ */

/* The prompts as a JSON array string (malloc'd), for the latents metadata. */
static char *prompts_json(const rp_gen_request *req) {
    cJSON *a = cJSON_CreateArray();
    if (!a) return NULL;
    for (int b = 0; b < req->n_items; b++) {
        cJSON *s = cJSON_CreateString(req->items[b].prompt ? req->items[b].prompt : "");
        if (!s || !cJSON_AddItemToArray(a, s)) { cJSON_Delete(s); cJSON_Delete(a); return NULL; }
    }
    char *out = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return out;
}

static rp_status write_latents(const gen_opts *o, const rp_gen_request *req, const rp_ctx *ctx,
                               const rp_gen_result *r, rp_error *err) {
    rp_st_writer *w = rp_st_writer_new();
    if (!w) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for the latents writer");
    const int B = r->B, flow = o->ops->cond == RP_COND_TEXT;
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
    char *pj = flow ? prompts_json(req) : NULL;
    rp_status st = flow && !pj ? RP_FAIL(err, RP_ERR_NOMEM, "out of memory for the prompts metadata") : RP_OK;
#define TRY(e) do { if (st == RP_OK) st = (e); } while (0)
    TRY(rp_store_latents_tensors(w, r, seeds, classes, gidx, err));

    char v[8192];
    TRY(rp_st_writer_meta(w, "repro.format", "latents-v1", err));
    TRY(rp_st_writer_meta(w, "repro.command", "generate", err));
    TRY(rp_st_writer_meta(w, "repro.version", REPRO_VERSION, err));
    TRY(rp_st_writer_meta(w, "repro.git_revision", rp_git_revision(), err));
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
    join_u64(v, sizeof v, ugidx, B);
    TRY(rp_st_writer_meta(w, "global_index", v, err));
    snprintf(v, sizeof v, "%d", o->steps);
    TRY(rp_st_writer_meta(w, "steps", v, err));
    snprintf(v, sizeof v, "%.17g", o->cfg);
    TRY(rp_st_writer_meta(w, "cfg", v, err));
    snprintf(v, sizeof v, "%d", o->threads);
    TRY(rp_st_writer_meta(w, "threads", v, err));
    TRY(rp_st_writer_meta(w, "precision", o->precision_s, err));
    if (ctx->dev) { /* cpu files keep their old key set */
        TRY(rp_st_writer_meta(w, "device", ctx->dev->name, err));
        if (o->gpu_mode_s) TRY(rp_st_writer_meta(w, "gpu_mode", o->gpu_mode_s, err));
    }
    TRY(rp_st_writer_meta(w, "reduce_split", ctx->reduce_split ? "1" : "0", err));
    if (ctx->numerics != RP_NUMERICS_DEFAULT) /* default files keep their old key set */
        TRY(rp_st_writer_meta(w, "numerics", rp_numerics_name(ctx->numerics), err));
    TRY(rp_st_writer_meta(w, "attention", rp_attn_kind_name(ctx->attn.kind), err));
    snprintf(v, sizeof v, "%d", ctx->attn.q_chunk);
    TRY(rp_st_writer_meta(w, "attention.q_chunk", v, err));
    snprintf(v, sizeof v, "%d", ctx->attn.kv_chunk);
    TRY(rp_st_writer_meta(w, "attention.kv_chunk", v, err));
    TRY(rp_st_writer_meta(w, "device_profile", ctx->device.name, err));
    TRY(rp_st_writer_meta(w, "openblas.coretype", ctx->blas_core[0] ? ctx->blas_core : "default", err));
    TRY(rp_st_writer_meta(w, "openblas.core", rp_blas_core_loaded(), err));
    TRY(rp_st_writer_meta(w, "trace", o->trace ? o->trace : "", err));
    TRY(rp_st_writer_meta(w, "out", o->out ? o->out : "", err));
    if (!flow) {
        join_u64(v, sizeof v, uclasses, B);
        TRY(rp_st_writer_meta(w, "classes", v, err));
        TRY(rp_st_writer_meta(w, "sampler", rp_sampler_name(req->sampler), err));
        snprintf(v, sizeof v, "%.17g", req->eta);
        TRY(rp_st_writer_meta(w, "eta", v, err));
        TRY(rp_st_writer_meta(w, "cfg_channels", "all", err));
        TRY(rp_st_writer_meta(w, "trajectory_space", "vp", err));
        TRY(rp_st_writer_meta(w, "schedule", "dit-linear-1000", err));
    } else {
        TRY(rp_st_writer_meta(w, "family", rp_family_name(r->family), err));
        TRY(rp_st_writer_meta(w, "prompts", pj, err));
        snprintf(v, sizeof v, "%d", o->single_depth);
        TRY(rp_st_writer_meta(w, "single_depth", v, err));
        TRY(rp_st_writer_meta(w, "text_encoder", r->te_name, err));
        TRY(rp_st_writer_meta(w, "te_weights", r->te_weights_path, err));
        TRY(rp_st_writer_meta(w, "te_weights_explicit", o->te_weights ? "1" : "0", err));
        TRY(rp_st_writer_meta(w, "sampler", "flow-euler", err));
        TRY(rp_st_writer_meta(w, "trajectory_space", "flow", err));
        TRY(rp_st_writer_meta(w, "batch_forward", o->per_item ? "per-item" : "joint", err));
        if (o->ops->guidance == RP_GUIDE_CFG) { /* SD3 */
            TRY(rp_st_writer_meta(w, "schedule", "flow-sd3-static-shift", err));
            snprintf(v, sizeof v, "%.17g", r->shift);
            TRY(rp_st_writer_meta(w, "shift", v, err));
            TRY(rp_st_writer_meta(w, "cfg_uncond", "\"\" prompt", err));
        } else if (o->schnell) { /* no guidance embedder: the unshifted schedule */
            TRY(rp_st_writer_meta(w, "schedule", "flow-flux-linear", err));
            snprintf(v, sizeof v, "%.17g", r->shift);
            TRY(rp_st_writer_meta(w, "shift", v, err));
        } else {
            TRY(rp_st_writer_meta(w, "schedule", "flow-flux-dynamic-shift", err));
            snprintf(v, sizeof v, "%.17g", r->mu);
            TRY(rp_st_writer_meta(w, "mu", v, err));
            snprintf(v, sizeof v, "%.17g", o->guidance);
            TRY(rp_st_writer_meta(w, "guidance", v, err));
        }
        rp_vae_config vc; /* the image size in pixels, decoded or not: latent size x VAE factor */
        const int f = rp_vae_preset(req->vae, &vc, NULL) == RP_OK ? rp_vae_scale_factor(&vc) : 0;
        snprintf(v, sizeof v, "%d", r->w * f);
        TRY(rp_st_writer_meta(w, "width", v, err));
        snprintf(v, sizeof v, "%d", r->h * f);
        TRY(rp_st_writer_meta(w, "height", v, err));
        snprintf(v, sizeof v, "%d", r->h);
        TRY(rp_st_writer_meta(w, "latent_height", v, err));
        snprintf(v, sizeof v, "%d", r->w);
        TRY(rp_st_writer_meta(w, "latent_width", v, err));
    }
    TRY(rp_st_writer_write(w, o->latents, err));
#undef TRY
    free(pj);
    rp_st_writer_free(w);
    return st;
}

/* ---- the command ------------------------------------------------------------------------- */

/* Parses and validates everything; on a usage error prints it and returns 2, else 0
 * with o, ctx and items filled. */
static int parse(int argc, char **argv, gen_opts *o, rp_ctx *ctx, rp_sampler_kind *sk) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    o->model = rp_arg_str(&a, "model", NULL);
    o->depth = (int)rp_arg_int(&a, "depth", 0);
    long long single_ll = rp_arg_int(&a, "single-depth", 0);
    o->weights = rp_arg_str(&a, "weights", NULL);
    o->vae = rp_arg_str(&a, "vae", NULL);
    o->vae_weights = rp_arg_str(&a, "vae-weights", NULL);
    o->text_encoder = rp_arg_str(&a, "text-encoder", NULL);
    o->te_weights = rp_arg_str(&a, "te-weights", NULL);
    o->trace = rp_arg_str(&a, "trace", NULL);
    o->out = rp_arg_str(&a, "out", NULL);
    o->latents = rp_arg_str(&a, "latents", NULL);
    const char *sampler_given = rp_arg_str(&a, "sampler", NULL);
    o->precision_s = rp_arg_str(&a, "precision", "fp32");
    o->device_s = rp_arg_str(&a, "device", "cpu");
    o->gpu_mode_s = rp_arg_str(&a, "gpu-mode", NULL);
    o->numerics_s = rp_arg_str(&a, "numerics", "default");
    o->attention_s = rp_arg_str(&a, "attention", "math");
    const char *aq_s = rp_arg_str(&a, "attention-q-chunk", NULL);
    const char *akv_s = rp_arg_str(&a, "attention-kv-chunk", NULL);
    const char *core_s = rp_arg_str(&a, "openblas-coretype", NULL);
    const char *prof_s = rp_arg_str(&a, "device-profile", NULL);
    o->prompts_file = rp_arg_str(&a, "prompts-file", NULL);
    o->prompt_embeds = rp_arg_str(&a, "prompt-embeds", NULL);
    o->save_prompt_embeds = rp_arg_str(&a, "save-prompt-embeds", NULL);
    const char *wseed_s = rp_arg_str(&a, "weight-seed", "0");
    const char *first_s = rp_arg_str(&a, "first-index", "0");
    const char *steps_s = rp_arg_str(&a, "steps", NULL);
    long long steps_ll = rp_arg_int(&a, "steps", 0);
    long long threads_ll = rp_arg_int(&a, "threads", 0);
    o->eta_given = rp_arg_str(&a, "eta", NULL) != NULL;
    o->eta = rp_arg_double(&a, "eta", 0.0);
    o->sharpen = (int)rp_arg_int(&a, "sharpen", 0);
    const int cfg_given = rp_arg_str(&a, "cfg", NULL) != NULL;
    o->cfg = rp_arg_double(&a, "cfg", 0.0);
    const int guidance_given = rp_arg_str(&a, "guidance", NULL) != NULL;
    o->guidance = rp_arg_double(&a, "guidance", RP_FLOW_FLUX_GUIDANCE);
    const int width_given = rp_arg_str(&a, "width", NULL) != NULL;
    const int height_given = rp_arg_str(&a, "height", NULL) != NULL;
    long long width_ll = rp_arg_int(&a, "width", 0), height_ll = rp_arg_int(&a, "height", 0);
    o->reduce_split = rp_arg_flag(&a, "reduce-split");
    const char *batch_s = rp_arg_str(&a, "batch-forward", NULL);
    const char *seed_s[MAX_ITEMS + 1], *class_s[MAX_ITEMS + 1], *prompt_s[MAX_ITEMS + 1];
    const int ns = rp_arg_strs(&a, "seed", seed_s, MAX_ITEMS + 1);
    const int nc = rp_arg_strs(&a, "class", class_s, MAX_ITEMS + 1);
    const int np = rp_arg_strs(&a, "prompt", prompt_s, MAX_ITEMS + 1);
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) {
        const char *m = err.msg; /* args.c prefixes some messages with the subcommand */
        if (!strncmp(m, "generate: ", 10)) m += 10;
        return usage_error("%s", m);
    }

    /* ---- the model (usage errors: exit 2, each naming its option) ---- */
    if (!o->model) return usage_error("missing --model (e.g. --model dit-tiny or --model flux-tiny)");
    if (rp_model_family(o->model, &o->family, &err) != RP_OK) return usage_error("--model: %s", err.msg);
    o->ops = rp_family_ops_of(o->family);
    if (!o->ops->denoiser)
        return usage_error("--model: '%s' is a %s, not a denoiser (known: %s)", o->model, rp_family_name(o->family),
                           rp_denoiser_presets());
    const int flow = o->ops->cond == RP_COND_TEXT, embedded = o->ops->guidance == RP_GUIDE_EMBEDDED;
    const char *fam_s = o->ops->label;
    if (o->depth < 0)
        return usage_error("--depth must be >= 1, or 0 for the preset depth (got %s)", rp_arg_str(&a, "depth", ""));
    if (single_ll < 0 || single_ll > 1000)
        return usage_error("--single-depth must be in 1..1000, or 0 to follow --depth (got %lld)", single_ll);
    o->single_depth = (int)single_ll;
    if (o->single_depth && !o->ops->takes_single_depth)
        return usage_error("--single-depth applies to FLUX (single-stream blocks), not %s", o->model);
    if (!rp_parse_u64(wseed_s, &o->weight_seed))
        return usage_error("--weight-seed: '%s' is not a non-negative integer", wseed_s);
    if (!rp_parse_u64(first_s, &o->first_index))
        return usage_error("--first-index: '%s' is not a non-negative integer", first_s);
    if (o->vae) {
        rp_family fam;
        if (rp_model_family(o->vae, &fam, &err) != RP_OK || fam != RP_FAMILY_VAE)
            return usage_error("--vae: unknown VAE '%s' (known: %s)", o->vae, rp_family_presets(RP_FAMILY_VAE));
    }
    if (o->text_encoder) {
        rp_family fam;
        if (!flow) return usage_error("--text-encoder applies to SD3/FLUX; %s is class-conditional", o->model);
        if (rp_model_family(o->text_encoder, &fam, &err) != RP_OK || fam != RP_FAMILY_TEXT_ENCODER)
            return usage_error("--text-encoder: unknown text encoder '%s' (known: %s)", o->text_encoder,
                               rp_family_presets(RP_FAMILY_TEXT_ENCODER));
    }
    if (o->te_weights && !flow) return usage_error("--te-weights applies to SD3/FLUX, not %s", o->model);
    if ((o->prompt_embeds || o->save_prompt_embeds) && !flow)
        return usage_error("--%s applies to SD3/FLUX, not %s", o->prompt_embeds ? "prompt-embeds" : "save-prompt-embeds",
                           o->model);

    /* ---- family-specific options ---- */
    if (!flow) {
        if (np || o->prompts_file)
            return usage_error("--%s: %s is class-conditional; give --class, not prompts", np ? "prompt" : "prompts-file",
                               o->model);
        if (guidance_given) return usage_error("--guidance applies to FLUX (embedded guidance); DiT uses --cfg");
        if (width_given || height_given)
            return usage_error("--%s: the DiT image size is fixed by the preset", width_given ? "width" : "height");
        if (batch_s) return usage_error("--batch-forward applies to SD3/FLUX, not %s", o->model);
    } else {
        if (nc) return usage_error("--class: %s is text-conditional; give --prompt or --prompts-file", o->model);
        if (o->eta_given) return usage_error("--eta applies to the DiT samplers, not to %s's flow-matching Euler", fam_s);
        if (sampler_given && strcmp(sampler_given, "euler"))
            return usage_error("--sampler: %s samples with flow-matching Euler ('euler'), not '%s'", fam_s,
                               sampler_given);
        if (embedded && cfg_given && o->cfg > 1.0)
            return usage_error("--cfg %s: FLUX-dev uses embedded guidance (--guidance, default %g), not "
                               "classifier-free guidance; --cfg must be <= 1 for %s",
                               rp_arg_str(&a, "cfg", ""), RP_FLOW_FLUX_GUIDANCE, o->model);
        if (!embedded && guidance_given)
            return usage_error("--guidance applies to FLUX (embedded guidance); %s uses classifier-free guidance, "
                               "--cfg", fam_s);
        if (embedded && (!isfinite(o->guidance) || fabs(o->guidance) > 1e6))
            return usage_error("--guidance must be a finite number (got %s)", rp_arg_str(&a, "guidance", ""));
        rp_model_facts mf;
        if (embedded && o->ops->facts(o->model, 0, 0, &mf, NULL) == RP_OK && !mf.guidance_embeds) {
            /* FLUX.1-schnell: FluxPipeline ignores guidance_scale without a guidance embedder */
            if (guidance_given)
                return usage_error("--guidance: %s has no guidance embedding (FLUX.1-schnell is timestep-distilled)",
                                   o->model);
            o->guidance = 0.0;
            o->schnell = 1;
        }
        if ((width_given && (width_ll < 1 || width_ll > 16384)) || (height_given && (height_ll < 1 || height_ll > 16384)))
            return usage_error("--%s must be in 1..16384 pixels (got %lld)", width_given && (width_ll < 1 || width_ll > 16384)
                               ? "width" : "height", width_given && (width_ll < 1 || width_ll > 16384) ? width_ll : height_ll);
        o->width = (int)width_ll;
        o->height = (int)height_ll;
        if (batch_s && strcmp(batch_s, "joint") && strcmp(batch_s, "per-item"))
            return usage_error("--batch-forward: '%s' is not joint or per-item", batch_s);
        o->per_item = batch_s && !strcmp(batch_s, "per-item");
    }
    if (!cfg_given) o->cfg = embedded ? 1.0 : flow ? RP_FLOW_SD3_CFG : 4.0; /* FLUX, SD3, DiT */
    if (!(o->cfg >= 0.0) || !isfinite(o->cfg))
        return usage_error("--cfg must be >= 0 (got %s)", rp_arg_str(&a, "cfg", ""));

    /* ---- items ---- */
    if (ns > MAX_ITEMS || nc > MAX_ITEMS || np > MAX_ITEMS)
        return usage_error("at most %d items per run (--seed / --class / --prompt given too often)", MAX_ITEMS);
    uint64_t seeds[MAX_ITEMS];
    for (int i = 0; i < ns; i++)
        if (!rp_parse_u64(seed_s[i], &seeds[i]))
            return usage_error("--seed: '%s' is not a non-negative integer", seed_s[i]);
    if (!flow) {
        rp_model_facts dc; /* the preset's classes */
        if (o->ops->facts(o->model, 0, 0, &dc, &err) != RP_OK) return usage_error("--model: %s", err.msg);
        if (ns < 1) return usage_error("missing --seed (one per image, e.g. --seed 0)");
        if (nc < 1) return usage_error("missing --class (ImageNet class id, e.g. --class 207)");
        if (nc != 1 && nc != ns)
            return usage_error("--class/--seed count mismatch: %d --class for %d --seed (give one --class "
                               "for all seeds, or one per seed)", nc, ns);
        o->n = ns;
        memcpy(o->seeds, seeds, sizeof(uint64_t) * ns);
        for (int i = 0; i < ns; i++) {
            const char *cs = class_s[nc == 1 ? 0 : i];
            if (!parse_int(cs, &o->classes[i]) || o->classes[i] < 0 || o->classes[i] >= dc.num_classes)
                return usage_error("--class: '%s' is not a class id in 0..%d for %s", cs, dc.num_classes - 1,
                                   o->model);
        }
    } else if (o->prompt_embeds) {
        if (np || o->prompts_file || o->text_encoder || o->te_weights || o->save_prompt_embeds)
            return usage_error("--prompt-embeds replaces the prompts and the text encoder: no --%s with it",
                               np ? "prompt" : o->prompts_file ? "prompts-file" : o->text_encoder ? "text-encoder"
                               : o->te_weights ? "te-weights" : "save-prompt-embeds");
        rp_st_file *pf = NULL;
        if (rp_st_open(o->prompt_embeds, &pf, &err) != RP_OK) return usage_error("--prompt-embeds: %s", err.msg);
        const rp_st_tensor *pt = rp_st_find(pf, "prompt_embeds");
        const long long R = pt && pt->ndim == 3 ? (long long)pt->shape[0] : -1;
        rp_st_close(pf);
        if (R < 1 || R > MAX_ITEMS)
            return usage_error("--prompt-embeds %s: needs a tensor prompt_embeds (R, L, Dctx) with 1..%d rows",
                               o->prompt_embeds, MAX_ITEMS);
        if (ns != 1 && ns != R)
            return usage_error("--prompt-embeds %s has %lld rows: give one --seed for all, or one per row (got %d)",
                               o->prompt_embeds, R, ns);
        o->n = (int)R;
        for (int i = 0; i < o->n; i++) {
            o->seeds[i] = seeds[ns == 1 ? 0 : i];
            if (!(o->prompts[i] = strdup(""))) return usage_error("out of memory");
        }
    } else if (o->prompts_file) {
        if (np) return usage_error("--prompt and --prompts-file: give one or the other");
        int rc = read_prompts_file(o, o->prompts_file, seeds, ns);
        if (rc) return rc;
    } else {
        if (np < 1) return usage_error("missing --prompt or --prompts-file (%s is text-conditional; --prompt \"\" "
                                       "is the unconditional prompt)", o->model);
        if (ns < 1) return usage_error("missing --seed (one per image, e.g. --seed 0)");
        if (np != 1 && np != ns)
            return usage_error("--prompt/--seed count mismatch: %d --prompt for %d --seed (give one --prompt for "
                               "all seeds, or one per seed)", np, ns);
        o->n = ns;
        memcpy(o->seeds, seeds, sizeof(uint64_t) * ns);
        for (int i = 0; i < ns; i++)
            if (!(o->prompts[i] = strdup(prompt_s[np == 1 ? 0 : i]))) return usage_error("out of memory");
    }
    if (o->first_index > UINT64_MAX - (uint64_t)o->n)
        return usage_error("--first-index %" PRIu64 " + %d items overflows 64 bits", o->first_index, o->n);

    /* ---- sampling and engine ---- */
    const long long max_steps = RP_DIT_TRAIN_STEPS; /* 1000 for both families */
    if (steps_s && (steps_ll < 1 || steps_ll > max_steps))
        return usage_error("--steps must be in 1..%lld (got %s)", max_steps, steps_s);
    o->steps = steps_s ? (int)steps_ll : o->schnell ? 4 : flow ? 28 : 50; /* FluxPipeline's schnell example: 4 */
    if (!flow) {
        o->sampler_s = sampler_given ? sampler_given : "ddim";
        if (rp_sampler_parse(o->sampler_s, sk, &err) != RP_OK) return usage_error("--sampler: %s", err.msg);
        if (o->eta_given && !rp_sampler_uses_eta(*sk))
            return usage_error("--eta applies to ddim and euler-a, not %s", o->sampler_s);
        if (!o->eta_given) o->eta = rp_sampler_default_eta(*sk);
        if (!(o->eta >= 0.0) || (*sk == RP_SAMPLER_DDIM && o->eta > 1.0))
            return usage_error("--eta must be in %s (got %s)", *sk == RP_SAMPLER_DDIM ? "[0, 1] for ddim" : "[0, inf)",
                               rp_arg_str(&a, "eta", ""));
    } else {
        o->sampler_s = "euler";
        *sk = RP_SAMPLER_DDIM; /* unused by the flow path */
        o->eta = 0.0;
    }
    if (threads_ll < 0 || threads_ll > 4096)
        return usage_error("--threads must be in 0..4096 (got %s)", rp_arg_str(&a, "threads", ""));
    o->threads = (int)threads_ll;
    *ctx = rp_ctx_default();
    ctx->threads = o->threads;
    ctx->reduce_split = o->reduce_split;
    if (rp_numerics_parse(o->numerics_s, &ctx->numerics, &err) != RP_OK) return usage_error("--numerics: %s", err.msg);
    /* on cuda the precision is the GEMMs' (the device's); the host-side parts (the text
     * encoder) run in fp32, or bf16 for bf16 */
    const int cuda = rp_device_name_is_cuda(o->device_s);
    if (strcmp(o->device_s, "cpu") && strcmp(o->device_s, "host-check") && !cuda)
        return usage_error("--device: '%s' is not cpu, cuda, cuda:<name>, cuda:#<ordinal> or host-check",
                           o->device_s);
    if (ctx->numerics == RP_NUMERICS_INVARIANT && cuda && strcmp(o->precision_s, "fp32") &&
        strcmp(o->precision_s, "bf16"))
        return usage_error("--numerics invariant on --device %s: the invariant kernels round their inputs to fp32 or "
                           "bf16 only (got --precision %s)", o->device_s, o->precision_s);
    if (o->gpu_mode_s && !cuda) return usage_error("--gpu-mode needs --device cuda (got --device %s)", o->device_s);
    if (o->gpu_mode_s && strcmp(o->gpu_mode_s, "deterministic") && strcmp(o->gpu_mode_s, "fast"))
        return usage_error("--gpu-mode: '%s' is not deterministic or fast", o->gpu_mode_s);
    if (rp_precision_for_host(o->precision_s, cuda, &ctx->precision, &err) != RP_OK)
        return usage_error("--precision: %s", err.msg);
    if (rp_attn_kind_parse(o->attention_s, &ctx->attn.kind, &err) != RP_OK)
        return usage_error("--attention: %s", err.msg);
    if (rp_ctx_configure(ctx, aq_s, akv_s, core_s, prof_s, &err) != RP_OK) return usage_error("%s", err.msg);
    if (!o->out && !o->latents) return usage_error("missing --out (PNG path) or --latents");
    return 0;
}

int rp_cmd_generate(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(USAGE, stdout); return 0; }

    gen_opts o;
    memset(&o, 0, sizeof o);
    rp_ctx ctx;
    rp_sampler_kind sk;
    int rc = parse(argc, argv, &o, &ctx, &sk);
    if (rc) { gen_opts_free(&o); return rc; }
    {   /* before any work: a different OpenBLAS core means re-executing this command */
        rp_error cerr;
        rp_error_clear(&cerr);
        if (rp_ctx_ensure_coretype(ctx.blas_core, NULL, &cerr) != RP_OK) {
            gen_opts_free(&o);
            return rp_report_error(&cerr);
        }
    }
    const int flow = o.ops->cond == RP_COND_TEXT;

    rp_gen_item items[MAX_ITEMS];
    for (int i = 0; i < o.n; i++) {
        items[i].seed = o.seeds[i];
        items[i].global_index = o.first_index + (uint64_t)i;
        items[i].class_id = flow ? 0 : o.classes[i];
        items[i].prompt = flow ? o.prompts[i] : NULL;
        items[i].embed_row = i;
    }
    rp_gen_request req = {0};
    req.model = o.model;
    req.depth = o.depth;
    req.single_depth = o.single_depth;
    req.weights = o.weights;
    req.weight_seed = o.weight_seed;
    req.sharpen = o.sharpen;
    req.vae = o.vae ? o.vae : rp_gen_default_vae(o.model);
    req.vae_weights = o.vae_weights;
    req.text_encoder = o.text_encoder;
    req.te_weights = o.te_weights;
    req.prompt_embeds = o.prompt_embeds;
    req.save_prompt_embeds = o.save_prompt_embeds;
    req.sampler = sk;
    req.eta = o.eta;
    req.steps = o.steps;
    req.cfg = o.cfg;
    req.guidance = o.ops->guidance == RP_GUIDE_EMBEDDED ? o.guidance : 0.0;
    req.width = o.width;
    req.height = o.height;
    req.per_item = o.per_item;
    req.n_items = o.n;
    req.items = items;
    req.decode = o.out != NULL;

    /* Everything checkable without weights (image size against the VAE and the model, the
     * VAE's channels, the text encoder's widths, --depth against FLUX's blocks) is an
     * option error: report it before any work, as a usage error. */
    rp_error err;
    rp_error_clear(&err);
    if (rp_gen_validate(&req, &err) != RP_OK) {
        rc = usage_error("%s", err.msg);
        gen_opts_free(&o);
        return rc;
    }

    rp_trace trace;
    if (o.trace) {
        rp_trace_init(&trace);
        ctx.trace = &trace;
    }
    rp_ctx_apply(&ctx);
    rp_ctx_trace_notes(&ctx, ctx.trace); /* every reduction-order knob, as in effect (NULL: none) */
    rp_gen_result res;
    memset(&res, 0, sizeof res);
    int ordinal;
    if (rp_device_open(o.device_s, o.precision_s, o.gpu_mode_s, 0, &ctx.dev, &ordinal, &err) != RP_OK) {
        rc = rp_report_error(&err);
        goto out;
    }
    if (ctx.trace) rp_trace_note(ctx.trace, "device", ctx.dev ? ctx.dev->name : "cpu");
    rp_status gst = rp_generate(&req, &ctx, &res, &err);
#ifdef REPRO_HAVE_CUDA
    rp_device_cuda_trace_notes(ctx.dev, ctx.trace); /* GEMM algorithms, attention kernel (cuda only) */
#endif
    if (gst != RP_OK) {
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
            if (flow)
                printf("wrote %s (%dx%d, seed %" PRIu64 ", index %" PRIu64 ", prompt \"%.60s%s\")\n", path, res.W,
                       res.H, items[i].seed, items[i].global_index, items[i].prompt,
                       strlen(items[i].prompt) > 60 ? "..." : "");
            else
                printf("wrote %s (%dx%d, seed %" PRIu64 ", class %d)\n", path, res.W, res.H, items[i].seed,
                       items[i].class_id);
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
    if (!flow)
        printf("generate: %s, %s, %d steps, cfg %g, %d item(s): sampling %.3f s (%d model evals), decode %.3f s\n",
               o.model, rp_sampler_name(sk), o.steps, o.cfg, res.B, res.sample_seconds, res.n_evals,
               res.decode_seconds);
    else if (o.ops->guidance == RP_GUIDE_CFG || o.schnell) /* a static shift: SD3, FLUX-schnell */
        printf("generate: %s, flow-euler (shift %g), %d steps, cfg %g, %dx%d latents, %d item(s): encode %.3f s "
               "(%s), sampling %.3f s (%d model evals), decode %.3f s\n",
               o.model, res.shift, o.steps, o.cfg, res.w, res.h, res.B, res.encode_seconds, res.te_name,
               res.sample_seconds, res.n_evals, res.decode_seconds);
    else
        printf("generate: %s, flow-euler (mu %.6g), %d steps, guidance %g, %dx%d latents, %d item(s): encode %.3f s "
               "(%s), sampling %.3f s (%d model evals), decode %.3f s\n",
               o.model, res.mu, o.steps, o.guidance, res.w, res.h, res.B, res.encode_seconds, res.te_name,
               res.sample_seconds, res.n_evals, res.decode_seconds);
done:
    rp_gen_result_free(&res);
out:
    rp_device_destroy(ctx.dev);
    if (o.trace) rp_trace_free(&trace);
    gen_opts_free(&o);
    return rc;
}
