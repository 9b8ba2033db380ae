#!/bin/sh
# dryrun.sh — every shipped matrix parses and expands as documented (ctest matrix.shipped.dryrun,
# label matrix). Nothing runs, nothing is written.
#
#   dryrun.sh REPRO SCRATCH SOURCE_DIR
#
# For each matrices/*.yaml and tests/{classify,matrices}/*.yaml: --dry-run exits 0. For the scenario and nightly matrices, the
# expected label of every case follows from what it is (selected with --filter):
#   inject=dp-shared-noise, inject=pipefusion-cache-leak      BUG
#   inject=dp-rank-layout                                     MISMATCH, except at dp 2 x cfg 2
#                                                             (the formula gives the right groups
#                                                             there, keyed to the rank number: the
#                                                             rotated layout's BUG, in either
#                                                             numerics; drift on a GPU, where the
#                                                             self check is not rotated)
#   ulysses=4, ulysses=8 (flux-tiny has 2 heads)              CONFIG_ERROR, rejected at validation
#   vae_scale_factor=16 (flux-dev), with its serial reference CONFIG_ERROR, rejected at validation
#   pipefusion or patch with warmup_steps short of the steps  approx
#   numerics=invariant, without a planted fault that acts     identical (references included:
#                                                             an exact layout is bitwise serial)
#   everything else (references included)                     drift
# the case counts are those the files document, and without a GPU every device=cuda case is
# SKIPPED.
set -u
repro=$1 scratch=$2 src=$3
py=${REPRO_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=$(command -v python3)
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
n=0
for m in "$src"/matrices/*.yaml; do
    out=$("$repro" --matrix "$m" --dry-run --results "$scratch/none" 2>&1) || { echo "$out"; fail "$m: --dry-run exited $?"; }
    n=$((n + 1))
done
# the test matrices too (the classifier's sets, scenarios): a field added to the case must
# not turn one of their axis names into a field (the corpus's axis 'numerics' once did)
k=0
for m in "$src"/tests/classify/*.yaml "$src"/tests/matrices/*.yaml; do
    [ -e "$m" ] || continue
    out=$("$repro" --matrix "$m" --dry-run --results "$scratch/none" 2>&1) || { echo "$out"; fail "$m: --dry-run exited $?"; }
    k=$((k + 1))
done
[ ! -e "$scratch/none" ] || fail "--dry-run wrote $scratch/none"
[ $n -ge 7 ] || fail "only $n matrices in $src/matrices"
[ $k -ge 15 ] || fail "only $k matrices in $src/tests/classify and tests/matrices"
nogpu=0
"$repro" env 2>/dev/null | tr -d ' \t\n' | grep -q '"gpus":\[\]' && nogpu=1

dry() { # dry NAME OUTFILE [--filter K=V]...
    f=$src/matrices/$1.yaml o=$2
    shift 2
    "$repro" --matrix "$f" --dry-run --results "$scratch/none" "$@" >"$o" 2>&1 || { cat "$o"; fail "dry run $f $*"; }
}
check() { # check MATRIX CASES STEPS...
    m=$1 cases=$2
    d=$scratch/$m
    mkdir -p "$d"
    dry "$m" "$d/all"
    grep -q "^$m: $cases cases:" "$d/all" || { tail -1 "$d/all"; fail "$m: not $cases cases"; }
    dry "$m" "$d/BUG" --filter inject=dp-shared-noise --filter inject=pipefusion-cache-leak
    dry "$m" "$d/MISMATCH" --filter inject=dp-rank-layout
    dry "$m" "$d/latent" --filter inject=dp-rank-layout --filter dp=2 --filter cfg_parallel=2
    dry "$m" "$d/latent-gpu" --filter inject=dp-rank-layout --filter dp=2 --filter cfg_parallel=2 --filter device=cuda
    dry "$m" "$d/CONFIG_ERROR" --filter ulysses=4 --filter ulysses=8
    dry "$m" "$d/vae16" --filter vae_scale_factor=16
    dry "$m" "$d/invariant" --filter numerics=invariant
    : >"$d/approx"
    for w in 0 1 2 4 8 16; do
        dry "$m" "$d/approx-p$w" --filter warmup_steps=$w --filter pipefusion=2 --filter pipefusion=4
        dry "$m" "$d/approx-q$w" --filter warmup_steps=$w --filter patch=2 --filter patch=4
        cat "$d/approx-p$w" "$d/approx-q$w" >>"$d/approx"
    done
    "$py" - "$d" "$m" "$nogpu" <<'EOF'
import re, sys
d, m, nogpu = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
row = re.compile(r"^([0-9a-f]{16})  (.{34}) (.{10}) +(\d+) (self|[0-9a-f]{16}) +(.*)$")
def rows(f):
    out = {}
    for line in open(f):
        r = row.match(line.rstrip("\n"))
        if r:
            out[r.group(1)] = (r.group(2).strip(), r.group(5) == "self", r.group(6))
    return out
allr = rows(d + "/all")
want = {i: "drift" for i in allr}
for lab, f in (("approx", "approx"), ("MISMATCH", "MISMATCH"), ("BUG", "latent"), ("BUG", "BUG"),
               ("CONFIG_ERROR", "CONFIG_ERROR")):
    for i, (name, is_ref, v) in rows(d + "/" + f).items():
        if not is_ref:
            want[i] = lab
for i, (name, is_ref, v) in rows(d + "/latent-gpu").items():
    want[i] = "drift"
# invariant numerics: no drift at all, so what would be drift (a reference, a correct layout)
# is identical
for i, (name, is_ref, v) in rows(d + "/invariant").items():
    if want[i] == "drift":
        want[i] = "identical"
# the doubled VAE factor (flux_multinode): the case and its serial reference are rejected
for i, (name, is_ref, v) in rows(d + "/vae16").items():
    want[i] = "CONFIG_ERROR"
bad = 0
for i, (name, is_ref, v) in allr.items():
    e = re.search(r"\[expect (\w+)\]$", v)
    got = e.group(1) if e else None
    if got != want[i]:
        print("%s: %s %s: expect %s, want %s" % (m, i, name, got, want[i])); bad = 1
    if want[i] == "CONFIG_ERROR" and not re.search(r"CONFIG_ERROR: (ulysses=[48] needs the head count divisible|"
                                                   r"vae_scale_factor=16 but the VAE flux-vae downsamples by 8)", v):
        print("%s: %s: not rejected at validation: %s" % (m, name, v)); bad = 1
    if nogpu and name.replace(m + ": ", "").startswith("gpu ") and not v.startswith("SKIPPED"):
        print("%s: %s: a GPU case is not SKIPPED without a GPU: %s" % (m, name, v)); bad = 1
counts = {}
for i in allr:
    counts[want[i]] = counts.get(want[i], 0) + 1
print("%s: %d cases, expectations as documented: %s" % (m, len(allr), ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
sys.exit(bad)
EOF
    [ $? -eq 0 ] || fail "$m: expectations (above)"
}
check flux_dp 49
check attention_cross_device 24
check sd3_batch 53
check dit_async_warmup 53
check nightly 207
echo ok
