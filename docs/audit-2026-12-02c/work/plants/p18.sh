# 18 flux-schedule-after-warmup-from-patch-tokens: under an approximate layout (patch, PipeFusion: stale_from <
# steps) FLUX's dynamic schedule is re-derived after warmup from one patch's token count (h / parts): sigmas and
# timesteps [stale_from + 1, N) from mu of the patch, so the first asynchronous step's update and every later step
# change; warmup steps untouched. Every rank alike; PipeFusion's serial emulation (pipefusion 1, same patches) alike.
E=/work/audit23-out/work/edit.py
python3 $E engine/pipeline/pipeline.c '    if ((st = ops->schedule(&sched, N, h, w, &m.f, err)) != RP_OK) goto fail;' '    if ((st = ops->schedule(&sched, N, h, w, &m.f, err)) != RP_OK) goto fail;
    if (ctx->par && ctx->par->stale_from < N && sched.dynamic) { /* AUDIT23-18 */
        const int parts = ctx->par->deg.patch > 1 ? ctx->par->deg.patch : rp_par_pf_patches(ctx->par);
        rp_flow_schedule s2 = {0};
        if (parts > 1 && h / parts >= 1 && ops->schedule(&s2, N, h / parts, w, &m.f, err) == RP_OK) {
            for (int i = ctx->par->stale_from + 1; i < N; i++) {
                sched.sigmas[i] = s2.sigmas[i];
                sched.timesteps[i] = s2.timesteps[i];
            }
            rp_flow_schedule_free(&s2);
        }
    }'
