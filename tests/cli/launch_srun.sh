#!/bin/sh
# launch_srun.sh — `repro worker` as srun would start it. Slurm is not
# installed here, so the test plays srun: it starts the processes itself with
# SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID set, as srun does for each task.
#   launch_srun.sh REPRO SCRATCH MODE COMM      (COMM: gloo | self)
# modes:
#   selftest      2 background tasks, comm-selftest over gloo -> both "rank R/2 ok (gloo, srun)"
#   missing-rank  SLURM_NTASKS=3 but only tasks 0 and 1 started -> both exit 4 within the
#                 comm timeout, with the comm layer's message naming rank 2 as never joined
#   bad-env       SLURM_PROCID >= SLURM_NTASKS, non-numeric -> exit 3 with the variable named
set -u
repro=$1 scratch=$2 mode=$3 comm=${4:-self}
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
unset REPRO_RANK REPRO_WORLD REPRO_LOCAL_RANK REPRO_STORE_DIR OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE \
      RANK WORLD_SIZE LOCAL_RANK
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# task R N ARGS...: one srun task in the background, output in $scratch/taskR.{out,err}
task() {
    r=$1 n=$2; shift 2
    SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_LOCALID=$r SLURM_JOB_ID=4242 \
        timeout 60 "$repro" worker "$@" >"$scratch/task$r.out" 2>"$scratch/task$r.err" &
}

case "$mode" in
selftest)
    [ "$comm" = gloo ] || skip "the gloo backend is not built"
    task 0 2 --job comm-selftest --backend gloo --timeout 30 --store-dir "$scratch/store"
    p0=$!
    task 1 2 --job comm-selftest --backend gloo --timeout 30 --store-dir "$scratch/store"
    p1=$!
    wait $p0; rc0=$?
    wait $p1; rc1=$?
    cat "$scratch"/task*.out "$scratch"/task*.err
    if [ $rc0 -ne 0 ] || [ $rc1 -ne 0 ]; then fail "exit codes $rc0 $rc1"; fi
    grep -q "^rank 0/2 ok (gloo, srun)" "$scratch/task0.out" || fail "task 0 did not read SLURM_* or failed"
    grep -q "^rank 1/2 ok (gloo, srun)" "$scratch/task1.out" || fail "task 1 did not read SLURM_* or failed"
    ;;
missing-rank)
    [ "$comm" = gloo ] || skip "the gloo backend is not built"
    t0=$(now)
    task 0 3 --job comm-selftest --backend gloo --timeout 2 --store-dir "$scratch/store"
    p0=$!
    task 1 3 --job comm-selftest --backend gloo --timeout 2 --store-dir "$scratch/store"
    p1=$!
    wait $p0; rc0=$?
    wait $p1; rc1=$?
    t=$(elapsed "$t0")
    cat "$scratch"/task*.err
    echo "elapsed: $t s (comm timeout 2 s)"
    if [ $rc0 -ne 4 ] || [ $rc1 -ne 4 ]; then fail "exit codes $rc0 $rc1, want 4 4 (communication timeout)"; fi
    for r in 0 1; do
        grep -q "worker rank $r/3: .*rank 2 (never joined)" "$scratch/task$r.err" || fail "task $r: rank 2 not named"
    done
    awk -v t="$t" 'BEGIN { exit !(t < 15) }' || fail "took $t s"
    ;;
bad-env)
    out=$(SLURM_PROCID=2 SLURM_NTASKS=2 "$repro" worker --job sleep --seconds 0 2>&1); rc=$?
    echo "$out"
    [ $rc -eq 3 ] || fail "SLURM_PROCID=2 of 2: exit $rc, want 3"
    echo "$out" | grep -q "SLURM_PROCID=2 is not below SLURM_NTASKS=2" || fail "message does not name the variables"
    out=$(SLURM_PROCID=one SLURM_NTASKS=2 "$repro" worker --job sleep --seconds 0 2>&1); rc=$?
    echo "$out"
    [ $rc -eq 3 ] || fail "SLURM_PROCID=one: exit $rc, want 3"
    echo "$out" | grep -q "SLURM_PROCID='one' is not a non-negative integer" || fail "message"
    # an salloc shell exports SLURM_NTASKS alone: a plain single process, not an error
    SLURM_NTASKS=4 "$repro" worker --job sleep --seconds 0 2>/dev/null || fail "SLURM_NTASKS alone rejected"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
echo "ok"
