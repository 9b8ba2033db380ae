#!/bin/bash
while pgrep -f "partA.sh" >/dev/null; do sleep 5; done
/work/main/docs/audit-2026-11-30g/work/clean.sh
while pgrep -f "plant.sh" >/dev/null; do sleep 5; done
/work/main/docs/audit-2026-11-30g/work/partB.sh
/work/main/docs/audit-2026-11-30g/work/partA2.sh
echo DONE
