#!/usr/bin/env bash
# ci/nightly.sh — the nightly cross-hardware run.
#
#   ci/nightly.sh [--launcher local|srun|mpirun [--hostfile FILE] [--ranks-per-node K]]
#                 HOSTNAME-TAG RESULTS_ROOT
#
# --launcher and its options go to every sweep and golden recording, as `repro --matrix`
# takes them (README "Running a sweep on a cluster"): with srun, run this script inside
# the allocation (sbatch / salloc); NIGHTLY_LAUNCHER, NIGHTLY_HOSTFILE and
# NIGHTLY_RANKS_PER_NODE set the same from the environment (the options win).
#
# HOSTNAME-TAG names this machine in the shared RESULTS_ROOT (letters, digits, . _ -; e.g.
# "ci-epyc-l4" or "$(hostname -s)-h200"); RESULTS_ROOT is a directory every nightly machine
# can read (NFS, a synced bucket, a CI artifact store mounted as a directory). Each night:
#   1. runs matrices/nightly.yaml on this machine into
#      RESULTS_ROOT/TAG/runs/STAMP/results/ (a fresh store: every case is recomputed);
#   2. writes the reports (RESULTS_ROOT/TAG/runs/STAMP/reports/<matrix>/: report.html,
#      report.md, summary.json, junit.xml, plots/) and appends the run to this machine's
#      history database RESULTS_ROOT/TAG/history.sqlite (`repro history` reads it; every
#      report.html draws each case's trend from it);
#   3. the first time (no RESULTS_ROOT/TAG/golden/.recorded-<matrix>), records this machine's
#      goldens: the references' outputs, RESULTS_ROOT/TAG/golden/ (`repro golden record`);
#   4. compares this night against the goldens of this machine (a regression over time on
#      the same hardware) and of every other machine found under RESULTS_ROOT (*/golden/: the
#      cross-hardware run): `repro --matrix M --golden DIR` classifies every case against
#      the golden of its reference (teacher-forced from the golden's trajectory, with this
#      machine's rounding envelope), reports in reports/<matrix>-vs-<other>/; and, for the
#      record, `repro compare` of the other machine's latest night with this one, case by
#      case (compare/<matrix>-vs-<other>/, informational);
#   5. lists the verdicts that changed since the previous night of this machine;
#   6. writes RESULTS_ROOT/TAG/runs/STAMP/regressions.txt, points RESULTS_ROOT/TAG/latest at
#      the night, keeps the last $NIGHTLY_KEEP nights, and exits
#        0  no regression: every case's verdict is what the matrix expects, here and against
#           every golden (SKIPPED cases, e.g. GPU parts on a machine without one, are fine)
#        1  regressions (listed on stdout and in regressions.txt)
#        2  usage, build or infrastructure errors (a sweep that could not run)
#
# Environment:
#   REPRO             the repro binary (default: $REPRO_BUILD_DIR/repro, built when missing)
#   REPRO_BUILD_DIR   build directory (default <repo>/build)
#   NIGHTLY_MATRICES  matrix files, space-separated (default: matrices/nightly.yaml;
#                     relative paths are from the repository)
#   NIGHTLY_KEEP      nights kept under runs/ (default 14; goldens and history are kept)
#   NIGHTLY_JOBS      passed as --jobs to the sweeps (default: the runner's packing)
#   NIGHTLY_TIMEOUT   passed as --timeout (seconds per run of a case)
#   REPRO_CACHE       synthetic weights cache (default: RESULTS_ROOT/TAG/cache)
# Scheduling: ci/nightly.cron (cron) or ci/nightly.gitlab-ci.yml (a CI pipeline); README.md.
set -uo pipefail

usage() {
    echo "usage: ci/nightly.sh [--launcher local|srun|mpirun [--hostfile FILE] [--ranks-per-node K]] HOSTNAME-TAG RESULTS_ROOT" >&2
    exit 2
}
launch_opts=()
launcher=${NIGHTLY_LAUNCHER:-} hostfile=${NIGHTLY_HOSTFILE:-} rpn=${NIGHTLY_RANKS_PER_NODE:-}
while [ $# -gt 0 ]; do
    case $1 in
    --launcher) [ $# -ge 2 ] || usage; launcher=$2; shift 2 ;;
    --hostfile) [ $# -ge 2 ] || usage; hostfile=$2; shift 2 ;;
    --ranks-per-node) [ $# -ge 2 ] || usage; rpn=$2; shift 2 ;;
    --*) usage ;;
    *) break ;;
    esac
