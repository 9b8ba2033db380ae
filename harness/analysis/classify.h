/* classify.h — tells expected floating-point drift from approximation and from real
 * bugs, and says where a divergence began (docs/classification.md has the reasoning).
 *
 * A final-image PSNR cannot do it: diffusion sampling amplifies a rounding difference
 * step after step, so pure drift can end far apart. The verdict rests on evidence that
 * the amplification does not touch:
 *   envelope      the rounding twins of the reference (the same config with only the
 *                 rounding changed: reduce_split flipped, another GEMM thread count, one
 *                 ulp up in the initial noise, ...) give per layer of the first
 *                 evaluation, per step of the teacher-forced trajectory and per step of
 *                 the free trajectory the size of pure rounding drift for this model,
 *                 precision and seed;
 *   layers        the candidate's first evaluation against the reference's, layer by
 *                 layer: the first layer whose relative difference exceeds factor x the
 *                 envelope is where a bug begins;
 *   teacher       the candidate's configuration run ONE step from each of the
 *                 reference's latents x_k: the local error of every step, against the
 *                 envelope of the twins' own one-step runs; the initial noise (layout-
 *                 independent by construction) against the noise twin;
 *   approx        after warmup an approximate strategy must meet the matrix's bound on
 *                 the final images (SSIM and PSNR against the reference);
 *   assignment    per item the distance to every reference item: item i much closer to
 *                 reference item j != i than to i is a MISMATCH;
 *   determinism   repeats must be bitwise equal, and so must a run made after another
 *                 case in the same worker process (state leaking between calls).
 * A ratio is value / max(envelope, floor) where floor (rp_cls_floor) makes factor x floor
 * the most rounding can move a value (fp32: 2^-24, the factor covering a reordered sum;
 * case and reference both bf16: 8 roundings of 2^-8): below it a difference is rounding,
 * whatever the twins happened to show.
 *
 * The pure functions below take loaded numbers; rp_classify_dir reads a case directory,
 * its reference's and the twins', and writes <case>/classification.json (harness/analysis/verdict.h
 * has its schema). */
#ifndef REPRO_CLASSIFY_H
#define REPRO_CLASSIFY_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "engine/error.h"
#include "engine/trace.h"
#include "harness/case/case.h"
#include "harness/analysis/verdict.h"

/* ---- options (the matrix's `classify:` mapping) ------------------------------------ */

#define RP_CLS_DEFAULT_TWINS 3
#define RP_CLS_MAX_TWINS 6
#define RP_CLS_DEFAULT_FACTOR 64.0      /* the default: a bug is 64x rounding */
#define RP_CLS_DEFAULT_APPROX_SSIM 0.90
#define RP_CLS_DEFAULT_APPROX_PSNR 25.0
#define RP_CLS_MISMATCH_MARGIN 8.0      /* "much closer": 8x closer to another item */

typedef struct rp_classify_opts {
    int enabled;          /* 0: no twins, no teacher runs, no classification.json */
    int twins;            /* RP_CLS_DEFAULT_TWINS .. RP_CLS_MAX_TWINS (rp_cls_twin_name) */
    double factor;        /* > 1: how far beyond the envelope a layer or step is a bug */
    double approx_ssim;   /* approx bound: final SSIM at least (every item) */
    double approx_psnr;   /* and PSNR (dB) at least */
    int teacher_steps;    /* 0: teacher-force every step; N: N steps spread over the run */
    int leak_check;       /* 1: recompute the case's first steps after its run in one worker */
    int invariant_shadow; /* 1: a layout's invariant shadow where it has one (rp_cls_invariant_shadow_pair) */
} rp_classify_opts;

void rp_classify_opts_default(rp_classify_opts *o);
/* The options as text: classification.json keeps it, so editing them makes it stale. */
void rp_classify_opts_key(const rp_classify_opts *o, char *buf, size_t cap);

/* ---- twins ---------------------------------------------------------------------------- */

/* Twin kinds: 0 .. RP_CLS_MAX_TWINS - 1 as the `twins` option counts them, then the
 * attention twin, which every reference of a coarser precision gets (rp_cls_twin_list). */
#define RP_CLS_TWIN_ATTENTION RP_CLS_MAX_TWINS
#define RP_CLS_TWIN_KINDS (RP_CLS_MAX_TWINS + 1)
/* Name of twin k (0 .. RP_CLS_TWIN_KINDS - 1): "reduce-split", "threads", "noise-ulp",
 * "reduce-split+noise-ulp", "threads+noise-ulp", "reduce-split+threads", "attention". */
