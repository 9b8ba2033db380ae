#!/bin/bash
# partA3.sh: bf16 cases against an fp32 reference (REFX), repeat 2, trained presets, more knobs
W=/tmp/audit10-work
REFX="precision: fp32" $W/runa.sh X-bf16ref32 dit "precision: bf16" -- 'dp2|dp: 2' 'uly2 ring2|ulysses: 2, ring: 2' 'serial bf16|dp: 1' 'cfg2 dp2|cfg_parallel: 2, dp: 2' 'flash uly2|attention: flash, ulysses: 2'
REFX="precision: fp32" $W/runa.sh X-bf16ref32 sd3 "precision: bf16" -- 'per-item dp2|batch_forward: per-item, dp: 2' 'ring2|ring: 2' 'serial bf16|dp: 1' 'cfg2|cfg_parallel: 2'
REFX="precision: fp32" $W/runa.sh X-bf16ref32 flux "precision: bf16" -- 'ring2|ring: 2' 'serial bf16|dp: 1' 'uly2|ulysses: 2'
REFX="precision: fp32" $W/runa.sh X-bf16ref32 ditd "precision: bf16" -- 'dp2|dp: 2' 'serial bf16|dp: 1' 'ring2|ring: 2'
REFX="precision: fp32" $W/runa.sh X-bf16ref32 sd3d "precision: bf16" -- 'dp2|dp: 2' 'serial bf16|dp: 1'
for p in fp32 bf16; do
 REPEAT=2 $W/runa.sh R2-$p dit "precision: $p" -- 'dp2|dp: 2' 'ring2|ring: 2' 'fast uly2|mode: fast, ulysses: 2'
 REPEAT=2 $W/runa.sh R2-$p sd3d "precision: $p" -- 'per-item dp2|batch_forward: per-item, dp: 2' 'uly2|ulysses: 2'
 $W/runa.sh T-$p ditd "precision: $p" -- 'threads2 uly2|threads: 2, ulysses: 2' 'reduce_split ring2|reduce_split: 1, ring: 2' 'subquad dp2|attention: subquad, dp: 2' 'Haswell ring2|blas_core: Haswell, ring: 2' 'fast dp2|mode: fast, dp: 2'
 $W/runa.sh T-$p sd3d "precision: $p" -- 'per-item uly2|batch_forward: per-item, ulysses: 2' 'threads2 dp2|threads: 2, dp: 2' 'split cfg2|attention: split, cfg_parallel: 2' 'Sandybridge ring2|blas_core: Sandybridge, ring: 2' 'auto uly2 ring2|attention: auto, ulysses: 2, ring: 2' 'fast cfg2|mode: fast, cfg_parallel: 2'
 $W/runa.sh T-$p flux "precision: $p" -- 'per-item uly2|batch_forward: per-item, ulysses: 2' 'threads2 ring2|threads: 2, ring: 2' 'reduce_split dp2|reduce_split: 1, dp: 2' 'flash ring4|attention: flash, ring: 4' 'pf2 uly2|pipefusion: 2, ulysses: 2' 'Haswell uly2|blas_core: Haswell, ulysses: 2'
 $W/runa.sh S-$p sd3 "precision: $p, sharpen: 16" -- 'uly2 ring2|ulysses: 2, ring: 2' 'per-item dp2|batch_forward: per-item, dp: 2' 'flash ring2|attention: flash, ring: 2' 'cfg2 dp2|cfg_parallel: 2, dp: 2'
done
