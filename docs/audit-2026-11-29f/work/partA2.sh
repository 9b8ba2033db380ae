#!/bin/bash
W=$(for w in 0 1 2 3 4 5; do echo -n "patch2w$w,pf2w$w,pf2n4w$w,patch4w$w,"; done); W=${W%,}
for fam in sd3 dit flux sd3d ditd sd3b; do
  mapfile -t A < <(python3 specs.py $W)
  ./run.sh a2 $fam -- "${A[@]}"
done
