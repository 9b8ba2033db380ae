#!/bin/sh
# classify_matrix.sh — the classifier's acceptance sets (label matrix): one sweep per model
# family (tests/classify/SET-{dit,sd3,flux}.yaml), each printing its table and confusion
# table; then `repro classify --table` over the three, whose confusion table (expected
# label x verdict) must be diagonal, and per set:
#   drift   every verdict identical or drift: zero BUG verdicts
#   corpus  the drift corpus (>= 500 cases: samplers, layouts, knobs, fp32 and bf16, normal
#           and sharpened weights): every verdict identical or drift
#   bugs    every fault a BUG (dp-rank-layout a MISMATCH) that starts where the case name
#           says after "=>": the first step, and the first layer@step; a deadlock (HANG,
#           "=> deadlock rank K") reported as one, naming rank K; a third word after "=>" the
#           evidence that decided the first step (self-check, replica, ...)
#   margins (drift, corpus, bugs) `repro classify --table` prints per precision the largest
#           ratio a drift case reached and the smallest ratio that decided a BUG; the line
#           (the factor) must stand at least 4x above the first and 4x below the second
#   approx  approx or drift (identical counts), and per family and strategy quality does
#           not fall as warmup grows beyond rounding (tests/common/rounding.py): the final
#           latents' rel-L2 e never grows by more than 2E (E: the case's rounding envelope
#           from the classifier's twins, same run) unless it is at rounding level (<= factor
#           x E), and the worst image's 8-bit RMS difference never by more than 2 levels
#           (8-bit rounding moves it by <= 1 level per image). (Before: PSNR never falls,
#           which fails on another CPU above ~80 dB: a level in a handful of pixels.)
#           Skipped (77) while pipefusion / patch are not in the build
#   invariant numerics: invariant (docs/invariant.md) on dit-tiny, sd3-tiny and flux-tiny
#           (set invariantxl: dit-xl-2-128 at depth 4, tests/classify/invariant-ditxl.yaml,
#           ~12 min on 2 cores), fp32 and bf16, every exact layout at
#           batches of 1, 3 and 8: every layout identical to its serial run, the planted faults
#           BUG (MISMATCH) however small; and batch composition: item i's whole trajectory is
#           bitwise the same in the serial runs of 1, 3 and 8 items (its noise is keyed by
#           (seed, index), so only the arithmetic could make it differ)
#   classify_matrix.sh REPRO SCRATCH SET SRC [FAMILIES]
# FAMILIES (default "dit sd3 flux") names the matrices SET-FAMILY.yaml: "digits-dit digits-sd3"
# runs the drift or bug set on the trained family (tests/classify/*-digits-*.yaml).
set -u
repro=$1 scratch=$2 set=$3 src=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch"
mkdir -p "$scratch" || exit 1
res=$scratch/results
t0=$(date +%s)
dirs=
fams=${5:-dit sd3 flux} mset=$set
[ "$set" = invariantxl ] && fams=ditxl mset=invariant
for fam in $fams; do
    m=$src/tests/classify/$mset-$fam.yaml
    [ -s "$m" ] || fail "no matrix $m"
    t1=$(date +%s)
    "$repro" --matrix "$m" --results "$res" --progress plain >"$scratch/$fam.out" 2>"$scratch/$fam.err"
    rc=$?
    cat "$scratch/$fam.out"
    echo "== $set-$fam: exit $rc, $(($(date +%s) - t1)) s"
    if [ "$set" = approx ] && grep -q 'not in this build' "$scratch/$fam.out" "$scratch/$fam.err"; then
        echo "SKIP: pipefusion / patch parallelism are not in this build"
        exit 77
    fi
    [ $rc = 0 ] || { tail -n 20 "$scratch/$fam.err"; fail "$set-$fam: exit $rc"; }
    grep -q '^confusion: diagonal' "$scratch/$fam.out" || fail "$set-$fam: the confusion table is not diagonal"
    d=$res/$(sed -n 's/^name: //p' "$m")
    # the runner's temporaries (a case's directory in the making, an emulation job's) end with it
    left=$(find "$d" -mindepth 1 -maxdepth 1 -name '.tmp*')
    [ -z "$left" ] || fail "$set-$fam: temporaries left behind: $left"
    dirs="$dirs $d"