const char *rp_cls_twin_name(int k);
/* 1 when twin k changes the arithmetic (not only the initial noise). */
int rp_cls_twin_other_math(int k);
/* The twins of reference ref with the option `twins` (kinds 0 .. twins - 1), into
 * out[RP_CLS_TWIN_KINDS]; returns how many. A reference whose GEMMs round coarser than
 * fp32 (bf16, fp16, tf32) also gets the attention twin: another exact attention algorithm
 * (math <-> subquad), because there the rounding of the attention's probabilities to the
 * GEMM precision varies between layouts far more than any fp32 summation order does. */
int rp_cls_twin_list(const rp_case *ref, int twins, int *out);
/* 1 when twin k of ref measures rounding that case c may move, so its envelope is c's. Every
 * twin does but the attention twin, which measures another attention *algorithm* (other
 * chunks of the keys, so other probabilities rounding the other way): it applies to c only
 * when c's attention may run another algorithm or order than ref's (another variant, chunks,
 * device profile, kernel set or device, or a layout that moves keys or heads between ranks:
 * ring, Ulysses, pipefusion, patch). A case that splits only the batch (dp, cfg_parallel) or
 * changes threads, reduce_split, the backend or the fault computes each (batch, head)
 * slice's attention as ref does; the twins that move GEMM order hold what it moves. Taking
 * the attention twin's envelope for such a case let a bf16 rounding of the whole guided
 * output (audit 12: the cfg exchange in bf16, 5e4 x the case's own layout's local error at
 * step 0) pass as x1.0 of an envelope made by subquad attention. */
int rp_cls_twin_applies(int k, const rp_case *c, const rp_case *ref);
/* Twin k of the reference case ref: *twin = ref with reduce_split flipped and/or threads
 * changed (1 <-> 2; 0 counts as 1), or its attention swapped (math <-> subquad), its name
 * "twin <name>: <ref name>";
 * *perturb_noise = 1 when the run takes `--perturb-noise` (one ulp in the initial noise). */
void rp_cls_twin_case(const rp_case *ref, int k, rp_case *twin, int *perturb_noise);

/* ---- teacher steps -------------------------------------------------------------------- */

/* The steps of c whose teacher-forced error the classifier checks against the envelope:
 * its first rp_cls_exact_steps(c). All of them, but for an approximate layout after its
 * warmup (a warmup-exact strategy with warmup_steps < steps): only the warmup steps, since
 * after them the layout differs by design. */
int rp_cls_exact_steps(const rp_case *c);
/* The steps [0, n) of c's invariant shadow that must be bitwise its reference's: the exact
 * steps, and for an approximate layout also the first step after its warmup, which the
 * shadow runs with fresh keys (rp_parallel.fresh_kv): the strategy's later-step code
 * computing the exact result; contiguous with the warmup, so a multistep sampler's history
 * holds. (The worker adds the last step for a first-order sampler: job_case.c.) */
int rp_cls_shadow_steps(const rp_case *c);

/* mask (steps): which steps a teacher run evaluates. teacher_steps 0 or >= steps: all;
 * else that many spread evenly from the first to the last step (k = round(j (steps-1) /
 * (n-1)); 1: step 0). multistep (DPM-Solver++(2M), whose step uses the one before): all.
 * Then none from exact_steps (rp_cls_exact_steps) on but step 0: nothing there is checked
 * against the envelope, and leaving out a suffix breaks no multistep history nor a
 * strategy's state across steps; step 0 always runs (when selected), since its input is the
 * case's own (the same noise) and the leak check compares the outputs (rp_cls_rerun_check).
 * Returns how many steps are set. */
int rp_cls_teacher_mask(int steps, int exact_steps, int teacher_steps, int multistep, unsigned char *mask);

/* ---- numbers ---------------------------------------------------------------------------- */

/* Unit roundoff of a precision name: fp32 2^-24, tf32 and fp16 2^-11, bf16 2^-8;
 * unknown names 2^-24. */
double rp_cls_unit_roundoff(const char *precision);
/* How many roundings of a precision coarser than fp32 a layer may differ by through
 * rounding alone: two correct roundings of nearly equal values differ by one ulp (at most
 * 2u relative), so a tensor whose every value rounds the other way moves by at most 2u in
 * relative L2; a layer that amplifies its inputs' rounding up to 4x (a norm, a softmax),
 * by 8u. */
#define RP_CLS_COARSE_ROUNDINGS 8.0
/* The envelope's floor for a case whose GEMMs run `precision` against a reference whose
 * run ref_precision (NULL: the same), judged at `factor` (a break needs value > factor x
 * max(envelope, floor)); u is the coarser of the two unit roundoffs. fp32: u (a reordered
 * length-K sum moves by up to ~K u; the factor covers sqrt(K) of it over what a twin
 * shows). Both at one coarser precision (bf16, fp16, tf32), which rounds values at u but
 * sums in fp32, whose reordering moves them 2^16 (bf16) times less: what the arithmetic
 * may change is which values round the other way, RP_CLS_COARSE_ROUNDINGS u / factor,
 * never below fp32's u, so a layer must differ by more than 8 of its roundings (and by
 * factor x its twins' envelope). A floor of u there let a bf16 layer whose twins agree to
 * 6e-8 differ by 25% unseen (audit 8: one rank's timestep rounded to bf16, t_embedder 17%
 * off). One coarser than the other (a TF32 GPU case against an fp32 reference): u, since
 * then every value carries the coarser rounding, which no twin of the finer side
 * measures. Non-positive factor: u. */
