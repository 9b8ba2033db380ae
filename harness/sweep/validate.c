/* validate.c — the case rules of validate.h, one check per rule, in its order.
 *
 * Every message starts with "<parameter>=<value>" and then states the rule, so a
 * sweep report can show it as is. Model facts come from the engine presets
 * (model_facts), computed once per call. */
#include "validate.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "backends/comm.h"
#include "engine/attention/attention.h"
#include "engine/ctx.h"
#include "engine/device.h"
#include "engine/sharpen.h"
#include "engine/models/dit.h"
#include "engine/models/family_ops.h"
#include "engine/models/registry.h"
#include "engine/models/text_encoder.h"
#include "engine/parallel/inject.h"
#include "engine/pipeline/pipeline.h"
#include "engine/samplers/flow.h"
#include "engine/samplers/samplers.h"
#include "engine/vae/vae.h"
#ifdef REPRO_HAVE_CUDA
#include "engine/cuda/cuda_info.h"
#endif

#define INVALID(...) RP_FAIL(err, RP_ERR_INVALID, __VA_ARGS__)

void rp_validate_env_host(rp_validate_env *env) {
    assert(env);
    memset(env, 0, sizeof *env);
    env->gloo_built = rp_comm_available(RP_COMM_GLOO);
    env->nccl_built = rp_comm_available(RP_COMM_NCCL);
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    const struct { unsigned bit; int has; } isa[] = {
        {RP_ISA_SSE3, __builtin_cpu_supports("sse3")},     {RP_ISA_SSSE3, __builtin_cpu_supports("ssse3")},
        {RP_ISA_SSE42, __builtin_cpu_supports("sse4.2")},  {RP_ISA_AVX, __builtin_cpu_supports("avx")},
        {RP_ISA_AVX2, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")},
        {RP_ISA_AVX512, __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                            __builtin_cpu_supports("avx512cd")},
    };
    for (size_t i = 0; i < sizeof isa / sizeof isa[0]; i++)
        if (!isa[i].has) env->cpu_lacks |= isa[i].bit;
#endif
#ifdef REPRO_HAVE_CUDA
    int n = rp_cuda_device_count();
    if (n > RP_VALIDATE_MAX_GPUS) n = RP_VALIDATE_MAX_GPUS;
    for (int d = 0; d < n; d++) {
        rp_cuda_device_info info;
        char msg[256];
        if (rp_cuda_device_describe(d, &info, msg, sizeof msg) != 0) continue;
        /* device names are short ("NVIDIA H200"); keep the first 127 bytes */
        size_t len = strnlen(info.name, sizeof env->gpu_names[0] - 1);
        memcpy(env->gpu_names[env->n_gpus], info.name, len);
        env->gpu_names[env->n_gpus++][len] = '\0';
    }
#endif
}

/* What the rules need to know about the model: its family's ops (what conditions and
 * guides it, what sequence parallelism splits) and its preset's facts. */
typedef struct model_facts {
    const rp_family_ops *ops;
    rp_family fam;
    int heads;
    int blocks;             /* transformer blocks a pipeline splits (FLUX: double + single) */
    int n_double, n_single; /* two block kinds (FLUX) */
    int p;                  /* patch size: tokens are p x p latent pixels (FLUX: its 2x2 packing) */
    int latent_c;           /* latent channels the model takes */
    int native;             /* latent side of the preset's nominal size */
    int num_classes;        /* class-conditional (DiT) */
    int pos_max;            /* position table side, in patches (SD3); 0: no bound */
    int text_len;           /* text tokens (the default text encoder's max_len); 0 class-conditional */
    char vae_name[64];
    int f;                  /* the VAE's factor 2^(levels-1) */
    int vae_levels;
    int vae_latent_c;
} model_facts;

static rp_status load_facts(const rp_case *c, model_facts *m, rp_error *err) {
    memset(m, 0, sizeof *m);
    rp_error e = {0};
    if (rp_model_ops(c->model, &m->ops, &e) != RP_OK)
        return INVALID("model=%s: unknown model preset (denoisers: %s)", c->model, rp_denoiser_presets());
    m->fam = m->ops->family;
    if (!m->ops->denoiser)
        return INVALID("model=%s: a %s preset, not a denoiser (denoisers: %s)", c->model, rp_family_name(m->fam),
                       rp_denoiser_presets());
    if (c->depth < 0) return INVALID("depth=%d: must be >= 0 (0 = the preset's)", c->depth);
    if (c->single_depth < 0) return INVALID("single_depth=%d: must be >= 0 (0 = the registry's rule)", c->single_depth);
    if (c->single_depth > 0 && !m->ops->takes_single_depth)
        return INVALID("single_depth=%d: applies to FLUX only (model %s is %s)", c->single_depth, c->model,
                       rp_family_name(m->fam));
    rp_model_facts f;
    if (m->ops->facts(c->model, c->depth, c->single_depth, &f, &e) != RP_OK)
        return INVALID("depth=%d single_depth=%d: %s", c->depth, c->single_depth, e.msg);
    m->heads = f.heads;
    m->blocks = f.blocks;
    m->n_double = f.n_double;
    m->n_single = f.n_single;
    m->p = f.patch;
    m->latent_c = f.latent_c;
    m->native = f.native;
    m->num_classes = f.num_classes;
    m->pos_max = f.pos_max;
    if (m->ops->cond == RP_COND_TEXT) {
        const char *te = rp_gen_default_text_encoder(c->model);
        assert(te);   /* every SD3/FLUX preset has one */
        rp_te_config tc;
        RP_TRY(rp_te_preset(te, &tc, err));
        m->text_len = tc.max_len;
    }
    const char *vae = c->vae[0] ? c->vae : rp_gen_default_vae(c->model);
    rp_vae_config vc;
    if (rp_vae_preset(vae, &vc, &e) != RP_OK)
        return INVALID("vae=%s: unknown VAE preset (known: %s)", vae, rp_family_presets(RP_FAMILY_VAE));
    snprintf(m->vae_name, sizeof m->vae_name, "%s", vae);
    m->f = rp_vae_scale_factor(&vc);
    m->vae_levels = vc.n_levels;
    m->vae_latent_c = vc.latent_channels;
    return RP_OK;
}

/* ---- plain values --------------------------------------------------------------- */

static int is_one_of(const char *s, const char *const *list, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0) return 1;
    return 0;
}

