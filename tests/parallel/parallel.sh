#!/bin/sh
# parallel.sh — xDiT's exact strategies against a single rank, and the injected faults,
# end to end: `repro launch -n N -- worker --job case` over Gloo on loopback.
#
#   parallel.sh REPRO SCRATCH FAMILY MODE PYTHON LATENTS_CMP
#     FAMILY  dit | sd3 | sd3x | flux: the tiny presets (sd3x: sd3.5-medium-tiny, MMDiT-X),
#             4 items, 3 steps, 1 GEMM thread per rank
#     MODE    exact   dp 2 and 4, cfg 2 (DiT, SD3: FLUX has no CFG), ulysses 2 and 4 (4:
#                     DiT; SD3/FLUX have 2 heads, so ulysses 4 must be a config error,
#                     exit 3), ring 2 and 4, usp 2 x 2 and one 3-way hybrid of 8 ranks,
#                     each against the single-rank run of the same case: latents within
#                     the rounding bound below (or bitwise where said), the trace in the
#                     single-rank layout, one PNG per item
#             faults  each injection that applies to the family against the same layout
#                     without it: the difference must exceed the rounding bound (a fault
#                     that changes nothing, or only at rounding level, is not a fault)
#
# The rounding bound. dp, cfg, ulysses, ring and usp change only the ORDER of floating-
# point work: ring splits each softmax sum over keys (and the P V products) into one
# block per rank, merged with the (max, sum) correction; every strategy runs its GEMMs
# with fewer rows, and a BLAS may pick another kernel (another summation order) by the
# row count. The error of a sum of n fp32 terms in ANY order is bounded by gamma_n = n u /
# (1 - n u) times the sum of magnitudes (u = 2^-24), so two orders differ by at most the
# sum of their errors against the exact value, and this holds through the whole model
# and sampler as long as both runs are equally accurate:
#     |parallel - single| <= |parallel - exact| + |single - exact| ~ 2 e_ref.
# e_ref is measured, not guessed: max|single-rank latents - float64 torch reference|
# (f64_ref.py, the independent models of tests/reference/ in float64 from the same
# noise), i.e. this model's own fp32 rounding after these steps (the amplification by
# the model and by DiT's x0 prediction at t = 999 included). The bar is 4 e_ref (twice
# the estimate), floored at 16 ulp of max|latents| so a lucky tiny e_ref cannot make the
# bar vanish. Without torch, e_ref is the difference between the single rank's math and
# flash attention (tiles of 16), the same kind of reordering (softmax sums in blocks
# with rescaling), measured in C; the output says which was used.
#
# Bitwise where the arithmetic is identical by construction (required):
#   dp with per-item batches (SD3, FLUX): each item's forwards are the single rank's
#   per-item forwards (same rows, same GEMM shapes), its noise keyed by its global index.
# Reported, not required (identical math, but GEMMs with fewer rows, so bitwise only
# when the BLAS gives a row the same bits for both row counts — tests/tools/gemm_rows):
#   ulysses (attention sees the single rank's key order: the math variant does the same
#   arithmetic), dp/cfg with joint batches.
set -u
repro=$1 scratch=$2 fam=$3 mode=$4 py=$5 cmp=$6
here=$(cd "$(dirname "$0")" && pwd)
# runs left by an earlier run (another kernel set, another build) are not this one's
# references: start empty
rm -rf "$scratch"
mkdir -p "$scratch" || exit 1
cd "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }

case $fam in
dit)
    base='"model":"dit-tiny","sampler":"ddim","cfg":4'
    items='[{"seed":1,"class":3},{"seed":2,"class":207},{"seed":3,"class":7},{"seed":1000000007,"class":999}]' ;;
sd3)
    base='"model":"sd3-tiny","sampler":"euler","cfg":4'
    items='[{"seed":3,"prompt":"a red fox in the snow"},{"seed":8,"prompt":""},{"seed":21,"prompt":"na\u00efve caf\u00e9 at dawn"},{"seed":5,"prompt":"a lighthouse at night"}]' ;;
sd3x) # SD3.5 Medium's MMDiT-X layout: attn2 (image-only attention) in blocks 0, 1 of 3
    base='"model":"sd3.5-medium-tiny","sampler":"euler","cfg":4'
    items='[{"seed":3,"prompt":"a red fox in the snow"},{"seed":8,"prompt":""},{"seed":21,"prompt":"na\u00efve caf\u00e9 at dawn"},{"seed":5,"prompt":"a lighthouse at night"}]' ;;
