#!/bin/bash
# plant.sh: audit 13's, with this audit's number and folder
A=20 D=/work/main/docs/audit-2026-12-01b exec bash /work/main/docs/audit-2026-11-30f/work/plant.sh "$@"
