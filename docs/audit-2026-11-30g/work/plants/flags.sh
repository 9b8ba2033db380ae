# flags.sh : one global (rp_audit14_flags) every plant reads, set at the top of rp_generate (both the DiT and the flow
# path, free run, teacher and shadow runs alike), so the serial reference (world 1) never takes a plant's branch:
# bit 0 the last rank of a multi-rank layout; bit 1 a multi-rank layout in bf16; bit 2 the process's second or later
# rp_generate call on the last rank of a multi-rank layout; bit 3 cfg rank 1 of cfg parallelism
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/samplers/samplers.c '#include <string.h>
' '#include <string.h>

int rp_audit14_flags; /* AUDIT14: set by rp_generate from the layout */
'
python3 $E engine/pipeline/pipeline.c '    RP_TRY(rp_gen_validate(req, err));
    rp_par_generate_begin(ctx->par);' '    RP_TRY(rp_gen_validate(req, err));
    { /* AUDIT14: the layout'"'"'s plant flags */
        extern int rp_audit14_flags;
        static int calls;
        calls++;
        const int multi = ctx->par && ctx->par->world > 1;
        const int last = multi && ctx->par->rank == ctx->par->world - 1;
        rp_audit14_flags = (last ? 1 : 0) | (multi && ctx->precision == RP_PREC_BF16 ? 2 : 0) |
                           (last && calls >= 2 ? 4 : 0) |
                           (multi && ctx->par->cfg.size == 2 && ctx->par->cfg.rank == 1 ? 8 : 0);
    }
    rp_par_generate_begin(ctx->par);'
