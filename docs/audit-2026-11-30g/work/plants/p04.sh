# 04: DDIM, the last rank of a multi-rank layout in bf16: the final step (i = 0) takes abar_prev = alphas_cumprod[0]
# instead of 1 (set_alpha_to_one off), so the last step leaves x where it is
. /work/main/docs/audit-2026-11-30g/work/plants/flags.sh
python3 $E engine/samplers/samplers.c '    const double abar = s->alphas_cumprod[i], abar_prev = rp_schedule_abar_prev(s, i);
    rp_status st = RP_OK;' '    const double abar = s->alphas_cumprod[i];
    double abar_prev = rp_schedule_abar_prev(s, i);
    if (cfg->kind == RP_SAMPLER_DDIM && i == 0 && (rp_audit14_flags & 3) == 3) abar_prev = s->alphas_cumprod[0]; /* AUDIT14-04 */
    rp_status st = RP_OK;'
