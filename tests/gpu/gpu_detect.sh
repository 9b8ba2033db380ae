# gpu_detect.sh — sourced by the GPU scripts (tests/gpu/models.sh, invariant.sh): is there a
# GPU, and a CUDA build of $repro to use it? Sets ngpu (the GPUs repro sees), or exits 77
# (ctest's skip) with the reason. Needs $repro, $scratch (exists), $py and fail().
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L >"$scratch/nvidia-smi.txt" 2>&1 || true
    if ! grep -q '^GPU ' "$scratch/nvidia-smi.txt"; then
        echo "SKIP: nvidia-smi -L lists no GPU: $(head -c 300 "$scratch/nvidia-smi.txt")"
        exit 77
    fi
    cat "$scratch/nvidia-smi.txt"
fi
"$repro" env >"$scratch/env.json" 2>&1 || fail "repro env exited $?"
ngpu=$("$py" - "$scratch/env.json" <<'EOF'
import json, sys
e = json.load(open(sys.argv[1]))
if not (e.get("build") or {}).get("cuda"):
    print("nocuda")
else:
    print(len([g for g in e.get("gpus") or [] if "name" in g]))
EOF
)
case $ngpu in
nocuda) echo "SKIP: this repro was built without CUDA (no nvcc at configure time)"; exit 77 ;;
0) echo "SKIP: no CUDA device visible to repro (repro env lists no GPU; CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset})"; exit 77 ;;
''|*[!0-9]*) fail "cannot read the GPU count from repro env: $ngpu" ;;
esac
