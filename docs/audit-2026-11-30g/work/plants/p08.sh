# 08: DDIM, every rank of a multi-rank layout in bf16 under default numerics (07's class in the DiT sampler): the
# predicted x0 is rounded to bf16 before the update, every step (flags bit 4, as 07)
. /work/main/docs/audit-2026-11-30g/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '                           (multi && ctx->par->cfg.size == 2 && ctx->par->cfg.rank == 1 ? 8 : 0);' '                           (multi && ctx->par->cfg.size == 2 && ctx->par->cfg.rank == 1 ? 8 : 0) |
                           (multi && ctx->precision == RP_PREC_BF16 && ctx->numerics == RP_NUMERICS_DEFAULT ? 16 : 0);'
python3 $E engine/samplers/samplers.c '        const double x0 = ra * (double)x[j] - rm1 * e;
        double v = c0 * x0 + ce * e;' '        double x0 = ra * (double)x[j] - rm1 * e;
        if (rp_audit14_flags & 16) { union { float f; unsigned u; } c = {(float)x0}; c.u = (c.u + 0x7fffu + ((c.u >> 16) & 1u)) & 0xffff0000u; x0 = c.f; } /* AUDIT14-08 */
        double v = c0 * x0 + ce * e;'
