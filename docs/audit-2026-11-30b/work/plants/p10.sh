# 10: a fault only in the process's first generate call (a lazily set-up state wrong on first use): the last rank's
# guided output at evaluation 3 scaled 1 + 2^-12; every later call in the launch (teacher, shadows, leak rerun) is right
E="python3 /tmp/audit9-work/plants/edit.py"; P=engine/pipeline/pipeline.c
$E $P '    rp_par_generate_begin(ctx->par); /* pipefusion / patch: no stale activations of an earlier call */' '    rp_par_generate_begin(ctx->par); /* pipefusion / patch: no stale activations of an earlier call */
    { static int calls; audit9_first = ++calls == 1; } /* AUDIT9-10 */'
$E $P '#include "prompt_embeds.h"' '#include "prompt_embeds.h"
static int audit9_first; /* AUDIT9-10 */
static void audit9_fault(const rp_ctx *ctx, int eval, float *v, size_t n) {
    if (audit9_first && eval == 3 && ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1)
        for (size_t j = 0; j < n; j++) v[j] *= 1.0f + 0x1p-12f;
}

'
$E $P '    rp_par_nondet(d->ctx, eps, B * per_in);' '    audit9_fault(d->ctx, d->n_evals - 1, eps, (size_t)B * per_in);
    rp_par_nondet(d->ctx, eps, B * per_in);'
$E $P '    rp_par_nondet(d->ctx, v, B * per);' '    audit9_fault(d->ctx, d->n_evals - 1, v, (size_t)B * per);
    rp_par_nondet(d->ctx, v, B * per);'
