#!/bin/bash
# partA9.sh: longer runs (GEMM own-check rotation over more evaluations), repeat 2 on flux / sd3, bf16 vs fp32 with approximate layouts, steps 1 scope
W=/tmp/audit10-work
for p in bf16 fp32; do
 STEPS=10 $W/runa.sh G-$p dit "precision: $p" -- 'dp2|dp: 2' 'ring2|ring: 2'
 STEPS=8 SEEDS='[0]' $W/runa.sh G-$p flux "precision: $p" -- 'uly2 ring2|ulysses: 2, ring: 2'
 STEPS=3 $W/runa.sh G-$p ditm "precision: $p" -- 'dp2|dp: 2' 'cfg2|cfg_parallel: 2'
 REPEAT=2 $W/runa.sh R2b-$p flux "precision: $p" -- 'ring2|ring: 2' 'per-item dp2|batch_forward: per-item, dp: 2'
 REPEAT=2 $W/runa.sh R2b-$p sd3 "precision: $p" -- 'cfg2 uly2|cfg_parallel: 2, ulysses: 2'
 STEPS=1 $W/runa.sh G1-$p ditm "precision: $p" -- 'dp2|dp: 2'
 STEPS=1 $W/runa.sh G1-$p dita "precision: $p" -- 'uly2|ulysses: 2'
 STEPS=1 $W/runa.sh G1-$p ditd "precision: $p" -- 'dp2|dp: 2'
done
REFX="precision: fp32" $W/runa.sh X2-bf16ref32 dit "precision: bf16" -- 'patch2 w1|patch: 2, warmup_steps: 1' 'pf2 npp4|pipefusion: 2, num_pipeline_patch: 4' 'ring4|ring: 4' 'fast dp2|mode: fast, dp: 2'
REFX="precision: fp32" $W/runa.sh X2-bf16ref32 flux "precision: bf16" -- 'pf2 npp4|pipefusion: 2, num_pipeline_patch: 4' 'ring4|ring: 4'
REFX="precision: bf16" $W/runa.sh X2-fp32refbf16 dit "precision: fp32" -- 'dp2|dp: 2' 'serial fp32|dp: 1'
