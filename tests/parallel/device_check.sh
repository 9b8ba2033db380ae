#!/bin/sh
# device_check.sh — the models' device wiring, without a GPU: every dit-tiny layout run once
# on the plain CPU path and once with REPRO_DEVICE=host-check (`repro worker --job case`
# then runs the models on engine/device.h's "host-check" device: the CPU ops on memory that
# is unreadable outside a device op, every pointer argument checked to lie in a device
# block), and the two runs' latents files must be byte for byte identical (cmp).
#
#   device_check.sh REPRO SCRATCH [FAMILY] [NUMERICS]
#     FAMILY  dit (default: dit-tiny) | sd3x (sd3.5-medium-tiny, MMDiT-X: its attn2 buffers and
#             image-only attention on the device path)
#     NUMERICS  default (default) | invariant: every case runs numerics invariant, so the
#             device path is the invariant one (the device's invariant GEMM and canonical
#             attention, the staged canonical attention of ulysses, the ring's host partials);
#             then also every exact layout's latents must be bitwise the single rank's (what
#             a GPU must give, checked here through the same wiring)
#
# Layouts (ranks through `repro launch`, Gloo on loopback, one GEMM thread per rank, 2 items,
# 3 steps): a single rank, dp 2, cfg_parallel 2, ulysses 2, ring 2, patch 2 and pipefusion 2
# (warmup 1 of 3).
# What fails here, and why it matters on a GPU:
#   - a host-check run that stops (SIGSEGV, or an error naming an op and an argument): a
#     forward reads device memory on the host or hands an op a host pointer; on a CUDA
#     device that is a crash or silently wrong data;
#   - latents that differ: the device path computes something else than the CPU path (the
#     host-check device runs the CPU's own ops, so any difference is in the wiring: a
#     missing upload, a stale download, a buffer reused too early);
#   - a host-check run whose trace lacks the note device.check = host-check: the hook did not
#     reach the worker, so the comparison would prove nothing.
# Label parallel (CPU only; not gpu). ctest: parallel.dit.device_check.
set -u
repro=$1 scratch=$2 fam=${3:-dit} numerics=${4:-default}
here=$(cd "$(dirname "$0")" && pwd)
# runs left by an earlier run (another kernel set, another build) are not this one's
# references: start empty
rm -rf "$scratch"
mkdir -p "$scratch" || exit 1
cd "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
unset REPRO_RANK REPRO_WORLD REPRO_LOCAL_RANK REPRO_STORE_DIR RANK WORLD_SIZE LOCAL_RANK REPRO_DEVICE

case $fam in
dit)  base='"model":"dit-tiny","sampler":"ddim","cfg":4'
      items='[{"seed":1,"class":3},{"seed":2,"class":207}]' ;;
sd3x) base='"model":"sd3.5-medium-tiny","sampler":"euler","cfg":4'
      items='[{"seed":3,"prompt":"a red fox in the snow"},{"seed":8,"prompt":""}]' ;;
*) fail "unknown family $fam" ;;
esac
case $numerics in
default) ;;
invariant) base="$base"',"numerics":"invariant"' ;;
*) fail "unknown numerics $numerics" ;;
esac
steps=3
quiet=0
. "$here/lib.sh"  # run (NAME RANKS EXTRA -> out-NAME)

# name | ranks | case fields
layouts='single|1|
dp2|2|,"dp":2
cfg2|2|,"cfg_parallel":2
ulysses2|2|,"ulysses":2
ring2|2|,"ring":2
patch2|2|,"patch":2,"warmup_steps":1
pipefusion2|2|,"pipefusion":2,"warmup_steps":1'

bad=0
n=0
echo "$layouts" > layouts.txt
while IFS='|' read -r name ranks extra; do
    [ -n "$name" ] || continue
    n=$((n + 1))
    if ! run "$name" "$ranks" "$extra"; then
        echo "FAIL: $name: the plain CPU run failed"
        bad=1
        continue
    fi
    export REPRO_DEVICE=host-check # inherited by the launcher and every rank
    run "$name-hc" "$ranks" "$extra"
    hc_rc=$?
    unset REPRO_DEVICE
    if [ $hc_rc -ne 0 ]; then
        echo "FAIL: $name: the host-check run failed (a forward reads device memory on the host, or gives an op a" \
             "host pointer: the error or signal above says where)"
        bad=1
        continue
    fi
    grep -aq '"note/device.check":"host-check"' "out-$name-hc/trace.safetensors" ||
        { echo "FAIL: $name: the host-check run's trace has no note device.check=host-check (hook not applied)"; bad=1; }
    grep -aq '"note/device":"cpu"' "out-$name/trace.safetensors" ||
        { echo "FAIL: $name: the plain run's trace does not say device=cpu"; bad=1; }
    if cmp -s "out-$name/latents.safetensors" "out-$name-hc/latents.safetensors"; then
        echo "ok: $name ($ranks rank(s)): latents bitwise identical on the host-check device"
    else
        echo "FAIL: $name ($ranks rank(s)): latents differ between the CPU path and the host-check device:"
        "$repro" diff "out-$name/latents.safetensors" "out-$name-hc/latents.safetensors" | sed 's/^/    /'
        bad=1
    fi
    case $numerics:$name in
    invariant:dp2 | invariant:cfg2 | invariant:ulysses2 | invariant:ring2)
        if "$repro" diff out-single/latents.safetensors "out-$name-hc/latents.safetensors" | grep -qx 'max_abs 0' &&
            cmp -s out-single/image-0.png "out-$name-hc/image-0.png"; then
            echo "ok: $name: invariant numerics on the host-check device: latents and image bitwise the single rank's"
        else
            echo "FAIL: $name: invariant numerics on the host-check device is not the single rank's run:"
            "$repro" diff out-single/latents.safetensors "out-$name-hc/latents.safetensors" | sed 's/^/    /'
            bad=1
        fi ;;
    esac
    for img in out-"$name"/image-*.png; do
        [ -f "$img" ] || continue
        b=$(basename "$img")
        cmp -s "$img" "out-$name-hc/$b" ||
            { echo "FAIL: $name: $b differs between the CPU path and the host-check device"; bad=1; }
    done
done < layouts.txt
[ $n -eq 7 ] || fail "ran $n layouts, expected 7"
[ $bad -eq 0 ] || fail "the host-check device does not reproduce the CPU path bitwise (above)"
echo ok
