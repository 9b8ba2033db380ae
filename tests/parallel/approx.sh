#!/bin/sh
# approx.sh — xDiT's approximate strategies end to end: PipeFusion and DistriFusion-style
# patch parallelism (engine/parallel/pipefusion.c, patch.c), through
# `repro launch -n N -- worker --job case` over Gloo on loopback, 1 GEMM thread per rank.
#
#   approx.sh REPRO SCRATCH FAMILY MODE PYTHON LATENTS_CMP
#     FAMILY  dit | sd3 | sd3x | flux (the tiny presets, 4 items; sd3x: sd3.5-medium-tiny, MMDiT-X)
#     MODE    approx    3 steps. The contract "exact during warmup": with warmup_steps =
#                       steps, pipefusion 2 (also 4 patches and explicit stages), pipefusion 4
#                       (DiT, FLUX: SD3-tiny has 2 blocks), patch 2 and 4, and hybrids with
#                       dp, cfg, ulysses, ring (4 and 8 ranks) and per-item batches equal the
#                       single rank within the rounding bound (parallel.sh explains it);
#                       patch parallelism's trace is the single rank's. "Approximate after
#                       it": warmup 1 and 0 differ from the single rank beyond the bound. The
#                       stale state is reset per generation: after another case in the same
#                       worker (--leak-check: every seed + 1 first) the bits are the lone
#                       run's. Configuration errors (exit 3). Faults: pipefusion-cache-leak
#                       (warmup 0, with --leak-check: the measured call reads the other
#                       case's K/V), and the faults of parallel.sh that apply to these
#                       layouts, each beyond the bound against the same layout without it.
#             monotone  DiT only: 16 steps, 4 seeds; warmup 0, 2, 4, 8 for pipefusion and
#                       patch at 2 and 4 ranks. The difference to the single rank (mean over
#                       the seeds of each seed's latents rel-L2) must shrink as the warmup
#                       grows, and 4 ranks must be worse than 2 at warmup 0, beyond rounding
#                       (tests/common/rounding.py): E is the same mean of the single rank's
#                       reduce_split twin (another summation order, as the classifier's twin)
#                       measured in this run; the next error must be < the previous one (the
#                       stale steps' effect shrinks) unless within 2E of it or at rounding
#                       level (<= 64 E); 4 ranks > 2 ranks + 2E. Each image's 8-bit RMS
#                       difference (from its PSNR) must not grow by more than 2 levels (8-bit
#                       rounding moves it by <= 1 level per image). SSIM is printed, not
#                       ordered: 8-bit rounding has no such bound on it. (Before: strict
#                       shrink, mean PSNR and SSIM never falling, without a rounding margin.)
#                       Prints the table.
set -u
repro=$1 scratch=$2 fam=$3 mode=$4 py=$5 cmp=$6
here=$(cd "$(dirname "$0")" && pwd)
# runs left by an earlier run (another kernel set, another build) are not this one's
# references: start empty
rm -rf "$scratch"
mkdir -p "$scratch" || exit 1
cd "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }

steps=3
case $fam in
dit)
    base='"model":"dit-tiny","sampler":"ddim","cfg":4'
    items='[{"seed":1,"class":3},{"seed":2,"class":207},{"seed":3,"class":7},{"seed":4,"class":88}]' ;;
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
[ "$mode" = monotone ] && steps=16

# run NAME RANKS EXTRA: writes NAME.json (the family's case + EXTRA) and runs it on RANKS
# ranks into out-NAME, with the worker options in $wopt; returns the launcher's exit code
# (errors shown unless quiet=1).
wopt=''
. "$here/lib.sh"  # run, must_run, maxabs, le, gt, ratio, bitwise

