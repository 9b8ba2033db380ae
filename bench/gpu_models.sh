#!/usr/bin/env bash
# bench/gpu_models.sh — the whole-model GPU targets, measured in one run on one GPU:
#
#   1. ours: build/bench/cuda_models --model dit-xl-2-256, bf16, deterministic and fast
#      (batch 2 = a CFG pair; the deterministic run also checks its output against the
#      CPU fp32 forward)
#   2. PyTorch: bench/torch_dit.py (same model, same batch, bf16): eager, torch.compile
#      default and mode "max-autotune-no-cudagraphs"
#   3. ours: cuda_models --model flux-dev at 1024x1024, bf16, deterministic and fast
#   4. PyTorch: bench/torch_flux.py (flux_ref.py's FLUX-dev with SDPA, 1024x1024, bf16,
#      batch 1): eager and torch.compile default (TORCH_FLUX_VARIANTS to change)
#
# and prints the targets, each PASS or MISS (UNMEASURED when its peer did not run —
# never left out):
#   DiT ours vs torch eager      ours faster (ours ms < eager ms), per mode
#   DiT ours vs torch.compile    ours within 10% (ours ms <= 1.10 x the faster compile ms), per mode
#   FLUX-dev 1024 one forward    <= 150 ms, per mode
#   FLUX ours vs torch.compile   ours <= 0.90 x the faster torch.compile ms, per mode
#
#   bench/gpu_models.sh [-- extra cuda_models options, e.g. --attention flash]
#   env: BUILD (default <repo>/build), PYTHON (default /usr/bin/python3: a torch with CUDA
#        is needed for the PyTorch rows — Debian's python3-torch is CPU-only, so point
#        PYTHON at one that has CUDA), OUT (log dir, default $BUILD/gpu_models),
#        ITERS / WARMUP (cuda_models and torch_dit, default 50 / 10; FLUX, ours and torch:
#        FLUX_ITERS 10, FLUX_WARMUP 2), PEAK (TFLOP/s, default 989: H200 dense bf16),
#        TORCH_FLUX_VARIANTS (default eager,compile-default),
#        STEPS (default "dit torch flux torchflux": the steps to run now; the targets are
#        judged from the logs in $OUT, so under a per-command time limit run STEPS=dit,
#        STEPS=torch, STEPS=flux, STEPS=torchflux one after another with the same OUT — an
#        earlier log is named as such)
#
# Exit: 0 every target PASS; 3 everything ran but a target is MISS or UNMEASURED; 1 a
# run failed; 0 with "gpu_models: no CUDA device: skipped" when there is no GPU.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$root/build}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${OUT:-$BUILD/gpu_models}
ITERS=${ITERS:-50}
WARMUP=${WARMUP:-10}
FLUX_ITERS=${FLUX_ITERS:-10}
FLUX_WARMUP=${FLUX_WARMUP:-2}
PEAK=${PEAK:-989}
TORCH_FLUX_VARIANTS=${TORCH_FLUX_VARIANTS:-eager,compile-default}
STEPS=${STEPS:-dit torch flux torchflux}
[[ "${1:-}" == "--" ]] && shift
extra=("$@")
bin=$BUILD/bench/cuda_models
# JSON is read with Python's json module; any python3 will do for that
json_py=$(command -v python3 || echo /usr/bin/python3)

if [[ ! -x $bin ]]; then
  echo "gpu_models: $bin not found: build it (cmake -S $root -B $BUILD && make -C $BUILD bench_cuda_models)" >&2
  exit 1
fi
mkdir -p "$OUT" || exit 1

failed=0
# run NAME CMD...: runs, tees to $OUT/NAME.log; a nonzero exit marks the run failed
run() {
  local name=$1; shift
  echo "== $name: $*"
  "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  if ((rc != 0)); then
    echo "gpu_models: $name exited $rc (log: $OUT/$name.log)" >&2
    failed=1
  fi
  return "$rc"
}

# the RESULT JSON of a log: field FIELD of the record whose impl (or none) matches
field() { # field LOG FIELD [IMPL]
  "$json_py" - "$1" "$2" "${3:-}" <<'EOF'
import json, sys
log, key, impl = sys.argv[1], sys.argv[2], sys.argv[3]
val = ""
try:
    for line in open(log):
        if not line.startswith("RESULT "):
            continue
        r = json.loads(line[7:])
        if impl and r.get("impl") != impl:
            continue
        if key in r:
            val = r[key]
            break
except OSError:
    pass
print(val)
EOF
}

