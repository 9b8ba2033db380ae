#!/usr/bin/env bash
# ci/test.sh — the test command: bootstrap (with test packages), build, run ctest.
#
#   ci/test.sh                 every label that needs no GPU (unit, reference, cli, parallel,
#                              matrix), ~14 min on 2 cores
#   ci/test.sh -L unit         extra arguments go to ctest
#   ci/test.sh -L sweep        the long scenario sweep whose claims faster tests cover
#                              (matrix.shipped.dit_async_warmup, ~8 min) and the invariant
#                              numerics' acceptance sets (matrix.classify.invariant{,xl})
#   ci/test.sh -L xcore        the hardware-sensitive tests under every OpenBLAS kernel set
#                              and 1 and 2 threads (tests/cmake/xcore.cmake; hours)
#   ci/test.sh -L corpus       the classifier's drift corpus (842 cases, ~6 min on 2 cores)
#   ci/test.sh -L fuzz         the fuzz targets (4 x 25 s, clang's libFuzzer; .ci/run runs them)
# GPU tests (label gpu) run too but skip (exit 77) when no CUDA device is visible. The
# labels sweep, xcore, corpus and fuzz run only when the arguments name them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${REPRO_BUILD_DIR:-$root/build}
"$root/ci/bootstrap.sh" --test
cd "$build"
exclude=(-LE 'xcore|sweep|corpus|fuzz')
case " $* " in *xcore* | *sweep* | *corpus* | *fuzz*) exclude=() ;; esac
# Tests share the machine's cores; each one's own threads are set inside it.
ctest --output-on-failure --timeout 900 -j "${REPRO_TEST_JOBS:-2}" "${exclude[@]}" "$@"