done
echo "== $set: the families together"
# shellcheck disable=SC2086 # the directories are word-split on purpose (no spaces in them)
"$repro" classify --table $dirs >"$scratch/table"
rc=$?
cat "$scratch/table"
[ $rc = 0 ] || fail "$set: the confusion table is not diagonal"
grep -q '^confusion: diagonal' "$scratch/table" || fail "$set: no diagonal confusion table"
# table columns: id verdict expected PSNR step first-layer name...
rows=$(grep '^[0-9a-f]\{16\} ' "$scratch/table")
# the margins each side of the line: "margins P (factor F): drift max xR (id, n cases): ..."
margin_check() { # side: drift | bug
    grep '^margins ' "$scratch/table" | awk -v side="$1" '{
        f = $4; sub(/\)?:$/, "", f); f += 0
        for (i = 1; i <= NF; i++) if ($i == side && $(i + 1) == (side == "drift" ? "max" : "min")) {
            r = substr($(i + 2), 2) + 0
            m = side == "drift" ? (r > 0 ? f / r : 1e30) : r / f
            printf "  %s %s side: x%g against the factor %g: margin %.3gx\n", $2, side, r, f, m
            if (m < 4) bad = 1
        } } END { exit bad }'
}
case $set in
drift|corpus)
    n=$(echo "$rows" | awk '$3 == "drift"' | wc -l)
    [ "$n" -ge $([ "$set" = corpus ] && echo 500 || echo 40) ] || fail "$set: only $n labelled cases"
    echo "$rows" | awk '$2 != "identical" && $2 != "drift" { print; bad = 1 } END { exit bad }' ||
        fail "$set: a case that only reorders rounding is not identical or drift"
    margin_check drift || fail "$set: less than 4x between the largest drift ratio and the factor"
    ;;
bugs)
    n=$(echo "$rows" | awk '$3 == "BUG" || $3 == "MISMATCH"' | wc -l)
    [ "$n" -ge 22 ] || fail "bugs: only $n labelled cases"
    # the name's part after "=>": expected first step and first layer@step (none for MISMATCH)
    echo "$rows" | awk '$3 == "BUG" || $3 == "MISMATCH" {
        at = index($0, "=> "); if (!at) next
        split(substr($0, at + 3), want, " ")
        if ($2 != $3) { print "verdict " $2 " expected " $3 ": " $0; bad = 1 }
        if (want[1] != "" && $5 != want[1]) { print "first step " $5 " expected " want[1] ": " $0; bad = 1 }
        if (want[2] != "" && want[2] != "-" && $6 != want[2]) {
            print "first layer " $6 " expected " want[2] ": " $0; bad = 1 }
    } END { exit bad }' || fail "bugs: a fault is not localised where it acts"
    # a third word after "=>" names the evidence that decided the first step (its "what",
    # spaces as dashes: self-check, replica, leak-check...)
    echo "$rows" | awk '$3 == "BUG" { at = index($0, "=> "); if (!at) next; n = split(substr($0, at + 3), w, " ")
                                      if (n >= 3) print $1, w[3] }' |
        while read -r id what; do
            got=$(find "$res" -path "*/$id/classification.json" -exec "${REPRO_PYTHON:-/usr/bin/python3}" -c '
import json, sys
print(json.load(open(sys.argv[1]))["evidence"]["first_step"]["what"].replace(" ", "-"))' {} \;)
            [ "$got" = "$what" ] || fail "bugs: case $id: the first step is decided by '$got', expected '$what'"
        done || exit 1
    margin_check bug || fail "bugs: less than 4x between the factor and the smallest bug ratio"
    # a deadlock ("=> deadlock rank K"): the sweep's reason names it and rank K as the odd one
    echo "$rows" | awk '$3 == "HANG" { at = index($0, "=> deadlock rank "); if (at) print substr($0, at + 17) + 0, $1 }' |
        while read -r k id; do
            grep -h "$id .*deadlock: .*; rank $k disagrees with its peers" "$scratch"/*.out >/dev/null ||
                fail "bugs: case $id is not reported as a deadlock naming rank $k"
        done || exit 1
    ;;
approx)
    n=$(echo "$rows" | awk '$3 == "approx"' | wc -l)
    [ "$n" -ge 30 ] || fail "approx: only $n labelled cases"
    # per family and strategy, consecutive warmups (the names say warmup=W), each case's
    # final latents error and envelope from its classification.json
    for fam in dit sd3 flux; do
        "$repro" classify --table "$res/classify-approx-$fam" >"$scratch/table-$fam" || true
    done
    "${REPRO_PYTHON:-/usr/bin/python3}" - "$src/tests/common" "$res" "$scratch" <<'EOF' || fail "approx: quality falls as warmup grows"
import json, math, os, re, sys
sys.path.insert(0, sys.argv[1])
from rounding import FACTOR, envelope, at_most, image_at_most
res, scratch = sys.argv[2], sys.argv[3]
bad = 0
for fam in ("dit", "sd3", "flux"):
    runs = {}  # strategy -> [(warmup, psnr, e, E, F)]
    for line in open("%s/table-%s" % (scratch, fam)):
        m = re.match(r"^([0-9a-f]{16}) +(\S+) +(\S+) +(\S+) .* (pipefusion|patch) warmup=(\d+)\s*$", line)
        if not m:
            continue
        cid, psnr, strat, w = m.group(1), m.group(4), m.group(5), int(m.group(6))
        try:
            j = json.load(open("%s/classify-approx-%s/%s/classification.json" % (res, fam, cid)))
        except (OSError, ValueError) as ex:
            print("  %s %s warmup=%d: no classification.json (%s)" % (fam, strat, w, ex)); bad = 1; continue
        ev = j.get("evidence") or {}
        env = ev.get("envelope") or {}
        acc, eacc = ev.get("accumulated") or [None], env.get("accumulated") or [None]
        e = acc[-1]
        E = envelope(eacc[-1], floor=env.get("floor") or 0.0)
        p = float("inf") if psnr == "inf" else float(psnr) if re.match(r"^[0-9.]+$", psnr) else float("nan")
        runs.setdefault(strat, []).append((w, p, e, E, float(env.get("factor") or FACTOR)))
    for strat, rs in sorted(runs.items()):
        rs.sort()
        for k, (w, p, e, E, F) in enumerate(rs):
            print("  %s %s warmup=%d: PSNR %s, latents rel-L2 %s, envelope %.2e" %
                  (fam, strat, w, p, "-" if e is None else "%.3e" % e, E))
            if not k:
                continue
            w0, p0, e0, E0, F0 = rs[k - 1]
            if e is None or e0 is None or not at_most(e, e0, envelope(E, E0), min(F, F0)):
                print("  quality fell at warmup %d: latents rel-L2 %s after %s (envelope %.2e)" % (w, e, e0, envelope(E, E0)))
                bad = 1
            if not (math.isnan(p) or math.isnan(p0)) and not image_at_most(p, p0):
                print("  quality fell at warmup %d: PSNR %.2f after %.2f dB, RMS beyond 2 levels" % (w, p, p0))
                bad = 1
# with the pipeline patches fixed, PipeFusion's stages do the one-stage run's arithmetic: every
# PipeFusion case that is not the serial run itself (the hybrids too) had its serial emulation
# made, and equals it bit for bit
import glob
for fam in ("dit", "sd3", "flux"):
    for path in glob.glob("%s/classify-approx-%s/*/classification.json" % (res, fam)):
        d = os.path.dirname(path)
        c, j = json.load(open(d + "/case.json")), json.load(open(path))
        em = (j.get("evidence") or {}).get("emulation") or {}
        if c.get("pipefusion", 1) > 1 and j.get("verdict") != "identical" and em.get("bitwise") is not True:
            print("  %s %s: not bitwise its serial emulation: %s" % (fam, c.get("name"), em or "none made"))
            bad = 1
sys.exit(bad)
EOF
    ;;
invariant|invariantxl)
    n=$(echo "$rows" | awk '$3 == "identical"' | wc -l)
    nf=$(echo $fams | wc -w) # each family's matrix labels at least 50 layouts identical
    [ "$n" -ge $((50 * nf)) ] || fail "$set: only $n layouts labelled identical ($nf families)"
    echo "$rows" | awk '$3 == "identical" && $2 != "identical" { print; bad = 1 } END { exit bad }' ||
        fail "invariant: an exact layout is not bitwise its serial run"
    echo "$rows" | awk '($3 == "BUG" || $3 == "MISMATCH") && $2 != $3 { print; bad = 1 } END { exit bad }' ||
        fail "invariant: a planted fault is not flagged"
    # batch composition: the serial runs of 1, 3 and 8 items hold item i bitwise alike
    # shellcheck disable=SC2086
    "${REPRO_PYTHON:-/usr/bin/python3}" - $dirs <<'EOF' || fail "invariant: an item's latents depend on its batch"
