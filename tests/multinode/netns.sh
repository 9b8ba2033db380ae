#!/bin/sh
# netns.sh — multi-node runs of `repro worker` on one machine: two "nodes" are
# two network namespaces joined by a veth pair, so the ranks of different nodes
# talk over a real (virtual) link through Gloo's TCP transport, and find each
# other through a RedisStore served from node0 — as on two hosts.
#
#   netns.sh REPRO SCRATCH MODE COMM      (COMM: gloo | self, what the build has)
#
#   node0: namespace rpmn-<pid>-node0, 10.77.0.1/24, redis-server bound to it,
#          global ranks 0 and 1 (--hostname 10.77.0.1)
#   node1: namespace rpmn-<pid>-node1, 10.77.0.2/24, global ranks 2 and 3
#          (--iface <its veth>, the other way to pick the transport's address)
# Ranks get their place from torchrun-style RANK / WORLD_SIZE / LOCAL_RANK, as a
# multi-node launcher would give it; nothing here goes through `repro launch`.
#
# modes:
#   selftest   comm-selftest across the nodes: exact collectives on all 4 ranks, and
#              the veth counters show the bytes really crossed the link
#   case       a small real case (flux-tiny, ulysses 2 x ring 2: the ring groups span
#              the nodes, so every step crosses the link; and dit-tiny ulysses 2 x dp 2)
#              run on the two nodes and locally with `repro launch -n 4`: the outputs
#              must be bitwise identical (same arithmetic; only the transport and the
#              rendezvous store differ: TCP over the veth + Redis vs loopback + FileStore)
#   partition  node1's veth goes down in the middle of a long case: node0's ranks must
#              fail within their communication timeout, not hang: one exits 4 (its wait
#              timed out) and each names the communication (one that sees its peer's close
#              first exits 1)
#
# The namespaces get unique names (the pid) so concurrent runs cannot collide, and
# their addresses exist only inside them: no traffic leaves this machine. Every
# exit path kills what the script started (the ranks and redis-server are the only
# processes inside its namespaces) and deletes the namespaces, which removes the
# veth pair. Every wait is bounded.
# Skips (77): not root, `ip netns` not permitted (e.g. an unprivileged container),
# redis-server or ip missing, or no gloo backend in this build.
set -u
repro=$1 scratch=$2 mode=$3 comm=${4:-self}
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
now() { date +%s.%N; }
# elapsed START: seconds since START, as a decimal
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# below X LIMIT: X < LIMIT as decimals
below() { awk -v x="$1" -v l="$2" 'BEGIN { exit !(x < l) }'; }

[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (ip netns add); run as root to test multi-node"
command -v ip >/dev/null 2>&1 || skip "ip (iproute2) is not installed"
for p in redis-server redis-cli; do
    command -v $p >/dev/null 2>&1 || skip "$p is not installed (Debian: apt-get install redis-server)"
done
[ "$comm" = gloo ] || skip "the gloo backend is not built: multi-node runs need Gloo over TCP"
case "$mode" in selftest | case | partition) ;; *) fail "unknown mode $mode" ;; esac
# A gloo built without Redis says so at the rendezvous (probed on loopback, port 1:
# nothing listens there, so a Redis-capable build just reports the refused connection).
probe=$(REPRO_RANK=0 REPRO_WORLD=1 timeout 10 "$repro" worker --job comm-selftest --backend gloo \
        --redis 127.0.0.1:1 --timeout 1 2>&1)
case "$probe" in *"without Redis support"*) skip "this gloo has no RedisStore: $probe" ;; esac

rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
scratch=$(cd "$scratch" && pwd) # ranks run with the same file system, any cwd
unset REPRO_RANK REPRO_WORLD REPRO_LOCAL_RANK REPRO_STORE_DIR OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE \
      OMPI_COMM_WORLD_LOCAL_RANK SLURM_PROCID SLURM_NTASKS SLURM_LOCALID RANK WORLD_SIZE LOCAL_RANK
# Synthetic weights are made once and shared by the runs being compared.
export REPRO_CACHE="${REPRO_CACHE:-$scratch/cache}"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# shellcheck disable=SC3045 # dash and bash both have ulimit -c
ulimit -c 0 2>/dev/null

