# 11 flux-peritem-knorm-eps-later-items: FLUX with batch_forward per-item: the forwards of rows r0 > 0 (items
# b >= 1) run the image stream's key RMSNorm (norm_k, double blocks) with eps 1e-5 instead of 1e-6: audit 17's 06
# (a wrong constant), moved from one rank to the per-item path's later items, every rank alike. Keyed: world > 1,
# per-item mode, r0 > 0 (flow_fwd_run sets rp_audit18_late_row for the call).
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '                               .pooled = d->pooled + (size_t)r0 * d->Dpool, .guidance = d->g ? d->g + r0 : NULL};
    return d->model->ops->forward(d->model, ctx, o, &in, err);' '                               .pooled = d->pooled + (size_t)r0 * d->Dpool, .guidance = d->g ? d->g + r0 : NULL};
    extern int rp_audit18_flags, rp_audit18_late_row; /* AUDIT18-11 */
    rp_audit18_late_row = (rp_audit18_flags & 128) && d->per_item && r0 > 0;
    const rp_status st11 = d->model->ops->forward(d->model, ctx, o, &in, err);
    rp_audit18_late_row = 0;
    return st11;'
python3 $E engine/samplers/samplers.c 'int rp_audit18_gen;   /* AUDIT18: rp_generate calls in this process */' 'int rp_audit18_gen;   /* AUDIT18: rp_generate calls in this process */
int rp_audit18_late_row; /* AUDIT18-11: a per-item forward of rows r0 > 0 in progress */'
python3 $E engine/models/flux.c '                if (nw) rp_d_rmsnorm(ctx, f->ys + r0 * C, f->ys + r0 * C, nw, f->n_s[s] * NH, D, 1e-6f);' '                { extern int rp_audit18_late_row; /* AUDIT18-11 */
                if (nw) rp_d_rmsnorm(ctx, f->ys + r0 * C, f->ys + r0 * C, nw, f->n_s[s] * NH, D, rp_audit18_late_row && s == 1 && j == 1 ? 1e-5f : 1e-6f); }'
