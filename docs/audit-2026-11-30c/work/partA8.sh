#!/bin/bash
# partA8.sh: other resolutions, cfg 1 / 0, ddim eta 1
W=/tmp/audit10-work
for p in fp32 bf16; do
 $W/runa.sh F-$p sd3 "precision: $p, resolution: 96" -- 'ring2|ring: 2' 'uly2 ring2|ulysses: 2, ring: 2' 'patch2 w1|patch: 2, warmup_steps: 1'
 $W/runa.sh F-$p flux "precision: $p, resolution: 64" -- 'ring2|ring: 2' 'uly2|ulysses: 2' 'dp2|dp: 2'
 $W/runa.sh F-$p dit "precision: $p, cfg: 1" -- 'dp2|dp: 2' 'uly2|ulysses: 2'
 $W/runa.sh F-$p dite "precision: $p, eta: 1" -- 'dp2|dp: 2' 'cfg2|cfg_parallel: 2'
done
