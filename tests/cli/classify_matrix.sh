#!/bin/sh
# classify_matrix.sh — the classifier's acceptance sets (label matrix): one sweep per model
# family (tests/classify/SET-{dit,sd3,flux}.yaml), each printing its table and confusion
# table; then `repro classify --table` over the three, whose confusion table (expected
# label x verdict) must be diagonal, and per set:
#   drift   every verdict identical or drift: zero BUG verdicts
#   corpus  the drift corpus (>= 500 cases: samplers, layouts, knobs, fp32 and bf16, normal
#           and sharpened weights): every verdict identical or drift
#   bugs    every fault a BUG (dp-rank-layout a MISMATCH) that starts where the case name
#           says after "=>": the first step, and the first layer@step
#   margins (drift, corpus, bugs) `repro classify --table` prints per precision the largest
#           ratio a drift case reached and the smallest ratio that decided a BUG; the line
#           (the factor) must stand at least 4x above the first and 4x below the second
#   approx  approx or drift (identical counts), and per family and strategy the final
#           PSNR never falls as warmup grows; skipped (77) while pipefusion / patch are
#           not in the build
#   classify_matrix.sh REPRO SCRATCH SET SRC
set -u
repro=$1 scratch=$2 set=$3 src=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch"
mkdir -p "$scratch" || exit 1
res=$scratch/results
t0=$(date +%s)
dirs=
for fam in dit sd3 flux; do
    m=$src/tests/classify/$set-$fam.yaml
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
    dirs="$dirs $res/$(sed -n 's/^name: //p' "$m")"
done
echo "== $set: the three families together"
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
    margin_check bug || fail "bugs: less than 4x between the factor and the smallest bug ratio"
    ;;
approx)
    n=$(echo "$rows" | awk '$3 == "approx"' | wc -l)
    [ "$n" -ge 30 ] || fail "approx: only $n labelled cases"
    # per matrix directory the rows come in warmup order; PSNR "inf" is the top
    for fam in dit sd3 flux; do
        for st in pipefusion patch; do
            grep -h "^[0-9a-f]\{16\} .* $st warmup=" "$scratch/table" >/dev/null || continue
            "$repro" classify --table "$res/classify-approx-$fam" | grep " $st warmup=" |
                awk -v what="$fam $st" '{ p = $4 == "inf" ? 1e9 : $4 + 0; w = $NF
                    printf "  %s %s: PSNR %s\n", what, w, $4
                    if (NR > 1 && p < last) { print "  quality fell at " w; bad = 1 }
                    last = p } END { exit bad }' || fail "approx: $fam $st quality falls as warmup grows"
        done
    done
    ;;
*) fail "unknown set $set" ;;
esac
echo "== $set: $(($(date +%s) - t0)) s"
echo "PASS"
