# flags.sh : the layout flags the sampler plants read (sourced by p01, p02, p05): bit 0 = the last rank of a
# multi-rank layout, bit 1 = a multi-rank layout in bf16; set by the DiT path of rp_generate (free run and teacher runs)
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/samplers/samplers.c '#include <string.h>
' '#include <string.h>

int rp_audit13_flags; /* AUDIT13: set by rp_generate from the layout */
'
python3 $E engine/pipeline/pipeline.c '    RP_TRY(check_request(req, &c, err));

    const int B = req->n_items' '    RP_TRY(check_request(req, &c, err));
    { /* AUDIT13: the layout'"'"'s sampler flags */
        extern int rp_audit13_flags;
        const int multi = ctx->par && ctx->par->world > 1;
        rp_audit13_flags = (multi && ctx->par->rank == ctx->par->world - 1 ? 1 : 0) |
                           (multi && ctx->precision == RP_PREC_BF16 ? 2 : 0);
    }

    const int B = req->n_items'
