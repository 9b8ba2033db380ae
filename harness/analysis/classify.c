/* classify.c — the classifier (see classify.h; the method is docs/classification.md).
 *
 * Two halves: pure functions over numbers (envelopes, ratios, first breaks, the
 * assignment, the decision), tested with constructed data in tests/unit/test_classify.c;
 * and the driver, which loads a case directory, its reference's and the twins', feeds
 * those functions and writes classification.json. Every distance is computed in double
 * in index order, so a classification is the same on every run. */
#include "classify.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/device.h"
#include "engine/fsutil.h"
#include "engine/image.h"
#include "engine/parallel/parallel.h"
#include "engine/rng.h"
#include "engine/safetensors.h"
#include "engine/samplers/samplers.h"
#include "harness/metrics/metrics.h"
#include "harness/store/store.h"

#define PATHLEN 4096

/* ---- options ------------------------------------------------------------------------- */

void rp_classify_opts_default(rp_classify_opts *o) {
    o->enabled = 1;
    o->twins = RP_CLS_DEFAULT_TWINS;
    o->factor = RP_CLS_DEFAULT_FACTOR;
    o->approx_ssim = RP_CLS_DEFAULT_APPROX_SSIM;
    o->approx_psnr = RP_CLS_DEFAULT_APPROX_PSNR;
    o->teacher_steps = 0;
    o->leak_check = 1;
    o->invariant_shadow = 1;
}

void rp_classify_opts_key(const rp_classify_opts *o, char *buf, size_t cap) {
    snprintf(buf, cap, "twins=%d factor=%.17g ssim=%.17g psnr=%.17g teacher_steps=%d leak=%d invariant_shadow=%d",
             o->twins, o->factor, o->approx_ssim, o->approx_psnr, o->teacher_steps, o->leak_check,
             o->invariant_shadow);
}

/* ---- twins ----------------------------------------------------------------------------- */

/* What each twin changes: reduce_split flipped, threads 1 <-> 2, one ulp of noise, the
 * attention algorithm. */
static const struct {
    const char *name;
    int split, threads, noise, attention;
} TWINS[RP_CLS_TWIN_KINDS] = {
    {"reduce-split", 1, 0, 0, 0},          {"threads", 0, 1, 0, 0},           {"noise-ulp", 0, 0, 1, 0},
    {"reduce-split+noise-ulp", 1, 0, 1, 0}, {"threads+noise-ulp", 0, 1, 1, 0}, {"reduce-split+threads", 1, 1, 0, 0},
    {"attention", 0, 0, 0, 1},
};

const char *rp_cls_twin_name(int k) {
    assert(k >= 0 && k < RP_CLS_TWIN_KINDS);
    return TWINS[k].name;
}

int rp_cls_twin_other_math(int k) {
    assert(k >= 0 && k < RP_CLS_TWIN_KINDS);
    return TWINS[k].split || TWINS[k].threads || TWINS[k].attention;
}

int rp_cls_twin_list(const rp_case *ref, int twins, int *out) {
    int n = 0;
    if (twins <= 0) return 0; /* not a reference: no twins */
    for (int k = 0; k < twins && k < RP_CLS_MAX_TWINS; k++) out[n++] = k;
    if (strcmp(rp_cls_effective_precision(ref), "fp32")) out[n++] = RP_CLS_TWIN_ATTENTION;
    return n;
}

int rp_cls_twin_applies(int k, const rp_case *c, const rp_case *ref) {
    assert(k >= 0 && k < RP_CLS_TWIN_KINDS);
    if (!TWINS[k].attention) return 1;
    return strcmp(c->attention, ref->attention) || c->attn_q_chunk != ref->attn_q_chunk ||
           c->attn_kv_chunk != ref->attn_kv_chunk || strcmp(c->device_profile, ref->device_profile) ||
           strcmp(c->blas_core, ref->blas_core) || strcmp(c->device, ref->device) || c->ring > 1 || c->ulysses > 1 ||
           c->pipefusion > 1 || c->patch > 1 || ref->ring > 1 || ref->ulysses > 1 || ref->pipefusion > 1 ||
           ref->patch > 1;
}

void rp_cls_twin_case(const rp_case *ref, int k, rp_case *twin, int *perturb_noise) {
    assert(ref && twin && k >= 0 && k < RP_CLS_TWIN_KINDS);
    *twin = *ref;
    /* the invariant kernels have no reduction order to move (threads and kernel sets give
     * their bits, reduce_split is refused): an invariant reference's twins, needed only by a
     * case that is not its invariant pair, vary the default numerics' rounding */
    snprintf(twin->numerics, sizeof twin->numerics, "default");
    if (TWINS[k].split) twin->reduce_split = !ref->reduce_split;
    if (TWINS[k].threads) twin->threads = ref->threads >= 2 ? 1 : 2;
    if (TWINS[k].attention) /* another exact algorithm: the keys summed in other chunks (on a GPU,
                             * which has no sub-quadratic kernel, flash's tiles) */
        snprintf(twin->attention, sizeof twin->attention, "%s",
                 strcmp(ref->attention, "math") ? "math" : rp_device_name_is_cuda(ref->device) ? "flash" : "subquad");
    twin->expect[0] = '\0';
    snprintf(twin->name, sizeof twin->name, "twin %s: %.90s", TWINS[k].name, ref->name);
    if (perturb_noise) *perturb_noise = TWINS[k].noise;
}

/* ---- teacher steps --------------------------------------------------------------------------- */

int rp_cls_exact_steps(const rp_case *c) {
    const int approx = rp_case_exactness(c) == RP_PAR_WARMUP_EXACT && c->warmup_steps < c->steps;
    return approx ? c->warmup_steps : c->steps;
}

int rp_cls_shadow_steps(const rp_case *c) {
    const int exact = rp_cls_exact_steps(c);
    return exact < c->steps ? exact + 1 : exact;
}

int rp_cls_teacher_mask(int steps, int exact_steps, int teacher_steps, int multistep, unsigned char *mask) {
    assert(steps >= 1 && mask && exact_steps >= 0);
    /* a multistep sampler's step depends on the one before: a step run alone would be
     * another (first-order) step, so every step runs */
    const int all = teacher_steps <= 0 || teacher_steps >= steps || multistep;
    for (int k = 0; k < steps; k++) mask[k] = (unsigned char)all;
    if (!all) {
        if (teacher_steps == 1) mask[0] = 1; /* the one step nothing has amplified yet */
        else
            for (int j = 0; j < teacher_steps; j++)
                mask[(int)lround((double)j * (steps - 1) / (teacher_steps - 1))] = 1;
    }
    for (int k = exact_steps > 1 ? exact_steps : 1; k < steps; k++) mask[k] = 0;
    int n = 0;
    for (int k = 0; k < steps; k++) n += mask[k];
    return n;
}

/* ---- the serial emulation ---------------------------------------------------------------------- */

int rp_cls_emulation(const rp_case *c, rp_case *out) {
    assert(c && out);
    /* on a GPU the ranks are devices and the emulation another count of them: not run yet;
     * with no step after warmup every step is a synchronous pass, which teacher forcing and
     * the invariant shadow hold to the serial run itself */
    if (c->pipefusion < 2 || rp_device_name_is_cuda(c->device) || c->warmup_steps >= c->steps) return 0;
    *out = *c;
    out->num_pipeline_patch = rp_case_pipeline_patches(c);
    out->pipefusion = 1;
    out->n_pipefusion_layers = 0;
    memset(out->pipefusion_layers, 0, sizeof out->pipefusion_layers);
    /* the same source on one stage: a fault behind `stage > 0` is never reached there */
    rp_inject_id id;
    rp_error e;
    if (rp_inject_parse(c->inject, &id, &e) == RP_OK && rp_inject_stages_only(id)) out->inject[0] = '\0';
    out->expect[0] = '\0';
    snprintf(out->name, sizeof out->name, "emulation: %.100s", c->name);
    return 1;
}

/* ---- numbers ------------------------------------------------------------------------------- */

double rp_cls_unit_roundoff(const char *precision) {
    if (precision && !strcmp(precision, "bf16")) return ldexp(1.0, -8);
    if (precision && (!strcmp(precision, "fp16") || !strcmp(precision, "tf32"))) return ldexp(1.0, -11);
    return ldexp(1.0, -24);
}

double rp_cls_floor(const char *precision, const char *ref_precision, double factor) {
    const double fp32 = rp_cls_unit_roundoff("fp32"), uc = rp_cls_unit_roundoff(precision),
                 ur = rp_cls_unit_roundoff(ref_precision ? ref_precision : precision), u = uc > ur ? uc : ur;
    if (u <= fp32 || uc != ur || !(factor > 0)) return u;
    const double coarse = RP_CLS_COARSE_ROUNDINGS * u / factor;
    return coarse > fp32 ? coarse : fp32;
}

double rp_cls_step_floor(const char *precision, const char *ref_precision, int same_device, double factor) {
    const double uc = rp_cls_unit_roundoff(precision),
                 ur = rp_cls_unit_roundoff(ref_precision ? ref_precision : precision);
    return same_device && uc == ur ? rp_cls_unit_roundoff("fp32") : rp_cls_floor(precision, ref_precision, factor);
}

const char *rp_cls_effective_precision(const rp_case *c) {
    if (!strcmp(c->precision, "fp32") && !strncmp(c->device, "cuda", 4) && !strcmp(c->gpu_mode, "fast"))
        return "tf32";
    return c->precision;
}

/* 1 when c and ref run on one device: both on the host, or both on the same CUDA device string
 * (another GPU, another kernel set of its own). */
static int same_device(const rp_case *c, const rp_case *ref) {
    const int gc = rp_device_name_is_cuda(c->device), gr = rp_device_name_is_cuda(ref->device);
    return gc == gr && (!gc || !strcmp(c->device, ref->device));
}

/* 1 when c's layout uses only exact strategies (strategy.h: no approximate one). */
static int layout_exact(const rp_case *c) { return rp_case_exactness(c) == RP_PAR_EXACT; }

/* 1 when c and ref are the same case but for the layout and what layouts may change (the
 * threads, the backend, the kernel set, the batch's grouping into forwards, the injected
 * fault). */
static int same_but_layout(const rp_case *c, const rp_case *ref) {
    rp_case a = *c; /* c with ref's layout: the rest must be the same case */
    a.deg = ref->deg;
    /* what the classifier promises (mode fast: nondeterminism reported, not failed) is no
     * arithmetic: a fast case's shadow pairs with a deterministic reference's (audit 9: a
     * one-rank fault only the invariant shadow names was drift in fast mode) */
    memcpy(a.mode, ref->mode, sizeof a.mode);
    a.threads = ref->threads;
    memcpy(a.backend, ref->backend, sizeof a.backend);
    memcpy(a.blas_core, ref->blas_core, sizeof a.blas_core);
    memcpy(a.inject, ref->inject, sizeof a.inject);
    /* one forward per item or one for the batch: under invariant numerics an item's rows are
     * the same bits in a batch of any size (docs/invariant.md), so a per-item case and a joint
     * reference are a pair there (audit 18: a per-item case's later items, an RMSNorm epsilon
     * off on every rank, had no exact comparison and were drift) */
    memcpy(a.batch_forward, ref->batch_forward, sizeof a.batch_forward);
    /* an approximate layout's own knobs (its exact steps, its pipeline's patches and stages) */
    a.warmup_steps = ref->warmup_steps;
    a.num_pipeline_patch = ref->num_pipeline_patch;
    a.n_pipefusion_layers = ref->n_pipefusion_layers;
    memcpy(a.pipefusion_layers, ref->pipefusion_layers, sizeof a.pipefusion_layers);
    char ia[17], ir[17];
    rp_case_id(&a, ia);
    rp_case_id(ref, ir);
    return !strcmp(ia, ir);
}

int rp_cls_invariant_pair(const rp_case *c, const rp_case *ref) {
    if (strcmp(c->numerics, "invariant") || strcmp(ref->numerics, "invariant")) return 0;
    if (!layout_exact(c) || !layout_exact(ref)) return 0;
    return same_but_layout(c, ref);
}

int rp_cls_invariant_shadow(const rp_case *c, rp_case *out) {
    assert(c && out);
    /* an approximate layout (PipeFusion, patch) is exact through its warmup steps, and its
     * first step after them with fresh keys: its shadow is compared there
     * (cls_invariant_shadow, rp_cls_shadow_steps) */
    if (!strcmp(c->numerics, "invariant") || rp_cls_shadow_steps(c) < 1) return 0;
    /* on a GPU: cases in fp32 or bf16 (the launch's device is made for the case's GEMM
     * precision, and the invariant kernels have run only on devices made for those two) and
     * only exact layouts (the fresh-key step of an approximate one has not run on a GPU); the
     * pair needs a reference on the same device string (same_but_layout), so a GPU case
     * against a CPU reference has none (their other kernels differ) */
    if (rp_device_name_is_cuda(c->device) &&
        ((strcmp(c->precision, "fp32") && strcmp(c->precision, "bf16")) || !layout_exact(c)))
        return 0;
    *out = *c;
    snprintf(out->numerics, sizeof out->numerics, "invariant");
    /* at fp32, whatever the case's precision: the shadow holds the layout's own code (the
     * shards, exchanges, norms and embeddings each rank runs), none of which depends on the
     * GEMMs' precision, and at fp32 a layout fault of less than bf16's rounding (a one-rank
     * epsilon, a one-pass variance) changes bits for certain, where at bf16 only a value
     * sitting at a rounding boundary would show it; so a layout fault the fp32 case's shadow
     * flags, the bf16 case's flags too. (A bf16 rounding path is default-numerics code:
     * rp_gemm's own check and the bf16 evidence hold it, docs/classification.md §7, §9.) The
     * invariant kernels take their precision from the case, not the device, so this holds on
     * a GPU too. */
    snprintf(out->precision, sizeof out->precision, "fp32");
    /* the attention variant and the split reduction are rounding choices of the default
     * numerics; the invariant kernels have one order of their own */
    snprintf(out->attention, sizeof out->attention, "math");
    out->attn_q_chunk = out->attn_kv_chunk = 0;
    out->device_profile[0] = '\0';
    out->reduce_split = 0;
    out->expect[0] = '\0';
    snprintf(out->name, sizeof out->name, "invariant shadow: %.100s", c->name);
    return 1;
}

int rp_cls_invariant_shadow_own(const rp_case *c, rp_case *out) {
    rp_case s;
    if (!strcmp(c->precision, "fp32") || !rp_cls_invariant_shadow(c, &s)) return 0;
    snprintf(s.precision, sizeof s.precision, "%s", c->precision);
    snprintf(s.name, sizeof s.name, "invariant shadow at %s: %.90s", c->precision, c->name);
    *out = s;
    return 1;
}

int rp_cls_invariant_shadow_pair(const rp_case *c, const rp_case *ref) {
    rp_case sc, sr;
    if (!rp_cls_invariant_shadow(c, &sc) || !rp_cls_invariant_shadow(ref, &sr)) return 0;
    if (!layout_exact(&sr) || !same_but_layout(&sc, &sr)) return 0; /* the reference's is exact */
    /* the invariant kernels call no BLAS (engine/gemm.c routes every product to
     * rp_gemm_invariant): two shadows that differ only in the OpenBLAS kernel set compute
     * the same operations on the same inputs, so they are the same case here (the thread
     * count stays: it picks our own kernels' partitions) */
    memcpy(sc.blas_core, sr.blas_core, sizeof sc.blas_core);
    char a[17], b[17];
    rp_case_id(&sc, a);
    rp_case_id(&sr, b);
    return strcmp(a, b) != 0; /* the same case: its shadow would compare a run with itself */
}

double rp_cls_rel_l2(const float *ref, const float *x, size_t n) {
    double dd = 0.0, rr = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double a = ref[i], d = (double)x[i] - a;
        dd += d * d;
        rr += a * a;
    }
    if (isnan(dd) || isinf(dd)) return INFINITY;
    if (rr == 0.0) return dd == 0.0 ? 0.0 : INFINITY;
    return sqrt(dd / rr);
}

void rp_cls_rows_rel(const float *ref, const float *x, int rows, int B, size_t per, double *out) {
    for (int k = 0; k < rows; k++) {
        double m = 0.0;
        for (int b = 0; b < B; b++) {
            const size_t o = ((size_t)k * B + b) * per;
            const double r = rp_cls_rel_l2(ref + o, x + o, per);
            if (!(r <= m)) m = r; /* a NaN can only come as +inf from rel_l2 */
        }
        out[k] = m;
    }
}

double rp_cls_layer_rel(const rp_trace_rec *ref, const rp_trace_rec *x) {
    if (!ref || !x || ref->numel != x->numel || ref->nsample != x->nsample || ref->stride != x->stride)
        return INFINITY;
    if (isnan(x->l2) || isnan(x->maxabs)) return isnan(ref->l2) ? 0.0 : INFINITY;
    double r = ref->nsample ? rp_cls_rel_l2(ref->sample, x->sample, (size_t)ref->nsample) : 0.0;
    /* the norm covers the elements the strided sample skips */
    const double dl = fabs(x->l2 - ref->l2);
    const double rl = ref->l2 > 0 ? dl / ref->l2 : (dl == 0 ? 0.0 : INFINITY);
    return rl > r ? rl : r;
}

double rp_cls_ratio(double value, double env, double floor) {
    if (isnan(value)) return INFINITY;
    const double e = env > floor ? env : floor;
    return value / e;
}

int rp_cls_first_break(const double *value, const double *env, const unsigned char *mask, int n, double floor,
                       double factor, double *ratio) {
    for (int k = 0; k < n; k++) {
        if (mask && !mask[k]) continue;
        const double r = rp_cls_ratio(value[k], env ? env[k] : 0.0, floor);
        if (r > factor) {
            if (ratio) *ratio = r;
            return k;
        }
    }
    if (ratio) *ratio = 0.0;
    return -1;
}

int rp_cls_assignment(const double *D, int B, double margin, int *perm) {
    int mismatch = 0;
    for (int i = 0; i < B; i++) {
        int best = i;
        for (int j = 0; j < B; j++)
            if (D[(size_t)i * B + j] < D[(size_t)i * B + best]) best = j;
        perm[i] = best;
        if (best != i && D[(size_t)i * B + best] * margin < D[(size_t)i * B + i]) mismatch = 1;
        else perm[i] = i; /* closer, but not "much" closer: not evidence of a swap */
    }
    return mismatch;
}

void rp_cls_assignment_message(const int *perm, int B, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < B && n < cap; i++) {
        if (perm[i] == i) continue;
        int w = snprintf(buf + n, cap - n, "%sitem %d matches reference item %d", n ? ", " : "", i, perm[i]);
        if (w < 0) break;
        n += (size_t)w;
    }
}

/* ---- layer order ----------------------------------------------------------------------------- */

typedef struct layer_key {
    int stage, block, sub;
} layer_key;

/* Where a layer name sits in a forward (see rp_cls_sort_layers). */
static layer_key key_of(const char *name) {
    static const char *const EMBED[][2] = {{"x_embedder", "0"},     {"pos_embed", "0"},
                                           {"t_embedder", "1"},     {"time_text_embed", "1"},
                                           {"y_embedder", "2"},     {"context_embedder", "2"}};
    layer_key k = {4, 0, 0}; /* unknown: after everything (a step's output latents) */
    /* the initial noise: drawn before any evaluation */
    if (!strcmp(name, "initial_noise")) return (layer_key){-3, 0, 0};
    /* the text encoder comes first (the conditioning is made before any step): its probe
     * (a WORLD replica, which names the ranks that disagree), then its output as the model
     * takes it (the trace's "text_encoder", "text_encoder.pooled"); then the evaluation's
     * inputs (the WORLD replica check's tensors) before any layer */
    if (!strncmp(name, "text_encoder", 12)) return (layer_key){-2, 0, strchr(name, '(') ? 0 : 1};
    if (!strcmp(name, "timestep")) return (layer_key){-1, 0, 0};
    if (!strcmp(name, "guidance")) return (layer_key){-1, 0, 1};
    /* which blocks each pipeline stage runs: the shape of the whole forward */
    if (!strcmp(name, "pipefusion.blocks")) return (layer_key){-1, 0, 2};
    /* after the model's last layer: the cfg exchange of its outputs, the guidance combine's
     * result (a replica every cfg rank holds), the step's coefficients (a WORLD replica), the
     * noise the update reads, then the stage a step break with no layer names
     * (step_after_model), which they would explain */
    if (!strncmp(name, "cfg.segment", 11)) return (layer_key){3, 0, 2};
    if (!strcmp(name, "guided_output")) return (layer_key){3, 0, 3}; /* the guidance combine's result */
    if (!strcmp(name, "sampler.step")) return (layer_key){3, 0, 4};
    if (!strcmp(name, "sampler.noise")) return (layer_key){3, 0, 5}; /* what the update reads */
    if (strstr(name, "sampler.update")) return (layer_key){3, 0, 6};
    for (size_t i = 0; i < sizeof EMBED / sizeof EMBED[0]; i++)
        if (!strcmp(name, EMBED[i][0])) return (layer_key){0, 0, EMBED[i][1][0] - '0'};
    if (!strcmp(name, "final_layer") || !strcmp(name, "norm_out")) return (layer_key){3, 0, 0};
    if (!strcmp(name, "proj_out")) return (layer_key){3, 0, 1};
    const char *rest = NULL;
    int stage = 0;
    if (!strncmp(name, "blocks.", 7)) rest = name + 7, stage = 1;
    else if (!strncmp(name, "transformer_blocks.", 19)) rest = name + 19, stage = 1;
    else if (!strncmp(name, "single_transformer_blocks.", 26)) rest = name + 26, stage = 2;
    if (!rest || !isdigit((unsigned char)*rest)) return k;
    char *end;
    const long b = strtol(rest, &end, 10);
    static const char *const SUB[] = {".attn", ".attn.context", ".mlp", ".ff", ".ff_context", "", ".context"};
    static const int SUBK[] = {0, 1, 2, 2, 3, 4, 5};
    k.stage = stage;
    k.block = b > INT_MAX ? INT_MAX : (int)b;
    k.sub = 6;
    if (stage == 2) k.sub = !strcmp(end, ".proj_out") ? 0 : !strcmp(end, "") ? 1 : 6;
    else
        for (size_t i = 0; i < sizeof SUB / sizeof SUB[0]; i++)
            if (!strcmp(end, SUB[i])) k.sub = SUBK[i];
    return k;
}

static int cmp_rec(const void *pa, const void *pb) {
    const rp_trace_rec *a = pa, *b = pb;
    if (a->eval != b->eval) return a->eval < b->eval ? -1 : 1;
    const layer_key ka = key_of(a->name), kb = key_of(b->name);
    if (ka.stage != kb.stage) return ka.stage < kb.stage ? -1 : 1;
    if (ka.block != kb.block) return ka.block < kb.block ? -1 : 1;
    if (ka.sub != kb.sub) return ka.sub < kb.sub ? -1 : 1;
    return strcmp(a->name, b->name);
}

void rp_cls_sort_layers(rp_trace_rec *recs, int n) {
    if (n > 1) qsort(recs, (size_t)n, sizeof *recs, cmp_rec);
}

/* 1 when the trace at path says it covers its run's first item only (note "trace_items"
 * first: a per-item batch without a layout, or made before per-item runs traced every
 * item); 0 otherwise, also when there is no such file. */
static int trace_first_item_only(const char *path) {
    rp_st_file *f = NULL;
    rp_error e;
    if (rp_st_open(path, &f, &e) != RP_OK) return 0;
    const char *v = rp_st_meta(f, "note/trace_items");
    const int first = v && !strcmp(v, "first");
    rp_st_close(f);
    return first;
}

