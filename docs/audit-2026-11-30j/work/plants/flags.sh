# flags.sh (audit 17: audit 16's scheme, one more bit): one global rp_audit17_flags set at the top of rp_generate;
# never set at world 1, so the serial reference never takes a plant's branch.
# bit 0 (1): the last rank of a multi-rank layout; bit 1 (2): a multi-rank layout in bf16;
# bit 2 (4): the last rank of a sequence group of size > 1; bit 3 (8): cfg rank 1 (cfg_parallel 2);
# bit 4 (16): multi-rank, bf16, numerics default; bit 5 (32): the last dp group (dp > 1);
# bit 6 (64, new): a sequence group of size > 1 (every rank of it); rp_audit17_sp: the sequence degree (1 at world 1)
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/samplers/samplers.c '#include <string.h>
' '#include <string.h>

int rp_audit17_flags; /* AUDIT17: set by rp_generate from the layout */
int rp_audit17_sp = 1; /* AUDIT17: the sequence degree */
'
python3 $E engine/pipeline/pipeline.c '    RP_TRY(rp_gen_validate(req, err));
    rp_par_generate_begin(ctx->par);' '    RP_TRY(rp_gen_validate(req, err));
    { /* AUDIT17: the layout'"'"'s plant flags */
        extern int rp_audit17_flags, rp_audit17_sp;
        const rp_parallel *pp = ctx->par;
        const int multi = pp && pp->world > 1;
        const int last = multi && pp->rank == pp->world - 1;
        const int bf = multi && ctx->precision == RP_PREC_BF16;
        rp_audit17_flags = (last ? 1 : 0) | (bf ? 2 : 0) |
                           (multi && pp->sp.size > 1 && pp->sp.rank == pp->sp.size - 1 ? 4 : 0) |
                           (multi && pp->cfg.size > 1 && pp->cfg.rank == 1 ? 8 : 0) |
                           (bf && ctx->numerics == RP_NUMERICS_DEFAULT ? 16 : 0) |
                           (multi && pp->dp.size > 1 && pp->dp.rank == pp->dp.size - 1 ? 32 : 0) |
                           (multi && pp->sp.size > 1 ? 64 : 0);
        rp_audit17_sp = multi ? pp->sp.size : 1;
    }
    rp_par_generate_begin(ctx->par);'
