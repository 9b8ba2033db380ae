#!/bin/sh
# gpu_session.sh — a lent GPU's checks in one call (the device tool lends a machine for
# minutes, so the build and every check go in one prepared command; CI never runs this).
#
#   . .devdeps/activate.sh && sh ci/gpu_session.sh OUT STEP[:SECONDS]...
#
# Configures and builds the CUDA targets in /tmp/repro-gpu-build (outside the tree, so a
# warm machine's next call reuses it; REPRO_GPU_BUILD=DIR uses a build carried there instead,
# e.g. this machine's build/ when its CUDA matches the GPU machine's and the call must not
# spend minutes building), then runs each STEP under its own time limit
# (default 120 s), appending to OUT/session.log and writing OUT/<step>.log; a step that fails
# or times out is reported and the next one still runs. Exit: the number of failed steps.
# STEPs:
#   unit          gpu.gemm_invariant and gpu.attention_canonical: the invariant GEMM and the
#                 canonical attention bitwise the CPU's
#   bench         bench/cuda_models --numerics both: DiT-XL/2 256 px (batch 2) and FLUX-dev
#                 1024 px at 2 double + 2 single blocks, fp32 and bf16: invariant / default
#   shadow        tests/gpu/shadow.yaml: the classifier's invariant shadow on the GPU (no false
#                 alarm on clean layouts; a one-rank norm epsilon BUG)
#   inv-FAMILY    tests/gpu/invariant.sh for one family (dit, sd3, flux, ditxl): every exact
#                 layout bitwise its serial run on the GPU
#   models        tests/gpu/models.sh (the default numerics against the CPU)
set -u
out=$1
shift
src=$(cd "$(dirname "$0")/.." && pwd)
b=${REPRO_GPU_BUILD:-/tmp/repro-gpu-build}
case $b in /*) ;; *) b=$src/$b ;; esac
log=$out/session.log
mkdir -p "$out"
say() { echo "$*" | tee -a "$log"; }
t0=$(date +%s)
say "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
if [ -x "$b/repro" ] && ! "$b/repro" env >/dev/null 2>"$out/prebuilt.err"; then
    say "the build in $b does not run here ($(head -c 300 "$out/prebuilt.err")): building in /tmp/repro-gpu-build"
    b=/tmp/repro-gpu-build
fi
if [ ! -x "$b/repro" ]; then
    export CUDACXX=${CUDACXX:-/usr/local/cuda/bin/nvcc}
    gen=
    command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
    # shellcheck disable=SC2086
    cmake -S "$src" -B "$b" $gen -DCMAKE_BUILD_TYPE=Release -DREPRO_CUDA=ON >"$out/configure.log" 2>&1 ||
        { say "configure failed (configure.log)"; tail -20 "$out/configure.log"; exit 99; }
    cmake --build "$b" -j "$(nproc)" --target repro test_cuda_gemm_invariant test_cuda_attention_canonical \
        bench_cuda_models >"$out/build.log" 2>&1 || { say "build failed (build.log)"; grep -m20 -i error "$out/build.log"; exit 99; }
fi
say "== built in $(($(date +%s) - t0)) s"
export REPRO_CACHE=$b/test-cache OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 REPRO_PYTHON=${REPRO_PYTHON:-$(command -v python3)}
failed=0
for arg in "$@"; do
    step=${arg%%:*} lim=120
    [ "$step" != "$arg" ] && lim=${arg#*:}
    t1=$(date +%s)
    case $step in
    unit) cmd="$b/tests/test_cuda_gemm_invariant && $b/tests/test_cuda_attention_canonical" ;;
    bench) cmd="for p in fp32 bf16; do $b/bench/cuda_models --model dit-xl-2-256 --weights shared --precision \$p \
--numerics both --attention auto --warmup 2 --iters 5 && $b/bench/cuda_models --model flux-dev --blocks 2 \
--precision \$p --numerics both --attention auto --warmup 1 --iters 3 || exit 1; done" ;;
    shadow) cmd="$b/repro --matrix $src/tests/gpu/shadow.yaml --results $b/gpu-scratch/shadow --progress plain" ;;
    inv-*) cmd="sh $src/tests/gpu/invariant.sh $b/repro $b/gpu-scratch/$step $src ${step#inv-}" ;;
    models) cmd="sh $src/tests/gpu/models.sh $b/repro $b/gpu-scratch/models $src" ;;
    *) say "unknown step $step"; failed=$((failed + 1)); continue ;;
    esac
    timeout "$lim" sh -c "$cmd" >"$out/$step.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || failed=$((failed + 1))
    say "== $step: exit $rc$([ $rc -eq 124 ] && echo ' (timed out)') in $(($(date +%s) - t1)) s; last lines:"
    grep -v '^RESULT ' "$out/$step.log" | tail -n 12 | tee -a "$log"
done
say "== done in $(($(date +%s) - t0)) s, $failed step(s) failed"
exit "$failed"
