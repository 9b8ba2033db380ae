#!/bin/bash
# plants2.sh : 01b, 03b (added after plants.sh), bf16 only, into r/P<NN>-bf16
W=/work/main/docs/audit-2026-11-30j/work; B=/tmp/audit17-work/bin
S_u='uly2|ulysses: 2'; S_r='ring2|ring: 2'
BIN=$B/01b-dit-final-gather-bf16-wire-anynum $W/runa.sh P01b-bf16 t dit "precision: bf16" -- "$S_u" "$S_r"
BIN=$B/03b-dit-last-shard-mlp-gate-bf16-anynum $W/runa.sh P03b-bf16 t dit "precision: bf16" -- "$S_u" "$S_r"