rp_status rp_cls_trace_load(const char *path, rp_trace *t, rp_error *err) {
    rp_trace_init(t);
    rp_st_file *f = NULL;
    RP_TRY(rp_st_open(path, &f, err));
    rp_status st = RP_OK;
    t->recs = calloc((size_t)(f->n ? f->n : 1), sizeof *t->recs);
    if (!t->recs) st = RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", path);
    for (int i = 0; st == RP_OK && i < f->n; i++) {
        const rp_st_tensor *ts = &f->tensors[i];
        int ev = 0, off = 0;
        if (sscanf(ts->name, "e%d/%n", &ev, &off) != 1 || off == 0) continue; /* not a record */
        const char *meta = rp_st_meta(f, ts->name);
        rp_trace_rec *r = &t->recs[t->n];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", ts->name + off);
        r->eval = ev;
        if (!meta || sscanf(meta, "numel=%zu,l2=%lg,maxabs=%lg,stride=%zu", &r->numel, &r->l2, &r->maxabs,
                            &r->stride) != 4) {
            /* "nan" is written by %.17g and read by %lg; anything else is a damaged file */
            st = RP_FAIL(err, RP_ERR_FORMAT, "%s: record '%s' has no statistics metadata", path, ts->name);
            break;
        }
        if (ts->ndim != 1 || ts->numel > INT_MAX) {
            st = RP_FAIL(err, RP_ERR_FORMAT, "%s: record '%s' is not a 1-D sample", path, ts->name);
            break;
        }
        r->nsample = (int)ts->numel;
        /* the samples stay in the file where they can (no copy: the trace keeps it open) */
        float *own = NULL;
        st = rp_st_f32_borrow(f, ts, &r->sample, &own, err);
        r->borrowed = own == NULL;
        if (st == RP_OK) t->n++;
    }
    t->cap = f->n;
    t->backing = f; /* closed by rp_trace_free, also below */
    if (st != RP_OK) {
        rp_trace_free(t);
        return st;
    }
    rp_cls_sort_layers(t->recs, t->n);
    return RP_OK;
}

/* The record of name at eval in t, or NULL. */
static const rp_trace_rec *trace_find(const rp_trace *t, int eval, const char *name) {
    for (int i = 0; i < t->n; i++)
        if (t->recs[i].eval == eval && !strcmp(t->recs[i].name, name)) return &t->recs[i];
    return NULL;
}

/* ---- the decision ------------------------------------------------------------------------------ */

void rp_cls_facts_init(rp_cls_facts *f) {
    memset(f, 0, sizeof *f);
    f->failed = RP_V_COUNT;
    f->layer_break = -1;
    f->step_break = -1;
    f->replica_break = -1;
    f->image_break = -1;
    f->latents_break = -1;
    f->trajectory_break = -1;
    f->noise_draw_break = -1;
    f->teacher_input_break = f->teacher_input_step = -1;
    f->psnr = f->ssim = NAN;
}

/* A leak of state from one call to the next, shown by the leak check and not explained by
 * nondeterminism (the fresh pair agrees), in a mode that promises determinism. It reaches
 * every later run of the launch, so their evidence (teacher-forced steps, shadows, the
 * teacher decode, their replica checks) is its effect, not a cause of its own: only the
 * case's own run, the launch's first call, can name an earlier one. */
static int leak_first(const rp_cls_facts *f) {
    return (f->promised || f->fresh_agree) && f->leak_differs && !f->rotated_differs && !f->fresh_differs &&
           !f->repeats_differ;
}

/* The rotated layout's finding decides (§6): its step, in runs shown or promised
 * deterministic, comes before any teacher-forced step's break (a break at the same step says
 * as much and names its evidence). It is no leak: no later run of the launch is its effect. */
static int rotated_first(const rp_cls_facts *f) {
    return f->rotated_differs && (f->promised || f->fresh_agree) && !f->fresh_differs && !f->repeats_differ &&
           (f->step_break < 0 || f->leak_step < f->step_break);
}

/* The leak's summary into s: the leak check's run (the case's own, or at fp32 its shadow's,
 * where a coarser precision hid it), then the fresh pair's finding. */
static void leak_summary(const rp_cls_facts *f, char *s, size_t cap) {
    const char *const run = f->leak_fp32 ? " of the fp32 shadow" : "";
    const char *const input = f->leak_fp32 ? "the same input" : "the case's own input";
    if (f->loop_differs && !f->fresh_differs)
        snprintf(s, cap, "step %d of the case's own run is not what the same step computes from its stored latent: "
                 "recomputed from the case's own input it gives other bits (max-abs %.3g), in the same worker and as "
                 "the first call of a fresh one, while two fresh runs of the case alone agree: the sampling loop "
                 "computes other bits than its steps do",
                 f->leak_step, f->leak_max_abs);
    else if (f->fresh_differs)
        snprintf(s, cap, "step %d%s recomputed later in the same worker from %s gives other bits "
                 "(max-abs %.3g), and two fresh runs of the case alone%s differ too: the runs are nondeterministic%s",
                 f->leak_step, run, input, f->leak_max_abs, f->leak_fp32 ? " at fp32" : "",
                 f->promised ? " although the mode is deterministic" : " (fast mode: reported, not failed)");
    else
        snprintf(s, cap, "step %d%s recomputed in the same worker after the case's run, from %s, gives "
                 "other bits (max-abs %.3g) while two fresh runs of the case alone%s agree: state leaks between calls",
                 f->leak_step, run, input, f->leak_max_abs, f->leak_fp32 ? " at fp32" : "");
}

rp_verdict rp_cls_decide(const rp_cls_facts *f, char *s, size_t cap) {
    assert(f && s && cap > 0);
    s[0] = '\0';
    if (f->failed != RP_V_COUNT) {
        snprintf(s, cap, "%s", f->failed_reason[0] ? f->failed_reason : rp_verdict_name(f->failed));
        return f->failed;
    }
    if (f->teacher_input_break >= 0) {
        snprintf(s, cap, "%s", f->teacher_input_msg);
        return RP_V_BUG;
    }
    if (f->mismatch) {
        snprintf(s, cap, "%s", f->mismatch_msg);
        return RP_V_MISMATCH;
    }
    if (f->ran_break) {
        snprintf(s, cap, "%s", f->ran_msg);
        return RP_V_BUG;
    }
    /* Copies of one tensor computed by the same code from the same bits must be equal: no
     * envelope applies. That presumes deterministic kernels: in fast mode, or when two fresh
     * runs of the case differ from each other, a kernel-computed copy that differs is that
     * nondeterminism (one rank summed in another order), not proof of a bug. A host-computed
     * one (the world group) no kernel's timing reaches. */
    const int other_break = f->noise_break || f->layer_break >= 0 || f->step_break >= 0;
    /* determinism promised by the mode, or shown: two fresh runs of the case agree */
    const int replica_bug = f->replica_host || ((f->promised || f->fresh_agree) && !f->fresh_differs);
    const int leak = leak_first(f);
    if (f->replica_break >= 0 && (f->replica_first || !other_break) && (replica_bug || !other_break) &&
        !(leak && f->replica_later)) {
        snprintf(s, cap, "%s: %s at step %d: %s%s",
                 f->replica_own     ? "a recomputation differs"
                 : f->replica_stale ? "the layout's contract is broken"
                                    : "replicas differ",
                 f->replica_tensor, f->replica_break, f->replica_msg,
                 replica_bug ? ""
                 : f->promised ? "; two fresh runs of the case alone differ from each other too: the runs are "
                                 "nondeterministic although the mode is deterministic"
                               : " (fast mode: reported, not failed)");
        return replica_bug ? RP_V_BUG : RP_V_NONDETERMINISTIC;
    }
    /* an invariant pair has no envelope: the earliest difference at all is the bug */
    /* exact comparisons presume deterministic runs: where the runs are shown not to be, that
     * is the finding (below), not a difference between two of them */
    const int nondeterministic = f->repeats_differ || f->fresh_differs;
    if (f->invariant && !nondeterministic &&
        (f->noise_break || f->layer_break >= 0 || (!leak && (f->step_break >= 0 || f->image_break >= 0)))) {
        const char *what = f->noise_break ? "the initial noise" : f->layer_break >= 0 ? f->layer_name
                           : f->step_break >= 0 ? (f->step_layer[0] ? f->step_layer : "the step's output")
                                                : "the decoded image";
        const int step = f->noise_break || f->layer_break >= 0 ? 0 : f->step_break >= 0 ? f->step_break : -1;
        char at[64] = "";
        if (step >= 0) snprintf(at, sizeof at, " at step %d%s", step, f->step_break >= 0 && !f->noise_break &&
                                f->layer_break < 0 ? " (teacher-forced)" : "");
        snprintf(s, cap, "numerics invariant: %s differs from the reference%s; an exact layout must be bitwise the "
                 "serial run, so any difference is a bug%s%s", what, at, f->image_break >= 0 && step < 0 ? ": " : "",
                 f->image_break >= 0 && step < 0 ? f->image_msg : "");
        return RP_V_BUG;
    }
    /* where a divergence began: the earliest step; within step 0 the noise comes before
     * any layer, and the first evaluation's layers before the step's local error */
    if (f->noise_break && f->noise_exact) {
        snprintf(s, cap, "the initial noise differs from the reference's at step 0 (rel-L2 %.3g): every item's noise "
                 "is drawn from its seed by the same host code in every layout, precision and device, so any "
                 "difference is a bug%s%s", f->noise_rel,
                 f->layer_break >= 0 ? "; first layer beyond the envelope: " : "", f->layer_break >= 0 ? f->layer_name : "");
        return RP_V_BUG;
    }
    if (f->noise_break) {
        snprintf(s, cap, "the initial noise differs from the reference's (x%.3g the noise envelope) at step 0%s%s",
                 f->noise_ratio, f->layer_break >= 0 ? "; first layer beyond the envelope: " : "",
                 f->layer_break >= 0 ? f->layer_name : "");
        return RP_V_BUG;
    }
    if (f->noise_draw_break >= 0) { /* the reference's noise is the case's, and neither is the draw */
        snprintf(s, cap, "%s%s%s", f->noise_draw_msg, f->layer_break >= 0 ? "; first layer beyond the envelope: " : "",
                 f->layer_break >= 0 ? f->layer_name : "");
        return RP_V_BUG;
    }
    if (f->trajectory_break >= 0) { /* every step check reads the returned trajectory: before them */
        snprintf(s, cap, "%s", f->trajectory_msg);
        return RP_V_BUG;
    }
    if (f->layer_break >= 0 && f->layer_exact) {
        snprintf(s, cap, "%s differs from the reference's at step 0 (first evaluation), where no rounding twin "
                 "moves it at all: a layer no legitimate change of the arithmetic touches (a table lookup) is held "
                 "bitwise%s%s", f->layer_name, f->layer_items[0] ? "; step 0's output breaks the envelope in " : "",
                 f->layer_items);
        return RP_V_BUG;
    }
    if (f->layer_break >= 0) {
        snprintf(s, cap, "%s breaks the envelope x%.3g at step 0 (first evaluation)%s%s%s", f->layer_name,
                 f->layer_ratio,
                 f->step_break == 0 ? "" : f->step_break > 0 ? "; the first local error beyond it is later"
                                                              : "; every local error stays within it",
                 f->layer_items[0] ? "; step 0's output breaks it in " : "", f->layer_items);
        return RP_V_BUG;
    }
    if (leak && f->latents_break >= 0) { /* the case's own run: before the leak's effects */
        snprintf(s, cap, "%s", f->latents_msg);
        return RP_V_BUG;
    }
    if (leak) {
        leak_summary(f, s, cap);
        return RP_V_BUG;
    }
    if (rotated_first(f)) {
        snprintf(s, cap, "step %d%s%s differs when every group's parts are handed to the next rank (the layout "
                 "rotated: each rank computes another rank's shard, head group, cfg half or items; max-abs %.3g), as "
                 "the first call of a fresh launch, while the same steps unrotated agree with the case's own run: a "
                 "part's result depends on which rank computes it (arithmetic keyed to a rank, not to its data)",
                 f->leak_step, f->rotated_layer[0] ? " at " : "", f->rotated_layer, f->leak_max_abs);
        return RP_V_BUG;
    }
    if (f->step_break >= 0 && f->step_emulation && !nondeterministic) {
        snprintf(s, cap, "%s differs from the case's serial emulation's at step %d (the same case on one stage over "
                 "the same %d pipeline patches: with the patches fixed, PipeFusion's arithmetic does not depend on "
                 "the stage count, so any difference is a bug)",
                 !strcmp(f->step_layer, "vae.decode") ? "the decoded image"
                 : f->step_layer[0]                  ? "the returned latents"
                                                     : "the step's output",
                 f->step_break, f->emulation_patches);
        return RP_V_BUG;
    }
    if (f->step_break >= 0 && f->step_invariant && !nondeterministic) {
        /* the two shadows differ in layout, threads, kernel set or backend: the promise covers all */
        snprintf(s, cap, "%s differs from the reference's at step %d in the invariant shadow%s%s (the layout "
                 "teacher-forced under invariant numerics, where an exact layout is bitwise the serial run at any "
                 "thread count and kernel set: any difference is a bug)",
                 f->step_layer[0] ? f->step_layer : "the step's output", f->step_break,
                 f->invariant_at[0] ? " at " : "", f->invariant_at);
        return RP_V_BUG;
    }
    if (f->step_break >= 0 && !f->step_invariant && !f->step_emulation) {
        const char *how = f->step_shadow ? "teacher-forced at fp32, the layout's shadow" : "teacher-forced";
        char items[96] = "";
        if (f->step_items[0]) snprintf(items, sizeof items, ", in %s only", f->step_items);
        if (f->step_after_model)
            snprintf(s, cap, "the local error breaks the envelope x%.3g at step %d (%s%s) while every traced layer of "
                     "the step's evaluation stays within its own: the difference enters after the model's last "
                     "layer, in %s", f->step_ratio, f->step_break, how, items,
                     strchr(f->step_layer, '+') ? "the guidance combine or the sampler's update (its schedule of "
                                                  "timesteps / sigmas, its coefficients)"
                                                : "the sampler's update (its schedule of timesteps / sigmas, its "
                                                  "coefficients)");
        else if (f->step_layer[0])
            snprintf(s, cap, "%s breaks the envelope x%.3g at step %d (%s; local error x%.3g%s)", f->step_layer,
                     f->step_layer_ratio, f->step_break, how, f->step_ratio, items);
        else
            snprintf(s, cap, "the local error breaks the envelope x%.3g at step %d (%s%s)", f->step_ratio,
                     f->step_break, how, items);
        return RP_V_BUG;
    }
    if (f->image_break >= 0) {
        snprintf(s, cap, "%s", f->image_msg);
        return RP_V_BUG;
    }
    if (f->latents_break >= 0) {
        snprintf(s, cap, "%s", f->latents_msg);
        return RP_V_BUG;
    }
    if (f->repeats_differ) {
        snprintf(s, cap, "repeats of the case differ (max-abs %.3g)%s", f->repeat_max_abs,
                 f->promised ? " although the mode is deterministic" : " (fast mode: reported, not failed)");
        return RP_V_NONDETERMINISTIC;
    }
    if (f->leak_differs && f->fresh_differs) {
        leak_summary(f, s, cap);
        return RP_V_NONDETERMINISTIC;
    }
    if (f->fresh_differs) {
        snprintf(s, cap, "%s, and two fresh runs of the case alone "
                 "differ from each other (max-abs %.3g): the runs are nondeterministic%s, and an exact comparison of "
                 "two of them is no evidence of a bug",
                 f->step_invariant    ? "the invariant shadow differs from the reference's"
                 : f->step_emulation ? "the case differs from its serial emulation"
                                     : "an exact rerun differs",
                 f->fresh_max_abs,
                 f->promised ? " although the mode is deterministic" : " (fast mode: reported, not failed)");
        return RP_V_NONDETERMINISTIC;
    }
    if (f->leak_differs) { /* fast mode: leak_first would have decided a promised one */
        leak_summary(f, s, cap);
        return RP_V_NONDETERMINISTIC;
    }
    if (f->is_reference) {
        snprintf(s, cap, "the reference");
        return RP_V_IDENTICAL;
    }
    if (f->identical) {
        snprintf(s, cap, "bitwise identical to the reference");
        return RP_V_IDENTICAL;
    }
    if (f->approx) {
        char em[160] = "";
        if (f->emulation_equal)
            snprintf(em, sizeof em, "; bitwise its serial emulation (one stage, %d patches): the loss is the "
                     "patches', not the stage count's", f->emulation_patches);
        if (rp_cls_below_bound(f))
            /* every exact check of the approximation held (the replicas, the staleness contract,
             * the block ownership, the invariant shadow over the warmup and fresh-key steps), so
             * what is left is its loss at these settings: the matrix's requirement fails
             * (cls_finish), but that is no evidence of a fault */
            snprintf(s, cap, "approximate after warmup %d, below the quality bound: SSIM %.4f (>= %.4g), PSNR %.2f "
                     "dB (>= %.4g); no exact check of the layout broke (replicas, staleness contract, invariant "
                     "shadow where it ran): the approximation's own loss at these settings, not evidence of a fault "
                     "(classify: {approx_psnr, approx_ssim} set the bound)%s",
                     f->warmup, f->ssim, f->bound_ssim, f->psnr, f->bound_psnr, em);
        else if (f->have_quality)
            snprintf(s, cap, "approximate after warmup %d, within its bound: SSIM %.4f, PSNR %.2f dB%s", f->warmup,
                     f->ssim, f->psnr, em);
        else
            snprintf(s, cap, "approximate after warmup %d (no images to hold to the bound)%s", f->warmup, em);
        return RP_V_APPROX;
    }
    snprintf(s, cap, "every %s within the rounding envelope%s",
             f->teacher_missing ? "layer" : "layer and local error",
             f->teacher_missing ? " (no teacher-forcing run: steps not checked)" : "");
    return RP_V_DRIFT;
}

int rp_cls_below_bound(const rp_cls_facts *f) {
    return f->approx && f->have_quality && !(f->ssim >= f->bound_ssim && f->psnr >= f->bound_psnr);
}

int rp_cls_meets(rp_verdict expected, rp_verdict v) {
    if (expected == v) return 1;
    if (expected == RP_V_DRIFT) return v == RP_V_IDENTICAL;
    if (expected == RP_V_APPROX) return v == RP_V_IDENTICAL || v == RP_V_DRIFT;
    return 0;
}

int rp_cls_confusion_print(FILE *f, const rp_verdict *expected, const rp_verdict *verdict, int n) {
    int count[RP_V_COUNT][RP_V_COUNT] = {{0}}, row[RP_V_COUNT] = {0}, col[RP_V_COUNT] = {0}, off = 0;
    for (int i = 0; i < n; i++) {
        assert(expected[i] < RP_V_COUNT && verdict[i] < RP_V_COUNT);
        count[expected[i]][verdict[i]]++;
        row[expected[i]] = col[verdict[i]] = col[expected[i]] = 1;
        off += !rp_cls_meets(expected[i], verdict[i]);
    }
    if (!n) return 0;
    fprintf(f, "confusion (expected label x verdict, %d labelled cases):\n  %-16s", n, "expected");
    for (int v = 0; v < RP_V_COUNT; v++)
        if (col[v]) fprintf(f, " %9s", rp_verdict_name((rp_verdict)v));
    fputc('\n', f);
    for (int e = 0; e < RP_V_COUNT; e++) {
        if (!row[e]) continue;
        fprintf(f, "  %-16s", rp_verdict_name((rp_verdict)e));
        for (int v = 0; v < RP_V_COUNT; v++) {
            if (!col[v]) continue;
            const int w = (int)strlen(rp_verdict_name((rp_verdict)v));
            fprintf(f, " %*d", w > 9 ? w : 9, count[e][v]);
        }
        fputc('\n', f);
    }
    if (off) fprintf(f, "confusion: NOT diagonal: %d case(s) off the diagonal\n", off);
    else fprintf(f, "confusion: diagonal (identical counts as drift; identical and drift as approx)\n");
    return off;
}

/* ---- the driver: loading -------------------------------------------------------------------------- */

void rp_cls_write_aux(const char *dir, const char *kind, const char *status, const char *reason, double wall_s) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return;
    cJSON_AddStringToObject(j, "kind", kind);
    cJSON_AddStringToObject(j, "status", status);
    cJSON_AddStringToObject(j, "reason", reason);
    cJSON_AddNumberToObject(j, "wall_s", wall_s);
    char p[PATHLEN];
    rp_error e;
    rp_store_path(p, sizeof p, dir, RP_ART_AUX);
    (void)rp_store_write_json(p, j, &e); /* a missing aux.json reads as "no done.json": a failed run */
    cJSON_Delete(j);
}

/* One run's trajectory file: (rows = steps + 1, B, per). */
typedef struct traj {
    int rows, B;
    size_t per;
    float *x;        /* (rows, B, per): a view into file where it can be (rp_st_f32_borrow) */
    float *mask;     /* teacher files: (rows - 1) steps run (1) or not (0); else NULL */
    float *input;    /* teacher files: (rows - 1, B, per) what each step that ran started from
                        (others NaN); NULL in a free run's file or one written before it */
    rp_st_file *file; /* the file x, mask and input may point into */
    float *x_own, *mask_own, *input_own; /* copies where no view could be made */
} traj;

static void traj_free(traj *t) {
    free(t->x_own);
    free(t->mask_own);
    free(t->input_own);
    if (t->file) rp_st_close(t->file);
    memset(t, 0, sizeof *t);
}

/* Reads tensor name (rows, B, C, h, w) of the safetensors file at path. */
static rp_status traj_load(const char *path, const char *name, traj *t, rp_error *err) {
    memset(t, 0, sizeof *t);
    rp_st_file *f = NULL;
    RP_TRY(rp_st_open(path, &f, err));
    const rp_st_tensor *ts = rp_st_find(f, name);
    rp_status st = RP_OK;
    if (!ts || ts->ndim != 5 || ts->shape[0] < 2 || ts->shape[1] < 1) {
        st = RP_FAIL(err, RP_ERR_FORMAT, "%s: no '%s' tensor of (steps + 1, items, C, h, w)", path, name);
    } else {
        t->rows = (int)ts->shape[0];
        t->B = (int)ts->shape[1];
        t->per = (size_t)(ts->shape[2] * ts->shape[3] * ts->shape[4]);
        st = rp_st_f32_borrow(f, ts, &t->x, &t->x_own, err);
        const rp_st_tensor *ms = st == RP_OK ? rp_st_find(f, "steps") : NULL;
        if (ms && (ms->ndim != 1 || ms->shape[0] != t->rows - 1))
            st = RP_FAIL(err, RP_ERR_FORMAT, "%s: its 'steps' tensor is not one flag per step (%d)", path, t->rows - 1);
        else if (ms)
            st = rp_st_f32_borrow(f, ms, &t->mask, &t->mask_own, err);
        const rp_st_tensor *is = st == RP_OK ? rp_st_find(f, "input") : NULL;
        if (is && (is->ndim != 5 || is->shape[0] != t->rows - 1 || is->shape[1] != t->B ||
                   (size_t)(is->shape[2] * is->shape[3] * is->shape[4]) != t->per))
            st = RP_FAIL(err, RP_ERR_FORMAT, "%s: its 'input' tensor is not (%d steps, %d items, C, h, w)", path,
                         t->rows - 1, t->B);
        else if (is)
            st = rp_st_f32_borrow(f, is, &t->input, &t->input_own, err);
    }
    t->file = f; /* x and mask may point into it: closed by traj_free */
    if (st != RP_OK) traj_free(t);
    return st;
}

/* A (B, C, h, w) tensor the run returned in its latents artifact: "latents" (the final
 * latents) or "noise" (the initial noise it drew), B * per floats, in *out (malloc'd); *out
 * NULL when the file has no such tensor (nothing to check). */
static rp_status returned_load(const char *dir, const char *name, int B, size_t per, float **out, rp_error *err) {
    *out = NULL;
    char p[PATHLEN];
    rp_store_path(p, sizeof p, dir, RP_ART_LATENTS);
    rp_st_file *f = NULL;
    RP_TRY(rp_st_open(p, &f, err));
    const rp_st_tensor *t = rp_st_find(f, name);
    rp_status st = RP_OK;
    if (t && t->ndim == 4 && t->shape[0] == B && (size_t)(t->shape[1] * t->shape[2] * t->shape[3]) == per) {
        if (!(*out = malloc(sizeof(float) * B * per))) st = RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", p);
        else st = rp_st_read_f32(f, name, 4, t->shape, *out, err);
    } else if (t) {
        st = RP_FAIL(err, RP_ERR_SHAPE, "%s: its '%s' tensor is not (%d items, the trajectory's C, h, w)", p, name, B);
    }
    rp_st_close(f);
    if (st != RP_OK) free(*out), *out = NULL;
    return st;
}

static int traj_same_shape(const traj *a, const traj *b) {
    return a->rows == b->rows && a->B == b->B && a->per == b->per;
}

