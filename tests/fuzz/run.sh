#!/bin/sh
# run.sh — build and run the libFuzzer targets (tests/cmake/fuzz.cmake registers them).
#   run.sh build SRC FUZZ_BUILD              configure FUZZ_BUILD with clang and
#                                            -DREPRO_FUZZ=ON, build fuzz_<target> for all
#   run.sh run SRC FUZZ_BUILD TARGET SECONDS fuzz TARGET for SECONDS from its seeds
#                                            (tests/fuzz/corpus/TARGET/; the matrix target
#                                            also reads matrices/); new inputs go to
#                                            FUZZ_BUILD/corpus-TARGET, crashes to
#                                            FUZZ_BUILD/artifacts-TARGET/
# Exit 77 (skip) when clang or its libFuzzer runtime is missing (build), or when the
# build is absent (run); 1 when the build fails or the fuzzer finds a crash, a leak, a
# sanitizer report, an input slower than 10 s or one above 2 GiB.
set -u
cmd=$1 src=$2 fb=$3
targets="matrix safetensors png trace"
case $cmd in
build)
    cc=$(command -v clang) || { echo "clang is not installed (apt-get install clang): skipped" >&2; exit 77; }
    cxx=$(command -v clang++) || cxx=$cc
    probe=$(mktemp -d) || exit 1
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }\n' >"$probe/p.c"
    if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>"$probe/err"; then
        echo "clang cannot link libFuzzer ($(head -1 "$probe/err")): skipped" >&2
        rm -rf "$probe"
        exit 77
    fi
    rm -rf "$probe"
    if [ ! -f "$fb/CMakeCache.txt" ]; then
        cmake -S "$src" -B "$fb" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
            -DREPRO_FUZZ=ON -DREPRO_CUDA=OFF -DREPRO_GLOO=OFF >"$fb.configure.log" 2>&1 ||
            { cat "$fb.configure.log" >&2; echo "FAIL: configuring the fuzz build" >&2; exit 1; }
    fi
    set --
    for t in $targets; do set -- "$@" --target "fuzz_$t"; done
    cmake --build "$fb" -j "${REPRO_FUZZ_JOBS:-2}" "$@" || { echo "FAIL: building the fuzz targets" >&2; exit 1; }
    echo "fuzz build: ok ($fb)"
    ;;
run)
    t=$4 secs=$5
    exe=$fb/fuzz_$t
    [ -x "$exe" ] || { echo "$exe was not built (fuzz.build skipped or failed): skipped" >&2; exit 77; }
    corpus=$fb/corpus-$t art=$fb/artifacts-$t
    mkdir -p "$corpus" "$art" || exit 1
    seeds=$src/tests/fuzz/corpus/$t
    extra=
    [ "$t" = matrix ] && extra=$src/matrices
    # shellcheck disable=SC2086
    "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$art/" "$corpus" "$seeds" $extra 2>"$fb/fuzz-$t.log"
    rc=$?
    tail -n 15 "$fb/fuzz-$t.log" >&2
    if [ $rc -ne 0 ]; then
        grep -E "ERROR|SUMMARY|==[0-9]+==" "$fb/fuzz-$t.log" | head -20 >&2
        echo "FAIL: fuzz_$t exit $rc; the input is in $art/" >&2
        exit 1
    fi
    echo "fuzz_$t: ok (${secs} s)"
    ;;
*) echo "usage: run.sh build SRC FUZZ_BUILD | run SRC FUZZ_BUILD TARGET SECONDS" >&2; exit 2 ;;
esac
