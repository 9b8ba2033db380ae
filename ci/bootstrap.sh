#!/usr/bin/env bash
# ci/bootstrap.sh — idempotent set-up: install missing Debian packages, configure, build.
#
#   ci/bootstrap.sh            runtime + build dependencies, then build into build/
#   ci/bootstrap.sh --test     also the test-only packages (Python reference stack, Chromium...)
#
# Installs with apt-get when running as root; otherwise prints the exact apt line
# and exits 1. All progress goes to stderr so `./repro ... > out` stays clean.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${REPRO_BUILD_DIR:-$root/build}

runtime_pkgs=(build-essential cmake pkg-config libopenblas-dev libyaml-dev libcjson-dev
              libpng-dev libsqlite3-dev check libsubunit-dev libgloo-dev libhiredis-dev
              gnuplot-nox procps)
# test-only: the PyTorch/scikit-image references, a Redis server for the RedisStore
# rendezvous test, Open MPI for the mpirun launch test, Slurm (slurmctld, slurmd, munge) and
# Open MPI for the cluster launcher tests (tests/cluster/), Chromium to render report.html,
# clang (with its libFuzzer runtime) for the fuzz targets
test_pkgs=(python3-torch python3-numpy python3-skimage redis-server openmpi-bin slurmctld slurmd slurm-client munge
           chromium fonts-dejavu-core clang)

want=("${runtime_pkgs[@]}")
[[ "${1:-}" == "--test" ]] && want+=("${test_pkgs[@]}")

log() { echo "bootstrap: $*" >&2; }

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  line="apt-get install -y --no-install-recommends ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    log "missing Debian packages; as root run:"
    echo "  apt-get update && $line" >&2
    exit 1
  fi
  log "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Package lists may be absent or stale on a fresh machine: update once, then install.
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 2>/dev/null; then
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
fi

# nvcc is usually not on PATH in non-login shells; CMake finds it through CUDACXX.
if [[ -z "${CUDACXX:-}" && -x /usr/local/cuda/bin/nvcc ]] && ! command -v nvcc >/dev/null; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  log "configuring $build"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release ${REPRO_CMAKE_ARGS:-} >&2
fi
log "building"
cmake --build "$build" -j "$(nproc)" >&2