rp_verdict rp_cls_aux_status(const char *dir, char *why, size_t cap) {
    char p[PATHLEN];
    why[0] = '\0';
    rp_store_path(p, sizeof p, dir, RP_ART_AUX);
    cJSON *j = NULL;
    rp_error e;
    if (rp_is_file(p) && rp_store_read_json(p, &j, &e) == RP_OK) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "status");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "reason");
        const int v = cJSON_IsString(s) ? rp_verdict_parse(s->valuestring) : -1;
        const int ok = cJSON_IsString(s) && !strcmp(s->valuestring, "ok");
        if (cJSON_IsString(r)) snprintf(why, cap, "%s", r->valuestring);
        cJSON_Delete(j);
        if (v == RP_V_CRASH || v == RP_V_HANG || v == RP_V_CONFIG_ERROR) return (rp_verdict)v;
        if (!ok) return RP_V_CRASH;
    }
    rp_store_path(p, sizeof p, dir, RP_ART_DONE);
    if (!rp_is_file(p)) {
        if (!why[0]) snprintf(why, cap, "no done.json in %s", dir);
        return RP_V_CRASH;
    }
    return RP_V_COUNT;
}

/* The case's own end from result.json (absent: ok when done.json is there). */
static rp_verdict case_status(const char *dir, char *why, size_t cap) {
    char p[PATHLEN];
    why[0] = '\0';
    rp_store_path(p, sizeof p, dir, RP_ART_RESULT);
    cJSON *j = NULL;
    rp_error e;
    if (!rp_is_file(p) || rp_store_read_json(p, &j, &e) != RP_OK) return rp_cls_aux_status(dir, why, cap);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "status");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "reason");
    if (cJSON_IsString(r)) snprintf(why, cap, "%s", r->valuestring);
    rp_verdict v = RP_V_COUNT;
    if (!cJSON_IsString(s)) v = RP_V_CRASH;
    else if (strcmp(s->valuestring, "ok")) {
        const int k = rp_verdict_parse(s->valuestring);
        v = k >= 0 ? (rp_verdict)k : RP_V_CRASH;
    }
    cJSON_Delete(j);
    return v;
}