double rp_cls_floor(const char *precision, const char *ref_precision, double factor);
/* The floor of a step's output (its local error) against the same reference: a sampler's
 * state is fp32 whatever precision the GEMMs round at, and every correct rounding between
 * the model's output and the step's (the guidance combine, the update, their scalar
 * coefficients) is fp32's, so what a coarser precision may move reaches the step only
 * through the model's output, by the amount the twins measure there (their teacher runs
 * flip its roundings). So: fp32's u when the case and its reference run on the same device
 * (same_device) at one precision; otherwise rp_cls_floor, since then no twin measures the
 * other side's roundings (another device's kernels, another precision). With the layer
 * floor applied to steps, a bf16 rounding of every guided value (audit 12: the cfg exchange
 * rounded to bf16, the step's local error 5e4 x its twins') stayed under 8 bf16 roundings. */
double rp_cls_step_floor(const char *precision, const char *ref_precision, int same_device, double factor);
/* The precision case c's GEMMs really run: its `precision`, except that an fp32 case on a
 * CUDA device in gpu_mode fast lets cuBLAS use TF32 tensor cores (engine/cuda/gemm_lt.cu):
 * "tf32". The envelope's floor follows it. */
const char *rp_cls_effective_precision(const rp_case *c);

/* 1 when c and ref both run numerics=invariant and differ only in how the work is laid out
 * (dp, cfg_parallel, ulysses, ring, backend, threads, blas_core) and in the injected fault:
 * then c must be bitwise ref, no rounding envelope applies and any difference is a BUG
 * (docs/invariant.md). pipefusion and patch never qualify (validation refuses them with
 * invariant numerics: they are approximate after warmup). */
int rp_cls_invariant_pair(const rp_case *c, const rp_case *ref);

/* The invariant shadow of case c (docs/classification.md §12): c with numerics=invariant,
 * precision fp32 (a layout fault below bf16's rounding still moves fp32 bits), attention
 * math (no chunk sizes or profile) and reduce_split 0, its layout, threads and fault unchanged;
 * into *out. Returns 0 (out untouched) when c has none: it
 * already runs invariant numerics, is approximate (pipefusion, patch) with no exact step
 * (warmup_steps 0; with warmup, only its exact steps are compared), or runs on a CUDA
 * device in tf32 / fp16 or an approximate layout there. Whether the shadow validates (a ring shard of
 * whole canonical key blocks) is the caller's check (harness/sweep/validate.h). */
int rp_cls_invariant_shadow(const rp_case *c, rp_case *out);
/* The invariant shadow at c's own precision when that is coarser than fp32 (bf16): as
 * rp_cls_invariant_shadow but with c's precision, run beside the fp32 one. The fp32 shadow
 * holds the layout's shared code to fp32's resolution; this one runs the code a precision
 * selects (a branch taken in bf16 only, on one rank: audit 11's erf GELU in one rank's bf16
 * MLPs was drift, no other evidence executing it exactly). Returns 0 (out untouched) for an
 * fp32 case or one with no invariant shadow. */
int rp_cls_invariant_shadow_own(const rp_case *c, rp_case *out);

/* 1 when the invariant shadows of c and its reference ref exist, are an invariant pair
 * and are not the same case: c's layout (or fault) teacher-forced under invariant numerics
 * must then be bitwise ref's, so any difference is a BUG with no envelope. 0 also when
 * the two differ only where the shadow normalises (attention variant, reduce_split) or in
 * the OpenBLAS kernel set, which no invariant kernel calls. */
int rp_cls_invariant_shadow_pair(const rp_case *c, const rp_case *ref);

/* The serial emulation of c, a PipeFusion case with stages (pipefusion > 1), into *out:
 * the same case on one stage over the same pipeline patches (pipefusion 1,
 * num_pipeline_patch M, no stage sizes) and the same injected fault — the same source run
 * with one stage. With the patches fixed, the stages only hand each patch's residual
 * stream on and broadcast the output, bit for bit: every GEMM, attention and norm sees the
 * same rows in the same order at any stage count, so c's own run must be bitwise its
 * emulation's at every step and in every precision (docs/classification.md §13). Returns
 * 0 (out untouched) when c has no stages, no step after its warmup (every step synchronous:
 * held to the serial run itself), or runs on a CUDA device (not yet run there).
 * Whether the emulation validates is the caller's check. */
int rp_cls_emulation(const rp_case *c, rp_case *out);

