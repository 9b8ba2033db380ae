/* inject.c — the fault-injection registry: names, descriptions, applicability.
 * The faults themselves live in the strategies; see inject.h. */
#include "inject.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "../family.h"

typedef struct inject_entry {
    const char *name;
    const char *description;
    const char *scope;
    int stages_only; /* acts on a pipeline stage > 0 only (rp_inject_stages_only) */
} inject_entry;

/* Indexed by rp_inject_id; the order is the order of rp_inject_names(). */
static const inject_entry INJECTIONS[RP_INJECT_COUNT] = {
    [RP_INJECT_NONE] = {"", "no fault", "every case"},
    [RP_INJECT_DP_RANK_LAYOUT] = {"dp-rank-layout",
                                  "dp group computed as rank // dp_degree (the xDiT SD3 bug) instead of "
                                  "from the rank layout, so ranks take the wrong items",
                                  "dp > 1; DiT, SD3, FLUX"},
    [RP_INJECT_DP_SHARED_NOISE] = {"dp-shared-noise",
                                   "every dp group draws its initial noise from the start of the same "
                                   "stream instead of at its items' global indices",
                                   "dp > 1; DiT, SD3, FLUX"},
    [RP_INJECT_ULYSSES_HEAD_ORDER] = {"ulysses-head-order",
                                      "heads permuted after the Ulysses all-to-all (each rank's heads "
                                      "land in the wrong slots)",
                                      "ulysses > 1; DiT, SD3, FLUX"},
    [RP_INJECT_RING_NO_RESCALE] = {"ring-no-rescale",
                                   "ring attention merges partial softmax results without the running-max "
                                   "correction",
                                   "ring > 1; DiT, SD3, FLUX"},
    [RP_INJECT_PIPEFUSION_CACHE_LEAK] = {"pipefusion-cache-leak",
                                         "PipeFusion's stale K/V activation cache is not reset between "
                                         "pipeline calls",
                                         "pipefusion > 1; DiT, SD3, FLUX"},
    [RP_INJECT_ROPE_OFFSET] = {"rope-offset", "RoPE positions shifted by one on ranks > 0",
                               "FLUX with ulysses x ring > 1, patch > 1 or pipefusion > 1"},
    [RP_INJECT_ATTN_SCALE] = {"attn-scale", "softmax scale 1/sqrt(d+1) instead of 1/sqrt(d) on one rank",
                              "world > 1; DiT, SD3, FLUX"},
    [RP_INJECT_TIMESTEP_SKEW] = {"timestep-skew", "a rank > 0 uses the previous step's timestep once",
                                 "world > 1 and steps >= 2; DiT, SD3, FLUX"},
    /* The faults below are the classes a per-layer comparison of rank 0's view misses:
     * small systematic errors, a silent precision change, one rank's private copy of a
     * replicated tensor, and faults that change only the images. */
    [RP_INJECT_NORM_EPS_RANK] = {"norm-eps-rank",
                                 "the last rank's MLP LayerNorm (norm2, the image stream's) has eps 1e-5 "
                                 "(torch's default) instead of the model's 1e-6: a small systematic error",
                                 "world > 1; DiT, SD3, FLUX"},
    [RP_INJECT_BF16_LAYER_RANK] = {"bf16-layer-rank",
                                   "the last rank runs the first block's (image) MLP GEMMs in bf16 (inputs "
                                   "rounded, fp32 accumulation: an autocast region left on) in an fp32 case",
                                   "world > 1, pipefusion = 1, precision fp32 on the CPU; DiT, SD3, FLUX"},
    [RP_INJECT_CFG_COMBINE_ORDER] = {"cfg-combine-order",
                                     "cfg rank 1 reads the gathered CFG halves as [its own; the other's] instead "
                                     "of in cfg-rank order, so it guides with cond and uncond swapped and its "
                                     "private copy of the latents diverges (rank 0 sees it from the next step, "
                                     "through rank 1's half)",
                                     "cfg_parallel = 2 and steps >= 2; DiT, SD3"},
    [RP_INJECT_DP_IMAGE_ORDER] = {"dp-image-order",
                                  "the last dp group returns its decoded images in reverse order; its latents "
                                  "come back in order",
                                  "dp > 1 with >= 2 items per dp group; DiT, SD3, FLUX"},
    [RP_INJECT_VAE_DECODE_RANK] = {"vae-decode-rank",
                                   "the last dp group's decode converts its images to 8 bits by truncation (as "
                                   "torch's .byte() does) instead of rounding: values up to one level low, only "
                                   "its images change",
                                   "dp > 1; DiT, SD3, FLUX"},
    [RP_INJECT_TEMB_PERIOD_RANK] = {"temb-period-rank",
                                    "the last rank's sinusoidal timestep (and FLUX guidance) embedding uses "
                                    "max_period 10001 instead of 10000: its copy of the replicated "
                                    "t_embedder / time_text_embed differs",
                                    "world > 1; DiT, SD3, FLUX"},
    [RP_INJECT_NONDET_DP_RANK] = {"nondet-dp-rank",
                                  "the last dp group's guided prediction moves by 1..1024 ulps chosen by the "
                                  "clock, as a kernel whose reduction order follows thread timing: every run "
                                  "differs, and no state passes from one call to the next",
                                  "dp > 1; DiT, SD3, FLUX"},
    /* Two faults in what a run hands back rather than in what it computes: each changes
     * one tensor that only an exact rule on that tensor sees (the returned latents against
     * the trajectory's last row; the initial noise, bitwise against the reference's). */
    [RP_INJECT_DP_LATENTS_ORDER] = {"dp-latents-order",
                                    "the last dp group returns its final latents in reverse order; its "
                                    "trajectory and its decoded images come back in order",
                                    "dp > 1 with >= 2 items per dp group; DiT, SD3, FLUX"},
    [RP_INJECT_NOISE_BF16_RANK] = {"noise-bf16-rank",
                                   "the last dp group rounds its initial noise to bf16 (an autocast region "
                                   "that reaches the noise): 2^-9 relative, inside a bf16 case's envelope",
                                   "dp > 1; DiT, SD3, FLUX"},
    /* A leak of rounding size: state that passes from one call to the next (a later call
     * of the launch differs from a fresh one) by some fp32 ulps a forward, which a bf16
     * case's GEMMs round away: only the leak check at fp32 (the fp32 shadow's, with its
     * fresh pair) sees it there. */
    [RP_INJECT_WEIGHT_LEAK_RANK] = {"weight-leak-rank",
                                    "the last dp group's timestep MLP adds 2^-20 to its output bias's first value "
                                    "at every forward (a parameter written in place, as an EMA update left on in "
                                    "inference): the loaded model carries it into the next call",
                                    "dp > 1 on the CPU; DiT, SD3, FLUX"},
    /* A systematic error of a few roundings in arithmetic only the default numerics run: the
     * serial run has no merge and the invariant shadow runs the canonical ring, so no exact
     * comparison of two layouts executes it (the ring's own check does, sp_attention.c). */
    [RP_INJECT_RING_LSE_SKEW] = {"ring-lse-skew",
                                 "the default ring merge reads the row max of the block that arrives last 1e-5 "
                                 "too high on every ring rank (a log-sum-exp off by a rounding-sized constant)",
                                 "ring > 1, numerics default; DiT, SD3, FLUX"},
    /* The same kind of error in the default attention kernels (math, split, subquad, flash),
     * on one rank: the invariant shadow runs the canonical attention instead, and the
     * serial reference runs the kernel on other rows, so again only the own check
     * (attn_own.c) executes it exactly. */
    [RP_INJECT_ATTN_SCALE_ULP_RANK] = {"attn-scale-ulp-rank",
                                       "the last rank's default attention kernel takes its softmax scale one ulp "
                                       "low (1/sqrt(d) rounded on another path on that rank)",
                                       "world > 1, ring = 1, numerics default, fp32 on the CPU; DiT, SD3, FLUX"},
    /* A fault that never finishes: a sweep would see it only at the case's deadline, as a
     * hang with nothing said; the local launcher's deadlock watch ends it within seconds of
     * every rank waiting, naming the call each waits in. */
    [RP_INJECT_RING_REVERSE_RANK] = {"ring-reverse-rank",
                                     "the last ring rank rotates its K/V blocks the other way (sends to the "
                                     "previous ring rank, receives from the next): a deadlock",
                                     "ring >= 3; DiT, SD3, FLUX"},
    /* A fault in the free sampling loop itself, which no teacher-forced run executes: the
     * self check (every step again from the case's own stored latents) names it. */
    [RP_INJECT_LATENTS_BF16_RANK] = {"latents-bf16-rank",
                                     "the last dp group's sampling loop carries its latents from one step to the "
                                     "next rounded to bf16 (a pipeline casting the scheduler's output back to the "
                                     "model's dtype); each step computes in fp32",
                                     "dp > 1; DiT, SD3, FLUX"},
    /* A fault in rank 0's copy of the results, not in any rank's computation: the gather
     * check (each leader's fingerprints against rank 0's stored copy) names it. */
    [RP_INJECT_DP_GATHER_ROW] = {"dp-gather-row",
                                 "rank 0's dp gather copies the last dp group's middle trajectory row from the row "
                                 "before it; that group's latents, images and other rows arrive right",
                                 "dp > 1 and steps >= 2; DiT, SD3, FLUX"},
    /* Faults in the approximations themselves, after warmup, where only the images' bound
     * judged a case before: the staleness contract (stale_check.c) names them exactly. */
    [RP_INJECT_PATCH_STALE_ROWS] = {"patch-stale-rows",
                                    "after warmup the last patch rank reads the other bands' stale K/V one token "
                                    "late (each band's last row is its neighbour's first)",
                                    "patch > 1 and warmup_steps < steps; DiT, SD3, FLUX"},
    [RP_INJECT_PIPEFUSION_SKIP_REFRESH] = {"pipefusion-skip-refresh",
                                           "the last pipeline stage does not store its patches' fresh K/V at the "
                                           "second asynchronous step, and reads them a step old",
                                           "pipefusion > 1 and warmup_steps + 2 <= steps; DiT, SD3, FLUX"},
    /* A fault in the text encoder on one rank: the dp ranks' items differ, so only the
     * encoder's probe (every rank encodes the same fixed prompts: pipeline.c) holds it to
     * the bits. */
    [RP_INJECT_TE_NORM_EPS_RANK] = {"te-norm-eps-rank",
                                    "the last rank's text encoder takes its attention LayerNorm's epsilon 1e-6 "
                                    "instead of 1e-5",
                                    "world > 1; SD3, FLUX"},
    /* Faults of the approximate and exchanging strategies' bookkeeping, and of a kernel at
     * one step: each acts where no envelope or image bound tells it from the approximation
     * or from rounding, and each has its exact check (the audit of 2026-11-29, round 7). */
    [RP_INJECT_PIPEFUSION_BLOCK_OVERLAP] = {"pipefusion-block-overlap",
                                            "after warmup every pipeline stage after the first starts one block "
                                            "early, running its predecessor's last block again",
                                            "pipefusion > 1 and warmup_steps < steps; DiT, SD3, FLUX", 1},
    [RP_INJECT_CFG_STALE_HALF] = {"cfg-stale-half",
                                  "from the second evaluation on, both cfg ranks read segment 1 of the exchange "
                                  "from the previous evaluation",
                                  "cfg_parallel = 2 and steps >= 2; DiT, SD3"},
    [RP_INJECT_ATTN_SCALE_STEP_RANK] = {"attn-scale-step-rank",
                                        "the last rank's default attention kernel takes its softmax scale one ulp "
                                        "low at the third evaluation only",
                                        "world > 1, ring = 1, numerics default, fp32 on the CPU, steps >= 4; DiT, "
                                        "SD3, FLUX"},
    [RP_INJECT_ATTN_SCALE_LATE] = {"attn-scale-late",
                                   "after warmup the last rank's softmax scale is 1/sqrt(d+1), not 1/sqrt(d): a "
                                   "later step of an approximate layout computed wrong from the right K/V rows",
                                   "patch > 1 or pipefusion > 1, warmup_steps < steps; DiT, SD3, FLUX"},
    /* A fault in what one stage hands the next, which no contract names: the stream's bits
     * are the sender's, only the wrong pass's. The serial emulation (one stage over the
     * same patches, harness/analysis/classify.h) has no hand-over, so the case's own run
     * differs from it at the first asynchronous step. */
    [RP_INJECT_PIPEFUSION_STREAM_STALE] = {"pipefusion-stream-stale",
                                           "after warmup every pipeline stage after the first keeps the text stream "
                                           "it received for the previous pipeline patch (a receive buffer reused), "
                                           "with the image stream of the right one",
                                           "pipefusion > 1 and warmup_steps < steps; SD3", 1},
    /* A bf16-only path on one rank's own rows under default numerics: no exact comparison of
     * the case's own arithmetic runs it but the rotated layout's (docs/classification.md §6). */
    [RP_INJECT_ACT_BF16_RANK] = {"act-bf16-rank",
                                 "in a bf16 case under default numerics the last rank's first-block MLP "
                                 "activation reads its input rounded to bf16 (a fused bf16 kernel on one rank's "
                                 "path): rounding-sized, on that rank's rows only",
                                 "world > 1, precision bf16, numerics default, on the CPU; DiT, SD3, FLUX"},
    /* Faults an approximate strategy's image bound cannot tell from its approximation (audit
     * 20): one more synchronous step makes the images better, stale text rows leave them
     * within the bound; each breaks a contract checked exactly (stale_check.c). */
    [RP_INJECT_WARMUP_LATE] = {"warmup-late",
                               "the approximate strategy (patch or PipeFusion) runs one synchronous step more than "
                               "its warmup_steps",
                               "patch > 1 or pipefusion > 1, warmup_steps < steps; DiT, SD3, FLUX"},
    [RP_INJECT_PATCH_TEXT_STALE] = {"patch-text-stale",
                                    "after warmup the patch strategy's keys take their text rows from the previous "
                                    "forward (a text K/V cache where only image K/V may be kept)",
                                    "patch > 1, warmup_steps < steps, steps >= 2; SD3, FLUX"},
    /* A routing fault in host code every layout shares (audit 21): the per-step noise keyed by
     * the wrong index. The update reads the noise it is handed, so only a check that draws
     * each item's noise again sees where the step went wrong. */
    [RP_INJECT_STEP_NOISE_INDEX] = {"step-noise-index",
                                    "every dp group draws its items' step noise keyed by their index within the "
                                    "group instead of in the batch",
                                    "dp > 1, a sampler that draws noise (ddpm; ddim or euler-a with eta > 0); DiT"},
};

