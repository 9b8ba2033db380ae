/* inject.h — the registry of fault injections (testing only; off by default).
 *
 * Each injection reproduces one known class of parallel-inference bug inside a
 * strategy, so the analyser can be checked against faults whose cause is known:
 * a sweep with an injection must be classified as the bug it plants, never as
 * "numerical noise". This file only names them and says where each can act;
 * the faults themselves are implemented by the strategies (engine/parallel/),
 * which query the case's rp_inject_id.
 *
 *   name                  strategy     families      what goes wrong
 *   dp-rank-layout        dp > 1       all           dp group computed as rank // dp_degree
 *                                                    (xDiT's SD3 bug) instead of from the layout
 *   dp-shared-noise       dp > 1       all           every dp group draws its noise from the
 *                                                    start of the same stream
 *   ulysses-head-order    ulysses > 1  all           heads permuted after the all-to-all
 *   ring-no-rescale       ring > 1     all           partial softmax results merged without
 *                                                    the running-max correction
 *   pipefusion-cache-leak pipeline     all           K/V activation cache not reset between calls
 *                         (4)
 *   rope-offset           sequence     FLUX          RoPE positions shifted by one on ranks > 0
 *                         split (1)
 *   attn-scale            world > 1    all           softmax scale 1/sqrt(d+1) on one rank
 *   timestep-skew         world > 1,   all           a rank > 0 uses the previous step's
 *                         steps >= 2                 timestep once
 *   norm-eps-rank         world > 1    all           the last rank's MLP LayerNorm (norm2, image
 *                                                    stream) has eps 1e-5 (torch's default), not 1e-6
 *   bf16-layer-rank       world > 1,   all           the last rank runs the first block's (image)
 *                         pipefusion 1,              MLP GEMMs in bf16 (inputs rounded, fp32 sums)
 *                         fp32 CPU (2)
 *   cfg-combine-order     cfg = 2,     DiT, SD3      cfg rank 1 reads the gathered halves as
 *                         steps >= 2                 [its own; the other's]: it guides with cond
 *                                                    and uncond swapped, so its private copy of
 *                                                    the latents diverges
 *   dp-image-order        dp > 1, >= 2 all           the last dp group returns its decoded
 *                         items/group                images in reverse order (latents in order)
 *   vae-decode-rank       dp > 1       all           the last dp group's decode casts its images
 *                                                    to 8 bits by truncation, not rounding
 *   temb-period-rank      world > 1    all           the last rank's timestep (and FLUX guidance)
 *                                                    embedding uses max_period 10001, not 10000
 *   nondet-dp-rank        dp > 1       all           the last dp group's guided prediction moves by
 *                                                    a number of ulps that follows the clock, as a
 *                                                    reduction whose order follows thread timing:
 *                                                    nondeterministic run to run, no state kept
 *   dp-latents-order      dp > 1, >= 2 all           the last dp group returns its final latents
 *                         items/group                in reverse order (its trajectory and images
 *                                                    in order): an output damaged after the loop
 *   noise-bf16-rank       dp > 1       all           the last dp group's initial noise is rounded
 *                                                    to bf16 (an autocast region that reaches the
 *                                                    noise): 2^-9 relative, inside a bf16 envelope
 *   weight-leak-rank      dp > 1, CPU  all           the last dp group's timestep MLP adds 2^-20 to
 *                         (3)                        its output bias's first value at every forward
 *                                                    (a parameter written in place): the kept model
 *                                                    carries it into the next call; bf16 GEMM inputs
 *                                                    round it away
 *   ring-lse-skew         ring > 1,    all           the default ring merge reads the row max of the
 *                         default                    block that arrives last 1e-5 too high (a
 *                         numerics                   log-sum-exp off by a rounding-sized constant),
 *                                                    on every ring rank: ~4-8x the fp32 envelope
 *   attn-scale-ulp-rank   world > 1,   all           the last rank's default attention kernel
 *                         ring = 1,                  takes its softmax scale one ulp low (1/sqrt(d)
 *                         default                    rounded on another path): a few roundings in
 *                         numerics,                  every score, on one rank
 *                         fp32 CPU (2)
 *   ring-reverse-rank     ring >= 3    all           the last ring rank passes its K/V block to the
 *                                                    previous rank and waits for the next one's:
 *                                                    its neighbours wait for messages it never
 *                                                    sends, a deadlock (the launcher's watch,
 *                                                    backends/comm_watch.h, names each rank's wait)
 *   latents-bf16-rank     dp > 1       all           the last dp group's sampling loop carries its
 *                                                    latents from step to step rounded to bf16;
 *                                                    each step computes in fp32 (a step started
 *                                                    from a given latent, as teacher forcing does,
 *                                                    never rounds): only the self check runs it
 *   dp-gather-row         dp > 1,      all           rank 0's gather copies the last dp group's
 *                         steps >= 2                 middle trajectory row from the row before it
 *                                                    (its latents, images and other rows right)
 *   patch-stale-rows      patch > 1,   all           after warmup the last patch rank reads the other
 *                         warmup <                   bands' stale K/V one token late (each band's
 *                         steps                      last row its neighbour's first)
 *   pipefusion-skip-      pipefusion   all           the last stage does not store its patches' fresh
 *   refresh               > 1, warmup                K/V at the second asynchronous step, and reads
 *                         + 2 <= steps               them a step old: both break the approximate
 *                                                    strategy's staleness contract (stale_check.c),
 *                                                    which the image bound alone let pass
 *   te-norm-eps-rank      world > 1    SD3, FLUX     the last rank's text encoder takes its attention
 *                                                    LayerNorm's epsilon 1e-6, not 1e-5: the probe
 *                                                    every rank encodes (pipeline.c) names it
 *   pipefusion-block-     pipefusion   all           after warmup every stage after the first starts
 *   overlap               > 1, warmup                one block early and runs its predecessor's last
 *                         < steps                    block again: the stages' ownership check
 *                                                    (pipefusion.c) names it
 *   cfg-stale-half        cfg = 2,     DiT, SD3      from the second evaluation on, both ranks read
 *                         steps >= 2                 segment 1 of the cfg exchange from the previous
 *                                                    evaluation (a receive buffer read before the
 *                                                    new exchange landed): the exchange's check
 *                                                    (cfg_par.c) names it
 *   attn-scale-late       patch or     all           attn-scale after warmup only: a step after
 *                         pipefusion                 warmup computed wrong from the right K/V rows,
 *                         > 1, warmup                which every contract holds; the invariant
 *                         < steps                    shadow's first step after warmup, run with
 *                                                    fresh keys (parallel.h fresh_kv), names it
 *   attn-scale-step-rank  as attn-scale- all         attn-scale-ulp-rank at the third evaluation
 *                         ulp-rank,                  only (a path keyed to the step): between the
 *                         steps >= 4                 run's first and last, where the own check
 *                                                    runs whole, its rotating slice sees it
 *   pipefusion-stream-    pipefusion   SD3           after warmup every stage after the first keeps
 *   stale                 > 1, warmup                the text stream it received for the previous
 *                         < steps                    pipeline patch (a reused receive buffer): no
 *                                                    contract holds what a stage hands on; the case
 *                                                    against its serial emulation (one stage, the
 *                                                    same patches: classify.h) names it
 *   act-bf16-rank         world > 1,   all           in a bf16 case under default numerics the last
 *                         bf16,                      rank's first-block MLP activation reads
 *                         default                    its input rounded to bf16 (a fused bf16 kernel
 *                         numerics,                  on one rank's path): rounding-sized, inside the
 *                         CPU (2)                    bf16 envelope, and run by no shadow (fp32, or
 *                                                    invariant numerics): the rotated layout (the
 *                                                    self check with every group's data one rank
 *                                                    on, classify.h) names it
 *   warmup-late           patch > 1 or all           the approximate strategy runs one synchronous
 *                         pipefusion                 step more than its warmup_steps (its own test
 *                         (4), warmup                of the warmup counted from 1): the images
 *                         < steps                    get better, the configuration is not honoured;
 *                                                    the contract of the path each forward ran
 *                                                    (stale_check.c rp_par_stale_async) names it
 *   patch-text-stale      patch > 1,   SD3, FLUX     after warmup the keys' text rows are the
 *                         warmup <                   previous forward's (a text K/V cache where only
 *                         steps,                     image K/V may be kept): the text rows' contract
 *                         steps >= 2                 (rp_par_stale_text) names it
 *   step-noise-index      dp > 1,      DiT           every dp group draws its items' step (ancestral)
 *                         a stochastic               noise keyed by their index within the group,
 *                         sampler                    not in the batch: groups after the first draw
 *                                                    the first group's streams. Keyed to the data
 *                                                    (which items a group holds), on every rank
 *                                                    alike: the sampler's own check, which draws
 *                                                    each item's noise again (pipeline.c), names it
 * (1) ulysses x ring > 1, patch > 1 or pipefusion > 1: the layouts where a rank
 *     computes positions for its own part of the image. DiT and SD3 use absolute
 *     position embeddings, so there is no RoPE to shift.
 * (2) precision fp32 on the CPU: in a bf16 case every GEMM is bf16 already, and a cuda
 *     device runs its GEMMs in its own precision (ctx->precision is the CPU's knob).
 * (3) on the CPU: a device computes with its own copy of the weights, made at load.
 * (4) PipeFusion's pipeline: pipefusion > 1, or its serial emulation (pipefusion 1 with
 *     num_pipeline_patch >= 2), whose one stage runs the same cache; so do
 *     pipefusion-skip-refresh (its one stage is the last) and attn-scale-late.
 * norm-eps-rank to nondet-dp-rank are the classes a per-layer comparison of rank 0's view
 * missed (issue 17): a small systematic error (norm-eps-rank: ~10x the rounding envelope in
 * fp32), a silent bf16 layer, one rank's private copy of a replicated tensor
 * (cfg-combine-order: the latents; temb-period-rank: the conditioning embedding, which the
 * trace records from sp rank 0 only), faults that change only the images (dp-image-order,
 * vae-decode-rank) and a nondeterministic kernel. The last two damage what a run hands
 * back rather than what it computes: the returned latents (dp-latents-order) and the
 * initial noise below a bf16 envelope (noise-bf16-rank).
 * "Applies" means the fault can change a result under that layout; an injection
 * that cannot (ring-no-rescale with ring = 1) would make a sweep pass vacuously,
 * so validation rejects it. */
