#!/bin/sh
# nightly_cli.sh — ci/nightly.sh end to end on a tiny matrix (ctest matrix.shipped.nightly_script,
# label matrix): two "machines" sharing one RESULTS_ROOT, the second emulated by another
# OpenBLAS kernel set (OPENBLAS_CORETYPE=Haswell: other GEMM arithmetic, as on another CPU).
#
#   nightly_cli.sh REPRO SCRATCH SOURCE_DIR
#
#   night 1 on hostA   records hostA's goldens, compares with them, report + history, exit 0
#   night 1 on hostB   records hostB's goldens, compares with its own and with hostA's (the
#                      cross-hardware run: golden verdicts pass), `repro compare` with hostA's
#                      latest night, exit 0
#   night 2 on hostA   does not record again; compares with hostB's goldens too; the history
#                      holds two runs and the changes since the previous night are listed
#   a regression       the same matrix with a planted fault expected to be drift: exit 1,
#                      the case named in regressions.txt
#   usage              a bad tag: exit 2
set -u
repro=$1 scratch=$2 src=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
py=${REPRO_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=$(command -v python3)
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
root=$scratch/root
cat >"$scratch/nt.yaml" <<'EOF'
name: nt
base: {model: dit-tiny, steps: 3, sampler: ddim, cfg: 4.0, threads: 1, backend: gloo, expect: drift}
seeds: [0, 1]
classes: [207]
include:
  - {backend: self, name: "serial"}
  - {dp: 2, name: "dp=2"}
  - {ring: 2, name: "ring=2"}
timeout: 300
EOF
sed -e 's/^timeout: 300/  - {dp: 2, inject: timestep-skew, name: "dp=2 timestep-skew (planted)"}\ntimeout: 300/' \
    "$scratch/nt.yaml" >"$scratch/nt-regress.yaml"
export REPRO="$repro" NIGHTLY_MATRICES="$scratch/nt.yaml" NIGHTLY_KEEP=2
export REPRO_CACHE=${REPRO_CACHE:-$scratch/cache}

night() { # night TAG [env...]: runs ci/nightly.sh, prints its output, sets $rc
    t=$1; shift
    env "$@" sh -c '"$0" "$1" "$2"' "$src/ci/nightly.sh" "$t" "$root" >"$scratch/out-$t.txt" 2>&1
    rc=$?
    sed "s/^/[$t] /" "$scratch/out-$t.txt"
}

# ---- night 1 on hostA -----------------------------------------------------------------------------
night hostA
[ $rc -eq 0 ] || fail "hostA night 1 exited $rc"
A=$root/hostA
[ -L "$A/latest" ] && [ -d "$A/latest/results/nt" ] || fail "hostA: no latest night"
[ -f "$A/golden/.recorded-nt" ] || fail "hostA: goldens not recorded"
ls "$A"/golden/*/golden.json >/dev/null 2>&1 || fail "hostA: no golden.json in the store"
for f in report.html report.md summary.json junit.xml; do
    [ -s "$A/latest/reports/nt/$f" ] || fail "hostA: no reports/nt/$f"
done
[ -s "$A/latest/reports/nt-vs-self/summary.json" ] || fail "hostA: no comparison with its own goldens"
[ -s "$A/history.sqlite" ] || fail "hostA: no history database"
rec=$(cat "$A/golden/.recorded-nt")

# ---- night 1 on hostB (another kernel set) ----------------------------------------------------------
night hostB OPENBLAS_CORETYPE=Haswell
[ $rc -eq 0 ] || fail "hostB night 1 exited $rc"
B=$root/hostB
[ -f "$B/golden/.recorded-nt" ] || fail "hostB: goldens not recorded"
s=$B/latest/reports/nt-vs-hostA/summary.json
[ -s "$s" ] || fail "hostB: no comparison with hostA's goldens"
[ -s "$B/latest/compare/nt-vs-hostA/summary.json" ] || fail "hostB: no repro compare with hostA's latest night"
"$py" - "$s" "$B/latest/env.json" <<'EOF' || exit 1
import json, sys
s = json.load(open(sys.argv[1]))
gs = [(c["name"], c.get("golden")) for c in s["cases"]]
print("hostB against hostA's goldens:")
for n, g in gs:
    print("  %-10s %s" % (n, "-" if not g else "%s (%s)" % (g.get("verdict"), g.get("summary"))))
missing = [n for n, g in gs if not g]
if missing:
    print("FAIL: no golden verdict for %s" % missing, file=sys.stderr); sys.exit(1)
bad = [n for n, g in gs if not g.get("pass")]
if bad:
    print("FAIL: golden verdicts fail for %s" % bad, file=sys.stderr); sys.exit(1)
EOF
grep -q '"core":[[:space:]]*"Haswell"' "$B/latest/results/nt/"*/env.json 2>/dev/null ||
    grep -rq 'Haswell' "$B/latest/results/nt/" || fail "hostB did not run with the Haswell kernels"

# ---- night 2 on hostA --------------------------------------------------------------------------------
night hostA
[ $rc -eq 0 ] || fail "hostA night 2 exited $rc"
[ "$(cat "$A/golden/.recorded-nt")" = "$rec" ] || fail "hostA: goldens recorded again"
[ -s "$A/latest/reports/nt-vs-hostB/summary.json" ] || fail "hostA night 2: no comparison with hostB's goldens"
grep -q "nt: 0 verdict(s) changed since the previous night" "$A/latest/changes.txt" ||
    fail "hostA night 2: changes since the previous night not listed: $(cat "$A/latest/changes.txt")"
n=$("$repro" history "$A/history.sqlite" 2>/dev/null | grep -c " nt$")
[ "$n" -ge 2 ] || { "$repro" history "$A/history.sqlite"; fail "hostA: $n runs in the history, want 2"; }

# ---- a regression ---------------------------------------------------------------------------------------
night hostA NIGHTLY_MATRICES="$scratch/nt-regress.yaml"
[ $rc -eq 1 ] || fail "a planted fault expected as drift: exit $rc, want 1"
grep -q "dp=2 timestep-skew (planted)" "$A/latest/regressions.txt" ||
    fail "regressions.txt does not name the case: $(cat "$A/latest/regressions.txt")"
[ "$(ls -1d "$A"/runs/*/ | wc -l)" -eq 2 ] || fail "NIGHTLY_KEEP=2: $(ls -1d "$A"/runs/*/ | wc -l) nights kept"

# ---- usage ------------------------------------------------------------------------------------------------
"$src/ci/nightly.sh" "bad/tag" "$root" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a bad tag is not a usage error"
echo ok
