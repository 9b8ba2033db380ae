#!/bin/sh
# reports_cli.sh — `repro report`, `repro compare`, `repro history` on the
# synthetic store of make_tree.sh.
#   reports_cli.sh REPRO SCRATCH MODE TREE
# modes:
#   tree        builds TREE (make_tree.sh): the fixture of the other modes
#   report      the reports in RESULTS_DIR/report: every file, the schema version, the
#               verdict counts, red-first order, junit/summary parse (python3 when present),
#               a self-contained HTML, the terminal summary, --check, byte-identical rebuilds
#   no_gnuplot  REPRO_GNUPLOT="" (no gnuplot): reports written, plots listed as skipped
#   compare     run B against run A: identical / BUG / CRASH / SKIPPED per case, both hosts
#   history     --history DB twice per run (no duplicate), `repro history` runs and trend,
#               sparklines in report.html
#   usage       bad command lines -> 2, a missing directory -> 1, --help -> 0
set -u
repro=$1 scratch=$2 mode=$3 tree=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
have_py() { command -v python3 >/dev/null 2>&1; }
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
here=$(cd "$(dirname "$0")" && pwd)
[ "$mode" = tree ] || [ -d "$tree/a/rep" ] || fail "no tree at $tree (the cli.reports.tree fixture)"

# jq_py FILE EXPR: prints a Python expression over the parsed JSON j
jq_py() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

case "$mode" in
tree)
    sh "$here/make_tree.sh" "$repro" "$tree" || fail "make_tree.sh"
    ;;
report)
    cp -r "$tree/a" "$scratch/a" || exit 1
    out=$("$repro" report "$scratch/a/rep" --colour never 2>"$scratch/stderr")
    rc=$?
    echo "$out"
    cat "$scratch/stderr"
    [ $rc -eq 0 ] || fail "exit $rc"
    r=$scratch/a/rep/report
    for f in summary.json report.html report.md junit.xml images/rep-a000000000000004-0-diff.png; do
        [ -s "$r/$f" ] || fail "no $r/$f"
    done
    echo "$out" | grep -q '^rep: 15 cases, 6 failing$' || fail "terminal: no headline"
    echo "$out" | grep -q '^  BUG  *2 ' || fail "terminal: no BUG count"
    echo "$out" | grep -q '^failing:$' || fail "terminal: no failing list"
    echo "$out" | grep -q 'a000000000000004 dp=2 attention=flash .*blocks.3.attn breaks the envelope x812 at step 2' ||
        fail "terminal: no evidence line"
    # red first: BUG before CONFIG_ERROR before drift before SKIPPED
    echo "$out" | awk '/^  [A-Za-z_]+ +[0-9]+ /{print $1}' | tr '\n' ' ' |
        grep -q '^BUG MISMATCH CRASH HANG NONDETERMINISTIC CONFIG_ERROR approx unclassified drift identical SKIPPED $' ||
        fail "terminal: counts not red first"
    grep -q '"schema_version":[[:space:]]*1' "$r/summary.json" || fail "summary.json: no schema_version 1"
    grep -q '<testsuites name="repro: rep" tests="15" failures="6" errors="0" skipped="1"' "$r/junit.xml" ||
        fail "junit.xml: wrong totals"
    grep -q '\*\*6 of 15 cases failing\*\*' "$r/report.md" || fail "report.md: no headline"
    grep -q '^| 🔴 BUG | 2 |$' "$r/report.md" || fail "report.md: no BUG count"
    # self-contained: no fetched resource (every src is a data: URI)
    if grep -o 'src="[^"]\{0,12\}' "$r/report.html" | grep -v 'src="data:' | grep -q .; then
        fail "report.html loads a non-data: src"
    fi
    grep -q -i -E '<link|href="https?:|url\((["'"'"'])?https?:|@import' "$r/report.html" &&
        fail "report.html refers to an external resource"
    grep -q 'data:image/png;base64,' "$r/report.html" || fail "report.html has no inlined image"
    grep -q 'class="chip red">BUG</span>' "$r/report.html" || fail "report.html: no BUG chip"
    grep -q 'first failing layer' "$r/report.html" || fail "report.html: no first failing layer"
    grep -q 'worst layers' "$r/report.html" || fail "report.html: no worst layers"
    grep -q 'against the golden' "$r/report.html" || fail "report.html: no golden verdict"
    grep -q 'crash: rank 1 of 2 failed first' "$r/report.html" || fail "report.html: no crash reason"
    grep -q 'rank 1: all_to_all &lt;&amp;&gt; shape mismatch' "$r/report.html" || fail "report.html: stderr not escaped"
    if command -v gnuplot >/dev/null 2>&1; then
        for p in psnr_vs_degree ssim_vs_degree quality_vs_warmup changed_by_attention steps_a000000000000004; do
            [ -s "$r/plots/$p.svg" ] && [ -s "$r/plots/$p.png" ] || fail "no plot $p"
        done
        grep -q 'data:image/svg+xml;base64,' "$r/report.html" || fail "report.html: plots not inlined"
    fi
    if have_py; then
        python3 - "$r/summary.json" "$r/junit.xml" <<'EOF' || fail "summary.json / junit.xml content"
