#!/bin/sh
# redis_rendezvous.sh COMM_CHECK SCRATCH — gloo rendezvous through a RedisStore.
#
# Starts a throwaway redis-server on 127.0.0.1 at a random free port (no
# persistence, data in SCRATCH), runs 3 gloo ranks through it with every
# collective check, checks that a rank that never joins is named in the
# timeout, stops the server, and checks that a store on the now-dead port
# fails cleanly. The server is killed on every exit path.
# Exit 77 (skip) when redis-server is not installed (Debian: redis-server).
set -u
check=$1
scratch=$2
if ! command -v redis-server >/dev/null 2>&1; then
  echo "SKIP: redis-server is not installed (apt-get install redis-server)"
  exit 77
fi
mkdir -p "$scratch" || exit 1

pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# A random port may be taken: redis-server then exits at once; try another.
port=
for attempt in 1 2 3 4 5 6 7 8 9 10; do
  p=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000 ))
  log="$scratch/redis-$p.log"
  rm -f "$log"
  redis-server --bind 127.0.0.1 --port "$p" --save '' --appendonly no --daemonize no \
               --dir "$scratch" --logfile "$log" &
  pid=$!
  i=0
  while [ $i -lt 100 ]; do            # up to 5 s
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    if grep -q "Ready to accept connections" "$log" 2>/dev/null; then port=$p; break; fi
    sleep 0.05
    i=$((i + 1))
  done
  [ -n "$port" ] && break
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
done
if [ -z "$port" ]; then
  echo "FAIL: could not start redis-server on 127.0.0.1 (last log: $log)"
  cat "$log" 2>/dev/null
  exit 1
fi
echo "redis-server pid $pid on 127.0.0.1:$port"

rc=0
"$check" --backend gloo --spawn 3 --redis-host 127.0.0.1 --redis-port "$port" \
         --store-dir "$scratch" --timeout 20
first=$?
[ $first -eq 77 ] && exit 77          # no gloo in this build: the driver said why
[ $first -ne 0 ] && rc=1
"$check" --backend gloo --spawn 3 --scenario nojoin --redis-host 127.0.0.1 --redis-port "$port" \
         --store-dir "$scratch" --timeout 3 || rc=1

kill "$pid"; wait "$pid" 2>/dev/null; pid=
"$check" --backend gloo --spawn 1 --scenario noredis --redis-host 127.0.0.1 --redis-port "$port" \
         --store-dir "$scratch" --timeout 3 || rc=1
exit $rc
