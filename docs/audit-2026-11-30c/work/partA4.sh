#!/bin/bash
W=/tmp/audit10-work
for p in fp32 bf16; do
 $W/runa.sh P-$p sd35 "precision: $p" -- 'dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' 'cfg2|cfg_parallel: 2' 'per-item uly2|batch_forward: per-item, ulysses: 2' 'pf2 npp4|pipefusion: 2, num_pipeline_patch: 4' 'patch2 w1|patch: 2, warmup_steps: 1' 'fast uly2 ring2|mode: fast, ulysses: 2, ring: 2'
 $W/runa.sh P-$p fluxs "precision: $p" -- 'dp2|dp: 2' 'ring2|ring: 2' 'uly2 ring2|ulysses: 2, ring: 2'
 $W/runa.sh P-$p dite "precision: $p" -- 'dp2|dp: 2' 'uly2|ulysses: 2' 'cfg2 ring2|cfg_parallel: 2, ring: 2' 'fast threads2 dp2|mode: fast, threads: 2, dp: 2'
done