ns0="rpmn-$$-node0" ns1="rpmn-$$-node1"
veth0="rpmn$$a" veth1="rpmn$$b" # <= 15 characters for pids up to 7 digits
addr0=10.77.0.1 addr1=10.77.0.2
rport=6379  # the namespace is new, so the port is free there whatever the host runs
world=4
tag="mntest-$$-$mode" # on every rank's command line, for ps
pids=""

# Kills everything started here and removes the namespaces (and with them the
# veth pair). Safe to run twice and after a partial setup.
cleanup() {
    for p in $pids; do kill -KILL "$p" 2>/dev/null; done
    for ns in "$ns0" "$ns1"; do
        # Only this script's ranks and redis-server live in its namespaces.
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    done
    for p in $pids; do wait "$p" 2>/dev/null; done
    pids=""
    ip netns del "$ns0" 2>/dev/null
    ip netns del "$ns1" 2>/dev/null
    ip link del "$veth0" 2>/dev/null # still in the root namespace if setup stopped early
    return 0
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---- the two nodes ---------------------------------------------------------------------------
# A run that was SIGKILLed (no trap) leaves its namespaces behind; its processes end
# by their own timeouts. Remove such leftovers once empty and their creator is gone.
for ns in $(ip netns list 2>/dev/null | sed -n 's/^\(rpmn-[0-9]*-node[01]\).*/\1/p'); do
    owner=${ns#rpmn-}; owner=${owner%-node*}
    if ! kill -0 "$owner" 2>/dev/null && [ -z "$(ip netns pids "$ns" 2>/dev/null)" ]; then
        ip netns del "$ns" 2>/dev/null && echo "removed the stale namespace $ns"
    fi
done
if ! ip netns add "$ns0" 2>"$scratch/netns.err"; then
    skip "ip netns add is not permitted here: $(cat "$scratch/netns.err")"
fi
ip netns add "$ns1" || fail "ip netns add $ns1"
ip netns exec "$ns0" true 2>"$scratch/netns.err" || skip "ip netns exec is not permitted here: $(cat "$scratch/netns.err")"
ip link add "$veth0" type veth peer name "$veth1" || fail "cannot create the veth pair $veth0/$veth1"
ip link set "$veth0" netns "$ns0" || fail "move $veth0 into $ns0"
ip link set "$veth1" netns "$ns1" || fail "move $veth1 into $ns1"
ip -n "$ns0" addr add "$addr0/24" dev "$veth0" || fail "address $addr0"
ip -n "$ns1" addr add "$addr1/24" dev "$veth1" || fail "address $addr1"
for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up || fail "lo up in $ns"; done
ip -n "$ns0" link set "$veth0" up || fail "$veth0 up"
ip -n "$ns1" link set "$veth1" up || fail "$veth1 up"

# Redis inside node0, bound to node0's address: node1 reaches it over the link.
# Protected mode (loopback clients only, without a password) is off because the
# clients are remote by design; the address exists only inside this namespace.
# `timeout` bounds it even if this script is SIGKILLed (no trap runs then).
ip netns exec "$ns0" timeout -k 2 150 redis-server --bind "$addr0" --port "$rport" --protected-mode no --save '' \
    --appendonly no --daemonize no --dir "$scratch" --logfile "$scratch/redis.log" &
pids="$pids $!"
i=0
until grep -q "Ready to accept connections" "$scratch/redis.log" 2>/dev/null; do
    i=$((i + 1))
    [ $i -gt 100 ] && { cat "$scratch/redis.log" >&2; fail "redis-server did not start in $ns0"; }
    sleep 0.05
done
# Both the link and the store work once node1 gets an answer from node0's redis.
i=0
until [ "$(ip netns exec "$ns1" timeout 2 redis-cli -h "$addr0" -p "$rport" ping 2>/dev/null)" = PONG ]; do
    i=$((i + 1)); [ $i -gt 20 ] && fail "node1 cannot reach redis-server on node0 ($addr0:$rport) over the link"
    sleep 0.1
done
echo "nodes: $ns0 ($addr0, $veth0, redis-server :$rport) <-> $ns1 ($addr1, $veth1)"

# start_rank R DIR ARGS...: global rank R of $world in the background, on node R/2,
# with torchrun's variables; writes DIR/rank<R>.out, .err and .rc (its exit code).
# `timeout` bounds each rank whatever happens to the others.
start_rank() {
    r=$1 d=$2; shift 2
    if [ "$r" -lt 2 ]; then ns=$ns0 where="--hostname $addr0"; else ns=$ns1 where="--iface $veth1"; fi
    mkdir -p "$d"
    # shellcheck disable=SC2086 # $where is two words
    (
        ip netns exec "$ns" env RANK="$r" WORLD_SIZE=$world LOCAL_RANK=$((r % 2)) \
            timeout -k 2 60 "$repro" worker "$@" --redis "$addr0:$rport" $where --tag "$tag" \
            >"$d/rank$r.out" 2>"$d/rank$r.err"
        echo $? >"$d/rank$r.rc"
    ) &
    pids="$pids $!"
}

# wait_ranks DIR LIMIT RANKS...: waits until each listed rank has exited, at most
# LIMIT seconds; fails naming the ranks still running.
wait_ranks() {
    d=$1 limit=$2; shift 2
    t0=$(now)
    for r in "$@"; do
        until [ -s "$d/rank$r.rc" ]; do
            below "$(elapsed "$t0")" "$limit" || fail "rank $r still running after $limit s (see $d)"
            sleep 0.05
        done
    done
}

# show DIR: every rank's outputs, for the log.
show() {
    for f in "$1"/rank*.out "$1"/rank*.err; do
        [ -s "$f" ] && { echo "--- $f"; cat "$f"; }
    done
    return 0
}

# tx_bytes NS DEV: bytes sent on DEV inside NS.
tx_bytes() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/tx_bytes"; }

case "$mode" in
selftest)
    d=$scratch/selftest
    tx0=$(tx_bytes "$ns0" "$veth0") tx1=$(tx_bytes "$ns1" "$veth1")
    t0=$(now)
    for r in 0 1 2 3; do start_rank $r "$d" --job comm-selftest --backend gloo --prefix selftest --timeout 20; done
    wait_ranks "$d" 40 0 1 2 3
    echo "selftest: $(elapsed "$t0") s"
    show "$d"
    for r in 0 1 2 3; do
        [ "$(cat "$d/rank$r.rc")" -eq 0 ] || fail "rank $r exited $(cat "$d/rank$r.rc")"
        grep -q "^rank $r/4 ok (gloo, torchrun)" "$d/rank$r.out" || fail "rank $r: no 'rank $r/4 ok (gloo, torchrun)'"
    done
    # allreduce of 100003 floats twice, allgather, broadcasts: well over 400 kB each way.
    sent0=$(($(tx_bytes "$ns0" "$veth0") - tx0)) sent1=$(($(tx_bytes "$ns1" "$veth1") - tx1))
    echo "over the link: node0 sent $sent0 bytes, node1 sent $sent1 bytes"
    if [ "$sent0" -le 400000 ] || [ "$sent1" -le 400000 ]; then fail "the collectives did not cross the veth link"; fi
    ;;
case)
    cat >"$scratch/flux.json" <<'EOF'
{"model": "flux-tiny", "steps": 4, "sampler": "euler", "cfg": 1.0, "guidance": 3.5, "backend": "gloo",
 "threads": 1, "ulysses": 2, "ring": 2, "items": [{"seed": 0, "prompt": "a red fox"}]}