import json, struct, sys
def trajectory(path):  # [step][item] -> the item's fp32 bytes at that step
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])["trajectory"]
    assert h["dtype"] == "F32", h
    rows, items = h["shape"][0], h["shape"][1]
    data = b[8 + n + h["data_offsets"][0]:8 + n + h["data_offsets"][1]]
    per = len(data) // (rows * items)
    return [[data[(r * items + i) * per:(r * items + i + 1) * per] for i in range(items)] for r in range(rows)]
bad = checked = 0
for d in sys.argv[1:]:
    s = json.load(open(d + "/report/summary.json"))
    serial = {}  # precision -> {items: trajectory}
    for c in s["cases"]:
        cfg = c.get("config") or {}
        if c["name"].endswith(" serial") and c["status"] == "ok":
            serial.setdefault(cfg["precision"], {})[len(cfg["items"])] = trajectory("%s/%s/latents.safetensors" % (d, c["id"]))
    for prec, byn in sorted(serial.items()):
        big = max(byn)
        for n, t in sorted(byn.items()):
            for i in range(n):
                checked += 1
                if any(t[r][i] != byn[big][r][i] for r in range(len(t))):
                    print("  %s %s: item %d of the %d-item batch differs from item %d of the %d-item batch" % (d, prec, i, n, i, big))
                    bad = 1
print("  batch composition: %d items checked against the largest batch: %s" % (checked, "DIFFERENCES" if bad else "all bitwise"))
sys.exit(bad or not checked)
EOF
    ;;
*) fail "unknown set $set" ;;
esac
echo "== $set: $(($(date +%s) - t0)) s"
echo "PASS"
