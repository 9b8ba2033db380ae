#!/bin/sh
# checkpoints.sh — checkpoints as they ship, through `repro generate --weights`.
#   checkpoints.sh REPRO LATENTS_CMP PYTHON SRC SCRATCH MODE
# modes:
#   formats  flux-tiny and flux-tiny-schnell synthetic weights rewritten under BFL names, under
#            ComfyUI's (prefix model.diffusion_model.) and as two shards with an index: each
#            generates latents bitwise equal to the single diffusers-named file's
#   vae      synthetic VAEs rewritten under the original LDM names: vae-tiny-16 bare (as BFL's
#            ae.safetensors) decoding flux-tiny, vae-tiny under first_stage_model. in a file with
#            other models' tensors (a single-file checkpoint) decoding dit-tiny: each image is
#            bitwise the diffusers-named VAE file's (and not the default VAE's)
#   schnell  flux-tiny-schnell: 4 steps by default on the unshifted schedule (sigmas 1, 3/4,
#            1/2, 1/4, 0 exactly), recorded as such; --guidance refused
set -u
repro=$1 cmp=$2 py=$3 src=$4 scratch=$5 mode=$6
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
s=$scratch
"$py" -c "import numpy" 2>/dev/null || { echo "SKIP: $py has no numpy"; exit 77; }

case "$mode" in
formats)
    for m in flux-tiny flux-tiny-schnell; do
        "$repro" weights --model $m --weight-seed 5 --out "$s/$m.safetensors" >/dev/null || fail "weights $m"
        "$py" "$src/tests/cli/checkpoints_bfl.py" "$s/$m.safetensors" "$s/$m-bfl.safetensors" || fail "bfl $m"
        "$py" "$src/tests/cli/checkpoints_bfl.py" "$s/$m.safetensors" "$s/$m-comfy.safetensors" \
            model.diffusion_model. || fail "comfy $m"
        "$py" -c "
import json, sys
sys.path.insert(0, '$src/tests/reference')
import st
t, _ = st.load('$s/$m.safetensors')
names = sorted(t)
shards = {'s-1.safetensors': names[0::2], 's-2.safetensors': names[1::2]}
for f, ns in shards.items():
    st.save('$s/' + f, {n: t[n] for n in ns})
json.dump({'metadata': {}, 'weight_map': {n: f for f, ns in shards.items() for n in ns}},
          open('$s/$m.safetensors.index.json', 'w'))
" || fail "shards $m"
        for v in "" -bfl -comfy; do
            "$repro" generate --model $m --weights "$s/$m$v.safetensors" --prompt "a red fox" --seed 2 --steps 3 \
                --latents "$s/l$v.safetensors" >/dev/null 2>"$s/err" || fail "$m$v: $(cat "$s/err")"
        done
        "$repro" generate --model $m --weights "$s/$m.safetensors.index.json" --prompt "a red fox" --seed 2 \
            --steps 3 --latents "$s/l-shards.safetensors" >/dev/null 2>"$s/err" || fail "$m shards: $(cat "$s/err")"
        for v in -bfl -comfy -shards; do
            "$cmp" "$s/l.safetensors" 0 "$s/l$v.safetensors" 0 || fail "$m$v: latents not bitwise equal"
        done
    done
    # a schnell file is not a dev file: the guidance embedder is missing
    "$repro" generate --model flux-tiny --weights "$s/flux-tiny-schnell-bfl.safetensors" --prompt x --seed 1 \
        --latents "$s/x" 2>"$s/err" && fail "flux-tiny loaded a schnell checkpoint"
    grep -q "missing tensor 'time_text_embed.guidance_embedder.linear_1.weight'" "$s/err" || fail "$(cat "$s/err")"
    ;;
vae)
    # model:VAE preset:LDM prefix
    for c in flux-tiny:vae-tiny-16: dit-tiny:vae-tiny:first_stage_model.; do
        m=${c%%:*} rest=${c#*:}
        v=${rest%%:*} pre=${rest#*:}
        if [ "$m" = dit-tiny ]; then item="--class 3"; else item="--prompt fox --width 64 --height 64"; fi
        "$repro" weights --model $v --weight-seed 5 --out "$s/$v.safetensors" >/dev/null || fail "weights $v"
        "$py" "$src/tests/cli/checkpoints_ldm_vae.py" "$s/$v.safetensors" "$s/$v-ldm.safetensors" $pre ||
            fail "ldm $v"
        for w in "" -ldm; do
            "$repro" generate --model $m $item --seed 2 --steps 2 --vae-weights "$s/$v$w.safetensors" \
                --out "$s/$m$w.png" >/dev/null 2>"$s/err" || fail "$m $v$w: $(cat "$s/err")"
        done
        "$repro" generate --model $m $item --seed 2 --steps 2 --out "$s/$m-default.png" >/dev/null 2>"$s/err" ||
            fail "$m default VAE: $(cat "$s/err")"
        cmp "$s/$m.png" "$s/$m-ldm.png" || fail "$m: the LDM-named $v gives another image"
        cmp -s "$s/$m.png" "$s/$m-default.png" && fail "$m: --vae-weights made no difference"
    done
    ;;
schnell)
    out=$("$repro" generate --model flux-tiny-schnell --prompt "a red fox" --seed 1 --latents "$s/a.safetensors") ||
        fail "generate"
    echo "$out" | grep -q 'flow-euler (shift 1), 4 steps' || fail "not 4 unshifted steps: $out"
    "$py" -c "
import sys
sys.path.insert(0, '$src/tests/reference')
import st
t, m = st.load('$s/a.safetensors')
assert list(t['sigmas']) == [1.0, 0.75, 0.5, 0.25, 0.0], t['sigmas']
assert m['schedule'] == 'flow-flux-linear' and m['shift'] == '1' and 'guidance' not in m, m
" || fail "sigmas or metadata"
    "$repro" generate --model flux-tiny-schnell --prompt x --seed 1 --guidance 3.5 --latents "$s/x" 2>"$s/err"
    [ $? -eq 2 ] && grep -q 'has no guidance embedding' "$s/err" || fail "--guidance: $(cat "$s/err")"
    ;;
*) fail "unknown mode $mode" ;;
esac
echo "checkpoints $mode: ok"