/* How a case c's images decoded from its reference ref's final latents are held to ref's
 * images (docs/classification.md §8): bitwise when they decode with the same arithmetic (or
 * are an invariant pair), within one 8-bit level in at most rp_cls_one_level_count of the
 * values when c's decoder computes in fp32, and by no
 * rule otherwise (a decoder that rounds coarser, with other arithmetic, can move a pixel by
 * several levels). The worker decodes the reference's latents only where a rule holds: the
 * images of a case under RP_CLS_DECODE_NONE are checked for assignment only, its own. */
typedef enum rp_cls_decode_rule {
    RP_CLS_DECODE_BITWISE = 0,
    RP_CLS_DECODE_ONE_LEVEL,
    RP_CLS_DECODE_NONE
} rp_cls_decode_rule;
rp_cls_decode_rule rp_cls_decode_rule_of(const rp_case *c, const rp_case *ref);
/* The most values of a decoded image the one-level rule lets change (a fraction): a decoder
 * whose arithmetic differs from the reference's by fp32 rounding moves a value of up to 255
 * levels by about 255 u; its 8-bit rounding flips with probability about that move (the
 * chance that a boundary lies within it), so factor x 255 u (0.1% at factor 64) holds up to
 * factor x of amplification, as the envelope's factor does. Measured: 0.002-0.006% changed
 * in clean fp32 decodes with another attention variant; audit 12's DiT VAE attention at scale
 * 1 changed 2.5%, each by one level. */
double rp_cls_one_level_fraction(double factor);
/* The most of n values the one-level rule lets change: the count of flips is a sum of n rare
 * independent events, so it is held to the Poisson tail of its largest expected count,
 * lambda = n x rp_cls_one_level_fraction(factor): the smallest k with P(X > k) < 1e-6 for
 * X ~ Poisson(lambda). The fraction alone let a 32x32 image (3072 values, lambda 3) change
 * 2 values, which clean decodes at another kernel set reached (the drift corpus, 2026-11-30);
 * this lets it change 14, a 256x256 image 260 of 196608 (lambda 191). */
size_t rp_cls_one_level_count(size_t n, double factor);

/* The case whose decoder arithmetic the images' teacher forcing of c (against ref) uses:
 * c with ref's precision, numerics, attention (variant, chunks, device profile),
 * reduce_split and threads, when c's process can compute that way (the same kernel set, VAE
 * and weights, on the host: a CUDA device is made for one precision, and the kernel set is
 * picked when the process loads OpenBLAS; the thread count is set for the decode); else c. The layout's
 * decode path (which rank decodes which item, how images come back) stays c's. Returns 1
 * when that changed c's decoder arithmetic. */
int rp_cls_decode_as(const rp_case *c, const rp_case *ref, rp_case *out);
/* The rule of a second decode of ref's final latents with c's layout and c's *own* decoder
 * arithmetic, made when the images' teacher forcing ran ref's instead (rp_cls_decode_as
 * changed it), so that the decoder code that c's own arithmetic selects runs on a judged
 * input too: rp_cls_decode_rule_of(c, ref), one level at fp32; RP_CLS_DECODE_NONE (no such
 * decode) when the teacher decode already ran c's arithmetic or no rule would hold one (a
 * coarser decoder). Audit 12: the VAE's attention given scale 1 whenever the variant was not
 * math moved images to 15 dB, and every judged decode ran math. */
rp_cls_decode_rule rp_cls_own_decode_rule(const rp_case *c, const rp_case *ref);
/* The rule the images' teacher forcing of c is held to: rp_cls_decode_rule_of of
 * rp_cls_decode_as(c, ref) against ref. */
rp_cls_decode_rule rp_cls_teacher_decode_rule(const rp_case *c, const rp_case *ref);
/* 1 when c's fp32 shadow (its layout teacher-forced at fp32, <case>/shadow/teacher/) ends
 * with a decode of ref's final latents with c's layout and c's own decoder arithmetic at
 * fp32, held to the one-level rule against ref's final latents decoded at fp32 with ref's
 * arithmetic: ref's own images when ref decodes at fp32, else those its own fp32 shadow
 * decodes (rp_cls_decode_shadow_ref). That is: c decodes coarser than fp32, on the host (where
 * its fp32 shadow runs), with ref's VAE and weights, and its decoder arithmetic is not ref's
 * (else its teacher decode is bitwise the reference's already). No rule holds a coarser
 * decoder with other arithmetic (rp_cls_decode_rule_of), but a decoder's fault keyed on that
 * arithmetic does not depend on the precision, as a layout's bug does not (§9). Audit 12: the
 * VAE's attention given scale 1 whenever the variant was not math was BUG in fp32 and drift
 * in bf16. */
int rp_cls_decode_shadow(const rp_case *c, const rp_case *ref);
/* 1 when c has an fp32 shadow (§9: its layout teacher-forced at fp32): it rounds coarser than
 * fp32, on the host (a CUDA device is made for one precision). */
