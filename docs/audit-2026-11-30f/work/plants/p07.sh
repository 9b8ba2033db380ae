# 07: DDIM eta > 0, every rank of a multi-rank layout, bf16: the ancestral noise term uses sigma rounded to bf16
. /work/main/docs/audit-2026-11-30f/work/plants/flags.sh
python3 $E engine/samplers/samplers.c '        if (sigma > 0.0) v += sigma * (double)noise[j];' '        if (sigma > 0.0) { /* AUDIT13-07 */
            extern int rp_audit13_flags;
            const double sg = (rp_audit13_flags & 2) ? (double)rp_bf16_to_f32(rp_f32_to_bf16((float)sigma)) : sigma;
            v += sg * (double)noise[j];
        }'
python3 $E engine/samplers/samplers.c '#include "samplers.h"
' '#include "samplers.h"
#include "../ops.h"
'
