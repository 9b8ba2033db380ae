#!/bin/sh
# mpirun_sweep.sh — sweeps through `--launcher mpirun --hostfile FILE` on two hosts that
# are two network namespaces of this machine joined by a veth pair (as
# tests/multinode/netns.sh builds them), against the same sweeps through the local launcher.
#
#   mpirun_sweep.sh REPRO SCRATCH SOURCE_DIR COMM      (COMM: gloo | self)
#
#   host0: namespace rpcl-<pid>-node0, 10.79.0.1 — the sweep and mpirun run here
#   host1: namespace rpcl-<pid>-node1, 10.79.0.2
# Both ends of the veth are named rpclink inside their namespaces, so one
# GLOO_SOCKET_IFNAME=rpclink (forwarded by mpirun -x) serves every rank. mpirun starts
# its daemon on host1 through Open MPI's rsh agent (OMPI_MCA_plm_rsh_agent): here a shim
# that runs the command in host1's namespace (`ip netns exec`) instead of ssh — the only
# stand-in; mpirun, its daemons, its out-of-band TCP and the ranks' Gloo traffic are real
# and cross the veth link. The hostfile lists the two addresses.
#
# 1. matrices/smoke.yaml: every case ok, the same verdicts and bits as the local launcher.
# 2. flux-tiny ulysses 2 x ring 2 with ranks_per_node 2: ranks 0, 1 on host0 and 2, 3 on
#    host1, the same bits as locally.
# 3. matrices/flux_multinode.yaml (CPU part): the same summary as locally.
# 4. faults: rank 1 raises SIGSEGV -> CRASH naming rank 1, host1 and the signal; a stalled
#    case -> HANG at the deadline; the sweep goes on; no rank is left on either host.
# Skips (77): not root, ip netns not permitted, mpirun (openmpi-bin) missing and not
# installable, no gloo backend.
set -u
repro=$1 scratch=$2 src=$3 comm=${4:-self}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
[ "$comm" = gloo ] || skip "the gloo backend is not built: the cases run on gloo"
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (ip netns add)"
command -v ip >/dev/null 2>&1 || skip "ip (iproute2) is not installed"
if ! command -v mpirun >/dev/null 2>&1 && [ -z "${REPRO_NO_APT:-}" ]; then
    echo "installing openmpi-bin (apt-get)"
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get -o DPkg::Lock::Timeout=120 install -y -q openmpi-bin >/dev/null 2>&1
fi
command -v mpirun >/dev/null 2>&1 || skip "mpirun is not installed and apt-get could not install openmpi-bin"
mpirun --version 2>/dev/null | grep -q "Open MPI" || skip "mpirun is not Open MPI's"
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
scratch=$(cd "$scratch" && pwd)
unset REPRO_RANK REPRO_WORLD REPRO_LOCAL_RANK REPRO_STORE_DIR OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE \
      OMPI_COMM_WORLD_LOCAL_RANK SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_JOB_ID RANK WORLD_SIZE LOCAL_RANK
export REPRO_CACHE="${REPRO_CACHE:-$scratch/cache}" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
t_all=$(now)

ns0="rpcl-$$-node0" ns1="rpcl-$$-node1" veth0="rpcl$$a" veth1="rpcl$$b"
addr0=10.79.0.1 addr1=10.79.0.2
cleanup() {
    for ns in "$ns0" "$ns1"; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    done
    ip netns del "$ns0" 2>/dev/null
    ip netns del "$ns1" 2>/dev/null
    ip link del "$veth0" 2>/dev/null
    return 0
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
ip netns add "$ns0" 2>"$scratch/netns.err" || skip "ip netns add is not permitted here: $(cat "$scratch/netns.err")"
ip netns add "$ns1" || fail "ip netns add $ns1"
ip link add "$veth0" type veth peer name "$veth1" || fail "cannot create the veth pair"
ip link set "$veth0" netns "$ns0" && ip link set "$veth1" netns "$ns1" || fail "cannot move the veth ends"
ip -n "$ns0" link set "$veth0" name rpclink && ip -n "$ns1" link set "$veth1" name rpclink || fail "rename"
ip -n "$ns0" addr add "$addr0/24" dev rpclink && ip -n "$ns1" addr add "$addr1/24" dev rpclink || fail "addresses"
for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up && ip -n "$ns" link set rpclink up || fail "links up"; done

# Open MPI's rsh agent: "AGENT HOST COMMAND...": COMMAND in HOST's namespace
cat >"$scratch/rsh" <<SH
#!/bin/sh
h=\$1; shift
case "\$h" in $addr0) ns=$ns0 ;; $addr1) ns=$ns1 ;; *) echo "rsh shim: unknown host \$h" >&2; exit 255 ;; esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
SH
chmod +x "$scratch/rsh"
printf '# the two namespace hosts\n%s slots=2\n%s slots=2\n' "$addr0" "$addr1" >"$scratch/hosts"
export OMPI_MCA_plm_rsh_agent="$scratch/rsh" OMPI_MCA_oob_tcp_if_include=rpclink \
       OMPI_MCA_btl_tcp_if_include=rpclink GLOO_SOCKET_IFNAME=rpclink

