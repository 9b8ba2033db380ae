#!/bin/sh
# run.sh — one hardware-sensitive test under a forced OpenBLAS kernel set and thread count
# (ctest label xcore, tests/cmake/xcore.cmake): what another x86-64 CPU would compute with.
#
#   run.sh CORE THREADS REPRO SRC SCRATCH -- COMMAND [ARG...]
#
# CORE is an OPENBLAS_CORETYPE name (Prescott, Nehalem, Sandybridge, Haswell, SkylakeX...).
# Exit 77 (skipped) when this CPU lacks the instructions the kernel set needs, or when the
# library does not load it (a build without DYNAMIC_ARCH). Otherwise COMMAND runs with
#   OPENBLAS_CORETYPE=CORE, OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=THREADS and
#   REPRO_TEST_THREADS=THREADS (tests/parallel/lib.sh writes it into its cases),
# and with every @SRC@ / @SCRATCH@ in its arguments replaced. With THREADS other than 1, @SRC@
# is a shadow of SRC (symbolic links, under SCRATCH) whose matrices/*.yaml and
# tests/classify/*.yaml say `threads: THREADS` wherever SRC's say `threads: 1`: the
# matrices fix the thread count per case (it is a case axis), so the environment alone
# would not change it.
set -u
[ $# -ge 7 ] && [ "$6" = "--" ] || { echo "usage: $0 CORE THREADS REPRO SRC SCRATCH -- COMMAND [ARG...]" >&2; exit 2; }
core=$1 threads=$2 repro=$3 src=$4 scratch=$5
shift 6

# the instructions each kernel set executes (/proc/cpuinfo flag names)
case $(echo "$core" | tr 'A-Z' 'a-z') in
prescott) need="pni" ;;
nehalem) need="sse4_2 popcnt" ;;
sandybridge) need="avx" ;;
haswell | zen) need="avx2 fma" ;;
skylakex) need="avx512f avx512bw avx512cd avx512dq avx512vl" ;;
cooperlake) need="avx512f avx512bw avx512cd avx512dq avx512vl avx512_bf16" ;;
*) echo "run.sh: unknown kernel set $core" >&2; exit 2 ;;
esac
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
for f in $need; do
    case $flags in *" $f "*) ;; *) echo "SKIP: this CPU lacks $f, which OpenBLAS's $core kernels need"; exit 77 ;; esac
done

export OPENBLAS_CORETYPE=$core OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads REPRO_TEST_THREADS=$threads
loaded=$("$repro" env 2>/dev/null | sed -n 's/^[[:space:]]*"core":[[:space:]]*"\([^"]*\)".*/\1/p' | head -1)
if [ "$(echo "$loaded" | tr 'A-Z' 'a-z')" != "$(echo "$core" | tr 'A-Z' 'a-z')" ]; then
    echo "SKIP: OPENBLAS_CORETYPE=$core, but the library loaded '${loaded:-?}' (no such kernel set in this OpenBLAS)"
    exit 77
fi
echo "xcore: OpenBLAS kernel set $loaded, $threads thread(s)"

rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
shadow=$src
if [ "$threads" != 1 ]; then
    # the shadow tree: links to everything, copies of the two matrix directories
    shadow=$scratch/src
    mkdir -p "$shadow/tests/classify" "$shadow/matrices" || exit 1
    for p in "$src"/* "$src"/.[!.]*; do
        [ -e "$p" ] || continue
        b=$(basename "$p")
        [ "$b" = tests ] || [ "$b" = matrices ] || ln -s "$p" "$shadow/$b"
    done
    for p in "$src"/tests/*; do
        [ "$(basename "$p")" = classify ] || ln -s "$p" "$shadow/tests/$(basename "$p")"
    done
    for f in "$src"/matrices/* "$src"/tests/classify/*; do
        d=$shadow/${f#"$src"/}
        case $f in
        *.yaml) sed "s/\bthreads: 1\b/threads: $threads/g" "$f" >"$d" || exit 1 ;;
        *) ln -s "$f" "$d" ;;
        esac
    done
fi

# the command, with the placeholders replaced (argument by argument: spaces survive)
n=$#
i=0
while [ $i -lt $n ]; do
    a=$1
    shift
    case $a in *@SRC@* | *@SCRATCH@*)
        a=$(printf '%s' "$a" | sed -e "s|@SRC@|$shadow|g" -e "s|@SCRATCH@|$scratch/run|g") ;;
    esac
    set -- "$@" "$a"
    i=$((i + 1))
done
"$@"
