/* cfg_par.c — CFG parallelism: the two halves of a guided batch on two ranks.
 *
 * The single-rank guided batch is two segments of rows (DiT [cond; uncond], SD3
 * [uncond; cond]); cfg rank c evaluates segment c alone. After every model
 * evaluation the two outputs are allgathered over the cfg group, so both ranks
 * hold the single rank's (2, ...) output and combine it with the single rank's
 * formula: the same bits on both ranks, and the samplers continue in lockstep. */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "parallel.h"

int rp_par_cfg_segment(const rp_ctx *ctx) {
    if (!ctx->par || ctx->par->cfg.size == 1) return -1;
    assert(ctx->par->cfg.size == 2);
    return ctx->par->cfg.rank;
}

rp_status rp_par_cfg_exchange(const rp_ctx *ctx, const float *mine, size_t n, float *both, rp_error *err) {
    if (rp_par_cfg_segment(ctx) < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "cfg exchange without cfg parallelism");
    /* allgather: send and recv must not overlap */
    assert((uintptr_t)(mine + n) <= (uintptr_t)both || (uintptr_t)(both + 2 * n) <= (uintptr_t)mine);
    rp_comm *c = ctx->par->cfg.comm;
    return c->ops->allgather(c, mine, n, both, err);
}