# ---- monotone: quality against warmup -------------------------------------------------
if [ "$mode" = monotone ]; then
    [ "$fam" = dit ] || fail "monotone runs on dit only"
    # seedmean A B: mean over items of ||A_i - B_i|| / ||A_i|| (final latents); without numpy
    # the pooled rel_l2 of `repro diff` (then said so)
    seedmean() {
        "$py" -c "import sys; sys.path.insert(0, '$here/../reference'); import st, numpy as np
a = st.load('out-$1/latents.safetensors')[0]['latents'].astype(np.float64)
b = st.load('out-$2/latents.safetensors')[0]['latents'].astype(np.float64)
print('%.6g' % np.mean([np.linalg.norm(a[i] - b[i]) / np.linalg.norm(a[i]) for i in range(a.shape[0])]))" 2>/dev/null ||
            "$repro" diff "out-$1/latents.safetensors" "out-$2/latents.safetensors" | awk '$1 == "rel_l2" { print $2 }'
    }
    # imgmean A B: "PSNR SSIM", means over the items' images (an identical image counts 99 dB)
    imgmean() {
        "$repro" diff "out-$1" "out-$2" 2>/dev/null | awk '
            /^image-[0-9]+\.png\.psnr / { v = $2; if (v == "inf" || v + 0 > 99) v = 99; p += v; np++ }
            /^image-[0-9]+\.png\.ssim / { s += $2; ns++ }
            END { if (np && ns) printf "%.2f %.5f\n", p / np, s / ns }'
    }
    # imgpsnr A B: each item's image PSNR ("inf" when identical), in item order
    imgpsnr() {
        "$repro" diff "out-$1" "out-$2" 2>/dev/null | sed -n 's/^image-\([0-9]*\)\.png\.psnr \(.*\)$/\1 \2/p' |
            sort -n | awk '{ printf "%s%s", sep, $2; sep = "," } END { print "" }'
    }
    # rules A... : tests/common/rounding.py's at_most / worse / image_at_most, exit 0 if it holds
    rule() { "$py" -c "import sys; sys.path.insert(0, '$here/../common'); import rounding as r
sys.exit(0 if $1 else 1)"; }
    t0=$(date +%s)
    must_run ref 1 ''
    must_run ref-twin 1 ',"reduce_split":1'
    env=$(seedmean ref ref-twin)
    [ -n "$env" ] || fail "no rounding envelope"
    echo "== dit-tiny, $steps steps, 4 seeds: the difference to the single rank against warmup"
    echo "   rounding envelope E = $env (the single rank's reduce_split twin, same mean rel-L2)"
    printf '  %-12s %6s %12s %9s %9s %7s\n' layout warmup rel_l2_mean psnr_dB ssim run_s
    for lay in pipefusion:2 patch:2 pipefusion:4 patch:4; do
        s=${lay%:*} n=${lay#*:}
        prev_r='' prev_i=''
        for w in 0 2 4 8; do
            name=$s$n-w$w
            ts=$(date +%s.%N)
            must_run "$name" "$n" ",\"$s\":$n,\"warmup_steps\":$w"
            te=$(date +%s.%N)
            r=$(seedmean ref "$name")
            i=$(imgpsnr ref "$name")
            set -- $(imgmean ref "$name")
            p=${1:-} q=${2:-}
            [ -n "$r" ] && [ -n "$p" ] && [ -n "$q" ] && [ -n "$i" ] || fail "$name: no metrics"
            printf '  %-12s %6d %12s %9s %9s %7.2f\n' "$s $n" "$w" "$r" "$p" "$q" "$(awk -v a="$ts" -v b="$te" 'BEGIN { print b - a }')"
            if [ -n "$prev_r" ]; then
                rule "r.at_most($r, $prev_r, $env)" ||
                    fail "$s $n: rel_l2 does not shrink from the previous warmup to $w ($prev_r -> $r, E $env)"
                rule "all(r.image_at_most(float(a), float(b)) for a, b in zip('$i'.split(','), '$prev_i'.split(',')))" ||
                    fail "$s $n: an image's 8-bit RMS difference grows by more than 2 levels at warmup $w (PSNR $prev_i -> $i)"
            fi
            prev_r=$r prev_i=$i
            eval "r_${s}_${n}_$w=$r"
        done
    done
    # more ranks, more stale state: at warmup 0, 4 ranks are worse than 2 beyond rounding
    for s in pipefusion patch; do
        eval "a=\$r_${s}_2_0 b=\$r_${s}_4_0"
        rule "r.worse($b, $a, $env)" || fail "$s warmup 0: 4 ranks ($b) not worse than 2 ($a) beyond rounding (E $env)"
    done
    echo "  ($(($(date +%s) - t0)) s in all)"
    echo "PASS"
    exit 0
fi
[ "$mode" = approx ] || fail "unknown mode $mode"

# ---- the single-rank reference and the bound (as parallel.sh) ---------------------------
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
[ -n "$xmax" ] || xmax=0
bound=$(awk -v e="$e_ref" -v x="$xmax" 'BEGIN { f = 16 * x * 2^-23; b = 4 * e; if (f > b) b = f; printf "%.6g", b }')
echo "== $fam: e_ref = $e_ref = $e_src; max|latents| = $xmax; bound 4 e_ref (floor 16 ulp) = $bound"
[ -n "$e_ref" ] && le 0 "$e_ref" || fail "no reference error"

# exact NAME RANKS EXTRA [REF]: warmup = steps, within the bound of REF; done.json says so
exact() {
    x_name=$1 x_n=$2 x_extra=$3 x_ref=${4:-ref}
    must_run "$x_name" "$x_n" "$x_extra,\"warmup_steps\":$steps"
    x_d=$(maxabs "$x_ref" "$x_name")
    x_bw=no
    bitwise "$x_ref" "$x_name" && x_bw=yes
    printf '  %-9s %d ranks %-58s max|par - single| %-12s = %-6s e_ref  bitwise %s\n' "$x_name" "$x_n" \
        "$x_extra" "$x_d" "$(ratio "$x_d" "$e_ref")" "$x_bw"
    le "$x_d" "$bound" || fail "$x_name: max|par - single| = $x_d exceeds the bound $bound with warmup = steps"
    for i in 0 1 2 3; do [ -s "out-$x_name/image-$i.png" ] || fail "$x_name: no image-$i.png"; done
    grep -q "\"warmup_steps\":[[:space:]]*$steps" "out-$x_name/done.json" &&
        grep -q "\"exact_steps\":[[:space:]]*$steps" "out-$x_name/done.json" &&
        grep -q '"exactness":[[:space:]]*"warmup-exact"' "out-$x_name/done.json" ||
        fail "$x_name: done.json does not record the warmup and the warmup-exact contract"
    case $x_extra in
    *'"patch"'*) # patch parallelism shards like sequence parallelism: the trace is the single rank's
        "$py" "$here/trace_cmp.py" "out-$x_ref/trace.safetensors" "out-$x_name/trace.safetensors" 1e-4 \
            > "trace-$x_name.txt"
        x_rc=$?
        [ $x_rc = 0 ] || [ $x_rc = 77 ] || { cat "trace-$x_name.txt"; fail "$x_name: the trace is not the single rank's"; } ;;
    *'"pipefusion"'*)
        "$py" -c "import sys; sys.path.insert(0, '$here/../reference'); import st
m = st.load('out-$x_name/trace.safetensors')[1]
sys.exit(0 if m.get('note/parallel.trace', '').startswith('off') else 3)" 2>/dev/null
        [ $? = 3 ] && fail "$x_name: the trace does not say it is off under pipefusion" ;;
    esac
    return 0
}