/* The largest |x[i] - y[i]| over n floats (NaN counts as largest). */
static double max_abs_diff(const float *x, const float *y, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)x[i] - y[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

/* 1 when the two latents files hold bitwise equal latents and trajectories. max_abs gets
 * the largest difference of the final latents (0 when equal, NaN when unreadable). */
static int latents_equal(const char *da, const char *db, double *max_abs) {
    char pa[PATHLEN], pb[PATHLEN];
    rp_store_path(pa, sizeof pa, da, RP_ART_LATENTS);
    rp_store_path(pb, sizeof pb, db, RP_ART_LATENTS);
    traj a, b;
    rp_error e;
    *max_abs = NAN;
    if (traj_load(pa, "trajectory", &a, &e) != RP_OK) return 0;
    if (traj_load(pb, "trajectory", &b, &e) != RP_OK) {
        traj_free(&a);
        return 0;
    }
    int eq = 0;
    if (traj_same_shape(&a, &b)) {
        const size_t n = (size_t)a.rows * a.B * a.per, last = (size_t)(a.rows - 1) * a.B * a.per;
        eq = memcmp(a.x, b.x, sizeof(float) * n) == 0;
        *max_abs = max_abs_diff(a.x + last, b.x + last, n - last);
    }
    traj_free(&a);
    traj_free(&b);
    return eq;
}

/* 1 when the two runs' <art> files hold the same bytes, or neither has one. Every artifact
 * compared so is derived from the run's computed bits alone (no times, no paths). */
static int artifact_equal(const char *da, const char *db, rp_artifact art) {
    char pa[PATHLEN], pb[PATHLEN];
    rp_store_path(pa, sizeof pa, da, art);
    rp_store_path(pb, sizeof pb, db, art);
    FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
    int eq = !fa && !fb;
    if (fa && fb) {
        char ba[65536], bb[65536];
        for (eq = 1; eq;) {
            const size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
            if (na != nb || memcmp(ba, bb, na)) eq = 0;
            if (na < sizeof ba) break;
        }
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return eq;
}

/* 1 when the traces of two runs hold the same records bit for bit (layer, evaluation,
 * statistics, samples), or neither run has one. The notes are not compared: they say what a
 * run was asked and did (its knobs, the kernels that ran, rp_attn_note_ran), and a run that
 * decoded notes its decoder's kernels where a fresh run, which decodes no images, has none. */
static int trace_records_equal(const char *da, const char *db) {
    char pa[PATHLEN], pb[PATHLEN];
    rp_store_path(pa, sizeof pa, da, RP_ART_TRACE);
    rp_store_path(pb, sizeof pb, db, RP_ART_TRACE);
    const int ha = rp_is_file(pa), hb = rp_is_file(pb);
    if (!ha || !hb) return ha == hb;
    rp_trace a, b;
    rp_error e;
    if (rp_cls_trace_load(pa, &a, &e) != RP_OK) return 0;
    if (rp_cls_trace_load(pb, &b, &e) != RP_OK) {
        rp_trace_free(&a);
        return 0;
    }
    int eq = a.n == b.n;
    for (int i = 0; eq && i < a.n; i++) {
        const rp_trace_rec *x = &a.recs[i], *y = &b.recs[i];
        eq = x->eval == y->eval && !strcmp(x->name, y->name) && x->numel == y->numel && x->stride == y->stride &&
             !memcmp(&x->l2, &y->l2, sizeof x->l2) && !memcmp(&x->maxabs, &y->maxabs, sizeof x->maxabs) &&
             x->nsample == y->nsample && !memcmp(x->sample, y->sample, sizeof(float) * (size_t)x->nsample);
    }
    rp_trace_free(&a);
    rp_trace_free(&b);
    return eq;
}

/* 1 when two runs of one case (the fresh pair) agree in every bit they recorded: latents and
 * trajectory, the traced layers, what the replica check saw and the images, when the pair
 * decoded (it does only after a difference in the decoded images: runner.c, fresh_pair). A
 * nondeterministic kernel whose ulps a bf16 rounding later absorbs leaves the latents equal
 * but not its layer's fp32 trace, nor which rank's copy differed. *max_abs: the final
 * latents' largest difference. */
static int runs_agree(const char *da, const char *db, double *max_abs) {
    const int eq = latents_equal(da, db, max_abs);
    rp_outputs_cmp im = {.identical = 1};
    rp_error e;
    return eq && trace_records_equal(da, db) && artifact_equal(da, db, RP_ART_REPLICAS) &&
           rp_store_compare_images(da, db, -1, NULL, &im, &e) == RP_OK && im.identical;
}

/* 1 when the case's own run (case_dir) agrees with its fresh run (fresh_dir) in its
 * trajectory and traced layers. The case's run is the first call of its launch, as a fresh
 * run is, so a leak between calls does not reach it: a difference is the runs'
 * nondeterminism, a third sample beside the fresh pair's two (a fault that acts on a coin
 * toss per run, audit 8's ulp keyed to a buffer's address, agrees in a pair half the time).
 * Only these two artifacts: the case's replica log holds its later runs' checks too, and
 * a fresh run decodes no images unless images differed. */
static int own_run_agrees(const char *case_dir, const char *fresh_dir, double *max_abs) {
    return latents_equal(case_dir, fresh_dir, max_abs) && trace_records_equal(case_dir, fresh_dir);
}

int rp_cls_runs_identical(const char *dir_a, const char *dir_b) {
    double m;
    return latents_equal(dir_a, dir_b, &m);
}

static int same_dir(const char *a, const char *b);

/* rp_cls_rerun_check over the teacher-forced run in run_dir, whose inputs are the case's own
 * trajectory (own) or ref_dir's. */
static int rerun_rows(const char *case_dir, const char *run_dir, int own, const char *ref_dir, int *step,
                      double *max_abs) {
    char p[PATHLEN];
    traj c = {0}, t = {0}, r = {0};
    rp_error e;
    int res = -1;
    *step = -1;
    *max_abs = 0;
    rp_store_path(p, sizeof p, run_dir, RP_ART_TEACHER);
    if (!rp_is_file(p) || traj_load(p, "teacher", &t, &e) != RP_OK) goto out;
    rp_store_path(p, sizeof p, case_dir, RP_ART_LATENTS);
    if (traj_load(p, "trajectory", &c, &e) != RP_OK || !traj_same_shape(&c, &t)) goto out;
    rp_store_path(p, sizeof p, ref_dir, RP_ART_LATENTS);
    if (!own && (traj_load(p, "trajectory", &r, &e) != RP_OK || !traj_same_shape(&c, &r))) goto out;
    const float *in = own ? c.x : r.x; /* (rows, B, per) the teacher run's inputs */
    const size_t row = (size_t)c.B * c.per;
    /* every sampler's step restarts exactly from its stored latent (rp_sample) */
    for (int k = 0; k + 1 < c.rows; k++) {
        if (t.mask && t.mask[k] == 0.0f) continue;
        if (memcmp(in + (size_t)k * row, c.x + (size_t)k * row, sizeof(float) * row)) continue;
        if (res < 0) res = 0;
        const float *a = c.x + (size_t)(k + 1) * row, *b = t.x + (size_t)(k + 1) * row;
        if (!memcmp(a, b, sizeof(float) * row)) continue;
        *step = k;
        *max_abs = max_abs_diff(a, b, row);
        res = 1;
        break;
    }
out:
    traj_free(&c);
    traj_free(&t);
    traj_free(&r);
    return res;
}

int rp_cls_rerun_check(const char *case_dir, const char *ref_dir, int *step, double *max_abs) {
    /* the self check's run when there is one (every step from the case's own latents); a
     * reference's teacher run is one (its teacher input is its own run) */
    char td[PATHLEN], p[PATHLEN];
    rp_store_subdir(td, sizeof td, case_dir, RP_SUB_SELF);
    rp_store_path(p, sizeof p, td, RP_ART_TEACHER);
    const int self = rp_is_file(p);
    if (!self) rp_store_subdir(td, sizeof td, case_dir, RP_SUB_TEACHER);
    return rerun_rows(case_dir, td, self || same_dir(case_dir, ref_dir), ref_dir, step, max_abs);
}

int rp_cls_fresh_self_check(const char *case_dir, int plain, int *step, double *max_abs) {
    char td[PATHLEN];
    rp_store_subdir(td, sizeof td, case_dir, plain ? RP_SUB_FRESH_SELF_PLAIN : RP_SUB_FRESH_SELF);
    return rerun_rows(case_dir, td, 1, case_dir, step, max_abs);
}

int rp_cls_self_rotated(const rp_case *c) {
    rp_par_degrees d;
    rp_case_degrees(c, &d);
    return rp_par_rotates(&d) && (!c->device[0] || !strcmp(c->device, "cpu"));
}

/* The first differing row of two teacher trajectories over the steps both ran (k + 1 for
 * step k): 1 with *step, *max_abs; 0 when every shared step agrees; -1 when none is shared. */
static int teacher_rows_differ(const traj *a, const traj *b, int *step, double *max_abs) {
    const size_t row = (size_t)a->B * a->per;
    int res = -1;
    for (int k = 0; k + 1 < a->rows; k++) {
        if ((a->mask && a->mask[k] == 0.0f) || (b->mask && b->mask[k] == 0.0f)) continue;
        if (res < 0) res = 0;
        const float *x = a->x + (size_t)(k + 1) * row, *y = b->x + (size_t)(k + 1) * row;
        if (!memcmp(x, y, sizeof(float) * row)) continue;
        *step = k;
        *max_abs = max_abs_diff(x, y, row);
        return 1;
    }
    return res;
}

int rp_cls_shadow_rerun_check(const char *case_dir, int *step, double *max_abs) {
    char d[PATHLEN], p[PATHLEN];
    traj a = {0}, b = {0};
    rp_error e;
    int res = -1;
    *step = -1;
    *max_abs = 0;
    rp_store_subdir(d, sizeof d, case_dir, RP_SUB_SHADOW_TEACHER);
    rp_store_path(p, sizeof p, d, RP_ART_TEACHER);
    if (!rp_is_file(p) || traj_load(p, "teacher", &a, &e) != RP_OK) goto out;
    rp_store_subdir(d, sizeof d, case_dir, RP_SUB_SHADOW_LEAK);
    rp_store_path(p, sizeof p, d, RP_ART_TEACHER);
    if (!rp_is_file(p) || traj_load(p, "teacher", &b, &e) != RP_OK || !traj_same_shape(&a, &b)) goto out;
    res = teacher_rows_differ(&a, &b, step, max_abs);
out:
    traj_free(&a);
    traj_free(&b);
    return res;
}

/* ---- the driver: JSON helpers ------------------------------------------------------------------ */

/* JSON has no inf/nan: stored as the strings "inf", "-inf", "nan" (as metrics.json). */
static cJSON *num(double v) {
    if (isfinite(v)) return cJSON_CreateNumber(v);
    return cJSON_CreateString(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

static void put(cJSON *o, const char *k, double v) { cJSON_AddItemToObject(o, k, num(v)); }

static cJSON *num_array(const double *v, int n, const unsigned char *mask) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, mask && !mask[i] ? cJSON_CreateNull() : num(v[i]));
    return a;
}

/* ---- the driver ---------------------------------------------------------------------------------- */


typedef struct twin_data {
    char name[64];
    char dir[PATHLEN];
    rp_verdict status;       /* RP_V_COUNT: ran */
    char why[300];
    traj main;               /* rows 0 when unreadable */
    rp_trace trace;
    int have_trace;
    traj teacher;            /* rows 0 without a teacher run */
    rp_trace teacher_trace;
    int have_teacher_trace;
    int applies;             /* its envelope is the case's (rp_cls_twin_applies) */
    int perturbed;           /* its own run started from perturbed noise (the noise twins) */
    int other_math;          /* it changes the arithmetic (rp_cls_twin_other_math; 0 for twins given by
                                directory, whose kind is not known) */
} twin_data;

/* Worst image metrics of the case against the reference (items with images in both). */
typedef struct image_summary {
    int n;
    double psnr, ssim;       /* worst */
    int identical;           /* every pair equal */
    cJSON *arr;              /* per item */
} image_summary;

/* Everything one classification loads and derives. */
typedef struct cls {
    const rp_cls_inputs *in;
    const rp_classify_opts *o;
    rp_case c;
    char cid[17], rid[17];
    char base[PATHLEN];      /* the twins' reference */
    double floor;            /* a layer's floor (rp_cls_floor) */
    double step_floor;       /* a step output's (rp_cls_step_floor) */
    int N, B;                /* steps, items */
    size_t per;              /* floats per item */
    traj cm, rm, tb;         /* trajectories: case, reference (compared with), twins' base */
    traj ct, bt;             /* teacher runs: the case's, the twins' base's own */
    float *cl, *rl;          /* (B, C, h, w) the final latents the case and the reference
                                returned (their latents artifacts; NULL: not stored) */
    float *cn, *rn;          /* (B, C, h, w) the initial noise each drew (likewise) */
    int ref_local;           /* the reference was made on this machine (not a golden) */
    rp_trace ctr, rtr, tbtr; /* first-evaluation traces */
    rp_trace cttr, bttr;     /* teacher traces: the case's, the base's */
    int have_ctr, have_rtr, have_tbtr, have_bttr;
    int ctr_first, rtr_first; /* the case's / the reference's trace covers its first item only */
    twin_data *tw;
    int n_tw;
    double *acc, *env_acc;   /* (N + 1) free-trajectory distance, and its envelope */
    double *local, *env_step;/* (N) teacher-forced local errors, and their envelope */
    image_summary im;
    rp_cls_facts f;
    double layer_rel, layer_env, step_layer_rel, step_layer_env;
    double invariant_rel;    /* the invariant shadow's relative L2 at its first differing step */
    double emulation_rel;    /* the case's first differing row against its emulation's */
    rp_case rc;              /* the reference's case (have_rc) */
    int have_rc;
    double largest;          /* the largest ratio any checked evidence reached (margins) */
    cJSON *j, *ev, *mt, *envj;
} cls;

/* Records of evaluation eval in t. */
static int trace_count(const rp_trace *t, int eval) {
    int n = 0;
    for (int i = 0; i < t->n; i++) n += t->recs[i].eval == eval;
    return n;
}

/* Index of step k among the steps a teacher mask ran (= its trace's evaluation), or -1. */
static int eval_of_step(const float *mask, int k) {
    if (mask && mask[k] == 0.0f) return -1;
    int e = 0;
    for (int j = 0; mask && j < k; j++) e += mask[j] != 0.0f;
    return mask ? e : k;
}

/* Loads twin t from dir (a failed or unreadable twin is recorded, not an error). */
static void twin_load(twin_data *t, const char *dir) {
    memset(t, 0, sizeof *t);
    rp_trace_init(&t->trace);
    rp_trace_init(&t->teacher_trace);
    snprintf(t->dir, sizeof t->dir, "%s", dir);
    const char *slash = strrchr(dir, '/');
    snprintf(t->name, sizeof t->name, "%.63s", slash ? slash + 1 : dir);
    char p[PATHLEN], td[PATHLEN], aux[PATHLEN], why[300];
    rp_error e;
    rp_store_path(p, sizeof p, dir, RP_ART_LATENTS);
    rp_store_subdir(td, sizeof td, dir, RP_SUB_TEACHER);
    rp_store_path(aux, sizeof aux, dir, RP_ART_AUX);
    /* a twin with other arithmetic may have run teacher-forced only (job_case.c): its first
     * evaluation is its teacher run's step 0, from the same x_T; its status is that run's */
    struct stat sb;
    const int teacher_only = !rp_is_file(p) && !rp_is_file(aux) && stat(td, &sb) == 0;
    t->status = rp_cls_aux_status(teacher_only ? td : dir, t->why, sizeof t->why);
    if (t->status != RP_V_COUNT) return;
    if (!teacher_only && traj_load(p, "trajectory", &t->main, &e) != RP_OK) {
        t->status = RP_V_CRASH;
        snprintf(t->why, sizeof t->why, "%.290s", e.msg);
        return;
    }
    rp_store_path(p, sizeof p, dir, RP_ART_TRACE);
    t->have_trace = !teacher_only && rp_cls_trace_load(p, &t->trace, &e) == RP_OK;
    if (stat(td, &sb) != 0 || rp_cls_aux_status(td, why, sizeof why) != RP_V_COUNT) return;
    rp_store_path(p, sizeof p, td, RP_ART_TEACHER);
    if (traj_load(p, "teacher", &t->teacher, &e) != RP_OK) memset(&t->teacher, 0, sizeof t->teacher);
    rp_store_path(p, sizeof p, td, RP_ART_TRACE);
    t->have_teacher_trace = rp_cls_trace_load(p, &t->teacher_trace, &e) == RP_OK;
}

static void twin_free(twin_data *t) {
    traj_free(&t->main);
    traj_free(&t->teacher);
    rp_trace_free(&t->trace);
    rp_trace_free(&t->teacher_trace);
}

/* The case's images against the reference's (rp_store_compare_images: an item only one
 * of them decoded is an error). */
static rp_status images_compare(const char *rd, const char *cd, int B, image_summary *s, rp_error *err) {
    rp_outputs_cmp c = {.identical = 1, .psnr = INFINITY, .ssim = 1.0};
    s->arr = cJSON_CreateArray();
    if (!s->arr) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    RP_TRY(rp_store_compare_images(rd, cd, B, s->arr, &c, err));
    s->n = c.n_images;
    s->psnr = c.psnr;
    s->ssim = c.ssim;
    s->identical = c.identical;
    return RP_OK;
}

/* 1 when a and b name the same directory (a case compared with itself: a reference). */
static int same_dir(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return !strcmp(a, b);
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* elementwise env[k] = max(env[k], v[k]) over finite v, for k with mask (NULL: all) */
static void env_max(double *env, const double *v, int n, const float *mask) {
    for (int k = 0; k < n; k++)
        if ((!mask || mask[k] != 0.0f) && isfinite(v[k]) && v[k] > env[k]) env[k] = v[k];
}

/* The end of the case's run, and of the classifier's own runs of it (teacher, fresh reruns,
 * decode). */
static void cls_status(cls *x) {
    char why[600], td[PATHLEN];
    rp_cls_facts *f = &x->f;
    f->failed = case_status(x->in->case_dir, f->failed_reason, sizeof f->failed_reason);
    if (f->failed != RP_V_COUNT) return;
    /* the reference's twins measure rounding at its problem and precision: a case posing
     * another has no envelope there, whatever its numbers (a matrix whose reference line, or
     * a harness whose expansion, changed a field no reference may change) */
    char what[300];
    if (x->have_rc && rp_case_problem_diff(&x->c, &x->rc, what, sizeof what)) {
        f->failed = RP_V_CONFIG_ERROR;
        snprintf(f->failed_reason, sizeof f->failed_reason,
                 "the case and its reference pose different problems (%.300s): a reference may differ from its case "
                 "only in how it runs (layout, backend, device, kernels, threads, numerics, injected fault), so "
                 "there is no envelope to judge the case by", what);
        return;
    }
    struct stat sb;
    if (x->in->teacher_dir) snprintf(td, sizeof td, "%s", x->in->teacher_dir);
    else rp_store_subdir(td, sizeof td, x->in->case_dir, RP_SUB_TEACHER);
    if (stat(td, &sb) == 0 && (f->failed = rp_cls_aux_status(td, why, sizeof why)) != RP_V_COUNT) {
        snprintf(f->failed_reason, sizeof f->failed_reason, "teacher-forcing run: %.560s", why);
        return;
    }
    static const char *const MORE[][2] = {
        {"fresh", "fresh rerun"}, {"fresh-2", "second fresh rerun"}};
    for (size_t i = 0; i < sizeof MORE / sizeof MORE[0]; i++) {
        rp_pathf(td, PATHLEN, "%s/%s", x->in->case_dir, MORE[i][0]);
        if (stat(td, &sb) == 0 && (f->failed = rp_cls_aux_status(td, why, sizeof why)) != RP_V_COUNT) {
            snprintf(f->failed_reason, sizeof f->failed_reason, "%s: %.560s", MORE[i][1], why);
            return;
        }
    }
}

/* The three trajectories, the first-evaluation traces, the images and the metrics. */
/* What the auto attention selector chose in the run whose trace is dir/trace.safetensors,
 * as one line into out, returning 1; else "<variant> (forced)" or "" (no trace), returning 0:
 * "flash sdpa-mem-efficient q=64 kv=64 (profile cpu-avx2-8g (avx2, ...): ...; OpenBLAS
 * Haswell)", with the choices for other attention shapes appended. */
static int auto_choice(const char *dir, char *out, size_t cap) {
    char p[4096];
    out[0] = 0;
    rp_store_path(p, sizeof p, dir, RP_ART_TRACE);
    rp_st_file *f = NULL;
    rp_error e;
    if (rp_st_open(p, &f, &e) != RP_OK) return 0;
    const char *att = rp_st_meta(f, "note/attention");
    const char *sum = rp_st_meta(f, "note/attention.auto.summary");
    const char *why = rp_st_meta(f, "note/attention.auto.reason");
    const char *core = rp_st_meta(f, "note/openblas.core");
    const int is_auto = att && !strcmp(att, "auto") && sum;
    if (!is_auto && att) snprintf(out, cap, "%s (forced)", att);
    if (is_auto) {
        size_t n = (size_t)snprintf(out, cap, "%s", sum);
        for (int i = 0; i < f->n_meta && n < cap; i++) {
            const char *k = f->meta_keys[i];
            int x = 0;
            /* per-shape choices: "note/attention.auto.BxHxTqxTkxD" */
            if (strncmp(k, "note/attention.auto.", 20) || !isdigit((unsigned char)k[20])) continue;
            for (const char *c = k + 20; *c; c++) x += *c == 'x';
            if (x != 4) continue;
            n += (size_t)snprintf(out + n, cap - n, "; at %s: %s", k + 20, f->meta_values[i]);
        }
        if (n < cap) n += (size_t)snprintf(out + n, cap - n, " (%s%s%s)", why ? why : "no reason recorded",
                                           core ? "; OpenBLAS " : "", core ? core : "");
    }
    rp_st_close(f);
    return is_auto;
}

/* evidence.attention_auto: when the case or its reference ran attention=auto, what each
 * chose and why, so a report can say "auto chose X here and Y there". */
static void cls_attention_auto(cls *x) {
    char a[1536], r[1536];
    const int ca = auto_choice(x->in->case_dir, a, sizeof a);
    const int ra = auto_choice(x->in->ref_dir, r, sizeof r);
    if (!ca && !ra) return;
    char line[3200];
    snprintf(line, sizeof line, "this case: %s; the reference: %s", a[0] ? a : "no trace", r[0] ? r : "no trace");
    cJSON_AddStringToObject(x->ev, "attention_auto", line);
}

static rp_status cls_load(cls *x, rp_error *err) {
    char p[PATHLEN];
    rp_error e;
    rp_store_path(p, sizeof p, x->in->case_dir, RP_ART_LATENTS);
    RP_TRY(traj_load(p, "trajectory", &x->cm, err));
    rp_store_path(p, sizeof p, x->in->ref_dir, RP_ART_LATENTS);
    RP_TRY(traj_load(p, "trajectory", &x->rm, err));
    rp_store_path(p, sizeof p, x->base, RP_ART_LATENTS);
    RP_TRY(traj_load(p, "trajectory", &x->tb, err));
    if (!traj_same_shape(&x->cm, &x->rm) || !traj_same_shape(&x->cm, &x->tb))
        return RP_FAIL(err, RP_ERR_SHAPE, "%s: its trajectory (%d x %d x %zu: steps + 1, items, values) has another "
                       "shape than its reference's %s (%d x %d x %zu) or the twins' %s: not the same steps and items",
                       x->in->case_dir, x->cm.rows, x->cm.B, x->cm.per, x->in->ref_dir, x->rm.rows, x->rm.B, x->rm.per,
                       x->base);
    x->N = x->cm.rows - 1;
    x->B = x->cm.B;
    x->per = x->cm.per;
    const int N = x->N;
    x->acc = calloc((size_t)N + 1, sizeof *x->acc);
    x->env_acc = calloc((size_t)N + 1, sizeof *x->env_acc);
    x->local = calloc((size_t)N, sizeof *x->local);
    x->env_step = calloc((size_t)N, sizeof *x->env_step);
    if (!x->acc || !x->env_acc || !x->local || !x->env_step) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    rp_cls_rows_rel(x->rm.x, x->cm.x, N + 1, x->B, x->per, x->acc);
    rp_store_path(p, sizeof p, x->in->case_dir, RP_ART_TRACE);
    x->have_ctr = rp_cls_trace_load(p, &x->ctr, &e) == RP_OK;
    x->ctr_first = trace_first_item_only(p);
    rp_store_path(p, sizeof p, x->in->ref_dir, RP_ART_TRACE);
    x->have_rtr = rp_cls_trace_load(p, &x->rtr, &e) == RP_OK;
    x->rtr_first = trace_first_item_only(p);
    rp_store_path(p, sizeof p, x->base, RP_ART_TRACE);
    x->have_tbtr = rp_cls_trace_load(p, &x->tbtr, &e) == RP_OK;
    cls_attention_auto(x);
    RP_TRY(images_compare(x->in->ref_dir, x->in->case_dir, x->B, &x->im, err));
    const size_t n = (size_t)(N + 1) * x->B * x->per, last = (size_t)N * x->B * x->per;
    RP_TRY(returned_load(x->in->case_dir, "latents", x->B, x->per, &x->cl, err));
    RP_TRY(returned_load(x->in->ref_dir, "latents", x->B, x->per, &x->rl, err));
    RP_TRY(returned_load(x->in->case_dir, "noise", x->B, x->per, &x->cn, err));
    RP_TRY(returned_load(x->in->ref_dir, "noise", x->B, x->per, &x->rn, err));
    x->f.identical = memcmp(x->cm.x, x->rm.x, sizeof(float) * n) == 0 && x->im.identical &&
                     (!x->cl || !x->rl || memcmp(x->cl, x->rl, sizeof(float) * (n - last)) == 0);
    rp_latent_metrics lm;
    rp_latent_metrics_compute(x->rm.x + last, x->cm.x + last, (size_t)x->B * x->per, &lm);
    cJSON *l = cJSON_AddObjectToObject(x->mt, "latents");
    put(l, "max_abs", lm.max_abs);
    put(l, "mean_abs", lm.mean_abs);
    put(l, "rel_l2", lm.rel_l2);
    put(l, "cosine", lm.cosine);
    cJSON_AddBoolToObject(l, "bitwise_equal", memcmp(x->cm.x + last, x->rm.x + last, sizeof(float) * (n - last)) == 0);
    cJSON_AddItemToObject(x->mt, "images", x->im.arr);
    x->im.arr = NULL;
    double *steps = malloc(sizeof(double) * (N + 1));
    if (!steps) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    rp_trajectory_rel_l2(x->rm.x, x->cm.x, (size_t)N + 1, (size_t)x->B * x->per, steps);
    cJSON_AddItemToObject(x->mt, "steps", num_array(steps, N + 1, NULL));
    free(steps);
    return RP_OK;
}

/* Twin w's record of layer `name` at the first evaluation (teacher == 0) or at its teacher
 * run's step k (teacher == 1); NULL where it has none. The first evaluation is its teacher
 * run's step 0 where it has one (the reference's x_T, the twin's arithmetic: what a case's
 * first evaluation is held to), else its own run's first unless that started from perturbed
 * noise (the noise twin: no other arithmetic at all). */
static int twin_first(const twin_data *w, const rp_trace **tr, int *eval);

static const rp_trace_rec *twin_rec(const twin_data *w, const char *name, int teacher, int k) {
    const rp_trace *tr;
    int e;
    if (!teacher) return twin_first(w, &tr, &e) ? trace_find(tr, e, name) : NULL;
    if (!w->have_teacher_trace || !w->teacher.rows) return NULL;
    e = eval_of_step(w->teacher.mask, k);
    return e >= 0 ? trace_find(&w->teacher_trace, e, name) : NULL;
}

/* A twin's first evaluation (twin_rec's choice): its trace and that evaluation's index; 0
 * when it has none. */
static int twin_first(const twin_data *w, const rp_trace **tr, int *eval) {
    if (w->have_teacher_trace && w->teacher.rows) {
        *tr = &w->teacher_trace, *eval = eval_of_step(w->teacher.mask, 0);
        return *eval >= 0;
    }
    *tr = &w->trace, *eval = 0;
    return w->have_trace && !w->perturbed;
}

/* (classify.h) */
int rp_cls_twins_not_rounding(const rp_trace *base, int beval, const rp_trace *const *tr, const int *ev, int n,
                              double floor, double factor, unsigned char *out, char (*why)[200]) {
    double rel[RP_CLS_TWIN_KINDS];
    unsigned char moved[RP_CLS_TWIN_KINDS] = {0}; /* it differed at an earlier layer */
    int bad = 0;
    assert(n <= RP_CLS_TWIN_KINDS);
    for (int i = 0; i < base->n && n >= 2; i++) {
        const rp_trace_rec *b = &base->recs[i];
        if (b->eval != beval) continue;
        for (int t = 0; t < n; t++) {
            const rp_trace_rec *r = ev[t] >= 0 ? trace_find(tr[t], ev[t], b->name) : NULL;
            rel[t] = r ? rp_cls_layer_rel(b, r) : NAN;
        }
        for (int t = 0; t < n; t++) {
            if (out[t] || isnan(rel[t])) continue;
            double others = 0;
            for (int u = 0; u < n; u++)
                if (u != t && isfinite(rel[u]) && rel[u] > others) others = rel[u];
            /* Past the twin's first differing layer, a layer every other twin leaves bitwise has
             * no peer measurement: what a rounding upstream grows into through it (a sharpened
             * softmax: x559 the fp32 floor, audit 18, where the BLAS split no GEMM by threads)
             * is not bounded by the floor. At the first differing layer the twin's move is its
             * knob's own arithmetic on the reference's inputs, which the floor does bound. */
            const int no_peer = moved[t] && others == 0.0;
            if (rel[t] > 0.0) moved[t] = 1;
            const double lim = factor * (others > floor ? others : floor);
            if (no_peer || !(rel[t] > lim)) continue;
            out[t] = 1, bad++;
            snprintf(why[t], 200, "not a rounding of the reference: it moves %.48s by %.3g, x%.3g the other twins "
                     "and the floor there (its knob's code path is suspect)", b->name, rel[t], rel[t] / (lim / factor));
        }
    }
    return bad;
}

/* The twins against their reference: the envelope of the free trajectory and of the
 * teacher-forced steps (the base's own teacher run included: the teacher procedure's own
 * rounding, 0 for the samplers whose steps it repeats exactly). */
static rp_status cls_twins(cls *x, rp_error *err) {
    const rp_cls_inputs *in = x->in;
    int kinds[RP_CLS_TWIN_KINDS];
    /* the reference's list (its precision decides the attention twin) */
    /* an invariant pair has no envelope: its twins (if any ran for other cases) are not read */
    const int nd = x->f.invariant ? 0
                   : in->n_twins > 0 ? in->n_twins
                                     : rp_cls_twin_list(x->have_rc ? &x->rc : &x->c, x->o->twins, kinds);
    x->tw = calloc((size_t)(nd > 0 ? nd : 1), sizeof *x->tw);
    double *v = malloc(sizeof(double) * (x->N + 1));
    if (!x->tw || !v) {
        free(v);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    }
    cJSON *twj = cJSON_AddArrayToObject(x->envj, "twins");
    int n_ok = 0;
    for (int t = 0; t < nd; t++) {
        char d[PATHLEN];
        if (in->n_twins > 0) snprintf(d, sizeof d, "%s", in->twin_dirs[t]);
        else rp_store_twin_dir(d, sizeof d, x->base, rp_cls_twin_name(kinds[t]));
        twin_data *w = &x->tw[x->n_tw++];
        twin_load(w, d);
        w->applies = in->n_twins > 0 || !x->have_rc || rp_cls_twin_applies(kinds[t], &x->c, &x->rc);
        w->perturbed = in->n_twins == 0 && TWINS[kinds[t]].noise;
        w->other_math = in->n_twins == 0 && rp_cls_twin_other_math(kinds[t]);
        if (w->status == RP_V_COUNT && w->main.rows && !traj_same_shape(&w->main, &x->tb)) {
            w->status = RP_V_CRASH;
            snprintf(w->why, sizeof w->why, "its trajectory has another shape than its reference's");
        }
    }
    /* a twin that is no rounding of the reference leaves the envelope, loudly */
    if (x->have_tbtr && x->n_tw <= RP_CLS_TWIN_KINDS) {
        const rp_trace *tr[RP_CLS_TWIN_KINDS];
        int ev[RP_CLS_TWIN_KINDS];
        unsigned char out[RP_CLS_TWIN_KINDS] = {0};
        char why[RP_CLS_TWIN_KINDS][200];
        for (int t = 0; t < x->n_tw; t++)
            if (x->tw[t].status != RP_V_COUNT || !twin_first(&x->tw[t], &tr[t], &ev[t])) ev[t] = -1;
        rp_cls_twins_not_rounding(&x->tbtr, 0, tr, ev, x->n_tw, x->floor, x->o->factor, out, why);
        for (int t = 0; t < x->n_tw; t++)
            if (out[t]) {
                x->tw[t].status = RP_V_BUG;
                snprintf(x->tw[t].why, sizeof x->tw[t].why, "%.199s", why[t]);
                snprintf(x->f.twin_rejected, sizeof x->f.twin_rejected, "twin %.63s: %.199s", x->tw[t].name, why[t]);
            }
    }
    for (int t = 0; t < x->n_tw; t++) {
        twin_data *w = &x->tw[t];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", w->name);
        cJSON_AddStringToObject(o, "status", w->status == RP_V_COUNT ? "ok" : rp_verdict_name(w->status));
        if (w->why[0]) cJSON_AddStringToObject(o, "reason", w->why);
        cJSON_AddBoolToObject(o, "teacher", w->teacher.rows > 0);
        if (!w->applies) cJSON_AddBoolToObject(o, "applies", 0);
        cJSON_AddItemToArray(twj, o);
        if (w->status != RP_V_COUNT) continue;
        n_ok++;
        if (!w->applies) continue;
        if (w->main.rows) { /* a free run (not a teacher-only twin) */
            rp_cls_rows_rel(x->tb.x, w->main.x, x->N + 1, x->B, x->per, v);
            env_max(x->env_acc, v, x->N + 1, NULL);
        }
        if (w->teacher.rows && traj_same_shape(&w->teacher, &x->tb)) {
            rp_cls_rows_rel(x->tb.x, w->teacher.x, x->N + 1, x->B, x->per, v);
            env_max(x->env_step, v + 1, x->N, w->teacher.mask);
        }
    }
    cJSON_AddNumberToObject(x->envj, "twins_ok", n_ok);
    char td[PATHLEN], p[PATHLEN], why[300];
    rp_error e;
    rp_store_subdir(td, sizeof td, x->base, RP_SUB_TEACHER);
    rp_store_path(p, sizeof p, td, RP_ART_TEACHER);
    struct stat sb;
    if (stat(td, &sb) == 0 && rp_cls_aux_status(td, why, sizeof why) == RP_V_COUNT &&
        traj_load(p, "teacher", &x->bt, &e) == RP_OK) {
        if (traj_same_shape(&x->bt, &x->tb)) {
            rp_cls_rows_rel(x->tb.x, x->bt.x, x->N + 1, x->B, x->per, v);
            env_max(x->env_step, v + 1, x->N, x->bt.mask);
            cJSON_AddItemToObject(x->envj, "reference_teacher", num_array(v + 1, x->N, NULL));
            rp_store_path(p, sizeof p, td, RP_ART_TRACE);
            x->have_bttr = rp_cls_trace_load(p, &x->bttr, &e) == RP_OK;
        } else {
            traj_free(&x->bt);
        }
    }
    free(v);
    return RP_OK;
}

/* The envelope of layer `name` at evaluation `eval` of the base's trace (first evaluation:
 * the twins' main traces; teacher == 1: their teacher traces at step k). */
static double layer_envelope(const cls *x, const rp_trace_rec *base, int teacher, int k) {
    double env = 0;
    for (int t = 0; base && t < x->n_tw; t++) {
        const twin_data *w = &x->tw[t];
        if (w->status != RP_V_COUNT || !w->applies) continue;
        const rp_trace_rec *r = twin_rec(w, base->name, teacher, k);
        const double v = r ? rp_cls_layer_rel(base, r) : 0;
        if (isfinite(v) && v > env) env = v;
    }
    return env;
}

/* Whether the first evaluation's layer `base` is one no legitimate change of the arithmetic
 * touches: at least two twins of other arithmetic (another reduction order, thread count or
 * attention algorithm, not only the noise) ran, recorded it and left it bitwise, and the case
 * computes at the reference's precision on its device with its BLAS kernel set (no twin
 * changes the kernels: a short product no twin reorders may still round otherwise there).
 * Such a layer (a table lookup: DiT's y_embedder) has no rounding to drift by, so the floor,
 * which stands for roundings a twin may happen not to show, does not apply: any difference
 * is a bug (audit 17: the unconditional half's class rows rounded to bf16 sat at x2.36 of
 * bf16's floor). */
static int layer_untouched(const cls *x, const rp_trace_rec *base) {
    if (!base || !x->have_rc || !x->ref_local || !same_device(&x->c, &x->rc) ||
        strcmp(x->c.blas_core, x->rc.blas_core) ||
        strcmp(rp_cls_effective_precision(&x->c), rp_cls_effective_precision(&x->rc)))
        return 0;
    int seen = 0;
    for (int t = 0; t < x->n_tw; t++) {
        const twin_data *w = &x->tw[t];
        if (w->status != RP_V_COUNT || !w->applies || !w->other_math) continue;
        const rp_trace_rec *r = twin_rec(w, base->name, 0, 0);
        if (!r) continue;
        if (rp_cls_layer_rel(base, r) != 0.0) return 0;
        seen++;
    }
    return seen >= 2;
}

/* The layers of teacher-forced step k: the case's record of each layer against the base's
 * own teacher run's (the same input x_k, so only rounding separates them), each ratio to
 * that layer's envelope at k. env(ctx, base record, k) gives the envelope. Returns the first
 * layer in execution order whose ratio exceeds factor (its record in the base's trace), or
 * NULL; *largest (may be NULL) is raised to the step's largest finite ratio, *hit_rel and
 * *hit_env get the hit's numbers. Layers the case's trace lacks are skipped. */
typedef double (*layer_env_fn)(const void *ctx, const rp_trace_rec *base, int k);
static const rp_trace_rec *step_layer_break(const rp_trace *ct, const float *cmask, const rp_trace *bt,
                                            const float *bmask, int k, layer_env_fn env, const void *ctx,
                                            double floor, double factor, double *largest, double *hit_ratio,
                                            double *hit_rel, double *hit_env) {
    const int ec = eval_of_step(cmask, k), eb = eval_of_step(bmask, k);
    if (ec < 0 || eb < 0) return NULL;
    const rp_trace_rec *hit = NULL;
    for (int i = 0; i < bt->n; i++) {
        const rp_trace_rec *r = &bt->recs[i];
        const rp_trace_rec *q = r->eval == eb ? trace_find(ct, ec, r->name) : NULL;
        if (!q) continue;
        const double rel = rp_cls_layer_rel(r, q), e = env(ctx, r, k);
        const double ratio = rp_cls_ratio(rel, e, floor);
        if (largest && isfinite(ratio) && ratio > *largest) *largest = ratio;
        if (!hit && ratio > factor) {
            hit = r;
            *hit_ratio = ratio, *hit_rel = rel, *hit_env = e;
            if (!largest) break;
        }
    }
    return hit;
}

/* The number of layers step k's evaluation has in both traces (the comparisons
 * step_layer_break makes there). */
static int step_layers_compared(const rp_trace *ct, const float *cmask, const rp_trace *bt, const float *bmask,
                                int k) {
    const int ec = eval_of_step(cmask, k), eb = eval_of_step(bmask, k);
    int n = 0;
    for (int i = 0; ec >= 0 && eb >= 0 && i < bt->n; i++)
        n += bt->recs[i].eval == eb && trace_find(ct, ec, bt->recs[i].name) != NULL;
    return n;
}

/* The items of step k whose own local error (ref's row k + 1 against got's, per item)
 * breaks factor x env into out (64 bytes: "item 3", "items 1, 3"), or "" when every item's
 * does: a fault in one item's conditioning, guidance or routing shows in its row only. */
static void items_of(cls *x, const float *ref, const float *got, int k, double env, double floor, char *out) {
    const size_t row = (size_t)(k + 1) * x->B * x->per;
    int n = 0, len = 0;
    char list[64] = "";
    for (int b = 0; b < x->B; b++) {
        const double r = rp_cls_ratio(rp_cls_rel_l2(ref + row + (size_t)b * x->per, got + row + (size_t)b * x->per,
                                                    x->per), env, floor);
        if (!(r > x->o->factor)) continue;
        n++;
        if (len < (int)sizeof list) len += snprintf(list + len, sizeof list - (size_t)len, "%s%d", n > 1 ? ", " : "", b);
    }
    out[0] = '\0';
    if (n > 0 && n < x->B) snprintf(out, 64, "item%s %s", n > 1 ? "s" : "", list);
}

/* A step break that no traced layer of the step explains (facts step_after_model): with
 * every layer of the model's evaluation compared and within its envelope, what differs is
 * computed after the model's last layer — the guidance combine (CFG) and the sampler's
 * update (its schedule of timesteps and sigmas, its coefficients). Named as that stage. */
static void step_after_model(cls *x, const rp_trace *ct, const float *cmask, const rp_trace *bt, const float *bmask) {
    rp_cls_facts *f = &x->f;
    if (f->step_break < 0 || f->step_layer[0] || !step_layers_compared(ct, cmask, bt, bmask, f->step_break)) return;
    /* a trace of the first item only (traces_comparable): the other items' layers were
     * never compared, so elimination names nothing there (audit 12: a per-item timestep
     * rounded on one rank's later items was named the guidance combine) */
    if (x->B > 1 && x->ctr_first) return;
    f->step_after_model = 1;
    snprintf(f->step_layer, sizeof f->step_layer, "%s", x->c.cfg > 1 ? "guidance+sampler.update" : "sampler.update");
}

/* layer_env_fn of the case's teacher run: the twins' teacher traces (layer_envelope). */
static double teacher_layer_env(const void *ctx, const rp_trace_rec *base, int k) {
    return layer_envelope(ctx, base, 1, k);
}

/* Evidence 2: the first evaluation, layer by layer. */
/* 1 when the case's traces and its reference's record the same items. A batch run one
 * item per forward (batch_forward per-item) under a layout traces every item where a
 * joint forward has it (pipeline.c, rp_par_trace_hold), as a joint run does; one without
 * a layout (a plain generate) and any made before that traced its first item only (note
 * "trace_items" first), and such a trace cannot be compared record by record with one of
 * every item (audit 7: a per-item case against a joint reference was "pos_embed breaks the
 * envelope xinf"). */
static int traces_comparable(const cls *x) {
    return !x->have_rc || x->ctr_first == x->rtr_first;
}

static void cls_layers(cls *x) {
    cJSON *layers = cJSON_AddArrayToObject(x->ev, "layers");
    cJSON *envl = cJSON_AddArrayToObject(x->envj, "layers");
    if (!x->have_rtr || !x->have_ctr || !x->have_tbtr) {
        cJSON_AddStringToObject(x->ev, "layers_note", "no trace to compare (the case's, the reference's or the twins')");
        return;
    }
    if (!traces_comparable(x)) {
        cJSON_AddStringToObject(x->ev, "layers_note", "the case and its reference trace other items (one traced "
                                "its first item only: note trace_items): layers not compared, the steps are");
        return;
    }
    /* a layout whose ranks never all reach a layer (pipefusion's stages) records none */
    if (trace_count(&x->ctr, 0) == 0) {
        cJSON_AddStringToObject(x->ev, "layers_note", "the case recorded no per-layer trace (e.g. pipefusion: its "
                                "stages run different blocks); layers not compared");
        return;
    }
    /* an approximate case's first evaluation is exact only when it is a warmup step */
    const int check = !x->f.approx || x->c.warmup_steps >= 1;
    for (int i = 0; i < x->rtr.n; i++) {
        const rp_trace_rec *r = &x->rtr.recs[i];
        if (r->eval != 0) continue;
        const double rel = rp_cls_layer_rel(r, trace_find(&x->ctr, 0, r->name));
        const rp_trace_rec *tb = trace_find(&x->tbtr, 0, r->name);
        const double env = layer_envelope(x, tb, 0, 0);
        const int untouched = env == 0.0 && layer_untouched(x, tb);
        const double ratio = rp_cls_ratio(rel, env, untouched ? 0.0 : x->floor);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", r->name);
        put(e, "rel", env);
        cJSON_AddItemToArray(envl, e);
        e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", r->name);
        put(e, "rel", rel);
        put(e, "envelope", env);
        put(e, "ratio", ratio);
        cJSON_AddItemToArray(layers, e);
        if (check && isfinite(ratio) && ratio > x->largest) x->largest = ratio;
        if (check && x->f.layer_break < 0 && ratio > x->o->factor) {
            x->f.layer_break = i;
            x->f.layer_ratio = ratio;
            x->f.layer_exact = untouched;
            snprintf(x->f.layer_name, sizeof x->f.layer_name, "%s", r->name);
            x->layer_rel = rel;
            x->layer_env = env;
        }
    }
}

/* What the case's run was configured with and ran, from its trace's notes, against what
 * case.json asks for. A field the harness or the engine silently dropped on the way to the run
 * leaves a case that tests something else than it names, whose numbers are that other
 * thing's (bitwise its reference's, or its rounding): the comparison of two runs cannot see it,
 * the record of the run can.
 *   The context (rp_ctx_trace_notes: what the worker configured from case.json, harness/worker/
 * job_case.c), the request (the pipeline's steps) and the layout the parallel layer holds
 * (rp_par_trace_notes: degrees, an approximate strategy's warmup, PipeFusion's patches): each
 * must be the case's value (the
 * pipeline's cfg note is the effective scale, 1 where a flow model runs unguided, no echo).
 * (The precision only on the CPU: on a GPU the host parts run at the precision the device's
 * mapping gives.)
 *   The kernels (rp_attn_note_ran: "note/attention.ran.<kind>" = "q=.. kv=..", noted by each
 * variant's entry point and by the device dispatcher): another kind than the variant asked,
 * undeclared (a device's documented substitution notes "attention.fallback.<kind>" with its
 * reason), or tiles other than the ones asked (audit 22: flash falling back to math on a key
 * count, bitwise the math reference, "identical"). auto (its pick is the trace's
 * attention.auto notes) and invariant numerics (one canonical attention) ask for no kernel.
 *   The GEMMs (engine/gemm.c: "note/gemm.ran.split" / "unsplit" for a K reduction of two or
 * more terms, "blas" / "invariant" for the product's code), on the CPU: a note the case's
 * reduce_split or numerics forbids. */
static void cls_asked(cls *x) {
    const rp_case *c = &x->c;
    char p[PATHLEN];
    rp_store_path(p, sizeof p, x->in->case_dir, RP_ART_TRACE);
    rp_st_file *f = NULL;
    rp_error e;
    if (rp_st_open(p, &f, &e) != RP_OK) return; /* no trace: the layers' evidence says so */
    rp_cls_facts *fa = &x->f;
    char ints[7][24], degs[256];
    snprintf(ints[0], sizeof ints[0], "%d", c->threads);
    snprintf(ints[1], sizeof ints[1], "%d", c->reduce_split ? 1 : 0);
    snprintf(ints[2], sizeof ints[2], "%d", c->attn_q_chunk);
    snprintf(ints[3], sizeof ints[3], "%d", c->attn_kv_chunk);
    snprintf(ints[4], sizeof ints[4], "%d", c->steps);
    snprintf(ints[5], sizeof ints[5], "%d", c->warmup_steps);
    /* num_pipeline_patch 0 asks for one patch per stage */
    snprintf(ints[6], sizeof ints[6], "%d", c->num_pipeline_patch ? c->num_pipeline_patch : c->pipefusion);
    rp_par_named_text(&c->deg, "=", " ", degs, sizeof degs);
    const int cpu = !rp_device_name_is_cuda(c->device);
    const struct { const char *note, *field, *want; int check; } knobs[] = {
        {"threads", "threads", ints[0], 1},
        {"reduce_split", "reduce_split", ints[1], 1},
        {"numerics", "numerics", c->numerics, 1},
        {"precision", "precision", c->precision, cpu},
        {"attention", "attention", c->attention, 1},
        {"attention.q_chunk", "attn_q_chunk", ints[2], 1},
        {"attention.kv_chunk", "attn_kv_chunk", ints[3], 1},
        {"openblas.coretype", "blas_core", c->blas_core[0] ? c->blas_core : "default", 1},
        {"steps", "steps", ints[4], 1},
        {"par.degrees", "degrees", degs, 1},
        {"par.warmup", "warmup_steps", ints[5], 1},               /* noted by approximate strategies */
        {"par.pipeline_patches", "num_pipeline_patch", ints[6], 1}, /* noted by PipeFusion */
    };
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0] && !fa->ran_break; i++) {
        char k[64];
        snprintf(k, sizeof k, "note/%s", knobs[i].note);
        const char *v = rp_st_meta(f, k);
        if (!knobs[i].check || !v || !strcmp(v, knobs[i].want)) continue; /* an older trace notes less */
        fa->ran_break = 1;
        snprintf(fa->ran_what, sizeof fa->ran_what, "configuration");
        snprintf(fa->ran_msg, sizeof fa->ran_msg,
                 "the run was configured with %s %s while case.json asks for %s: the field did not reach the run, "
                 "so the case did not run what it names", knobs[i].field, v, knobs[i].want);
    }
    /* the GEMMs' own notes (engine/gemm.c note_ran), on the CPU where every product is
     * rp_gemm's: one the case's knobs forbid is a GEMM that did not take them */
    const int inv = !strcmp(c->numerics, "invariant");
    const struct { const char *note, *field, *want, *did; int check; } gemms[] = {
        {"note/gemm.ran.unsplit", "reduce_split", "1", "summed its K reduction in one piece", c->reduce_split},
        {"note/gemm.ran.split", "reduce_split", "0", "split its K reduction in two", !c->reduce_split},
        {"note/gemm.ran.blas", "numerics", "invariant", "ran the library's product", inv},
        {"note/gemm.ran.invariant", "numerics", "default", "ran the invariant product", !inv},
    };
    for (size_t i = 0; cpu && i < sizeof gemms / sizeof gemms[0] && !fa->ran_break; i++) {
        if (!gemms[i].check || !rp_st_meta(f, gemms[i].note)) continue;
        fa->ran_break = 1;
        snprintf(fa->ran_what, sizeof fa->ran_what, "configuration");
        snprintf(fa->ran_msg, sizeof fa->ran_msg,
                 "case.json asks for %s %s, and the run was configured so, but a GEMM %s (its trace note %s): the "
                 "knob did not reach every GEMM, so the case did not run what it names", gemms[i].field,
                 gemms[i].want, gemms[i].did, gemms[i].note + 5);
    }
    const int asks_kernel = strcmp(c->attention, "auto") && strcmp(c->numerics, "invariant");
    static const char KEY[] = "note/attention.ran.";
    char ran[200] = "";
    size_t len = 0;
    for (int i = 0; i < f->n_meta; i++) {
        const char *k = f->meta_keys[i], *v = f->meta_values[i];
        if (strncmp(k, KEY, sizeof KEY - 1)) continue;
        const char *kind = k + sizeof KEY - 1;
        if (len < sizeof ran)
            len += (size_t)snprintf(ran + len, sizeof ran - len, "%s%s (%s)", len ? ", " : "", kind, v);
        if (!asks_kernel || fa->ran_break) continue;
        int q = 0, kv = 0;
        if (sscanf(v, "q=%d kv=%d", &q, &kv) != 2) q = kv = 0;
        char fk[96];
        snprintf(fk, sizeof fk, "note/attention.fallback.%s", kind);
        if (strcmp(kind, c->attention) && !rp_st_meta(f, fk)) {
            fa->ran_break = 1;
            snprintf(fa->ran_msg, sizeof fa->ran_msg,
                     "the case asks for attention %s but the %s kernel ran (%s), with no reason given: the engine "
                     "replaced the variant, so the case did not run what it names (its bits are another variant's)",
                     c->attention, kind, v);
        } else if (!strcmp(kind, c->attention) && ((c->attn_q_chunk > 0 && q > 0 && q != c->attn_q_chunk) ||
                                                   (c->attn_kv_chunk > 0 && kv > 0 && kv != c->attn_kv_chunk))) {
            fa->ran_break = 1;
            snprintf(fa->ran_msg, sizeof fa->ran_msg,
                     "the case asks for attention %s with q chunk %d, kv chunk %d but its kernel ran with %s: the engine "
                     "changed the tiles the case names", c->attention, c->attn_q_chunk, c->attn_kv_chunk, v);
        }
        if (fa->ran_break) snprintf(fa->ran_what, sizeof fa->ran_what, "attention kernel");
    }
    rp_st_close(f);
    if (len) cJSON_AddStringToObject(x->ev, "attention_kernels", ran);
}

/* 1 when a and b are equal or adjacent floats. */
static int within_one_ulp(float a, float b) { return a == b || nextafterf(a, b) == b; }

/* Item b's initial noise drawn here from case.json's seed and the item's index (rp_randn,
 * RP_STREAM_INIT_NOISE: the pipeline's contract, engine/pipeline/pipeline.h) against the noise
 * the run returned: the reference is no independent witness of the draw, since an item
 * selection that loses seed bits (audit 22: seeds >= 2^32 cut to 32 bits) acts in it too.
 * Each value within one float ulp of the draw: rp_randn computes in double and rounds once to
 * float, so a libm of another host (a run on another node) that rounds a log or cos otherwise
 * moves a value at most to the adjacent float; another seed or index moves every value by
 * O(1). (The reference made here holds the noise bitwise, cls_noise.) An injected noise fault
 * is a BUG by design and is named here as well. */
static void cls_noise_draw(cls *x) {
    if (!x->cn || x->B != x->c.n_items) return;
    float *mine = malloc(sizeof(float) * x->per);
    if (!mine) return;
    for (int b = 0; b < x->B; b++) {
        rp_randn(mine, x->per, x->c.items[b].seed, (uint64_t)b, RP_STREAM_INIT_NOISE);
        const float *got = x->cn + (size_t)b * x->per;
        size_t i = 0;
        while (i < x->per && within_one_ulp(mine[i], got[i])) i++;
        if (i == x->per) continue;
        x->f.noise_draw_break = b;
        snprintf(x->f.noise_draw_msg, sizeof x->f.noise_draw_msg,
                 "item %d's initial noise is not the draw of its seed %llu at index %d (rel-L2 %.3g against the noise "
                 "drawn here from case.json): every item's noise is that draw in every layout, precision and device, "
                 "so the run used another seed or index (its item selection)",
                 b, (unsigned long long)x->c.items[b].seed, b, rp_cls_rel_l2(mine, got, x->per));
        break;
    }
    free(mine);
    cJSON *nz = cJSON_GetObjectItemCaseSensitive(x->ev, "initial_noise");
    if (nz) cJSON_AddStringToObject(nz, "drawn_here", x->f.noise_draw_break < 0 ? "within one ulp" : "differs");
}

/* The schedule the run used (latents.safetensors: its timesteps, and a flow model's sigmas and
 * model timesteps, DiT's alphas_cumprod) against the reference's: host arithmetic in double
 * from the problem alone (steps, sampler, model, image size), which no layout, precision or
 * device enters, so on one machine any difference is a run that used another schedule than
 * its problem's (audit 23: a flow schedule computed for another step count under sequence
 * parallelism, named before only by elimination as "the sampler's update"); against a golden
 * from another host, beyond 1e-12 relative (its libm may round the shift's exp or log
 * otherwise). The step named is the first that reads a differing entry: step k's model
 * takes timesteps[k]; its update reads sigmas[k] and sigmas[k + 1] (alphas_cumprod[k] and
 * [k + 1]), so entry k of those is read first by step k - 1. */
static void cls_schedule(cls *x) {
    if (x->f.ran_break || x->f.is_reference) return;
    static const struct { const char *name; int ahead; } ARR[] = {
        {"timesteps", 0}, {"model_timesteps", 0}, {"sigmas", 1}, {"alphas_cumprod", 1}};
    char pc[PATHLEN], pr[PATHLEN];
    rp_store_path(pc, sizeof pc, x->in->case_dir, RP_ART_LATENTS);
    rp_store_path(pr, sizeof pr, x->in->ref_dir, RP_ART_LATENTS);
    rp_st_file *fc = NULL, *fr = NULL;
    rp_error e;
    if (rp_st_open(pc, &fc, &e) != RP_OK) return;
    if (rp_st_open(pr, &fr, &e) != RP_OK) {
        rp_st_close(fc);
        return;
    }
    int brk = -1;
    for (size_t i = 0; i < sizeof ARR / sizeof ARR[0]; i++) {
        const rp_st_tensor *a = rp_st_find(fc, ARR[i].name), *b = rp_st_find(fr, ARR[i].name);
        if (!a || !b || a->dtype != RP_DT_F64 || b->dtype != RP_DT_F64) continue; /* an older store: unchecked */
        size_t k = 0;
        const size_t n = a->numel < b->numel ? a->numel : b->numel;
        double va = 0, vb = 0;
        for (; k < n; k++) {
            memcpy(&va, (const char *)a->data + 8 * k, 8);
            memcpy(&vb, (const char *)b->data + 8 * k, 8);
            const int same = x->ref_local ? !memcmp(&va, &vb, 8)
                                          : fabs(va - vb) <= 1e-12 * fmax(fabs(va), fabs(vb));
            if (!same) break;
        }
        if (k == n && a->numel == b->numel) continue;
        int step = (int)k - ARR[i].ahead;
        step = step < 0 ? 0 : step >= x->N ? x->N - 1 : step;
        if (brk >= 0 && step >= brk) continue; /* an earlier step is named already */
        brk = step;
        x->f.ran_step = step;
        snprintf(x->f.ran_what, sizeof x->f.ran_what, "schedule");
        if (k < n)
            snprintf(x->f.ran_msg, sizeof x->f.ran_msg,
                     "the run's schedule is not its problem's: its %s[%zu], which step %d reads, is %.17g where the "
                     "reference's is %.17g; the schedule is host arithmetic from the steps, sampler, model and size "
                     "alone, the same in every layout, precision and device, so the run computed its steps with "
                     "another one", ARR[i].name, k, step, va, vb);
        else
            snprintf(x->f.ran_msg, sizeof x->f.ran_msg,
                     "the run's schedule is not its problem's: its %s has %zu entries where the reference's has %zu",
                     ARR[i].name, a->numel, b->numel);
    }
    x->f.ran_break = brk >= 0;
    rp_st_close(fc);
    rp_st_close(fr);
    cJSON_AddStringToObject(x->ev, "schedule", brk < 0 ? "the reference's" : "differs");
}

/* Evidence 1b: the initial noise (the noise each run returned; an older store without it: the
 * trajectory's first row). Every item's noise is a pure
 * function of its seed and index drawn on the host (engine/rng.c: Philox, then Box-Muller in
 * double rounded once to float), before any layout, precision or device touches it. Against
 * a reference made on this machine it is therefore bitwise, and any difference is a bug
 * however small (one dp group's noise rounded to bf16 is 2^-9 relative: inside a bf16
 * envelope). Against a golden from another machine, whose libm may round a double a sub-ulp
 * differently, it is held to its envelope with fp32's floor: the noise is fp32 whatever
 * precision the case computes in.
 * Then the trajectory's first row against the noise the case itself returned: every sampler
 * starts from the noise as drawn, so a first row that is not it was changed after the
 * sampler wrote it (a gather or copy of the returned trajectory), not drawn wrong; that is
 * named as such instead of as a noise bug (the trajectory is what every other check reads). */
static void cls_noise(cls *x) {
    const size_t n = (size_t)x->B * x->per;
    const int exact = x->ref_local;
    const int stored = x->cn && x->rn;
    const float *cn = stored ? x->cn : x->cm.x, *rn = stored ? x->rn : x->rm.x; /* (B, C, h, w) */
    const int differs = memcmp(cn, rn, sizeof(float) * n) != 0;
    const double rel = stored ? rp_cls_rel_l2(rn, cn, n) : x->acc[0];
    const double r = exact ? (differs ? INFINITY : 0.0)
                           : rp_cls_ratio(rel, x->env_acc[0], rp_cls_unit_roundoff("fp32"));
    if (isfinite(r) && r > x->largest) x->largest = r;
    cJSON *nz = cJSON_AddObjectToObject(x->ev, "initial_noise");
    cJSON_AddStringToObject(nz, "rule", exact ? "bitwise" : "envelope");
    cJSON_AddStringToObject(nz, "read", stored ? "the returned noise" : "the trajectory's first row");
    put(nz, "rel", rel);
    put(nz, "envelope", x->env_acc[0]);
    put(nz, "ratio", r);
    if (exact ? differs : r > x->o->factor) {
        x->f.noise_break = 1;
        x->f.noise_ratio = r;
        x->f.noise_exact = exact;
        x->f.noise_rel = rel;
    }
    if (!x->cn) return;
    for (int b = 0; b < x->B; b++) {
        const float *row0 = x->cm.x + (size_t)b * x->per; /* (C, h, w) */
        if (!memcmp(row0, x->cn + (size_t)b * x->per, sizeof(float) * x->per)) continue;
        x->f.trajectory_break = b;
        snprintf(x->f.trajectory_msg, sizeof x->f.trajectory_msg,
                 "the trajectory returned for item %d does not start at the noise the run drew (rel-L2 %.3g): every "
                 "sampler starts from the noise as drawn, so the trajectory was changed after the sampler wrote it "
                 "(a gather or copy of the returned rows)", b, rp_cls_rel_l2(x->cn + (size_t)b * x->per, row0, x->per));
        cJSON_AddStringToObject(nz, "trajectory_start", x->f.trajectory_msg);
        return;
    }
    cJSON_AddStringToObject(nz, "trajectory_start", "the noise");
}

/* The teacher run's rows that are its input, not its work: row 0 (the run starts from the
 * reference's row 0), row k + 1 of every step k it did not run (copied from the reference's
 * row k + 1) and the row every step it ran started from, as its loop took it (the file's
 * "input"), bitwise the reference's for every item. A row that is not, while the case's own
 * run started from the right noise (drawn here and the reference's), was fed by the harness
 * from another item or step (audit 22: dp groups given another group's rows; a step fed its
 * neighbour's row): the local errors then measure that, not the case's steps. The row it
 * was is looked up among the reference's, so the message says whose it was. Every run
 * forced from a reference's trajectory is held so, each to the rows it was forced from
 * (from): the case's teacher run to the reference's (against a golden, the golden's), its
 * shadows to the base's (the twins' reference, whose shadows they are compared with); the
 * first such row found is the finding. */
static void cls_teacher_input(cls *x, const traj *run, const traj *from, const char *what) {
    if (x->f.teacher_input_break >= 0 || !traj_same_shape(run, from)) return; /* the first finding stands */
    if (x->f.noise_break || x->f.noise_draw_break >= 0 || x->f.trajectory_break >= 0) return;
    const size_t row = (size_t)x->B * x->per, per = x->per;
    for (int k = -1; k < x->N; k++) {
        /* the row the run holds as an input and the reference row it must be: the teacher
         * trajectory's row 0 (its x_0); a step not run, its copied row k + 1 (the next step's
         * start); a step that ran, the row it started from (teacher.safetensors "input") */
        const int ran = k >= 0 && (!run->mask || run->mask[k] != 0.0f);
        if (ran && !run->input) continue; /* a file written before the inputs were kept */
        const size_t r = k < 0 ? 0 : ran ? (size_t)k : (size_t)k + 1;
        const float *held = k < 0 ? run->x : ran ? run->input + (size_t)k * row : run->x + r * row;
        for (int b = 0; b < x->B; b++) {
            const float *t = held + (size_t)b * per, *ref = from->x + r * row + (size_t)b * per;
            if (!memcmp(t, ref, sizeof(float) * per)) continue;
            /* which reference row it was, if it was one: another item's, another step's */
            char was[96];
            int found = 0;
            for (int m = 0; m < from->rows && !found; m++)
                for (int j = 0; j < x->B && !found; j++)
                    if (!memcmp(t, from->x + (size_t)m * row + (size_t)j * per, sizeof(float) * per)) {
                        snprintf(was, sizeof was, "the reference's row %d of item %d", m, j);
                        found = 1;
                    }
            if (!found)
                snprintf(was, sizeof was, "a row that is none of the reference's (rel-L2 %.3g to its own)",
                         rp_cls_rel_l2(ref, t, per));
            x->f.teacher_input_break = b;
            x->f.teacher_input_step = r < (size_t)x->N ? (int)r : x->N - 1;
            snprintf(x->f.teacher_input_msg, sizeof x->f.teacher_input_msg,
                     "the %s of item %d started step %d from %s, not the reference's row %zu of that item, while "
                     "the case's own run started from the right noise: the harness fed it other rows than the "
                     "reference's (its teacher load, or the item selection that load follows), so its local errors "
                     "are no evidence about the case",
                     what, b, x->f.teacher_input_step, was, r);
            return;
        }
    }
}

/* Evidence 3: the teacher-forced local error of each step, and at the first step beyond the
 * envelope the first layer beyond it (the case's teacher trace against the base's own). */
static rp_status cls_teacher(cls *x, rp_error *err) {
    char td[PATHLEN], p[PATHLEN];
    rp_error e;
    if (x->in->teacher_dir) snprintf(td, sizeof td, "%s", x->in->teacher_dir);
    else rp_store_subdir(td, sizeof td, x->in->case_dir, RP_SUB_TEACHER);
    rp_store_path(p, sizeof p, td, RP_ART_TEACHER);
    if (x->f.is_reference || x->f.identical) { /* nothing to localise */
        /* what a reference's self check (its teacher run, from its own trajectory, at world 1)
         * was fed is still held; an identical case's leak check runs in the rotated layout,
         * whose rows follow the rotated item selection, which that check is there to test */
        traj t;
        if (x->f.is_reference && !x->in->teacher_dir && rp_is_file(p) && traj_load(p, "teacher", &t, &e) == RP_OK) {
            cls_teacher_input(x, &t, &x->rm, "self check");
            traj_free(&t);
        }
        return RP_OK;
    }
    if (!rp_is_file(p) || traj_load(p, "teacher", &x->ct, &e) != RP_OK) {
        x->f.teacher_missing = 1;
        cJSON_AddStringToObject(x->ev, "teacher_note", "no teacher-forcing run: local errors not checked");
        return RP_OK;
    }
    if (!traj_same_shape(&x->ct, &x->cm))
        return RP_FAIL(err, RP_ERR_SHAPE, "%s: the teacher trajectory has another shape than the case's", p);
    cls_teacher_input(x, &x->ct, &x->rm, "teacher-forcing run");
    const int N = x->N;
    double *v = malloc(sizeof(double) * (N + 1));
    unsigned char *ran = calloc((size_t)N + 1, 1), *checked = calloc((size_t)N + 1, 1);
    if (!v || !ran || !checked) {
        free(v), free(ran), free(checked);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    }
    rp_cls_rows_rel(x->rm.x, x->ct.x, N + 1, x->B, x->per, v);
    for (int k = 0; k < N; k++) {
        x->local[k] = v[k + 1];
        ran[k] = (unsigned char)(!x->ct.mask || x->ct.mask[k] != 0.0f);
        /* approximate strategies: only the warmup steps are exact */
        checked[k] = (unsigned char)(ran[k] && k < rp_cls_exact_steps(&x->c));
    }
    cJSON_AddItemToObject(x->ev, "local_errors", num_array(x->local, N, ran));
    cJSON *ch = cJSON_AddArrayToObject(x->ev, "checked_steps");
    for (int k = 0; k < N; k++)
        if (checked[k]) cJSON_AddItemToArray(ch, cJSON_CreateNumber(k));
    double ratio = 0;
    for (int k = 0; k < N; k++) {
        const double r = rp_cls_ratio(x->local[k], x->env_step[k], x->step_floor);
        if (checked[k] && isfinite(r) && r > x->largest) x->largest = r;
    }
    x->f.step_break = rp_cls_first_break(x->local, x->env_step, checked, N, x->step_floor, x->o->factor, &ratio);
    x->f.step_ratio = ratio;
    free(v);
    free(ran);
    /* The layers of every checked step, not only the first evaluation's: a step's output
     * dilutes an error in one layer of many (a kernel wrong only at some timesteps, or by a
     * few roundings in one layer), while each layer of a teacher-forced step has the same
     * input as the base's and its own envelope from the twins' teacher traces. The first
     * step with a layer beyond it is the step break when no step's output broke earlier;
     * at the break the first such layer is named. */
    rp_store_path(p, sizeof p, td, RP_ART_TRACE);
    if (x->have_bttr && traces_comparable(x) && rp_cls_trace_load(p, &x->cttr, &e) == RP_OK) {
        for (int k = 0; k < N; k++) {
            if (!checked[k]) continue;
            double lr = 0, rel = 0, env = 0;
            const rp_trace_rec *hit = step_layer_break(&x->cttr, x->ct.mask, &x->bttr, x->bt.mask, k,
                                                       teacher_layer_env, x, x->floor, x->o->factor,
                                                       &x->largest, &lr, &rel, &env);
            if (!hit || (x->f.step_break >= 0 && x->f.step_break < k) || x->f.step_layer[0]) continue;
            x->f.step_break = k; /* k <= an output break: the earliest evidence */
            x->f.step_ratio = rp_cls_ratio(x->local[k], x->env_step[k], x->step_floor);
            snprintf(x->f.step_layer, sizeof x->f.step_layer, "%s", hit->name);
            x->f.step_layer_ratio = lr;
            x->step_layer_rel = rel;
            x->step_layer_env = env;
        }
        step_after_model(x, &x->cttr, x->ct.mask, &x->bttr, x->bt.mask);
    }
    if (x->f.step_break >= 0)
        items_of(x, x->rm.x, x->ct.x, x->f.step_break, x->env_step[x->f.step_break], x->step_floor,
                 x->f.step_items);
    if (x->f.layer_break >= 0) /* a first evaluation's layer: which items' step 0 it reached */
        items_of(x, x->rm.x, x->ct.x, 0, x->env_step[0], x->step_floor, x->f.layer_items);
    free(checked);
    return RP_OK;
}

/* Evidence 7: the replica checks of the case's run, its teacher run, its fp32 shadow and its
 * invariant shadow (<dir>/replicas.json, written by the worker's rank 0): the earliest copy
 * that differs. Then whether it comes before every other break: an earlier step, or at the
 * same step a tensor earlier in the forward (the initial noise first). */
static void cls_replicas(cls *x) {
    static const rp_store_sub RUN[] = {0, RP_SUB_TEACHER, RP_SUB_SHADOW_TEACHER, RP_SUB_INVARIANT_TEACHER,
                                       RP_SUB_INVARIANT_OWN_TEACHER};
    static const char *const WHAT[] = {"case run", "teacher-forced run", "fp32 shadow", "invariant shadow",
                                       "invariant shadow at the case's precision"};
    rp_cls_facts *f = &x->f;
    cJSON *rj = cJSON_AddArrayToObject(x->ev, "replicas");
    int brk_run = -1, case_checked = 0, case_first = -1; /* the run of the break; the case run's checks */
    int brk_rotated = 0;                                 /* that run's layout was rotated */
    for (int i = 0; i < (int)(sizeof RUN / sizeof *RUN); i++) {
        char d[PATHLEN], p[PATHLEN];
        if (i == 1 && x->in->teacher_dir) snprintf(d, sizeof d, "%s", x->in->teacher_dir);
        else if (i) rp_store_subdir(d, sizeof d, x->in->case_dir, RUN[i]);
        else snprintf(d, sizeof d, "%s", x->in->case_dir);
        rp_store_path(p, sizeof p, d, RP_ART_REPLICAS);
        cJSON *j = NULL;
        rp_error e;
        if (!rp_is_file(p) || rp_store_read_json(p, &j, &e) != RP_OK) continue;
        /* a case bitwise its reference's: its teacher run is its leak check, in the rotated layout */
        const int rotated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "rotated"));
        const char *run = rotated ? "leak check in the rotated layout" : WHAT[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "run", run);
        cJSON_AddNumberToObject(o, "checked", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "checked")));
        const cJSON *fd = cJSON_GetObjectItemCaseSensitive(j, "first_difference");
        const cJSON *un = cJSON_GetObjectItemCaseSensitive(j, "unchecked");
        if (i == 0) {
            case_checked = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "checked")) > 0;
            if (cJSON_IsObject(fd)) case_first = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(fd, "step"));
        }
        if (cJSON_IsString(un)) cJSON_AddStringToObject(o, "unchecked", un->valuestring);
        if (cJSON_IsObject(fd)) {
            cJSON_AddItemToObject(o, "first_difference", cJSON_Duplicate(fd, 1));
            const int step = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(fd, "step"));
            const cJSON *rk = cJSON_GetObjectItemCaseSensitive(fd, "ranks");
            const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fd, "tensor"));
            const char *g = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fd, "group"));
            if (step >= 0 && (f->replica_break < 0 || step < f->replica_break)) {
                f->replica_break = step;
                f->replica_later = i > 0;
                brk_run = i;
                brk_rotated = rotated;
                const int gather = g && !strcmp(g, "gather"); /* rank 0's gathered copy, a host copy */
                const int stale = g && !strcmp(g, "stale");   /* the layout's contracts, checked on the host */
                f->replica_host = g && (!strcmp(g, "world") || gather || stale);
                f->replica_gather = gather;
                f->replica_stale = stale;
                f->replica_own = g && !strcmp(g, "own");
                snprintf(f->replica_tensor, sizeof f->replica_tensor, "%s", t ? t : "?");
                const int ra = (int)cJSON_GetNumberValue(cJSON_GetArrayItem(rk, 0)),
                          rb = (int)cJSON_GetNumberValue(cJSON_GetArrayItem(rk, 1));
                const char *what = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fd, "other"));
                if (f->replica_own) /* what: the computation recomputed ("ring attention", "flash attention") */
                    snprintf(f->replica_msg, sizeof f->replica_msg,
                             "rank %d's %s differs from its own recomputation from the same inputs "
                             "(the same operations in the same order: own check, %s)", rb,
                             what && what[0] ? what : "attention", run);
                else if (stale) /* what: the contract's due value */
                    snprintf(f->replica_msg, sizeof f->replica_msg,
                             "rank %d used other bits than its layout's contract names (%s; exact in any "
                             "precision, %s)", rb, what && what[0] ? what : "?", run);
                else if (gather)
                    snprintf(f->replica_msg, sizeof f->replica_msg,
                             "rank 0's gathered copy differs from what rank %d, dp group %d's leader, holds "
                             "(the dp gather, %s)", ra,
                             (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(fd, "dp_group")), run);
                else
                    snprintf(f->replica_msg, sizeof f->replica_msg,
                             "rank %d's copy differs from rank %d's (%s group, %s)", rb, ra, g ? g : "?", run);
            }
        }
        cJSON_AddItemToArray(rj, o);
        cJSON_Delete(j);
    }
    if (f->replica_break < 0) return;
    /* Copies that agreed in the case run and differ at step 0 of its teacher-forced run (the
     * launch's later call, with the case's arithmetic and, when the initial noise is the
     * reference's, the case's inputs) can differ only by what the process kept between the
     * calls (audit 14: one rank's noise stream offset from the second call on, named as a
     * replica of the teacher run): say so. */
    const size_t row = (size_t)x->B * x->per;
    if (brk_run == 1 && !brk_rotated && f->replica_break == 0 && case_checked && case_first != 0 &&
        !f->replica_own && !f->replica_stale && !memcmp(x->cm.x, x->rm.x, sizeof(float) * row)) {
        char m[sizeof f->replica_msg];
        snprintf(m, sizeof m, "%s", f->replica_msg);
        snprintf(f->replica_msg, sizeof f->replica_msg,
                 "state kept between calls: %.255s, where the case run's copies agreed from the same inputs", m);
    }
    /* a gathered copy that is not what its group holds: the stored trajectory every other
     * comparison of the case reads is not the one computed, so this comes first */
    if (f->replica_gather) {
        f->replica_first = 1;
        return;
    }
    const char *other = f->layer_break >= 0 ? f->layer_name : f->step_layer;
    const int other_step = f->noise_break || f->layer_break >= 0 ? 0 : f->step_break;
    if (other_step < 0 || f->replica_break < other_step) f->replica_first = 1;
    else if (f->replica_break == other_step && !f->noise_break && !other[0]) {
        f->replica_first = 1; /* the other names the step's output as a whole: the tensor is inside it */
    } else if (f->replica_break == other_step && !f->noise_break) {
        const layer_key a = key_of(f->replica_tensor), b = key_of(other);
        f->replica_first = a.stage != b.stage ? a.stage < b.stage
                           : a.block != b.block ? a.block < b.block
                                                : a.sub < b.sub;
    } else if (f->replica_break == 0 && f->noise_break) {
        f->replica_first = !strcmp(f->replica_tensor, "initial_noise");
    }
}

