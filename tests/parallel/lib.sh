# lib.sh — shared by tests/parallel/parallel.sh and approx.sh (sourced, POSIX sh).
# Needs: $repro, $base and $items (the family's case), $cmp (latents_cmp); optional $steps
# (default 3), $wopt (extra worker options) and $REPRO_TEST_THREADS (GEMM threads per rank,
# default 1; the xcore label sets 2). The caller has cd'd into its scratch dir.
# run NAME RANKS EXTRA: writes NAME.json (the family's case + EXTRA, e.g. ',"dp":2') and
# runs it on RANKS ranks into out-NAME; returns the launcher's exit code (errors shown).
# (sh has no local variables: each function uses its own prefix)
run() {
    r_name=$1 r_n=$2 r_bk=',"backend":"gloo"'
    [ "$r_n" = 1 ] && r_bk=''
    printf '{%s%s,"steps":%d,"threads":%d,"items":%s%s}\n' "$base" "$r_bk" "${steps:-3}" "${REPRO_TEST_THREADS:-1}" "$items" "$3" > "$r_name.json"
    rm -rf "out-$r_name" "run-$r_name"
    "$repro" launch -n "$r_n" --timeout 240 --run-dir "run-$r_name" -- worker --job case --case-file "$r_name.json" \
        --out-dir "out-$r_name" ${wopt:-} > "run-$r_name.log" 2>&1
    r_rc=$?
    if [ $r_rc != 0 ] && [ "${quiet:-0}" = 0 ]; then
        echo "  $r_name: launch exit $r_rc"
        cat "run-$r_name.log"
        tail -n 5 "run-$r_name"/rank*.err 2>/dev/null
    fi
    return $r_rc
}
must_run() { run "$@" || fail "$1 ($2 ranks$3) did not run"; }

# maxabs A B: max|A - B| of the final latents
maxabs() { "$repro" diff "out-$1/latents.safetensors" "out-$2/latents.safetensors" | awk '$1 == "max_abs" { print $2 }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a == a + 0 && b == b + 0 && a + 0 <= b + 0) }'; }
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a == a + 0 && b == b + 0 && a + 0 > b + 0) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3g", a / b; else print "-" }'; }
# bitwise A B: every item's noise, latents and trajectory bitwise equal
bitwise() {
    for i in 0 1 2 3; do "$cmp" "out-$1/latents.safetensors" $i "out-$2/latents.safetensors" $i >/dev/null || return 1; done
}
