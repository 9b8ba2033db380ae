#!/bin/bash
# plant.sh: audit 13's, with this audit's number and folder
A=17 D=/work/main/docs/audit-2026-11-30j exec bash /work/main/docs/audit-2026-11-30f/work/plant.sh "$@"