EOF
    cat >"$scratch/dit.json" <<'EOF'
{"model": "dit-tiny", "steps": 6, "backend": "gloo", "threads": 1, "ulysses": 2, "dp": 2,
 "items": [{"seed": 0, "class": 207}, {"seed": 1, "class": 360}]}
EOF
    for c in flux dit; do
        # locally: the same case through the local launcher, FileStore, loopback
        t0=$(now)
        timeout -k 2 120 "$repro" launch -n 4 --timeout 90 --run-dir "$scratch/$c-local-run" -- worker --job case \
            --case-file "$scratch/$c.json" --out-dir "$scratch/$c-local" --hostname 127.0.0.1 --tag "$tag" \
            >"$scratch/$c-local.log" 2>&1 || { cat "$scratch/$c-local.log"; fail "$c: the local run failed"; }
        echo "$c local (repro launch -n 4): $(elapsed "$t0") s"
        # on the two nodes
        d=$scratch/$c-nodes-run
        tx1=$(tx_bytes "$ns1" "$veth1")
        t0=$(now)
        for r in 0 1 2 3; do
            start_rank $r "$d" --job case --case-file "$scratch/$c.json" --out-dir "$scratch/$c-nodes" --timeout 30
        done
        wait_ranks "$d" 60 0 1 2 3
        echo "$c on 2 nodes x 2 ranks: $(elapsed "$t0") s"
        for r in 0 1 2 3; do
            [ "$(cat "$d/rank$r.rc")" -eq 0 ] || { show "$d"; fail "$c: rank $r exited $(cat "$d/rank$r.rc")"; }
        done
        [ -s "$scratch/$c-nodes/done.json" ] || fail "$c: no done.json from the 2-node run"
        # node1's results reach rank 0 on node0 only over the link
        sent1=$(($(tx_bytes "$ns1" "$veth1") - tx1))
        echo "$c: node1 sent $sent1 bytes over the link"
        [ "$sent1" -gt 10000 ] || fail "$c: node1's ranks did not talk over the link"
        # The same arithmetic: every latent bit, the trajectory and the images.
        out=$("$repro" diff "$scratch/$c-local/latents.safetensors" "$scratch/$c-nodes/latents.safetensors" 2>&1) ||
            fail "$c: repro diff failed: $out"
        echo "$out" | sed "s/^/$c: /"
        echo "$out" | grep -q "^max_abs 0$" || fail "$c: the latents differ between local and 2-node runs"
        for f in latents.safetensors image-0.png; do
            cmp "$scratch/$c-local/$f" "$scratch/$c-nodes/$f" || fail "$c: $f is not bitwise identical"
        done
    done
    ;;
