#!/bin/sh
# weights.sh — CLI checks of `repro weights`.
#   weights.sh REPRO SCRATCH deterministic : two writes of the same preset are byte-identical
#   weights.sh REPRO SCRATCH bad-model     : unknown preset -> exit 1, message lists the presets
#   weights.sh REPRO SCRATCH usage         : missing --out / unknown option -> exit 2
set -u
repro=$1 scratch=$2 mode=$3
mkdir -p "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }

case "$mode" in
deterministic)
    a="$scratch/a.safetensors" b="$scratch/b.safetensors"
    rm -f "$a" "$b"
    out=$("$repro" weights --model dit-tiny --weight-seed 7 --out "$a") || fail "first write failed"
    echo "$out"
    echo "$out" | grep -Eq "^wrote $a: [0-9]+ tensors, [0-9]+ parameters$" || fail "unexpected output: $out"
    "$repro" weights --model dit-tiny --weight-seed 7 --out "$b" >/dev/null || fail "second write failed"
    cmp "$a" "$b" || fail "two writes of dit-tiny seed 7 differ"
    c="$scratch/c.safetensors"
    "$repro" weights --model dit-tiny --weight-seed 8 --out "$c" >/dev/null || fail "seed 8 write failed"
    cmp -s "$a" "$c" && fail "seeds 7 and 8 gave identical weights"
    ls "$scratch" | grep -q '\.tmp\.' && fail "temporary file left behind"
    rm -f "$a" "$b" "$c"
    ;;
bad-model)
    err=$("$repro" weights --model no-such-model --out "$scratch/x.safetensors" 2>&1 >/dev/null)
    rc=$?
    echo "$err"
    [ "$rc" -eq 1 ] || fail "exit code $rc, want 1"
    echo "$err" | grep -q "no-such-model" || fail "message does not name the model"
    echo "$err" | grep -q "dit-tiny" || fail "message does not list the presets"
    [ -e "$scratch/x.safetensors" ] && fail "output written for a bad model"
    ;;
usage)
    "$repro" weights --model dit-tiny >/dev/null 2>&1; rc=$?
    [ "$rc" -eq 2 ] || fail "missing --out: exit $rc, want 2"
    "$repro" weights --model dit-tiny --out "$scratch/y" --bogus 1 >/dev/null 2>&1; rc=$?
    [ "$rc" -eq 2 ] || fail "unknown option: exit $rc, want 2"
    "$repro" weights --model dit-tiny --out "$scratch/y" --weight-seed -1 >/dev/null 2>&1; rc=$?
    [ "$rc" -eq 2 ] || fail "negative seed: exit $rc, want 2"
    "$repro" weights --help | grep -q "usage: repro weights" || fail "--help"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
echo "ok"
