#!/bin/sh
# matrix_cli.sh — `repro --matrix`, `repro --help-matrix`, `repro golden` end to end.
#   matrix_cli.sh REPRO SCRATCH MODE SRC
# modes:
#   bad       every tests/matrix/bad/NAME.yaml: exit 2, stderr exactly one line
#             "repro: error: PATH:" + NAME.err, nothing written; >= 20 files
#   dryrun    --dry-run lists the expanded cases with their verdicts and writes nothing;
#             --filter; --help-matrix; usage errors (exit 2); after a run, "done"
#   outcomes  one sweep with every outcome: ok, CONFIG_ERROR (validation, expected),
#             SKIPPED (a GPU this machine lacks, with the reason), CRASH (rank 1 SIGSEGV,
#             named with its stderr), HANG (deadline), a worker's own exit 3; statuses,
#             failing rank and reasons in result.json / summary.json; exit 1 for the
#             unexpected ones, 0 when every outcome is expected; a second sweep on the
#             same results dir is refused while the first holds the lock
#   resume    finished cases are not recomputed (CRASH/HANG included), --retry-failed
#             reruns the failures, --rerun everything; a case's metrics follow its
#             reference when only the reference is rerun
#   repeat    repeat: 2 runs each case twice; the repeats are bitwise identical
#   golden    golden record / list, then --golden compares every case with the golden of
#             its reference, matched by config (another matrix, another results dir); a bf16
#             golden recorded under another OpenBLAS kernel set is drift, not a bug
set -u
repro=$1 scratch=$2 mode=$3 src=$4
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
ulimit -c 0 2>/dev/null
fake=$src/tests/cli/matrix_fake_worker.sh
res=$scratch/results

# field FILE KEY: the first string value of "KEY" in a JSON file
field() { sed -n "s/.*\"$2\":[[:space:]]*\"\\([^\"]*\\)\".*/\\1/p" "$1" | head -1; }
# status_of DIR NAME: the status of the case named NAME in DIR/summary.json
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
status_of() {
    $py -c 'import json,sys
s = json.load(open(sys.argv[1] + "/summary.json"))
print([c["status"] for c in s["cases"] if c["name"] == sys.argv[2]][0])' "$1" "$2"
}
# id_of DIR NAME
id_of() {
    $py -c 'import json,sys
s = json.load(open(sys.argv[1] + "/summary.json"))
print([c["id"] for c in s["cases"] if c["name"] == sys.argv[2]][0])' "$1" "$2"
}