const char *rp_inject_names(void) {
    return "dp-rank-layout dp-shared-noise ulysses-head-order ring-no-rescale pipefusion-cache-leak "
           "rope-offset attn-scale timestep-skew norm-eps-rank bf16-layer-rank cfg-combine-order dp-image-order "
           "vae-decode-rank temb-period-rank nondet-dp-rank dp-latents-order noise-bf16-rank weight-leak-rank "
           "ring-lse-skew attn-scale-ulp-rank ring-reverse-rank latents-bf16-rank dp-gather-row "
           "patch-stale-rows pipefusion-skip-refresh te-norm-eps-rank pipefusion-block-overlap cfg-stale-half "
           "attn-scale-step-rank attn-scale-late pipefusion-stream-stale act-bf16-rank warmup-late "
           "patch-text-stale step-noise-index";
}

rp_status rp_inject_parse(const char *name, rp_inject_id *id, rp_error *err) {
    assert(id);
    if (!name || !name[0]) { *id = RP_INJECT_NONE; return RP_OK; }
    for (int i = 1; i < RP_INJECT_COUNT; i++)
        if (strcmp(name, INJECTIONS[i].name) == 0) { *id = (rp_inject_id)i; return RP_OK; }
    return RP_FAIL(err, RP_ERR_INVALID, "inject=%s: unknown fault injection (known: %s)", name, rp_inject_names());
}

