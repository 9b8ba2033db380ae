#!/bin/bash
# plants3.sh : 11 on pi sd3, fp32 then bf16 (started after plants2.sh's process exited)
W=/work/main/docs/audit-2026-12-01b/work; B=/tmp/audit20-work/bin; . $W/cases.sh
for p in ${PRECS:-fp32 bf16}; do BIN=$B/11-peritem-cfg-later-items-half-bf16 $W/runa.sh P11-$p pi sd3 "precision: $p" -- "${PI[@]}"; done
