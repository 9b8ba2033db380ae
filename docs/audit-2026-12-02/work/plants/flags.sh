# flags.sh (audit 21: audit 20's, renamed; audit 18's: audit 17's scheme without its numerics bit, plus "any multi-rank layout" and a call counter):
# one global rp_audit21_flags set at the top of rp_generate from the layout; never set at world 1, so the serial
# reference (and every twin, and PipeFusion's one-stage serial emulation) never takes a plant's branch.
# bit 0 (1): the last rank; bit 1 (2): multi-rank bf16; bit 2 (4): the last rank of a sequence group of size > 1;
# bit 3 (8): cfg rank 1; bit 5 (32): the last dp group (dp > 1); bit 6 (64): a sequence group of size > 1;
# bit 7 (128, new): any multi-rank layout (world > 1), every rank. rp_audit21_gen counts rp_generate calls.
# No bit reads ctx->numerics.
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/samplers/samplers.c '#include <string.h>
' '#include <string.h>

int rp_audit21_flags; /* AUDIT21: set by rp_generate from the layout */
int rp_audit21_gen;   /* AUDIT21: rp_generate calls in this process */
'
python3 $E engine/pipeline/pipeline.c '    RP_TRY(rp_gen_validate(req, err));
    rp_par_generate_begin(ctx->par);' '    RP_TRY(rp_gen_validate(req, err));
    { /* AUDIT21: the layout'"'"'s plant flags */
        extern int rp_audit21_flags, rp_audit21_gen;
        const rp_parallel *pp = ctx->par;
        const int multi = pp && pp->world > 1;
        rp_audit21_flags = (multi && pp->rank == pp->world - 1 ? 1 : 0) |
                           (multi && ctx->precision == RP_PREC_BF16 ? 2 : 0) |
                           (multi && pp->sp.size > 1 && pp->sp.rank == pp->sp.size - 1 ? 4 : 0) |
                           (multi && pp->cfg.size > 1 && pp->cfg.rank == 1 ? 8 : 0) |
                           (multi && pp->dp.size > 1 && pp->dp.rank == pp->dp.size - 1 ? 32 : 0) |
                           (multi && pp->sp.size > 1 ? 64 : 0) | (multi ? 128 : 0);
        rp_audit21_gen++;
    }
    rp_par_generate_begin(ctx->par);'
