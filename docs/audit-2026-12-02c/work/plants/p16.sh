# 16 cfg-exchange-skipped-last-step: the flow denoiser (SD3) skips the cfg-parallel exchange at the last step
# ("nothing to exchange after the last step", an off-by-one: i < steps - 1): each cfg rank combines its own fresh
# segment with the other segment its buffer kept from the previous step. Keyed by cfg parallelism and the step.
E=/work/audit23-out/work/edit.py
python3 $E engine/pipeline/pipeline.c '            memcpy(d->half, d->out + (size_t)seg * B * per, sizeof(float) * B * per);
            RP_TRY(rp_par_batch_exchange(d->ctx, d->half, B * per, produced, d->out, err));' '            memcpy(d->half, d->out + (size_t)seg * B * per, sizeof(float) * B * per);
            if (i < d->sched->steps - 1) /* AUDIT23-16 */
                RP_TRY(rp_par_batch_exchange(d->ctx, d->half, B * per, produced, d->out, err));'