flux)
    base='"model":"flux-tiny","sampler":"euler","cfg":1,"guidance":3.5'
    items='[{"seed":3,"prompt":"a red fox in the snow"},{"seed":8,"prompt":""},{"seed":21,"prompt":"na\u00efve caf\u00e9 at dawn"},{"seed":5,"prompt":"a lighthouse at night"}]' ;;
*) fail "unknown family $fam" ;;
esac

. "$here/lib.sh"  # run, must_run, maxabs, le, gt, ratio, bitwise

# ---- the single-rank reference and the bound ----
must_run ref 1 ''
e_src="max|single - torch float64| (f64_ref.py)"
e_ref=$("$py" "$here/f64_ref.py" out-ref 2>f64.err | awk '$1 == "f64_err" { print $2 }')
if [ -z "$e_ref" ]; then
    cat f64.err
    must_run ref-flash 1 ',"attention":"flash","attn_q_chunk":16,"attn_kv_chunk":16'
    e_ref=$(maxabs ref ref-flash)
    e_src="max|single math - single flash (16 x 16 tiles)| (no torch here)"
fi
xmax=$("$py" -c "import sys; sys.path.insert(0, '$here/../reference'); import st, numpy as np; \
print(float(np.max(np.abs(st.load('out-ref/latents.safetensors')[0]['latents']))))" 2>/dev/null)
[ -n "$xmax" ] || xmax=0 # no numpy: no floor
bound=$(awk -v e="$e_ref" -v x="$xmax" 'BEGIN { f = 16 * x * 2^-23; b = 4 * e; if (f > b) b = f; printf "%.6g", b }')
echo "== $fam: e_ref = $e_ref = $e_src; max|latents| = $xmax; bound 4 e_ref (floor 16 ulp) = $bound"
[ -n "$e_ref" ] && le 0 "$e_ref" || fail "no reference error"

# check NAME RANKS EXTRA [REF] [bitwise]: the run against REF (default ref)
check() {
    c_name=$1 c_n=$2 c_extra=$3 c_ref=${4:-ref} c_want=${5:-bound}
    must_run "$c_name" "$c_n" "$c_extra"
    c_d=$(maxabs "$c_ref" "$c_name")
    c_bw=no
    bitwise "$c_ref" "$c_name" && c_bw=yes
    printf '  %-7s %d ranks %-40s max|par - single| %-12s = %-6s e_ref  bitwise %s\n' "$c_name" "$c_n" "$c_extra" \
        "$c_d" "$(ratio "$c_d" "$e_ref")" "$c_bw"
    if [ "$c_want" = bitwise ]; then
        [ $c_bw = yes ] || fail "$c_name: not bitwise equal to $c_ref (the arithmetic is the same by construction)"
    else
        le "$c_d" "$bound" || fail "$c_name: max|par - single| = $c_d exceeds the bound $bound"
    fi
    for i in 0 1 2 3; do [ -s "out-$c_name/image-$i.png" ] || fail "$c_name: no image-$i.png"; done
    [ -s "out-$c_name/done.json" ] && [ -s "out-$c_name/env.json" ] || fail "$c_name: no done.json / env.json"
    "$py" "$here/trace_cmp.py" "out-$c_ref/trace.safetensors" "out-$c_name/trace.safetensors" 1e-4 > "trace-$c_name.txt"
    c_rc=$?
    [ $c_rc = 77 ] && return 0
    [ $c_rc = 0 ] || { cat "trace-$c_name.txt"; fail "$c_name: the trace is not the single rank's"; }
}

# config_error NAME RANKS EXTRA: the case must end as a configuration error (launcher exit 3)
config_error() {
    quiet=1
    run "$@"
    e_rc=$?
    quiet=0
    cat "run-$1"/rank*.err 2>/dev/null | grep -m 1 "error" | sed 's/^/    /'
    [ $e_rc = 3 ] || fail "$1: expected a configuration error (exit 3), got exit $e_rc"
    echo "  $1: configuration error (exit 3), as it must be"
}