/* A teacher run's files: its trajectory and the trace of its evaluations. */
typedef struct teacher_run {
    traj t;
    rp_trace tr;
    int have_tr;
} teacher_run;

static int teacher_run_load(teacher_run *r, const char *dir) {
    char p[PATHLEN], why[300];
    rp_error e;
    memset(r, 0, sizeof *r);
    rp_trace_init(&r->tr);
    rp_store_path(p, sizeof p, dir, RP_ART_TEACHER);
    if (rp_cls_aux_status(dir, why, sizeof why) != RP_V_COUNT || traj_load(p, "teacher", &r->t, &e) != RP_OK) return 0;
    rp_store_path(p, sizeof p, dir, RP_ART_TRACE);
    r->have_tr = rp_cls_trace_load(p, &r->tr, &e) == RP_OK;
    return 1;
}

static void teacher_run_free(teacher_run *r) {
    traj_free(&r->t);
    rp_trace_free(&r->tr);
}

/* layer_env_fn of the fp32 shadow: the largest over the shadow twins' teacher traces. */
typedef struct shadow_twins {
    const teacher_run *tw;
    int n;
} shadow_twins;
/* The fp32 shadow's twins as the case's (rp_cls_twins_not_rounding), at fp32's floor: one that is
 * no rounding of the base's shadow leaves tw (freed; noted in the facts). Returns how many
 * stay. */
