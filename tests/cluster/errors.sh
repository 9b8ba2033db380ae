#!/bin/sh
# errors.sh — the cluster launchers' usage errors, before anything runs (no root, no
# Slurm, no Open MPI needed): each exits non-zero at once with a message naming what
# is missing, and leaves no case directory behind.
#   errors.sh REPRO SCRATCH SOURCE_DIR
set -u
repro=$1 scratch=$2 src=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
unset SLURM_JOB_ID SLURM_JOB_NODELIST
m=$src/matrices/smoke.yaml

# expect RC TEXT ARGS...: `repro --matrix smoke.yaml ARGS` exits RC with TEXT on stderr
expect() {
    want=$1 text=$2; shift 2
    out=$(timeout 20 "$repro" --matrix "$m" --results "$scratch/res" --progress plain --no-report "$@" 2>&1)
    rc=$?
    [ $rc -eq "$want" ] || fail "$*: exit $rc, want $want: $out"
    case "$out" in *"$text"*) ;; *) fail "$*: no '$text' in: $out" ;; esac
    echo "ok: $* -> exit $rc: ...$text..."
}
expect 2 "SLURM_JOB_ID is not set, so this is not inside a Slurm allocation" --launcher srun
expect 2 "--launcher mpirun needs --hostfile FILE" --launcher mpirun
expect 1 "--hostfile $scratch/none: cannot read it" --launcher mpirun --hostfile "$scratch/none"
printf '# nothing\n\n' >"$scratch/empty"
expect 2 "--hostfile $scratch/empty lists no host" --launcher mpirun --hostfile "$scratch/empty"
printf 'a\nb slots=2\na\n' >"$scratch/twice"
expect 2 "$scratch/twice:3: node 'a' is listed twice" --launcher mpirun --hostfile "$scratch/twice"
expect 2 "launcher 'slurm': local, srun or mpirun" --launcher slurm
expect 2 "--hostfile is for --launcher mpirun" --launcher local --hostfile "$scratch/twice"
# a missing binary: PATH without it (only timeout there; repro is named by its full path)
empty=$scratch/emptybin
mkdir -p "$empty" && ln -s "$(command -v timeout)" "$empty/timeout" || exit 1
PATH=$empty expect 1 "mpirun not found on PATH (Open MPI: apt-get install openmpi-bin)" --launcher mpirun \
    --hostfile "$scratch/twice"
SLURM_JOB_ID=7 SLURM_JOB_NODELIST=n1 PATH=$empty expect 1 "srun not found on PATH" --launcher srun
# the matrix key
sed 's/^name: smoke$/name: smoke\nlauncher: pbs/' "$m" >"$scratch/bad.yaml"
out=$(timeout 20 "$repro" --matrix "$scratch/bad.yaml" --results "$scratch/res" 2>&1)
rc=$?
[ $rc -eq 2 ] || fail "launcher: pbs: exit $rc"
echo "$out" | grep -Eq "bad.yaml:[0-9]+:[0-9]+: field 'launcher': \"pbs\" is not a launcher; use local, srun or mpirun" ||
    fail "launcher: pbs: $out"
echo "ok: launcher: pbs -> $out"
sed 's/^name: smoke$/name: smoke\nlauncher: srun/' "$m" >"$scratch/srun.yaml"
out=$(timeout 20 "$repro" --matrix "$scratch/srun.yaml" --results "$scratch/res" 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q "SLURM_JOB_ID is not set" || fail "launcher: srun in the matrix is not used: $out"
echo "ok: launcher: srun from the matrix outside an allocation -> exit 2"
ls "$scratch"/res/smoke/???????????????? >/dev/null 2>&1 && fail "a case directory was written"
echo ok
