#!/bin/bash
B=/tmp/audit7-work/bin
export BIN
BIN=
for fam in sd3 dit flux sd3d; do mapfile -t A < <(python3 specs.py pf2uly2,pf2ring2); ./runb.sh c01 $fam -- "${A[@]}"; done
BIN=
mapfile -t A < <(python3 specs.py patch2,pf2,patch4,pf2n4,uly2); ./runb.sh c02 flux -- "${A[@]}"
BIN=
for fam in sd3 dit flux sd3d ditd; do mapfile -t A < <(python3 specs.py pf2,pf2n4); ./runb.sh c03 $fam -- "${A[@]}"; done
BIN=
for fam in sd3 dit flux sd3d; do mapfile -t A < <(python3 specs.py patch2,patch4); [ $fam != flux ] && mapfile -t -O ${#A[@]} A < <(python3 specs.py patch2cfg2); ./runb.sh c04 $fam -- "${A[@]}"; done
BIN=
for fam in sd3 dit flux sd3b; do mapfile -t A < <(python3 specs.py dp2,uly2,ring2); ./runb.sh c05 $fam -- "${A[@]}"; done
BIN=
for fam in sd3 dit sd3d ditd; do mapfile -t A < <(python3 specs.py patch2cfg2,patch4cfg2,patch2,pf2cfg2); ./runb.sh c06 $fam -- "${A[@]}"; done