static int shadow_twins_rounding(cls *x, const teacher_run *b, teacher_run *tw, const char *const *name, int n) {
    const int be = b->have_tr ? eval_of_step(b->t.mask, 0) : -1;
    if (be < 0 || n < 2) return n;
    const rp_trace *tr[RP_CLS_TWIN_KINDS];
    int ev[RP_CLS_TWIN_KINDS];
    unsigned char out[RP_CLS_TWIN_KINDS] = {0};
    char why[RP_CLS_TWIN_KINDS][200];
    for (int t = 0; t < n; t++) {
        tr[t] = &tw[t].tr;
        ev[t] = tw[t].have_tr ? eval_of_step(tw[t].t.mask, 0) : -1;
    }
    rp_cls_twins_not_rounding(&b->tr, be, tr, ev, n, rp_cls_unit_roundoff("fp32"), x->o->factor, out, why);
    int m = 0;
    for (int t = 0; t < n; t++) {
        if (!out[t]) {
            tw[m++] = tw[t];
            continue;
        }
        snprintf(x->f.twin_rejected, sizeof x->f.twin_rejected, "the fp32 shadow's twin %.63s: %.199s", name[t],
                 why[t]);
        teacher_run_free(&tw[t]);
    }
    return m;
}

static double shadow_layer_env(const void *ctx, const rp_trace_rec *base, int k) {
    const shadow_twins *s = ctx;
    double e = 0;
    for (int t = 0; t < s->n; t++) {
        const int et = eval_of_step(s->tw[t].t.mask, k);
        const rp_trace_rec *q = s->tw[t].have_tr && et >= 0 ? trace_find(&s->tw[t].tr, et, base->name) : NULL;
        const double w = q ? rp_cls_layer_rel(base, q) : 0;
        if (isfinite(w) && w > e) e = w;
    }
    return e;
}

/* The position of layer `name` in a forward's execution order (the reference's first
 * evaluation's trace records are in that order; every evaluation runs the same layers), or
 * INT_MAX when it is not there. */
static int layer_order(const cls *x, const char *name) {
    for (int i = 0, n = 0; x->have_rtr && name && i < x->rtr.n; i++) {
        if (x->rtr.recs[i].eval != 0) continue;
        if (!strcmp(x->rtr.recs[i].name, name)) return n;
        n++;
    }
    return INT_MAX;
}

/* 1 when a shadow's break at step k naming layer `name` should replace what the facts hold
 * for that step: nothing breaks earlier, and every layer named at step k so far (the first
 * evaluation's, at k = 0; the step break's) comes later in the forward than `name`, or was
 * named only by elimination ("after the model": every traced layer within its envelope) or
 * not at all. The layers of one step all start from the same input, so the first one a
 * comparison sees beyond its envelope is where the fault acts, and a finer comparison (the
 * fp32 shadow's envelope, the invariant shadow's bits) can see it where a coarser one (the
 * case's bf16) saw only its effect downstream (audit 10: SD3's text stream's last update
 * skipped on one rank was named transformer_blocks.1.attn in bf16, where the fp32 shadow
 * saw transformer_blocks.0.context). */
static int shadow_names_earlier(const cls *x, int k, const char *name) {
    const rp_cls_facts *f = &x->f;
    if (!name || !name[0] || (f->step_break >= 0 && f->step_break < k)) return 0;
    int named = 0, first = INT_MAX;
    if (k == 0 && f->layer_break >= 0) {
        named = 1;
        const int o = layer_order(x, f->layer_name);
        if (o < first) first = o;
    }
    if (f->step_break == k) {
        named = 1;
        const int o = f->step_after_model ? INT_MAX : layer_order(x, f->step_layer);
        if (o < first) first = o;
    }
    return named && layer_order(x, name) < first;
}

/* Whether a shadow's first break, at step k (naming layer `name`, or none), becomes the
 * case's step break: when nothing breaks at or before k, or shadow_names_earlier. The first
 * evaluation's layer then gives way at k = 0 (it named a later one). The caller fills in
 * the step break. */
static int shadow_takes_step(cls *x, int k, const char *name) {
    const int earlier = shadow_names_earlier(x, k, name);
    if (x->f.step_break >= 0 && x->f.step_break <= k && !earlier) return 0;
    if (earlier && k == 0) x->f.layer_break = -1;
    return 1;
}

/* Evidence 3b: the fp32 shadow of a case that rounds coarser (job_case.c). Its layout
 * teacher-forced at fp32 from the reference's latents (<case>/shadow/teacher) against the
 * reference's own fp32 teacher run from the same latents (<base>/shadow/teacher), with the
 * envelope of the base's fp32 twins' teacher runs and the fp32 floor: the local errors of
 * the layout at fp32's resolution. Its first break (and layer) becomes the case's step
 * break when no earlier one exists; every checked step's layers are held to the
 * twins' envelope as in the case's own teacher run. */
static void cls_shadow(cls *x) {
    char d[PATHLEN];
    teacher_run c, b, tw[RP_CLS_TWIN_KINDS];
    int n_tw = 0;
    rp_store_subdir(d, sizeof d, x->in->case_dir, RP_SUB_SHADOW_TEACHER);
    if (x->f.is_reference || !teacher_run_load(&c, d)) return; /* an identical case: its leak pair's first steps */
    rp_store_subdir(d, sizeof d, x->base, RP_SUB_SHADOW_TEACHER);
    if (!teacher_run_load(&b, d)) {
        teacher_run_free(&c);
        return;
    }
    const char *tname[RP_CLS_TWIN_KINDS];
    for (int k = 0; k < x->n_tw && k < RP_CLS_TWIN_KINDS; k++) {
        char sd[PATHLEN], twd[PATHLEN];
        rp_store_subdir(sd, sizeof sd, x->base, RP_SUB_SHADOW);
        rp_store_twin_dir(twd, sizeof twd, sd, x->tw[k].name);
        rp_store_subdir(d, sizeof d, twd, RP_SUB_TEACHER);
        tname[n_tw] = x->tw[k].name;
        if (teacher_run_load(&tw[n_tw], d)) n_tw++;
    }
    n_tw = shadow_twins_rounding(x, &b, tw, tname, n_tw);
    const int N = x->N;
    cJSON *sj = cJSON_AddObjectToObject(x->ev, "fp32_shadow");
    double *v = malloc(sizeof(double) * (N + 1)), *loc = calloc((size_t)N, sizeof *loc);
    double *env = calloc((size_t)N, sizeof *env);
    unsigned char *checked = calloc((size_t)N, 1);
    if (!v || !loc || !env || !checked || !traj_same_shape(&c.t, &b.t) || !traj_same_shape(&c.t, &x->cm)) {
        cJSON_AddStringToObject(sj, "note", "the shadow runs do not fit the case (or out of memory): not compared");
        goto out;
    }
    cls_teacher_input(x, &c.t, &x->tb, "fp32 shadow");
    rp_cls_rows_rel(b.t.x, c.t.x, N + 1, x->B, x->per, v);
    for (int k = 0; k < N; k++) {
        loc[k] = v[k + 1];
        const int ran = (!c.t.mask || c.t.mask[k] != 0.0f) && (!b.t.mask || b.t.mask[k] != 0.0f);
        checked[k] = (unsigned char)(ran && k < rp_cls_exact_steps(&x->c));
    }
    for (int t = 0; t < n_tw; t++) {
        if (!traj_same_shape(&tw[t].t, &b.t)) continue;
        rp_cls_rows_rel(b.t.x, tw[t].t.x, N + 1, x->B, x->per, v);
        env_max(env, v + 1, N, tw[t].t.mask);
    }
    const double floor = rp_cls_unit_roundoff("fp32");
    cJSON_AddNumberToObject(sj, "twins", n_tw);
    cJSON_AddItemToObject(sj, "local_errors", num_array(loc, N, checked));
    cJSON_AddItemToObject(sj, "envelope", num_array(env, N, NULL));
    double ratio = 0, big = 0;
    for (int i = 0; i < N; i++) {
        const double r = rp_cls_ratio(loc[i], env[i], floor);
        if (checked[i] && isfinite(r) && r > big) big = r;
    }
    put(sj, "largest_ratio", big);
    if (big > x->largest) x->largest = big;
    int k = rp_cls_first_break(loc, env, checked, N, floor, x->o->factor, &ratio);
    /* the layers of every checked step, as for the case's own teacher run (cls_teacher): the
     * first step with a layer beyond its fp32 envelope, when no step's output broke earlier */
    shadow_twins st = {tw, n_tw};
    const rp_trace_rec *hit = NULL;
    double lr = 0, rel = 0, e = 0, layers_big = 0;
    const int traced = c.have_tr && b.have_tr && traces_comparable(x);
    for (int j = 0; traced && j < N; j++) {
        if (!checked[j] || (hit && k >= 0 && j > k)) continue;
        double jr = 0, jrel = 0, je = 0;
        const rp_trace_rec *h = step_layer_break(&c.tr, c.t.mask, &b.tr, b.t.mask, j, shadow_layer_env, &st, floor,
                                                 x->o->factor, &layers_big, &jr, &jrel, &je);
        if (h && !hit && (k < 0 || j <= k)) {
            hit = h, lr = jr, rel = jrel, e = je;
            if (k < 0 || j < k) k = j, ratio = rp_cls_ratio(loc[j], env[j], floor);
        }
    }
    put(sj, "largest_layer_ratio", layers_big);
    if (layers_big > x->largest) x->largest = layers_big;
    cJSON_AddNumberToObject(sj, "first_break", k);
    /* an earlier break stands, and one at the same step, unless the shadow names a layer
     * earlier in the forward than it does (shadow_names_earlier: audit 8's final layer wrong on
     * one rank in bf16 was "guidance+sampler.update", by elimination) */
    if (k < 0 || !shadow_takes_step(x, k, hit ? hit->name : NULL)) goto out;
    rp_cls_facts *f = &x->f;
    f->step_break = k;
    f->step_ratio = ratio;
    f->step_shadow = 1;
    f->step_layer[0] = '\0';
    f->step_after_model = 0;
    x->local[k] = loc[k];
    x->env_step[k] = env[k];
    items_of(x, b.t.x, c.t.x, k, env[k], floor, f->step_items);
    if (hit) { /* the layer: the case's shadow trace against the base's at that step, the twins' envelope */
        snprintf(f->step_layer, sizeof f->step_layer, "%s", hit->name);
        f->step_layer_ratio = lr;
        x->step_layer_rel = rel;
        x->step_layer_env = e;
    } else if (traced) {
        step_after_model(x, &c.tr, c.t.mask, &b.tr, b.t.mask);
    }
out:
    free(v), free(loc), free(env), free(checked);
    teacher_run_free(&c);
    teacher_run_free(&b);
    for (int t = 0; t < n_tw; t++) teacher_run_free(&tw[t]);
}

/* Two teacher runs' trajectories (rows, B, per): the first step both ran whose output
 * differs at all, -1 none, -2 when their shapes differ; *compared: the steps both ran. */
static int shadow_first_difference(const traj *c, const traj *b, int upto, int *compared) {
    *compared = 0;
    if (!traj_same_shape(c, b)) return -2;
    const size_t row = (size_t)c->B * c->per;
    for (int s = 0; s + 1 < c->rows && s < upto; s++) {
        if ((c->mask && c->mask[s] == 0.0f) || (b->mask && b->mask[s] == 0.0f)) continue;
        ++*compared;
        if (memcmp(c->x + (size_t)(s + 1) * row, b->x + (size_t)(s + 1) * row, sizeof(float) * row)) return s;
    }
    return -1;
}

/* The layer of step k where two teacher runs c and b (of one layout's arithmetic) part: the
 * first record of that step's evaluation in b whose copy in c differs at all, among the ones
 * c traced (a PipeFusion stage traces none: then no layer is named), into layer ("" none).
 * Returns whether their traces could be compared there. */
static int first_differing_layer(const cls *x, const teacher_run *c, const teacher_run *b, int k, char *layer,
                                 size_t cap) {
    layer[0] = '\0';
    const int ec = eval_of_step(c->t.mask, k), eb = eval_of_step(b->t.mask, k);
    int case_recs = 0;
    for (int i = 0; c->have_tr && i < c->tr.n; i++) case_recs += c->tr.recs[i].eval == ec;
    const int traced = c->have_tr && b->have_tr && traces_comparable(x) && case_recs > 0;
    for (int i = 0; traced && ec >= 0 && eb >= 0 && i < b->tr.n; i++) {
        const rp_trace_rec *r = &b->tr.recs[i], *cr = trace_find(&c->tr, ec, r->name);
        if (r->eval != eb || !cr) continue;
        if (rp_cls_layer_rel(r, cr) != 0.0) {
            snprintf(layer, cap, "%s", r->name);
            break;
        }
    }
    return traced;
}

/* Evidence 12: the invariant shadow (job_case.c, rp_cls_invariant_shadow_pair). The case's
 * layout teacher-forced under invariant numerics from the reference's latents
 * (<case>/invariant/teacher) against the reference's own run of the same kind
 * (<base>/invariant/teacher): there an exact layout is bitwise the serial run, so the first
 * step whose output differs at all, and in it the first layer that differs, is a bug's —
 * however far below the rounding envelope of the default numerics (a norm's epsilon on
 * one rank, a constant on one rank, anything in bf16). It becomes the case's step break
 * when no earlier one exists. */
static void cls_invariant_shadow_at(cls *x, rp_store_sub sub, const char *key, const char *at) {
    char d[PATHLEN];
    teacher_run c, b;
    if (x->f.is_reference || x->f.identical || x->f.invariant) return;
    rp_store_subdir(d, sizeof d, x->in->case_dir, sub);
    if (!teacher_run_load(&c, d)) return;
    rp_store_subdir(d, sizeof d, x->base, sub);
    if (!teacher_run_load(&b, d)) {
        teacher_run_free(&c);
        cJSON_AddStringToObject(x->ev, key, "the reference made no invariant shadow: not compared");
        return;
    }
    cJSON *sj = cJSON_AddObjectToObject(x->ev, key);
    int compared = 0;
    /* every step both ran: the case's shadow runs only the steps that must be bitwise (its
     * exact ones, and an approximate layout's fresh-key ones: rp_cls_shadow_steps) */
    const int k = traj_same_shape(&c.t, &x->cm) ? shadow_first_difference(&c.t, &b.t, x->c.steps, &compared) : -2;
    if (k == -2) {
        cJSON_AddStringToObject(sj, "note", "the shadow runs do not fit the case: not compared");
        goto out;
    }
    cls_teacher_input(x, &c.t, &x->tb, at[0] ? "invariant shadow at the case's precision" : "invariant shadow");
    double rel = 0;
    if (k >= 0) {
        const size_t row = (size_t)c.t.B * c.t.per;
        rel = rp_cls_rel_l2(b.t.x + (size_t)(k + 1) * row, c.t.x + (size_t)(k + 1) * row, row);
    }
    cJSON_AddNumberToObject(sj, "steps_compared", compared);
    cJSON_AddNumberToObject(sj, "first_difference", k);
    if (k < 0) goto out;
    put(sj, "rel", rel);
    char layer[96] = "";
    const int traced = first_differing_layer(x, &c, &b, k, layer, sizeof layer);
    if (layer[0]) cJSON_AddStringToObject(sj, "layer", layer);
    rp_cls_facts *f = &x->f;
    /* an earlier (or same-step) break stands, unless this names an earlier layer (cls_shadow) */
    if (!shadow_takes_step(x, k, layer)) goto out;
    f->step_break = k;
    f->step_ratio = INFINITY;
    f->step_shadow = 0;
    f->step_invariant = 1;
    x->invariant_rel = rel;
    snprintf(f->invariant_at, sizeof f->invariant_at, "%s", at);
    f->step_after_model = 0;
    f->step_items[0] = '\0';
    snprintf(f->step_layer, sizeof f->step_layer, "%s", layer);
    if (traced) step_after_model(x, &c.tr, c.t.mask, &b.tr, b.t.mask); /* every layer bitwise */
out:
    teacher_run_free(&c);
    teacher_run_free(&b);
}

/* Evidence 12, both shadows: at fp32 (the layout's shared code at fp32's resolution) and,
 * for a case coarser than fp32, at its own precision (the code that precision selects);
 * the earliest difference (or, at one step, the earliest layer) stands. */
static void cls_invariant_shadow(cls *x) {
    cls_invariant_shadow_at(x, RP_SUB_INVARIANT_TEACHER, "invariant_shadow", "");
    cls_invariant_shadow_at(x, RP_SUB_INVARIANT_OWN_TEACHER, "invariant_shadow_own", x->c.precision);
}

