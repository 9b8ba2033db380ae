#!/bin/sh
# classify_witness.sh — the classifier's witnesses that are no other run (label cli). Each
# stored artifact is changed the way a fault upstream of the numbers would change it, and
# `repro classify` must name that fault, not a rounding or the case's own steps:
#   - a reference posing another problem (its case.json at another precision): CONFIG_ERROR
#     naming the field;
#   - a case whose trace says another attention kernel ran than the one case.json asks for
#     (a silent fallback): BUG at "attention kernel"; one whose run was configured with
#     another thread count than case.json's (a field dropped on the way), whose engine
#     notes another layout than case.json's, or one of whose GEMMs notes a split reduction
#     case.json does not ask for: BUG at "configuration";
#   - case and reference drawn from a seed other than case.json's (both case.json's seed
#     edited: the item selection losing seed bits in every run): BUG at "initial noise",
#     though the two runs agree with each other;
#   - a teacher-forcing run fed other items' rows (its stored rows swapped), or one step fed
#     the step before's row (its kept input shifted): BUG at "teacher input", at that step,
#     naming the reference row it was, not a local error of the case;
#   - a run whose stored schedule is not the reference's (one timestep moved): BUG at
#     "schedule", at the step that reads it;
#   and the untouched sweep gives no such finding.
#   classify_witness.sh REPRO SCRATCH
set -u
repro=$1 scratch=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch"
mkdir -p "$scratch" || exit 1
cd "$scratch" || exit 1
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
id_of() { awk -v n="\"name\":	\"$2\"," '/"id":/ { id = $2 } index($0, n) { gsub(/[",]/, "", id); print id; exit }' "$1/summary.json"; }
field() { sed -n "s/.*\"$2\":[[:space:]]*\"\\([^\"]*\\)\".*/\\1/p" "$1" | head -1; }

cat >w.yaml <<'EOF'
name: witness
base: {model: dit-tiny, steps: 3, cfg: 4, threads: 1}
seeds: [0, 1]
classes: [207]
axes:
  attention: [math, flash]
reference: {attention: math}
EOF
"$repro" --matrix w.yaml --results res --progress plain >sweep.out 2>sweep.err || { cat sweep.out; tail sweep.err; fail "sweep"; }
cat sweep.out
d=res/witness
ref=$d/$(id_of $d "attention=math") fl=$d/$(id_of $d "attention=flash")
[ -f "$ref/case.json" ] && [ -f "$fl/case.json" ] || fail "case directories not found"
for c in "$ref" "$fl"; do
    v=$(field "$c/classification.json" verdict)
    case $v in identical | drift) ;; *) fail "$c: $v on the untouched sweep" ;; esac
done
grep -q '"drawn_here":[[:space:]]*"within one ulp"' "$fl/classification.json" || fail "the noise was not held to its draw"
grep -q '"attention_kernels":[[:space:]]*"flash' "$fl/classification.json" || fail "the kernels that ran are not reported"
[ -f "$fl/teacher/teacher.safetensors" ] || fail "the flash case has no teacher run"