done
[ -n "$launcher" ] && launch_opts+=(--launcher "$launcher")
[ -n "$hostfile" ] && launch_opts+=(--hostfile "$(cd "$(dirname "$hostfile")" && pwd)/$(basename "$hostfile")")
[ -n "$rpn" ] && launch_opts+=(--ranks-per-node "$rpn")
[ $# -eq 2 ] || usage
tag=$1 root_dir=$2
case $tag in ''|*[!A-Za-z0-9._-]*|.*) echo "nightly: bad HOSTNAME-TAG '$tag' (letters, digits, . _ -)" >&2; exit 2 ;; esac
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$root_dir" || exit 2
root_dir=$(cd "$root_dir" && pwd)

build=${REPRO_BUILD_DIR:-$repo/build}
repro=${REPRO:-$build/repro}
if [ ! -x "$repro" ]; then
    echo "nightly: building $repro" >&2
    cmake -S "$repo" -B "$build" >&2 && cmake --build "$build" -j "$(nproc)" --target repro >&2 || {
        echo "nightly: build failed" >&2; exit 2; }
fi
py=${REPRO_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=$(command -v python3) || { echo "nightly: python3 is needed" >&2; exit 2; }

me=$root_dir/$tag
stamp=$(date -u +%Y%m%dT%H%M%SZ)
while [ -e "$me/runs/$stamp" ]; do sleep 1; stamp=$(date -u +%Y%m%dT%H%M%SZ); done
night=$me/runs/$stamp
mkdir -p "$night/reports" "$night/compare" "$me/golden" || exit 2
export REPRO_CACHE=${REPRO_CACHE:-$me/cache}
unset REPRO_RANK REPRO_WORLD REPRO_LOCAL_RANK REPRO_STORE_DIR RANK WORLD_SIZE LOCAL_RANK
log=$night/nightly.log
exec > >(tee -a "$log") 2>&1
matrices=${NIGHTLY_MATRICES:-matrices/nightly.yaml}
sweep_opts=(--progress plain --no-report "${launch_opts[@]}") # the reports are written below, one per comparison
[ -n "${NIGHTLY_JOBS:-}" ] && sweep_opts+=(--jobs "$NIGHTLY_JOBS")
[ -n "${NIGHTLY_TIMEOUT:-}" ] && sweep_opts+=(--timeout "$NIGHTLY_TIMEOUT")

echo "nightly: $tag at $stamp, $(git -C "$repo" describe --always --dirty 2>/dev/null || echo '?'), repro $("$repro" --version 2>/dev/null | head -1)"
"$repro" env >"$night/env.json" 2>/dev/null || true
regress=$night/regressions.txt
: >"$regress"
infra=0

# failing NAME SUMMARY_JSON [golden]: appends "NAME: case [id]: verdict (expected X): evidence"
# for every failing case of a report's summary.json; with "golden", for every case whose
# verdict against the golden fails (its own verdict is listed by the own report)
failing() {
    "$py" - "$1" "$2" "${3:-own}" >>"$regress" <<'EOF'
import json, sys
what, path, kind = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    s = json.load(open(path))
except (OSError, ValueError) as e:
    print("%s: no report (%s)" % (what, e))
    sys.exit(0)
for c in s["cases"]:
    g = c.get("golden") or {}
    if kind == "golden":
        if not g or g.get("pass", True):
            continue
        v, ev = g.get("verdict"), g.get("summary") or ""
    else:
        if c.get("pass", True):
            continue
        ev = (c.get("evidence") or {}).get("summary") or (c.get("evidence") or {}).get("reason") or ""
        v = c["verdict"]
    print("%s: %s [%s]: %s (expected %s): %s" % (what, c["name"], c["id"], v, c.get("expected"), ev))
EOF
}

for mf in $matrices; do
    case $mf in /*) ;; *) mf=$repo/$mf ;; esac
    [ -f "$mf" ] || { echo "nightly: no matrix $mf" >&2; infra=1; continue; }
    m=$(sed -n 's/^name:[[:space:]]*\([A-Za-z0-9._-]*\).*/\1/p' "$mf" | head -1)
    [ -n "$m" ] || m=$(basename "$mf" .yaml)
    res=$night/results
    echo "== $m: sweep"
    "$repro" --matrix "$mf" --results "$res" --rerun "${sweep_opts[@]}"
    rc=$?
    [ $rc -le 1 ] || { echo "nightly: $m: the sweep exited $rc" >&2; infra=1; continue; }
    # own report first (it carries this night's own verdicts), appended to the history
    "$repro" report "$res/$m" --history "$me/history.sqlite" --out "$night/reports/$m" --quiet ||
        { echo "nightly: $m: repro report failed" >&2; infra=1; }
    [ $rc -eq 0 ] || failing "$m on $tag" "$night/reports/$m/summary.json"

    # goldens: recorded the first time
    if [ ! -e "$me/golden/.recorded-$m" ]; then
        echo "== $m: recording this machine's goldens in $me/golden"
        if "$repro" golden record --matrix "$mf" --store "$me/golden" --results "$res" --progress plain \
            "${launch_opts[@]}"; then
            date -u +%Y-%m-%dT%H:%M:%SZ >"$me/golden/.recorded-$m"
        else
            echo "nightly: $m: some golden could not be recorded (its reference failed)" >&2
        fi
    fi

    # against the goldens of this machine (over time) and of every other machine
    gdirs=("$me/golden")
    for d in "$root_dir"/*/; do
        [ "$(basename "$d")" = "$tag" ] || [ ! -d "${d}golden" ] || gdirs+=("${d%/}/golden")
    done
    for gdir in "${gdirs[@]}"; do
        other=$(basename "$(dirname "$gdir")")
        [ -e "$gdir/.recorded-$m" ] || { echo "== $m: $other has no goldens for $m yet"; continue; }
        who=$([ "$other" = "$tag" ] && echo "self" || echo "$other")
        echo "== $m: against the goldens of $other"
        "$repro" --matrix "$mf" --results "$res" --golden "$gdir" "${sweep_opts[@]}"
        grc=$?
        [ $grc -le 1 ] || { echo "nightly: $m vs $other: exited $grc" >&2; infra=1; continue; }
        "$repro" report "$res/$m" --out "$night/reports/$m-vs-$who" --quiet ||
            { echo "nightly: $m vs $other: repro report failed" >&2; infra=1; }
        [ $grc -eq 0 ] || failing "$m on $tag vs goldens of $other" "$night/reports/$m-vs-$who/summary.json" golden
        if [ "$other" != "$tag" ] && [ -d "$root_dir/$other/latest/results/$m" ]; then
            "$repro" compare "$root_dir/$other/latest/results/$m" "$res/$m" \
                --out "$night/compare/$m-vs-$other" --quiet ||
                echo "nightly: $m: repro compare with $other failed (informational)" >&2
        fi
    done
done

# verdicts that changed since this machine's previous night (informational)
"$py" - "$me/history.sqlite" <<'EOF' | tee "$night/changes.txt"
import sqlite3, sys
try:
    db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
    titles = [r[0] for r in db.execute("SELECT DISTINCT title FROM runs")]
except sqlite3.Error:
    sys.exit(0)
for t in titles:
    runs = [r[0] for r in db.execute("SELECT run_id FROM runs WHERE title = ? ORDER BY finished_at DESC, run_id DESC LIMIT 2", (t,))]
    if len(runs) < 2:
        print("%s: first night in the history" % t)
        continue
    q = "SELECT v.case_id, c.name, v.verdict, v.pass FROM verdicts v JOIN cases c USING (case_id) WHERE v.run_id = ?"
    now = {r[0]: r[1:] for r in db.execute(q, (runs[0],))}
    before = {r[0]: r[1:] for r in db.execute(q, (runs[1],))}
    ch = [(now[k][0], before[k][1], now[k][1]) for k in now if k in before and before[k][1] != now[k][1]]
    print("%s: %d verdict(s) changed since the previous night" % (t, len(ch)))
    for name, a, b in sorted(ch):
        print("  %s: %s -> %s" % (name, a, b))
EOF

ln -sfn "runs/$stamp" "$me/latest.tmp" && mv -T "$me/latest.tmp" "$me/latest"
keep=${NIGHTLY_KEEP:-14}
ls -1d "$me"/runs/*/ 2>/dev/null | sort | head -n -"$keep" | while read -r old; do rm -rf "$old"; done

n=$(grep -c . "$regress")
echo "nightly: reports in $night/reports, history $me/history.sqlite"
if [ "$n" -gt 0 ]; then
    echo "nightly: $n REGRESSION(S):"
    cat "$regress"
    exit 1
fi
[ $infra -eq 0 ] || { echo "nightly: infrastructure errors (above)"; exit 2; }
echo "nightly: no regressions"
exit 0