case "$mode" in
bad)
    n=0
    for f in "$src"/tests/matrix/bad/*.yaml; do
        want="repro: error: $f:$(cat "${f%.yaml}.err")"
        "$repro" --matrix "$f" --results "$res" >"$scratch/out" 2>"$scratch/err"
        rc=$?
        [ $rc -eq 2 ] || fail "$f: exit $rc, expected 2"
        [ "$(wc -l <"$scratch/err")" -eq 1 ] || { cat "$scratch/err"; fail "$f: not a one-line error"; }
        [ "$(cat "$scratch/err")" = "$want" ] || fail "$f:
  got  $(cat "$scratch/err")
  want $want"
        [ -s "$scratch/out" ] && fail "$f: printed on stdout"
        echo "ok $(cat "$scratch/err")"
        n=$((n + 1))
    done
    [ $n -ge 20 ] || fail "only $n malformed matrices"
    [ -e "$res" ] && fail "a malformed matrix wrote $res"
    ;;
dryrun)
    m=$src/matrices/smoke.yaml
    out=$("$repro" --matrix "$m" --results "$res" --dry-run) || fail "dry run exit $?"
    echo "$out"
    [ "$(echo "$out" | grep -c '  run$')" -eq 4 ] || fail "not 4 cases to run"
    echo "$out" | grep -q '^smoke: 4 cases: 4 to run, 0 done, 0 CONFIG_ERROR, 0 SKIPPED' || fail "no dry-run summary"
    [ -e "$res" ] && fail "--dry-run wrote $res"
    # options before --matrix work too; filters: same key = any of, keys = all of
    out=$("$repro" --dry-run --filter dp=2 --filter attention=flash --matrix "$m" --results "$res") || fail "filter"
    echo "$out"
    echo "$out" | grep -q '^smoke: 2 cases' || fail "--filter dp=2 attention=flash: not the case and its reference"
    out=$("$repro" --matrix "$m" --results "$res" --dry-run --filter attention=flash --filter attention=math) ||
        fail "filter"
    echo "$out" | grep -q '^smoke: 4 cases' || fail "--filter on one key twice is not an alternative"
    "$repro" --matrix "$m" --dry-run --filter atention=flash 2>"$scratch/err"
    [ $? -eq 2 ] || fail "an unknown filter key is not a usage error"
    grep -q "did you mean 'attention'" "$scratch/err" || fail "no did-you-mean for the filter key"
    "$repro" --matrix "$m" --jobs x 2>/dev/null
    [ $? -eq 2 ] || fail "--jobs x is not a usage error"
    "$repro" --matrix "$scratch/none.yaml" 2>"$scratch/err"
    [ $? -eq 2 ] || fail "a missing matrix file is not exit 2"
    grep -q "none.yaml: cannot open" "$scratch/err" || fail "no message for a missing file"
    "$repro" --help-matrix >"$scratch/help" || fail "--help-matrix"
    for w in axes: include: exclude: reference: repeat: tolerances: expect: "cuda:<name substring>" \
             "Case validation"; do
        grep -qF -- "$w" "$scratch/help" || fail "--help-matrix does not mention $w"
    done
    "$repro" --help | grep -q -- "--matrix" || fail "repro --help does not mention --matrix"
    # after a run of one case, the dry run says done
    "$repro" --matrix "$m" --results "$res" --filter "name=dp=1 attention=math" --progress plain >/dev/null 2>&1 ||
        fail "run of one case"
    out=$("$repro" --matrix "$m" --results "$res" --dry-run) || fail "dry run after a run"
    echo "$out"
    echo "$out" | grep -q 'done (ok, from an earlier run)' || fail "the finished case is not listed as done"
    echo "$out" | grep -q '^smoke: 4 cases: 3 to run, 1 done' || fail "dry run counts after a run"
    ;;
outcomes)
    cat >"$scratch/o.yaml" <<'EOF'
name: outcomes
base: {model: dit-tiny, steps: 3, backend: gloo}
seeds: [0, 1]
axes:
  dp: [1, 2]
  attention: [math, flash]
include:
  - {dp: 3, attention: math, name: three}
  - {dp: 2, attention: split, device: "cuda:NoSuchGPU-42", name: gpu}
reference: {dp: 1, attention: math}
# a run's deadline is timeout x (1 + its planned classifier runs): 20 s for the hang, twice
# (one HANG per sweep); dit-tiny's 3 steps take ~0.3 s
timeout: 5
expect:
  - {dp: 3, label: CONFIG_ERROR}
EOF
    export REPRO_TEST_REPRO="$repro"
    export REPRO_TEST_FAULT='crash:"dp=2 attention=math ;hang:"dp=2 attention=flash ;exit3:"dp=1 attention=flash '
    out=$("$repro" --matrix "$scratch/o.yaml" --results "$res" --progress plain --worker-exe "$fake" 2>"$scratch/err")
    rc=$?
    cat "$scratch/err"
    echo "$out"
    [ $rc -eq 1 ] || fail "exit $rc with unexpected failures, expected 1"
    d=$res/outcomes
    [ "$(status_of "$d" "dp=1 attention=math device=cpu")" = ok ] || fail "reference not ok"
    [ "$(status_of "$d" three)" = CONFIG_ERROR ] || fail "dp=3 with 2 items is not CONFIG_ERROR"
    [ "$(status_of "$d" gpu)" = SKIPPED ] || fail "the GPU case is not SKIPPED"
    [ "$(status_of "$d" "dp=2 attention=math device=cpu")" = CRASH ] || fail "the crash is not CRASH"
    [ "$(status_of "$d" "dp=2 attention=flash device=cpu")" = HANG ] || fail "the hang is not HANG"
    [ "$(status_of "$d" "dp=1 attention=flash device=cpu")" = CONFIG_ERROR ] || fail "a worker's exit 3 is not CONFIG_ERROR"
    echo "$out" | grep 'three ' | grep -q 'expected CONFIG_ERROR; dp=3 with 2 items' || fail "no expected label/reason"
    echo "$out" | grep '^[0-9a-f]* *gpu ' | grep -q "NoSuchGPU-42" || fail "SKIPPED without the reason"
    # the SKIPPED case has no directory; the CONFIG_ERROR one was recorded without a launch
    [ -e "$d/$(id_of "$d" gpu)" ] && fail "a SKIPPED case got a directory"
    t=$d/$(id_of "$d" three)
    [ "$(field "$t/result.json" stage)" = validate ] || fail "CONFIG_ERROR not recorded at validation"
    [ -e "$t/rank0.err" ] && fail "a CONFIG_ERROR case was launched"
    c=$d/$(id_of "$d" "dp=2 attention=math device=cpu")
    grep -q '"failed_rank":[[:space:]]*1' "$c/result.json" || fail "the crashing rank is not recorded"
    grep -q 'crashing as asked' "$c/result.json" || fail "the crashing rank's stderr is not recorded"
    field "$c/result.json" reason | grep -q 'rank 1 of 2.*SIGSEGV' || fail "crash reason: $(field "$c/result.json" reason)"
    h=$d/$(id_of "$d" "dp=2 attention=flash device=cpu")
    grep -q '"running_at_deadline":[[:space:]]*true' "$h/result.json" || fail "hung ranks not recorded"
    grep -q 'hanging as asked' "$h/result.json" || fail "the hung ranks' stderr is not recorded"
    # no rank survives
    sleep 0.5
    pgrep -f "$res/outcomes" >/dev/null && { pgrep -af "$res/outcomes"; fail "ranks left running"; }
    # every failure expected -> exit 0 (a fresh results dir)
    cat >>"$scratch/o.yaml" <<'EOF'
  - {dp: 2, label: CRASH}
  - {dp: 2, attention: flash, label: HANG}
  - {dp: 1, attention: flash, label: CONFIG_ERROR}
  - {device: "cuda:NoSuchGPU-42", label: SKIPPED}
EOF
    "$repro" --matrix "$scratch/o.yaml" --results "$scratch/r2" --progress plain --worker-exe "$fake" \
        >"$scratch/out2" 2>&1
    rc=$?
    cat "$scratch/out2"
    [ $rc -eq 0 ] || fail "exit $rc with every outcome expected"
    # the lock: a second sweep on the same directory is refused while one runs
    flock "$res/outcomes/.lock" sleep 3 &
    lp=$!
    sleep 0.5
    "$repro" --matrix "$scratch/o.yaml" --results "$res" --progress plain 2>"$scratch/err"
    rc=$?
    wait $lp
    [ $rc -eq 1 ] || fail "a locked results dir: exit $rc"
    grep -q "is in use by another sweep" "$scratch/err" || fail "no lock message"
    ;;
resume)
    cat >"$scratch/r.yaml" <<'EOF'
name: resume
base: {model: dit-tiny, steps: 3, backend: gloo}
seeds: [0, 1]
axes:
  dp: [1, 2]
reference: {dp: 1}
timeout: 60
EOF
    export REPRO_TEST_REPRO="$repro"
    REPRO_TEST_FAULT='crash:"dp=2"' "$repro" --matrix "$scratch/r.yaml" --results "$res" --progress plain \
        --worker-exe "$fake" >"$scratch/o1" 2>&1
    cat "$scratch/o1"
    d=$res/resume
    ref=$d/$(id_of "$d" dp=1) two=$d/$(id_of "$d" dp=2)
    [ "$(status_of "$d" dp=2)" = CRASH ] || fail "no crash"
    s_ref=$(field "$ref/result.json" run_stamp) s_two=$(field "$two/result.json" run_stamp)
    # resume: nothing is rerun, the crash included
    out=$("$repro" --matrix "$scratch/r.yaml" --results "$res" --progress plain 2>/dev/null)
    echo "$out"
    echo "$out" | grep -q '0 run now, 2 from earlier runs' || fail "resume reran something"
    [ "$(field "$two/result.json" run_stamp)" = "$s_two" ] || fail "the CRASH was recomputed"
    # --retry-failed reruns only the failure
    out=$("$repro" --matrix "$scratch/r.yaml" --results "$res" --progress plain --retry-failed 2>/dev/null)
    echo "$out"
    echo "$out" | grep -q '1 run now, 1 from earlier runs' || fail "--retry-failed did not rerun just the crash"
    [ "$(status_of "$d" dp=2)" = ok ] || fail "the retried case is not ok"
    [ "$(field "$ref/result.json" run_stamp)" = "$s_ref" ] || fail "--retry-failed recomputed the reference"
    grep -q "\"run_stamp\":[[:space:]]*\"$s_ref\"" "$two/metrics.json" || fail "metrics not against the reference run"
    # rerun only the reference: the case is kept, its metrics follow the new reference run
    s_two=$(field "$two/result.json" run_stamp)
    "$repro" --matrix "$scratch/r.yaml" --results "$res" --progress plain --rerun --filter dp=1 >/dev/null 2>&1 ||
        fail "--rerun --filter dp=1"
    s_ref2=$(field "$ref/result.json" run_stamp)
    [ "$s_ref2" != "$s_ref" ] || fail "--rerun did not recompute the reference"
    "$repro" --matrix "$scratch/r.yaml" --results "$res" --progress plain >/dev/null 2>&1 || fail "resume"
    [ "$(field "$two/result.json" run_stamp)" = "$s_two" ] || fail "the case was recomputed"
    grep -q "\"run_stamp\":[[:space:]]*\"$s_ref2\"" "$two/metrics.json" || fail "stale metrics were not refreshed"
    # --rerun recomputes everything
    out=$("$repro" --matrix "$scratch/r.yaml" --results "$res" --progress plain --rerun 2>/dev/null)
    echo "$out" | grep -q '2 run now, 0 from earlier runs' || fail "--rerun"
    # a stored result stands only for the very case it was made for, by this very build: the
    # id is a hash, so resume compares the stored case.json in full, and the build id
    s_two=$(field "$two/result.json" run_stamp) s_ref=$(field "$ref/result.json" run_stamp)
    sed -i 's/"steps":[[:space:]]*3/"steps": 4/' "$two/case.json"
    grep -q '"steps": 4' "$two/case.json" || fail "the test could not edit case.json"
    sed -i 's/"build_id":[[:space:]]*"[^"]*"/"build_id": "0123456789abcdef"/' "$ref/result.json"
    "$repro" --matrix "$scratch/r.yaml" --results "$res" --progress plain >"$scratch/o3" 2>"$scratch/e3"
    cat "$scratch/o3" "$scratch/e3"
    grep -q '2 run now, 0 from earlier runs' "$scratch/o3" || fail "stale stored results were reused"
    grep -q "is rerun: its case.json is not the case the matrix gives now" "$scratch/e3" || fail "no stale-case message"
    grep -q "is rerun: it was made by another build" "$scratch/e3" || fail "no other-build message"
    [ "$(field "$two/result.json" run_stamp)" != "$s_two" ] || fail "the edited case.json's result was kept"
    [ "$(field "$ref/result.json" run_stamp)" != "$s_ref" ] || fail "another build's result was kept"
    out=$("$repro" --matrix "$scratch/r.yaml" --results "$res" --progress plain 2>/dev/null)
    echo "$out" | grep -q '0 run now, 2 from earlier runs' || fail "the rerun results were not kept"
    ls -a "$d" | grep -q '^\.tmp' && fail "temporary directories left"
    ;;
repeat)
    cat >"$scratch/p.yaml" <<'EOF'
name: rep
base: {model: dit-tiny, steps: 3, backend: gloo}
seeds: [0, 1]
axes: {dp: [1, 2]}
reference: {dp: 1}
repeat: 2
EOF
    out=$("$repro" --matrix "$scratch/p.yaml" --results "$res" --progress plain --no-report 2>/dev/null)
    rc=$?
    echo "$out"
    [ $rc -eq 0 ] || fail "exit $rc"
    [ "$(echo "$out" | grep -c 'repeats identical')" -eq 2 ] || fail "repeats are not reported identical"
    # --no-report: no reports, and no line naming one
    [ ! -e "$res/rep/report" ] || fail "--no-report wrote $res/rep/report"
    echo "$out" | grep -q '^report: ' && fail "--no-report printed a report path"
    for c in "$res"/rep/*/; do
        [ -s "$c/repeat-2/latents.safetensors" ] || fail "$c: no second run"
        grep -q '"repeats"' "$c/metrics.json" || fail "$c: no repeat comparison"
    done
    ;;
