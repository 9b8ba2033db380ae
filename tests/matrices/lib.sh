# lib.sh — shared by the shipped-matrix tests (tests/matrices/<matrix>.sh, sourced, POSIX sh).
#
# Each test is   <matrix>.sh REPRO SCRATCH SOURCE_DIR [MODE]   with MODE
#   cpu (default)   run the matrix's CPU part (--filter device=cpu; references are kept) into
#                   SCRATCH/results, require exit 0 (every verdict what the matrix expects),
#                   rebuild the report (SCRATCH/report) and run the scenario's own checks
#   gpu             run the GPU part (--filter device=cuda): exit 77 (skipped) when every GPU
#                   case is SKIPPED (no GPU, too few, or no NCCL) or the engine of this build
#                   has no CUDA compute path; otherwise require exit 0 and the scenario checks
#   explain DIR     print the scenario's table for a finished run (DIR = results/<matrix>),
#                   check nothing
#   md DIR          the same table as Markdown on stdout, the README's (the text goes to
#                   stderr); docs/scenarios/tables.sh runs every scenario this way
# The sweep's table and the scenario's table are printed, so a failing ctest log says why.
# JSON is read with Python's standard library ($REPRO_PYTHON, default /usr/bin/python3).

set -u
repro=$1 scratch=$2 src=$3 mode=${4:-cpu}
explain_dir=${5:-}
py=${REPRO_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=$(command -v python3 || echo python3)
fail() { echo "FAIL: $*" >&2; exit 1; }
unset REPRO_RANK REPRO_WORLD REPRO_LOCAL_RANK REPRO_STORE_DIR RANK WORLD_SIZE LOCAL_RANK

# run_matrix NAME: the sweep of MODE's part, then the report. Sets $results (the matrix's
# result directory), $summary (the report's summary.json) and $sweep_rc.
run_matrix() {
    name=$1
    m=$src/matrices/$name.yaml
    [ -f "$m" ] || fail "$m is missing"
    if [ "$mode" = explain ] || [ "$mode" = md ]; then
        [ -n "$explain_dir" ] && [ -d "$explain_dir" ] || fail "$mode: no results directory '$explain_dir'"
        results=$explain_dir
        mkdir -p "$scratch" || exit 1
        "$repro" report "$results" --out "$scratch/report" --quiet --no-plots || fail "repro report: exit $?"
        summary=$scratch/report/summary.json
        sweep_rc=0
        return 0
    fi
    case $mode in
        cpu) filt=device=cpu ;;
        gpu) filt=device=cuda ;;
        *) echo "usage: $0 REPRO SCRATCH SOURCE_DIR [cpu|gpu|explain RESULTS_DIR|md RESULTS_DIR]" >&2; exit 2 ;;
    esac
    rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
    if [ "$mode" = gpu ]; then
        # nothing to check (and no reference to compute) when every GPU case that is compared
        # with a reference is SKIPPED here: a reference alone (its reference column "self",
        # e.g. a GPU one on a one-GPU machine whose NCCL layouts need more) judges nothing
        "$repro" --matrix "$m" --filter "$filt" --dry-run --results "$scratch/none" >"$scratch/dry.txt" 2>&1 ||
            { cat "$scratch/dry.txt"; fail "--dry-run exited $?"; }
        # (the filter leaves the GPU cases and the references they need; names are free text)
        compared=$(grep -E '^[0-9a-f]{16}  ' "$scratch/dry.txt" | grep -Ev ' [0-9]+ +self +')
        if ! echo "$compared" | grep -v '^$' | grep -vq ' SKIPPED: '; then
            echo "SKIP: every compared GPU case of $name is SKIPPED here:" \
                "$(echo "$compared" | grep -m1 -o 'SKIPPED: .*')"
            exit 77
        fi
    fi
    t0=$(date +%s)
    "$repro" --matrix "$m" --filter "$filt" --results "$scratch/results" --progress plain \
        >"$scratch/sweep.log" 2>&1
    sweep_rc=$?
    t1=$(date +%s)
    grep -v '^\[' "$scratch/sweep.log"
    echo "sweep: exit $sweep_rc after $((t1 - t0)) s"
    results=$scratch/results/$name
    [ -d "$results" ] || {
        [ "$mode" = gpu ] && grep -q "SKIPPED" "$scratch/sweep.log" && ! grep -q " ok \| CONFIG_ERROR \| CRASH \| HANG " "$scratch/sweep.log" &&
            { echo "SKIP: no GPU case can run on this machine"; exit 77; }
        fail "no results at $results"
    }
    "$repro" report "$results" --out "$scratch/report" --quiet || fail "repro report: exit $?"
    summary=$scratch/report/summary.json
    [ -s "$summary" ] || fail "no $summary"
    if [ "$mode" = gpu ]; then
        # skipped unless some GPU case really ran (or failed for a reason other than absence)
        "$py" - "$summary" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
gpu = [c for c in s["cases"] if ((c.get("config") or {}).get("device") or "cpu") != "cpu"
       or (c.get("config") is None and c["name"].startswith("gpu"))]
ran = [c for c in gpu if c["status"] != "SKIPPED"]
nocuda = [c for c in ran if "runs on the CPU in this build" in ((c.get("evidence") or {}).get("reason") or "")]
if not ran:
    print("SKIP: every GPU case is SKIPPED here (%d): %s" % (len(gpu), (gpu[0]["evidence"].get("reason") if gpu else "none")))
    sys.exit(77)
if len(nocuda) == len(ran):
    print("SKIP: a GPU is visible but this build's engine runs on the CPU only (%d cases)" % len(ran))
    sys.exit(77)
EOF
        r=$?
        [ $r -eq 77 ] && exit 77
    fi
    [ $sweep_rc -eq 0 ] || fail "the sweep exited $sweep_rc: some verdict is not what the matrix expects (table above)"
    return 0
}
