#!/bin/bash
B=/tmp/audit7-work/bin
export BIN
BIN=$B/01-pf-sp-skip-refresh
for fam in sd3 dit flux sd3d; do mapfile -t A < <(python3 specs.py pf2uly2,pf2ring2); ./runb.sh b01 $fam -- "${A[@]}"; done
BIN=$B/02-flux-rope-approx
mapfile -t A < <(python3 specs.py patch2,pf2,patch4,pf2n4,uly2); ./runb.sh b02 flux -- "${A[@]}"
BIN=$B/03-pf-block-range
for fam in sd3 dit flux sd3d ditd; do mapfile -t A < <(python3 specs.py pf2,pf2n4); ./runb.sh b03 $fam -- "${A[@]}"; done
BIN=$B/04-patch-gather-band
for fam in sd3 dit flux sd3d; do mapfile -t A < <(python3 specs.py patch2,patch4); [ $fam != flux ] && mapfile -t -O ${#A[@]} A < <(python3 specs.py patch2cfg2); ./runb.sh b04 $fam -- "${A[@]}"; done
BIN=$B/05-math-mid-step
for fam in sd3 dit flux sd3b; do mapfile -t A < <(python3 specs.py dp2,uly2,ring2); ./runb.sh b05 $fam -- "${A[@]}"; done
BIN=$B/06-cfg-patch-stale-uncond
for fam in sd3 dit sd3d ditd; do mapfile -t A < <(python3 specs.py patch2cfg2,patch4cfg2,patch2,pf2cfg2); ./runb.sh b06 $fam -- "${A[@]}"; done