static rp_status check_sampling(const rp_case *c, const model_facts *m, rp_error *err) {
    if (c->n_items < 1) return INVALID("items: none; a case needs at least one item");
    assert(c->n_items <= RP_CASE_MAX_ITEMS);
    for (int i = 0; i < c->n_items; i++) {
        const rp_case_item *it = &c->items[i];
        if (m->ops->cond == RP_COND_CLASS && it->prompt[0])
            return INVALID("items[%d].prompt=\"%s\": %s is class-conditional; prompts are not supported", i,
                           it->prompt, c->model);
        if (m->ops->cond == RP_COND_CLASS && (it->class_id < 0 || it->class_id >= m->num_classes))
            return INVALID("items[%d].class=%d: %s has classes 0..%d", i, it->class_id, c->model,
                           m->num_classes - 1);
    }
    const int max_steps = m->ops->cond == RP_COND_CLASS ? RP_DIT_TRAIN_STEPS : RP_FLOW_MAX_STEPS;
    if (c->steps < 1 || c->steps > max_steps)
        return INVALID("steps=%d: must be in 1..%d", c->steps, max_steps);
    int uses_eta = 0;
    if (m->ops->cond == RP_COND_CLASS) { /* VP diffusion: DiT's samplers */
        rp_sampler_kind k;
        rp_error e = {0};
        if (rp_sampler_parse(c->sampler, &k, &e) != RP_OK)
            return INVALID("sampler=%s: not a DiT sampler (known: ddim ddpm dpmpp-2m euler-a)", c->sampler);
        uses_eta = rp_sampler_uses_eta(k);
    } else if (strcmp(c->sampler, "euler") != 0) {
        return INVALID("sampler=%s: %s samples with the flow-matching Euler sampler; sampler must be euler",
                       c->sampler, c->model);
    }
    if (c->sharpen < 0 || c->sharpen > RP_SHARPEN_MAX)
        return INVALID("sharpen=%d: must be 0..%d (attention q/k/v weights x sharpen; 0 and 1: off)", c->sharpen,
                       RP_SHARPEN_MAX);
    if (!isfinite(c->eta) || c->eta < 0) return INVALID("eta=%g: must be a number >= 0", c->eta);
    if (c->eta != 0 && !uses_eta)
        return INVALID("eta=%g: sampler %s takes no eta (only ddim and euler-a do); leave it 0", c->eta, c->sampler);
    if (strcmp(c->sampler, "ddim") == 0 && c->eta > 1)
        return INVALID("eta=%g: DDIM's eta must be in [0, 1]", c->eta);
    if (!isfinite(c->cfg) || c->cfg < 0) return INVALID("cfg=%g: must be a number >= 0", c->cfg);
    if (m->ops->guidance == RP_GUIDE_EMBEDDED && c->cfg > 1)
        return INVALID("cfg=%g: %s uses embedded guidance (guidance), not classifier-free guidance; cfg must be <= 1",
                       c->cfg, c->model);
    if (!isfinite(c->guidance)) return INVALID("guidance=%g: must be a finite number", c->guidance);
    if (m->ops->guidance != RP_GUIDE_EMBEDDED && c->guidance != 0)
        return INVALID("guidance=%g: only FLUX takes embedded guidance; %s uses cfg, leave guidance 0", c->guidance,
                       c->model);
    return RP_OK;
}


