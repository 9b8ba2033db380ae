# 09 flow-peritem-pooled-stride: SD3 / FLUX with batch_forward per-item: the forward of rows r0 > 0 (items b >= 1,
# or the cond row) reads its pooled vector at pooled + r0 floats, not r0 * Dpool (a stride left out), so every row
# but the batch's first gets a pooled vector shifted by r0 floats. Only per-item forwards (whose trace covers item 0
# of the run only) take it. Keyed: world > 1 (every rank alike), per-item mode.
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '                               .pooled = d->pooled + (size_t)r0 * d->Dpool, .guidance = d->g ? d->g + r0 : NULL};' '                               .pooled = d->pooled + (size_t)r0 * d->Dpool, .guidance = d->g ? d->g + r0 : NULL};
    rp_model_input in2 = in; /* AUDIT18-09 */
    { extern int rp_audit18_flags;
      if ((rp_audit18_flags & 128) && d->per_item && r0 > 0) in2.pooled = d->pooled + r0; }
    return d->model->ops->forward(d->model, ctx, o, &in2, err);'