/* Evidence 13: the serial emulation (rp_cls_emulation; <case>/emulation, made by the runner
 * after the case's own run). The case's own run against it, step by step, bitwise: with the
 * patches fixed a PipeFusion case's result does not depend on its stage count, so the first
 * trajectory row that differs is a bug's step (its input, the row before, was bitwise the
 * same), however far inside the approximation's loss and in any precision; latents and
 * trajectory equal but images not is the decode path's. It becomes the case's step break
 * when no earlier one exists. */
static void cls_emulation(cls *x) {
    char d[PATHLEN], p[PATHLEN], why[256];
    if (x->f.is_reference || x->f.identical) return;
    rp_store_subdir(d, sizeof d, x->in->case_dir, RP_SUB_EMULATION);
    rp_store_path(p, sizeof p, d, RP_ART_AUX);
    if (!rp_is_file(p)) return; /* none made (none is, or the runner could not) */
    cJSON *ej = cJSON_AddObjectToObject(x->ev, "emulation");
    if (rp_cls_aux_status(d, why, sizeof why) != RP_V_COUNT) {
        cJSON_AddStringToObject(ej, "note", "the emulation did not run to its end: not compared");
        cJSON_AddStringToObject(ej, "reason", why);
        return;
    }
    traj e;
    rp_error err;
    rp_store_path(p, sizeof p, d, RP_ART_LATENTS);
    if (traj_load(p, "trajectory", &e, &err) != RP_OK || !traj_same_shape(&e, &x->cm)) {
        if (e.x) traj_free(&e);
        cJSON_AddStringToObject(ej, "note", "the emulation's trajectory is unreadable or of another shape: not compared");
        return;
    }
    rp_case ec;
    rp_store_path(p, sizeof p, d, RP_ART_CASE);
    if (rp_case_load(p, &ec, &err) == RP_OK) cJSON_AddNumberToObject(ej, "num_pipeline_patch", ec.num_pipeline_patch);
    const size_t row = (size_t)e.B * e.per;
    int r = 0;
    while (r < e.rows && !memcmp(e.x + (size_t)r * row, x->cm.x + (size_t)r * row, sizeof(float) * row)) r++;
    x->f.emulation_patches = rp_case_pipeline_patches(&x->c);
    /* every row equal: the latents each run returned (an older store without them: the
     * trajectory's last row stands for them), then the images */
    float *el = NULL;
    const int latents = r == e.rows && returned_load(d, "latents", x->B, x->per, &el, &err) == RP_OK &&
                        (!el || !x->cl || !memcmp(el, x->cl, sizeof(float) * row));
    free(el);
    image_summary im = {0};
    const int images = latents && images_compare(d, x->in->case_dir, x->B, &im, &err) == RP_OK && im.identical;
    cJSON_Delete(im.arr);
    x->f.emulation_equal = latents && images;
    cJSON_AddBoolToObject(ej, "bitwise", x->f.emulation_equal);
    if (x->f.emulation_equal) {
        traj_free(&e);
        return;
    }
    const int in_rows = r < e.rows; /* else every row is equal: the returned latents or images differ */
    const int k = !in_rows ? x->N : r > 0 ? r - 1 : 0;
    const double rel = in_rows ? rp_cls_rel_l2(e.x + (size_t)r * row, x->cm.x + (size_t)r * row, row) : NAN;
    traj_free(&e);
    cJSON_AddNumberToObject(ej, "first_difference", k);
    cJSON_AddStringToObject(ej, "what", in_rows ? (r ? "trajectory" : "initial noise")
                                        : latents ? "decoded images" : "returned latents");
    put(ej, "rel", rel);
    rp_cls_facts *f = &x->f;
    if (f->step_break >= 0 && f->step_break < k) return; /* an earlier break stands */
    f->step_break = k;
    f->step_ratio = INFINITY;
    f->step_shadow = f->step_invariant = f->step_after_model = 0;
    f->step_emulation = 1;
    f->step_items[0] = '\0';
    snprintf(f->step_layer, sizeof f->step_layer, "%s", in_rows ? "" : latents ? "vae.decode" : "latents");
    x->emulation_rel = rel;
}

/* 1 when a and b decode with the same arithmetic (precision, numerics, attention, threads,
 * kernels, device, VAE and its weights). The VAE decodes one item at a time and takes no
 * part in any parallel layout, so the same latents then give bitwise the same images. */
static int decoder_numerics_equal(const rp_case *a, const rp_case *b) {
    return !strcmp(a->precision, b->precision) && !strcmp(a->numerics, b->numerics) && !strcmp(a->attention, b->attention) &&
           a->attn_q_chunk == b->attn_q_chunk && a->attn_kv_chunk == b->attn_kv_chunk &&
           !strcmp(a->device_profile, b->device_profile) && a->threads == b->threads &&
           !strcmp(a->blas_core, b->blas_core) && a->reduce_split == b->reduce_split && !strcmp(a->device, b->device) &&
           !strcmp(a->gpu_mode, b->gpu_mode) && !strcmp(a->vae, b->vae) && a->weight_seed == b->weight_seed;
}

rp_cls_decode_rule rp_cls_decode_rule_of(const rp_case *c, const rp_case *ref) {
    if (rp_cls_invariant_pair(c, ref) || decoder_numerics_equal(c, ref)) return RP_CLS_DECODE_BITWISE;
    return !strcmp(rp_cls_effective_precision(c), "fp32") ? RP_CLS_DECODE_ONE_LEVEL : RP_CLS_DECODE_NONE;
}

int rp_cls_decode_as(const rp_case *c, const rp_case *ref, rp_case *out) {
    *out = *c;
    if (rp_device_name_is_cuda(c->device) || strcmp(c->device, ref->device) || strcmp(c->blas_core, ref->blas_core) ||
        strcmp(c->vae, ref->vae) || c->weight_seed != ref->weight_seed)
        return 0;
    out->threads = ref->threads; /* set for the decode alone (pipeline.c decode_run) */
    snprintf(out->precision, sizeof out->precision, "%s", ref->precision);
    snprintf(out->numerics, sizeof out->numerics, "%s", ref->numerics);
    snprintf(out->attention, sizeof out->attention, "%s", ref->attention);
    snprintf(out->device_profile, sizeof out->device_profile, "%s", ref->device_profile);
    out->attn_q_chunk = ref->attn_q_chunk;
    out->attn_kv_chunk = ref->attn_kv_chunk;
    out->reduce_split = ref->reduce_split;
    return !decoder_numerics_equal(c, out);
}

double rp_cls_one_level_fraction(double factor) { return factor * 255.0 * rp_cls_unit_roundoff("fp32"); }

size_t rp_cls_one_level_count(size_t n, double factor) {
    const double lambda = (double)n * rp_cls_one_level_fraction(factor);
    /* P(X > k) = 1 - sum_{j <= k} pmf(j), the pmf by its recurrence from log pmf(0) = -lambda
     * (in logs: exp(-lambda) underflows past lambda ~ 745) */
    double logp = -lambda, cdf = 0;
    size_t k = 0;
    for (;; k++) {
        if (k) logp += log(lambda / (double)k);
        cdf += exp(logp);
        if (1.0 - cdf < 1e-6 || k >= n) break;
    }
    return k;
}

rp_cls_decode_rule rp_cls_own_decode_rule(const rp_case *c, const rp_case *ref) {
    rp_case as;
    return rp_cls_decode_as(c, ref, &as) ? rp_cls_decode_rule_of(c, ref) : RP_CLS_DECODE_NONE;
}

rp_cls_decode_rule rp_cls_teacher_decode_rule(const rp_case *c, const rp_case *ref) {
    rp_case as;
    (void)rp_cls_decode_as(c, ref, &as);
    return rp_cls_decode_rule_of(&as, ref);
}

int rp_cls_has_fp32_shadow(const rp_case *c) {
    return strcmp(rp_cls_effective_precision(c), "fp32") && !rp_device_name_is_cuda(c->device);
}

int rp_cls_decode_shadow(const rp_case *c, const rp_case *ref) {
    if (!rp_cls_has_fp32_shadow(c) || rp_cls_invariant_pair(c, ref) || decoder_numerics_equal(c, ref) ||
        strcmp(c->vae, ref->vae) || c->weight_seed != ref->weight_seed)
        return 0;
    return !strcmp(rp_cls_effective_precision(ref), "fp32") || rp_cls_has_fp32_shadow(ref);
}

int rp_cls_decode_shadow_ref(const rp_case *c, const rp_case *ref) {
    return rp_cls_decode_shadow(c, ref) && rp_cls_has_fp32_shadow(ref);
}

/* Evidence 8's judgement of one decode: the B images in dd against those in rd (the
 * reference's, or its fp32 shadow's), item by item under rule (a break sets image_break with what, the images' origin, in its message),
 * into dj's "items"; with assignment, also each image against every reference image (one
 * much closer to another item's: MISMATCH). */
static rp_status judge_images(cls *x, const char *dd, const char *rd, rp_cls_decode_rule rule, const char *what,
                              cJSON *dj, int assignment, rp_error *err) {
    const int B = x->B;
    uint8_t **dec = calloc((size_t)B, sizeof *dec), **ref = calloc((size_t)B, sizeof *ref);
    double *D = malloc(sizeof(double) * B * B);
    int *perm = malloc(sizeof(int) * B);
    int W = 0, H = 0;
    rp_status st = dec && ref && D && perm ? RP_OK : RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    for (int i = 0; i < B && st == RP_OK; i++) {
        char pa[PATHLEN], pb[PATHLEN];
        int w1, h1, w2, h2;
        rp_store_image_path(pa, sizeof pa, dd, i);
        rp_store_image_path(pb, sizeof pb, rd, i);
        st = rp_png_read(pa, &dec[i], &w1, &h1, err);
        if (st == RP_OK) st = rp_png_read(pb, &ref[i], &w2, &h2, err);
        if (st == RP_OK && (w1 != w2 || h1 != h2 || (i && (w1 != W || h1 != H))))
            st = RP_FAIL(err, RP_ERR_SHAPE, "%s: %dx%d, the reference's %s: %dx%d", pa, w1, h1, pb, w2, h2);
        W = w1, H = h1;
    }
    const size_t n = (size_t)W * H * 3;
    cJSON *items = st == RP_OK ? cJSON_AddArrayToObject(dj, "items") : NULL;
    for (int i = 0; i < B && st == RP_OK; i++) {
        for (int j = 0; j < B; j++) { /* relative L2 of the pixel values */
            double num = 0, den = 0;
            for (size_t k = 0; k < n; k++) {
                const double d = (double)dec[i][k] - ref[j][k];
                num += d * d;
                den += (double)ref[j][k] * ref[j][k];
            }
            D[(size_t)i * B + j] = den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
        }
        int max_abs = 0;
        size_t changed = 0;
        for (size_t k = 0; k < n; k++) {
            const int d = abs((int)dec[i][k] - ref[i][k]);
            changed += d != 0;
            if (d > max_abs) max_abs = d;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "index", i);
        cJSON_AddNumberToObject(o, "max_abs", max_abs);
        put(o, "changed", n ? (double)changed / n : 0);
        put(o, "rel", D[(size_t)i * B + i]);
        cJSON_AddItemToArray(items, o);
        const size_t most = rp_cls_one_level_count(n, x->o->factor);
        const int breaks = rule == RP_CLS_DECODE_BITWISE ? max_abs > 0
                           : rule == RP_CLS_DECODE_ONE_LEVEL ? max_abs > 1 || changed > most
                                                             : 0;
        if (breaks && x->f.image_break < 0) {
            char r[96];
            if (rule == RP_CLS_DECODE_BITWISE) snprintf(r, sizeof r, "bitwise");
            else snprintf(r, sizeof r, "one level in at most %zu of the %zu values", most, n);
            x->f.image_break = i;
            snprintf(x->f.image_msg, sizeof x->f.image_msg,
                     "vae.decode, image %d: %s differ from the reference's by up to %d levels in %.2f%% of the "
                     "values (rule: %s)",
                     i, what, max_abs, n ? 100.0 * changed / n : 0.0, r);
        }
    }
    if (st == RP_OK && assignment && B >= 2 && rp_cls_assignment(D, B, RP_CLS_MISMATCH_MARGIN, perm) &&
        !x->f.mismatch) {
        char m[400];
        rp_cls_assignment_message(perm, B, m, sizeof m);
        x->f.mismatch = 1;
        snprintf(x->f.mismatch_msg, sizeof x->f.mismatch_msg, "decoded images: %s", m);
        cJSON_AddStringToObject(dj, "assignment", x->f.mismatch_msg);
    }
    for (int i = 0; dec && ref && i < B; i++) free(dec[i]), free(ref[i]);
    free(dec), free(ref), free(D), free(perm);
    return st;
}

/* Evidence 8: the images' teacher forcing. <case>/teacher/'s images are the reference's
 * final latents decoded with the case's layout (job_case.c), with the reference's decoder
 * arithmetic where the case's process can compute it (rp_cls_decode_as), so the decoder and
 * the way images come back (which rank decodes which item, the gather) are judged on the
 * reference's input, apart from the sampling's drift:
 *   the decoder's arithmetic is the reference's  every image bitwise the reference's;
 *   else, at fp32                                 every pixel within one level, in at
 *       most rp_cls_one_level_count of the values: a difference far below one level
 *       (rounding: ~1e-6 relative) moves an 8-bit value by at most one, and seldom;
 *   else (bf16, fp16, tf32 decoders)              no rule (rp_cls_teacher_decode_rule): the
 *       worker makes no such decode, and the case's own images are checked for assignment.
 * And each decoded image against every reference image: one much closer to another item's
 * image is a MISMATCH (images returned in the wrong order).
 * When the case's latents are bitwise the reference's, its own decode had the reference's
 * input: its own images are that decode (the launch made no teacher run), judged by the
 * same rules. Where the teacher decode took the reference's arithmetic, <case>/decode-own/
 * holds the same latents decoded with the case's own, judged by its rule
 * (rp_cls_own_decode_rule). */
static rp_status cls_decode(cls *x, rp_error *err) {
    const int fp32 = !strcmp(rp_cls_effective_precision(&x->c), "fp32");
    /* the rules of the case's own decode and of its teacher decode (rp_cls_decode_as) */
    const rp_cls_decode_rule rule_own = x->have_rc ? rp_cls_decode_rule_of(&x->c, &x->rc)
                                                   : fp32 ? RP_CLS_DECODE_ONE_LEVEL : RP_CLS_DECODE_NONE;
    const rp_cls_decode_rule rule_teacher = x->have_rc ? rp_cls_teacher_decode_rule(&x->c, &x->rc) : rule_own;
    const int same_input = !memcmp(x->cm.x, x->rm.x, sizeof(float) * (size_t)x->cm.rows * x->B * x->per);
    char dd[PATHLEN], p0[PATHLEN];
    rp_store_subdir(dd, sizeof dd, x->in->case_dir, RP_SUB_TEACHER); /* the teacher run decoded them */
    rp_store_image_path(p0, sizeof p0, dd, 0);
    /* the case's own images: when its decode had the reference's input, or when no rule holds
     * a decode of it (then for the assignment only) */
    const int own = same_input || (rule_teacher == RP_CLS_DECODE_NONE && !rp_is_file(p0));
    const rp_cls_decode_rule rule = own ? rule_own : rule_teacher;
    if (own) rp_pathf(dd, PATHLEN, "%s", x->in->case_dir);
    rp_store_image_path(p0, sizeof p0, dd, 0);
    if (x->in->ref_label || (!own && !rp_is_file(p0))) return RP_OK; /* a golden, or no decode run */
    if (own && (x->im.identical || x->im.n < x->B)) return RP_OK; /* bitwise images, or none to judge */
    cJSON *dj = cJSON_AddObjectToObject(x->ev, "decode");
    cJSON_AddStringToObject(dj, "images", same_input ? "the case's own (its latents are bitwise the reference's)"
                                          : own      ? "the case's own (for the assignment only)"
                                                     : "the reference's final latents decoded with the case's layout");
    static const char *const RULE[] = {"bitwise (the reference's decoder arithmetic)", "one level in few values (fp32 rounding)",
                                       "none (the decoder rounds coarser, with other arithmetic)"};
    cJSON_AddStringToObject(dj, "rule", RULE[rule]);
    rp_case as;
    if (!own && x->have_rc && rp_cls_decode_as(&x->c, &x->rc, &as))
        cJSON_AddStringToObject(dj, "decoder", "the reference's arithmetic (precision, attention, reduce_split, threads)");
    rp_status st = judge_images(x, dd, x->in->ref_dir, rule, "the reference's final latents decoded with this layout", dj, 1,
                                err);
    /* the same latents decoded with the case's own decoder arithmetic too, when the decode
     * above ran the reference's (rp_cls_own_decode_rule) */
    char od[PATHLEN], po[PATHLEN];
    rp_store_subdir(od, sizeof od, x->in->case_dir, RP_SUB_DECODE_OWN);
    rp_store_image_path(po, sizeof po, od, 0);
    const rp_cls_decode_rule rule_od = !own && x->have_rc ? rp_cls_own_decode_rule(&x->c, &x->rc) : RP_CLS_DECODE_NONE;
    if (st == RP_OK && rule_od != RP_CLS_DECODE_NONE && rp_is_file(po)) {
        cJSON *oj = cJSON_AddObjectToObject(dj, "own_arithmetic");
        cJSON_AddStringToObject(oj, "rule", RULE[rule_od]);
        st = judge_images(x, od, x->in->ref_dir, rule_od,
                          "the reference's final latents decoded with this layout and its own decoder arithmetic", oj,
                          0, err);
    }
    return st;
}

/* Evidence 8 at fp32: the decoder's fp32 shadow (rp_cls_decode_shadow). A case that decodes
 * coarser than fp32 with other decoder arithmetic than its reference's has no rule of its own
 * (a bf16 decoder with other arithmetic may move a pixel by levels), so its fp32 shadow ended
 * with a decode of the reference's final latents with the case's layout and its own decoder
 * arithmetic at fp32 (<case>/shadow/teacher/), held to the one-level rule against the same
 * latents decoded at fp32 with the reference's arithmetic: the reference's own images, or its
 * fp32 shadow's. */
static rp_status cls_decode_shadow(cls *x, rp_error *err) {
    if (x->in->ref_label || !x->have_rc || !rp_cls_decode_shadow(&x->c, &x->rc)) return RP_OK;
    char dd[PATHLEN], rd[PATHLEN], p0[PATHLEN];
    rp_store_subdir(dd, sizeof dd, x->in->case_dir, RP_SUB_SHADOW_TEACHER);
    if (rp_cls_decode_shadow_ref(&x->c, &x->rc)) rp_store_subdir(rd, sizeof rd, x->in->ref_dir, RP_SUB_SHADOW_TEACHER);
    else rp_pathf(rd, PATHLEN, "%s", x->in->ref_dir);
    rp_store_image_path(p0, sizeof p0, dd, 0);
    const int have = rp_is_file(p0);
    rp_store_image_path(p0, sizeof p0, rd, 0);
    if (!have || !rp_is_file(p0)) return RP_OK; /* an older store, or a run that failed (its aux.json says) */
    cJSON *dj = cJSON_AddObjectToObject(x->ev, "decode_fp32_shadow");
    cJSON_AddStringToObject(dj, "images", "the reference's final latents decoded with this layout and its own decoder "
                                          "arithmetic at fp32, against the reference's at fp32");
    cJSON_AddStringToObject(dj, "rule", "one level in few values (fp32 rounding)");
    return judge_images(x, dd, rd, RP_CLS_DECODE_ONE_LEVEL,
                        "the reference's final latents decoded at fp32 with this layout and its own decoder "
                        "arithmetic (the fp32 shadow)",
                        dj, 0, err);
}

/* evidence.first_step = {"step": step, "what": what}, returned for more members. */
static cJSON *first_step_at(cls *x, int step, const char *what) {
    cJSON *fs = cJSON_AddObjectToObject(x->ev, "first_step");
    cJSON_AddNumberToObject(fs, "step", step);
    cJSON_AddStringToObject(fs, "what", what);
    return fs;
}

/* evidence.first_layer = {"name": name, "step": step}, returned for more members. */
static cJSON *first_layer_at(cls *x, const char *name, int step) {
    cJSON *fl = cJSON_AddObjectToObject(x->ev, "first_layer");
    cJSON_AddStringToObject(fl, "name", name);
    cJSON_AddNumberToObject(fl, "step", step);
    return fl;
}

/* Where the divergence began, as decided: first_step and first_layer. */
static void cls_first(cls *x) {
    const rp_cls_facts *f = &x->f;
    cJSON *fs, *fl;
    const int leak = leak_first(f);
    if (f->teacher_input_break >= 0 || (!f->mismatch && f->ran_break)) { /* rp_cls_decide's order */
        const int ti = f->teacher_input_break >= 0;
        const int step = ti ? f->teacher_input_step : f->ran_step;
        fs = first_step_at(x, step, ti ? "teacher input" : f->ran_what);
        cJSON_AddStringToObject(fs, "detail", ti ? f->teacher_input_msg : f->ran_msg);
        first_layer_at(x, ti ? "teacher input" : !strcmp(f->ran_what, "attention kernel") ? "attention" : f->ran_what,
                       step);
        return;
    }
    if (f->replica_break >= 0 && (f->replica_first || !(f->noise_break || f->layer_break >= 0 || f->step_break >= 0)) &&
        !(leak && f->replica_later)) {
        fs = first_step_at(x, f->replica_break, "replica");
        cJSON_AddStringToObject(fs, "detail", f->replica_msg);
        cJSON_AddBoolToObject(fs, "host_computed", f->replica_host);
        first_layer_at(x, f->replica_tensor, f->replica_break);
        return;
    }
    if (f->noise_break) {
        fs = first_step_at(x, 0, "initial noise");
        put(fs, "local", x->acc[0]);
        put(fs, "envelope", x->env_acc[0]);
        put(fs, "ratio", f->noise_ratio);
    } else if (f->noise_draw_break >= 0) {
        fs = first_step_at(x, 0, "initial noise");
        cJSON_AddStringToObject(fs, "detail", f->noise_draw_msg);
    } else if (f->trajectory_break >= 0) {
        first_step_at(x, 0, "trajectory");
    } else if (f->layer_break >= 0) {
        fs = first_step_at(x, 0, "first evaluation");
        if (f->step_break == 0) {
            put(fs, "local", x->local[0]);
            put(fs, "envelope", x->env_step[0]);
            put(fs, "ratio", f->step_ratio);
        }
    } else if (leak && f->latents_break >= 0) {
        first_step_at(x, x->N, "final latents");
        first_layer_at(x, "latents", x->N);
    } else if (leak) {
        first_step_at(x, f->leak_step, f->loop_differs ? "self check"
                                       : f->leak_fp32  ? "leak check (fp32 shadow)"
                                                       : "leak check");
    } else if (rotated_first(f)) {
        first_step_at(x, f->leak_step, "rotated layout");
    } else if (f->step_break >= 0 && f->step_emulation) {
        fs = first_step_at(x, f->step_break, "emulation");
        put(fs, "rel", x->emulation_rel);
    } else if (f->step_break >= 0 && f->step_invariant) {
        fs = first_step_at(x, f->step_break, "invariant shadow");
        put(fs, "rel", x->invariant_rel);
    } else if (f->step_break >= 0) {
        const int k = f->step_break;
        fs = first_step_at(x, k, "local error");
        if (f->step_items[0]) cJSON_AddStringToObject(fs, "items", f->step_items);
        put(fs, "local", x->local[k]);
        put(fs, "envelope", x->env_step[k]);
        put(fs, "ratio", f->step_ratio);
    } else if (f->image_break >= 0) { /* after the last step: the decode's, then the returned latents' */
        first_step_at(x, x->N, "decode");
        first_layer_at(x, "vae.decode", x->N);
    } else if (f->latents_break >= 0) {
        first_step_at(x, x->N, "final latents");
        first_layer_at(x, "latents", x->N);
    } else if (f->leak_differs && !f->repeats_differ) {
        first_step_at(x, f->leak_step, f->leak_fp32 ? "leak check (fp32 shadow)" : "leak check");
    }
    if (f->layer_break >= 0) {
        fl = first_layer_at(x, f->layer_name, 0);
        put(fl, "rel", x->layer_rel);
        put(fl, "envelope", x->layer_env);
        put(fl, "ratio", f->layer_ratio);
    } else if (f->noise_break || f->noise_draw_break >= 0) { /* no model layer beyond its envelope: the noise */
        first_layer_at(x, "initial_noise", 0);
    } else if (f->trajectory_break >= 0) {
        first_layer_at(x, "trajectory", 0);
    } else if (leak) { /* the later runs' layers are the leak's effect */
    } else if (rotated_first(f)) {
        if (f->rotated_layer[0]) {
            fl = first_layer_at(x, f->rotated_layer, f->leak_step);
            cJSON_AddStringToObject(fl, "what", "rotated layout");
        }
    } else if (f->step_break >= 0 && f->step_layer[0] && f->step_emulation) {
        fl = first_layer_at(x, f->step_layer, f->step_break);
        cJSON_AddStringToObject(fl, "what", "emulation");
    } else if (f->step_break >= 0 && f->step_layer[0] && f->step_invariant) {
        fl = first_layer_at(x, f->step_layer, f->step_break);
        cJSON_AddStringToObject(fl, "what", f->step_after_model ? "invariant shadow, after the model: every traced "
                                "layer of the step is bitwise" : "invariant shadow");
    } else if (f->step_break >= 0 && f->step_after_model) {
        fl = first_layer_at(x, f->step_layer, f->step_break);
        cJSON_AddStringToObject(fl, "what", "after the model: every traced layer of the step is within its envelope");
    } else if (f->step_break >= 0 && f->step_layer[0]) {
        fl = first_layer_at(x, f->step_layer, f->step_break);
        put(fl, "rel", x->step_layer_rel);
        put(fl, "envelope", x->step_layer_env);
        put(fl, "ratio", f->step_layer_ratio);
    }
}

