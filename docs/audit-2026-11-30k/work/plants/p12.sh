# 12 sd3-peritem-pooled-bf16-later-items: SD3 / FLUX with batch_forward per-item: the forwards of rows r0 > 0 get
# their pooled vectors rounded to bf16 (the per-item path hands the pooled rows over as bf16), in either precision.
# Keyed: world > 1 (every rank alike), per-item mode, r0 > 0. Not keyed to precision or numerics.
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '                               .pooled = d->pooled + (size_t)r0 * d->Dpool, .guidance = d->g ? d->g + r0 : NULL};
    return d->model->ops->forward(d->model, ctx, o, &in, err);' '                               .pooled = d->pooled + (size_t)r0 * d->Dpool, .guidance = d->g ? d->g + r0 : NULL};
    extern int rp_audit18_flags; /* AUDIT18-12 */
    if ((rp_audit18_flags & 128) && d->per_item && r0 > 0) {
        static float *pb; static size_t pbn;
        const size_t n = (size_t)nb * d->Dpool;
        if (n > pbn) { free(pb); pb = malloc(sizeof(float) * n); pbn = n; }
        rp_bf16_round(pb, in.pooled, n);
        rp_model_input in2 = in;
        in2.pooled = pb;
        return d->model->ops->forward(d->model, ctx, o, &in2, err);
    }
    return d->model->ops->forward(d->model, ctx, o, &in, err);'
