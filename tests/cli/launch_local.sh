#!/bin/sh
# launch_local.sh — `repro launch` + `repro worker` on this machine.
#   launch_local.sh REPRO SCRATCH MODE COMM      (COMM: gloo | self, what the build has)
# modes:
#   ok          1..4 ranks of comm-selftest (gloo; without gloo: self for 1 rank, sleep jobs) -> all ok
#   crash       rank 1 SIGKILLed mid-run (inside a gloo barrier when there is gloo), and a
#               SIGSEGV without a communicator -> that rank and signal named, the others
#               killed, back within seconds of a 60 s deadline, nothing left running
#   exitcode    worker exit codes 3 (config), 4 (comm timeout), 7 -> launch statuses and codes
#   rendezvous  world 3 where rank 2 joins 60 s late -> ranks fail with the comm layer's
#               rendezvous timeout naming rank 2, reported as comm-timeout
#   hang        a sleep longer than the deadline -> HANG naming the running ranks, exit 124,
#               the process group killed, no process of the run left (pgrep on a marker)
#   deadlock    3 gloo ranks that each receive from the next one first (rank 1 computes 2 s
#               before): exit 124 a few seconds after the 3 s deadlock window (not at the
#               60 s deadline), naming the receive each rank waits in, through the ring
#   cancel      SIGINT to the launcher -> cancelled, 130, ranks gone; SIGKILL to the
#               launcher -> ranks die with it (PR_SET_PDEATHSIG)
#   usage       bad launch/worker arguments -> exit 2, bad rank environment -> exit 3
set -u
repro=$1 scratch=$2 mode=$3 comm=${4:-self}
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
now() { date +%s.%N; }
# elapsed START: seconds since START, as a decimal
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# below X LIMIT: X < LIMIT as decimals
below() { awk -v x="$1" -v l="$2" 'BEGIN { exit !(x < l) }'; }
# A marker on every rank's command line, so pgrep finds exactly this run's processes.
tag="launchtest-$$-$mode"
no_survivors() {
    i=0
    while pgrep -f "$tag" >/dev/null; do
        i=$((i + 1))
        [ $i -gt 50 ] && { pgrep -af "$tag" >&2; fail "processes of the run are still alive: $1"; }
        sleep 0.1
    done
}
# Ranks that die by SEGV/ABRT must not litter the tree with core files.
# shellcheck disable=SC3045 # dash and bash both have ulimit -c
ulimit -c 0 2>/dev/null
unset REPRO_RANK REPRO_WORLD REPRO_LOCAL_RANK REPRO_STORE_DIR OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE \
      SLURM_PROCID SLURM_NTASKS RANK WORLD_SIZE

case "$mode" in
ok)
    for n in 1 2 3 4; do
        if [ "$comm" = gloo ]; then
            job="--job comm-selftest --backend gloo --timeout 30"
        elif [ $n -eq 1 ]; then
            job="--job comm-selftest --backend self"
        else
            job="--job sleep --seconds 0.2"
        fi
        t0=$(now)
        # shellcheck disable=SC2086 # $job is a list of words
        out=$("$repro" launch -n $n --timeout 60 --run-dir "$scratch/n$n" -- worker $job 2>&1)
        rc=$?
        echo "$out"
        echo "n=$n: $(elapsed "$t0") s"
        [ $rc -eq 0 ] || fail "$n ranks: exit $rc"
        echo "$out" | grep -q "^launch: ok, $n ranks" || fail "$n ranks: no ok summary"
        [ "$(echo "$out" | grep -c '^rank [0-9]*: ok, exit 0')" -eq $n ] || fail "$n ranks: not every rank ok"
        r=0
        while [ $r -lt $n ]; do
            case "$job" in
            *comm-selftest*)
                grep -q "^rank $r/$n ok" "$scratch/n$n/rank$r.out" || fail "rank $r/$n: no 'rank $r/$n ok' line"
                ;;
            esac
            r=$((r + 1))
        done
        found=""
        for d in "$scratch/n$n"/rendezvous-*; do [ -d "$d" ] && found=1; done
        [ -n "$found" ] || fail "no rendezvous dir in the run dir"
    done
    ;;
