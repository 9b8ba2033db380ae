/* sampler_own.h — the own check of the sampler's update (docs/classification.md §7).
 *
 * A step's update is a function of the step's input latent, the (guided) model output and
 * the schedule, the same on every rank and in every precision (the sampler state is fp32
 * whatever the model computes in). No exact comparison of a bf16 case in default numerics
 * runs it on the case's own inputs: the invariant shadows run invariant numerics, the fp32
 * shadow fp32, and the step's local error is held to the bf16 twins' envelope, which a step
 * rounded to bf16 stays inside (audit 14: the flow update's dt v rounded to bf16 under a bf16
 * layout was drift x4). So the teacher run (with the own checks, rp_parallel.check_own)
 * recomputes every step's update with code of its own: the same IEEE operations in the same
 * order as engine/samplers/, written apart from them, reading only the step's inputs and the
 * schedule. A correct sampler gives the same bits; a pair that differs is a BUG at that
 * step, named "sampler.update" (an own pair of the replica log, parallel.h).
 */
#ifndef REPRO_SAMPLER_OWN_H
#define REPRO_SAMPLER_OWN_H

#include <stddef.h>

#include "../ctx.h"
#include "../error.h"
#include "../samplers/flow.h"
#include "../samplers/samplers.h"

/* What one DiT sampler step (rp_sampler_step at loop step k) read: x (n) its input latent,
 * eps and var (n; var NULL without a learned variance) the model's output, z (n) the
 * ancestral noise (NULL when the step draws none); for DPM-Solver++(2M) the history as it
 * was before the step (x0_last NULL: none; abar_last). */
typedef struct rp_sampler_own_step {
    const rp_sampler_cfg *cfg;
    const rp_schedule *s;
    int k;
    size_t n;
    const float *x, *eps, *var, *z;
    const float *x0_last;
    double abar_last;
} rp_sampler_own_step;

/* y (n) = the step's output as recomputed by this file's own code. Returns 1 when that
 * update reads the ancestral noise z (by this file's own conditions), else 0. */
int rp_sampler_own_dit(const rp_sampler_own_step *st, float *y);
/* y (n) = the flow Euler update of x (n) by v (n) from sigmas[i] to sigmas[i + 1]. */
void rp_sampler_own_flow(const rp_flow_schedule *s, int i, const float *x, const float *v, size_t n, float *y);

/* The check: y recomputed as above, held against x_next (n, the step's output) as an own pair
 * noted under "sampler.update"; before it, where the update reads noise and z_own (n: the
 * step's noise as the caller draws it by code of its own, from each item's seed and global
 * index; NULL: not checked) is given, st->z against z_own under "sampler.noise" (the step
 * noise is host code keyed by (seed, item, step): the same bits in every layout). No-op
 * without ctx->par->check_own. Errors: RP_ERR_NOMEM. */
rp_status rp_sampler_own_check_dit(const rp_ctx *ctx, const rp_sampler_own_step *st, const float *z_own,
                                   const float *x_next, rp_error *err);
rp_status rp_sampler_own_check_flow(const rp_ctx *ctx, const rp_flow_schedule *s, int i, const float *x,
                                    const float *v, const float *x_next, size_t n, rp_error *err);

#endif
