# 06: cfg parallelism exchanges its halves in the compute dtype: in a bf16 case under default numerics each rank
# rounds its segment's output to bf16 before the allgather (both ranks then combine the same rounded halves;
# invariant numerics exchanges fp32 "to stay bitwise")
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/parallel/cfg_par.c '#include "parallel.h"' '#include "parallel.h"
#include "../ops.h"'
python3 $E engine/parallel/cfg_par.c '    uint64_t sent[2]; /* (2) each rank'"'"'s fingerprint of its mine, in cfg rank order */' '    float *tx = NULL; /* AUDIT12-06: the exchange in the compute dtype (bf16, default numerics) */
    if (ctx->precision == RP_PREC_BF16 && ctx->numerics == RP_NUMERICS_DEFAULT && (tx = malloc(sizeof(float) * n))) {
        rp_bf16_round(tx, mine, n);
        mine = tx;
    }
    uint64_t sent[2]; /* (2) each rank'"'"'s fingerprint of its mine, in cfg rank order */'
python3 $E engine/parallel/cfg_par.c '    RP_TRY(c->ops->allgather(c, mine, n, both, err));' '    rp_status ast = c->ops->allgather(c, mine, n, both, err);
    free(tx);
    RP_TRY(ast);'
