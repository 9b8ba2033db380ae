#!/bin/sh
# make_tree.sh — a small synthetic result store for the report tests, built from
# nothing (no committed binaries): `repro generate --latents` for dit-tiny with a
# few engine options gives outputs that differ from the reference by rounding
# (flash, reduce-split, subquad, split) or by much more (bf16, swapped seeds);
# case.json, result.json, classification.json and the runner's summary.json are
# then written by hand, one case per verdict class.
#   make_tree.sh REPRO ROOT
# writes ROOT/pool/<variant>/ (generated outputs, reused) and two runs of one
# matrix "rep": ROOT/a/rep and ROOT/b/rep. Run B is run A on "another machine":
# another host name and run stamps, the dp=2 math case with its items swapped (a
# BUG against A), one case only in A and one only in B.
set -u
repro=$1 root=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$root/pool" || exit 1
pool=$root/pool

# gen NAME ARGS...: dit-tiny, 2 items (seeds 0 1, class 207), 6 steps, into pool/NAME
gen() {
    name=$1
    shift
    [ -s "$pool/$name/done" ] && return 0
    rm -rf "$pool/$name" && mkdir -p "$pool/$name" || fail "mkdir $pool/$name"
    "$repro" generate --model dit-tiny --class 207 --steps 6 --threads 1 "$@" \
        --out "$pool/$name/image.png" --latents "$pool/$name/latents.safetensors" \
        --trace "$pool/$name/trace.safetensors" >"$pool/$name/log" 2>&1 || {
        cat "$pool/$name/log"
        fail "repro generate $name"
    }
    echo ok >"$pool/$name/done"
}
gen ref --seed 0 --seed 1
gen flash --seed 0 --seed 1 --attention flash
gen rsplit --seed 0 --seed 1 --reduce-split
gen subquad --seed 0 --seed 1 --attention subquad
gen split --seed 0 --seed 1 --attention split
gen bf16 --seed 0 --seed 1 --precision bf16
gen bf16flash --seed 0 --seed 1 --precision bf16 --attention flash
gen swapped --seed 1 --seed 0
[ -s "$pool/env.json" ] || "$repro" env >"$pool/env.json" || fail "repro env"

