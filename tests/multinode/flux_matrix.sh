#!/bin/sh
# flux_matrix.sh — the shipped matrix matrices/flux_multinode.yaml (FLUX.1-dev,
# 1024 px, 2 nodes x 2 ranks, pipefusion 4, doubled vs correct VAE scale factor).
#
#   flux_matrix.sh REPRO SCRATCH SOURCE_DIR
#
# 1. --dry-run: the file parses; vae_scale_factor=16 is a CONFIG_ERROR with the
#    validator's message (the diffusers 0.32 report) and is expected by the matrix,
#    for the pipefusion-4 case and its serial reference; vae_scale_factor=8 passes
#    validation: "run" on a machine with a GPU, else "SKIPPED: valid config, not on
#    this machine". Nothing is written.
# 2. The whole matrix as a sweep, as a researcher runs it: the CONFIG_ERROR pair is
#    recorded at the validate stage without launching a rank, the matrix expects it,
#    the vae_scale_factor=8 pair runs (GPU) or is SKIPPED as valid (CPU): exit 0.
#    Without a GPU this takes about a second (flux-dev on a CPU would take hours).
# The multi-node execution itself is tests/multinode/netns.sh (a tiny case).
set -u
repro=$1 scratch=$2 src=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
m=$src/matrices/flux_multinode.yaml
[ -f "$m" ] || fail "$m is missing"
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
unset REPRO_RANK REPRO_WORLD REPRO_LOCAL_RANK REPRO_STORE_DIR RANK WORLD_SIZE
msg16="vae_scale_factor=16 but the VAE flux-vae downsamples by 8 \(2\^\(4-1\)\): latent height 64 instead of 128 for 1024 px"

# ---- 1. dry run --------------------------------------------------------------------------------
out=$(timeout 60 "$repro" --matrix "$m" --dry-run --results "$scratch/dry" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "--dry-run exited $rc"
# line NAME: the table row of the case named NAME (names are the swept values)
line() { echo "$out" | grep -E "^[0-9a-f]{16}  $1 "; }
nogpu=0
"$repro" env 2>/dev/null | tr -d ' \t\n' | grep -q '"gpus":\[\]' && nogpu=1
l=$(line "2 nodes x 2 ranks pf4, vae_scal...") || fail "no case 2 nodes x 2 ranks pf4, vae_scale_factor=16"
l16=$(echo "$l" | grep "CONFIG_ERROR") || fail "vae_scale_factor=16 is not a CONFIG_ERROR: $l"
echo "$l16" | grep -Eq " pf4 +4 " || fail "vae_scale_factor=16 is not pipefusion 4 at world 4: $l16"
echo "$l16" | grep -Eq "CONFIG_ERROR: $msg16; the transformer's sequence split \[256, 256, 256, 256\] does not add up to its 4096 image tokens \[expect CONFIG_ERROR\]$" ||
    fail "vae_scale_factor=16: not the expected CONFIG_ERROR with the validator's message: $l16"
l=$(line "ref vae_scale_factor=16 device=cpu") || fail "no serial reference for vae_scale_factor=16"
echo "$l" | grep -Eq "CONFIG_ERROR: $msg16.*\[expect CONFIG_ERROR\]$" ||
    fail "the serial vae_scale_factor=16 reference is not an expected CONFIG_ERROR: $l"
l8=$(echo "$out" | grep -E "^[0-9a-f]{16}  2 nodes x 2 ranks pf4, vae_scal" | grep -v CONFIG_ERROR) ||
    fail "no case vae_scale_factor=8"
r8=$(line "ref vae_scale_factor=8 device=cuda") || fail "no serial reference for vae_scale_factor=8"
if [ $nogpu -eq 1 ]; then
    echo "$l8" | grep -Eq " pf4 +4 [0-9a-f]{16}  SKIPPED: valid config, not on this machine: device=cuda: no visible GPU$" ||
        fail "vae_scale_factor=8 is not valid-but-skipped: $l8"
    echo "$r8" | grep -Eq " +1 self +SKIPPED: valid config, not on this machine" ||
        fail "the vae_scale_factor=8 reference is not valid-but-skipped: $r8"
    echo "$out" | grep -q "^flux_multinode: 4 cases: 0 to run, 0 done, 2 CONFIG_ERROR, 2 SKIPPED" ||
        fail "unexpected dry-run summary"
else
    echo "$l8" | grep -Eq " pf4 +4 [0-9a-f]{16}  (run|SKIPPED: valid config, not on this machine: .*)$" ||
        fail "vae_scale_factor=8 does not validate: $l8"
fi
[ ! -e "$scratch/dry" ] || fail "--dry-run wrote $scratch/dry"

# ---- 2. the whole matrix, for real ------------------------------------------------------------
[ $nogpu -eq 1 ] || { echo "a GPU is visible: the sweep would run flux-dev; left to gpu tests"; echo ok; exit 0; }
out=$(timeout 60 "$repro" --matrix "$m" --results "$scratch/run" --progress plain 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "the sweep exited $rc: its CONFIG_ERRORs should be expected, the valid pair SKIPPED"
echo "$out" | grep -q "^flux_multinode: 4 cases: 0 ok, 2 CONFIG_ERROR, 0 CRASH, 0 HANG, 2 SKIPPED" ||
    fail "unexpected sweep summary"
n=0
for r in "$scratch"/run/flux_multinode/*/result.json; do
    [ -f "$r" ] || continue
    grep -q '"status":[[:space:]]*"CONFIG_ERROR"' "$r" || continue
    n=$((n + 1))
    grep -q '"stage":[[:space:]]*"validate"' "$r" || fail "$r: not rejected at validation"
    grep -Eq "$msg16" "$r" || fail "$r: the reason is not the validator's message"
    ls "$(dirname "$r")"/rank*.err >/dev/null 2>&1 && fail "$(dirname "$r"): a rank was launched"
done
[ $n -eq 2 ] || fail "$n CONFIG_ERROR results recorded, want 2"
echo "ok"
