#!/bin/sh
# prompt_embeds.sh — precomputed prompt embeddings (engine/pipeline/prompt_embeds.h) give the latents
# of the same embeddings computed by the text encoder, bit for bit.
#   prompt_embeds.sh REPRO LATENTS_CMP SCRATCH MODE
# modes:
#   generate  sd3-tiny (cfg 7: with the negative pair) and flux-tiny: generate with
#             --save-prompt-embeds, then with --prompt-embeds of that file: noise, latents and
#             trajectory of every item bitwise equal; bad files and option mixes are refused
#   matrix    a matrix case with prompt_embeds (dp 1 and 2, per-item forwards) against
#             generate's latents of the same items, bitwise
# The prompts are both non-empty, so an item run on any other conditioning would differ.
set -u
repro=$1 cmp=$2 scratch=$3 mode=$4
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
s=$scratch

case "$mode" in
generate)
    for m in sd3-tiny flux-tiny; do
        "$repro" generate --model $m --prompt "a red fox" --prompt "a blue bird" --seed 3 --seed 4 --steps 6 \
            --latents "$s/a-$m.safetensors" --save-prompt-embeds "$s/e-$m.safetensors" >/dev/null ||
            fail "$m: generate with the text encoder"
        out=$("$repro" generate --model $m --prompt-embeds "$s/e-$m.safetensors" --seed 3 --seed 4 --steps 6 \
            --latents "$s/b-$m.safetensors") || fail "$m: generate with --prompt-embeds"
        echo "$out" | grep -q '(prompt-embeds)' || fail "$m: no prompt-embeds in: $out"
        for i in 0 1; do
            "$cmp" "$s/a-$m.safetensors" $i "$s/b-$m.safetensors" $i || fail "$m item $i: not bitwise"
        done
    done
    # sd3 with cfg > 1 needs the negative pair: flux's file has none
    "$repro" generate --model sd3-tiny --prompt-embeds "$s/e-flux-tiny.safetensors" --seed 1 --latents "$s/x" \
        2>"$s/err" && fail "sd3 took a file without negatives"
    grep -q 'needs negative_prompt_embeds' "$s/err" || fail "message: $(cat "$s/err")"
    # widths are the model's
    "$repro" generate --model flux-dev --depth 1 --prompt-embeds "$s/e-flux-tiny.safetensors" --seed 1 \
        --width 32 --height 32 --latents "$s/x" 2>"$s/err" && fail "flux-dev took tiny widths"
    grep -q "prompt_embeds \[2, 32, 64\].*(R, L, 4096) and (R, 768)" "$s/err" || fail "message: $(cat "$s/err")"
    # option mixes
    "$repro" generate --model sd3-tiny --prompt-embeds "$s/e-sd3-tiny.safetensors" --prompt x --seed 1 \
        --latents "$s/x" 2>"$s/err"
    [ $? -eq 2 ] && grep -q 'no --prompt with it' "$s/err" || fail "--prompt with --prompt-embeds: $(cat "$s/err")"
    "$repro" generate --model sd3-tiny --prompt-embeds "$s/e-sd3-tiny.safetensors" --seed 1 --seed 2 --seed 3 \
        --latents "$s/x" 2>"$s/err"
    [ $? -eq 2 ] && grep -q 'has 2 rows' "$s/err" || fail "seed count: $(cat "$s/err")"
    ;;
matrix)
    # one GEMM thread on both sides: bitwise needs the same operations, and whether a GEMM's
    # bits depend on its thread count is the BLAS kernel set's property (Haswell's do)
    "$repro" generate --model sd3-tiny --prompt "a red fox" --prompt "a blue bird" --seed 3 --seed 4 --steps 4 \
        --batch-forward per-item --threads 1 --latents "$s/a.safetensors" --save-prompt-embeds "$s/e.safetensors" >/dev/null ||
        fail "generate"
    cat >"$s/pe.yaml" <<EOM
name: pe
base:
  model: sd3-tiny
  steps: 4
  sampler: euler
  cfg: 7.0
  device: cpu
  backend: gloo
  batch_forward: per-item
  threads: 1
  prompt_embeds: $s/e.safetensors
seeds: [3, 4]
axes:
  dp: [1, 2]
reference:
  dp: 1
EOM
    "$repro" --matrix "$s/pe.yaml" --results "$s/res" --progress plain >"$s/out" 2>&1 || fail "matrix: $(cat "$s/out")"
    n=0
    for c in "$s"/res/pe/*/; do
        [ -s "$c/latents.safetensors" ] || continue
        for i in 0 1; do
            "$cmp" "$s/a.safetensors" $i "$c/latents.safetensors" $i latents || fail "$c item $i: not bitwise"
        done
        n=$((n + 1))
    done
    [ $n -eq 2 ] || fail "$n cases with latents (want 2)"
    ;;
*) fail "unknown mode $mode" ;;
esac
echo "prompt_embeds $mode: ok"
