#!/bin/sh
# models.sh — the models on the CUDA device against the CPU (ctest gpu.models, label gpu):
# matrices/gpu_engine.yaml through the sweep runner, then checks on the results JSON it writes
# (results/gpu_engine/summary.json: per case its verdict against its reference, the repeats)
# and on the case directories.
#
#   models.sh REPRO SCRATCH SOURCE_DIR
#
# Exit 77 (skipped) with the reason when this build has no CUDA or no GPU is visible
# (`nvidia-smi -L` when installed, and the GPUs the repro binary itself sees: `repro env`).
# Checks, per model (dit-tiny, sd3-tiny, flux-tiny):
#   (a) gpu fp32, gpu_mode deterministic, vs the same case on the CPU: the classifier's verdict
#       is drift — not identical (the GPU must have run: its trace says device cuda:..., the
#       reference's says cpu), not BUG / MISMATCH;
#   (b) the same case run twice (repeat: 2): repeats bitwise identical (the runner's repeat
#       check, and max-abs 0 between the two runs' latents);
#   (c) gpu_mode fast vs deterministic: the difference (latents max-abs and rel-L2, image PSNR)
#       is printed; nothing is asserted on its size (the fast sweep's own exit status neither:
#       TF32 is far outside fp32's rounding envelope);
#   (d) bf16 on cuda vs bf16 on the CPU: drift;
#   (e) parallel layouts: cuda + nccl (dp 2, cfg 2; dp 2 x cfg 2 with 4 GPUs; SKIPPED with a
#       message below 2 GPUs) and cuda + gloo with 2 ranks on one GPU (device cuda:#0): drift
#       vs the CPU in the sweep, and `repro classify` of the parallel run against the
#       single-GPU run (the CPU reference's twins as the rounding envelope, no teacher run):
#       identical or drift, never BUG.
# Every case's verdict is printed (the sweep table), so a failing ctest log says why.
set -u
repro=$1 scratch=$2 src=$3
py=${REPRO_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=$(command -v python3 || echo python3)
fail() { echo "FAIL: $*" >&2; exit 1; }
unset REPRO_RANK REPRO_WORLD REPRO_LOCAL_RANK REPRO_STORE_DIR RANK WORLD_SIZE LOCAL_RANK REPRO_DEVICE
m=$src/matrices/gpu_engine.yaml
[ -f "$m" ] || fail "$m is missing"
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1

# ---- is there a GPU, and a CUDA build to use it? ($ngpu, or exit 77) ----
. "$src/tests/gpu/gpu_detect.sh"
echo "repro sees $ngpu GPU(s)"
if [ "$ngpu" -lt 2 ]; then
    echo "note: only $ngpu GPU visible: the cuda+nccl layouts (one GPU per rank) are SKIPPED; cuda+gloo with" \
         "2 ranks on one GPU still runs"
elif [ "$ngpu" -lt 4 ]; then
    echo "note: $ngpu GPUs visible: the cuda+nccl dp 2 x cfg 2 layout (4 ranks) is SKIPPED"
fi

# ---- the sweeps ----
res=$scratch/results
"$repro" --matrix "$m" --filter gpu_mode=deterministic --results "$res" --progress plain \
    >"$scratch/sweep.log" 2>&1
rc_det=$?
grep -v '^\[' "$scratch/sweep.log"
echo "deterministic sweep: exit $rc_det"
cp "$res/gpu_engine/summary.json" "$scratch/summary-det.json" 2>/dev/null || fail "no summary.json after the sweep"
"$repro" --matrix "$m" --filter gpu_mode=fast --results "$res" --progress plain >"$scratch/sweep-fast.log" 2>&1
rc_fast=$?
grep -v '^\[' "$scratch/sweep-fast.log"
echo "fast sweep: exit $rc_fast (reported, not judged)"
cp "$res/gpu_engine/summary.json" "$scratch/summary-fast.json" 2>/dev/null || fail "no summary.json after the fast sweep"

# ---- the checks ----
"$py" - "$scratch/summary-det.json" "$scratch/summary-fast.json" "$res/gpu_engine" "$repro" "$ngpu" <<'EOF'
import glob, json, os, struct, subprocess, sys

det = json.load(open(sys.argv[1]))["cases"]
fast = json.load(open(sys.argv[2]))["cases"]
root, repro, ngpu = sys.argv[3], sys.argv[4], int(sys.argv[5])
bad = []
by_name = {}
for c in det + fast:
    by_name[c["name"]] = c

def case(name):
    c = by_name.get(name)
    if c is None:
        bad.append("%s: not in the sweep's summary.json" % name)
    return c

def cdir(c):
    return os.path.join(root, c["id"])

def note(d, key):
    try:
        with open(os.path.join(d, "trace.safetensors"), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            h = json.loads(f.read(n))
    except (OSError, ValueError):
        return None
    return (h.get("__metadata__") or {}).get("note/" + key)

def diff(a, b):
    out = subprocess.run([repro, "diff", a, b], capture_output=True, text=True)
    r = {}
    for line in out.stdout.splitlines():
        k, _, v = line.partition(" ")
        try:
            r[k] = float(v)
        except ValueError:
            pass
    return r

def verdict(c):
    return c.get("verdict") or c["status"]

print("\ngpu_engine: verdicts (reference: the same case on the CPU)")
for c in det + fast:
    if c["name"].startswith("gpu"):
        rep = c.get("repeats") or {}
        print("  %-34s %-8s %-16s %s%s" % (c["name"], c["status"], verdict(c),
              "repeats identical; " if rep.get("identical") else
              ("repeats DIFFER (max-abs %s); " % rep.get("max_abs") if rep else ""),
              (c.get("verdict_summary") or c.get("reason") or "")[:150]))

for model in ("dit-tiny", "sd3-tiny", "flux-tiny"):
    # (a) fp32 deterministic vs the CPU: drift, and the GPU really ran
    g = case("gpu %s fp32" % model)
    r = case("cpu %s fp32 (reference)" % model)
    if g is None or r is None:
        continue
    if g["status"] != "ok":
        bad.append("(a) %s: status %s: %s" % (g["name"], g["status"], g.get("reason", "")[:300]))
        continue
    if verdict(g) != "drift":
        bad.append("(a) %s: verdict %s vs the CPU, expected drift (%s)" % (g["name"], verdict(g),
                   (g.get("verdict_summary") or "")[:300]))
    dev, rdev = note(cdir(g), "device"), note(cdir(r), "device")
    if not (dev or "").startswith("cuda:"):
        bad.append("(a) %s: its trace says device %r, not a cuda device" % (g["name"], dev))
    if rdev != "cpu":
        bad.append("(a) %s: the reference's trace says device %r, not cpu" % (r["name"], rdev))
    algos = note(cdir(g), "cuda.gemm.algo.0")
    print("  %s: ran on %s; first GEMM: %s; attention: %s" % (g["name"], dev, (algos or "?")[:120],
          note(cdir(g), "cuda.attention") or note(cdir(g), "attention") or "?"))
    # (b) run twice: bitwise identical
    rep = g.get("repeats") or {}
    if rep.get("identical") is not True:
        bad.append("(b) %s: the two runs are not bitwise identical (repeats: %s)" % (g["name"], rep))
    r2 = os.path.join(cdir(g), "repeat-2", "latents.safetensors")
    if os.path.exists(r2):
        d = diff(os.path.join(cdir(g), "latents.safetensors"), r2)
        if d.get("max_abs") != 0.0:
            bad.append("(b) %s: run 2's latents differ from run 1's (max-abs %s)" % (g["name"], d.get("max_abs")))
        else:
            print("  %s: run 1 and run 2 bitwise identical" % g["name"])
    # (c) fast vs deterministic: reported
    f = case("gpu %s fp32 fast" % model)
    if f is not None and f["status"] == "ok":
        dl = diff(os.path.join(cdir(g), "latents.safetensors"), os.path.join(cdir(f), "latents.safetensors"))
        di = diff(cdir(g), cdir(f))
        psnr = [v for k, v in di.items() if k.endswith(".png.psnr")]
        rep = f.get("repeats") or {}
        print("  (c) %s: gpu_mode fast vs deterministic: latents max-abs %s rel-L2 %s; image PSNR %s dB; "
              "fast repeats %s; verdict vs the CPU %s" %
              (model, dl.get("max_abs"), dl.get("rel_l2"), ("%.2f" % min(psnr)) if psnr else "-",
               "identical" if rep.get("identical") else "differ (max-abs %s)" % rep.get("max_abs"), verdict(f)))
    elif f is not None:
        print("  (c) %s: the fast case did not finish: %s %s" % (model, f["status"], f.get("reason", "")[:200]))
    # (d) bf16 on cuda vs bf16 on the CPU
    b = case("gpu %s bf16" % model)
    if b is not None and verdict(b) != "drift":
        bad.append("(d) %s: verdict %s vs bf16 on the CPU, expected drift (%s)" % (b["name"], verdict(b),
                   (b.get("verdict_summary") or b.get("reason") or "")[:300]))

# (e) parallel layouts: drift vs the CPU (the sweep), identical or drift vs the single-GPU run
for c in det:
    n = c["name"]
    if not n.startswith("gpu") or (" nccl " not in n and " gloo " not in n):
        continue
    if c["status"] == "SKIPPED":
        print("  (e) %s: SKIPPED here: %s" % (n, c.get("reason", "")[:200]))
        if " gloo " in n:
            bad.append("(e) %s: SKIPPED, but 2 gloo ranks on one GPU need only one GPU" % n)
        continue
    if c["status"] != "ok" or verdict(c) not in ("drift", "identical"):
        bad.append("(e) %s: %s %s vs the CPU (%s)" % (n, c["status"], verdict(c),
                   (c.get("verdict_summary") or c.get("reason") or "")[:300]))
        continue
    model = n.split()[1]
    single, ref = by_name.get("gpu %s fp32" % model), by_name.get("cpu %s fp32 (reference)" % model)
    if not single or single["status"] != "ok" or not ref:
        continue
    twins = sorted(glob.glob(os.path.join(cdir(ref), "twins", "*")))
    out = subprocess.run([repro, "classify", cdir(c), cdir(single)] + twins +
                         ["--twin-base", cdir(ref), "--teacher", os.path.join(cdir(c), "no-teacher"),
                          "--out", "vs_single_gpu.json"], capture_output=True, text=True)
    line = (out.stdout.strip().splitlines() or [out.stderr.strip()[:300]])[0]
    v = line.split(":")[0]
    d = diff(os.path.join(cdir(single), "latents.safetensors"), os.path.join(cdir(c), "latents.safetensors"))
    print("  (e) %s vs the single-GPU run: %s (latents max-abs %s)" % (n, line[:200], d.get("max_abs")))
    if v not in ("identical", "drift"):
        bad.append("(e) %s: %s against the single-GPU run, expected identical or drift" % (n, line[:300]))
if ngpu < 2:
    print("  (e) cuda+nccl: skipped: only %d GPU visible (NCCL needs one GPU per rank)" % ngpu)

if bad:
    print("\n".join("FAIL: " + b for b in bad), file=sys.stderr)
    sys.exit(1)
EOF
[ $? -eq 0 ] || fail "checks above"
[ $rc_det -eq 0 ] || fail "the deterministic sweep exited $rc_det: some verdict is not what gpu_engine.yaml expects"
echo ok
