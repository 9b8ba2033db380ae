#!/bin/bash
# partA10.sh: strategy combinations (rule 4's replica across mixed groups)
W=/tmp/audit10-work
for p in bf16 fp32; do
 $W/runa.sh H-$p dit "precision: $p" -- 'patch2 cfg2|patch: 2, cfg_parallel: 2' 'patch2 dp2|patch: 2, dp: 2' 'pf2 cfg2|pipefusion: 2, cfg_parallel: 2' 'pf2 dp2|pipefusion: 2, dp: 2' 'emul npp2 dp2|pipefusion: 1, num_pipeline_patch: 2, dp: 2' 'emul npp2 ring2|pipefusion: 1, num_pipeline_patch: 2, ring: 2'
 $W/runa.sh H-$p sd3 "precision: $p" -- 'pf2 uly2|pipefusion: 2, ulysses: 2' 'patch2 cfg2|patch: 2, cfg_parallel: 2' 'cfg2 ring2|cfg_parallel: 2, ring: 2'
done
