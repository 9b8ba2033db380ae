#!/bin/bash
# runa.sh: audit 13's, with this audit's number (its paths)
A=21 exec bash /work/main/docs/audit-2026-11-30f/work/runa.sh "$@"
