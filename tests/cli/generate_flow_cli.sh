#!/bin/sh
# generate_flow_cli.sh — CLI checks of `repro generate` for SD3 and FLUX (text prompts).
#   generate_flow_cli.sh REPRO SCRATCH acceptance   : the issue's commands from an empty weights cache:
#                                                     flux-tiny, sd3-tiny and sd3.5-medium-tiny (MMDiT-X)
#                                                     "a red fox" -> valid 128x128 PNGs; model, text
#                                                     encoder and VAE weights cached
#   generate_flow_cli.sh REPRO SCRATCH determinism  : the same command twice -> byte-identical PNG and
#                                                     latents (both families, and MMDiT-X); seed and prompt reach the result
#   generate_flow_cli.sh REPRO SCRATCH prompts-file : a 3-line file -> 3 PNGs (explicit and --seed seeds),
#                                                     --width/--height, --depth on FLUX
#   generate_flow_cli.sh REPRO SCRATCH usage        : bad options -> exit 2 with a message naming the problem
#   generate_flow_cli.sh REPRO SCRATCH weights      : `repro weights` for the new presets (text encoders,
#                                                     16-channel VAEs, SD3, FLUX with --depth / --single-depth)
# REPRO_CACHE comes from the environment (a directory in the build tree), except for
# `acceptance`, which uses a fresh one under SCRATCH.
set -u
repro=$1 scratch=$2 mode=$3
mkdir -p "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
TAB=$(printf '\t')

# png_check FILE W H: PNG signature, then the IHDR chunk with width W and height H.
png_check() {
    [ -f "$1" ] || fail "$1 not written"
    sig=$(od -An -tx1 -N8 "$1" | tr -d ' \n')
    [ "$sig" = "89504e470d0a1a0a" ] || fail "$1: not a PNG (signature $sig)"
    ihdr=$(od -An -c -j12 -N4 "$1" | tr -d ' \n')
    [ "$ihdr" = "IHDR" ] || fail "$1: first chunk is '$ihdr', not IHDR"
    w=$(od -An -tu1 -j16 -N4 "$1" | awk '{print $1*16777216 + $2*65536 + $3*256 + $4}')
    h=$(od -An -tu1 -j20 -N4 "$1" | awk '{print $1*16777216 + $2*65536 + $3*256 + $4}')
    [ "$w" = "$2" ] && [ "$h" = "$3" ] || fail "$1: IHDR size ${w}x${h}, want ${2}x${3}"
}

# expect RC_WANT PATTERN ARGS... : runs repro generate ARGS, checks exit code and stderr.
expect() {
    want=$1 pat=$2
    shift 2
    err=$("$repro" generate "$@" 2>&1 >/dev/null)
    rc=$?
    echo "  [$rc] $(echo "$err" | head -1)"
    [ "$rc" -eq "$want" ] || fail "'$*': exit $rc, want $want"
    echo "$err" | grep -q -- "$pat" || fail "'$*': message does not mention '$pat': $err"
}