crash)
    # (a) SIGKILL on rank 1 after 1 s, the others waiting (in a barrier with gloo)
    extra=""
    [ "$comm" = gloo ] && extra="--backend gloo --timeout 30"
    t0=$(now)
    # shellcheck disable=SC2086
    out=$("$repro" launch -n 3 --timeout 60 --run-dir "$scratch/kill" -- \
          worker --job crash --crash-rank 1 --signal KILL --seconds 1 --tag "$tag" $extra 2>&1)
    rc=$?
    t=$(elapsed "$t0")
    echo "$out"
    echo "elapsed: $t s (deadline 60 s)"
    [ $rc -eq 1 ] || fail "exit $rc, want 1"
    echo "$out" | grep -q "^crash: rank 1 of 3 failed first: killed by SIGKILL" || fail "rank 1 / SIGKILL not reported"
    echo "$out" | grep -q "^rank 1: FAILED, killed by SIGKILL" || fail "rank 1 line"
    echo "$out" | grep -q "^rank 0: killed, SIGTERM from the launcher" || fail "rank 0 not killed by the launcher"
    echo "$out" | grep -q "^rank 2: killed, SIGTERM from the launcher" || fail "rank 2 not killed by the launcher"
    echo "$out" | grep -q "raising SIGKILL as asked" || fail "rank 1's stderr tail missing"
    below "$t" 10 || fail "took $t s: the others were not killed promptly"
    no_survivors "after the SIGKILL crash"
    # (b) SIGSEGV, no communicator
    out=$("$repro" launch -n 2 --timeout 60 --run-dir "$scratch/segv" -- \
          worker --job crash --crash-rank 0 --signal SEGV --seconds 0.3 --tag "$tag" 2>&1)
    rc=$?
    echo "$out"
    [ $rc -eq 1 ] || fail "segv: exit $rc, want 1"
    echo "$out" | grep -q "^crash: rank 0 of 2 failed first: killed by SIGSEGV" || fail "rank 0 / SIGSEGV not reported"
    no_survivors "after the SIGSEGV crash"
    ;;
exitcode)
    for c in "3 3 config-error configuration" "4 1 comm-timeout communication" "7 1 crash exit.7"; do
        # shellcheck disable=SC2086 # split the case into its fields
        set -- $c
        out=$("$repro" launch -n 2 --timeout 60 --run-dir "$scratch/code$1" -- \
              worker --job exit --code "$1" --crash-rank 1 --tag "$tag" 2>&1)
        rc=$?
        echo "$out"
        [ $rc -eq "$2" ] || fail "worker exit $1: launch exit $rc, want $2"
        echo "$out" | grep -q "^launch: $3," || fail "worker exit $1: status not $3"
        echo "$out" | grep -q "rank 1 of 2 failed first: exit $1" || fail "worker exit $1: rank 1 not named"
        echo "$out" | grep -Eq "$4" || fail "worker exit $1: no '$4'"
    done
    no_survivors "after the exit-code runs"
    ;;
rendezvous)
    [ "$comm" = gloo ] || skip "the gloo backend is not built; a rendezvous needs several ranks"
    t0=$(now)
    out=$("$repro" launch -n 3 --timeout 60 --run-dir "$scratch/late" -- \
          worker --job comm-selftest --backend gloo --timeout 2 --late-rank 2 --late 60 --tag "$tag" 2>&1)
    rc=$?
    t=$(elapsed "$t0")
    echo "$out"
    echo "elapsed: $t s (comm timeout 2 s, deadline 60 s)"
    [ $rc -eq 1 ] || fail "exit $rc, want 1"
    echo "$out" | grep -q "^launch: comm-timeout, 3 ranks" || fail "not reported as comm-timeout"
    echo "$out" | grep -Eq "^comm-timeout: rank [01] of 3 failed first: exit 4" || fail "rank 0 or 1 should fail first"
    echo "$out" | grep -q "rank 2 (never joined)" || fail "the comm layer's message naming rank 2 is missing"
    echo "$out" | grep -Eq "killed by the launcher: .*2" || fail "rank 2 not listed as still running"
    below "$t" 15 || fail "took $t s"
    no_survivors "after the rendezvous timeout"
    ;;
hang)
    t0=$(now)
    out=$("$repro" launch -n 2 --timeout 2 --grace 1 --run-dir "$scratch/hang" -- \
          worker --job sleep --seconds 600 --tag "$tag" 2>&1)
    rc=$?
    t=$(elapsed "$t0")
    echo "$out"
    echo "elapsed: $t s (deadline 2 s)"
    [ $rc -eq 124 ] || fail "exit $rc, want 124"
    echo "$out" | grep -q "^hang: the 2.0 s deadline passed with ranks 0, 1 still running" || fail "no HANG report"
    echo "$out" | grep -q "^rank 0: HUNG" || fail "rank 0 not HUNG"
    echo "$out" | grep -q "sleeping 600.0 s" || fail "the hung ranks' stderr is not shown"
    below "$t" 8 || fail "took $t s"
    no_survivors "after the hang"
    ;;
deadlock)
    [ "$comm" = gloo ] || skip "the gloo backend is not built; a deadlock needs several ranks"
    t0=$(now)
    out=$("$repro" launch -n 3 --timeout 60 --deadlock 3 --run-dir "$scratch/deadlock" -- \
          worker --job deadlock --backend gloo --timeout 50 --crash-rank 1 --seconds 2 --tag "$tag" 2>&1)
    rc=$?
    t=$(elapsed "$t0")
    echo "$out"
    echo "elapsed: $t s (rank 1 computes 2 s, deadlock window 3 s, comm timeout 50 s, deadline 60 s)"
    [ $rc -eq 124 ] || fail "exit $rc, want 124"
    echo "$out" | grep -q "^launch: deadlock, 3 ranks" || fail "not reported as a deadlock"
    for r in 0 1 2; do
        echo "$out" | grep -q "rank $r in recv of 4 bytes from rank $(( (r + 1) % 3 )), tag 0, call 1, on the world" ||
            fail "rank $r's receive is not named"
    done
    below 5 "$t" || fail "took only $t s: rank 1 computed 2 s, the window is 3 s"
    below "$t" 20 || fail "took $t s"
    no_survivors "after the deadlock"
    ;;
