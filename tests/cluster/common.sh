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

# The checks both launchers' sweeps make; the caller defines on NAME MATRIX [ARGS] (a sweep
# through its launcher into $scratch/NAME, exit status in rc) and here_ (the same locally),
# and sets repro, src, scratch. W: the launcher's word (srun | mpirun).

# matrices/flux_multinode.yaml through the launcher and locally: the same exit, summary and results.
check_flux_multinode() { # W
    here_ fm-local "$src/matrices/flux_multinode.yaml"
    l=$rc
    on "fm-$1" "$src/matrices/flux_multinode.yaml"
    [ $l -eq $rc ] || fail "flux_multinode: exit $l locally, $rc through $1"
    a=$(grep "^flux_multinode: 4 cases:" "$scratch/fm-local.log") b=$(grep "^flux_multinode: 4 cases:" "$scratch/fm-$1.log")
    echo "$b"
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "flux_multinode: '$a' locally, '$b' through $1"
    same_results "$scratch/fm-$1/flux_multinode" "$scratch/fm-local/flux_multinode"
}

# The fake worker crashes rank 1 of one case and stalls every rank of another: CRASH naming rank 1,
# its node N1 and SIGSEGV; HANG at the deadline naming both ranks and nodes (N0, N1); the other two
# cases ok; the whole sweep inside a minute (the deadline is 3 s per planned run). Sets t (seconds).
check_faults() { # N0 N1
    t0=$(now)
    REPRO_TEST_REPRO=$repro REPRO_TEST_FAULT='crash:"dp=2 attention=math";hang:"dp=2 attention=flash"' \
        on faults "$src/matrices/smoke.yaml" --timeout 3 --worker-exe "$src/tests/cli/matrix_fake_worker.sh"
    t=$(elapsed "$t0")
    cat "$scratch/faults.log"
    [ $rc -eq 1 ] || fail "a sweep with a CRASH and a HANG exited $rc, want 1"
    grep -Eq "^\[[0-9]/4\] CRASH +[0-9a-f]{16} dp=2 attention=math .*crash: rank 1 of 2 \(node $2\) failed first: killed by SIGSEGV" \
        "$scratch/faults.log" || fail "no CRASH naming rank 1, node $2 and SIGSEGV"
    grep -Eq "^\[[0-9]/4\] HANG +[0-9a-f]{16} dp=2 attention=flash .*hang: the [0-9.]+ s deadline passed with ranks 0 \(node $1\), 1 \(node $2\) still running" \
        "$scratch/faults.log" || fail "no HANG at the deadline naming both ranks and nodes"
    [ "$(grep -Ec '^\[[0-9]/4\] ok ' "$scratch/faults.log")" -eq 2 ] || fail "the other two cases did not run ok"
    awk -v x="$t" 'BEGIN { exit !(x < 60) }' || fail "the fault sweep took $t s"
}
