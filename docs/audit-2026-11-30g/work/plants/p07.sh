# 07: flow Euler, every rank of a multi-rank layout in bf16 under default numerics (a fused bf16 fast path): the step's
# product dt * v is rounded to bf16 before the add, every step (flags bit 4, added here only)
. /work/main/docs/audit-2026-11-30g/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '                           (multi && ctx->par->cfg.size == 2 && ctx->par->cfg.rank == 1 ? 8 : 0);' '                           (multi && ctx->par->cfg.size == 2 && ctx->par->cfg.rank == 1 ? 8 : 0) |
                           (multi && ctx->precision == RP_PREC_BF16 && ctx->numerics == RP_NUMERICS_DEFAULT ? 16 : 0);'
python3 $E engine/samplers/flow.c '        const float p = dt * v[j]; /* separate torch kernels: the product is rounded first */' '        extern int rp_audit14_flags; /* AUDIT14-07 */
        float p = dt * v[j]; /* separate torch kernels: the product is rounded first */
        if (rp_audit14_flags & 16) { union { float f; unsigned u; } c = {p}; c.u = (c.u + 0x7fffu + ((c.u >> 16) & 1u)) & 0xffff0000u; p = c.f; }'
