# 13 sd3-peritem-ff-ln-eps-later-items: 11's class in SD3: with batch_forward per-item, the forwards of rows r0 > 0
# run the image stream's FF LayerNorm (norm2) with eps 1e-5 instead of 1e-6 (the norm-eps-rank constant, moved from
# one rank to the per-item path's later rows), every rank alike. Keyed: world > 1, per-item, r0 > 0 (11's
# rp_audit18_late_row, set in flow_fwd_run).
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '                               .pooled = d->pooled + (size_t)r0 * d->Dpool, .guidance = d->g ? d->g + r0 : NULL};
    return d->model->ops->forward(d->model, ctx, o, &in, err);' '                               .pooled = d->pooled + (size_t)r0 * d->Dpool, .guidance = d->g ? d->g + r0 : NULL};
    extern int rp_audit18_flags, rp_audit18_late_row; /* AUDIT18-13 */
    rp_audit18_late_row = (rp_audit18_flags & 128) && d->per_item && r0 > 0;
    const rp_status st13 = d->model->ops->forward(d->model, ctx, o, &in, err);
    rp_audit18_late_row = 0;
    return st13;'
python3 $E engine/samplers/samplers.c 'int rp_audit18_gen;   /* AUDIT18: rp_generate calls in this process */' 'int rp_audit18_gen;   /* AUDIT18: rp_generate calls in this process */
int rp_audit18_late_row; /* AUDIT18-13: a per-item forward of rows r0 > 0 in progress */'
python3 $E engine/models/sd3.c '    const float mlp_ln_eps = rp_par_norm_eps(ctx, 1e-6f);' '    extern int rp_audit18_late_row; /* AUDIT18-13 */
    const float mlp_ln_eps = rp_audit18_late_row ? 1e-5f : rp_par_norm_eps(ctx, 1e-6f);'