if [ "$mode" = exact ]; then
    echo "== $fam: exact strategies against the single rank (same case, same seeds)"
    check dp2 2 ',"dp":2'
    check dp4 4 ',"dp":4'
    if [ $fam != dit ]; then
        must_run ref-pi 1 ',"batch_forward":"per-item"'
        # one record per layer over every item's forward, each item's rows where the joint
        # forward has them: the joint run's trace layout, its values within the bound (the
        # GEMMs' M-dependent rounding only; a misplaced item would differ by O(1))
        "$py" "$here/trace_cmp.py" out-ref/trace.safetensors out-ref-pi/trace.safetensors 1e-4 >trace-ref-pi.txt
        pi_rc=$?
        [ $pi_rc = 0 ] || [ $pi_rc = 77 ] || { cat trace-ref-pi.txt; fail "ref-pi: the per-item trace is not the joint run's"; }
        [ $pi_rc = 0 ] && sed 's/^/  ref-pi vs ref: /' trace-ref-pi.txt | tail -1
        check dp2-pi 2 ',"dp":2,"batch_forward":"per-item"' ref-pi bitwise
        check dp4-pi 4 ',"dp":4,"batch_forward":"per-item"' ref-pi bitwise
    fi
    [ $fam != flux ] && check cfg2 2 ',"cfg_parallel":2'
    check uly2 2 ',"ulysses":2'
    if [ $fam = dit ]; then check uly4 4 ',"ulysses":4'; else config_error uly4 4 ',"ulysses":4'; fi
    check ring2 2 ',"ring":2'
    check ring4 4 ',"ring":4'
    check usp4 4 ',"ulysses":2,"ring":2'
    case $fam in
    dit) check hyb8 8 ',"dp":2,"cfg_parallel":2,"ring":2' ;;
    sd3|sd3x) check hyb8 8 ',"dp":2,"cfg_parallel":2,"ulysses":2' ;;
    flux) check hyb8 8 ',"dp":2,"ulysses":2,"ring":2' ;;
    esac
    config_error dp3 3 ',"dp":3'
    echo "PASS"
    exit 0
fi

[ "$mode" = faults ] || fail "unknown mode $mode"
echo "== $fam: each injected fault against the same layout without it (must exceed $bound)"
# fault NAME CLEAN RANKS LAYOUT INJECTION: f-NAME against clean-CLEAN (run once per layout)
fault() {
    f_name=$1 f_clean=$2 f_n=$3 f_lay=$4 f_inj=$5
    [ -s "out-clean-$f_clean/done.json" ] || must_run "clean-$f_clean" "$f_n" "$f_lay"
    must_run "f-$f_name" "$f_n" "$f_lay,\"inject\":\"$f_inj\""
    f_d=$(maxabs "clean-$f_clean" "f-$f_name")
    printf '  %-20s %d ranks %-22s max|fault - clean| %-12s = %s x bound\n' "$f_inj" "$f_n" "$f_lay" "$f_d" \
        "$(ratio "$f_d" "$bound")"
    gt "$f_d" "$bound" || fail "$f_inj changes the result by $f_d <= the rounding bound $bound: not a fault"
}
rm -rf out-clean-*
fault dplay dp2 2 ',"dp":2' dp-rank-layout
# the symptom: group 1 took group 0's items, so the output repeats items 0 and 1
"$cmp" out-f-dplay/latents.safetensors 2 out-f-dplay/latents.safetensors 0 latents >/dev/null &&
    "$cmp" out-f-dplay/latents.safetensors 3 out-f-dplay/latents.safetensors 1 latents >/dev/null ||
    fail "dp-rank-layout: items 2, 3 should be bitwise copies of items 0, 1"
grep -q '"trace_incomplete":[[:space:]]*true' out-f-dplay/done.json || fail "dp-rank-layout: the trace should be incomplete"
echo "    (items 2, 3 are bitwise copies of items 0, 1; the trace says parallel.trace.incomplete)"
fault dpnoise dp2 2 ',"dp":2' dp-shared-noise
fault uly uly2 2 ',"ulysses":2' ulysses-head-order
fault ring ring2 2 ',"ring":2' ring-no-rescale
if [ $fam = flux ]; then
    fault rope uly2 2 ',"ulysses":2' rope-offset
    fault scale ring2 2 ',"ring":2' attn-scale
else
    fault scale cfg2 2 ',"cfg_parallel":2' attn-scale
fi
fault skew dp2 2 ',"dp":2' timestep-skew
echo "PASS"