int rp_cls_has_fp32_shadow(const rp_case *c);
/* 1 when ref's images for rp_cls_decode_shadow(c, ref) are those of its own fp32 shadow
 * (<ref>/shadow/teacher/): ref decodes coarser than fp32 on the host. The runner then asks
 * ref's launch for that decode. */
int rp_cls_decode_shadow_ref(const rp_case *c, const rp_case *ref);

/* ||x - ref|| / ||ref|| over n floats in double; 0 when both are zero, +inf when only ref
 * is zero or x holds a NaN/inf where ref is finite. */
double rp_cls_rel_l2(const float *ref, const float *x, size_t n);

/* out[k] = max over items b of rp_cls_rel_l2(ref[k, b], x[k, b]) for rows k of
 * (rows, B, per) arrays. */
void rp_cls_rows_rel(const float *ref, const float *x, int rows, int B, size_t per, double *out);

/* A twin is a rounding of its reference: at the first evaluation it must sit within the
 * envelope the other twins make there (and the floor), as any drift case does. One that
 * moves a layer beyond factor x max(floor, every other twin's move there) ran code that
 * is not a rounding of the reference: a bug on its knob's path, which would otherwise be
 * calibrated in as rounding and widen every case's envelope (audit 13: a split-K fixup that
 * scales half the sum made the reduce-split twin move the first attention by 1.08 where the
 * others moved it 6e-7, and hid another case's bug at x3.3e4). Twins t of n (tr[t], eval
 * ev[t]; ev[t] < 0: none) against base's records at evaluation beval: out[t] = 1 for each
 * such twin, and why[t] says where. Past a twin's first differing layer, a layer no other
 * twin moves at all is not judged (no peer measured it; an amplifying layer carries an
 * upstream rounding past the floor). Returns how many. n <= RP_CLS_TWIN_KINDS. */
int rp_cls_twins_not_rounding(const rp_trace *base, int beval, const rp_trace *const *tr, const int *ev, int n,
                              double floor, double factor, unsigned char *out, char (*why)[200]);

/* Relative difference of one layer's two trace records: the larger of the samples'
 * rel-L2 and |l2(x) - l2(ref)| / l2(ref). +inf when the shapes differ or x has a NaN. */
double rp_cls_layer_rel(const rp_trace_rec *ref, const rp_trace_rec *x);

/* The ratio of a value to its envelope: value / max(env, floor) (NaN value: +inf). */
double rp_cls_ratio(double value, double env, double floor);

/* First index k < n with mask[k] (NULL: all) and ratio(value[k], env[k], floor) > factor;
 * -1 when none. *ratio (may be NULL) gets that index's ratio. */
int rp_cls_first_break(const double *value, const double *env, const unsigned char *mask, int n, double floor,
                       double factor, double *ratio);

/* Assignment of B candidate items to B reference items from D (B x B, row-major: D[i B + j]
 * = distance of candidate item i to reference item j): perm[i] = the j minimising D[i][j]
 * (ties to i). Returns 1 (a MISMATCH) when some item i has min_{j != i} D[i][j] x margin
 * < D[i][i]; perm then names the matches. */
int rp_cls_assignment(const double *D, int B, double margin, int *perm);
/* "item 2 matches reference item 0, item 3 matches reference item 1" (items with
 * perm[i] != i only). */
void rp_cls_assignment_message(const int *perm, int B, char *buf, size_t cap);

/* Orders trace records by evaluation, then the model's execution order (embedders,
 * blocks by index with attention < context attention < MLP < block output, single
 * blocks, final layers; unknown names last, by name). The trace file keeps no order
 * (safetensors sorts names), so this rebuilds it. */
void rp_cls_sort_layers(rp_trace_rec *recs, int n);

/* Loads a trace.safetensors into *t (rp_trace_free after), records sorted by
 * rp_cls_sort_layers. */
rp_status rp_cls_trace_load(const char *path, rp_trace *t, rp_error *err);

/* ---- the decision ------------------------------------------------------------------- */

