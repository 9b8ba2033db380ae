#!/usr/bin/env bash
# ci/test.sh — the test command: bootstrap (with test packages), build, run ctest.
#
#   ci/test.sh                 every label that needs no GPU (unit, reference, cli, matrix)
#   ci/test.sh -L unit         extra arguments go to ctest
# GPU tests (label gpu) run too but skip (exit 77) when no CUDA device is visible.
# The fuzz tests (label fuzz: 4 targets x 60 s, clang's libFuzzer) are left out here;
# .ci/run runs them after this, or: cd build && ctest -L fuzz.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${REPRO_BUILD_DIR:-$root/build}
"$root/ci/bootstrap.sh" --test
cd "$build"
# Tests share the machine's cores; each one's own threads are set inside it.
ctest --output-on-failure --timeout 900 -j "${REPRO_TEST_JOBS:-2}" -LE fuzz "$@"
