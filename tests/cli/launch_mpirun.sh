#!/bin/sh
# launch_mpirun.sh — `repro worker` started by a real Open MPI mpirun (Debian
# openmpi-bin): the ranks must find their rank and world in OMPI_COMM_WORLD_*.
# repro never calls MPI itself; mpirun is only the process launcher here.
#   launch_mpirun.sh REPRO SCRATCH MODE COMM      (COMM: gloo | self)
# modes:
#   selftest  mpirun -n 2 worker --job comm-selftest --backend gloo --store-dir DIR -> both ok
#   crash     mpirun -n 2 worker --job crash --crash-rank 1 -> rank 1 (and only rank 1, as
#             numbered by mpirun) raises SIGKILL; mpirun fails; nothing is left running
# Skips (77) when mpirun is not installed (apt-get install openmpi-bin).
set -u
repro=$1 scratch=$2 mode=$3 comm=${4:-self}
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
command -v mpirun >/dev/null 2>&1 || skip "mpirun not installed (Debian: apt-get install openmpi-bin)"
mpirun --version 2>/dev/null | grep -q "Open MPI" || skip "mpirun is not Open MPI's ($(mpirun --version 2>&1 | head -1))"
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
unset REPRO_RANK REPRO_WORLD REPRO_LOCAL_RANK REPRO_STORE_DIR SLURM_PROCID SLURM_NTASKS RANK WORLD_SIZE
# Loopback only, no ssh: keep Open MPI's own transports local and quiet.
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_plm_rsh_agent=false
tag="launchtest-$$-mpirun-$mode"
mpi() { timeout 120 mpirun --oversubscribe --allow-run-as-root -n 2 "$@"; }

case "$mode" in
selftest)
    [ "$comm" = gloo ] || skip "the gloo backend is not built"
    out=$(mpi "$repro" worker --job comm-selftest --backend gloo --timeout 30 --store-dir "$scratch/store" \
          --tag "$tag" 2>&1)
    rc=$?
    echo "$out"
    [ $rc -eq 0 ] || fail "mpirun exit $rc"
    echo "$out" | grep -q "^rank 0/2 ok (gloo, mpirun)" || fail "rank 0 did not pass (or did not read OMPI_*)"
    echo "$out" | grep -q "^rank 1/2 ok (gloo, mpirun)" || fail "rank 1 did not pass (or did not read OMPI_*)"
    ;;
crash)
    out=$(mpi "$repro" worker --job crash --crash-rank 1 --signal KILL --seconds 0.5 --others-seconds 30 \
          --tag "$tag" 2>&1)
    rc=$?
    echo "$out"
    [ $rc -ne 0 ] || fail "mpirun exit 0 although rank 1 was killed"
    [ $rc -ne 124 ] || fail "mpirun did not end after the crash (timeout)"
    echo "$out" | grep -q "worker rank 1/2: raising SIGKILL" || fail "rank 1 (by OMPI_COMM_WORLD_RANK) did not crash"
    echo "$out" | grep -q "worker rank 0/2: raising" && fail "rank 0 crashed too: ranks were not told apart"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
i=0
while pgrep -f "$tag" >/dev/null; do
    i=$((i + 1)); [ $i -gt 50 ] && fail "ranks still alive after mpirun returned"; sleep 0.1
done
echo "ok"