import json, sys, xml.etree.ElementTree as ET
j = json.load(open(sys.argv[1]))
assert j["schema_version"] == 1 and j["kind"] == "run", j.get("kind")
assert j["totals"] == {"cases": 15, "failing": 6, "passing": 9}, j["totals"]
c = {k: v for k, v in j["counts"].items() if v}
assert c == {"BUG": 2, "MISMATCH": 1, "CRASH": 1, "HANG": 1, "NONDETERMINISTIC": 1, "CONFIG_ERROR": 1,
             "approx": 2, "unclassified": 3, "drift": 1, "identical": 1, "SKIPPED": 1}, c
assert list(j["counts"])[0] == "BUG"
by = {x["id"]: x for x in j["cases"]}
b = by["a000000000000004"]
assert b["verdict"] == "BUG" and b["pass"] is False and b["verdict_source"] == "classification"
assert b["evidence"]["first_layer"]["name"] == "blocks.3.attn"
assert len(b["metrics"]["steps"]["local"]) == 6 and len(b["metrics"]["steps"]["envelope"]) == 6
assert len(b["metrics"]["steps"]["accumulated"]) == 7 and len(b["metrics"]["steps"]["envelope_accumulated"]) == 7
assert by["a000000000000002"]["golden"]["verdict"] == "drift" and by["a000000000000003"]["golden"] is None
assert b["config"]["dp"] == 2 and b["config"]["attention"] == "flash"
u = by["a000000000000005"]
assert u["verdict"] == "unclassified" and u["verdict_source"] == "provisional"
assert u["metrics"]["source"] == "report" and len(u["metrics"]["images"]) == 2
assert by["a000000000000007"]["pass"] is True and by["a000000000000007"]["expected"] == "CONFIG_ERROR"
assert by["a000000000000040"]["config"] is None and by["a000000000000040"]["verdict"] == "SKIPPED"
assert j["axes"] == ["degrees", "attention"], j["axes"]
assert isinstance(j["environments"], list) and len(j["environments"]) == 1
t = ET.parse(sys.argv[2]).getroot()
cases = t.findall("./testsuite/testcase")
assert len(cases) == 15
assert len([x for x in cases if x.find("failure") is not None]) == 6
assert len([x for x in cases if x.find("skipped") is not None]) == 1
f = [x for x in cases if "a000000000000004" in x.get("name")][0].find("failure")
assert f.get("type") == "BUG" and "x812" in f.get("message")
EOF
    fi
    # --check: failing cases -> 1; rebuilt elsewhere: the same bytes
    "$repro" report "$scratch/a/rep" --out "$scratch/again" --check --quiet
    rc=$?
    [ $rc -eq 1 ] || fail "--check: exit $rc, want 1"
    for f in summary.json report.html report.md junit.xml; do
        cmp -s "$r/$f" "$scratch/again/$f" || fail "$f differs when rebuilt"
    done
    for f in "$r"/plots/*.svg "$r"/plots/*.png "$r"/plots/plots.gp; do
        [ -e "$f" ] || continue
        cmp -s "$f" "$scratch/again/plots/$(basename "$f")" || fail "$(basename "$f") differs when rebuilt"
    done
    # a results root holding the matrix directory gives the same cases
    "$repro" report "$scratch/a" --out "$scratch/root" --quiet || fail "report of the results root"
    grep -v 'name="source"' "$r/junit.xml" >"$scratch/j1"
    grep -v 'name="source"' "$scratch/root/junit.xml" >"$scratch/j2"
    cmp -s "$scratch/j1" "$scratch/j2" || fail "root and matrix dir give different reports"
    ;;
no_gnuplot)
    REPRO_GNUPLOT= "$repro" report "$tree/a/rep" --out "$scratch/out" --quiet || fail "exit $?"
    o=$scratch/out
    for f in summary.json report.html report.md junit.xml; do [ -s "$o/$f" ] || fail "no $f"; done
    ls "$o"/plots/*.svg >/dev/null 2>&1 && fail "plots written without gnuplot"
    grep -q '"status":[[:space:]]*"skipped"' "$o/summary.json" || fail "plots not listed as skipped"
    grep -q '"status":[[:space:]]*"written"' "$o/summary.json" && fail "a plot listed as written"
    grep -q 'gnuplot not found' "$o/summary.json" || fail "no reason in summary.json"
    grep -q 'gnuplot not found' "$o/report.html" || fail "no reason in report.html"
    grep -q 'skipped (gnuplot not found' "$o/report.md" || fail "no reason in report.md"
    # a gnuplot that fails: the same, with its message
    printf '#!/bin/sh\necho "line 1: some error" >&2\nexit 1\n' >"$scratch/badplot"
    chmod +x "$scratch/badplot"
    REPRO_GNUPLOT=$scratch/badplot "$repro" report "$tree/a/rep" --out "$scratch/bad" --quiet || fail "exit $?"
    grep -q 'gnuplot: line 1: some error' "$scratch/bad/summary.json" || fail "no gnuplot error in summary.json"
    ;;
compare)
    out=$("$repro" compare "$tree/a/rep" "$tree/b/rep" --out "$scratch/cmp" --colour never)
    rc=$?
    echo "$out"
    [ $rc -eq 0 ] || fail "exit $rc"
    c=$scratch/cmp
    for f in summary.json report.html report.md junit.xml; do [ -s "$c/$f" ] || fail "no $f"; done
    grep -q '"kind":[[:space:]]*"compare"' "$c/summary.json" || fail "not a comparison"
    echo "$out" | grep -q 'a000000000000003 dp=2 attention=math .*B differs from A beyond the bounds' ||
        fail "dp=2 math (items swapped on B) is not a BUG"
    echo "$out" | grep -q 'a000000000000006 .*CRASH on both' || fail "CRASH on both not reported"
    grep -q 'vm-a' "$c/report.html" && grep -q 'vm-b' "$c/report.html" || fail "report.html lacks both hosts"
    if have_py; then
        python3 - "$c/summary.json" <<'EOF' || fail "compare summary.json content"
import json, sys
j = json.load(open(sys.argv[1]))
by = {x["id"]: x for x in j["cases"]}
assert by["a000000000000001"]["verdict"] == "identical"
assert by["a000000000000002"]["verdict"] == "identical"
assert by["a000000000000003"]["verdict"] == "BUG" and by["a000000000000003"]["pass"] is False
assert by["a000000000000004"]["verdict_a"] == "BUG" and by["a000000000000004"]["verdict"] == "identical"
assert by["a000000000000030"]["verdict"] == "SKIPPED" and "only in run A" in by["a000000000000030"]["evidence"]["summary"]
assert by["a000000000000031"]["verdict"] == "SKIPPED" and "only in run B" in by["a000000000000031"]["evidence"]["summary"]
assert by["a000000000000007"]["verdict"] == "CONFIG_ERROR" and by["a000000000000007"]["pass"] is True
assert len(j["environments"]) == 2
assert j["sources"][0].endswith("a/rep") and j["sources"][1].endswith("b/rep")
EOF
    fi
    # the default output directory
    (cd "$scratch" && "$repro" compare "$tree/a/rep" "$tree/b/rep" --quiet --no-plots) || fail "default --out"
    [ -s "$scratch/compare-rep-vs-rep/report.html" ] || fail "no compare-rep-vs-rep/report.html"
    ;;
history)
    db=$scratch/history.sqlite
    "$repro" report "$tree/a/rep" --history "$db" --out "$scratch/ra" --quiet --no-plots || fail "report a"
    "$repro" report "$tree/b/rep" --history "$db" --out "$scratch/rb" --quiet --no-plots || fail "report b"
    "$repro" report "$tree/a/rep" --history "$db" --out "$scratch/ra2" --quiet --no-plots || fail "report a again"
    runs=$("$repro" history "$db")
    echo "$runs"
    [ "$(echo "$runs" | grep -c 'rep$')" -eq 2 ] || fail "want 2 runs (a rebuilt report replaces its run)"
    echo "$runs" | head -1 | grep -q 'run  *finished  *git' || fail "no header"
    t=$("$repro" history "$db" --case a000000000000003 --metric psnr)
    echo "$t"
    echo "$t" | grep -q '^case a000000000000003: psnr over 2 runs$' || fail "trend header"
    echo "$t" | grep -q '^trend: ' || fail "no sparkline"
    [ "$(echo "$t" | grep -c 'unclassified')" -eq 2 ] || fail "want the verdict per run"
    t=$("$repro" history "$db" --case "dp=2 attention=flash" --metric first_layer_ratio --last 1)
    echo "$t" | grep -q ' 812$' || fail "first_layer_ratio by case name: $t"
    "$repro" history "$db" --case a0000000000000 2>"$scratch/err"
    [ $? -eq 1 ] && grep -q 'matches' "$scratch/err" || fail "an ambiguous prefix is not an error"
    "$repro" history "$db" --case a000000000000003 --metric bogus 2>/dev/null
    [ $? -eq 2 ] || fail "an unknown metric is not a usage error"
    "$repro" history "$scratch/nope.sqlite" 2>/dev/null
    [ $? -eq 1 ] || fail "a missing database is not an error"
    grep -q '<svg class="spark"' "$scratch/rb/report.html" || fail "no sparkline in report.html"
    grep -q 'over the last 2 runs' "$scratch/rb/report.html" || fail "sparkline does not cover 2 runs"
    ;;
usage)
    expect() {
        want=$1
        shift
        "$repro" "$@" >/dev/null 2>"$scratch/err"
        rc=$?
        echo "  [$rc] repro $*: $(head -1 "$scratch/err")"
        [ $rc -eq "$want" ] || fail "repro $*: exit $rc, want $want"
    }
    expect 2 report
    expect 2 report "$tree/a/rep" "$tree/b/rep"
    expect 2 report "$tree/a/rep" --bogus
    expect 2 report "$tree/a/rep" --colour sometimes
    expect 1 report "$scratch/no-such-dir"
    grep -q 'no such results directory' "$scratch/err" || fail "missing dir: message"
    mkdir -p "$scratch/empty"
    expect 1 report "$scratch/empty"
    grep -q 'holds no results' "$scratch/err" || fail "empty dir: message"
    expect 2 compare "$tree/a/rep"
    expect 2 compare "$tree/a/rep" "$tree/b/rep" --psnr-min x
    expect 2 history
    expect 0 report --help
    expect 0 compare --help
    expect 0 history --help
    "$repro" --help | grep -q '^  report ' || fail "report not in repro --help"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
echo "ok: $mode"