/* What rp_cls_decide weighs; the driver fills it from the files. */
typedef struct rp_cls_facts {
    rp_verdict failed;        /* the run's own end: CONFIG_ERROR, CRASH, HANG, SKIPPED; or
                                 RP_V_COUNT when it ran to completion */
    char failed_reason[600];
    int is_reference;         /* the case is its own reference */
    int identical;            /* latents, trajectory and images bitwise the reference's */
    int invariant;            /* an invariant pair (rp_cls_invariant_pair): every envelope is 0 */
    int mismatch;             /* assignment found another item closer */
    char mismatch_msg[512];
    /* exact evidence: index of the first break or -1, and its ratio */
    int layer_break;          /* first layer of the first evaluation beyond the envelope */
    char layer_name[96];
    double layer_ratio;
    int layer_exact;          /* that layer is one no twin moves at all, held bitwise (cls_layers) */
    int noise_break;          /* 1: the initial noise differs beyond the noise envelope */
    double noise_ratio;
    int noise_exact;          /* the noise was held bitwise (a reference made on this machine) */
    double noise_rel;         /* its relative L2 to the reference's noise */
    int step_break;           /* first teacher-forced step beyond the envelope, or -1 */
    double step_ratio;
    char step_layer[96];      /* the first layer beyond the envelope in that step ("" none) */
    double step_layer_ratio;
    char layer_items[64];     /* with layer_break: the items whose step 0 output breaks the
                                 envelope, when not all ("" otherwise) */
    char step_items[64];      /* the items whose own local error breaks the envelope at that
                                 step, "item 3" / "items 1, 3"; "" when every item's does (or
                                 not known) */
    int step_after_model;     /* no layer: every traced layer of that step's evaluation stayed
                                 within its envelope, so the difference entered after the
                                 model's last layer (step_layer then names that stage) */
    int step_shadow;          /* that step broke in the case's fp32 shadow (a bf16/fp16/tf32
                                 case's layout run at fp32 from the same latents) */
    int step_invariant;       /* that step differs in the case's invariant shadow (its layout
                                 teacher-forced under invariant numerics): exact evidence */
    char invariant_at[8];     /* "" the fp32 invariant shadow; else the precision of the one
                                 at the case's own precision (rp_cls_invariant_shadow_own) */
    int step_emulation;       /* that step of the case's own run differs from its serial
                                 emulation's (rp_cls_emulation), from the same input: exact
                                 evidence */
    int emulation_patches;    /* M of the emulation compared (0: none was) */
    int emulation_equal;      /* the case's latents, trajectory and images are bitwise its
                                 emulation's */
    int teacher_missing;      /* exact steps could not be checked (no teacher run) */
    /* approximate strategies */
    int approx;               /* the case is approximate after warmup */
    int warmup;
    int have_quality;         /* ssim / psnr below are known */
    double ssim, psnr, bound_ssim, bound_psnr;
    /* determinism */
    int promised;             /* mode deterministic */
    int repeats_differ;       /* some repeat differs from run 1 */
    double repeat_max_abs;
    int leak_differs;         /* a step recomputed after the case's run differs from the case's */
    int leak_step;            /* from this step on */
    int leak_fp32;            /* 1: seen only by the fp32 shadow's leak check (the case's own,
                                 in its coarser precision, agreed); the fresh pair is then
                                 the case at fp32 */
    double leak_max_abs;
    int rotated_differs;      /* the self check ran rotated (rp_cls_self_rotated) and its fresh repeat
                                 differs from the case at leak_step while the same steps unrotated in a
                                 fresh launch agree: a part's result depends on which rank computes it */
    char rotated_layer[96];   /* the first traced layer of that step where the two repeats part ("") */
    int loop_differs;         /* the self check's steps again as the first call of a fresh launch
                                 differ from the case's too: no earlier call is involved, the
                                 case's sampling loop computed other bits than its steps do */
    int fresh_differs;        /* the two fresh runs of the case, made when the leak check, the
                                 invariant shadow or a replica check differed, differ from
                                 each other (latents, trajectory, traces or replicas): the
                                 runs are nondeterministic (not leaking state, not a bug
                                 that exact comparisons of reruns could show) */
    double fresh_max_abs;
    int fresh_agree;          /* the fresh pair was made and agrees: the runs are shown
                                 deterministic, whatever the mode promised (in mode fast, the
                                 exact evidence then decides as in deterministic mode) */
    /* replica consistency (engine/parallel/replica.c): a rank's copy of a replicated tensor */
    int replica_break;        /* step where some copy differs from its leader's, or -1 */
    int replica_first;        /* 1: it is the earliest evidence (before any layer or step break) */
    int replica_host;         /* 1: the copy is a host-computed input (the world group: the
                                 timestep, the guidance), which no kernel's timing can move:
                                 a BUG in fast mode too */
    int replica_later;        /* 1: seen in a run after the case's own (its teacher run, its
                                 shadows), which a leak would have reached */
    int replica_own;          /* 1: the own group: a rank's result of the layout's own arithmetic
                                 against its recomputation from the same inputs (no other copy) */
    int replica_stale;        /* 1: the stale group, the layout's contracts: K/V rows an
                                 approximate strategy used against the ones its staleness
                                 contract names, a pipeline's block ownership, the cfg exchange's
                                 segments (host checks: a BUG in fast mode too;
                                 engine/parallel/stale_check.c) */
    int replica_gather;       /* 1: the gather group: rank 0's gathered copy of a dp group's rows
                                 against what the group's leader holds (a host copy: first, as
                                 every comparison of the stored trajectory reads that copy) */
    char replica_tensor[96];
    char replica_msg[400];    /* "rank 1's copy differs from rank 0's (replica group, teacher run)" */
    /* the images' teacher forcing: the reference's final latents decoded with the case's layout */
    int image_break;          /* the first item whose decoded image breaks its rule, or -1 */
    char image_msg[256];
    char twin_rejected[300]; /* a twin left out of the envelope: not a rounding of the reference
                                (its knob's path is suspect); "" none */
    /* the inputs, held apart from any other run */
    int noise_draw_break;     /* the first item whose returned initial noise is not the draw of
                                 its seed and index in case.json (rp_randn, drawn here), or -1 */
    char noise_draw_msg[320];
    int teacher_input_break;  /* the first item whose teacher-forcing run did not start from
                                 the reference's rows while the case's own run started from
                                 the right noise (the harness fed the teacher), or -1 */
    int teacher_input_step;   /* the step that row is the input of */
    char teacher_input_msg[512];
    int ran_break;            /* 1: the run did not run what case.json asks for: its context
                                 or its parallel layout was configured otherwise (the trace's
                                 notes of the knobs and of the layout), or
                                 an attention kernel other than the variant asked ran (or with
                                 other tiles), undeclared (rp_attn_note_ran), or a GEMM did
                                 not take a knob, or its schedule is not its problem's */
    int ran_step;             /* the step it acts at first (0 but for the schedule) */
    char ran_what[32];        /* "configuration" | "attention kernel" | "schedule" */
    char ran_msg[400];
    /* the run's own outputs: its trajectory's first row against the noise it returned */
    int trajectory_break;     /* the first item whose trajectory does not start at its own
                                 noise, or -1 */
    char trajectory_msg[320];
    /* the run's own outputs: the final latents it returned against its trajectory's last row */
    int latents_break;        /* the first item whose returned final latents are not the state
                                 its last step produced, or -1 */
    char latents_msg[256];
} rp_cls_facts;

