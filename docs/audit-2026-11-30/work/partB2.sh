#!/bin/bash
# partB2.sh: plant 02 (threads), with the invariant numerics instead of an attention name
cd /tmp/audit8-work; B=/tmp/audit8-work/bin; export BIN
BIN=$B/02-threads-canon-part-late
mapfile -t A < <(echo "t2 fp32|threads: 2, precision: fp32"; echo "t2 bf16|threads: 2, precision: bf16"; echo "dp2t2 fp32|dp: 2, threads: 2, precision: fp32"; echo "dp2t2 bf16|dp: 2, threads: 2, precision: bf16"; echo "t2inv fp32|threads: 2, numerics: invariant, precision: fp32"; echo "t2inv bf16|threads: 2, numerics: invariant, precision: bf16")
./runb.sh b02 dit -- "${A[@]}"
echo ALLDONE2
