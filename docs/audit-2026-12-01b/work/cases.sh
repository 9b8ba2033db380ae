# case sets (audit 10's gen.py families, 5 steps, threads 1, 4 items). Named <set>-<family> in tables.
# a: approximate layouts (dit, sd3, flux at their default sizes)
AP=( 'pf2|pipefusion: 2, warmup_steps: 1' 'pf2w2|pipefusion: 2, warmup_steps: 2' 'pf2dp2|pipefusion: 2, dp: 2, warmup_steps: 1'
     'patch2|patch: 2, warmup_steps: 1' 'patch4|patch: 4, warmup_steps: 1' 'patch2w0|patch: 2, warmup_steps: 0' )
# pi: per-item batches against the joint reference (gen.py's reference sets batch_forward joint, dp/uly/ring/cfg 1)
PI=( 'dp2|dp: 2, batch_forward: per-item' 'uly2|ulysses: 2, batch_forward: per-item' 'ring2|ring: 2, batch_forward: per-item'
     'cfg2|cfg_parallel: 2, batch_forward: per-item' )
PIF=( 'dp2|dp: 2, batch_forward: per-item' 'uly2|ulysses: 2, batch_forward: per-item' 'ring2|ring: 2, batch_forward: per-item' )
# pip: per-item batches in the approximate layouts (sd3, flux), against the joint reference
PIP=( 'ppatch2|patch: 2, warmup_steps: 1, batch_forward: per-item' 'ppf2|pipefusion: 2, warmup_steps: 1, batch_forward: per-item' )