# expect CASE REF VERDICT WHAT TEXT: classify the copy CASE against REF by hand (into
# CASE/witness.json): VERDICT, its first step decided by WHAT ("" for none), TEXT in it
expect() {
    "$repro" classify "$1" "$2" --out witness.json >/dev/null 2>"$1.err"
    j=$1/witness.json
    v=$(field "$j" verdict)
    [ "$v" = "$3" ] || fail "$1: $v, expected $3 ($(field "$j" summary))"
    [ -z "$4" ] || [ "$(what_of "$j")" = "$4" ] || fail "$1: first step '$(what_of "$j")', expected '$4'"
    grep -q "$5" "$j" || fail "$1: '$5' not in: $(field "$j" summary)"
}
what_of() { sed -n '/"first_step"/,/}/s/.*"what":[[:space:]]*"\([^"]*\)".*/\1/p' "$1" | head -1; }
# edit_notes TRACE CODE: run the python CODE on m, the trace's metadata (its notes), and write
# the file back (safetensors: an 8-byte header length, the JSON header, the data unchanged)
edit_notes() {
    $py - "$1" "$2" <<'EOF' || fail "could not edit the notes of $1"
import json, struct, sys
p, code = sys.argv[1], sys.argv[2]
b = open(p, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
m = h["__metadata__"]
exec(code)
t = json.dumps(h).encode()
t += b" " * (-len(t) % 8)
open(p, "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
EOF
}
# edit_data FILE TENSOR CODE: run the python CODE on b (the file's bytes, a bytearray), t (the
# tensor's header entry) and at (the file offset of its first byte), and write the file back
edit_data() {
    $py - "$1" "$2" "$3" <<'EOF' || fail "could not edit $2 of $1"
import json, struct, sys
p, name, code = sys.argv[1], sys.argv[2], sys.argv[3]
b = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
t = json.loads(b[8:8 + n])[name]
at = 8 + n + t["data_offsets"][0]
exec(code)
open(p, "wb").write(b)
EOF
}

# 1. a reference at another precision: no envelope
cp -r "$ref" ref-bf16
cp -r "$fl" fl-pair
sed -i 's/"precision":[[:space:]]*"fp32"/"precision": "bf16"/' ref-bf16/case.json
grep -q '"precision": "bf16"' ref-bf16/case.json || fail "could not edit the reference's precision"
expect fl-pair ref-bf16 CONFIG_ERROR "" "pose different problems (field 'precision'"

# 2. another attention kernel than asked: the case asks for flash, its trace says math ran (a
#    silent fallback inside the engine, the context configured as asked)
cp -r "$fl" fl-ran-math
edit_notes fl-ran-math/trace.safetensors 'm.pop("note/attention.ran.flash"); m["note/attention.ran.math"] = "q=0 kv=0"'
expect fl-ran-math "$ref" BUG "attention kernel" "asks for attention flash but the math kernel ran"

# 2b. a knob that did not reach the run: case.json asks for 2 threads, the run noted 1
cp -r "$fl" fl-threads
sed -i 's/"threads":[[:space:]]*1/"threads": 2/' fl-threads/case.json
grep -q '"threads": 2' fl-threads/case.json || fail "could not edit the threads"
expect fl-threads "$ref" BUG configuration "configured with threads 1 while case.json asks for 2"

# 2c. a layout that did not reach the engine: its own note of the degrees it runs says dp 2
cp -r "$fl" fl-dp2
edit_notes fl-dp2/trace.safetensors 'assert "dp=1" in m["note/par.degrees"]
m["note/par.degrees"] = m["note/par.degrees"].replace("dp=1", "dp=2")'
expect fl-dp2 "$ref" BUG configuration "configured with degrees dp=2 .* while case.json asks for dp=1 "

# 2d. a knob the worker configured but a GEMM did not take: the case asks for no split
#     reduction, one GEMM's own note says it split (a split chosen by shape, say)
grep -q '"note/gemm.ran.unsplit"' "$fl/trace.safetensors" || fail "the GEMMs noted no unsplit reduction"
grep -q '"note/gemm.ran.split"' "$fl/trace.safetensors" && fail "a GEMM of a case without reduce_split noted a split"
cp -r "$fl" fl-split
edit_notes fl-split/trace.safetensors 'm["note/gemm.ran.split"] = "1"'
expect fl-split "$ref" BUG configuration "asks for reduce_split 0, and the run was configured so, but a GEMM split"

# 3. both runs drawn from another seed than case.json's: they agree, the draw does not
cp -r "$ref" ref-seed
cp -r "$fl" fl-seed
for c in ref-seed fl-seed; do
    $py - "$c/case.json" <<'EOF' || fail "could not edit the seed"
import json, sys
p = sys.argv[1]
j = json.load(open(p))
j["items"][1]["seed"] = 4294967297  # the runs drew seed 1: 2^32 + 1 cut to 32 bits
json.dump(j, open(p, "w"), indent=1)
EOF
done
expect fl-seed ref-seed BUG "initial noise" "item 1's initial noise is not the draw of its seed 4294967297"

# 4. a teacher run fed the other item's rows: items 0 and 1 swapped in every stored row
cp -r "$fl" fl-teacher
edit_data fl-teacher/teacher/teacher.safetensors teacher '
rows, items = t["shape"][0], t["shape"][1]
per = 4 * t["shape"][2] * t["shape"][3] * t["shape"][4]
assert items == 2 and t["dtype"] == "F32"
for r in range(rows):
    a = at + r * items * per
    b[a:a + per], b[a + per:a + 2 * per] = b[a + per:a + 2 * per], b[a:a + per]'
expect fl-teacher "$ref" BUG "teacher input" "the harness fed it other rows"

# 5. a teacher run whose last step started from the step before's row (an off-by-one at a
# step it ran: no row it returns is an input, only the inputs it keeps say so)
cp -r "$fl" fl-step
edit_data fl-step/teacher/teacher.safetensors input '
steps, items = t["shape"][0], t["shape"][1]
row = 4 * items * t["shape"][2] * t["shape"][3] * t["shape"][4]
assert steps == 3 and t["dtype"] == "F32"
b[at + 2 * row:at + 3 * row] = b[at + row:at + 2 * row]'
expect fl-step "$ref" BUG "teacher input" "started step 2 from the reference's row 1 of item 0, not the reference's row 2"
tr -d '\n' <fl-step/witness.json | grep -q '"first_step":[[:space:]]*{[^}]*"step":[[:space:]]*2' ||
    fail "fl-step: the first step is not step 2"

# 6. a run that stepped with another schedule than its problem's: one timestep of its
# stored schedule changed (host arithmetic from steps and size: every layout's is the
# reference's), named at the step that reads it
cp -r "$fl" fl-sched
edit_data fl-sched/latents.safetensors timesteps '
assert t["dtype"] == "F64" and t["shape"] == [3]
k = at + 8 * 1
b[k:k + 8] = struct.pack("<d", struct.unpack("<d", b[k:k + 8])[0] + 1.0)'
expect fl-sched "$ref" BUG schedule "its timesteps\[1\], which step 1 reads"
# an update's coefficient is read a step earlier too: step k reads alphas_cumprod[k + 1]
cp -r "$fl" fl-abar
edit_data fl-abar/latents.safetensors alphas_cumprod '
assert t["dtype"] == "F64" and t["shape"] == [3]
k = at + 8 * 2
b[k:k + 8] = struct.pack("<d", struct.unpack("<d", b[k:k + 8])[0] * (1 + 2 ** -40))'
expect fl-abar "$ref" BUG schedule "its alphas_cumprod\[2\], which step 1 reads"

echo "witnesses: pair CONFIG_ERROR, kernel BUG, configuration BUG (knob, layout, GEMM), draw BUG, teacher input BUG (rows, a step's input), schedule BUG"