# approx NAME RANKS EXTRA WARMUP: differs from the single rank beyond the bound
approx() {
    a_name=$1 a_n=$2 a_extra=$3 a_w=$4
    must_run "$a_name" "$a_n" "$a_extra,\"warmup_steps\":$a_w"
    a_d=$(maxabs ref "$a_name")
    printf '  %-9s %d ranks %-40s warmup %d: max|par - single| %-12s = %s x bound\n' "$a_name" "$a_n" "$a_extra" \
        "$a_w" "$a_d" "$(ratio "$a_d" "$bound")"
    gt "$a_d" "$bound" || fail "$a_name: warmup $a_w of $steps steps is within the rounding bound: no stale activations?"
    grep -q "\"exact_steps\":[[:space:]]*$a_w" "out-$a_name/done.json" || fail "$a_name: done.json exact_steps is not $a_w"
}

config_error() {
    quiet=1
    run "$@"
    e_rc=$?
    quiet=0
    cat "run-$1"/rank*.err 2>/dev/null | grep -m 1 "error" | sed 's/^/    /'
    [ $e_rc = 3 ] || fail "$1: expected a configuration error (exit 3), got exit $e_rc"
    echo "  $1: configuration error (exit 3), as it must be"
}

case $fam in
dit) layers='[1,3]' ;;
sd3) layers='[1,1]' ;;
sd3x) layers='[1,2]' ;; # the stage boundary between the two dual-attention blocks
flux) layers='[3,1]' ;; # 2 double + 2 single blocks: the stage boundary inside the single ones
esac
echo "== $fam: warmup_steps = steps ($steps): exact, against the single rank"
exact pf2 2 ',"pipefusion":2'
exact pf2m4 2 ",\"pipefusion\":2,\"num_pipeline_patch\":4,\"pipefusion_layers\":$layers"
case $fam in sd3|sd3x) ;; *) exact pf4 4 ',"pipefusion":4' ;; esac # SD3: fewer than 4 blocks
exact pp2 2 ',"patch":2'
exact pp4 4 ',"patch":4'
exact dp-pf 4 ',"dp":2,"pipefusion":2'
exact pf-uly 4 ',"pipefusion":2,"ulysses":2'
exact pf-ring 4 ',"pipefusion":2,"ring":2,"num_pipeline_patch":4'
case $fam in
dit) exact cfg-pf 4 ',"cfg_parallel":2,"pipefusion":2'
     exact cfg-pp 4 ',"cfg_parallel":2,"patch":2'
     exact hyb8 8 ',"cfg_parallel":2,"pipefusion":2,"ring":2' ;;
