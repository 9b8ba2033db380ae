#!/bin/bash
# partA.sh LIST : every sweep of the clean build; precision in {fp32,bf16} as the tag's suffix
W=/tmp/audit10-work
L1=('ring2|ring: 2' 'ring4|ring: 4' 'uly2 ring2|ulysses: 2, ring: 2' 'cfg2 dp2|cfg_parallel: 2, dp: 2' 'patch2 w1|patch: 2, warmup_steps: 1' 'patch4 w2|patch: 4, warmup_steps: 2' 'pf2 npp4|pipefusion: 2, num_pipeline_patch: 4' 'pf2 uly2|pipefusion: 2, ulysses: 2' 'threads2 dp2|threads: 2, dp: 2' 'reduce_split dp2|reduce_split: 1, dp: 2' 'flash uly2|attention: flash, ulysses: 2' 'subquad ring2|attention: subquad, ring: 2' 'split dp2|attention: split, dp: 2' 'auto uly2|attention: auto, ulysses: 2' 'Haswell dp2|blas_core: Haswell, dp: 2' 'Sandybridge uly2|blas_core: Sandybridge, ulysses: 2' 'SkylakeX dp2|blas_core: SkylakeX, dp: 2' 'fast dp2|mode: fast, dp: 2' 'fast uly2|mode: fast, ulysses: 2')
L2=('dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' 'pf2 npp4|pipefusion: 2, num_pipeline_patch: 4' 'cfg2|cfg_parallel: 2' 'patch2 w2|patch: 2, warmup_steps: 2')
LS=('per-item dp2|batch_forward: per-item, dp: 2' 'per-item uly2|batch_forward: per-item, ulysses: 2' 'uly2 ring2|ulysses: 2, ring: 2' 'cfg2 dp2|cfg_parallel: 2, dp: 2' 'ring4|ring: 4' 'patch2 w1|patch: 2, warmup_steps: 1' 'pf2 npp4|pipefusion: 2, num_pipeline_patch: 4' 'flash ring2|attention: flash, ring: 2' 'fast dp2|mode: fast, dp: 2')
LF=('ring2|ring: 2' 'ring4|ring: 4' 'uly2 ring2|ulysses: 2, ring: 2' 'per-item dp2|batch_forward: per-item, dp: 2' 'pf2 npp4|pipefusion: 2, num_pipeline_patch: 4' 'patch2 w1|patch: 2, warmup_steps: 1' 'subquad uly2|attention: subquad, ulysses: 2' 'fast ring2|mode: fast, ring: 2')
for p in ${PRECS:-fp32 bf16}; do
 case $1 in
  dit) $W/runa.sh A-$p dit "precision: $p" -- "${L1[@]}";;
  sharp) $W/runa.sh S-$p dit "precision: $p, sharpen: 16" -- "${L1[@]:0:13}";;
  ditd) $W/runa.sh A-$p ditd "precision: $p" -- "${L2[@]}" 'ring4|ring: 4' 'uly2 ring2|ulysses: 2, ring: 2';;
  samp) for f in ditp ditm dita dita0; do $W/runa.sh A-$p $f "precision: $p" -- "${L2[@]:0:4}"; done;;
  sd3) $W/runa.sh A-$p sd3 "precision: $p" -- "${LS[@]}";;
  sd3d) $W/runa.sh A-$p sd3d "precision: $p" -- "${LS[@]:0:7}";;
  flux) $W/runa.sh A-$p flux "precision: $p" -- "${LF[@]}";;
 esac
done
