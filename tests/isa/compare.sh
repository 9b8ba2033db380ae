#!/bin/sh
# compare.sh BASE V3 V4 — runs each isa_dump the CPU can execute and requires
# byte-identical outputs. Exit 77 (skipped) when the CPU runs only the baseline.
set -u
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f in "$@"; do case "$flags" in *" $f "*) ;; *) return 1 ;; esac; done; return 0; }
"$1" "$dir/base" || { echo "FAIL: baseline dump did not run"; exit 1; }
compared=0
check() { # name binary required-flags...
  name=$1 bin=$2; shift 2
  if ! has "$@"; then echo "skip $name: this CPU lacks one of: $*"; return; fi
  "$bin" "$dir/$name" || { echo "FAIL: $name dump did not run"; exit 1; }
  if cmp -s "$dir/base" "$dir/$name"; then
    echo "ok   $name: $(wc -c < "$dir/base") bytes identical to x86-64 (SSE2)"
    compared=$((compared + 1))
  else
    echo "FAIL $name: outputs differ from the x86-64 baseline"; cmp "$dir/base" "$dir/$name" | head -1; exit 1
  fi
}
check x86-64-v3 "$2" avx2 fma bmi2 movbe
check x86-64-v4 "$3" avx512f avx512bw avx512cd avx512dq avx512vl
[ "$compared" -gt 0 ] || { echo "SKIP: this CPU has neither AVX2 nor AVX-512: nothing to compare"; exit 77; }