# ---- one run ------------------------------------------------------------------------
# run DIR HOST STAMP_PREFIX VARIANT(a|b)
run() {
    dir=$1/rep host=$2 sp=$3 variant=$4
    rm -rf "$1" && mkdir -p "$dir" || fail "mkdir $dir"
    order=""

    # put ID VARIANT: the generated outputs and env.json
    put() {
        mkdir -p "$dir/$1"
        cp "$pool/$2/latents.safetensors" "$pool/$2/trace.safetensors" "$pool/$2"/image-*.png "$dir/$1/"
        sed "s/\"hostname\":[^,]*,/\"hostname\":\t\"$host\",/" "$pool/env.json" >"$dir/$1/env.json"
    }
    # case_json ID NAME FIELDS: fields as JSON members (without name/items)
    case_json() {
        mkdir -p "$dir/$1"
        cat >"$dir/$1/case.json" <<EOF
{"model": "dit-tiny", "steps": 6, "threads": 1, "backend": "gloo", $3,
 "items": [{"seed": 0, "class": 207}, {"seed": 1, "class": 207}], "name": "$2"}
EOF
        order="$order $1"
    }
    # result ID NAME STATUS STAGE WALL [REASON [REPORT]]
    result() {
        cat >"$dir/$1/result.json" <<EOF
{"id": "$1", "name": "$2", "matrix": "rep", "status": "$3", "stage": "$4", "reason": "${6:-}",
 "failed_rank": -1, "world": 1, "wall_s": $5, "repeat": 1, "engine": "0.1.0", "git": "0123456789ab",
 "finished_at": "2026-01-0${variant_day}T02:00:00Z", "run_stamp": "$sp-$1", "report": "${7:-}"}
EOF
    }
    variant_day=1
    [ "$variant" = b ] && variant_day=2

    # the reference: dp=1, math
    case_json a000000000000001 "dp=1 attention=math" '"dp": 1, "attention": "math"'
    put a000000000000001 ref
    result a000000000000001 "dp=1 attention=math" ok run 1.50
    cat >"$dir/a000000000000001/classification.json" <<'EOF'
{"schema": 1, "case_id": "a000000000000001", "reference_id": "a000000000000001", "verdict": "identical",
 "expected": null, "pass": true, "summary": "the reference of its group",
 "evidence": {}, "metrics": {}}
EOF

    # flash at dp=1: rounding, inside the envelope
    case_json a000000000000002 "dp=1 attention=flash" '"dp": 1, "attention": "flash"'
    put a000000000000002 flash
    result a000000000000002 "dp=1 attention=flash" ok run 1.61
    cat >"$dir/a000000000000002/classification.json" <<'EOF'
{"schema": 1, "case_id": "a000000000000002", "reference_id": "a000000000000001", "verdict": "drift",
 "expected": null, "pass": true,
 "summary": "every local error inside the rounding envelope (largest 0.41 of it, step 3)",
 "evidence": {"exactness": "exact",
              "envelope": {"factor": 64, "floor": 5.96e-8, "twins_ok": 3,
                           "twins": [{"name": "reduce-split", "status": "ok", "teacher": true},
                                     {"name": "threads", "status": "ok", "teacher": true},
                                     {"name": "noise-ulp", "status": "ok", "teacher": true}],
                           "layers": [{"name": "blocks.0.attn", "rel": 2.1e-7}],
                           "steps": [3.0e-7, 3.1e-7, 3.3e-7, 3.2e-7, 3.4e-7, 3.5e-7],
                           "accumulated": [0, 3.0e-7, 4.4e-7, 5.6e-7, 6.5e-7, 7.4e-7, 8.2e-7]},
              "layers": [{"name": "blocks.0.attn", "rel": 1.0e-7, "envelope": 2.1e-7, "ratio": 0.48}],
              "initial_noise": {"rel": 0, "envelope": 0, "ratio": 0},
              "local_errors": [1.1e-7, 1.2e-7, 0.9e-7, 1.3e-7, 1.0e-7, 1.1e-7],
              "accumulated": [0, 1.1e-7, 1.9e-7, 2.4e-7, 2.9e-7, 3.3e-7, 3.6e-7]}}
EOF
    # the same case against the golden of its reference (a --golden run)
    cat >"$dir/a000000000000002/classification-golden.json" <<'EOF'
{"schema": 1, "case_id": "a000000000000002", "reference_id": "golden /srv/goldens", "verdict": "drift",
 "expected": null, "pass": true, "summary": "within the golden's rounding envelope", "evidence": {}}
EOF

    # dp=2, math: rounding of the split batch (B: the items swapped, far off)
    case_json a000000000000003 "dp=2 attention=math" '"dp": 2, "attention": "math"'
    if [ "$variant" = a ]; then put a000000000000003 rsplit; else put a000000000000003 swapped; fi
    result a000000000000003 "dp=2 attention=math" ok run 0.92

    # dp=2, flash: a BUG with its first failing layer and step
    case_json a000000000000004 "dp=2 attention=flash" '"dp": 2, "attention": "flash"'
    put a000000000000004 bf16flash
    result a000000000000004 "dp=2 attention=flash" ok run 0.95
    cat >"$dir/a000000000000004/classification.json" <<'EOF'
{"schema": 1, "case_id": "a000000000000004", "reference_id": "a000000000000001", "verdict": "BUG",
 "expected": null, "pass": false,
 "summary": "blocks.3.attn breaks the envelope x812 at step 2",
 "evidence": {"exactness": "exact",
              "envelope": {"factor": 64, "floor": 5.96e-8, "twins_ok": 3,
                           "twins": [{"name": "reduce-split", "status": "ok", "teacher": true},
                                     {"name": "threads", "status": "ok", "teacher": true},
                                     {"name": "noise-ulp", "status": "ok", "teacher": true}],
                           "layers": [{"name": "blocks.3.attn", "rel": 2.0e-7}],
                           "steps": [3.0e-7, 3.1e-7, 3.3e-7, 3.2e-7, 3.4e-7, 3.5e-7],
                           "accumulated": [0, 3.0e-7, 4.4e-7, 5.6e-7, 6.5e-7, 7.4e-7, 8.2e-7]},
              "layers": [{"name": "blocks.0.attn", "rel": 1.1e-7, "envelope": 2.0e-7, "ratio": 0.55},
                         {"name": "blocks.3.attn", "rel": 1.624e-4, "envelope": 2.0e-7, "ratio": 812},
                         {"name": "blocks.3.mlp", "rel": 2.1e-4, "envelope": 2.5e-7, "ratio": 840},
                         {"name": "final_layer", "rel": 2.3e-4, "envelope": 3.0e-7, "ratio": 767}],
              "initial_noise": {"rel": 0, "envelope": 0, "ratio": 0},
              "first_layer": {"name": "blocks.3.attn", "step": 0, "rel": 1.624e-4, "envelope": 2.0e-7, "ratio": 812},
              "first_step": {"step": 2, "what": "local error", "local": 2.7e-4, "envelope": 3.3e-7, "ratio": 818},
              "local_errors": [1.2e-7, 2.0e-7, 2.7e-4, 2.5e-4, 2.9e-4, 3.1e-4],
              "accumulated": [0, 1.2e-7, 2.4e-7, 2.7e-4, 4.9e-4, 7.6e-4, 1.1e-3]}}
EOF

    # ulysses=2, math: no classification yet, no metrics.json: the report computes them
    case_json a000000000000005 "ulysses=2 attention=math" '"ulysses": 2, "attention": "math"'
    put a000000000000005 subquad
    result a000000000000005 "ulysses=2 attention=math" ok run 1.20

    # ulysses=2, flash: a rank crashed
    case_json a000000000000006 "ulysses=2 attention=flash" '"ulysses": 2, "attention": "flash"'
    result a000000000000006 "ulysses=2 attention=flash" CRASH run 0.31 \
        "crash: rank 1 of 2 failed first: killed by SIGSEGV after 0.30 s" \
        'crash: rank 1 of 2 failed first: killed by SIGSEGV after 0.30 s\n--- rank 1 stderr (last 2 lines) ---\nrank 1: all_to_all <&> shape mismatch\nSegmentation fault\n---\n'

    # dp=3: rejected by validation, as the matrix expects
    case_json a000000000000007 "dp=3 attention=math" '"dp": 3, "attention": "math", "expect": "CONFIG_ERROR"'
    result a000000000000007 "dp=3 attention=math" CONFIG_ERROR validate 0 \
        "dp=3 with 2 items: dp must divide the item count (as xDiT, items are not padded)"

    # pipefusion=2, warmup 0..2: approximate
    for w in 0 1 2; do
        id=a00000000000001$w
        case_json $id "pipefusion=2 warmup=$w" "\"pipefusion\": 2, \"warmup_steps\": $w, \"attention\": \"math\""
        result $id "pipefusion=2 warmup=$w" ok run 1.1
    done
    put a000000000000010 bf16flash
    put a000000000000011 bf16
    put a000000000000012 subquad
    cat >"$dir/a000000000000010/classification.json" <<'EOF'
{"schema": 1, "case_id": "a000000000000010", "reference_id": "a000000000000001", "verdict": "BUG",
 "expected": null, "pass": false, "summary": "approx below its bound: SSIM 0.71 < 0.90 (warmup 0)",
 "evidence": {"exactness": "warmup-exact", "checked_steps": [],
              "approx": {"ssim": 0.71, "psnr": 21.3, "bound_ssim": 0.9, "bound_psnr": 25, "warmup": 0, "approximate": true}}}
EOF
    for w in 1 2; do
        cat >"$dir/a00000000000001$w/classification.json" <<EOF
{"schema": 1, "case_id": "a00000000000001$w", "reference_id": "a000000000000001", "verdict": "approx",
 "expected": null, "pass": true, "summary": "stale activations after $w warmup steps, within the quality bound",
 "evidence": {"exactness": "warmup-exact", "approx": {"ssim": 0.97, "psnr": 31.5, "bound_ssim": 0.9, "bound_psnr": 25,
              "warmup": $w, "approximate": true}}}
EOF
    done

    # split attention, repeated: two runs differed
    case_json a000000000000020 "dp=1 attention=split" '"dp": 1, "attention": "split"'
    put a000000000000020 split
    result a000000000000020 "dp=1 attention=split" ok run 1.3
    cat >"$dir/a000000000000020/classification.json" <<'EOF'
{"schema": 1, "case_id": "a000000000000020", "reference_id": "a000000000000001", "verdict": "NONDETERMINISTIC",
 "expected": null, "pass": false, "summary": "run 2 differs from run 1: latents max-abs 3.1e-05",
 "evidence": {"exactness": "exact", "determinism": {"repeats": 2, "promised": true, "max_abs": 3.1e-5,
              "repeats_identical": false, "leak_check": "ok"}}}
EOF

    # cfg parallel: items assigned to the wrong prompts
    case_json a000000000000021 "cfg_parallel=2 attention=math" '"cfg_parallel": 2, "attention": "math"'
    put a000000000000021 swapped
    result a000000000000021 "cfg_parallel=2 attention=math" ok run 1.0
    cat >"$dir/a000000000000021/classification.json" <<'EOF'
{"schema": 1, "case_id": "a000000000000021", "reference_id": "a000000000000001", "verdict": "MISMATCH",
 "expected": null, "pass": false, "summary": "item 0 matches reference item 1, item 1 matches item 0",
 "evidence": {"assignment": {"permutation": [1, 0], "distances": [[0.9, 0.01], [0.01, 0.9]], "margin": 90,
              "message": "item 0 matches reference item 1"}}}
EOF

    # ring=2: the deadline passed
    case_json a000000000000022 "ring=2 attention=math" '"ring": 2, "attention": "math"'
    result a000000000000022 "ring=2 attention=math" HANG run 900 \
        "hang: the 900.0 s deadline passed with ranks 0, 1 still running; the process group was killed"

    # A only / B only
    if [ "$variant" = a ]; then
        case_json a000000000000030 "patch=2 attention=math" '"patch": 2, "attention": "math"'
        put a000000000000030 rsplit
        result a000000000000030 "patch=2 attention=math" ok run 1.0
    else
        case_json a000000000000031 "patch=4 attention=math" '"patch": 4, "attention": "math"'
        put a000000000000031 rsplit
        result a000000000000031 "patch=4 attention=math" ok run 1.0
    fi

    # the runner's summary.json: every case, the SKIPPED one only here
    {
        printf '{"matrix": "rep", "file": "rep.yaml", "engine": "0.1.0", "git": "0123456789ab", "repeat": 1,\n'
        printf ' "cancelled": false, "cases": [\n'
        for id in $order; do
            printf '  {"id": "%s", "reference": "a000000000000001", "is_reference": %s},\n' "$id" \
                "$([ $id = a000000000000001 ] && echo true || echo false)"
        done
        printf '  {"id": "a000000000000040", "name": "dp=2 device=cuda:H100", "degrees": "dp2", "world": 2,\n'
        printf '   "reference": "a000000000000001", "is_reference": false, "status": "SKIPPED",\n'
        printf '   "reason": "not on this machine: device=cuda:H100: no visible GPU name contains H100 (visible: none)",\n'
        printf '   "expect": "", "resumed": false, "wall_s": 0}]}\n'
    } >"$dir/summary.json"
}

run "$root/a" vm-a 1767232800 a
run "$root/b" vm-b 1767319200 b
echo "tree: $root/a/rep, $root/b/rep"