/* Evidence 5: each item against each reference item over the noise, the first step and the
 * final state (the noise alone names an item; the last row keeps a late swap visible). */
static rp_status cls_assignment(cls *x, rp_error *err) {
    const int B = x->B, N = x->N;
    if (B < 2) return RP_OK;
    double *D = malloc(sizeof(double) * B * B);
    int *perm = malloc(sizeof(int) * B);
    if (!D || !perm) {
        free(D), free(perm);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    }
    const int rows[3] = {0, 1, N};
    for (int i = 0; i < B; i++)
        for (int j = 0; j < B; j++) {
            double s = 0;
            for (int r = 0; r < 3; r++)
                s += rp_cls_rel_l2(x->rm.x + ((size_t)rows[r] * B + j) * x->per,
                                   x->cm.x + ((size_t)rows[r] * B + i) * x->per, x->per);
            D[(size_t)i * B + j] = s / 3;
        }
    x->f.mismatch = rp_cls_assignment(D, B, RP_CLS_MISMATCH_MARGIN, perm);
    cJSON *as = cJSON_AddObjectToObject(x->ev, "assignment");
    cJSON *pa = cJSON_AddArrayToObject(as, "permutation");
    for (int i = 0; i < B; i++) cJSON_AddItemToArray(pa, cJSON_CreateNumber(perm[i]));
    cJSON *da = cJSON_AddArrayToObject(as, "distances");
    for (int i = 0; i < B; i++) cJSON_AddItemToArray(da, num_array(D + (size_t)i * B, B, NULL));
    put(as, "margin", RP_CLS_MISMATCH_MARGIN);
    if (x->f.mismatch) rp_cls_assignment_message(perm, B, x->f.mismatch_msg, sizeof x->f.mismatch_msg);
    if (x->f.mismatch) {
        /* the long form names what each swapped image was asked for and what it shows */
        size_t cap = 512 + (size_t)B * (2 * RP_CASE_MAX_STR + 96), n = 0;
        char *m = malloc(cap);
        if (m) {
            m[0] = 0;
            for (int i = 0; i < B && n < cap; i++) {
                if (perm[i] == i) continue;
                const rp_case_item *a = &x->c.items[i], *g = &x->c.items[perm[i]];
                int w;
                if (strcmp(a->prompt, g->prompt)) /* prompts tell them apart */
                    w = snprintf(m + n, cap - n, "%simage %d, asked for prompt \"%s\", shows item %d's \"%s\"",
                                 n ? "; " : "", i, a->prompt, perm[i], g->prompt);
                else if (a->class_id != g->class_id)
                    w = snprintf(m + n, cap - n, "%simage %d, asked for class %d, shows item %d's class %d",
                                 n ? "; " : "", i, a->class_id, perm[i], g->class_id);
                else
                    w = snprintf(m + n, cap - n, "%simage %d, asked for seed %llu, shows item %d's seed %llu",
                                 n ? "; " : "", i, (unsigned long long)a->seed, perm[i],
                                 (unsigned long long)g->seed);
                if (w < 0) break;
                n += (size_t)w;
            }
            cJSON_AddStringToObject(as, "message", m);
            free(m);
        }
    } else {
        cJSON_AddStringToObject(as, "message", "every item is closest to its own reference item");
    }
    free(D);
    free(perm);
    return RP_OK;
}

/* Evidence 5b: the final latents the run returned must be its trajectory's last row, the
 * state its last step produced (engine/gen.h). Every other piece of evidence reads the
 * trajectory, so a gather or copy that reorders or damages the returned latents after the
 * sampler loop would show nowhere else. Returned in another item order (assigned against the
 * reference's returned latents, as evidence 5): a MISMATCH; otherwise a BUG at the last step. */
static rp_status cls_final_latents(cls *x, rp_error *err) {
    cJSON *fj = cJSON_AddObjectToObject(x->ev, "final_latents");
    if (!x->cl) {
        cJSON_AddStringToObject(fj, "note", "no final latents stored: not checked");
        return RP_OK;
    }
    const int B = x->B;
    const size_t per = x->per;
    const float *last = x->cm.x + (size_t)x->N * B * per; /* (B, C, h, w) */
    int first = -1;
    for (int b = 0; b < B && first < 0; b++)
        if (memcmp(x->cl + b * per, last + b * per, sizeof(float) * per)) first = b;
    cJSON_AddBoolToObject(fj, "last_step_state", first < 0);
    if (first < 0) return RP_OK;
    if (!x->f.mismatch && x->rl && B >= 2) {
        double *D = malloc(sizeof(double) * B * B);
        int *perm = malloc(sizeof(int) * B);
        if (!D || !perm) {
            free(D), free(perm);
            return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
        }
        for (int i = 0; i < B; i++)
            for (int j = 0; j < B; j++) D[(size_t)i * B + j] = rp_cls_rel_l2(x->rl + j * per, x->cl + i * per, per);
        if (rp_cls_assignment(D, B, RP_CLS_MISMATCH_MARGIN, perm)) {
            char m[400];
            rp_cls_assignment_message(perm, B, m, sizeof m);
            x->f.mismatch = 1;
            snprintf(x->f.mismatch_msg, sizeof x->f.mismatch_msg,
                     "the final latents returned are not in the order the sampler left them: %s", m);
            cJSON_AddStringToObject(fj, "assignment", x->f.mismatch_msg);
        }
        free(D);
        free(perm);
    }
    if (!x->f.mismatch) {
        x->f.latents_break = first;
        snprintf(x->f.latents_msg, sizeof x->f.latents_msg,
                 "the final latents returned for item %d are not its last step's output (rel-L2 %.3g to the "
                 "trajectory's last row): changed after the sampler loop", first,
                 rp_cls_rel_l2(last + first * per, x->cl + first * per, per));
        cJSON_AddStringToObject(fj, "break", x->f.latents_msg);
    }
    return RP_OK;
}

/* Evidence 4: an approximate case's final images against the bound. */
static void cls_approx(cls *x, int warmup_exact) {
    if (!warmup_exact) return;
    rp_cls_facts *f = &x->f;
    f->have_quality = x->im.n > 0;
    f->ssim = x->im.ssim;
    f->psnr = x->im.psnr;
    f->bound_ssim = x->o->approx_ssim;
    f->bound_psnr = x->o->approx_psnr;
    cJSON *ap = cJSON_AddObjectToObject(x->ev, "approx");
    put(ap, "ssim", x->im.n ? x->im.ssim : NAN);
    put(ap, "psnr", x->im.n ? x->im.psnr : NAN);
    put(ap, "bound_ssim", f->bound_ssim);
    put(ap, "bound_psnr", f->bound_psnr);
    cJSON_AddNumberToObject(ap, "warmup", x->c.warmup_steps);
    cJSON_AddBoolToObject(ap, "approximate", f->approx);
}

/* Evidence 6: repeats against run 1, and the steps recomputed after the case's run in its worker. */
static void cls_determinism(cls *x) {
    rp_cls_facts *f = &x->f;
    cJSON *dj = cJSON_AddObjectToObject(x->ev, "determinism");
    const int R = x->in->repeat > 1 ? x->in->repeat : 1;
    cJSON_AddNumberToObject(dj, "repeats", R);
    cJSON_AddBoolToObject(dj, "promised", f->promised);
    double worst = 0;
    for (int k = 2; k <= R; k++) {
        char rd[PATHLEN];
        rp_pathf(rd, PATHLEN, "%s/repeat-%d", x->in->case_dir, k);
        double m;
        if (!latents_equal(x->in->case_dir, rd, &m)) {
            f->repeats_differ = 1;
            if (!(m <= worst)) worst = m;
        }
    }
    f->repeat_max_abs = worst;
    put(dj, "max_abs", worst);
    cJSON_AddBoolToObject(dj, "repeats_identical", !f->repeats_differ);
    /* the leak check: the teacher run, later in the same worker, recomputing a step from the
     * case's own input (rp_cls_rerun_check); a teacher run made elsewhere is no such check */
    char msg[160];
    int k = -1;
    double m = 0;
    const int r = x->in->teacher_dir ? -1 : rp_cls_rerun_check(x->in->case_dir, x->in->ref_dir, &k, &m);
    f->leak_differs = r == 1;
    f->leak_max_abs = m;
    if (r < 0) {
        snprintf(msg, sizeof msg, "not run (no step recomputed from the case's own input)");
    } else if (f->leak_differs) {
        f->leak_step = k;
        snprintf(msg, sizeof msg, "differs from step %d (max-abs %.3g)", k, m);
        cJSON_AddNumberToObject(dj, "leak_first_step", k);
    } else {
        snprintf(msg, sizeof msg, "ok");
    }
    cJSON_AddStringToObject(dj, "leak_check", msg);
    /* the same at fp32 in the shadow, where a coarser precision's rounding hides nothing */
    int ks = -1;
    double ms = 0;
    const int rs = x->in->teacher_dir ? -1 : rp_cls_shadow_rerun_check(x->in->case_dir, &ks, &ms);
    if (rs >= 0) {
        if (rs == 1) snprintf(msg, sizeof msg, "differs from step %d (max-abs %.3g)", ks, ms);
        else snprintf(msg, sizeof msg, "ok");
        cJSON_AddStringToObject(dj, "leak_check_fp32_shadow", msg);
    }
    if (rs == 1 && !f->leak_differs) {
        f->leak_differs = 1;
        f->leak_fp32 = 1;
        f->leak_step = ks;
        f->leak_max_abs = ms;
    }
    /* the self check's steps as a fresh launch's first call (made when the self check
     * differed): differing there too, no earlier call can have caused it */
    int kf = -1;
    double mf = 0;
    const int rf = x->in->teacher_dir || f->leak_fp32 ? -1 : rp_cls_fresh_self_check(x->in->case_dir, 0, &kf, &mf);
    if (rf >= 0) {
        f->loop_differs = rf == 1 && f->leak_differs;
        if (rf == 1) snprintf(msg, sizeof msg, "differs from step %d (max-abs %.3g)", kf, mf);
        else snprintf(msg, sizeof msg, "agrees");
        cJSON_AddStringToObject(dj, "self_check_fresh", msg);
    }
    /* a rotated self check's fresh repeat that differs, against the same steps unrotated in
     * a fresh launch (made then): agreeing, the difference is the rotation's — the parts'
     * results depend on which rank computes them — and not the loop's. Unless the repeat
     * agrees at the self check's first differing step and parts only later: that earlier
     * difference is the second call's, a leak (weight-leak-rank: one rank's process writes its
     * weights at every forward, so its parts' results move within a call, and from call to
     * call) */
    int kp = -1;
    double mp = 0;
    const int rpl = rf == 1 ? rp_cls_fresh_self_check(x->in->case_dir, 1, &kp, &mp) : -1;
    if (rpl >= 0) {
        if (rpl == 1) snprintf(msg, sizeof msg, "differs from step %d (max-abs %.3g)", kp, mp);
        else snprintf(msg, sizeof msg, "agrees");
        cJSON_AddStringToObject(dj, "self_check_fresh_plain", msg);
    }
    if (rpl == 0 && f->loop_differs && kf > f->leak_step) f->loop_differs = 0; /* the leak's, earlier */
    if (rpl == 0 && f->loop_differs) {
        f->loop_differs = 0;
        f->rotated_differs = 1;
        f->leak_step = kf;
        f->leak_max_abs = mf;
        char d[PATHLEN];
        teacher_run a, b;
        rp_store_subdir(d, sizeof d, x->in->case_dir, RP_SUB_FRESH_SELF);
        const int la = teacher_run_load(&a, d);
        rp_store_subdir(d, sizeof d, x->in->case_dir, RP_SUB_FRESH_SELF_PLAIN);
        const int lb = la && teacher_run_load(&b, d);
        if (lb) first_differing_layer(x, &a, &b, kf, f->rotated_layer, sizeof f->rotated_layer);
        if (la) teacher_run_free(&a);
        if (lb) teacher_run_free(&b);
        if (f->rotated_layer[0]) cJSON_AddStringToObject(dj, "rotated_layer", f->rotated_layer);
    }
    /* when the leak check, the invariant shadow or a kernel-computed replica (each a
     * comparison of bits that presumes deterministic runs) differed, the runner ran the case
     * alone twice, each in a fresh launch: the two differ when the runs are nondeterministic,
     * agree when the difference is the case's own (state leaked between calls, or a bug);
     * after the fp32 shadow's leak check alone, the case at fp32, where its ulps stay */
    static const rp_store_sub PAIR[2][2] = {{RP_SUB_FRESH, RP_SUB_FRESH_2}, {RP_SUB_FRESH_FP32, RP_SUB_FRESH_FP32_2}};
    static const char *const KEY[2] = {"fresh_rerun", "fresh_rerun_fp32"};
    for (int q = 0; q < 2; q++) {
        char fa[PATHLEN], fb[PATHLEN], fmsg[96];
        rp_store_subdir(fa, sizeof fa, x->in->case_dir, PAIR[q][0]);
        rp_store_subdir(fb, sizeof fb, x->in->case_dir, PAIR[q][1]);
        struct stat sb;
        double fm = 0;
        const int made = stat(fa, &sb) == 0 && stat(fb, &sb) == 0;
        if (!made && !(f->leak_differs && f->leak_fp32 == q)) continue;
        if (!made) snprintf(fmsg, sizeof fmsg, "not run");
        else if (!runs_agree(fa, fb, &fm)) {
            f->fresh_differs = 1;
            f->fresh_max_abs = fm;
            snprintf(fmsg, sizeof fmsg, "the two differ (max-abs %.3g)", fm);
        } else if (q == 0 && !x->in->teacher_dir && !own_run_agrees(x->in->case_dir, fa, &fm)) {
            f->fresh_differs = 1;
            f->fresh_max_abs = fm;
            snprintf(fmsg, sizeof fmsg, "the two agree, and differ from the case's own run (max-abs %.3g)", fm);
        } else {
            f->fresh_agree = 1;
            snprintf(fmsg, sizeof fmsg, "the two agree");
        }
        cJSON_AddStringToObject(dj, KEY[q], fmsg);
    }
    if (f->fresh_differs) f->fresh_agree = 0;
}

/* The case's expect label as a verdict, or -1. */
static int expected_of(const rp_case *c) { return c->expect[0] ? rp_verdict_parse(c->expect) : -1; }

/* Decides, completes the JSON and writes it; sets the outputs. */
static rp_status cls_finish(cls *x, rp_verdict *out, int *pass, rp_error *err) {
    char summary[900];
    const rp_verdict v = rp_cls_decide(&x->f, summary, sizeof summary);
    if (x->f.twin_rejected[0]) /* the calibration's own failure, whatever the verdict */
        snprintf(summary + strlen(summary), sizeof summary - strlen(summary), "; calibration: %s",
                 x->f.twin_rejected);
    const int ex = expected_of(&x->c);
    /* an approximate case below the matrix's quality bound fails it whatever its label: the
     * bound is a requirement (its verdict stays approx, rp_cls_decide) */
    const int below = v == RP_V_APPROX && rp_cls_below_bound(&x->f);
    const int ok = (ex >= 0 ? rp_cls_meets((rp_verdict)ex, v) : !rp_verdict_fails(v, x->f.promised)) && !below;
    cJSON *j = x->j;
    cJSON_AddStringToObject(j, "verdict", rp_verdict_name(v));
    if (ex >= 0) cJSON_AddStringToObject(j, "expected", rp_verdict_name((rp_verdict)ex));
    else cJSON_AddNullToObject(j, "expected");
    cJSON_AddBoolToObject(j, "pass", ok);
    cJSON_AddStringToObject(j, "summary", summary);
    /* for margins: the precision judged, and the largest ratio any checked evidence reached
     * (a case is BUG by a ratio exactly when this exceeds the factor); "by_ratio": whether
     * that decided a BUG, or exact evidence did (replicas, images, leak) */
    cJSON_AddStringToObject(j, "precision", rp_cls_effective_precision(&x->c));
    if (x->f.failed == RP_V_COUNT) put(j, "largest_ratio", x->largest);
    const rp_cls_facts *f = &x->f;
    const int exact_first =
        (f->replica_break >= 0 && f->replica_first) || f->mismatch || (f->noise_break && f->noise_exact);
    if (v == RP_V_BUG)
        cJSON_AddBoolToObject(j, "by_ratio",
                              !exact_first && (f->noise_break || f->layer_break >= 0 ||
                                               (f->step_break >= 0 && !f->step_invariant && !f->step_emulation)));
    /* the schema's order: evidence and metrics last */
    cJSON *ev = cJSON_DetachItemFromObject(j, "evidence"), *mt = cJSON_DetachItemFromObject(j, "metrics");
    if (ev) cJSON_AddItemToObject(j, "evidence", ev);
    if (mt) cJSON_AddItemToObject(j, "metrics", mt);
    char p[PATHLEN];
    rp_pathf(p, PATHLEN, "%s/%s", x->in->case_dir, x->in->out_name ? x->in->out_name : "classification.json");
    RP_TRY(rp_store_write_json(p, j, err));
    if (out) *out = v;
    if (pass) *pass = ok;
    return RP_OK;
}

static void cls_free(cls *x) {
    cJSON_Delete(x->j);
    cJSON_Delete(x->im.arr);
    traj_free(&x->cm);
    traj_free(&x->rm);
    traj_free(&x->tb);
    traj_free(&x->ct);
    traj_free(&x->bt);
    free(x->cl);
    free(x->rl);
    free(x->cn);
    free(x->rn);
    rp_trace_free(&x->ctr);
    rp_trace_free(&x->rtr);
    rp_trace_free(&x->tbtr);
    rp_trace_free(&x->cttr);
    rp_trace_free(&x->bttr);
    for (int t = 0; t < x->n_tw; t++) twin_free(&x->tw[t]);
    free(x->tw);
    free(x->acc);
    free(x->env_acc);
    free(x->local);
    free(x->env_step);
    free(x);
}

rp_status rp_classify_dir(const rp_cls_inputs *in, rp_verdict *out, int *pass, rp_error *err) {
    assert(in && in->case_dir && in->ref_dir);
    cls *x = calloc(1, sizeof *x);
    if (!x) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    x->in = in;
    x->o = &in->opts;
    rp_trace_init(&x->ctr);
    rp_trace_init(&x->rtr);
    rp_trace_init(&x->tbtr);
    rp_trace_init(&x->cttr);
    rp_trace_init(&x->bttr);
    rp_cls_facts_init(&x->f);
    snprintf(x->base, sizeof x->base, "%s", in->twin_base_dir ? in->twin_base_dir : in->ref_dir);
    x->j = cJSON_CreateObject();
    rp_status st = x->j ? RP_OK : RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    char p[PATHLEN];
    rp_store_path(p, sizeof p, in->case_dir, RP_ART_CASE);
    if (st == RP_OK) st = rp_case_load(p, &x->c, err);
    if (st != RP_OK) {
        cls_free(x);
        return st;
    }
    rp_case_id(&x->c, x->cid);
    rp_error e;
    rp_store_path(p, sizeof p, in->ref_dir, RP_ART_CASE);
    if ((x->have_rc = rp_case_load(p, &x->rc, &e) == RP_OK)) rp_case_id(&x->rc, x->rid);
    else snprintf(x->rid, sizeof x->rid, "?");
    cJSON_AddNumberToObject(x->j, "schema", 1);
    cJSON_AddStringToObject(x->j, "case_id", x->cid);
    cJSON_AddStringToObject(x->j, "reference_id", in->ref_label ? in->ref_label : x->rid);
    char key[256];
    rp_classify_opts_key(x->o, key, sizeof key);
    cJSON_AddStringToObject(x->j, "options_key", key);
    x->ev = cJSON_AddObjectToObject(x->j, "evidence");
    x->mt = cJSON_AddObjectToObject(x->j, "metrics");
    x->floor = rp_cls_floor(rp_cls_effective_precision(&x->c),
                            x->have_rc ? rp_cls_effective_precision(&x->rc) : NULL, x->o->factor);
    const int warmup_exact = rp_case_exactness(&x->c) == RP_PAR_WARMUP_EXACT;
    x->f.approx = rp_cls_exact_steps(&x->c) < x->c.steps;
    x->f.warmup = x->c.warmup_steps;
    x->f.promised = !strcmp(x->c.mode, "deterministic");
    cJSON_AddStringToObject(x->ev, "exactness", warmup_exact ? "warmup-exact" : "exact");
    x->f.invariant = x->have_rc && !x->f.approx && rp_cls_invariant_pair(&x->c, &x->rc);
    x->step_floor = x->floor;
    if (x->f.invariant) x->floor = x->step_floor = 0.0; /* any difference breaks */
    cJSON_AddBoolToObject(x->ev, "invariant", x->f.invariant);
    cls_status(x);
    if (x->f.failed == RP_V_COUNT) {
        x->f.is_reference = !in->ref_label && same_dir(in->case_dir, in->ref_dir);
        x->ref_local = !in->twin_base_dir || same_dir(in->twin_base_dir, in->ref_dir);
        /* the twins ran beside the reference, on its device: a case on that device too */
        if (!x->f.invariant && x->have_rc && x->ref_local)
            x->step_floor = rp_cls_step_floor(rp_cls_effective_precision(&x->c), rp_cls_effective_precision(&x->rc),
                                              same_device(&x->c, &x->rc), x->o->factor);
        x->envj = cJSON_AddObjectToObject(x->ev, "envelope");
        put(x->envj, "factor", x->o->factor);
        put(x->envj, "floor", x->floor);
        put(x->envj, "step_floor", x->step_floor);
        st = cls_load(x, err);
        if (st == RP_OK) cls_asked(x);
        if (st == RP_OK) st = cls_twins(x, err);
        if (st == RP_OK) {
            cls_layers(x);
            cJSON_AddItemToObject(x->envj, "steps", num_array(x->env_step, x->N, NULL));
            cJSON_AddItemToObject(x->envj, "accumulated", num_array(x->env_acc, x->N + 1, NULL));
            cJSON_AddItemToObject(x->ev, "accumulated", num_array(x->acc, x->N + 1, NULL));
            cls_noise(x);
            cls_noise_draw(x);
            cls_schedule(x);
            st = cls_teacher(x, err);
        }
        if (st == RP_OK && !x->f.invariant) cls_shadow(x);
        if (st == RP_OK) cls_invariant_shadow(x);
        if (st == RP_OK) cls_emulation(x);
        if (st == RP_OK) cls_replicas(x);
        if (st == RP_OK) st = cls_assignment(x, err);
        if (st == RP_OK) st = cls_final_latents(x, err);
        if (st == RP_OK) st = cls_decode(x, err); /* after the latents' assignment: its MISMATCH names first */
        if (st == RP_OK) st = cls_decode_shadow(x, err);
        if (st == RP_OK) {
            cls_approx(x, warmup_exact);
            cls_determinism(x);
            cls_first(x);
        }
    }
    if (st == RP_OK) st = cls_finish(x, out, pass, err);
    cls_free(x);
    return st;
}