golden)
    m=$src/matrices/smoke.yaml
    "$repro" golden record --matrix "$m" --store "$scratch/store" --results "$res" --progress plain \
        >"$scratch/o1" 2>&1 || { cat "$scratch/o1"; fail "golden record"; }
    cat "$scratch/o1"
    grep -q 'recorded 1 golden(s)' "$scratch/o1" || fail "not one golden (smoke has one reference)"
    g=$(ls "$scratch/store")
    for f in case.json env.json result.json latents.safetensors image-0.png golden.json; do
        [ -s "$scratch/store/$g/$f" ] || fail "golden without $f"
    done
    "$repro" golden list --store "$scratch/store" | grep -q "^$g  dit-digits" || fail "golden list"
    # another matrix with the same reference config (another name, dir, case labels) finds it
    sed -e 's/^name: smoke/name: other/' "$m" >"$scratch/other.yaml"
    out=$("$repro" --matrix "$scratch/other.yaml" --results "$scratch/r2" --golden "$scratch/store" \
        --progress plain 2>/dev/null)
    rc=$?
    echo "$out"
    [ $rc -eq 0 ] || fail "exit $rc"
    [ "$(echo "$out" | grep -c 'golden max-abs')" -eq 4 ] || fail "not every case compared with the golden"
    for c in "$scratch"/r2/other/*/; do
        [ "$(basename "$c")" = report ] && continue # the sweep's reports, not a case
        grep -q '"vs_golden"' "$c/golden.json" || fail "$c: no golden.json"
    done
    # the reference is the same config on the same machine: bitwise equal to its golden
    echo "$out" | grep '(ref)' | grep -q 'golden max-abs 0 PSNR inf' || fail "reference differs from its golden"
    # another machine: a golden recorded under other GEMM kernels (OpenBLAS's kernel set
    # forced, as another CPU would pick) is drift, never a bug, for every case of a bf16 sweep
    # (the nightly's cross-hardware comparison, on the CPU)
    own=$("$repro" env | sed -n 's/^[[:space:]]*"core":[[:space:]]*"\([^"]*\)".*/\1/p' | head -1)
    flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    other=
    for c in Sandybridge Nehalem Haswell Prescott; do
        case $c in Sandybridge) f=avx ;; Nehalem) f=sse4_2 ;; Haswell) f=avx2 ;; Prescott) f=pni ;; esac
        case $flags in *" $f "*) ;; *) continue ;; esac
        [ "$(echo "$c" | tr 'A-Z' 'a-z')" = "$(echo "$own" | tr 'A-Z' 'a-z')" ] || { other=$c; break; }
    done
    [ -n "$other" ] || fail "no OpenBLAS kernel set other than $own runs here"
    # (smoke's tolerances are an fp32 sweep's: bf16's own rounding is no failure here)
    sed -e 's/^name: smoke/name: xhw/' -e 's/^  precision: fp32/  precision: bf16/' -e '/^tolerances:/,$d' "$m" \
        >"$scratch/xhw.yaml"
    grep -q 'precision: bf16' "$scratch/xhw.yaml" || fail "the bf16 matrix was not made"
    OPENBLAS_CORETYPE=$other "$repro" golden record --matrix "$scratch/xhw.yaml" --store "$scratch/xstore" \
        --results "$scratch/rx1" --progress plain >"$scratch/o3" 2>&1 || { cat "$scratch/o3"; fail "golden record under $other"; }
    out=$("$repro" --matrix "$scratch/xhw.yaml" --results "$scratch/rx2" --golden "$scratch/xstore" --progress plain 2>/dev/null)
    rc=$?
    echo "golden recorded with $other kernels, compared with $own's:"
    echo "$out"
    [ $rc -eq 0 ] || fail "exit $rc against a golden of other kernels"
    [ "$(echo "$out" | grep -c 'vs golden: \(drift\|identical\)')" -eq 4 ] || fail "a case is not drift against the golden of other kernels"
    grep -q "\"core\":[[:space:]]*\"$other\"" "$scratch"/xstore/*/env.json || fail "the golden does not record $other's kernels"
    "$repro" golden list --store "$scratch/nostore" 2>/dev/null && fail "a missing store is not an error"
    "$repro" golden frob 2>/dev/null
    [ $? -eq 2 ] || fail "an unknown golden action is not a usage error"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
echo "PASS: $mode"