sd3|sd3x) exact cfg-pf 4 ',"cfg_parallel":2,"pipefusion":2'
     exact cfg-pp 4 ',"cfg_parallel":2,"patch":2'
     exact hyb8 8 ',"dp":2,"pipefusion":2,"ulysses":2' ;;
flux) exact dp-pp 4 ',"dp":2,"patch":2'
      exact hyb8 8 ',"dp":2,"pipefusion":2,"ring":2' ;;
esac
if [ $fam != dit ]; then
    must_run ref-pi 1 ',"batch_forward":"per-item"'
    exact pf2-pi 2 ',"pipefusion":2,"batch_forward":"per-item"' ref-pi
    exact pp2-pi 2 ',"patch":2,"batch_forward":"per-item"' ref-pi
fi

echo "== $fam: fewer warmup steps: approximate (stale activations), beyond the bound"
approx pf2-w1 2 ',"pipefusion":2' 1
approx pf2-w0 2 ',"pipefusion":2' 0
approx pp2-w1 2 ',"patch":2' 1
approx pp2-w0 2 ',"patch":2' 0

echo "== $fam: after another case in the same worker (--leak-check), the bits of a lone run (reset)"
for x in pf2-w0:2:',"pipefusion":2,"warmup_steps":0' pp2-w0:2:',"patch":2,"warmup_steps":0'; do
    t_name=${x%%:*} t_rest=${x#*:}
    t_n=${t_rest%%:*} t_extra=${t_rest#*:}
    wopt=--leak-check
    must_run "$t_name-lc" "$t_n" "$t_extra"
    wopt=''
    bitwise "$t_name" "$t_name-lc" || fail "$t_name: the run after another case in the worker differs from a lone one"
    echo "  $t_name: bitwise the lone run"
done

echo "== $fam: configuration errors"
config_error pp-uly 4 ',"patch":2,"ulysses":2'
config_error pf-m1 2 ',"pipefusion":2,"num_pipeline_patch":1'
config_error leak-w1 2 ',"pipefusion":2,"warmup_steps":1,"inject":"pipefusion-cache-leak"'

echo "== $fam: each injected fault against the same layout without it (must exceed $bound)"
# fault NAME CLEAN INJECTION: f-NAME (CLEAN's case + the injection) against CLEAN
fault() {
    f_name=$1 f_clean=$2 f_inj=$3
    f_n=$(sed -n 's/.*"\(pipefusion\|patch\)":\([0-9]*\).*/\2/p' "$f_clean.json")
    f_extra=$(sed 's/.*"items":\[[^]]*\]//; s/}$//' "$f_clean.json")
    must_run "f-$f_name" "$f_n" "$f_extra,\"inject\":\"$f_inj\""
    f_d=$(maxabs "$f_clean" "f-$f_name")
    printf '  %-22s %d ranks %-34s max|fault - clean| %-12s = %s x bound\n' "$f_inj" "$f_n" "$f_extra" "$f_d" \
        "$(ratio "$f_d" "$bound")"
    gt "$f_d" "$bound" || fail "$f_inj changes the result by $f_d <= the rounding bound $bound: not a fault"
}
wopt=--leak-check # the leak shows between two calls: the other case first, then this one
fault leak pf2-w0 pipefusion-cache-leak
wopt=''
must_run f-leak-alone 2 ',"pipefusion":2,"warmup_steps":0,"inject":"pipefusion-cache-leak"'
bitwise pf2-w0 f-leak-alone || fail "pipefusion-cache-leak changes a lone call (it must act between calls only)"
echo "    (a lone call with the fault is bitwise the clean one: the leak acts between calls)"
fault scale-pf pf2 attn-scale
fault scale-pp pp2 attn-scale
fault skew-pf pf2 timestep-skew
if [ $fam = flux ]; then
    fault rope-pf pf2 rope-offset
    fault rope-pp pp2 rope-offset
fi
echo "PASS"
