/* cfg_par.c — CFG parallelism: the two halves of a guided batch on two ranks.
 *
 * The single-rank guided batch is two segments of rows (DiT [cond; uncond], SD3
 * [uncond; cond]); cfg rank c evaluates segment c alone. After every model
 * evaluation the two outputs are allgathered over the cfg group, so both ranks
 * hold the single rank's (2, ...) output and combine it with the single rank's
 * formula: the same bits on both ranks, and the samplers continue in lockstep
 * (cfg-combine-order breaks that on rank 1; parallel.h). The denoisers reach it through
 * its row (strategy.c) and parallel.h's rp_par_batch_segment / rp_par_batch_exchange.
 *
 * The exchange's contract, checked exactly on every rank: each segment of `both` is what
 * its cfg rank computed in this call. The ranks gather each other's fingerprint of their
 * forward's output as the forward produced it (`produced`, taken by the denoiser, not by this
 * code: audit 12's exchange rounded `mine` to bf16 before fingerprinting it, and the
 * contract held) beside the data and compare it with the segment as returned; a mismatch (a segment of
 * an earlier step, the halves swapped, one rank's own output in the other's place) is a
 * pair of the replica log's STALE group at this step (stale_check.c). Without it such a
 * fault acts the same on both ranks, so no replica differs, and under an approximate
 * layout it is only an image worse than the approximation (audit of 2026-11-29, round 7:
 * a stale unconditional half under patch x cfg was `approx`). */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel.h"

/* Its row's batch_segment: -1 without cfg parallelism, else 0 or 1 (the cfg coordinate). */
int rp_par_cfg_segment(const rp_ctx *ctx) {
    if (!ctx->par || ctx->par->cfg.size == 1) return -1;
    assert(ctx->par->cfg.size == 2);
    return ctx->par->cfg.pos;
}

/* Its row's batch_exchange: mine (n), this rank's segment's output (fingerprint produced)
 * -> both (2, n), segment 0 then 1, on both ranks (allgather over the cfg group). Without cfg
 * parallelism: RP_ERR_INVALID. */
rp_status rp_par_cfg_exchange(const rp_ctx *ctx, const float *mine, size_t n, uint64_t produced, float *both,
                              rp_error *err) {
    if (rp_par_cfg_segment(ctx) < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "cfg exchange without cfg parallelism");
    /* allgather: send and recv must not overlap */
    assert((uintptr_t)(mine + n) <= (uintptr_t)both || (uintptr_t)(both + 2 * n) <= (uintptr_t)mine);
    rp_parallel *p = ctx->par;
    rp_comm *c = p->cfg.comm;
    uint64_t sent[2]; /* (2) each rank's fingerprint of its output, in cfg rank order */
    const uint64_t own = produced;
    /* u64 bits carried in float slots: the comm copies bytes */
    RP_TRY(c->ops->allgather(c, (const float *)(const void *)&own, 2, (float *)(void *)sent, err));
    RP_TRY(c->ops->allgather(c, mine, n, both, err));
    /* cfg-stale-half: segment 1 as the previous evaluation left it (the one before kept) */
    if (p->fault == RP_INJECT_CFG_STALE_HALF) {
        if (p->fault_kept_n != n) {
            free(p->fault_kept);
            p->fault_kept = malloc(sizeof(float) * n);
            p->fault_kept_n = p->fault_kept ? n : 0;
            if (p->fault_kept) memcpy(p->fault_kept, both + n, sizeof(float) * n);
        }
        for (size_t i = 0; i < p->fault_kept_n; i++) {
            const float t = both[n + i];
            both[n + i] = p->fault_kept[i];
            p->fault_kept[i] = t;
        }
    }
    /* cfg-combine-order: rank 1 takes the gather as [mine; the other's] (its own output
     * first, as a list built from the local result), so its combine swaps cond and uncond.
     * Rank 0's view is right; rank 1's latents diverge and reach rank 0 through the half
     * rank 1 evaluates at the next step. */
    if (rp_par_fault(ctx, RP_INJECT_CFG_COMBINE_ORDER) && ctx->par->cfg.rank == 1)
        for (size_t i = 0; i < n; i++) {
            const float t = both[i];
            both[i] = both[n + i];
            both[n + i] = t;
        }
    uint64_t got[2];
    for (int seg = 0; seg < 2; seg++) got[seg] = rp_par_fingerprint(both + (size_t)seg * n, n);
    const int bad = got[0] != sent[0] ? 0 : 1;
    char name[32], due[96];
    snprintf(name, sizeof name, "cfg.segment%d", bad);
    snprintf(due, sizeof due, "after the exchange at step %d: due, what cfg rank %d computed at this step",
             p->fwd_eval, bad);
    rp_par_stale_pair(p, got[0] * 0x100000001b3ull ^ got[1], sent[0] * 0x100000001b3ull ^ sent[1], name, due);
    rp_par_stale_flush(p); /* a pair of this evaluation of its own: the forward's was flushed */
    return RP_OK;
}
