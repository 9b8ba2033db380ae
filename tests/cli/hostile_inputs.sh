#!/bin/sh
# hostile_inputs.sh — inputs that once cost unbounded time or memory, or were misjudged
# (issue 22). Every input must end within 2 s and 256 MiB (above what the binary takes
# resident with no input) with a clear error.
#   hostile_inputs.sh REPRO SCRATCH MODE BOUNDED_RUN
# modes:
#   yaml_depth   'seeds: ' + '['x200000 + ']'x200000 (400 KB; 62 s in libyaml before):
#                exit 2, "n.yaml:1:C: nested deeper than 32 levels"
#   st_metadata  a safetensors header with 100000 __metadata__ keys in reverse order
#                (insertion sort: 102 s): `repro diff` succeeds; generate --weights
#                ends with a clear error
#   size_bounds  depth 2147483647 (reached 18 GB): generate exits 2 "needs at least";
#                the matrix case is CONFIG_ERROR, before any rank runs
#   worker_timeout  ranks get --timeout from the matrix's timeout (and --timeout), not
#                the worker's 60 s default
#   nul_name     a NUL in the top-level name ("ok\0/../../x") or a case name: exit 2,
#                nothing written
#   png_limits   a 109 KB 30000x30000 1-bit PNG (120 s, 5.4 GB) and a 112-byte PNG
#                declaring a 1.3 GB tEXt chunk (1.47 GB): `repro diff` errors naming
#                the limit
#   minor        control bytes in case names are not printed raw; include with 4097
#                entries and a directory as the matrix: errors at file:line:col;
#                weights /dev/zero or missing: CONFIG_ERROR; the lock message is one line
set -u
repro=$1 scratch=$2 mode=$3 bounded=$4
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
cd "$scratch" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
# The binary's own peak resident set with no input to read (repro --help): the shared
# libraries it loads, with CUDA's ~200 MiB of them, how much resident depending on the page
# cache (209-226 MiB seen on one machine in one hour). An input may cost 256 MiB above it.
base=$("$bounded" 20 100000 "$repro" --help 2>&1 >/dev/null | sed -n 's/^bounded_run: [0-9.]* s, \([0-9]*\) MiB.*/\1/p')
[ -n "$base" ] || fail "no baseline resident set for $repro --help"
input_mib=256
cap=$((base + input_mib))
# run EXPECTED_EXIT NAME CMD...: CMD within 2 s and 256 MiB above the baseline, exiting
# EXPECTED_EXIT; stdout in NAME.out, stderr in NAME.err
run() {
    want=$1 name=$2
    shift 2
    "$bounded" 2 "$cap" "$@" >"$name.out" 2>"$name.err"
    rc=$?
    grep '^bounded_run' "$name.err" >&2
    [ $rc -eq 124 ] && fail "$name: ran past 2 s"
    [ $rc -eq 125 ] && fail "$name: peak RSS above $cap MiB ($base MiB of the binary's own + $input_mib)"
    [ $rc -eq "$want" ] || { cat "$name.err" >&2; fail "$name: exit $rc, expected $want"; }
}
# has NAME TEXT: NAME.err holds TEXT
has() { grep -qF -- "$2" "$1.err" || { cat "$1.err" >&2; fail "$1: stderr lacks '$2'"; }; }

case $mode in
yaml_depth)
    $py -c "open('n.yaml','w').write('seeds: '+'['*200000+']'*200000+'\n')"
    run 2 deep "$repro" --matrix n.yaml --dry-run
    has deep "n.yaml:1:"
    has deep "nested deeper than 32 levels"
    # mappings count as well as sequences; the limit allows real nesting
    $py -c "open('m.yaml','w').write('base: '+'{a: '*40+'1'+'}'*40+'\n')"
    run 2 deepmap "$repro" --matrix m.yaml --dry-run
    has deepmap "nested deeper than 32 levels"
    ;;