partition)
    # Long enough that the link goes down while the ranks are sampling.
    cat >"$scratch/long.json" <<'EOF'
{"model": "flux-tiny", "steps": 3000, "sampler": "euler", "cfg": 1.0, "guidance": 3.5, "backend": "gloo",
 "threads": 1, "ulysses": 2, "ring": 2, "items": [{"seed": 0, "prompt": "a red fox"}]}
EOF
    d=$scratch/partition
    ctimeout=4
    for r in 0 1 2 3; do start_rank $r "$d" --job case --case-file "$scratch/long.json" --out-dir "$scratch/long" \
                             --timeout $ctimeout; done
    # Wait until gloo connections from node0 to node1 exist (the rendezvous is over;
    # redis' own connections, on its port, do not count), then a little more.
    i=0
    until [ "$(ip netns exec "$ns0" ss -Htn state established dst "$addr1" 2>/dev/null |
              grep -cv ":$rport ")" -gt 0 ]; do
        i=$((i + 1)); [ $i -gt 200 ] && { show "$d"; fail "no gloo connection between the nodes after 10 s"; }
        sleep 0.05
    done
    sleep 2
    for r in 0 1 2 3; do [ -e "$d/rank$r.rc" ] && { show "$d"; fail "rank $r ended before the partition"; }; done
    ip -n "$ns1" link set "$veth1" down || fail "cannot bring $veth1 down"
    t0=$(now)
    echo "node1's link down mid-run; communication timeout $ctimeout s"
    wait_ranks "$d" 20 0 1
    t=$(elapsed "$t0")
    echo "node0's ranks ended $t s after the link went down"
    show "$d"
    # the first node0 rank whose wait runs out exits 4 (communication timeout) and, by design
    # (backends/comm.h), closes its connections so its peers fail fast: a peer that was still
    # waiting may see that close first and exit 1 (RP_ERR_COMM, "closed by peer") — which one
    # does is a race. So: every node0 rank exits 4 or 1 naming the communication, one exits 4.
    timed_out=0
    for r in 0 1; do
        rc=$(cat "$d/rank$r.rc")
        case $rc in
        4) timed_out=1
           grep -Eq "worker rank $r/4 \(case\): .*(timed out|timeout)" "$d/rank$r.err" ||
               fail "rank $r: no clear timeout message on stderr" ;;
        1) grep -Eq "worker rank $r/4 \(case\): gloo .*(closed|timed out|timeout)" "$d/rank$r.err" ||
               fail "rank $r exited 1 without naming the broken communication" ;;
        *) fail "rank $r exited $rc, want 4 (communication timeout) or 1 (a peer closed the connection)" ;;
        esac
    done
    [ $timed_out -eq 1 ] || fail "no node0 rank exited 4 (communication timeout)"
    below "$t" $((ctimeout * 3)) || fail "node0 took $t s to notice (timeout $ctimeout s)"
    ;;
esac
echo "ok"