case "$mode" in
acceptance)
    REPRO_CACHE="$scratch/cache"
    export REPRO_CACHE
    rm -rf "$REPRO_CACHE" "$scratch"/*.png
    cd "$scratch" || fail "cd $scratch"
    out=$("$repro" generate --model flux-tiny --prompt "a red fox" --seed 3 --steps 8 --out fox.png) \
        || fail "flux-tiny generate failed"
    echo "$out"
    png_check fox.png 128 128
    echo "$out" | grep -q 'wrote fox.png (128x128, seed 3, index 0, prompt "a red fox")' || fail "unexpected output"
    out=$("$repro" generate --model sd3-tiny --prompt "a red fox" --seed 3 --steps 8 --out sd3.png) \
        || fail "sd3-tiny generate failed"
    echo "$out"
    png_check sd3.png 128 128
    out=$("$repro" generate --model sd3.5-medium-tiny --prompt "a red fox" --seed 3 --steps 8 --out sd35m.png) \
        || fail "sd3.5-medium-tiny generate failed"
    echo "$out"
    png_check sd35m.png 128 128
    echo "$out" | grep -q 'sd3.5-medium-tiny, flow-euler' || fail "unexpected output"
    for m in flux-tiny sd3-tiny sd3.5-medium-tiny te-tiny vae-tiny-16; do
        ls "$REPRO_CACHE"/weights/$m-seed0-*.safetensors >/dev/null 2>&1 || fail "$m weights not cached"
    done
    cmp -s fox.png sd3.png && fail "flux-tiny and sd3-tiny gave the same image"
    cmp -s sd3.png sd35m.png && fail "sd3-tiny and sd3.5-medium-tiny gave the same image"
    ls "$scratch" "$REPRO_CACHE/weights" | grep -q '\.tmp\.' && fail "temporary file left behind"
    ;;
determinism)
    cd "$scratch" || fail "cd $scratch"
    for m in flux-tiny sd3-tiny sd3.5-medium-tiny; do
        for run in a b; do
            rm -f out.png out.safetensors
            "$repro" generate --model "$m" --prompt "a red fox" --seed 3 --steps 8 --out out.png \
                --latents out.safetensors >/dev/null || fail "$m run $run failed"
            mv out.png "$m-$run.png" && mv out.safetensors "$m-$run.safetensors" || fail "$m: outputs missing"
        done
        cmp "$m-a.png" "$m-b.png" || fail "$m: PNGs of two identical runs differ"
        cmp "$m-a.safetensors" "$m-b.safetensors" || fail "$m: latents files of two identical runs differ"
        "$repro" generate --model "$m" --prompt "a red fox" --seed 4 --steps 8 --out out.png \
            --latents out.safetensors >/dev/null || fail "$m seed 4 run failed"
        cmp -s out.png "$m-a.png" && fail "$m: seeds 3 and 4 gave the same image"
        "$repro" generate --model "$m" --prompt "a grey wolf" --seed 3 --steps 8 --out out.png \
            --latents out.safetensors >/dev/null || fail "$m prompt run failed"
        cmp -s out.png "$m-a.png" && fail "$m: the prompt does not change the image"
        echo "$m: two identical runs byte-identical; seed and prompt change the image"
    done
    ;;
prompts-file)
    cd "$scratch" || fail "cd $scratch"
    rm -f img*.png wide*.png
    printf '11\ta red fox\na blue whale\n\n7\t\n' > three.txt   # explicit seed, --seed seed, blank, unconditional
    out=$("$repro" generate --model flux-tiny --prompts-file three.txt --seed 5 --steps 4 --out img.png) \
        || fail "generate from three.txt failed"
    echo "$out"
    for i in 0 1 2; do png_check "img-$i.png" 128 128; done
    [ -e img.png ] && fail "several items also wrote img.png"
    [ -e img-3.png ] && fail "the blank line became an item"
    echo "$out" | grep -q 'img-0.png (128x128, seed 11, index 0, prompt "a red fox")' || fail "item 0 wrong"
    echo "$out" | grep -q 'img-1.png (128x128, seed 5, index 1, prompt "a blue whale")' || fail "item 1 wrong"
    echo "$out" | grep -q 'img-2.png (128x128, seed 7, index 2, prompt "")' || fail "item 2 wrong"
    # one --seed per seedless line, a non-square size, and a CRLF file
    printf 'a\r\nb\r\n' > two.txt
    out=$("$repro" generate --model sd3-tiny --prompts-file two.txt --seed 1 --seed 2 --width 192 --height 128 \
        --steps 2 --first-index 10 --out wide.png) || fail "generate from two.txt failed"
    echo "$out"
    png_check wide-0.png 192 128
    png_check wide-1.png 192 128
    echo "$out" | grep -q 'wide-1.png (192x128, seed 2, index 11, prompt "b")' || fail "CRLF / --first-index / seeds"
    # reduced depth: FLUX --depth 1 keeps 1 double + 1 single block of flux-tiny
    "$repro" generate --model flux-tiny --depth 1 --prompt "x" --seed 0 --steps 2 --out d1.png >/dev/null \
        || fail "flux-tiny --depth 1 failed"
    ls "$REPRO_CACHE"/weights/flux-tiny-depth1-single1-seed0-*.safetensors >/dev/null 2>&1 \
        || fail "reduced FLUX weights not cached under -depth1-single1"
    ;;
usage)
    base="--prompt fox --seed 0 --steps 2 --out $scratch/u.png"
    : > "$scratch/empty.txt"
    printf '\n\n' > "$scratch/blank.txt"
    printf 'no seed here\n' > "$scratch/noseed.txt"
    # shellcheck disable=SC2086
    {
    expect 2 "embedded guidance" --model flux-tiny $base --cfg 4
    expect 2 "--guidance" --model sd3-tiny $base --guidance 3
    expect 2 "--model" --model no-such-model $base
    expect 2 "not a denoiser" --model te-tiny $base
    expect 2 "--prompts-file.*no prompts" --model flux-tiny --prompts-file "$scratch/empty.txt" --seed 0 --out "$scratch/u.png"
    expect 2 "no prompts" --model flux-tiny --prompts-file "$scratch/blank.txt" --seed 0 --out "$scratch/u.png"
    expect 2 "cannot open" --model flux-tiny --prompts-file "$scratch/missing.txt" --seed 0 --out "$scratch/u.png"
    expect 2 "no seed" --model flux-tiny --prompts-file "$scratch/noseed.txt" --out "$scratch/u.png"
    expect 2 "one or the other" --model flux-tiny --prompts-file "$scratch/noseed.txt" $base
    expect 2 "--steps" --model flux-tiny $base --steps 0
    expect 2 "--steps" --model sd3-tiny $base --steps 1001
    expect 2 "--prompt" --model flux-tiny --seed 0 --out "$scratch/u.png"
    expect 2 "--seed" --model flux-tiny --prompt fox --out "$scratch/u.png"
    expect 2 "count mismatch" --model flux-tiny --prompt a --prompt b --seed 0 --seed 1 --seed 2 --out "$scratch/u.png"
    expect 2 "--class" --model sd3-tiny $base --class 3
    expect 2 "--prompt" --model dit-tiny --seed 0 --class 1 --prompt fox --out "$scratch/u.png"
    expect 2 "--sampler" --model flux-tiny $base --sampler ddim
    expect 2 "--eta" --model sd3-tiny $base --eta 0.5
    expect 2 "multiples of 16" --model flux-tiny $base --width 100
    expect 2 "position table" --model sd3-tiny $base --width 512
    expect 2 "--height" --model sd3-tiny $base --height 0
    expect 2 "latent channels" --model flux-tiny $base --vae vae-tiny
    expect 2 "text encoder 'te-sd3'" --model sd3-tiny $base --text-encoder te-sd3
    expect 2 "--text-encoder" --model sd3-tiny $base --text-encoder no-such-te
    expect 2 "exceeds" --model flux-tiny $base --depth 3
    expect 2 "--single-depth" --model sd3-tiny $base --single-depth 1
    expect 2 "--batch-forward" --model flux-tiny $base --batch-forward both
    expect 2 "--first-index" --model flux-tiny $base --first-index -1
    expect 1 "$scratch/missing.safetensors" --model flux-tiny $base --weights "$scratch/missing.safetensors"
    }
    [ -e "$scratch/u.png" ] && fail "an image was written by a failing command"
    "$repro" generate --help | grep -q -- "--prompts-file" || fail "--help lacks --prompts-file"
    "$repro" generate --help | grep -q "SEED<TAB>PROMPT" || fail "--help does not document the prompts file format"
    ;;
weights)
    cd "$scratch" || fail "cd $scratch"
    for m in sd3-tiny flux-tiny te-tiny te-sd3 te-flux vae-tiny-16; do
        out=$("$repro" weights --model "$m" --out "$m.safetensors") || fail "repro weights --model $m failed"
        echo "$out"
        "$repro" weights --model "$m" --out "$m-again.safetensors" >/dev/null || fail "$m second write failed"
        cmp "$m.safetensors" "$m-again.safetensors" || fail "$m: two writes differ"
    done
    # FLUX: --depth 1 keeps 1 double + 1 single block of flux-tiny; --single-depth overrides the second
    n_full=$("$repro" weights --model flux-tiny --out f.safetensors | sed 's/.*: \([0-9]*\) tensors.*/\1/')
    n_d1=$("$repro" weights --model flux-tiny --depth 1 --out f.safetensors | sed 's/.*: \([0-9]*\) tensors.*/\1/')
    n_d1s2=$("$repro" weights --model flux-tiny --depth 1 --single-depth 2 --out f.safetensors \
        | sed 's/.*: \([0-9]*\) tensors.*/\1/')
    echo "flux-tiny tensors: full $n_full, --depth 1: $n_d1, --depth 1 --single-depth 2: $n_d1s2"
    [ "$n_d1" -lt "$n_d1s2" ] && [ "$n_d1s2" -lt "$n_full" ] || fail "FLUX depth overrides do not reduce the blocks"
    "$repro" weights --model sd3-tiny --single-depth 1 --out x.safetensors 2>&1 | grep -q "FLUX only" \
        || fail "--single-depth accepted for sd3-tiny"
    "$repro" weights --model te-tiny --depth 1 --out x.safetensors 2>&1 | grep -q "not text encoders" \
        || fail "--depth accepted for a text encoder"
    "$repro" weights --model flux-tiny --depth 3 --out x.safetensors 2>&1 | grep -q "exceeds" \
        || fail "--depth above the preset's blocks accepted for FLUX"
    [ -e x.safetensors ] && fail "weights written for a bad request"
    rm -f ./*.safetensors
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
echo "ok"
