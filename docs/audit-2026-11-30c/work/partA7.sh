#!/bin/bash
# partA7.sh: numerics invariant cases against the default-numerics serial reference; mode fast with approximate strategies
W=/tmp/audit10-work
for p in bf16 fp32; do
 $W/runa.sh N-$p dit "precision: $p" -- 'inv serial|numerics: invariant' 'inv dp2|numerics: invariant, dp: 2' 'inv uly2|numerics: invariant, ulysses: 2' 'inv ring2|numerics: invariant, ring: 2' 'fast patch2|mode: fast, patch: 2' 'fast pf2|mode: fast, pipefusion: 2' 'fast flash uly2|mode: fast, attention: flash, ulysses: 2'
 $W/runa.sh N-$p sd3 "precision: $p" -- 'inv serial|numerics: invariant' 'inv ring2|numerics: invariant, ring: 2' 'inv cfg2|numerics: invariant, cfg_parallel: 2' 'fast pf2 npp4|mode: fast, pipefusion: 2, num_pipeline_patch: 4'
 $W/runa.sh N-$p flux "precision: $p" -- 'inv serial|numerics: invariant' 'inv uly2|numerics: invariant, ulysses: 2' 'fast patch2|mode: fast, patch: 2'
 $W/runa.sh N-$p sd3d "precision: $p" -- 'inv serial|numerics: invariant' 'inv dp2|numerics: invariant, dp: 2'
 $W/runa.sh NS-$p dit "precision: $p, sharpen: 16" -- 'inv serial|numerics: invariant' 'inv ring2|numerics: invariant, ring: 2'
done
