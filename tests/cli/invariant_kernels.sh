#!/bin/sh
# invariant_kernels.sh — numerics invariant (docs/invariant.md) holds across what the CPU
# can change under the layouts: OpenBLAS kernel sets, thread counts and the batch.
#   invariant_kernels.sh REPRO SCRATCH MODEL LATENTS_CMP
# A batch of 3 items is generated with --numerics invariant under the library's own kernel
# set with 1 thread (the base), then under --openblas-coretype Haswell, Sandybridge and
# Prescott (each re-executes with that kernel set; a set this CPU cannot run is skipped)
# and with 2 and 3 threads: every item's noise, trajectory and final latents must be
# bitwise the base's (invariant numerics calls no OpenBLAS, and its own kernels split work
# between threads without splitting any sum). Then item i alone (--first-index i, its own
# noise key) must be bitwise item i of the batch. The default numerics make none of these
# promises (cli.generate_batch shows the batch one failing at rounding level on SkylakeX).
set -u
repro=$1 scratch=$2 model=$3 cmp=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
cd "$scratch" || fail "cd $scratch"
case "$model" in
dit-tiny) items="--seed 3 --seed 8 --seed 21 --class 207 --class 1 --class 980"; opts="--cfg 4"
          lone() { case $1 in 0) echo "--seed 3 --class 207" ;; 1) echo "--seed 8 --class 1" ;; 2) echo "--seed 21 --class 980" ;; esac; } ;;
sd3-tiny|sd3.5-medium-tiny) items="--seed 3 --seed 8 --seed 21 --prompt fox --prompt '' --prompt lighthouse"; opts="--cfg 4"
          lone() { case $1 in 0) echo "--seed 3 --prompt fox" ;; 1) echo "--seed 8 --prompt ''" ;; 2) echo "--seed 21 --prompt lighthouse" ;; esac; } ;;
flux-tiny) items="--seed 3 --seed 8 --seed 21 --prompt fox --prompt '' --prompt lighthouse"; opts="--guidance 3.5"
          lone() { case $1 in 0) echo "--seed 3 --prompt fox" ;; 1) echo "--seed 8 --prompt ''" ;; 2) echo "--seed 21 --prompt lighthouse" ;; esac; } ;;
*) fail "unknown model $model" ;;
esac
gen() { # gen OUT [options]: the batch (or, with lone options, one item) with invariant numerics
    out=$1
    shift
    eval "\"\$repro\" generate --model $model --steps 4 $opts --numerics invariant --out $out.png --latents $out.safetensors $*" \
        >"$out.log" 2>&1
}
same() { # same A B: every item of A bitwise B's
    for i in 0 1 2; do
        "$cmp" "$1.safetensors" "$i" "$2.safetensors" "$i" noise trajectory latents >/dev/null || return 1
    done
}
gen base $items --threads 1 || { cat base.log; fail "the base run failed"; }
n=0
for core in Haswell Sandybridge Prescott; do
    if ! gen "core-$core" $items --threads 1 --openblas-coretype "$core"; then
        grep -q "cannot\|not supported\|unsupported\|lacks" "core-$core.log" && { echo "  $core: not on this CPU, skipped"; continue; }
        cat "core-$core.log"
        fail "the run with OpenBLAS kernels $core failed"
    fi
    same base "core-$core" || fail "OpenBLAS kernels $core change the invariant bits of $model"
    echo "  kernels $core: bitwise the base"
    n=$((n + 1))
done
[ "$n" -ge 1 ] || fail "no other OpenBLAS kernel set could run"
for t in 2 3; do
    gen "threads-$t" $items --threads "$t" || { cat "threads-$t.log"; fail "the run with $t threads failed"; }
    same base "threads-$t" || fail "$t threads change the invariant bits of $model"
    echo "  threads $t: bitwise the base"
done
for i in 0 1 2; do
    gen "lone-$i" $(lone "$i") --first-index "$i" --threads 1 || { cat "lone-$i.log"; fail "the lone run of item $i failed"; }
    "$cmp" base.safetensors "$i" "lone-$i.safetensors" 0 noise trajectory latents >/dev/null ||
        fail "item $i alone differs from item $i of the batch"
done
echo "  items alone: bitwise their batch's"
echo "ok: $model, numerics invariant: bitwise across $n other kernel sets, 2 and 3 threads, and the batch"
