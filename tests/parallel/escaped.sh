#!/bin/sh
# escaped.sh — the fault injections of the classes a per-layer view of rank 0 misses (issue
# 17: small systematic errors, a silent bf16 layer, one rank's private copy of a replicated
# tensor, image-only faults) act: each against the same layout without it, end to end
# (`repro launch -n 2 -- worker --job case`, Gloo on loopback, the tiny presets, 4 items,
# 2 steps, 1 GEMM thread per rank).
#
#   escaped.sh REPRO SCRATCH FAMILY LATENTS_CMP
#
# What each must do (the runs are deterministic, so the clean layout is its own bitwise
# reference and any difference is the fault's):
#   norm-eps-rank, bf16-layer-rank, temb-period-rank (ulysses 2): the latents differ.
#   cfg-combine-order (cfg 2; DiT, SD3): rank 0's first step is the clean one bit for bit
#     (its combine is right and both halves saw the same latents), the last step differs
#     (rank 1's half was evaluated on its diverged copy).
#   dp-image-order (dp 2): noise, latents and trajectory bitwise the clean run's; group 0's
#     images byte for byte the same, group 1's two images swapped.
#   vae-decode-rank (dp 2): latents bitwise the clean run's; group 0's images the same,
#     group 1's both different (a truncating 8-bit cast moves every value whose fraction
#     is >= .5: about half of a 128 x 128 image's).
#   bf16-layer-rank in a bf16 case: a configuration error (exit 3): it could not act.
set -u
repro=$1 scratch=$2 fam=$3 cmp=$4
here=$(cd "$(dirname "$0")" && pwd)
# a clean run left by an earlier run (another kernel set, another build) is not this one's
# bitwise reference: start empty
rm -rf "$scratch"
mkdir -p "$scratch" || exit 1
cd "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
steps=2

items='[{"seed":3,"prompt":"a red fox in the snow"},{"seed":8,"prompt":""},{"seed":21,"prompt":"a cat"},'
items=$items'{"seed":5,"prompt":"a lighthouse at night"}]'
case $fam in
dit)
    base='"model":"dit-tiny","sampler":"ddim","cfg":4'
    items='[{"seed":1,"class":3},{"seed":2,"class":207},{"seed":3,"class":7},{"seed":1000000007,"class":999}]' ;;
sd3) base='"model":"sd3-tiny","sampler":"euler","cfg":4' ;;
flux) base='"model":"flux-tiny","sampler":"euler","cfg":1,"guidance":3.5' ;;
*) fail "unknown family $fam" ;;
esac

. "$here/lib.sh"  # run, must_run, bitwise

# fault NAME LAYOUT INJECTION: f-NAME and (once per layout) clean-<layout> on 2 ranks
fault() {
    f_clean=$(echo "$2" | tr -cd 'a-z0-9')
    [ -s "out-clean-$f_clean/done.json" ] || must_run "clean-$f_clean" 2 "$2"
    must_run "f-$1" 2 "$2,\"inject\":\"$3\""
    f_c=clean-$f_clean
}
# step_rel A B K: the rel-L2 of trajectory row K between runs A and B (repro diff)
step_rel() {
    "$repro" diff "out-$1/latents.safetensors" "out-$2/latents.safetensors" |
        awk -v k="rel_l2_step.$3" '$1 == k { print $2 }'
}
same_png() { cmp -s "out-$1/image-$2.png" "out-$3/image-$4.png"; }

echo "== $fam: the faults of issue 17 against the same layout without them"
for f in norm-eps-rank bf16-layer-rank temb-period-rank; do
    fault "$f" ',"ulysses":2' "$f"
    bitwise "$f_c" "f-$f" && fail "$f: the latents are bitwise the clean run's: the fault did not act"
    echo "  $f (ulysses 2): latents differ, final rel-L2 $(step_rel "$f_c" "f-$f" $steps)"
done

if [ "$fam" != flux ]; then
    fault cfgo ',"cfg_parallel":2' cfg-combine-order
    r1=$(step_rel "$f_c" f-cfgo 1)
    r2=$(step_rel "$f_c" f-cfgo $steps)
    [ "$r1" = 0 ] || fail "cfg-combine-order: rank 0's first step differs (rel-L2 $r1): only rank 1's combine is wrong"
    awk -v r="$r2" 'BEGIN { exit !(r + 0 > 0) }' ||
        fail "cfg-combine-order: the last step is the clean one (rel-L2 '$r2'): rank 1's copy never reached rank 0"
    echo "  cfg-combine-order (cfg 2): step 0 bitwise the clean one, final rel-L2 $r2"
fi

fault dpimg ',"dp":2' dp-image-order
bitwise "$f_c" f-dpimg || fail "dp-image-order: the latents changed: only the images may"
same_png "$f_c" 2 "$f_c" 3 && fail "dp-image-order: items 2 and 3 have the same image: a swap could not show"
same_png "$f_c" 0 f-dpimg 0 && same_png "$f_c" 1 f-dpimg 1 || fail "dp-image-order: group 0's images changed"
same_png "$f_c" 2 f-dpimg 3 && same_png "$f_c" 3 f-dpimg 2 || fail "dp-image-order: group 1's images are not swapped"
echo "  dp-image-order (dp 2): latents bitwise, images 2 and 3 swapped"

fault vae ',"dp":2' vae-decode-rank
bitwise "$f_c" f-vae || fail "vae-decode-rank: the latents changed: only the images may"
same_png "$f_c" 0 f-vae 0 && same_png "$f_c" 1 f-vae 1 || fail "vae-decode-rank: group 0's images changed"
for i in 2 3; do
    same_png "$f_c" $i f-vae $i && fail "vae-decode-rank: image $i is the clean one: the fault did not act"
done
echo "  vae-decode-rank (dp 2): latents bitwise, group 1's images differ"

quiet=1
run bf16 2 ',"ulysses":2,"precision":"bf16","inject":"bf16-layer-rank"'
rc=$?
quiet=0
[ $rc = 3 ] || fail "bf16-layer-rank in a bf16 case: expected a configuration error (exit 3), got exit $rc"
grep -h -m 1 "needs an fp32 case" run-bf16/rank*.err >/dev/null ||
    fail "bf16-layer-rank in a bf16 case: the error does not say why"
echo "  bf16-layer-rank in a bf16 case: configuration error (exit 3)"
echo "PASS"
