#!/bin/sh
# common.sh — what the cluster tests (srun_sweep.sh, mpirun_sweep.sh) share; sourced.
#   fail / skip / now / elapsed     as in tests/multinode/netns.sh
#   same_results A B                every case directory in A (a sweep's <results>/<matrix>)
#                                   has a twin in B with the same status, the same verdict
#                                   and bitwise identical latents and images
#   tiny_matrices DIR               writes DIR/mn.yaml: flux-tiny, ulysses 2 x ring 2 (world 4)
#                                   with ranks_per_node 2, i.e. 2 nodes x 2 ranks on a cluster
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# field FILE KEY: the string value of "KEY": "..." in a JSON file (first occurrence)
field() { sed -n "s/^[[:space:]]*\"$2\":[[:space:]]*\"\([^\"]*\)\".*/\1/p" "$1" | head -1; }

same_results() {
    a=$1 b=$2 n=0
    for d in "$a"/????????????????; do
        [ -d "$d" ] || continue
        id=${d##*/} o=$b/$id
        [ -d "$o" ] || fail "case $id is in $a but not in $b"
        sa=$(field "$d/result.json" status) sb=$(field "$o/result.json" status)
        [ "$sa" = "$sb" ] || fail "case $id: status $sa vs $sb"
        if [ -f "$d/classification.json" ] || [ -f "$o/classification.json" ]; then
            va=$(field "$d/classification.json" verdict) vb=$(field "$o/classification.json" verdict)
            [ "$va" = "$vb" ] || fail "case $id: verdict $va vs $vb"
        fi
        for f in "$d"/latents.safetensors "$d"/image-*.png; do
            [ -f "$f" ] || continue
            cmp -s "$f" "$o/${f##*/}" || fail "case $id: ${f##*/} differs between $a and $b"
        done
        [ "$sa" != ok ] || [ -f "$d/latents.safetensors" ] || fail "case $id: ok but no latents"
        echo "  $id: $sa, verdict ${va:-none}, outputs identical"
        n=$((n + 1))
    done
    [ $n -gt 0 ] || fail "no case directories in $a"
}

tiny_matrices() {
    cat >"$1/mn.yaml" <<'YAML'
# flux-tiny laid out as 2 nodes x 2 ranks: the ring groups span the nodes
name: mn
base: {model: flux-tiny, steps: 4, sampler: euler, cfg: 1.0, guidance: 3.5, backend: gloo, threads: 1,
       mode: deterministic, device: cpu}
prompts: ["a red fox"]
seeds: [0]
include:
  - {ulysses: 2, ring: 2, name: "ulysses 2 x ring 2"}
ranks_per_node: 2
classify: false
timeout: 60
YAML
}