const char *rp_inject_name(rp_inject_id id) {
    assert(id >= 0 && id < RP_INJECT_COUNT);
    return INJECTIONS[id].name;
}

int rp_inject_stages_only(rp_inject_id id) {
    assert(id >= 0 && id < RP_INJECT_COUNT);
    return INJECTIONS[id].stages_only;
}

const char *rp_inject_description(rp_inject_id id) {
    assert(id >= 0 && id < RP_INJECT_COUNT);
    return INJECTIONS[id].description;
}

const char *rp_inject_scope(rp_inject_id id) {
    assert(id >= 0 && id < RP_INJECT_COUNT);
    return INJECTIONS[id].scope;
}

/* Fills why and returns 0: the injection cannot change this case's result. */
static int no(char *why, size_t cap, const char *fmt, const char *name, int v) {
    if (why && cap) snprintf(why, cap, fmt, name, v);
    return 0;
}

int rp_inject_applies(rp_inject_id id, rp_family fam, const rp_inject_layout *l, char *why, size_t cap) {
    assert(l && id >= 0 && id < RP_INJECT_COUNT);
    if (why && cap) why[0] = '\0';
    const char *n = INJECTIONS[id].name;
    const rp_par_degrees *d = &l->deg;
    const int world = rp_par_world(d);
    const int sp = d->ulysses * d->ring;
    switch (id) {
    case RP_INJECT_NONE: return 1;
    case RP_INJECT_DP_RANK_LAYOUT:
    case RP_INJECT_DP_SHARED_NOISE:
        return d->dp > 1 ? 1 : no(why, cap, "%s needs dp > 1 (got dp=%d)", n, d->dp);
    case RP_INJECT_ULYSSES_HEAD_ORDER:
        return d->ulysses > 1 ? 1 : no(why, cap, "%s needs ulysses > 1 (got ulysses=%d)", n, d->ulysses);
    case RP_INJECT_RING_NO_RESCALE:
        return d->ring > 1 ? 1 : no(why, cap, "%s needs ring > 1 (got ring=%d)", n, d->ring);
    case RP_INJECT_PIPEFUSION_CACHE_LEAK:
        return l->pipeline ? 1 : no(why, cap, "%s needs PipeFusion's pipeline (pipefusion > 1; got pipefusion=%d)", n,
                                    d->pipefusion);
    case RP_INJECT_ROPE_OFFSET:
        if (fam != RP_FAMILY_FLUX) {
            if (why && cap)
                snprintf(why, cap, "%s applies to FLUX only: %s uses absolute position embeddings, not RoPE", n,
                         rp_family_name(fam));
            return 0;
        }
        if (sp > 1 || d->patch > 1 || d->pipefusion > 1) return 1;
        if (why && cap)
            snprintf(why, cap,
                     "%s needs a layout where ranks compute positions for their part of the image "
                     "(ulysses x ring > 1, patch > 1 or pipefusion > 1); got ulysses=%d ring=%d patch=%d "
                     "pipefusion=%d", n, d->ulysses, d->ring, d->patch, d->pipefusion);
        return 0;
    case RP_INJECT_ATTN_SCALE:
    case RP_INJECT_NORM_EPS_RANK:
    case RP_INJECT_TEMB_PERIOD_RANK:
        /* every rank's forward reaches the result: its items (dp), its CFG half, its
         * tokens (sequence, patch) or its blocks (pipefusion) */
        return world > 1 ? 1 : no(why, cap, "%s needs world > 1 (got world=%d)", n, world);
    case RP_INJECT_BF16_LAYER_RANK:
        if (world <= 1) return no(why, cap, "%s needs world > 1 (got world=%d)", n, world);
        if (d->pipefusion > 1) /* the last rank is the last pipeline stage */
            return no(why, cap, "%s needs pipefusion = 1: the last rank, a later pipeline stage, does not run the "
                      "first block (got pipefusion=%d)", n, d->pipefusion);
        if (l->on_device) {
            if (why && cap)
                snprintf(why, cap, "%s acts on the CPU engine's GEMM precision; a device runs its GEMMs in its own "
                         "precision", n);
            return 0;
        }
        if (l->low_precision) {
            if (why && cap)
                snprintf(why, cap, "%s needs an fp32 case: with bf16 / fp16 GEMMs the layer is in that precision on "
                         "every rank already", n);
            return 0;
        }
        return 1;
    case RP_INJECT_ACT_BF16_RANK:
        if (world <= 1) return no(why, cap, "%s needs world > 1 (got world=%d)", n, world);
        if (d->pipefusion > 1) /* the last rank is the last pipeline stage */
            return no(why, cap, "%s needs pipefusion = 1: the last rank, a later pipeline stage, does not run the "
                      "first block (got pipefusion=%d)", n, d->pipefusion);
        if (l->on_device || l->invariant || !l->low_precision) {
            if (why && cap)
                snprintf(why, cap, "%s needs a bf16 case on the CPU under default numerics (the path it plants: %s)",
                         n, l->on_device ? "a device runs its own kernels" : l->invariant ? "numerics invariant runs "
                         "none of it" : "an fp32 case runs none of it");
            return 0;
        }
        return 1;
    case RP_INJECT_CFG_COMBINE_ORDER:
    case RP_INJECT_CFG_STALE_HALF:
        if (fam == RP_FAMILY_FLUX) {
            if (why && cap)
                snprintf(why, cap, "%s needs classifier-free guidance: FLUX has none (embedded guidance)", n);
            return 0;
        }
        if (d->cfg != 2)
            return no(why, cap, "%s needs cfg_parallel = 2 (got cfg_parallel=%d)", n, d->cfg);
        /* rank 1's own latents are never returned: they reach rank 0 through the half it
         * evaluates at the next step; a stale half needs a previous evaluation */
        if (id == RP_INJECT_CFG_STALE_HALF)
            return l->steps >= 2 ? 1 : no(why, cap, "%s needs steps >= 2: it reads the previous evaluation's half "
                                          "(got steps=%d)", n, l->steps);
        return l->steps >= 2 ? 1 : no(why, cap, "%s needs steps >= 2: rank 1's diverged latents reach rank 0 only "
                                      "through its next step's half (got steps=%d)", n, l->steps);
    case RP_INJECT_DP_IMAGE_ORDER:
    case RP_INJECT_DP_LATENTS_ORDER:
        if (d->dp <= 1) return no(why, cap, "%s needs dp > 1 (got dp=%d)", n, d->dp);
        if (l->items < 2 * d->dp) {
            if (why && cap)
                snprintf(why, cap,
                         "%s needs >= 2 items per dp group to put in the wrong order (got %d items over dp=%d)", n,
                         l->items, d->dp);
            return 0;
        }
        return 1;
    case RP_INJECT_DP_GATHER_ROW:
        if (d->dp <= 1) return no(why, cap, "%s needs dp > 1 (got dp=%d)", n, d->dp);
        return l->steps >= 2 ? 1 : no(why, cap, "%s needs steps >= 2: a middle trajectory row (got steps=%d)", n,
                                      l->steps);
    case RP_INJECT_NONDET_DP_RANK:
    case RP_INJECT_LATENTS_BF16_RANK:
    case RP_INJECT_NOISE_BF16_RANK:
        return d->dp > 1 ? 1 : no(why, cap, "%s needs dp > 1 (got dp=%d)", n, d->dp);
    case RP_INJECT_WEIGHT_LEAK_RANK:
        if (d->dp <= 1) return no(why, cap, "%s needs dp > 1: the weights of a dp group other than rank 0's (got dp=%d)",
                                  n, d->dp);
        if (l->on_device) {
            if (why && cap)
                snprintf(why, cap, "%s writes the CPU copy of the weights; a device computes with its own copy", n);
            return 0;
        }
        return 1;
    case RP_INJECT_TE_NORM_EPS_RANK:
        if (fam == RP_FAMILY_DIT) {
            if (why && cap) snprintf(why, cap, "%s needs a text encoder: DiT is class-conditional", n);
            return 0;
        }
        return world > 1 ? 1 : no(why, cap, "%s needs world > 1 (got world=%d)", n, world);
    case RP_INJECT_PATCH_STALE_ROWS:
        if (d->patch <= 1) return no(why, cap, "%s needs patch > 1 (got patch=%d)", n, d->patch);
        return l->warmup < l->steps ? 1 : no(why, cap, "%s needs warmup_steps < steps: it acts after warmup (got "
                                              "warmup_steps=%d)", n, l->warmup);
    case RP_INJECT_PATCH_TEXT_STALE:
        if (fam == RP_FAMILY_DIT) {
            if (why && cap) snprintf(why, cap, "%s needs text tokens in the attention: DiT has none", n);
            return 0;
        }
        if (d->patch <= 1) return no(why, cap, "%s needs patch > 1 (got patch=%d)", n, d->patch);
        if (l->steps < 2) return no(why, cap, "%s needs steps >= 2: a previous forward's text rows (got steps=%d)", n,
                                    l->steps);
        return l->warmup < l->steps ? 1 : no(why, cap, "%s needs warmup_steps < steps: it acts after warmup (got "
                                              "warmup_steps=%d)", n, l->warmup);
    case RP_INJECT_STEP_NOISE_INDEX:
        if (d->dp <= 1) return no(why, cap, "%s needs dp > 1: the groups after the first (got dp=%d)", n, d->dp);
        if (!l->stochastic) {
            if (why && cap)
                snprintf(why, cap, "%s needs a sampler that draws noise at its steps (ddpm; ddim or euler-a with "
                         "eta > 0)", n);
            return 0;
        }
        return 1;
    case RP_INJECT_WARMUP_LATE:
    case RP_INJECT_ATTN_SCALE_LATE:
        if (d->patch <= 1 && !l->pipeline)
            return no(why, cap, "%s needs patch > 1 or pipefusion > 1: it acts after an approximate layout's warmup "
                      "(got patch=%d)", n, d->patch);
        return l->warmup < l->steps ? 1 : no(why, cap, "%s needs warmup_steps < steps: it acts after warmup (got "
                                              "warmup_steps=%d)", n, l->warmup);
    case RP_INJECT_PIPEFUSION_BLOCK_OVERLAP:
    case RP_INJECT_PIPEFUSION_STREAM_STALE:
        if (d->pipefusion <= 1) return no(why, cap, "%s needs pipefusion > 1 (got pipefusion=%d)", n, d->pipefusion);
        if (id == RP_INJECT_PIPEFUSION_STREAM_STALE && fam != RP_FAMILY_SD3) {
            if (why && cap)
                snprintf(why, cap, "%s applies to SD3 only: the stages hand on its separate text stream (%s has "
                         "none)", n, rp_family_name(fam));
            return 0;
        }
        return l->warmup < l->steps ? 1 : no(why, cap, "%s needs warmup_steps < steps: it acts after warmup (got "
                                              "warmup_steps=%d)", n, l->warmup);
    case RP_INJECT_PIPEFUSION_SKIP_REFRESH:
        if (!l->pipeline) return no(why, cap, "%s needs pipefusion > 1 (got pipefusion=%d)", n, d->pipefusion);
        return l->warmup + 2 <= l->steps ? 1 : no(why, cap, "%s needs warmup_steps + 2 <= steps: it acts at the "
                                                   "second step after warmup (got warmup_steps=%d)", n, l->warmup);
    case RP_INJECT_RING_REVERSE_RANK: /* with two ring ranks the previous one is the next one */
        return d->ring >= 3 ? 1 : no(why, cap, "%s needs ring >= 3 (got ring=%d)", n, d->ring);
    case RP_INJECT_RING_LSE_SKEW:
        if (d->ring <= 1) return no(why, cap, "%s needs ring > 1 (got ring=%d)", n, d->ring);
        if (l->invariant) {
            if (why && cap)
                snprintf(why, cap, "%s acts in the default ring merge; numerics invariant folds the canonical "
                         "blocks instead", n);
            return 0;
        }
        return 1;
    case RP_INJECT_ATTN_SCALE_ULP_RANK:
    case RP_INJECT_ATTN_SCALE_STEP_RANK:
        if (id == RP_INJECT_ATTN_SCALE_STEP_RANK && l->steps < 4)
            return no(why, cap, "%s needs steps >= 4: it acts at the third evaluation, between the first and the "
                      "last (got steps=%d)", n, l->steps);
        if (world <= 1) return no(why, cap, "%s needs world > 1 (got world=%d)", n, world);
        if (d->ring > 1) return no(why, cap, "%s acts in the default attention kernels; with ring > 1 the ring's "
                                   "own kernel runs instead (got ring=%d)", n, d->ring);
        if (l->invariant || l->on_device) {
            if (why && cap)
                snprintf(why, cap, "%s acts in the CPU's default attention kernels; %s", n,
                         l->invariant ? "numerics invariant runs the canonical attention instead"
                                      : "a device runs its own attention");
            return 0;
        }
        if (l->low_precision) { /* the probabilities are rounded to bf16 before P v: one fp32 ulp
                                   of the scale almost never moves one of them */
            if (why && cap)
                snprintf(why, cap, "%s needs an fp32 case: with bf16 / fp16 GEMM inputs one fp32 ulp of the scale "
                         "rounds away", n);
            return 0;
        }
        return 1;
    case RP_INJECT_VAE_DECODE_RANK:
        return d->dp > 1 ? 1 : no(why, cap, "%s needs dp > 1: the decode of a dp group other than rank 0's (got dp=%d)",
                                  n, d->dp);
    case RP_INJECT_TIMESTEP_SKEW:
        if (world <= 1) return no(why, cap, "%s needs world > 1 (got world=%d)", n, world);
        return l->steps >= 2 ? 1 : no(why, cap, "%s needs steps >= 2: step 0 has no previous timestep (got steps=%d)",
                                      n, l->steps);
    case RP_INJECT_COUNT: break;
    }
    assert(0 && "unreachable");
    return 0;
}
