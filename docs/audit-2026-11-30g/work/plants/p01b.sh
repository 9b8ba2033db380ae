# 01b: cfg rank 1 (the rank that evaluates the conditional segment): the last item's pooled text is item 0's (a wrap-around off by one)
# (an off-by-one in the pooled gather of the split batch)
. /work/main/docs/audit-2026-11-30g/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '    /* FluxPipeline: torch.full([1], guidance_scale, dtype=float32).expand(B) */' '    { /* AUDIT14-01b */
        extern int rp_audit14_flags;
        if ((rp_audit14_flags & 8) && B > 1)
            memcpy(d->pooled + (size_t)flow_slot(d, B - 1, 1) * d->Dpool, pooled,
                   sizeof(float) * d->Dpool);
    }
    /* FluxPipeline: torch.full([1], guidance_scale, dtype=float32).expand(B) */'