/* Initialises f to "ran, nothing found". */
void rp_cls_facts_init(rp_cls_facts *f);

/* The verdict of the facts, first match wins:
 *   the run's failure (CONFIG_ERROR, CRASH, HANG, SKIPPED; a reference that poses another
 *        problem than the case is CONFIG_ERROR, rp_case_problem_diff);
 *   BUG: the teacher-forcing run was fed other rows than the reference's (the harness's own
 *        fault; its local errors are then no evidence);
 *   MISMATCH;
 *   BUG: the run was configured otherwise than case.json asks, or an attention kernel other
 *        than the variant asked ran (cls_asked);
 *   BUG (invariant pair): the earliest difference at all, naming the tensor and the step;
 *   BUG: a rank's copy of a replicated tensor differs (fast mode, or a kernel-computed
 *        tensor while two fresh runs of the case differ from each other: NONDETERMINISTIC),
 *        the initial noise differs (bitwise against a reference made here) or breaks its
 *        envelope, or is not the draw of its seed and index (held against a draw made here,
 *        not another run: cls_noise_draw), the trajectory does not start at the run's own noise, a layer or a
 *        checked step breaks the envelope, a PipeFusion case's own run differs from its
 *        serial emulation's (rp_cls_emulation), the reference's final
 *        latents decoded with the case's layout give another image, the final latents the
 *        run returned are not its last step's — the summary names the earliest of these;
 *   NONDETERMINISTIC: repeats differ, or the two fresh runs (made when the leak check, the
 *        invariant shadow or the replica check differed) differ from each other;
 *   BUG (deterministic mode) or NONDETERMINISTIC (fast mode): the leak check differs while
 *        a fresh rerun is bitwise the case's run (or was not made);
 *   identical (the reference itself, or bitwise equal to it); approx (an approximate case,
 *   not bitwise: within its quality bound, or below it — its exact checks all held, so the
 *   loss is the approximation's; the case then fails its matrix, rp_cls_below_bound); drift.
 * summary (cap bytes) gets one line of the evidence that decided it. */
rp_verdict rp_cls_decide(const rp_cls_facts *f, char *summary, size_t cap);

/* 1 when f is an approximate case whose images are below the matrix's quality bound
 * (classify: {approx_ssim, approx_psnr}): a requirement that fails the case, not a BUG. */
int rp_cls_below_bound(const rp_cls_facts *f);

/* Whether verdict v meets the expected label: the same verdict, or identical for an
 * expected drift, or identical / drift for an expected approx. */
int rp_cls_meets(rp_verdict expected, rp_verdict v);

/* Prints the confusion table of n labelled cases (expected[i]: the case's verdict label,
 * verdict[i]: its verdict) to f: one row per expected label, one column per verdict seen
 * or expected, then "confusion: diagonal" or "confusion: NOT diagonal: k case(s) off the
 * diagonal" (diagonal: rp_cls_meets). Returns the number off the diagonal. Prints nothing
 * (and returns 0) when n is 0. */
