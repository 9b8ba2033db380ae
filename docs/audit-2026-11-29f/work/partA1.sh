#!/bin/bash
S1=pf2n4,pf2n8,pf2uly2,pf2ring2,pf2n4uly2,patch2cfg2,patch4cfg2,patch4,patch2dp2,pf2dp2,pf2cfg2,pf2dp2cfg2
for fam in sd3d dit ditd flux sd3b; do
  mapfile -t A < <(python3 specs.py $S1)
  mapfile -t B < <(python3 specs.py pf4,pf4n8 fp32,bf16 "depth: 4" d4)
  ./run.sh a1 $fam -- "${A[@]}" "${B[@]}"
done
mapfile -t B < <(python3 specs.py pf4,pf4n8 fp32,bf16 "depth: 4" d4); ./run.sh a1b sd3 -- "${B[@]}"
