#!/bin/bash
# partB.sh: every plant's sweep (runb.sh: clean run of the same matrix made once per matrix text)
cd /tmp/audit9-work; B=/tmp/audit9-work/bin; export BIN
sp() { python3 specs.py "$@"; }
BIN=$B/01-ancestral-noise-localidx-step2; for f in ditp dita ditdp; do mapfile -t A < <(sp dp2); ./runb.sh b01 $f -- "${A[@]}"; done
BIN=$B/02-later-items-cond-perturbed; for f in dit sd3 sd3d; do mapfile -t A < <(sp dp2,uly2); ./runb.sh b02 $f -- "${A[@]}"; done
BIN=$B/03-uncond-null-emb-lastrank; for f in dit ditd sd3; do mapfile -t A < <(sp dp2,cfg2); ./runb.sh b03 $f -- "${A[@]}"; done
BIN=$B/07-final-update-lastrank; for f in dit ditd sd3 sd3d; do mapfile -t A < <(sp dp2,uly2); ./runb.sh b07 $f -- "${A[@]}"; done
BIN=$B/05-attn-scale-bf16-lastrank; for f in dit ditd sd3d; do mapfile -t A < <(sp dp2,uly2); ./runb.sh b05 $f -- "${A[@]}"; done
BIN=$B/10-first-call-only-eval3; for f in dit sd3d; do mapfile -t A < <(sp dp2,uly2); ./runb.sh b10 $f -- "${A[@]}"; done
BIN=$B/04-vae-clamp-item3-lastrank; for f in dit ditd sd3d; do mapfile -t A < <(sp dp2,uly2); ./runb.sh b04 $f -- "${A[@]}"; done
BIN=$B/08-gloo-allgather-odd-size-offset; for f in dit sd3; do mapfile -t A < <(sp cfg2,uly2); ./runb.sh b08 $f -- "${A[@]}"; done
mapfile -t A < <(sp uly2,ring2); ./runb.sh b08 flux -- "${A[@]}"
BIN=$B/06-temb-memo-loose-key; for f in dit sd3; do mapfile -t A < <(sp dp2,uly2); ./runb.sh b06 $f -- "${A[@]}"; done
# 09: repeat 2 and mode fast with 03 (dit) and 07 (sd3)
BIN=$B/03-uncond-null-emb-lastrank; mapfile -t A < <(sp dp2 fp32,bf16 "mode: fast" fast); REFX="mode: deterministic" ./runb.sh b09f03 dit -- "${A[@]}"
BIN=$B/07-final-update-lastrank; mapfile -t A < <(sp dp2 fp32,bf16 "mode: fast" fast); REFX="mode: deterministic" ./runb.sh b09f07 sd3 -- "${A[@]}"
BIN=$B/03-uncond-null-emb-lastrank; mapfile -t A < <(sp dp2); REPEAT=2 ./runb.sh b09r03 dit -- "${A[@]}"
BIN=$B/07-final-update-lastrank; mapfile -t A < <(sp dp2); REPEAT=2 ./runb.sh b09r07 sd3 -- "${A[@]}"
echo ALLDONE
