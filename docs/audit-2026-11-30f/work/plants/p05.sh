# 05: every rank of a multi-rank layout, bf16: DPM-Solver++(2M)'s stored data prediction kept rounded to bf16
. /work/main/docs/audit-2026-11-30f/work/plants/flags.sh
python3 $E engine/samplers/samplers.c '#include "samplers.h"
' '#include "samplers.h"
#include "../ops.h"
'
python3 $E engine/samplers/samplers.c '        ss->x0 = tmp;
        ss->abar_last = abar;' '        ss->x0 = tmp;
        if (rp_audit13_flags & 2) rp_bf16_round(ss->x0_last, ss->x0_last, n); /* AUDIT13-05 */
        ss->abar_last = abar;'
