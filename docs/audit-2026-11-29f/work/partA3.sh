#!/bin/bash
P=pf2,patch2,pf2n4,patch4,patch2dp2,pf2uly2,pf2ring2,pf2dp2
for fam in sd3 sd3b flux sd3d; do
  mapfile -t A < <(python3 specs.py $P,pf2w0,patch2w0 fp32,bf16 "batch_forward: per-item" -pi)
  [ $fam != flux ] && mapfile -t -O ${#A[@]} A < <(python3 specs.py patch2cfg2,pf2cfg2 fp32,bf16 "batch_forward: per-item" -pi)
  ./run.sh a3 $fam -- "${A[@]}"
done
for fam in dit ditd; do
  A=()
  for s in "ddpm" "dpmpp-2m" "euler-a, eta: 1" "ddim, eta: 0.5"; do
    sn=${s%%,*}; sn=-${sn}
    mapfile -t -O ${#A[@]} A < <(python3 specs.py pf2,patch2,pf2n4,patch2cfg2,pf2dp2,pf2uly2,pf2ring2 fp32,bf16 "sampler: $s" $sn 2>/dev/null)
  done
  ./run.sh a3 $fam -- "${A[@]}"
done
