# 04: batch_forward per-item: the last rank's forwards of its local items b >= 1 re-derive the model's timestep
# from float sigma (SD3: float(sigma) * 1000; FLUX: float(sigma)), after the timestep replica was noted
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/pipeline/pipeline.c '            const int r0 = seg < 0 ? b * nb : 2 * b + seg;
            RP_TRY(flow_forward(d, b == 0 ? d->ctx : &quiet, r0, nb, err));' '            const int r0 = seg < 0 ? b * nb : 2 * b + seg;
            if (b >= 1 && d->ctx->par && d->ctx->par->world > 1 && d->ctx->par->rank == d->ctx->par->world - 1) {
                const float ts = (float)sigma * (tt > 2.0f ? 1000.0f : 1.0f); /* AUDIT12-04 */
                for (int r = 0; r < nb; r++) d->t[r0 + r] = ts;
            }
            RP_TRY(flow_forward(d, b == 0 ? d->ctx : &quiet, r0, nb, err));'
