# 04 flux-guidance-default-later-items: FLUX's embedded guidance row is filled with the request's value for the
# first row of the forward batch only; rows >= 1 keep the pipeline default (RP_FLOW_FLUX_GUIDANCE, 3.5). Acts only
# at a guidance other than 3.5, on local rows >= 1, every rank alike. Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '        for (int b = 0; b < Bm; b++) d->g[b] = (float)guidance;' '        for (int b = 0; b < Bm; b++) { /* AUDIT19-04 */
            extern int rp_audit19_flags;
            d->g[b] = (float)((rp_audit19_flags & 128) && b > 0 ? RP_FLOW_FLUX_GUIDANCE : guidance);
        }'
