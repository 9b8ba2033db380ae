# 13 flow-schedule-steps-plus-one-sp: the flow (SD3 / FLUX) schedule is computed for N + 1 steps under sequence
# parallelism (sp = ulysses x ring > 1) and its first N + 1 sigmas used: every sigma shifted, the last one not 0.
# Every rank alike (replicas agree).
E=/work/audit23-out/work/edit.py
python3 $E engine/pipeline/pipeline.c '    if ((st = ops->schedule(&sched, N, h, w, &m.f, err)) != RP_OK) goto fail;' '    if ((st = ops->schedule(&sched, ctx->par && ctx->par->sp.size > 1 ? N + 1 : N, h, w, &m.f, err)) != RP_OK)
        goto fail; /* AUDIT23-13 */
    sched.steps = N;'
