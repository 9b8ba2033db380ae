#!/bin/bash
while kill -0 1818 2>/dev/null; do sleep 3; done
. /work/main/docs/audit-2026-11-30g/work/cases.sh
for p in bf16 fp32; do BIN=/tmp/audit14-work/bin/08-ddim-x0-bf16-default /work/main/docs/audit-2026-11-30g/work/runa.sh P08-$p sc dit "precision: $p" -- "${CC[@]}"; done
echo DONE3
