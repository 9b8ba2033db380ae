# flags.sh (audit 15; audit 14's scheme): one global rp_audit15_flags set at the top of rp_generate (both paths, every
# run of a launch); never set at world 1, so the serial reference never takes a plant's branch.
# bit 0: the last rank of a multi-rank layout; bit 1: a multi-rank layout in bf16;
# bit 4: a multi-rank layout in bf16 under numerics default (a fast path)
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/samplers/samplers.c '#include <string.h>
' '#include <string.h>

int rp_audit15_flags; /* AUDIT15: set by rp_generate from the layout */
'
python3 $E engine/pipeline/pipeline.c '    RP_TRY(rp_gen_validate(req, err));
    rp_par_generate_begin(ctx->par);' '    RP_TRY(rp_gen_validate(req, err));
    { /* AUDIT15: the layout'"'"'s plant flags */
        extern int rp_audit15_flags;
        const int multi = ctx->par && ctx->par->world > 1;
        const int last = multi && ctx->par->rank == ctx->par->world - 1;
        rp_audit15_flags = (last ? 1 : 0) | (multi && ctx->precision == RP_PREC_BF16 ? 2 : 0) |
                           (multi && ctx->precision == RP_PREC_BF16 && ctx->numerics == RP_NUMERICS_DEFAULT ? 16 : 0);
    }
    rp_par_generate_begin(ctx->par);'
