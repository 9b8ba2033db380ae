#!/bin/bash
# partB.sh: every plant's sweep (runb.sh runs the same matrix on the clean build too)
cd /tmp/audit8-work; B=/tmp/audit8-work/bin; export BIN
sp() { python3 specs.py "$@"; }
BIN=$B/01-weight-ulp-lastrank;  mapfile -t A < <(sp dp2,uly2); ./runb.sh b01 dit -- "${A[@]}"
BIN=$B/02-threads-canon-part-late
mapfile -t A < <(echo "t2math fp32|threads: 2, precision: fp32"; echo "t2math bf16|threads: 2, precision: bf16"; echo "t2canon fp32|threads: 2, attention: canonical, precision: fp32"; echo "t2canon bf16|threads: 2, attention: canonical, precision: bf16"; echo "t1canon fp32|threads: 1, attention: canonical, precision: fp32"); ./runb.sh b02 dit -- "${A[@]}"
BIN=$B/03-dit-batch2-final-mod-row0; mapfile -t A < <(echo "dp4 fp32|dp: 4, precision: fp32"; echo "dp4 bf16|dp: 4, precision: bf16"; sp dp2); ./runb.sh b03 dit -- "${A[@]}"
BIN=$B/04-patch-rank1-band-transposed-step3; for f in dit sd3; do mapfile -t A < <(sp patch2,patch4); ./runb.sh b04 $f -- "${A[@]}"; done
BIN=$B/05-temb-bf16-cast-lastrank; for f in dit flux; do mapfile -t A < <(sp dp2,uly2); ./runb.sh b05 $f -- "${A[@]}"; done
BIN=$B/06-uly-rank1-k-heads-reversed; for f in dit sd3; do mapfile -t A < <(sp uly2); ./runb.sh b06 $f -- "${A[@]}"; done
BIN=$B/07-cfg-rank1-scale-plus1-step2; mapfile -t A < <(sp cfg2,patch2cfg2; echo "dp2cfg2 fp32|dp: 2, cfg_parallel: 2, precision: fp32"; echo "dp2cfg2 bf16|dp: 2, cfg_parallel: 2, precision: bf16"); ./runb.sh b07 dit -- "${A[@]}"
BIN=$B/08-flux-sprank1-text-ids-1; mapfile -t A < <(sp uly2,ring2); ./runb.sh b08 flux -- "${A[@]}"
BIN=$B/09-gemm-rank1-mid-step2; for f in dit sd3; do mapfile -t A < <(sp dp2,uly2); ./runb.sh b09 $f -- "${A[@]}"; done
BIN=$B/10-gemm-lastrank-odd-page-ulp; mapfile -t A < <(sp dp2,uly2); ./runb.sh b10 dit -- "${A[@]}"
BIN=$B/11-final-adaln-swap-lastrank; for f in dit flux; do mapfile -t A < <(sp dp2,uly2); ./runb.sh b11 $f -- "${A[@]}"; done
echo ALLDONE
