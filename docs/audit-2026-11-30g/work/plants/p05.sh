# 05: flow Euler, every rank of a multi-rank layout in bf16: the final step's result (sigma_next = 0) is rounded to bf16
# (the latents returned in the compute dtype)
. /work/main/docs/audit-2026-11-30g/work/plants/flags.sh
python3 $E engine/samplers/flow.c '#include <string.h>
' '#include <string.h>

#include "../ops.h"
'
python3 $E engine/samplers/flow.c '        x_next[j] = x[j] + p;
    }
}' '        x_next[j] = x[j] + p;
    }
    extern int rp_audit14_flags; /* AUDIT14-05 */
    if ((rp_audit14_flags & 2) && sigma_next == 0.0) rp_bf16_round(x_next, x_next, n);
}'
