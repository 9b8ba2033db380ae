#!/bin/bash
# plant.sh: audit 13's, with this audit's number and folder
A=21 D=/tmp/audit21/docs/audit-2026-12-02 exec bash /work/main/docs/audit-2026-11-30f/work/plant.sh "$@"