# on NAME MATRIX ARGS...: the sweep on host0 through mpirun; rc in $rc, output in NAME.log
on() {
    name=$1 m=$2; shift 2
    timeout -k 5 240 ip netns exec "$ns0" "$repro" --matrix "$m" --launcher mpirun --hostfile "$scratch/hosts" \
        --results "$scratch/$name" --progress plain --no-report "$@" >"$scratch/$name.log" 2>&1
    rc=$?
}
here_() {
    name=$1 m=$2; shift 2
    env -u GLOO_SOCKET_IFNAME timeout -k 5 240 "$repro" --matrix "$m" --launcher local \
        --results "$scratch/$name" --progress plain --no-report "$@" >"$scratch/$name.log" 2>&1
    rc=$?
}

# ---- 1. smoke ----------------------------------------------------------------------------------
t0=$(now)
here_ smoke-local "$src/matrices/smoke.yaml"
[ $rc -eq 0 ] || { cat "$scratch/smoke-local.log"; fail "smoke, local launcher: exit $rc"; }
on smoke-mpirun "$src/matrices/smoke.yaml"
cat "$scratch/smoke-mpirun.log"
[ $rc -eq 0 ] || fail "smoke through mpirun: exit $rc"
grep -q "2 nodes (mpirun), cases packed by nodes" "$scratch/smoke-mpirun.log" || fail "the sweep did not use mpirun"
same_results "$scratch/smoke-mpirun/smoke" "$scratch/smoke-local/smoke"
same_results "$scratch/smoke-local/smoke" "$scratch/smoke-mpirun/smoke" >/dev/null
echo "smoke: local and mpirun agree ($(elapsed "$t0") s)"

# ---- 2. 2 hosts x 2 ranks ------------------------------------------------------------------------
t0=$(now)
tiny_matrices "$scratch"
here_ mn-local "$scratch/mn.yaml"
[ $rc -eq 0 ] || { cat "$scratch/mn-local.log"; fail "2x2, local launcher: exit $rc"; }
on mn-mpirun "$scratch/mn.yaml"
cat "$scratch/mn-mpirun.log"
[ $rc -eq 0 ] || fail "2x2 through mpirun: exit $rc"
r=$(grep -l '"world":[[:space:]]*4' "$scratch"/mn-mpirun/mn/*/result.json) || fail "no world-4 case"
tr -d ' \t\n' <"$r" | grep -q "\"rank_nodes\":\[\"$addr0\",\"$addr0\",\"$addr1\",\"$addr1\"\]" ||
    fail "the 4 ranks were not placed 2 per host: $(grep -A6 rank_nodes "$r")"
same_results "$scratch/mn-mpirun/mn" "$scratch/mn-local/mn"
echo "2 hosts x 2 ranks: mpirun and local agree ($(elapsed "$t0") s)"

# ---- 3. flux_multinode.yaml ----------------------------------------------------------------------
check_flux_multinode mpirun

# ---- 4. a crash and a hang -----------------------------------------------------------------------
check_faults "$addr0" "$addr1"
# nothing of the sweep is left on either host (the stalled ranks were killed with mpirun's job)
i=0
while [ -n "$(ip netns pids "$ns0")$(ip netns pids "$ns1")" ]; do
    i=$((i + 1))
    [ $i -gt 50 ] && fail "processes left in the hosts 10 s after the sweep: $(ip netns pids "$ns0") $(ip netns pids "$ns1")"
    sleep 0.2
done
echo "faults: CRASH and HANG through mpirun, the sweep went on ($t s)"
echo "total $(elapsed "$t_all") s"
echo ok
