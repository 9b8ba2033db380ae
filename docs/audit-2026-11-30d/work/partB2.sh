#!/bin/bash
# partB2.sh : 05 (bf16-only GELU) on sequence layouts, dit and flux bf16, clean then plant (r/C2-bf16, r/P05b-bf16)
W=/tmp/audit11-work
for f in dit flux; do
  $W/runa.sh C2-bf16 $f "precision: bf16" -- 'uly2 s|ulysses: 2' 'ring2|ring: 2'
  BIN=$W/bin/05-gelu-erf-bf16-lastrank $W/runa.sh P05b-bf16 $f "precision: bf16" -- 'uly2 s|ulysses: 2' 'ring2|ring: 2'
done
