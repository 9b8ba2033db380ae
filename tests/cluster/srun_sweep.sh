#!/bin/sh
# srun_sweep.sh — sweeps through `--launcher srun` on a real two-node Slurm cluster on
# this machine (slurm_up.sh: munged, slurmctld, slurmd n1 and n2), each run inside
# `salloc -N 2`, against the same sweeps through the local launcher.
#
#   srun_sweep.sh REPRO SCRATCH SOURCE_DIR COMM      (COMM: gloo | self, what the build has)
#
# 1. matrices/smoke.yaml: every case ok, the same verdicts and bitwise identical
#    latents and images as with --launcher local.
# 2. flux-tiny ulysses 2 x ring 2 with ranks_per_node 2 (common.sh): one srun step of
#    2 nodes x 2 ranks — result.json puts ranks 0, 1 on n1 and 2, 3 on n2 — with the
#    same bits as the local launcher's 4 ranks on one machine.
# 3. matrices/flux_multinode.yaml (its CPU part: the doubled VAE factor's expected
#    CONFIG_ERROR pair; the GPU pair is SKIPPED as valid): the same summary as locally.
# 4. faults (tests/cli/matrix_fake_worker.sh): rank 1 of a dp=2 case raises SIGSEGV ->
#    CRASH naming rank 1, node n2 and the signal; every rank of another dp=2 case
#    sleeps -> HANG at the deadline (the step is cancelled: no slurmstepd is left);
#    the sweep goes on with the other cases (ok) and exits 1.
# 5. one stalled rank (the other waits in the rendezvous): HANG with the waiting rank's
#    communication timeout, naming its node.
# 6. ci/nightly.sh --launcher srun on the 2x2 matrix: its cases run through srun.
# Skips (77): not root, the Slurm packages missing and not installable, no gloo backend.
set -u
repro=$1 scratch=$2 src=$3 comm=${4:-self}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
. "$here/slurm_up.sh"
[ "$comm" = gloo ] || skip "the gloo backend is not built: the cases run on gloo"
[ "$(id -u)" -eq 0 ] || skip "slurmd must run as root; run as root to test the srun launcher"
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
scratch=$(cd "$scratch" && pwd) # slurmd runs the ranks from its own working directory
unset REPRO_RANK REPRO_WORLD REPRO_LOCAL_RANK REPRO_STORE_DIR OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE \
      OMPI_COMM_WORLD_LOCAL_RANK SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_JOB_ID SLURM_JOB_NODELIST \
      RANK WORLD_SIZE LOCAL_RANK SLURM_CONF
export REPRO_CACHE="${REPRO_CACHE:-$scratch/cache}" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
t_all=$(now)
slurm_up "$scratch/slurm" 2
rc=$?
[ $rc -eq 77 ] && skip "no Slurm here (see above)"
[ $rc -eq 0 ] || fail "the test cluster did not come up"
trap slurm_down EXIT
trap 'exit 1' INT TERM HUP
echo "cluster up: $(sinfo -h -N -o '%N %t' | tr '\n' ' ') ($(elapsed "$t_all") s)"

# on NAME MATRIX ARGS...: the sweep inside a 2-node allocation; rc in $rc, output in NAME.log
on() {
    name=$1 m=$2; shift 2
    timeout -k 5 240 salloc -N 2 --exclusive -J "repro-test-$name" "$repro" --matrix "$m" --launcher srun \
        --results "$scratch/$name" --progress plain --no-report "$@" >"$scratch/$name.log" 2>&1
    rc=$?
}
# here_ NAME MATRIX ARGS...: the same with the local launcher
here_() {
    name=$1 m=$2; shift 2
    timeout -k 5 240 "$repro" --matrix "$m" --launcher local --results "$scratch/$name" --progress plain \
        --no-report "$@" >"$scratch/$name.log" 2>&1
    rc=$?
}