#ifndef REPRO_INJECT_H
#define REPRO_INJECT_H

#include <stddef.h>

#include "../error.h"
#include "../family.h"
#include "strategy.h"

typedef enum rp_inject_id {
    RP_INJECT_NONE = 0,          /* "" — normal runs */
    RP_INJECT_DP_RANK_LAYOUT,
    RP_INJECT_DP_SHARED_NOISE,
    RP_INJECT_ULYSSES_HEAD_ORDER,
    RP_INJECT_RING_NO_RESCALE,
    RP_INJECT_PIPEFUSION_CACHE_LEAK,
    RP_INJECT_ROPE_OFFSET,
    RP_INJECT_ATTN_SCALE,
    RP_INJECT_TIMESTEP_SKEW,
    RP_INJECT_NORM_EPS_RANK,
    RP_INJECT_BF16_LAYER_RANK,
    RP_INJECT_CFG_COMBINE_ORDER,
    RP_INJECT_DP_IMAGE_ORDER,
    RP_INJECT_VAE_DECODE_RANK,
    RP_INJECT_TEMB_PERIOD_RANK,
    RP_INJECT_NONDET_DP_RANK,
    RP_INJECT_DP_LATENTS_ORDER,
    RP_INJECT_NOISE_BF16_RANK,
    RP_INJECT_WEIGHT_LEAK_RANK,
    RP_INJECT_RING_LSE_SKEW,
    RP_INJECT_ATTN_SCALE_ULP_RANK,
    RP_INJECT_RING_REVERSE_RANK,
    RP_INJECT_LATENTS_BF16_RANK,
    RP_INJECT_DP_GATHER_ROW,
    RP_INJECT_PATCH_STALE_ROWS,
    RP_INJECT_PIPEFUSION_SKIP_REFRESH,
    RP_INJECT_TE_NORM_EPS_RANK,
    RP_INJECT_PIPEFUSION_BLOCK_OVERLAP,
    RP_INJECT_CFG_STALE_HALF,
    RP_INJECT_ATTN_SCALE_STEP_RANK,
    RP_INJECT_ATTN_SCALE_LATE,
    RP_INJECT_PIPEFUSION_STREAM_STALE,
    RP_INJECT_ACT_BF16_RANK,
    RP_INJECT_WARMUP_LATE,
    RP_INJECT_PATCH_TEXT_STALE,
    RP_INJECT_STEP_NOISE_INDEX,
    RP_INJECT_COUNT
} rp_inject_id;

