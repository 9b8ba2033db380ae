#!/bin/sh
# invariant.sh — numerics invariant on the CUDA device (issue 19, docs/invariant.md): every
# exact layout bitwise its serial run on the GPU, as tests/cli/classify_matrix.sh's set
# invariant checks it on the CPU.
#
#   invariant.sh REPRO SCRATCH SOURCE_DIR [FAMILIES]
#     FAMILIES  default "dit sd3 flux" (tests/classify/invariant-<family>.yaml); "ditxl" is
#               dit-xl-2-128 at depth 4
#
# The CPU matrices themselves, with `device: "cuda:#0"` added to their base: every case, the
# serial reference included, runs its models on GPU 0 (dp, cfg, ulysses, ring and USP ranks
# share that GPU, their exchanges over Gloo), fp32 and bf16, batches of 1, 3 and 8. Then
# classify_matrix.sh's checks: every layout labelled identical is identical (any differing
# bit of any layer, step, latent or image would be a BUG), the planted faults are BUG /
# MISMATCH, and an item's trajectory is bitwise the same in batches of 1, 3 and 8. Also: the
# cases' traces say the canonical attention ran on the GPU (cuda-canonical) and none says
# device cpu, so a case that fell back to the host would fail.
# Exit 77 (skipped) without a CUDA build or a visible GPU (tests/gpu/gpu_detect.sh).
set -u
repro=$1 scratch=$2 src=$3 fams=${4:-dit sd3 flux}
py=${REPRO_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=$(command -v python3 || echo python3)
fail() { echo "FAIL: $*" >&2; exit 1; }
unset REPRO_RANK REPRO_WORLD REPRO_LOCAL_RANK REPRO_STORE_DIR RANK WORLD_SIZE LOCAL_RANK REPRO_DEVICE
rm -rf "$scratch" && mkdir -p "$scratch/src/tests/classify" || exit 1
. "$src/tests/gpu/gpu_detect.sh"
echo "repro sees $ngpu GPU(s); every rank of a case runs on GPU 0"

for fam in $fams; do
    m=$src/tests/classify/invariant-$fam.yaml
    [ -s "$m" ] || fail "no matrix $m"
    # the base gains the device; the name another store folder
    sed -e '/^base: {/s/}[[:space:]]*$/, device: "cuda:#0"}/' -e 's/^name: classify-invariant-/name: gpu-invariant-/' \
        "$m" >"$scratch/src/tests/classify/invariant-$fam.yaml"
    grep -q '^base: {.*device: "cuda:#0"}' "$scratch/src/tests/classify/invariant-$fam.yaml" ||
        fail "could not put the device into $m's base line"
done
set=invariant
[ "$fams" = ditxl ] && set=invariantxl
REPRO_PYTHON=$py sh "$src/tests/cli/classify_matrix.sh" "$repro" "$scratch/run" "$set" "$scratch/src" "$fams"
rc=$?
[ $rc -eq 0 ] || fail "classify_matrix.sh $set on the GPU exited $rc (above)"
n_gpu=$(grep -rla 'cuda-canonical' "$scratch/run/results" --include=trace.safetensors | wc -l)
n_cpu=$(grep -rla '"note/device":"cpu"' "$scratch/run/results" --include=trace.safetensors | wc -l)
echo "traces naming the GPU's canonical attention: $n_gpu; traces of a CPU run: $n_cpu"
[ "$n_gpu" -gt 0 ] && [ "$n_cpu" -eq 0 ] || fail "not every case ran the canonical attention on the GPU"
echo ok