static rp_status check_numerics(const rp_case *c, const model_facts *m, rp_error *err) {
    static const char *const precisions[] = {"fp32", "bf16", "tf32", "fp16"};
    if (!is_one_of(c->precision, precisions, 4))
        return INVALID("precision=%s: unknown (known: fp32 bf16; on CUDA also tf32 fp16)", c->precision);
    if ((strcmp(c->precision, "tf32") == 0 || strcmp(c->precision, "fp16") == 0) && !rp_device_name_is_cuda(c->device))
        return INVALID("precision=%s: needs a CUDA device (device=%s); on CPU use fp32 or bf16", c->precision,
                       c->device);
    rp_attn_kind ak;
    rp_error e = {0};
    if (rp_attn_kind_parse(c->attention, &ak, &e) != RP_OK)
        return INVALID("attention=%s: unknown (known: math split subquad flash auto)", c->attention);
    if (ak == RP_ATTN_SUBQUAD && rp_device_name_is_cuda(c->device))
        return INVALID("attention=subquad with device=%s: the engine has no CUDA sub-quadratic kernel (cuda has "
                       "math, split, flash, auto)", c->device);
    if (c->attn_q_chunk < 0)
        return INVALID("attn_q_chunk=%d: must be >= 0 (0 = the variant's default)", c->attn_q_chunk);
    if (c->attn_kv_chunk < 0)
        return INVALID("attn_kv_chunk=%d: must be >= 0 (0 = the variant's default)", c->attn_kv_chunk);
    if (ak == RP_ATTN_MATH && c->attn_q_chunk)
        return INVALID("attn_q_chunk=%d: attention=math takes no chunk sizes", c->attn_q_chunk);
    if ((ak == RP_ATTN_MATH || ak == RP_ATTN_SPLIT) && c->attn_kv_chunk)
        return INVALID("attn_kv_chunk=%d: attention=%s takes no key chunk", c->attn_kv_chunk, c->attention);
    rp_attn_cfg acfg = {ak, c->attn_q_chunk, c->attn_kv_chunk};
    if (rp_attn_cfg_check(&acfg, &e) != RP_OK) return INVALID("attention=%s: %s", c->attention, e.msg);
    if (c->device_profile[0]) {
        rp_device_profile dp;
        if (rp_device_profile_parse(c->device_profile, &dp, &e) != RP_OK)
            return INVALID("device_profile=%s: %s", c->device_profile, e.msg);
    }
    if (c->threads < 0) return INVALID("threads=%d: must be >= 0 (0 = the runner's choice)", c->threads);
    for (const char *s = c->blas_core; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return INVALID("blas_core=%s: not an OpenBLAS core name (letters, digits, _; e.g. Haswell)", c->blas_core);
    if (c->reduce_split != 0 && c->reduce_split != 1)
        return INVALID("reduce_split=%d: must be 0 or 1", c->reduce_split);
    static const char *const modes[] = {"deterministic", "fast"};
    if (!is_one_of(c->mode, modes, 2)) return INVALID("mode=%s: unknown (known: deterministic fast)", c->mode);
    static const char *const numerics[] = {"default", "invariant"};
    if (!is_one_of(c->numerics, numerics, 2))
        return INVALID("numerics=%s: unknown (known: default invariant)", c->numerics);
    if (!is_one_of(c->gpu_mode, modes, 2))
        return INVALID("gpu_mode=%s: unknown (known: deterministic fast)", c->gpu_mode);
    if (strcmp(c->gpu_mode, "fast") == 0 && !rp_device_name_is_cuda(c->device))
        return INVALID("gpu_mode=fast: only meaningful with a CUDA device (device=%s): it picks the GPU's GEMM "
                       "kernels; leave gpu_mode deterministic on the CPU", c->device);
    static const char *const bfs[] = {"joint", "per-item"};
    if (!is_one_of(c->batch_forward, bfs, 2))
        return INVALID("batch_forward=%s: unknown (known: joint per-item)", c->batch_forward);
    if (m->ops->cond == RP_COND_CLASS && strcmp(c->batch_forward, "per-item") == 0)
        return INVALID("batch_forward=per-item: only SD3 and FLUX batches run per item; %s runs joint", c->model);
    return RP_OK;
}

static rp_status check_placement_names(const rp_case *c, const rp_validate_env *env, rp_error *err) {
    rp_comm_kind k;
    rp_error e = {0};
    if (rp_comm_kind_parse(c->backend, &k, &e) != RP_OK)
        return INVALID("backend=%s: unknown (known: self gloo nccl)", c->backend);
    if (k == RP_COMM_GLOO && !env->gloo_built)
        return INVALID("backend=gloo: not built into this repro (libgloo-dev was missing at build time)");
    if (k == RP_COMM_NCCL && !env->nccl_built)
        return INVALID("backend=nccl: not built into this repro (needs a CUDA build with NCCL and gloo)");
    if (strcmp(c->device, "cpu") != 0 && !rp_device_name_is_cuda(c->device))
        return INVALID("device=%s: unknown (known: cpu, cuda, cuda:<GPU name substring>)", c->device);
    if (strcmp(c->device, "cuda:") == 0) return INVALID("device=cuda:: the GPU name substring is empty");
    if (strncmp(c->device, "cuda:#", 6) == 0) {
        const char *p = c->device + 6;
        if (!*p || strspn(p, "0123456789") != strlen(p) || strlen(p) > 4)
            return INVALID("device=%s: cuda:#<ordinal> takes a GPU number (0, 1, ...)", c->device);
    }
    return RP_OK;
}

/* ---- latent size ------------------------------------------------------------------- */

/* Tokens of a latent h x w for patch size p. */
static long tokens_of(int h, int w, int p) { return (long)(h / p) * (w / p); }

/* Parts the transformer splits the image sequence into under this layout. */
static int seq_parts(const rp_case *c) {
    const int npp = rp_case_pipeline_patches(c) ? rp_case_pipeline_patches(c) : 1;
    return npp * c->ulysses * c->ring * c->patch;
}

/* Writes the equal split of n into parts (torch.tensor_split sizes) as "[a, b, ...]". */
static void split_text(long n, int parts, char *buf, size_t cap) {
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < parts && len < cap; i++) {
        if (i == 8 && parts > 9) {
            len += (size_t)snprintf(buf + len, cap - len, ", ... (%d parts)", parts);
            break;
        }
        long s = n / parts + (i < n % parts);
        len += (size_t)snprintf(buf + len, cap - len, "%s%ld", i ? ", " : "", s);
    }
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

/* Fills the pixel and latent size; checks vae_scale_factor and the image size. */
static rp_status check_latent(const rp_case *c, const model_facts *m, int *H, int *W, int *h, int *w, rp_error *err) {
    if (m->vae_latent_c != m->latent_c)
        return INVALID("vae=%s: takes %d latent channels but %s makes %d", m->vae_name, m->vae_latent_c, c->model,
                       m->latent_c);
    if (c->width < 0 || c->height < 0)
        return INVALID("%s=%d: must be >= 0 (0 = the preset's native size)", c->width < 0 ? "width" : "height",
                       c->width < 0 ? c->width : c->height);
    if (m->ops->cond == RP_COND_CLASS && (c->width || c->height))
        return INVALID("%s=%d: the image size of %s is fixed by the preset (latent %d, %d px); leave width and "
                       "height 0", c->width ? "width" : "height", c->width ? c->width : c->height, c->model, m->native,
                       m->native * m->f);
    const int f = m->f;
    *W = c->width ? c->width : m->native * f;
    *H = c->height ? c->height : m->native * f;
    if (c->vae_scale_factor < 0)
        return INVALID("vae_scale_factor=%d: must be >= 0 (0 = the VAE's)", c->vae_scale_factor);
    if (c->vae_scale_factor && c->vae_scale_factor != f) {
        /* The xDiT/diffusers 0.32 report: latent sizes computed with another factor
         * than the VAE's give a sequence split that does not match the tensor. */
        const int g = c->vae_scale_factor, hh = *H / g, ww = *W / g;
        char split[160];
        split_text(tokens_of(hh, ww, m->p), seq_parts(c), split, sizeof split);
        return INVALID("vae_scale_factor=%d but the VAE %s downsamples by %d (2^(%d-1)): latent height %d instead of "
                       "%d for %d px; the transformer's sequence split %s does not add up to its %ld image tokens",
                       g, m->vae_name, f, m->vae_levels, hh, *H / f, *H, split,
                       tokens_of(*H / f, *W / f, m->p));
    }
    if (m->ops->cond == RP_COND_TEXT) {
        const int unit = m->p * f;
        const char *name = *W % unit || *W < unit || *W > 16384 ? "width" : "height";
        const int v = *W % unit || *W < unit || *W > 16384 ? *W : *H;
        if (v % unit || v < unit || v > 16384)
            return INVALID("%s=%d: must be a multiple of %d (VAE factor %d x patch_size %d of %s) in [%d, 16384]", name,
                           v, unit, f, m->p, c->model, unit);
        if (m->pos_max && (*H / unit > m->pos_max || *W / unit > m->pos_max))
            return INVALID("%s=%d: %s's position table covers at most %d px (%d patches a side)",
                           *H / unit > m->pos_max ? "height" : "width", *H / unit > m->pos_max ? *H : *W,
                           c->model, m->pos_max * unit, m->pos_max);
    }
    *h = *H / f;
    *w = *W / f;
    return RP_OK;
}

/* ---- layout ---------------------------------------------------------------------- */

/* The ranges every later rule (and the latent message's split) relies on:
 * degrees and counts positive, the world an int of sane size. */
static rp_status check_degree_ranges(const rp_case *c, rp_error *err) {
    rp_par_degrees deg;
    rp_case_degrees(c, &deg);
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) {
        const rp_par_strategy_info *s = rp_par_degree_strategy(i);
        const int v = rp_par_degree(&deg, s);
        if (v < 1 || v > 4096) return INVALID("%s=%d: must be in 1..4096", s->field, v);
    }
    const long long world = rp_par_world_ll(&deg);
    char product[160];
    rp_par_fields_text(" x ", product, sizeof product);
    if (world > 65536) return INVALID("world=%lld: %s must be at most 65536", world, product);
    if (c->num_pipeline_patch < 0 || c->num_pipeline_patch > 4096)
        return INVALID("num_pipeline_patch=%d: must be in 0..4096 (0 = the pipefusion degree)", c->num_pipeline_patch);
    if (c->n_pipefusion_layers < 0 || c->n_pipefusion_layers > RP_CASE_MAX_STAGES)
        return INVALID("pipefusion_layers: %d entries, at most %d", c->n_pipefusion_layers, RP_CASE_MAX_STAGES);
    return RP_OK;
}

