#!/bin/sh
# classify_cli.sh — the classifier end to end on small sweeps (label cli):
#   - teacher forcing reproduces the reference's own trajectory bit for bit for every
#     sampler (DDIM, DDPM, DPM-Solver++(2M), Euler ancestral, flow Euler on SD3 and FLUX):
#     the stored latent is each loop's whole state between steps;
#   - the store: twins with their teacher runs, teacher/, classification.json;
#     the noise twin moves the initial noise and nothing else does;
#   - `repro classify` by hand (verdict line, --out, --twins, --factor, usage errors) and
#     `repro classify --table`;
#   - resume keeps verdicts; other classify options recompute them in place; classify: false;
#   - a malformed classify: key is a file:line:col error;
#   - --golden: classification-golden.json against the recorded golden.
#   classify_cli.sh REPRO SCRATCH SRC
set -u
repro=$1 scratch=$2 src=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch"
mkdir -p "$scratch" || exit 1
cd "$scratch" || exit 1
res=$scratch/results
# json_line FILE KEY: the line of "KEY": in FILE (cJSON prints arrays of numbers on one line)
json_line() { grep -m 1 "\"$2\":" "$1"; }
# id_of DIR NAME: the id of the case named NAME in DIR/summary.json
id_of() { awk -v n="\"name\":	\"$2\"," '/"id":/ { id = $2 } index($0, n) { gsub(/[",]/, "", id); print id; exit }' "$1/summary.json"; }

# ---- teacher forcing against the reference's own trajectory, every sampler ----
cat >dit.yaml <<'EOF'
name: teach-dit
base: {model: dit-tiny, steps: 4, cfg: 4, threads: 1, backend: gloo}
seeds: [0, 1]
classes: [207]
axes:
  sampler: [ddim, ddpm, dpmpp-2m, euler-a]
  dp: [1, 2]
reference: {dp: 1, backend: self}
EOF
cat >flow.yaml <<'EOF'
name: teach-flow
base: {steps: 4, sampler: euler, threads: 1, backend: gloo}
seeds: [0, 1]
prompts: ["a red fox"]
axes:
  family: [{model: sd3-tiny, cfg: 4, name: sd3}, {model: flux-tiny, cfg: 1, guidance: 3.5, name: flux}]
  dp: [1, 2]
reference: {dp: 1, backend: self}
EOF
for m in dit flow; do
    "$repro" --matrix $m.yaml --results "$res" --progress plain >$m.out 2>$m.err
    rc=$?
    cat $m.out
    [ $rc = 0 ] || { tail -5 $m.err; fail "$m sweep: exit $rc"; }