# ---- 1. smoke ----------------------------------------------------------------------------------
t0=$(now)
here_ smoke-local "$src/matrices/smoke.yaml"
[ $rc -eq 0 ] || { cat "$scratch/smoke-local.log"; fail "smoke, local launcher: exit $rc"; }
on smoke-srun "$src/matrices/smoke.yaml"
cat "$scratch/smoke-srun.log"
[ $rc -eq 0 ] || fail "smoke through srun: exit $rc"
grep -q "2 nodes (srun), cases packed by nodes" "$scratch/smoke-srun.log" || fail "the sweep did not use srun"
grep -q '"launcher":[[:space:]]*"srun"' "$scratch"/smoke-srun/smoke/*/result.json || fail "no launcher in result.json"
same_results "$scratch/smoke-srun/smoke" "$scratch/smoke-local/smoke"
same_results "$scratch/smoke-local/smoke" "$scratch/smoke-srun/smoke" >/dev/null
echo "smoke: local and srun agree ($(elapsed "$t0") s)"

# ---- 2. 2 nodes x 2 ranks ------------------------------------------------------------------------
t0=$(now)
tiny_matrices "$scratch"
here_ mn-local "$scratch/mn.yaml"
[ $rc -eq 0 ] || { cat "$scratch/mn-local.log"; fail "2x2, local launcher: exit $rc"; }
on mn-srun "$scratch/mn.yaml"
cat "$scratch/mn-srun.log"
[ $rc -eq 0 ] || fail "2x2 through srun: exit $rc"
r=$(grep -l '"world":[[:space:]]*4' "$scratch"/mn-srun/mn/*/result.json) || fail "no world-4 case"
tr -d ' \t\n' <"$r" | grep -q '"rank_nodes":\["n1","n1","n2","n2"\]' ||
    fail "the 4 ranks were not placed 2 on n1, 2 on n2: $(grep -A6 rank_nodes "$r")"
grep -q '"nodes":[[:space:]]*2' "$r" || fail "result.json does not say 2 nodes"
same_results "$scratch/mn-srun/mn" "$scratch/mn-local/mn"
echo "2 nodes x 2 ranks: srun and local agree ($(elapsed "$t0") s)"

# ---- 3. flux_multinode.yaml ----------------------------------------------------------------------
check_flux_multinode srun

# ---- 4. a crash and a hang inside srun steps -----------------------------------------------------
check_faults n1 n2
# The cancelled step's processes end within Slurm's KillWait (2 s in slurm_up.sh's configuration).
i=0
while pgrep -x slurmstepd >/dev/null; do
    i=$((i + 1))
    [ $i -gt 50 ] && fail "a step is still running 10 s after the sweep: $(pgrep -ax slurmstepd)"
    sleep 0.2
done
echo "faults: CRASH and HANG through srun, the sweep went on ($t s)"

# ---- 5. one rank of a step stalls ----------------------------------------------------------------
# Rank 1 (on n2) sleeps; rank 0 (on n1) waits for it in the rendezvous until its communication
# timeout (the run's timeout, 3 s) and exits 4: HANG, as with the local launcher, naming rank 0's
# node and the timeout; srun's kill-on-bad-exit then ends the stalled rank.
t0=$(now)
REPRO_TEST_REPRO=$repro REPRO_TEST_FAULT='stall:"dp=2 attention=math"' \
    on stall "$src/matrices/smoke.yaml" --timeout 3 --filter dp=2 --filter attention=math \
    --worker-exe "$src/tests/cli/matrix_fake_worker.sh"
t=$(elapsed "$t0")
cat "$scratch/stall.log"
[ $rc -eq 1 ] || fail "a sweep with a stalled rank exited $rc, want 1"
grep -Eq "^\[[0-9]/2\] HANG +[0-9a-f]{16} dp=2 attention=math .*comm-timeout: rank 0 of 2 \(node n1\) failed first: exit 4 \(communication timeout" \
    "$scratch/stall.log" || fail "no HANG naming rank 0 on n1 and its communication timeout"
grep -Eq "^\[[0-9]/2\] ok .* dp=1 attention=math" "$scratch/stall.log" || fail "the reference did not run ok"
echo "stall: HANG through srun ($t s)"

# ---- 6. the nightly script takes the same option ---------------------------------------------------
t0=$(now)
REPRO=$repro NIGHTLY_MATRICES=$scratch/mn.yaml timeout -k 5 240 salloc -N 2 --exclusive -J repro-test-nightly \
    bash "$src/ci/nightly.sh" --launcher srun cluster-test "$scratch/nightly" >"$scratch/nightly.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$scratch/nightly.log"; fail "ci/nightly.sh --launcher srun exited $rc"; }
n=$(grep -l '"launcher":[[:space:]]*"srun"' "$scratch"/nightly/cluster-test/runs/*/results/mn/*/result.json | wc -l)
[ "$n" -eq 2 ] || fail "ci/nightly.sh --launcher srun: $n of 2 cases ran through srun"
echo "nightly: ci/nightly.sh --launcher srun ran its sweep through srun ($(elapsed "$t0") s)"
echo "total $(elapsed "$t_all") s"
echo ok
