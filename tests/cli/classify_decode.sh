#!/bin/sh
# classify_decode.sh — evidence 8's decodes at the case's own decoder arithmetic (label cli;
# docs/classification.md §8): where the images' teacher forcing takes the reference's decoder
# arithmetic, the reference's final latents are also decoded with the case's own
#   - fp32 case, attention flash: a decode-only run into <case>/decode-own/ (one level);
#   - bf16 case, attention flash: its fp32 shadow ends with that decode at fp32
#     (<case>/shadow/teacher/), against the reference's fp32 shadow's decode (one level);
#   - bf16 case, dp 2 (the reference's decoder arithmetic): neither, its teacher decode is
#     bitwise.
# Clean: every verdict drift or identical, and each decode judged (items in the evidence).
# Then each judged decode is damaged (another item's image in place of image 0: what a decoder
# fault under that arithmetic alone would leave) and `repro classify` must call it a BUG at
# vae.decode after the last step, naming that decode.
#   classify_decode.sh REPRO SCRATCH
set -u
repro=$1 scratch=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch"
mkdir -p "$scratch" || exit 1
cd "$scratch" || exit 1
# id_of DIR NAME: the id of the case named NAME in DIR/summary.json
# (a prefix of the name: the reference's name goes on with what it sets, "ref attention=math ...")
id_of() { awk -v n="\"name\":	\"$2" '/"id":/ { id = $2 } index($0, n) { gsub(/[",]/, "", id); print id; exit }' "$1/summary.json"; }

for prec in fp32 bf16; do
    cat >"$prec.yaml" <<EOF
name: decode-$prec
base: {model: dit-tiny, steps: 3, cfg: 4, threads: 1, backend: gloo, precision: $prec}
seeds: [0, 1]
classes: [207]
include:
  - {attention: flash, name: flash}
  - {dp: 2, name: dp2}
reference: {attention: math, dp: 1, backend: self}
EOF
    "$repro" --matrix "$prec.yaml" --results res --progress plain --no-report >"$prec.log" 2>&1 ||
        { cat "$prec.log"; fail "$prec sweep exit $?"; }
    grep -Eq "(BUG|MISMATCH|NONDETERMINISTIC) " "$prec.log" && { cat "$prec.log"; fail "$prec: a false alarm"; }
done

d=res/decode-fp32
ref=$d/$(id_of $d "ref ") flash=$d/$(id_of $d flash)
[ -f "$flash/decode-own/image-0.png" ] || fail "fp32 flash: no decode at its own decoder arithmetic"
grep -q '"own_arithmetic"' "$flash/classification.json" || fail "fp32 flash: its own-arithmetic decode was not judged"

d=res/decode-bf16
bref=$d/$(id_of $d "ref ") bflash=$d/$(id_of $d flash) bdp=$d/$(id_of $d dp2)
[ -f "$bref/shadow/teacher/image-0.png" ] || fail "bf16 reference: its fp32 shadow decoded nothing"
[ -f "$bflash/shadow/teacher/image-0.png" ] || fail "bf16 flash: its fp32 shadow decoded nothing"
[ -e "$bflash/decode-own" ] && fail "bf16 flash: a decode-own run (no rule holds a bf16 one)"
[ -e "$bdp/shadow/teacher/image-0.png" ] && fail "bf16 dp 2: a shadow decode, though its decoder is the reference's"
grep -q '"decode_fp32_shadow"' "$bflash/classification.json" || fail "bf16 flash: the shadow's decode was not judged"
grep -A3 '"decode_fp32_shadow"' "$bflash/classification.json" | grep -q '"items"' ||
    fail "bf16 flash: the shadow's decode has no items"
echo "clean: fp32 and bf16 drift, each own-arithmetic decode judged"

# damage each judged decode: image 1 in place of image 0
for pair in "$flash:decode-own:$ref" "$bflash:shadow/teacher:$bref"; do
    c=${pair%%:*} rest=${pair#*:}
    sub=${rest%%:*} r=${rest#*:}
    cp "$c/$sub/image-1.png" "$c/$sub/image-0.png" || exit 1
    out=$("$repro" classify "$c" "$r" 2>&1)
    echo "$out"
    echo "$out" | grep -q "^BUG" || fail "$c/$sub damaged: not a BUG"
    echo "$out" | grep -q "vae.decode" || fail "$c/$sub damaged: vae.decode not named"
done
echo ok
