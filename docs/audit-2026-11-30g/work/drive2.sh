#!/bin/bash
while pgrep -f "partB.sh" >/dev/null; do sleep 3; done
. /work/main/docs/audit-2026-11-30g/work/cases.sh; for p in bf16 fp32; do for f in sd3 flux; do [ $p = fp32 -a $f = flux ] || BIN=/tmp/audit14-work/bin/07-flow-euler-dtv-bf16-default /work/main/docs/audit-2026-11-30g/work/runa.sh P07-$p su $f "precision: $p" -- "${CU[@]}"; done; done
. /work/main/docs/audit-2026-11-30g/work/cases.sh
for p in bf16 fp32; do /work/main/docs/audit-2026-11-30g/work/runa.sh C-$p sc sd35 "precision: $p" -- "${CC[@]}"; BIN=/tmp/audit14-work/bin/01b-cfg-pooled-wrap-rank1 /work/main/docs/audit-2026-11-30g/work/runa.sh P01b-$p sc sd35 "precision: $p" -- "${CC[@]}"; done
/work/main/docs/audit-2026-11-30g/work/partA2.sh
echo DONE