echo "# gpu_models: $(date -u +%Y-%m-%dT%H:%M:%SZ) | repro $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
     "| $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || echo 'no nvidia-smi')"

has_step() { [[ " $STEPS " == *" $1 "* ]]; }
# ours NAME ARGS...: a cuda_models run; no GPU -> the skip line, exit 0
ours() {
  local name=$1; shift
  run "$name" "$bin" "$@" "${extra[@]}"
  if grep -q "no CUDA device: skipped" "$OUT/$name.log"; then
    echo "gpu_models: no CUDA device: skipped"
    exit 0
  fi
}
# a step not run now: its log from an earlier run in $OUT, if any, is used (and said so)
earlier() {
  local name
  for name in "$@"; do
    if [[ -f $OUT/$name.log ]]; then echo "# $name: not run now (STEPS); using the earlier log $OUT/$name.log of $(date -u -r "$OUT/$name.log" +%Y-%m-%dT%H:%M:%SZ)"
    else echo "# $name: not run (STEPS) and no earlier log"; fi
  done
}

common=(--precision bf16 --warmup "$WARMUP" --iters "$ITERS" --peak "$PEAK")
if has_step dit; then
  ours dit-deterministic --model dit-xl-2-256 --mode deterministic --check "${common[@]}"
  ours dit-fast --model dit-xl-2-256 --mode fast "${common[@]}"
else
  earlier dit-deterministic dit-fast
fi
if has_step torch; then
  run torch-dit "$PYTHON" "$root/bench/torch_dit.py" --warmup "$WARMUP" --iters "$ITERS" --peak "$PEAK"
else
  earlier torch-dit
fi
if has_step flux; then
  fcommon=(--precision bf16 --warmup "$FLUX_WARMUP" --iters "$FLUX_ITERS" --peak "$PEAK" --res 1024)
  ours flux-deterministic --model flux-dev --mode deterministic "${fcommon[@]}"
  ours flux-fast --model flux-dev --mode fast "${fcommon[@]}"
else
  earlier flux-deterministic flux-fast
fi
if has_step torchflux; then
  run torch-flux "$PYTHON" "$root/bench/torch_flux.py" --warmup "$FLUX_WARMUP" --iters "$FLUX_ITERS" \
      --peak "$PEAK" --res 1024 --variants "$TORCH_FLUX_VARIANTS"
else
  earlier torch-flux
fi

# ---- targets ------------------------------------------------------------------------------
n_pass=0; n_miss=0
verdict() { # verdict LABEL STATUS DETAIL
  printf '%-44s %-10s %s\n' "$1" "$2" "$3"
  if [[ $2 == PASS ]]; then n_pass=$((n_pass + 1)); else n_miss=$((n_miss + 1)); fi
}
# cmp A B OP: 1 when A OP B holds (floats)
holds() { awk -v a="$1" -v b="$2" -v op="$3" 'BEGIN { exit !((op == "<" && a < b) || (op == "<=" && a <= b)) }'; }

