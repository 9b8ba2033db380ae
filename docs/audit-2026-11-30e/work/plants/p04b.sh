# 04b: batch_forward per-item: in a bf16 case the last rank's forwards of its local items b >= 1 build their timestep
# rows in the compute dtype (rounded to bf16), after the timestep replica was noted (04 re-derived it from float
# sigma, which is the schedule's own arithmetic: no bit changed)
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/pipeline/pipeline.c '            const int r0 = seg < 0 ? b * nb : 2 * b + seg;
            RP_TRY(flow_forward(d, b == 0 ? d->ctx : &quiet, r0, nb, err));' '            const int r0 = seg < 0 ? b * nb : 2 * b + seg;
            if (b >= 1 && d->ctx->par && d->ctx->par->world > 1 && d->ctx->par->rank == d->ctx->par->world - 1 &&
                d->ctx->precision == RP_PREC_BF16)
                rp_bf16_round(d->t + r0, d->t + r0, (size_t)nb); /* AUDIT12-04b: the timestep in the compute dtype */
            RP_TRY(flow_forward(d, b == 0 ? d->ctx : &quiet, r0, nb, err));'
