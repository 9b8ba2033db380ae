# 03 ddpm-var-uncond-later-items: DiT's learned-range variance (ddpm) taken from the UNCONDITIONAL half's output for
# the rank's items b >= 1 (item 0 keeps the conditional half's, as DiT does). Keyed: world > 1, local item index
# >= 1 (every rank alike; rotation hands the same local indices on).
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '        if (var && c->learn_sigma) memcpy(var + b * per_in, cond + per_in, sizeof(float) * per_in);' '        { extern int rp_audit18_flags; /* AUDIT18-03 */
        const float *vsrc = (rp_audit18_flags & 128) && guided && b >= 1 ? d->out + (B + b) * per_out : cond;
        if (var && c->learn_sigma) memcpy(var + b * per_in, vsrc + per_in, sizeof(float) * per_in); }'