# peer LOG: a PyTorch peer's log -> eager, compile (the faster torch.compile median),
# compile_impl, and why either is missing (torch_why, compile_why)
peer() {
  local log=$1 pair v c_def c_max
  eager=$(field "$log" median_ms eager)
  c_def=$(field "$log" median_ms compile-default)
  c_max=$(field "$log" median_ms compile-max-autotune-no-cudagraphs)
  compile=""; compile_impl=""
  for pair in "compile-default:$c_def" "compile-max-autotune-no-cudagraphs:$c_max"; do
    v=${pair#*:}
    [[ -z $v ]] && continue
    if [[ -z $compile ]] || holds "$v" "$compile" "<"; then compile=$v; compile_impl=${pair%%:*}; fi
  done
  torch_why=""
  if [[ -z $eager ]]; then
    torch_why=$(grep -m1 -E "skipped|Error|error" "$log" 2>/dev/null || true)
    [[ -z $torch_why ]] && torch_why="no result in $log"
  fi
  compile_why=""
  if [[ -z $compile ]]; then
    compile_why=$(field "$log" reason compile-default)
    [[ -z $compile_why ]] && compile_why=${torch_why:-"no torch.compile result in $log"}
  fi
}
peer "$OUT/torch-dit.log"

echo
echo "== targets (bf16; DiT-XL/2 256 px batch 2; FLUX-dev 1024x1024 batch 1; times are medians)"
[[ -n $eager ]] && echo "torch eager ${eager} ms; torch.compile best ${compile:-n/a} ms ${compile_impl:+($compile_impl)}"
for mode in deterministic fast; do
  ours=$(field "$OUT/dit-$mode.log" median_ms)
  if [[ -z $ours ]]; then
    verdict "DiT ours ($mode) vs torch eager" MISS "ours did not run (log: $OUT/dit-$mode.log)"
    verdict "DiT ours ($mode) vs torch.compile" MISS "ours did not run"
    continue
  fi
  if [[ -n $eager ]]; then
    r=$(awk -v o="$ours" -v e="$eager" 'BEGIN { printf "%.3f", e / o }')
    if holds "$ours" "$eager" "<"; then s=PASS; else s=MISS; fi
    verdict "DiT ours ($mode) vs torch eager" $s "ours $ours ms, eager $eager ms: speed-up x$r (target > 1)"
  else
    verdict "DiT ours ($mode) vs torch eager" UNMEASURED "ours $ours ms; eager not measured: $torch_why"
  fi
  if [[ -n $compile ]]; then
    r=$(awk -v o="$ours" -v c="$compile" 'BEGIN { printf "%.3f", o / c }')
    lim=$(awk -v c="$compile" 'BEGIN { printf "%.4f", 1.10 * c }')
    if holds "$ours" "$lim" "<="; then s=PASS; else s=MISS; fi
    verdict "DiT ours ($mode) vs torch.compile" $s "ours $ours ms, $compile_impl $compile ms: ours/compile $r (target <= 1.10)"
  else
    verdict "DiT ours ($mode) vs torch.compile" UNMEASURED "ours $ours ms; compile not measured: $compile_why"
  fi
done
chk=$(field "$OUT/dit-deterministic.log" check_rel_l2)
[[ -n $chk ]] && echo "(DiT deterministic output vs the CPU fp32 forward: relative L2 $chk)"
for mode in deterministic fast; do
  f=$(field "$OUT/flux-$mode.log" median_ms)
  if [[ -z $f ]]; then
    verdict "FLUX-dev 1024 ($mode) <= 150 ms" MISS "did not run (log: $OUT/flux-$mode.log)"
    continue
  fi
  tf=$(field "$OUT/flux-$mode.log" tflops)
  if holds "$f" 150 "<="; then s=PASS; else s=MISS; fi
  verdict "FLUX-dev 1024 ($mode) <= 150 ms" $s "$(printf '%.2f ms, %.1f TFLOP/s' "$f" "$tf")"
done
peer "$OUT/torch-flux.log"
[[ -n $eager ]] && echo "FLUX torch eager ${eager} ms; torch.compile best ${compile:-n/a} ms ${compile_impl:+($compile_impl)}"
for mode in deterministic fast; do
  f=$(field "$OUT/flux-$mode.log" median_ms)
  if [[ -z $f ]]; then
    verdict "FLUX ours ($mode) vs torch.compile" MISS "ours did not run (log: $OUT/flux-$mode.log)"
  elif [[ -n $compile ]]; then
    r=$(awk -v o="$f" -v c="$compile" 'BEGIN { printf "%.3f", o / c }')
    lim=$(awk -v c="$compile" 'BEGIN { printf "%.4f", 0.90 * c }')
    if holds "$f" "$lim" "<="; then s=PASS; else s=MISS; fi
    verdict "FLUX ours ($mode) vs torch.compile" $s "ours $f ms, $compile_impl $compile ms: ours/compile $r (target <= 0.90)"
  else
    verdict "FLUX ours ($mode) vs torch.compile" UNMEASURED "ours $f ms; compile not measured: $compile_why"
  fi
done
echo "targets: $n_pass PASS, $n_miss MISS/UNMEASURED; logs in $OUT"
((failed)) && exit 1
((n_miss)) && exit 3
exit 0