done
n_ref=0
for d in "$res"/teach-dit/* "$res"/teach-flow/*; do
    [ -d "$d/twins" ] || continue # the references
    n_ref=$((n_ref + 1))
    line=$(json_line "$d/classification.json" reference_teacher)
    sampler=$(sed -n 's/.*"sampler":[[:space:]]*"\([^"]*\)".*/\1/p' "$d/case.json")
    echo "  $sampler $(sed -n 's/.*"model":[[:space:]]*"\([^"]*\)".*/\1/p' "$d/case.json"): $line"
    echo "$line" | grep -q '\[0, 0, 0, 0\]' || fail "$sampler: teacher forcing does not reproduce the trajectory"
    # the noise twin runs free (its teacher run would repeat the reference's own); the twins
    # with other arithmetic run teacher-forced only (their step 0 is a free run's first
    # evaluation, from the same x_T), in the reference's own launch
    [ -s "$d/twins/noise-ulp/latents.safetensors" ] || fail "$d: twin noise-ulp missing"
    grep -q '"status":[[:space:]]*"ok"' "$d/twins/noise-ulp/aux.json" || fail "$d: twin noise-ulp did not run ok"
    [ -e "$d/twins/noise-ulp/teacher" ] && fail "$d: the noise twin needs no teacher run (it starts from x_t)"
    for t in reduce-split threads; do
        [ -s "$d/twins/$t/teacher/teacher.safetensors" ] || fail "$d: the $t twin has no teacher run"
        grep -q '"status":[[:space:]]*"ok"' "$d/twins/$t/teacher/aux.json" || fail "$d: twin $t did not run ok"
        [ -e "$d/twins/$t/latents.safetensors" ] && fail "$d: the $t twin ran free as well (not needed)"
    done
    grep -q '"twins_ok":[[:space:]]*3' "$d/classification.json" || fail "$d: not 3 twins ok"
    [ -s "$d/teacher/trace.safetensors" ] || fail "$d: no teacher trace"
    grep -q '"leak_check":[[:space:]]*"ok"' "$d/classification.json" || fail "$d: leak check not ok"
done
[ $n_ref = 6 ] || fail "expected 6 references with twins, found $n_ref"
# only the noise twin moves the initial noise; the dp cases keep it bitwise
d=$res/teach-dit/$(id_of "$res/teach-dit" "sampler=ddim dp=2")
# a case bitwise identical to its reference needs no teacher run: the worker makes only the
# leak check's (its first 4 steps teacher-forced after its run, no decode). On some kernel
# sets (Prescott, Sandybridge) dp=2 is bitwise the single rank, since whether a GEMM row's
# bits depend on the row count is the BLAS's property, not ours
if json_line "$d/classification.json" verdict | grep -q '"identical"'; then
    grep -q '"kind":[[:space:]]*"leak check"' "$d/teacher/aux.json" ||
        fail "the dp=2 case is bitwise its reference but ran a teacher run that is not the leak check's"
    evals=$(json_line "$d/teacher/done.json" model_evals_rank0 | sed "s/.*:[^0-9]*\([0-9]*\).*/\1/")
    [ -n "$evals" ] && [ "$evals" -le 4 ] || fail "the leak check ran $evals evaluations (at most 4 steps)"
    [ -e "$d/teacher/image-0.png" ] && fail "the leak check decoded images"
    grep -q '"leak_check":[[:space:]]*"ok"' "$d/classification.json" || fail "dp=2: leak check not ok"
else
    [ -s "$d/teacher/teacher.safetensors" ] || fail "the dp=2 case has no teacher run"
fi
json_line "$d/classification.json" verdict | grep -q '"drift"\|"identical"' || fail "dp=2: not drift"
sed -n '/"initial_noise"/,/}/p' "$d/classification.json" | grep -q '"rel":[[:space:]]*0,' ||
    fail "dp=2: the initial noise moved"
sed -n '/"envelope":[[:space:]]*{/,/"twins_ok"/p' "$d/classification.json" >/dev/null
sed -n '/"accumulated":/p' "$d/classification.json" | head -1 | grep -q '\[[1-9]' ||
    fail "the envelope's row 0 (the noise twin) should be above 0"

# ---- repro classify by hand ----
ref=$res/teach-dit/$(id_of "$res/teach-dit" "ref sampler=ddim dp=1")
[ -d "$ref/twins" ] || fail "no reference for sampler=ddim dp=2 ($ref)"
out=$("$repro" classify "$d" "$ref" --out by-hand.json)
rc=$?
echo "  repro classify: $out"
[ $rc = 0 ] || fail "repro classify: exit $rc"
echo "$out" | grep -q '^drift: \|^identical: ' || fail "no verdict line"
[ -s "$d/by-hand.json" ] || fail "--out did not write by-hand.json"
"$repro" classify "$d" "$ref" "$ref/twins/reduce-split" --out one-twin.json >/dev/null || fail "explicit twin dir"
grep -q '"twins_ok":[[:space:]]*1' "$d/one-twin.json" || fail "one explicit twin: not one twin"
"$repro" classify "$d" "$ref" --twins 1 --out t1.json >/dev/null || fail "--twins 1"
grep -q '"twins_ok":[[:space:]]*1' "$d/t1.json" || fail "--twins 1 read another count"
"$repro" classify "$d" 2>/dev/null
[ $? = 2 ] || fail "one directory: not a usage error"
"$repro" classify "$d" "$ref" --factor 1 2>/dev/null
[ $? = 2 ] || fail "--factor 1: not a usage error"
"$repro" classify "$d" "$scratch/nowhere" 2>err
[ $? = 2 ] || fail "a missing reference: not exit 2"
grep -q "nowhere" err || fail "no message naming the missing directory"
"$repro" classify --table "$res/teach-dit" "$res/teach-flow" >table || true
cat table
[ "$(grep -c '^[0-9a-f]\{16\} ' table)" = 18 ] || fail "--table: not 18 cases"
"$repro" --help | grep -q '^  classify ' || fail "repro --help does not list classify"

# ---- resume keeps the verdicts; other options recompute them; classify: false ----
s1=$(json_line "$d/classification.json" options_key)
out=$("$repro" --matrix dit.yaml --results "$res" --progress plain 2>/dev/null)
echo "$out" | grep -q '0 run now, 12 from earlier runs' || fail "resume reran something"
echo "$out" | grep -q '^verdicts: ' || fail "no verdicts after resume"
# a sweep killed after a reference was published, before its twins (a job of their own:
# runner.c twins_thread) were moved in, with a case of it unfinished: the next sweep makes
# the twins again; the reference's classification and the case's then hold all three
rm -rf "$ref/twins" "$d"
out=$("$repro" --matrix dit.yaml --results "$res" --progress plain 2>/dev/null) || fail "resume without twins: exit $?"
echo "$out" | grep -q '1 run now, 11 from earlier runs' || fail "resume without twins ran another count of cases"
[ -s "$ref/twins/noise-ulp/latents.safetensors" ] || fail "the reference's twins were not made again"
grep -q '"twins_ok":[[:space:]]*3' "$ref/classification.json" || fail "the reference's classification lacks its twins"
grep -q '"twins_ok":[[:space:]]*3' "$d/classification.json" || fail "the case's classification lacks its twins"
ls -d "$res"/teach-dit/.tmp-* 2>/dev/null && fail "a side directory was left behind"
sed -e 's/^reference:/classify: {factor: 32}\nreference:/' dit.yaml >dit32.yaml
out=$("$repro" --matrix dit32.yaml --results "$res" --progress plain 2>/dev/null) || fail "factor 32: exit $?"
s2=$(json_line "$d/classification.json" options_key)
[ "$s1" != "$s2" ] && echo "$s2" | grep -q 'factor=32 ' || fail "the verdicts were not recomputed for factor 32"
echo "$out" | grep -q '0 run now' || fail "other classify options reran cases"
cat >off.yaml <<'EOF'
name: off
base: {model: dit-tiny, steps: 2, threads: 1, backend: gloo}
axes: {dp: [1, 2]}
seeds: [0, 1]
reference: {dp: 1, backend: self}
classify: false
EOF
"$repro" --matrix off.yaml --results "$res" --progress plain >off.out 2>&1 || { cat off.out; fail "classify: false"; }
ls "$res"/off/*/classification.json 2>/dev/null && fail "classify: false wrote classification.json"
ls -d "$res"/off/*/twins 2>/dev/null && fail "classify: false made twins"

# ---- a malformed classify: key ----
printf 'name: bad\nclassify:\n  factor: 0.5\n' >bad.yaml
"$repro" --matrix bad.yaml --results "$res" 2>err
[ $? = 2 ] || fail "classify.factor 0.5: not exit 2"
grep -q "bad.yaml:3:11: field 'classify.factor': expected a number > 1, got 0.5" err || { cat err; fail "message"; }
printf 'name: bad\nclassify: {twin: 3}\n' >bad2.yaml
"$repro" --matrix bad2.yaml --results "$res" 2>err
grep -q "field 'classify.twin': unknown key (did you mean 'twins'?)" err || { cat err; fail "did-you-mean"; }

# ---- --golden: the same tests against a golden recorded elsewhere (here: earlier) ----
"$repro" golden record --matrix flow.yaml --store "$scratch/store" --results "$scratch/r1" --progress plain \
    >g1.out 2>&1 || { cat g1.out; fail "golden record"; }
out=$("$repro" --matrix flow.yaml --results "$scratch/r2" --golden "$scratch/store" --progress plain 2>g2.err)
rc=$?
echo "$out"
[ $rc = 0 ] || { tail g2.err; fail "--golden: exit $rc"; }
n=$(ls "$scratch"/r2/teach-flow/*/classification-golden.json | wc -l)
[ "$n" = 6 ] || fail "not every case classified against the golden ($n)"
[ "$(echo "$out" | grep -c 'vs golden: identical\|vs golden: drift')" = 6 ] || fail "golden verdicts"
echo "PASS"