static rp_status check_degrees(const rp_case *c, const model_facts *m, const rp_validate_env *env, rp_error *err) {
    const int world = rp_case_world(c);
    if (env->world && env->world != world) {
        rp_par_degrees deg;
        rp_case_degrees(c, &deg);
        char product[160], values[96];
        rp_par_fields_text(" x ", product, sizeof product);
        rp_par_values_text(&deg, "x", values, sizeof values);
        return INVALID("world=%d (ranks launched) but %s = %s = %d: the world size must equal the product of the "
                       "degrees", env->world, product, values, world);
    }
    if (c->patch > 1 && (c->ulysses > 1 || c->ring > 1 || c->pipefusion > 1))
        return INVALID("patch=%d with ulysses=%d ring=%d pipefusion=%d: patch parallel (DistriFusion) replaces "
                       "ulysses/ring and pipefusion; use one or the other", c->patch, c->ulysses, c->ring,
                       c->pipefusion);
    if (c->patch > 1 && rp_case_pipeline_patches(c))
        return INVALID("patch=%d with num_pipeline_patch=%d: patch parallel (DistriFusion) replaces PipeFusion's "
                       "pipeline; use one or the other", c->patch, c->num_pipeline_patch);
    /* the rules on the strategies' rows, in the table's order */
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) {
        const rp_par_strategy_info *s = rp_par_degree_strategy(i);
        const int v = rp_par_degree(&c->deg, s);
        if (s->max_degree && v > s->max_degree) return INVALID("%s=%d: %s", s->field, v, s->max_rule);
        if (v == 1 || s->splits != RP_PAR_SPLITS_BATCH) continue;
        /* it splits the guided batch: there must be one (the family table says the guidance) */
        if (m->ops->guidance == RP_GUIDE_EMBEDDED)
            return INVALID("%s=%d: %s uses embedded guidance, so there is no unconditional branch to run in "
                           "parallel (%s parallel needs a model with classifier-free guidance: DiT, SD3)", s->field,
                           v, c->model, s->name);
        if (!(c->cfg > 1))
            return INVALID("%s=%d needs cfg > 1 (got cfg=%g): without guidance there is no unconditional branch",
                           s->field, v, c->cfg);
    }
    if (c->n_items % c->dp)
        return INVALID("dp=%d with %d items: dp must divide the item count (as xDiT, items are not padded)", c->dp,
                       c->n_items);
    return RP_OK;
}

