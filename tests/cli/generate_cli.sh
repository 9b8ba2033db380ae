#!/bin/sh
# generate_cli.sh — CLI checks of `repro generate`.
#   generate_cli.sh REPRO SCRATCH acceptance  : the command, from an empty weights cache:
#                                               weights generated + cached, valid 128x128 PNG
#   generate_cli.sh REPRO SCRATCH determinism : the same command twice -> byte-identical
#                                               latents file and PNGs (stochastic sampler, 2 items)
#   generate_cli.sh REPRO SCRATCH items       : several seeds -> <stem>-<i>.png, one --class for all
#   generate_cli.sh REPRO SCRATCH usage       : bad options -> exit 2 naming the option;
#                                               a failed run (missing weights file) -> exit 1
# REPRO_CACHE comes from the environment (a directory in the build tree), except for
# `acceptance`, which uses a fresh one under SCRATCH.
set -u
repro=$1 scratch=$2 mode=$3
mkdir -p "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }

# png_check FILE W H: PNG signature, then the IHDR chunk with width W and height H.
png_check() {
    sig=$(od -An -tx1 -N8 "$1" | tr -d ' \n')
    [ "$sig" = "89504e470d0a1a0a" ] || fail "$1: not a PNG (signature $sig)"
    ihdr=$(od -An -c -j12 -N4 "$1" | tr -d ' \n')
    [ "$ihdr" = "IHDR" ] || fail "$1: first chunk is '$ihdr', not IHDR"
    w=$(od -An -tu1 -j16 -N4 "$1" | awk '{print $1*16777216 + $2*65536 + $3*256 + $4}')
    h=$(od -An -tu1 -j20 -N4 "$1" | awk '{print $1*16777216 + $2*65536 + $3*256 + $4}')
    [ "$w" = "$2" ] && [ "$h" = "$3" ] || fail "$1: IHDR size ${w}x${h}, want ${2}x${3}"
}

# expect_usage RC_WANT PATTERN ARGS... : runs repro generate ARGS, checks exit code and stderr.
expect() {
    want=$1 pat=$2
    shift 2
    err=$("$repro" generate "$@" 2>&1 >/dev/null)
    rc=$?
    echo "  [$rc] $err" | head -1
    [ "$rc" -eq "$want" ] || fail "'$*': exit $rc, want $want"
    echo "$err" | grep -q -- "$pat" || fail "'$*': message does not mention '$pat': $err"
}

case "$mode" in
acceptance)
    REPRO_CACHE="$scratch/cache"
    export REPRO_CACHE
    rm -rf "$REPRO_CACHE" "$scratch/x.png"
    cd "$scratch" || fail "cd $scratch"
    out=$("$repro" generate --model dit-tiny --seed 0 --class 1 --steps 10 --out x.png) || fail "generate failed"
    echo "$out"
    [ -f x.png ] || fail "x.png not written"
    png_check x.png 128 128
    ls "$REPRO_CACHE"/weights/dit-tiny-seed0-*.safetensors >/dev/null 2>&1 || fail "DiT weights not cached"
    ls "$REPRO_CACHE"/weights/vae-tiny-seed0-*.safetensors >/dev/null 2>&1 || fail "VAE weights not cached"
    # second run: served from the cache, same image
    cp x.png first.png
    "$repro" generate --model dit-tiny --seed 0 --class 1 --steps 10 --out x.png >/dev/null || fail "rerun failed"
    cmp first.png x.png || fail "rerun from the cache gave a different PNG"
    ls "$scratch" | grep -q '\.tmp\.' && fail "temporary file left behind"
    ;;
determinism)
    # Same paths both times (the latents file records --out), moved aside in between.
    for run in a b; do
        rm -f "$scratch"/out*.png "$scratch/out.safetensors"
        "$repro" generate --model dit-tiny --seed 4 --seed 9 --class 3 --class 7 --steps 6 \
            --sampler euler-a --cfg 3 --out "$scratch/out.png" --latents "$scratch/out.safetensors" \
            >/dev/null || fail "run $run failed"
        mv "$scratch/out.safetensors" "$scratch/$run.safetensors" || fail "no latents file"
        mv "$scratch/out-0.png" "$scratch/$run-0.png" && mv "$scratch/out-1.png" "$scratch/$run-1.png" \
            || fail "no PNGs"
    done
    cmp "$scratch/a.safetensors" "$scratch/b.safetensors" || fail "latents files differ"
    cmp "$scratch/a-0.png" "$scratch/b-0.png" || fail "item 0 PNGs differ"
    cmp "$scratch/a-1.png" "$scratch/b-1.png" || fail "item 1 PNGs differ"
    cmp -s "$scratch/a-0.png" "$scratch/a-1.png" && fail "two items gave the same image"
    # a different seed must change the result (the seed reaches the noise)
    "$repro" generate --model dit-tiny --seed 5 --seed 9 --class 3 --class 7 --steps 6 --sampler euler-a \
        --cfg 3 --out "$scratch/out.png" --latents "$scratch/out.safetensors" >/dev/null || fail "run c failed"
    cmp -s "$scratch/a.safetensors" "$scratch/out.safetensors" && fail "seed 4 and 5 gave identical latents"
    ;;
items)
    rm -f "$scratch"/img*.png
    out=$("$repro" generate --model dit-tiny --seed 1 --seed 2 --seed 3 --class 207 --steps 2 \
        --out "$scratch/img.png") || fail "generate failed"
    echo "$out"
    for i in 0 1 2; do
        png_check "$scratch/img-$i.png" 128 128
    done
    [ -e "$scratch/img.png" ] && fail "several items also wrote img.png"
    echo "$out" | grep -q "class 207" || fail "the single --class was not applied"
    ;;
usage)
    base="--model dit-tiny --seed 0 --class 1 --steps 2 --out $scratch/u.png"
    # shellcheck disable=SC2086
    {
    expect 2 "--sampler" $base --sampler heun
    expect 2 "--steps" $base --steps 0
    expect 2 "--steps" $base --steps 1001
    expect 2 "--steps" $base --steps ten
    expect 2 "--cfg" $base --cfg -1
    expect 2 "--class" --model dit-tiny --seed 0 --class 1000 --out "$scratch/u.png"
    expect 2 "--class" --model dit-tiny --seed 0 --class -3 --out "$scratch/u.png"
    expect 2 "--class" --model dit-tiny --seed 0 --seed 1 --seed 2 --class 1 --class 2 --out "$scratch/u.png"
    expect 2 "--eta" $base --sampler ddpm --eta 0.5
    expect 2 "--eta" $base --sampler ddim --eta 2
    expect 2 "--seed" --model dit-tiny --class 1 --out "$scratch/u.png"
    expect 2 "--seed" $base --seed -4
    expect 2 "--model" --model no-such-model --seed 0 --class 1 --out "$scratch/u.png"
    expect 2 "--model" --seed 0 --class 1 --out "$scratch/u.png"
    expect 2 "--vae" $base --vae no-such-vae
    expect 2 "--precision" $base --precision fp8
    expect 2 "--out" --model dit-tiny --seed 0 --class 1
    expect 2 "--bogus" $base --bogus 1
    expect 1 "$scratch/missing.safetensors" $base --weights "$scratch/missing.safetensors"
    }
    [ -e "$scratch/u.png" ] && fail "an image was written by a failing command"
    "$repro" generate --help | grep -q "usage: repro generate" || fail "--help"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
echo "ok"
