#!/bin/bash
for fam in sd3 dit flux sd3d; do
  L=pf2,patch2,pf2n4,pf2uly2,pf2ring2,dp2,uly2,ring2,patch2w0,pf2w0; [ $fam != flux ] && L=$L,patch2cfg2,cfg2
  mapfile -t A < <(python3 specs.py $L fp32,bf16)
  ./run.sh a4f $fam "mode: fast" -- "${A[@]}"
done
for fam in sd3 dit flux; do
  L=pf2,patch2,patch4,pf2uly2,pf2ring2,uly2,dp2,pf2n4; [ $fam != flux ] && L=$L,patch2cfg2
  mapfile -t A < <(python3 specs.py $L fp32,bf16)
  ./run.sh a4t $fam "threads: 2" -- "${A[@]}"
done
