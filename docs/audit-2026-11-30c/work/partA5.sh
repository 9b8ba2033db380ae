#!/bin/bash
# partA5.sh: edge knobs (emulation x ulysses, warmup 0, uneven pipefusion_layers, pipefusion 4, steps 1-3, 1-2 items, auto + device_profile, chunk sizes, threads 2 everywhere)
W=/tmp/audit10-work
for p in fp32 bf16; do
 $W/runa.sh E-$p dit "precision: $p" -- 'emul npp2 uly2|pipefusion: 1, num_pipeline_patch: 2, ulysses: 2' 'patch2 w0|patch: 2, warmup_steps: 0' 'pf2 layers 1,3|pipefusion: 2, pipefusion_layers: [1, 3]' 'pf4|pipefusion: 4' 'auto lowmem uly2|attention: auto, device_profile: cpu-lowmem-2g, ulysses: 2' 'subquad chunks ring2|attention: subquad, attn_q_chunk: 16, attn_kv_chunk: 8, ring: 2' 'flash chunks dp2|attention: flash, attn_q_chunk: 8, attn_kv_chunk: 16, dp: 2' 'fast threads2 Haswell ring4|mode: fast, threads: 2, blas_core: Haswell, ring: 4' 'depth1 uly2|depth: 1, ulysses: 2' 'wseed7 dp2|weight_seed: 7, dp: 2'
 STEPS=1 $W/runa.sh E1-$p dit "precision: $p" -- 'dp2|dp: 2' 'uly2 ring2|ulysses: 2, ring: 2' 'cfg2|cfg_parallel: 2'
 STEPS=2 $W/runa.sh E2-$p sd3 "precision: $p" -- 'dp2|dp: 2' 'ring2|ring: 2' 'per-item cfg2|batch_forward: per-item, cfg_parallel: 2'
 STEPS=3 SEEDS='[5]' $W/runa.sh E3-$p flux "precision: $p" -- 'ring2|ring: 2' 'uly2|ulysses: 2' 'pf2 npp2|pipefusion: 2, num_pipeline_patch: 2'
 SEEDS='[5, 6]' $W/runa.sh E4-$p ditm "precision: $p" -- 'dp2|dp: 2' 'cfg2 uly2|cfg_parallel: 2, ulysses: 2' 'threads2 ring2|threads: 2, ring: 2'
 $W/runa.sh E5-$p sd35 "precision: $p, sharpen: 16" -- 'ring2|ring: 2' 'uly2 cfg2|ulysses: 2, cfg_parallel: 2' 'flash dp2|attention: flash, dp: 2'
 $W/runa.sh E6-$p flux "precision: $p, sharpen: 16" -- 'ring4|ring: 4' 'uly2 ring2|ulysses: 2, ring: 2' 'subquad dp2|attention: subquad, dp: 2'
done
