#!/bin/bash
# buildall.sh: apply each plants/pNN.sh in /tmp/audit9b, then plant.sh NN-name
cd /tmp/audit9b
for x in "01 ancestral-noise-localidx-step2" "02 later-items-cond-perturbed" "03 uncond-null-emb-lastrank" \
         "04 vae-clamp-item3-lastrank" "05 attn-scale-bf16-lastrank" "06 temb-memo-loose-key" \
         "07 final-update-lastrank" "08 gloo-allgather-odd-size-offset" "10 first-call-only-eval3"; do
  set -- $x
  cd /tmp/audit9b && bash /tmp/audit9-work/plants/p$1.sh || { echo "EDIT FAIL $1"; git checkout -- .; continue; }
  /tmp/audit9-work/plant.sh $1-$2 || { echo "BUILD FAIL $1"; cd /tmp/audit9b; git checkout -- .; }
done
