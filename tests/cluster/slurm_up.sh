#!/bin/sh
# slurm_up.sh — a two-node Slurm cluster on this machine, for the cluster tests:
# munged, slurmctld and two slurmd (NodeName n1 and n2, both NodeHostname localhost,
# distinct ports; slurmd -N picks the node), all run as root from Debian's packages
# (slurmctld, slurmd, munge) with a private configuration under DIR.
#
#   . slurm_up.sh        then: slurm_up DIR CPUS   /   slurm_down
#
# slurm_up exports SLURM_CONF (the clients read it) and returns 0 once both nodes are
# idle; 77 (skip) when not root or the packages are missing and cannot be installed;
# 1 when a daemon does not come up (its log is printed). Ports come from the pid, so
# parallel tests do not collide. slurm_down kills exactly the daemons slurm_up started
# (their pid files) and is safe to call twice. Every wait is bounded.

slurm_say() { echo "slurm_up: $*" >&2; }

# slurm_pkgs: 0 when the programs are there, after trying apt-get once when not.
slurm_pkgs() {
    need="munged slurmctld slurmd srun salloc scancel squeue sinfo"
    missing=0
    for p in $need; do command -v "$p" >/dev/null 2>&1 || missing=1; done
    [ $missing -eq 0 ] && return 0
    [ -n "${REPRO_NO_APT:-}" ] && return 1
    slurm_say "installing slurmctld slurmd munge (apt-get)"
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get -o DPkg::Lock::Timeout=120 install -y -q slurmctld slurmd slurm-client munge \
        >/dev/null 2>&1 || return 1
    for p in $need; do command -v "$p" >/dev/null 2>&1 || return 1; done
    return 0
}

slurm_up() {
    sdir=$1 cpus=${2:-2}
    [ "$(id -u)" -eq 0 ] || { slurm_say "not root: slurmd must run as root"; return 77; }
    slurm_pkgs || { slurm_say "slurmctld/slurmd/munge are not installed and apt-get could not install them"; return 77; }
    mkdir -p "$sdir/state" "$sdir/spool-n1" "$sdir/spool-n2" "$sdir/munge" || return 1
    # munge: a key of our own and a socket of our own, so a system munged is left alone
    if [ ! -s "$sdir/munge/munge.key" ]; then
        dd if=/dev/urandom of="$sdir/munge/munge.key" bs=1024 count=1 2>/dev/null || return 1
    fi
    chmod 700 "$sdir/munge" && chmod 400 "$sdir/munge/munge.key"
    msock=$sdir/munge/munge.socket
    munged --force --key-file="$sdir/munge/munge.key" --socket="$msock" --pid-file="$sdir/munge/munged.pid" \
        --log-file="$sdir/munge/munged.log" --seed-file="$sdir/munge/seed" 2>"$sdir/munge/start.err" ||
        { cat "$sdir/munge/start.err" >&2; slurm_say "munged did not start"; return 1; }
    base=$((20000 + ($$ % 2000) * 4))
    cat >"$sdir/slurm.conf" <<CONF
ClusterName=repro$$
SlurmctldHost=localhost
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$msock
CredType=cred/munge
StateSaveLocation=$sdir/state
SlurmdSpoolDir=$sdir/spool-%n
SlurmctldPidFile=$sdir/slurmctld.pid
SlurmdPidFile=$sdir/slurmd-%n.pid
SlurmctldLogFile=$sdir/slurmctld.log
SlurmdLogFile=$sdir/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MessageTimeout=10
KillWait=2
InactiveLimit=0
UnkillableStepTimeout=30
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + 2)) CPUs=$cpus State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + 3)) CPUs=$cpus State=UNKNOWN
PartitionName=repro Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
    export SLURM_CONF=$sdir/slurm.conf
    slurmctld -i -f "$SLURM_CONF" 2>"$sdir/slurmctld.err" || { cat "$sdir/slurmctld.err" >&2; return 1; }
    for n in n1 n2; do
        slurmd -N $n -f "$SLURM_CONF" 2>"$sdir/slurmd-$n.err" || { cat "$sdir/slurmd-$n.err" >&2; return 1; }
    done
    i=0
    until [ "$(sinfo -h -o '%t' -n n1,n2 2>/dev/null | sort -u | tr -d ' \n')" = idle ]; do
        i=$((i + 1))
        if [ $i -gt 150 ]; then
            sinfo -N -l >&2
            tail -20 "$sdir/slurmctld.log" "$sdir"/slurmd-n*.log >&2
            slurm_say "the two nodes did not become idle in 30 s"
            return 1
        fi
        sleep 0.2
    done
    SLURM_UP_DIR=$sdir
    return 0
}

slurm_down() {
    [ -n "${SLURM_UP_DIR:-}" ] || return 0
    for f in "$SLURM_UP_DIR"/slurmd-n1.pid "$SLURM_UP_DIR"/slurmd-n2.pid "$SLURM_UP_DIR"/slurmctld.pid \
        "$SLURM_UP_DIR"/munge/munged.pid; do
        [ -s "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null
    done
    sleep 0.5
    for f in "$SLURM_UP_DIR"/slurmd-n1.pid "$SLURM_UP_DIR"/slurmd-n2.pid "$SLURM_UP_DIR"/slurmctld.pid \
        "$SLURM_UP_DIR"/munge/munged.pid; do
        [ -s "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
        rm -f "$f"
    done
    SLURM_UP_DIR=
    return 0
}