static rp_status check_sequence(const rp_case *c, const model_facts *m, int h, int w, rp_error *err) {
    const int sp = c->ulysses * c->ring;
    if (m->heads % c->ulysses)
        return INVALID("ulysses=%d needs the head count divisible by %d; %s has %d heads", c->ulysses, c->ulysses,
                       c->model, m->heads);
    const long img = tokens_of(h, w, m->p);
    if (img % sp)
        return INVALID("ulysses x ring = %d x %d needs the image sequence divisible by %d; %s at latent %dx%d has %ld "
                       "image tokens (sequences are not padded: choose a size whose token count %d divides)",
                       c->ulysses, c->ring, sp, c->model, h, w, img, sp);
    if (m->ops->splits_text && m->text_len % sp)
        return INVALID("ulysses x ring = %d x %d needs the text sequence divisible by %d too (FLUX splits image and "
                       "text tokens); %s's text encoder gives %d tokens (sequences are not padded)",
                       c->ulysses, c->ring, sp, c->model, m->text_len);
    return RP_OK;
}

/* numerics=invariant (engine/ctx.h rp_numerics): what it cannot make bitwise the serial run
 * is refused with the reason, rather than run and reported as a difference. */
static rp_status check_invariant(const rp_case *c, const model_facts *m, int h, int w, rp_error *err) {
    if (strcmp(c->numerics, "invariant")) return RP_OK;
    /* on a GPU the invariant GEMM and canonical attention compute the CPU's bits from fp32 or
     * bf16-rounded inputs; tf32 and fp16 are cuBLASLt's input roundings, which they do not have */
    if (rp_device_name_is_cuda(c->device) && strcmp(c->precision, "fp32") && strcmp(c->precision, "bf16"))
        return INVALID("numerics=invariant with device=%s and precision=%s: the invariant kernels round their "
                       "inputs as the CPU does, to fp32 or bf16 only; use precision fp32 or bf16", c->device,
                       c->precision);
    if (strcmp(c->attention, "math"))
        return INVALID("numerics=invariant with attention=%s: invariant numerics has its own attention order "
                       "(canonical key blocks merged in one fixed order), so another variant would be ignored; "
                       "leave attention=math", c->attention);
    if (c->reduce_split)
        return INVALID("numerics=invariant with reduce_split=1: the canonical attention sums each key block "
                       "in one fixed order with no GEMM to split, so the split would act on the GEMMs only; "
                       "leave reduce_split 0");
    /* PipeFusion and patch parallelism: exact through their warmup steps (bitwise the serial
     * run there), approximate after by design; PipeFusion's stages over ulysses / ring have
     * no canonical path for their cached keys */
    if (rp_case_pipeline_patches(c) && c->ulysses * c->ring > 1)
        return INVALID("numerics=invariant with pipefusion=%d and ulysses x ring = %d: the canonical attention "
                       "takes PipeFusion's cached keys only where a stage holds the whole sequence (ulysses = ring "
                       "= 1)", c->pipefusion, c->ulysses * c->ring);
    /* a ring rank's shard of a segment must be whole canonical key blocks: no block may
     * straddle two ranks, or its partial could not be computed where its keys are */
    const struct { const char *what; long n; } segs[] = {
        {"image", tokens_of(h, w, m->p)}, {"text", m->ops->splits_text ? m->text_len : 0}};
    for (int i = 0; i < 2; i++) {
        const long n = segs[i].n;
        if (n <= 0 || c->ring <= 1 || n % c->ring) continue;
        const int bk = rp_attn_canon_block((int)n);
        if ((n / c->ring) % bk)
            return INVALID("numerics=invariant with ring=%d: each ring rank holds %ld of the %ld %s tokens, not a "
                           "whole number of the canonical key blocks of %d tokens the attention sums in "
                           "(engine/attention/canonical.c); choose a ring degree that divides %ld",
                           c->ring, n / c->ring, n, segs[i].what, bk, n / bk);
    }
    return RP_OK;
}

