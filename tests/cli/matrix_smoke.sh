#!/bin/sh
# matrix_smoke.sh — the acceptance sweep matrices/smoke.yaml.
#   matrix_smoke.sh REPRO SCRATCH MODE SRC
# modes:
#   smoke           from nothing (empty results dir, empty weights cache): finishes in
#                   under 120 s, exit 0, the summary table with 4 ok cases, and every
#                   case directory complete in results/smoke/
#   sigkill_resume  the sweep is SIGKILLed once at least one case is finished and another
#                   is running (each rank starts 1 s late through the fake worker, which
#                   opens the window); no rank outlives it; running it again completes
#                   with exit 0, recomputes none of the cases finished before the kill
#                   (their run stamps are unchanged), and leaves no temporary directory
set -u
repro=$1 scratch=$2 mode=$3 src=$4
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
below() { awk -v x="$1" -v l="$2" 'BEGIN { exit !(x < l) }'; }
ulimit -c 0 2>/dev/null
export REPRO_CACHE="$scratch/cache"   # a fresh clone has no synthetic weights yet
matrix=$src/matrices/smoke.yaml
res=$scratch/results
dir=$res/smoke

# check_case DIR: every file a finished case must have
check_case() {
    for f in case.json result.json env.json done.json latents.safetensors trace.safetensors \
             image-0.png image-1.png metrics.json; do
        [ -s "$1/$f" ] || fail "$1: no $f"
    done
    grep -q '"status":[[:space:]]*"ok"' "$1/result.json" || fail "$1: status is not ok"
}

# finished_cases: the directories named by a case id (16 hex digits), one per line
finished_cases() { ls "$dir" 2>/dev/null | grep -E '^[0-9a-f]{16}$' | sed "s|^|$dir/|"; }

# stamp DIR: the run stamp of a finished case
stamp() { sed -n 's/.*"run_stamp":[[:space:]]*"\([^"]*\)".*/\1/p' "$1/result.json"; }

case "$mode" in
smoke)
    t0=$(now)
    out=$("$repro" --matrix "$matrix" --results "$res" --progress plain 2>"$scratch/stderr")
    rc=$?
    t=$(elapsed "$t0")
    cat "$scratch/stderr"
    echo "$out"
    echo "smoke: $t s"
    [ $rc -eq 0 ] || fail "exit $rc"
    below "$t" 120 || fail "took $t s (limit 120)"
    echo "$out" | head -1 | grep -q '^id  *name  *degrees  *status  *max-abs  *PSNR  *SSIM  *changed' ||
        fail "no table header"
    [ "$(echo "$out" | grep -c ' ok ')" -eq 4 ] || fail "not 4 ok rows"
    echo "$out" | grep -q '^smoke: 4 cases: 4 ok, 0 CONFIG_ERROR, 0 CRASH, 0 HANG, 0 SKIPPED; 4 run now' ||
        fail "no summary line"
    # the reports, as `repro report` writes them, named on the last line
    [ "$(echo "$out" | tail -1)" = "report: $dir/report/report.html" ] || fail "last line: $(echo "$out" | tail -1)"
    for f in report.html report.md junit.xml summary.json; do
        [ -s "$dir/report/$f" ] || fail "no report/$f"
    done
    n=0
    for d in $(finished_cases); do
        check_case "${d%/}"
        n=$((n + 1))
    done
    [ $n -eq 4 ] || fail "$n case directories, expected 4"
    [ -s "$dir/summary.json" ] || fail "no summary.json"
    # the dp=2 cases are compared with the dp=1 math reference
    grep -q '"self":[[:space:]]*false' "$dir"/*/metrics.json || fail "no case has a reference comparison"
    ;;
sigkill_resume)
    # every rank waits 1 s before the real worker: cases take >= 1 s, so the kill lands mid-sweep
    REPRO_TEST_REPRO=$repro REPRO_TEST_DELAY=1 "$repro" --matrix "$matrix" --results "$res" --jobs 1 \
        --progress plain --worker-exe "$src/tests/cli/matrix_fake_worker.sh" \
        >"$scratch/run1.out" 2>&1 &
    pid=$!
    i=0
    # wait for the first finished case (a directory named by a 16-hex id)
    while :; do
        n=$(finished_cases | grep -c .)
        [ "$n" -ge 1 ] && break
        i=$((i + 1))
        [ $i -gt 600 ] && { kill -9 $pid; fail "no case finished within 60 s"; }
        kill -0 $pid 2>/dev/null || { cat "$scratch/run1.out"; fail "the sweep ended before the kill"; }
        sleep 0.1
    done
    kill -9 $pid
    wait $pid 2>/dev/null
    cat "$scratch/run1.out"
    finished=$(finished_cases)
    nfin=$(echo "$finished" | grep -c .)
    echo "killed with $nfin case(s) finished"
    [ "$nfin" -lt 4 ] || fail "all cases had finished before the kill: nothing to resume"
    # ranks die with the sweep (PR_SET_PDEATHSIG): none may still run a case of this scratch dir
    i=0
    while pgrep -f "$scratch/results" >/dev/null; do
        i=$((i + 1))
        [ $i -gt 50 ] && { pgrep -af "$scratch/results" >&2; fail "ranks outlived the killed sweep"; }
        sleep 0.1
    done
    for d in $finished; do
        check_case "$d"
        echo "$d $(stamp "$d")" >>"$scratch/stamps"
    done
    out=$("$repro" --matrix "$matrix" --results "$res" --progress plain 2>"$scratch/run2.err")
    rc=$?
    cat "$scratch/run2.err"
    echo "$out"
    [ $rc -eq 0 ] || fail "the resumed sweep exited $rc"
    echo "$out" | grep -q "; $((4 - nfin)) run now, $nfin from earlier runs" || fail "resumed counts are wrong"
    while read -r d s; do
        [ "$(stamp "$d")" = "$s" ] || fail "$d was recomputed (stamp $s -> $(stamp "$d"))"
    done <"$scratch/stamps"
    n=0
    for d in $(finished_cases); do
        check_case "${d%/}"
        n=$((n + 1))
    done
    [ $n -eq 4 ] || fail "$n case directories after resuming, expected 4"
    left=$(find "$dir" -mindepth 1 -maxdepth 1 -name '.tmp*')
    [ -z "$left" ] || fail "temporary files left: $left"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
echo "PASS: $mode"
