#!/bin/bash
# partA6.sh: the E dit matrix's three configs again (reference now resets pipefusion_layers and chunks); steps 1 and 2 elsewhere
W=/tmp/audit10-work
for p in fp32 bf16; do
 $W/runa.sh E7-$p dit "precision: $p" -- 'pf2 layers 1,3|pipefusion: 2, pipefusion_layers: [1, 3]' 'subquad chunks ring2|attention: subquad, attn_q_chunk: 16, attn_kv_chunk: 8, ring: 2' 'flash chunks dp2|attention: flash, attn_q_chunk: 8, attn_kv_chunk: 16, dp: 2'
 STEPS=1 $W/runa.sh E8-$p ditp "precision: $p" -- 'dp2|dp: 2' 'ring2|ring: 2'
 STEPS=1 $W/runa.sh E8-$p sd3 "precision: $p" -- 'dp2|dp: 2' 'uly2|ulysses: 2'
 STEPS=2 $W/runa.sh E8-$p dit "precision: $p" -- 'dp2|dp: 2' 'uly2 ring2|ulysses: 2, ring: 2'
 STEPS=1 $W/runa.sh E9-$p dit "precision: $p" -- 'dp2|dp: 2' 'uly2 ring2|ulysses: 2, ring: 2' 'cfg2|cfg_parallel: 2'
done