static void layers_text(const rp_case *c, char *buf, size_t cap) {
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < c->n_pipefusion_layers && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? ", " : "", c->pipefusion_layers[i]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

static void blocks_text(const rp_case *c, const model_facts *m, char *buf, size_t cap) {
    if (m->ops->takes_single_depth) /* two block kinds */
        snprintf(buf, cap, "%s has %d blocks (%d double + %d single)", c->model, m->blocks, m->n_double,
                 m->n_single);
    else
        snprintf(buf, cap, "%s has %d blocks", c->model, m->blocks);
}

static rp_status check_pipeline(const rp_case *c, const model_facts *m, int h, rp_error *err) {
    const int sp = c->ulysses * c->ring;
    char lt[128], bt[192];
    layers_text(c, lt, sizeof lt);
    blocks_text(c, m, bt, sizeof bt);
    if (c->pipefusion == 1) {
        /* meaningless here, and a different value would change the id, not the numbers */
        if (c->num_pipeline_patch == 1)
            return INVALID("num_pipeline_patch=1 with pipefusion=1: one patch on one stage is the serial run; "
                           "leave it 0 (or >= 2: PipeFusion's serial emulation over that many patches)");
        if (c->n_pipefusion_layers)
            return INVALID("pipefusion_layers=%s: only meaningful with pipefusion > 1 (got pipefusion=1)", lt);
    }
    if (c->pipefusion > 1 && c->n_pipefusion_layers == 0 && m->blocks < c->pipefusion)
        return INVALID("pipefusion=%d: %s; each stage needs at least one block (pipefusion <= %d)", c->pipefusion, bt,
                       m->blocks);
    if (rp_case_pipeline_patches(c)) {
        const int npp = rp_case_pipeline_patches(c);
        if (npp < c->pipefusion)
            return INVALID("num_pipeline_patch=%d with pipefusion=%d: needs at least one patch per stage "
                           "(num_pipeline_patch >= pipefusion)", npp, c->pipefusion);
        if (c->n_pipefusion_layers) {
            if (c->n_pipefusion_layers != c->pipefusion)
                return INVALID("pipefusion_layers=%s: %d stages listed for pipefusion=%d", lt, c->n_pipefusion_layers,
                               c->pipefusion);
            int sum = 0;
            for (int i = 0; i < c->n_pipefusion_layers; i++) {
                if (c->pipefusion_layers[i] < 1)
                    return INVALID("pipefusion_layers=%s: stage %d has %d blocks; each stage needs at least one", lt,
                                   i, c->pipefusion_layers[i]);
                sum += c->pipefusion_layers[i];
            }
            if (sum != m->blocks)
                return INVALID("pipefusion_layers=%s: sums to %d blocks but %s; the stages must cover the depth", lt,
                               sum, bt);
        }
        if (h % (npp * m->p))
            return INVALID("pipefusion=%d with num_pipeline_patch=%d needs latent height divisible by %d x "
                           "patch_size (%d); got %d", c->pipefusion, npp, npp, m->p, h);
        if (sp > 1 && (h / npp) % (m->p * sp))
            return INVALID("pipefusion=%d with num_pipeline_patch=%d and ulysses x ring = %d needs each pipeline "
                           "patch's latent height (%d / %d = %d) to be a multiple of patch_size (%d) x %d",
                           c->pipefusion, npp, sp, h, npp, h / npp, m->p, sp);
    }
    if (c->patch > 1 && h % (c->patch * m->p))
        return INVALID("patch=%d needs latent height divisible by %d x patch_size (%d); got %d", c->patch, c->patch,
                       m->p, h);
    if (c->warmup_steps < 0) return INVALID("warmup_steps=%d: must be >= 0", c->warmup_steps);
    if (c->warmup_steps > c->steps)
        return INVALID("warmup_steps=%d > steps=%d: warmup steps must not exceed the steps", c->warmup_steps, c->steps);
    if (!rp_case_pipeline_patches(c) && c->patch == 1 && c->warmup_steps != 1)
        return INVALID("warmup_steps=%d: only meaningful with pipefusion, its pipeline patches or patch parallel "
                       "(none here); leave it at 1", c->warmup_steps);
    return RP_OK;
}

/* ---- placement --------------------------------------------------------------------- */

/* Visible GPUs the device string selects (rp_device_selects, the cuda device's own rule).
 * Ranks take the selected GPUs in turn (local rank modulo their count), so several ranks
 * may share one. */
static int matching_gpus(const char *device, const rp_validate_env *env) {
    int n = 0;
    for (int i = 0; i < env->n_gpus && i < RP_VALIDATE_MAX_GPUS; i++) n += rp_device_selects(device, i, env->gpu_names[i]);
    return n;
}

static rp_status check_placement(const rp_case *c, const rp_validate_env *env, rp_error *err) {
    if (c->blas_core[0]) {
        /* the instruction sets the kernel set needs (unknown names: the worker finds out) */
        static const struct { const char *core, *what; unsigned needs; } CORES[] = {
            {"prescott", "SSE3", RP_ISA_SSE3},          {"core2", "SSSE3", RP_ISA_SSSE3},
            {"penryn", "SSSE3", RP_ISA_SSSE3},          {"nehalem", "SSE4.2", RP_ISA_SSE42},
            {"sandybridge", "AVX", RP_ISA_AVX},         {"haswell", "AVX2 and FMA", RP_ISA_AVX2},
            {"zen", "AVX2 and FMA", RP_ISA_AVX2},       {"skylakex", "AVX-512", RP_ISA_AVX512},
            {"cooperlake", "AVX-512", RP_ISA_AVX512},   {"sapphirerapids", "AVX-512", RP_ISA_AVX512},
        };
        for (size_t i = 0; i < sizeof CORES / sizeof CORES[0]; i++)
            if (!strcasecmp(c->blas_core, CORES[i].core) && (env->cpu_lacks & CORES[i].needs))
                return INVALID("blas_core=%s: the kernel set needs %s, which this CPU lacks", c->blas_core,
                               CORES[i].what);
    }
    const int world = rp_case_world(c);
    if (strcmp(c->backend, "self") == 0 && world > 1)
        return INVALID("backend=self with world %d: self runs one rank; use gloo (or nccl) for world > 1", world);
    const int cuda = rp_device_name_is_cuda(c->device);
    if (strcmp(c->backend, "nccl") == 0 && !cuda)
        return INVALID("backend=nccl needs device=cuda (got device=%s): NCCL moves GPU buffers", c->device);
    if (cuda) {
        const int n = matching_gpus(c->device, env);
        if (n == 0) {
            if (strcmp(c->device, "cuda") == 0) return INVALID("device=cuda: no visible GPU");
            if (strncmp(c->device, "cuda:#", 6) == 0)
                return INVALID("device=%s: no visible GPU %d (%d visible)", c->device, atoi(c->device + 6),
                               env->n_gpus);
            char names[512] = "";
            size_t len = 0;
            for (int i = 0; i < env->n_gpus && len < sizeof names; i++)
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", env->gpu_names[i]);
            return INVALID("device=%s: no visible GPU name contains '%s' (visible: %s)", c->device, c->device + 5,
                           env->n_gpus ? names : "none");
        }
        /* gloo and self stage through host memory, so ranks may share a GPU (world 4 on one
         * GPU is fine); NCCL refuses two ranks on one GPU */
        if (strcmp(c->backend, "nccl") == 0 && n < world)
            return INVALID("backend=nccl with world %d needs one GPU per rank; %d visible%s (device=%s)", world, n,
                           strcmp(c->device, "cuda") ? " match" : "", c->device);
    }
    return RP_OK;
}

static rp_status check_inject(const rp_case *c, const model_facts *m, rp_error *err) {
    if (!c->inject[0]) return RP_OK;
    rp_inject_id id;
    RP_TRY(rp_inject_parse(c->inject, &id, err));
    rp_inject_layout l = {
        .steps = c->steps, .items = c->n_items,
        .low_precision = strcmp(c->precision, "fp32") != 0 && strcmp(c->precision, "tf32") != 0,
        .on_device = strcmp(c->device, "cpu") != 0, .invariant = !strcmp(c->numerics, "invariant"),
        .warmup = c->warmup_steps, .pipeline = rp_case_pipeline_patches(c),
        .stochastic = !strcmp(c->sampler, "ddpm") ||
                      ((!strcmp(c->sampler, "ddim") || !strcmp(c->sampler, "euler-a")) && c->eta > 0)};
    rp_case_degrees(c, &l.deg);
    char why[384];
    if (!rp_inject_applies(id, m->fam, &l, why, sizeof why))
        return INVALID("inject=%s: %s; the fault could not change this case", c->inject, why);
    /* a warmup step recomputes every cached K/V, so the previous call's cache is never read */
    if (id == RP_INJECT_PIPEFUSION_CACHE_LEAK && c->warmup_steps > 0)
        return INVALID("inject=%s with warmup_steps=%d: the warmup steps rewrite the whole K/V cache before it is "
                       "read, so a cache left from the previous call changes nothing; the fault could not change "
                       "this case (use warmup_steps=0)", c->inject, c->warmup_steps);
    return RP_OK;
}

/* The engine's own request check, on the same fields: anything its rules add
 * beyond ours (e.g. the text encoder's widths) is still a CONFIG_ERROR here. */
static rp_status check_engine(const rp_case *c, const model_facts *m, rp_error *err) {
    rp_gen_item items[RP_CASE_MAX_ITEMS];
    for (int i = 0; i < c->n_items; i++) {
        items[i].seed = c->items[i].seed;
        items[i].global_index = (uint64_t)i;
        items[i].class_id = c->items[i].class_id;
        items[i].prompt = m->ops->cond == RP_COND_CLASS ? NULL : c->items[i].prompt;
    }
    rp_gen_request req;
    rp_case_gen_request(c, &req);
    req.weights = NULL;       /* validation checks the shapes, not the files */
    req.prompt_embeds = NULL;
    if (m->ops->cond == RP_COND_CLASS) RP_TRY(rp_sampler_parse(c->sampler, &req.sampler, err));
    req.n_items = c->n_items;
    req.items = items;
    req.decode = 1;
    rp_error e = {0};
    if (rp_gen_validate(&req, &e) != RP_OK) return INVALID("model=%s: %s", c->model, e.msg);
    return RP_OK;
}

/* weights, when given, names a regular file that exists (a stat, nothing read): a missing
 * or special file (/dev/zero) is the matrix's mistake, not a crash of the engine. */
static rp_status check_weights(const rp_case *c, rp_error *err) {
    if (!c->weights[0]) return RP_OK;
    struct stat sb;
    if (stat(c->weights, &sb) != 0)
        return INVALID("weights=%s: cannot use the file: %s", c->weights, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return INVALID("weights=%s: not a regular file (a safetensors checkpoint is one)", c->weights);
    return RP_OK;
}

rp_status rp_case_validate(const rp_case *c, const rp_validate_env *env, rp_error *err) {
    assert(c);
    rp_validate_env host;
    if (!env) {
        rp_validate_env_host(&host);
        env = &host;
    }
    model_facts m;
    int H = 0, W = 0, h = 0, w = 0;
    RP_TRY(load_facts(c, &m, err));
    RP_TRY(check_weights(c, err));
    RP_TRY(check_sampling(c, &m, err));
    RP_TRY(check_numerics(c, &m, err));
    RP_TRY(check_placement_names(c, env, err));
    RP_TRY(check_degree_ranges(c, err));
    RP_TRY(check_latent(c, &m, &H, &W, &h, &w, err));
    RP_TRY(check_degrees(c, &m, env, err));
    RP_TRY(check_sequence(c, &m, h, w, err));
    RP_TRY(check_invariant(c, &m, h, w, err));
    RP_TRY(check_pipeline(c, &m, h, err));
    RP_TRY(check_placement(c, env, err));
    RP_TRY(check_inject(c, &m, err));
    RP_TRY(check_engine(c, &m, err));
    return RP_OK;
}

const char *rp_validate_describe_rules(void) {
    return "Case validation (a violation is a CONFIG_ERROR naming the parameter, its value and the rule;\n"
           "the first one found is reported):\n"
           "  model         a DiT, SD3 or FLUX preset; depth >= 0; single_depth for FLUX only\n"
           "  weights       when set, an existing regular file\n"
           "  items         1..64; DiT: class in 0..num_classes-1, no prompt\n"
           "  steps         >= 1 (DiT: <= 1000)\n"
           "  sampler       DiT: ddim ddpm dpmpp-2m euler-a; SD3/FLUX: euler\n"
           "  eta           >= 0; only ddim (<= 1) and euler-a take one\n"
           "  sharpen       0..64: attention q/k/v weights x sharpen (0, 1: off)\n"
           "  cfg           >= 0; FLUX uses embedded guidance, so cfg <= 1\n"
           "  guidance      FLUX only (DiT/SD3: 0)\n"
           "  precision     fp32 bf16; tf32 fp16 need a CUDA device\n"
           "  attention     math split subquad flash auto; chunk sizes >= 0, none for math,\n"
           "                no kv chunk for split; device_profile a preset or spec\n"
           "  threads >= 0; reduce_split 0|1; mode deterministic|fast;\n"
           "  numerics      default|invariant; invariant: attention math, fp32 or bf16,\n"
           "                reduce_split 0, pipefusion only without ulysses / ring (pipefusion and patch:\n"
           "                exact through warmup only), and a ring rank's share of the image (FLUX:\n"
           "                and text) tokens a whole number of canonical key blocks\n"
           "  gpu_mode      deterministic|fast (the CUDA GEMMs); fast only with a CUDA device\n"
           "  batch_forward joint|per-item (per-item: SD3/FLUX)\n"
           "  backend       self gloo nccl, compiled in; self only with world 1;\n"
           "                nccl needs device cuda and one visible GPU per rank (gloo ranks\n"
           "                may share a GPU)\n"
           "  device        cpu cuda cuda:<GPU name substring> cuda:#<ordinal> (matching a\n"
           "                visible GPU; the substring ignores case)\n"
           "  width,height  DiT: fixed by the preset; SD3/FLUX: multiples of 2 x the VAE factor\n"
           "                (16) in [16, 16384]; SD3 within its position table\n"
           "  vae           a VAE preset with the model's latent channels\n"
           "  vae_scale_factor  0 or the VAE's own 2^(levels-1): another factor (the diffusers\n"
           "                0.32 doubled-factor bug) gives latent sizes, and a sequence split,\n"
           "                that do not match the tensors\n"
           "  degrees       dp cfg_parallel ulysses ring pipefusion patch >= 1; the launched world\n"
           "                = dp x cfg_parallel x ulysses x ring x pipefusion x patch; patch\n"
           "                excludes ulysses, ring and pipefusion\n"
           "  cfg_parallel  1 or 2; 2 only for models with classifier-free guidance (not FLUX)\n"
           "                and cfg > 1\n"
           "  dp            divides the item count (as xDiT; items are not padded)\n"
           "  ulysses       divides the head count\n"
           "  ulysses x ring  divides the image tokens (FLUX: and the text tokens); no padding\n"
           "  pipefusion    at least one block per stage; pipefusion_layers (optional) one entry\n"
           "                >= 1 per stage, summing to the depth (FLUX: double + single);\n"
           "                num_pipeline_patch 0 (= pipefusion) or >= pipefusion; latent height\n"
           "                divisible by num_pipeline_patch x patch_size, and with ulysses x ring\n"
           "                = sp > 1 each pipeline patch's height a multiple of patch_size x sp;\n"
           "                pipefusion 1 with num_pipeline_patch >= 2 is PipeFusion's serial\n"
           "                emulation (one stage, every block, those patches)\n"
           "  patch         latent height divisible by patch x patch_size\n"
           "  warmup_steps  0..steps; only with pipefusion, its pipeline patches or patch (else\n"
           "                leave it 1)\n"
           "  inject        testing only: one of dp-rank-layout dp-shared-noise ulysses-head-order\n"
           "                ring-no-rescale pipefusion-cache-leak rope-offset attn-scale\n"
           "                timestep-skew norm-eps-rank bf16-layer-rank cfg-combine-order\n"
           "                dp-image-order vae-decode-rank temb-period-rank nondet-dp-rank\n"
           "                dp-latents-order noise-bf16-rank weight-leak-rank ring-lse-skew\n"
           "                attn-scale-ulp-rank ring-reverse-rank latents-bf16-rank dp-gather-row\n"
           "                patch-stale-rows pipefusion-skip-refresh te-norm-eps-rank\n"
           "                pipefusion-block-overlap cfg-stale-half attn-scale-step-rank attn-scale-late\n"
           "                pipefusion-stream-stale act-bf16-rank warmup-late patch-text-stale\n"
           "                step-noise-index,\n"
           "                and only where it can act (e.g. ring-no-rescale\n"
           "                needs ring > 1, ring-lse-skew ring > 1 in the default numerics,\n"
           "                attn-scale-ulp-rank world > 1 with ring 1, an fp32 case in the default\n"
           "                numerics on the CPU, rope-offset needs FLUX\n"
           "                with a split sequence, pipefusion-cache-leak needs warmup_steps 0,\n"
           "                bf16-layer-rank an fp32 case on the CPU, cfg-combine-order\n"
           "                cfg_parallel 2 and steps >= 2, dp-image-order and dp-latents-order\n"
           "                >= 2 items per dp group, weight-leak-rank dp > 1 on the CPU,\n"
           "                ring-reverse-rank ring >= 3, dp-gather-row dp > 1 and steps >= 2,\n"
           "                patch-stale-rows and pipefusion-skip-refresh steps after warmup,\n"
           "                te-norm-eps-rank a text encoder: SD3 or FLUX, pipefusion-block-overlap\n"
           "                steps after warmup, cfg-stale-half as cfg-combine-order,\n"
           "                attn-scale-step-rank as attn-scale-ulp-rank with steps >= 4,\n"
           "                attn-scale-late and warmup-late patch or pipefusion with steps after\n"
           "                warmup, patch-text-stale SD3 or FLUX with patch and steps after warmup,\n"
           "                step-noise-index dp > 1 with a sampler that draws noise)\n";
}