st_metadata)
    $py -c 'import json,struct;n=100000;h=json.dumps({"__metadata__":{"k%07d"%(n-i):"" for i in range(n)},"latents":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}).encode();open("m.safetensors","wb").write(struct.pack("<Q",len(h))+h+bytes(4))'
    run 0 diff "$repro" diff m.safetensors m.safetensors
    grep -q "max_abs 0" diff.out || fail "diff: $(cat diff.out)"
    run 1 gen "$repro" generate --model dit-tiny --weights m.safetensors --seed 0 --class 1 --steps 2 --out x.png
    has gen "m.safetensors"
    # a repeated key is still found after the sort
    $py -c 'import struct;h=b"{\"__metadata__\":{\"b\":\"1\",\"a\":\"2\",\"b\":\"3\"},\"latents\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";open("dup.safetensors","wb").write(struct.pack("<Q",len(h))+h+bytes(4))'
    run 1 dup "$repro" diff dup.safetensors dup.safetensors
    has dup "key 'b' appears twice"
    ;;
size_bounds)
    for m in "dit-tiny --class 1" "sd3-tiny --prompt a"; do
        # shellcheck disable=SC2086
        run 2 gen "$repro" generate --model $m --depth 2147483647 --seed 0 --out x.png
        has gen "at depth 2147483647"
        has gen "needs at least"
    done
    [ -e x.png ] && fail "generate wrote x.png"
    printf 'name: deep\nbase: {model: dit-tiny, depth: 2147483647, steps: 2}\n' >deep.yaml
    run 1 sweep "$repro" --matrix deep.yaml --results r --progress plain
    grep -q "CONFIG_ERROR" sweep.out || fail "depth 2^31 is not CONFIG_ERROR: $(cat sweep.out)"
    grep -q "needs at least" sweep.out || fail "no memory reason: $(cat sweep.out)"
    ls r/deep/*/rank0.err >/dev/null 2>&1 && fail "a rank ran"
    ;;
worker_timeout)
    # a stand-in worker that records its arguments, then runs the real one
    cat >w.sh <<EOF
#!/bin/sh
echo "\$*" >>"$scratch/args.\${REPRO_RANK:-0}"
exec "$repro" "\$@"
EOF
    chmod +x w.sh
    printf 'name: tmo\ntimeout: 77\nclassify: false\nseeds: [0, 1]\nbase: {model: dit-tiny, steps: 2, backend: gloo}\naxes: {dp: [2]}\n' >t.yaml
    REPRO_TEST_REPRO=$repro "$repro" --matrix t.yaml --results r --worker-exe "$scratch/w.sh" --progress plain \
        >t.out 2>&1 || { cat t.out >&2; fail "the sweep failed"; }
    for k in 0 1; do
        grep -qE -- "--timeout 77( |$)" "args.$k" || fail "rank $k was not given --timeout 77: $(cat args.$k)"
    done
    rm -f args.*
    "$repro" --matrix t.yaml --results r2 --timeout 33 --worker-exe "$scratch/w.sh" --progress plain \
        >t2.out 2>&1 || { cat t2.out >&2; fail "the sweep with --timeout failed"; }
    grep -qE -- "--timeout 33( |$)" args.0 || fail "--timeout 33 did not reach the ranks: $(cat args.0)"
    ;;
nul_name)
    printf 'name: "ok\\0/../../x"\nbase: {model: dit-tiny, steps: 2}\n' >top.yaml
    run 2 top "$repro" --matrix top.yaml --results r
    has top "top.yaml:1:7: a NUL character"
    [ -e r ] && fail "a results directory was written: $(ls -R r)"
    printf 'name: nul\nbase: {model: dit-tiny, steps: 2}\ninclude:\n  - {name: "a\\0b"}\n' >case.yaml
    run 2 case "$repro" --matrix case.yaml --dry-run
    has case "case.yaml:4:"
    has case "a NUL character"
    printf 'name: nul\nbase: {model: dit-tiny, steps: 2}\n"see\\0ds": [0]\n' >key.yaml
    run 2 key "$repro" --matrix key.yaml --dry-run
    has key "a NUL character"
    ;;
png_limits)
    $py - <<'EOF'
import struct, zlib
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
sig = b"\x89PNG\r\n\x1a\n"
side = 30000  # 1-bit gray, all zero: 109 KB compressed
row = b"\x00" * (1 + (side + 7) // 8)
co = zlib.compressobj(9)
idat = b"".join(co.compress(row) for _ in range(side)) + co.flush()
open("big.png", "wb").write(sig + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)) +
                            chunk(b"IDAT", idat) + chunk(b"IEND", b""))
# a 1x1 RGB image, then a tEXt chunk declaring 1.3 GB that the file does not hold
head = sig + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
text = head + struct.pack(">I", 1300000000) + b"tEXt" + b"k\x00v"
open("text.png", "wb").write(text + b"\x00" * (112 - len(text)))
EOF
    run 1 big "$repro" diff big.png big.png
    has big "big.png: corrupt PNG"
    has big "exceeds user limit"
    run 1 text "$repro" diff text.png text.png
    has text "text.png: corrupt PNG: tEXt: chunk data is too large"
    ;;
minor)
    # control bytes in a case name: neither the dry-run table nor the sweep's lines carry them
    printf 'name: esc\nclassify: false\nbase: {model: dit-tiny, steps: 2}\ninclude:\n  - {name: "a\\e[31mred\\r\\nforged", dp: 1}\n' >esc.yaml
    run 0 esc "$repro" --matrix esc.yaml --dry-run
    grep -q "a?\[31mred??forged" esc.out || fail "the name is not shown sanitised: $(cat esc.out)"
    if LC_ALL=C grep -q "$(printf '\033')" esc.out esc.err; then fail "an escape byte reached the terminal"; fi
    # include with more than 4096 entries: an error at the entry
    $py -c "open('inc.yaml','w').write('name: inc\nbase: {model: dit-tiny, steps: 2}\ninclude:\n'+''.join('  - {steps: %d}\n' % (1 + i % 50) for i in range(4097)))"
    run 2 inc "$repro" --matrix inc.yaml --dry-run
    has inc "inc.yaml:4100:5: field 'include': more than 4096 entries"
    # a directory as the matrix
    mkdir -p d
    run 2 dir "$repro" --matrix d --dry-run
    has dir "d:1:1: not a matrix file (a directory)"
    # weights that cannot be a checkpoint: CONFIG_ERROR, not CRASH
    printf 'name: w\nclassify: false\nbase: {model: dit-tiny, steps: 2}\ninclude:\n  - {name: zero, weights: /dev/zero}\n  - {name: missing, weights: %s/missing.safetensors}\n' "$scratch" >w.yaml
    run 1 w "$repro" --matrix w.yaml --results r --progress plain
    grep -q "weights=/dev/zero: not a regular file" w.out || fail "/dev/zero: $(cat w.out)"
    grep -q "weights=$scratch/missing.safetensors: cannot use the file" w.out || fail "missing: $(cat w.out)"
    grep -q "2 CONFIG_ERROR, 0 CRASH" w.out || fail "not 2 CONFIG_ERROR: $(cat w.out)"
    # the lock message: one line, the pid without its newline
    command -v flock >/dev/null || { echo "flock not installed: lock part skipped" >&2; exit 0; }
    mkdir -p r/esc && printf '4242\n' >r/esc/.lock
    flock r/esc/.lock sleep 5 &
    lk=$!
    sleep 0.5
    run 1 lock "$repro" --matrix esc.yaml --results r --progress plain
    kill $lk 2>/dev/null
    wait $lk 2>/dev/null
    has lock "(pid 4242); wait for it or stop it"
    [ "$(grep -c . lock.err)" -le 2 ] || fail "the lock message spans lines: $(cat lock.err)"
    ;;
*) fail "unknown mode $mode" ;;
esac
echo "hostile_inputs $mode: ok"