cancel)
    "$repro" launch -n 2 --timeout 300 --run-dir "$scratch/int" -- worker --job sleep --seconds 600 --tag "$tag" \
        >"$scratch/int.log" 2>&1 &
    pid=$!
    i=0
    until [ "$(pgrep -fc "$tag")" -ge 3 ]; do  # the launcher and both ranks
        i=$((i + 1)); [ $i -gt 100 ] && fail "ranks did not start"; sleep 0.1
    done
    kill -INT $pid
    wait $pid
    rc=$?
    cat "$scratch/int.log"
    [ $rc -eq 130 ] || fail "SIGINT: exit $rc, want 130"
    grep -q "^launch: cancelled" "$scratch/int.log" || fail "no cancelled summary"
    no_survivors "after SIGINT to the launcher"
    # SIGKILL cannot be caught: the ranks must follow through PR_SET_PDEATHSIG
    "$repro" launch -n 2 --timeout 300 --run-dir "$scratch/kill" -- worker --job sleep --seconds 600 --tag "$tag" \
        >/dev/null 2>&1 &
    pid=$!
    i=0
    until [ "$(pgrep -fc "$tag")" -ge 3 ]; do  # the launcher and both ranks
        i=$((i + 1)); [ $i -gt 100 ] && fail "ranks did not start"; sleep 0.1
    done
    kill -KILL $pid
    wait $pid 2>/dev/null
    no_survivors "after SIGKILL to the launcher"
    ;;
usage)
    expect() { # expect CODE PATTERN CMD...: exit code and a message matching PATTERN
        want=$1 pat=$2; shift 2
        msg=$("$@" 2>&1); got=$?
        [ $got -eq "$want" ] || fail "'$*': exit $got, want $want ($msg)"
        echo "$msg" | grep -Eq -e "$pat" || fail "'$*': message does not match '$pat': $msg"
    }
    expect 2 "give the rank command after --" "$repro" launch -n 2
    expect 2 "give 1\.\.128 ranks" "$repro" launch -n 0 -- worker --job sleep
    expect 2 "unknown option" "$repro" launch -n 2 --bogus 1 -- worker --job sleep
    expect 2 "rank-env" "$repro" launch -n 2 --rank-env 5:A=1 -- worker --job sleep
    expect 2 "--job is required" "$repro" worker
    expect 2 "unknown job 'nope'" "$repro" worker --job nope
    expect 2 "unknown signal" "$repro" worker --job crash --signal NOPE
    expect 2 "not both" "$repro" worker --job sleep --backend self --store-dir /tmp --redis localhost:1
    expect 3 "REPRO_RANK=5 is not below REPRO_WORLD=2" env REPRO_RANK=5 REPRO_WORLD=2 "$repro" worker --job sleep
    expect 3 "SLURM_PROCID='x'" env SLURM_PROCID=x SLURM_NTASKS=2 "$repro" worker --job sleep
    expect 3 "crash-rank 5 is not a rank" env REPRO_RANK=0 REPRO_WORLD=2 "$repro" worker --job crash --crash-rank 5
    expect 3 "no rendezvous store|not compiled" env REPRO_RANK=0 REPRO_WORLD=2 "$repro" worker --job comm-selftest --backend gloo
    # a usage error inside the ranks is a config-error outcome of the launch (exit 3)
    expect 3 "config-error" "$repro" launch -n 2 --run-dir "$scratch/u" -- worker --job nope
    # --env / --rank-env / --exe: any program, with the per-rank environment
    # shellcheck disable=SC2016 # expanded by the ranks' shell
    "$repro" launch -n 2 --run-dir "$scratch/env" --env A=all --rank-env 1:A=one --exe /bin/sh -- \
        -c 'echo "$REPRO_RANK/$REPRO_WORLD $A"' >/dev/null 2>&1 || fail "--exe /bin/sh run failed"
    [ "$(cat "$scratch/env/rank0.out")" = "0/2 all" ] || fail "rank 0 env: $(cat "$scratch/env/rank0.out")"
    [ "$(cat "$scratch/env/rank1.out")" = "1/2 one" ] || fail "rank 1 env: $(cat "$scratch/env/rank1.out")"
    "$repro" launch --help | grep -q "usage: repro launch" || fail "launch --help"
    "$repro" worker --help | grep -q "usage: repro worker" || fail "worker --help"
    "$repro" --help | grep -q "launch" || fail "launch missing from repro --help"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
echo "ok"
