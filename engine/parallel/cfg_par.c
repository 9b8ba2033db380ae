/* cfg_par.c — CFG parallelism: the two halves of a guided batch on two ranks.
 *
 * The single-rank guided batch is two segments of rows (DiT [cond; uncond], SD3
 * [uncond; cond]); cfg rank c evaluates segment c alone. After every model
 * evaluation the two outputs are allgathered over the cfg group, so both ranks
 * hold the single rank's (2, ...) output and combine it with the single rank's
 * formula: the same bits on both ranks, and the samplers continue in lockstep
 * (cfg-combine-order breaks that on rank 1; parallel.h). The denoisers reach it through
 * its row (strategy.c) and parallel.h's rp_par_batch_segment / rp_par_batch_exchange. */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "parallel.h"

/* Its row's batch_segment: -1 without cfg parallelism, else 0 or 1 (the cfg coordinate). */
int rp_par_cfg_segment(const rp_ctx *ctx) {
    if (!ctx->par || ctx->par->cfg.size == 1) return -1;
    assert(ctx->par->cfg.size == 2);
    return ctx->par->cfg.rank;
}

/* Its row's batch_exchange: mine (n), this rank's segment's output -> both (2, n), segment
 * 0 then 1, on both ranks (allgather over the cfg group). Without cfg parallelism:
 * RP_ERR_INVALID. */
rp_status rp_par_cfg_exchange(const rp_ctx *ctx, const float *mine, size_t n, float *both, rp_error *err) {
    if (rp_par_cfg_segment(ctx) < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "cfg exchange without cfg parallelism");
    /* allgather: send and recv must not overlap */
    assert((uintptr_t)(mine + n) <= (uintptr_t)both || (uintptr_t)(both + 2 * n) <= (uintptr_t)mine);
    rp_comm *c = ctx->par->cfg.comm;
    RP_TRY(c->ops->allgather(c, mine, n, both, err));
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
    return RP_OK;
}
