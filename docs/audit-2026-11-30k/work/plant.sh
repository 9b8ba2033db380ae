#!/bin/bash
# plant.sh: audit 13's, with this audit's number and folder
A=18 D=/work/main/docs/audit-2026-11-30k exec bash /work/main/docs/audit-2026-11-30f/work/plant.sh "$@"