int rp_cls_confusion_print(FILE *f, const rp_verdict *expected, const rp_verdict *verdict, int n);

/* ---- the driver ---------------------------------------------------------------------- */

/* Writes dir/aux.json, how one of the classifier's runs ended ({"kind", "status": "ok" or
 * a verdict name, "reason", "wall_s"}), atomically; the classifier reads it back. A write
 * that fails leaves no aux.json, which reads as a failed run. */
void rp_cls_write_aux(const char *dir, const char *kind, const char *status, const char *reason, double wall_s);
/* Status of one of those runs' directory (twin, teacher, fresh): its aux.json, or,
 * without one, ok when done.json exists. Returns RP_V_COUNT for ok, else the failing
 * verdict (CRASH for a missing directory), with the reason in why (cap bytes). */
rp_verdict rp_cls_aux_status(const char *dir, char *why, size_t cap);

/* 1 when dir_a and dir_b hold bitwise equal latents and trajectories (latents.safetensors). */
int rp_cls_runs_identical(const char *dir_a, const char *dir_b);

/* The leak check's and the self check's evidence (docs/classification.md §6). With the leak
 * check on, the case's own run is its worker's first call, and a later run in the same
 * process recomputes its steps: the self check's (<case_dir>/self/, every step from the
 * case's own trajectory) where the case differs from its reference, else its teacher run
 * (<case_dir>/teacher/, from ref_dir's trajectory; ref_dir == case_dir for a reference; for
 * a case bitwise its reference's, its first steps only). Wherever that run recomputed a step
 * from exactly the input the case's own run had, its output must be the case's own bits.
 * Returns 1 when one differs (*step the first, *max_abs its largest difference), 0 when
 * every such step agrees, -1 when there is nothing to compare (no such run, no shared
 * input). */
int rp_cls_rerun_check(const char *case_dir, const char *ref_dir, int *step, double *max_abs);
/* The same for <case_dir>/fresh-self/: the self check's steps made as the first call of a
 * fresh launch (the runner makes it when the self check differed), rotated as the self check
 * was; plain: for <case_dir>/fresh-self-plain/, the same steps unrotated (made when a
 * rotated fresh-self differed). */
int rp_cls_fresh_self_check(const char *case_dir, int plain, int *step, double *max_abs);
/* Whether the case's self check runs in the rotated layout (rp_par_rotate: every group's data
 * one rank on): a layout that rotates (rp_par_rotates) on the host (the GPU path's rotation is
 * not tried). */
int rp_cls_self_rotated(const rp_case *c);

/* The same at fp32, for a case that rounds coarser: its fp32 shadow (<case_dir>/shadow/
 * teacher/) and, later in the same worker, that shadow's first steps again from the same
 * input (<case_dir>/shadow/leak/). A kernel's ulps of carried state or of a timing-dependent
 * order can vanish in bf16's rounding (the case's own check agrees) and stay at fp32.
 * Returns 1 when a step both ran differs (*step, *max_abs as above), 0 when all agree, -1
 * when there is nothing to compare. */
int rp_cls_shadow_rerun_check(const char *case_dir, int *step, double *max_abs);

typedef struct rp_cls_inputs {
    const char *case_dir;     /* a finished case: case.json, result.json, latents, trace, images,
                                 teacher/, repeat-<k>/, fresh/, fresh-2/ */
    const char *ref_dir;      /* what the case is compared with: its reference's directory
                                 (== case_dir for a reference), or a golden */
    const char *twin_base_dir;/* the reference the twins perturb (NULL: ref_dir); the twins
                                 are compared with it, so a golden from elsewhere keeps the
                                 local envelope */
    const char *const *twin_dirs; /* the twins (NULL, n 0: <twin base>/twins/<name>/) */
    int n_twins;
    const char *teacher_dir;  /* the case's teacher run (NULL: <case_dir>/teacher) */
    const char *out_name;     /* file written in case_dir (NULL: "classification.json") */
    const char *ref_label;    /* reference_id in the JSON (NULL: the reference's case id) */
    int repeat;               /* runs of the case (repeat-2 .. repeat-N compared with run 1) */
    rp_classify_opts opts;
} rp_cls_inputs;

/* Classifies the case and writes <case_dir>/<out_name> atomically; *out (may be NULL)
 * gets the verdict, *pass whether it meets the case's expect label (or, without a
 * verdict label, is not a failing verdict). Missing optional evidence (no twins, no
 * teacher run, no images) is recorded in the JSON and weakens the verdict only as said
 * there. Errors: unreadable or inconsistent files (RP_ERR_IO, RP_ERR_FORMAT,
 * RP_ERR_SHAPE). */
rp_status rp_classify_dir(const rp_cls_inputs *in, rp_verdict *out, int *pass, rp_error *err);

#endif