/* The parts of a case an injection's applicability depends on (kept apart from
 * harness/case/case.h so the engine does not depend on the harness). */
typedef struct rp_inject_layout {
    rp_par_degrees deg; /* the layout's degrees (strategy.h) */
    int steps;
    int items;          /* items of the case (dp-image-order, dp-latents-order: >= 2 per dp group) */
    int low_precision;  /* 1: the case's GEMMs run in bf16 / fp16 already */
    int on_device;      /* 1: the models run on a device (cuda) with its own GEMM precision */
    int invariant;      /* 1: numerics invariant (the canonical kernels replace the default ring's) */
    int warmup;         /* warmup_steps (pipefusion, patch) */
    int pipeline;       /* PipeFusion's pipeline patches, 0: none (pipefusion 1 with patches: its
                           serial emulation, which runs the pipeline's code on one stage) */
    int stochastic;     /* 1: the sampler draws noise at its steps (ddpm; ddim, euler-a with eta > 0) */
} rp_inject_layout;

/* name -> id. NULL or "" -> RP_INJECT_NONE. Unknown name: RP_ERR_INVALID
 * listing the known ones. */
rp_status rp_inject_parse(const char *name, rp_inject_id *id, rp_error *err);

/* id -> name ("" for RP_INJECT_NONE); id must be < RP_INJECT_COUNT. */
const char *rp_inject_name(rp_inject_id id);

/* One-line description of the fault, and of where it applies (for help texts). */
const char *rp_inject_description(rp_inject_id id);
const char *rp_inject_scope(rp_inject_id id);

/* 1 when the fault acts on a pipeline stage after the first only (its code sits behind
 * `stage > 0`): PipeFusion's serial emulation, one stage running the same source, never
 * reaches it, so that emulation runs without it (harness/analysis/classify.h). */
int rp_inject_stages_only(rp_inject_id id);

/* Space-separated list of every injection name. */
const char *rp_inject_names(void);

/* 1 if the fault can act on a case of family fam with layout l, else 0 with
 * the reason in why (cap bytes; may be NULL), e.g. "ring-no-rescale needs
 * ring > 1 (got ring=1)". RP_INJECT_NONE applies everywhere. */
int rp_inject_applies(rp_inject_id id, rp_family fam, const rp_inject_layout *l, char *why, size_t cap);

#endif
