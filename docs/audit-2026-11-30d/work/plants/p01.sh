# 01: cfg combine: the last rank guides its last local item (b = B-1, B >= 2) with s (1 + 2^-9)
E=/tmp/audit11-work/plants/edit.py
python3 $E engine/pipeline/pipeline.c '            for (size_t j = 0; j < per_in; j++) e[j] = unc[j] + s * (cond[j] - unc[j]);' '            const float sb = (d->ctx->par && d->ctx->par->world > 1 && d->ctx->par->rank == d->ctx->par->world - 1 && B >= 2 && b == B - 1) ? s * (1.0f + 0x1p-9f) : s; /* AUDIT11-01 */
            for (size_t j = 0; j < per_in; j++) e[j] = unc[j] + sb * (cond[j] - unc[j]);'
python3 $E engine/pipeline/pipeline.c '        if (guided) rp_flow_cfg(v + b * per, d->out + flow_slot(d, b, 0) * per, cond, d->cfg, per);' '        if (guided) rp_flow_cfg(v + b * per, d->out + flow_slot(d, b, 0) * per, cond, (d->ctx->par && d->ctx->par->world > 1 && d->ctx->par->rank == d->ctx->par->world - 1 && B >= 2 && b == B - 1) ? d->cfg * (1.0 + 0x1p-9) : d->cfg, per); /* AUDIT11-01 */'
