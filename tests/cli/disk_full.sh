#!/bin/sh
# disk_full.sh — a full disk or no file descriptors left is an infrastructure failure,
# not a verdict (issue 22).
#   disk_full.sh REPRO SCRATCH SRC [MODE]
# MODE disk (default): matrices/smoke.yaml into a 12 MiB tmpfs: the cases whose runs
# hit ENOSPC end INFRA_ERROR (never CRASH), none of them is stored, and the sweep exits
# 1; after the tmpfs grows to 200 MiB a plain second run (no --retry-failed) computes
# them and the sweep passes: every case ok, none CRASH. Needs root (mount); exits 77
# (skip) when the tmpfs cannot be mounted.
# MODE fds: the same with `ulimit -n` so low (the first of 7..14 that lets the sweep
# start) that the launcher cannot open the ranks' files (EMFILE).
set -u
repro=$1 scratch=$2 src=$3 mode=${4:-disk}
mnt=$scratch/t
if [ "$mode" = fds ]; then
    rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
    fail() { echo "FAIL: $*" >&2; exit 1; }
    res=$scratch/r
    found=
    for n in 7 8 9 10 11 12 13 14; do
        rm -rf "$res"
        (ulimit -n $n && exec "$repro" --matrix "$src/matrices/smoke.yaml" --results "$res" --progress plain) \
            >"$scratch/o1" 2>&1
        rc=$?
        if grep -q "INFRA_ERROR" "$scratch/o1"; then found=$n; break; fi
    done
    cat "$scratch/o1" >&2
    [ -n "$found" ] || fail "no ulimit -n in 7..14 gave an INFRA_ERROR"
    [ $rc -eq 1 ] || fail "ulimit -n $found: exit $rc, expected 1"
    grep -q "Too many open files" "$scratch/o1" || fail "the reason does not name EMFILE"
    grep -q " 0 CRASH" "$scratch/o1" || fail "running out of file descriptors gave a CRASH"
    if grep -l '"CRASH"' "$res"/smoke/*/result.json "$res"/smoke/*/classification.json 2>/dev/null; then
        fail "a CRASH verdict was stored"
    fi
    "$repro" --matrix "$src/matrices/smoke.yaml" --results "$res" --progress plain >"$scratch/o2" 2>&1
    rc=$?
    cat "$scratch/o2" >&2
    [ $rc -eq 0 ] || fail "second run with file descriptors: exit $rc, expected 0"
    grep -q "smoke: 4 cases: 4 ok, 0 CONFIG_ERROR, 0 CRASH, 0 HANG" "$scratch/o2" || fail "not 4 ok"
    echo "disk_full fds: ok (ulimit -n $found)"
    exit 0
fi
umount "$mnt" 2>/dev/null
rm -rf "$scratch" && mkdir -p "$mnt" || exit 1
fail() { echo "FAIL: $*" >&2; umount "$mnt" 2>/dev/null; exit 1; }
if ! mount -t tmpfs -o size=12m tmpfs "$mnt" 2>"$scratch/mount.err"; then
    echo "cannot mount a tmpfs (needs root): $(cat "$scratch/mount.err"); skipped" >&2
    exit 77
fi
trap 'umount "$mnt" 2>/dev/null' EXIT
res=$mnt/r
"$repro" --matrix "$src/matrices/smoke.yaml" --results "$res" --progress plain >"$scratch/o1" 2>&1
rc=$?
cat "$scratch/o1" >&2
[ $rc -eq 1 ] || fail "first run on a full disk: exit $rc, expected 1"
grep -q "INFRA_ERROR" "$scratch/o1" || fail "no INFRA_ERROR in the first run"
grep -q "No space left on device" "$scratch/o1" || fail "the reason does not name ENOSPC"
grep -q " 0 CRASH" "$scratch/o1" || fail "a full disk gave a CRASH"
# nothing stored says CRASH: every finished case directory is a real verdict
if grep -l '"CRASH"' "$res"/smoke/*/result.json "$res"/smoke/*/classification.json 2>/dev/null; then
    fail "a CRASH verdict was stored"
fi
mount -o remount,size=200m "$mnt" || fail "cannot grow the tmpfs"
"$repro" --matrix "$src/matrices/smoke.yaml" --results "$res" --progress plain >"$scratch/o2" 2>&1
rc=$?
cat "$scratch/o2" >&2
[ $rc -eq 0 ] || fail "second run after the disk grew: exit $rc, expected 0"
grep -q "smoke: 4 cases: 4 ok, 0 CONFIG_ERROR, 0 CRASH, 0 HANG" "$scratch/o2" || fail "not 4 ok"
grep -q "INFRA_ERROR" "$scratch/o2" && fail "INFRA_ERROR in the second run"
echo "disk_full: ok"
