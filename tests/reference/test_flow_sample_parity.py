"""test_flow_sample_parity.py — `repro generate` for SD3 / FLUX against the independent torch
pipeline loops (flow_sample_ref.py around sd3_ref.py / flux_ref.py / te_ref.py).

For each case, `repro generate --latents` writes the initial noise, the trajectory, the final
latents and the schedule; this script then
  1. regenerates the noise with its own numpy Philox4x32-10 + Box-Muller (sample_ref.py) and
     checks it equals the C "noise" tensor, shaped (B, 16, h, w) per item keyed by
     (seed, global index) (bitwise, or at most 1 float ulp: different libm log/cos/sin);
  2. checks the sigmas / scheduler timesteps / model timesteps against its own diffusers-formula
     schedule, bitwise (the C code reproduces diffusers' float32/float64 operations);
  3. encodes the prompts with te_ref (the same synthetic text-encoder weights file), runs the
     torch transformer (same weights file) inside the pipeline loop written from diffusers
     (SD3: CFG over [negative = "" encoding, positive]; FLUX: packed latents, t / 1000, embedded
     guidance), from the C noise, in float32 and in float64, and compares the trajectories.
Pass: max|C - torch_f32| of the final latents <= max(1e-3, 2 max|torch_f32 - torch_f64|). 1e-3 is
the issue's bar; the second term only takes over when the latents' magnitude makes torch's own
float32 rounding exceed it, and the output says so when it does.

Usage: test_flow_sample_parity.py --repro PATH/TO/repro --scratch DIR   (REPRO_CACHE from env)
Exit 0 pass, 1 fail, 77 skip (no torch)."""
import argparse
import json
import os
import subprocess
import sys
import time

try:
    import numpy as np
    import torch
except ImportError as e:  # the Python on PATH may lack torch; CMake passes /usr/bin/python3
    print("SKIP: torch/numpy not importable with %s (%s)" % (sys.executable, e))
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flow_sample_ref  # noqa: E402
import flux_ref  # noqa: E402
import sample_ref  # noqa: E402
import sd3_ref  # noqa: E402
import st  # noqa: E402
import te_ref  # noqa: E402

TOL = 1e-3  # final latents, max-abs, C vs torch float32 (the bar)

# (name, model, steps, extra repro options, [(seed, prompt)], first global index)
CASES = [
    ("sd3-tiny-cfg4", "sd3-tiny", 8, ["--cfg", "4"],
     [(3, "a red fox"), (8, ""), (21, "na\u00efve caf\u00e9 \u2615 at dawn")], 0),
    ("flux-tiny-g3.5", "flux-tiny", 8, ["--guidance", "3.5"], [(3, "a red fox"), (5, "a lighthouse at night")], 0),
    ("flux-tiny-192x128", "flux-tiny", 8, ["--guidance", "5", "--width", "192", "--height", "128"],
     [(11, "a wide landscape")], 7),
    ("sd3-tiny-nocfg-per-item", "sd3-tiny", 6, ["--cfg", "1", "--width", "128", "--height", "192",
                                                "--batch-forward", "per-item"],
     [(4, "a tall tower"), (4, "a tall tower")], 2),
    # MMDiT-X (SD3.5 Medium's dual attention) through the whole pipeline
    ("sd35m-tiny-cfg4", "sd3.5-medium-tiny", 8, ["--cfg", "4"], [(3, "a red fox"), (8, "")], 0),
]


def ulp_diff(a, b):
    """Max distance in float32 ulps between two float32 arrays."""
    ia = a.astype(np.float32).view(np.int32).astype(np.int64)
    ib = b.astype(np.float32).view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return int(np.max(np.abs(ia - ib))) if a.size else 0


def run_case(args, name, model_name, steps, extra, items, first):
    lat_path = os.path.join(args.scratch, name + ".safetensors")
    pf = os.path.join(args.scratch, name + ".prompts.txt")
    with open(pf, "w", encoding="utf-8") as f:
        for s, p in items:
            f.write("%d\t%s\n" % (s, p))
    cmd = [args.repro, "generate", "--model", model_name, "--steps", str(steps), "--prompts-file", pf,
           "--first-index", str(first), "--latents", lat_path, "--threads", "1"] + extra
    print("$ " + " ".join(cmd))
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    t_c = time.time() - t0
    if r.returncode != 0:
        return ["%s: repro generate failed (%d): %s" % (name, r.returncode, r.stderr.strip())]
    tensors, meta = st.load(lat_path)
    problems = []
    seeds = [s for s, _ in items]
    prompts = [p for _, p in items]
    gidx = [first + i for i in range(len(items))]

    # ---- metadata: self-describing ----
    if json.loads(meta.get("prompts", "null")) != prompts:
        problems.append("%s: metadata prompts %r, want %r" % (name, meta.get("prompts"), prompts))
    if list(tensors["global_index"]) != gidx or list(tensors["seeds"]) != seeds:
        problems.append("%s: seeds/global_index %s/%s, want %s/%s" % (name, list(tensors["seeds"]),
                                                                     list(tensors["global_index"]), seeds, gidx))
    for key, want in (("model", model_name), ("steps", str(steps)), ("sampler", "flow-euler")):
        if meta.get(key) != want:
            problems.append("%s: metadata %s = %r, want %r" % (name, key, meta.get(key), want))
    sd3 = model_name.startswith("sd3")
    cfg = float(meta["cfg"])
    guidance = float(meta["guidance"]) if not sd3 else None

    # ---- 1. noise: independent Philox, (16, h, w) per item keyed by (seed, global index) ----
    noise_c = tensors["noise"]
    B, C, h, w = noise_c.shape
    noise_py = sample_ref.item_noise(seeds, gidx, (C, h, w), sample_ref.STREAM_INIT_NOISE)
    nbits = int(np.sum(noise_c.view(np.uint32) != noise_py.view(np.uint32)))
    ulps = ulp_diff(noise_c, noise_py)
    print("  noise (%d, %d, %d, %d): %d values differ bitwise from numpy Philox, max %d ulp"
          % (B, C, h, w, nbits, ulps))
    if ulps > 1:
        problems.append("%s: C noise differs from the numpy Philox by %d ulp" % (name, ulps))

    # ---- 2. schedule ----
    if sd3:
        sig, ts = flow_sample_ref.sd3_schedule(steps, 3.0)
        model_t = ts
        print("  schedule: SD3 static shift 3.0")
    else:
        seq = (h // 2) * (w // 2)
        sig, ts, mu = flow_sample_ref.flux_schedule(steps, seq)
        model_t = ts / 1000
        print("  schedule: FLUX image_seq_len %d, mu %.9g (C %s)" % (seq, mu, meta.get("mu")))
        if float(meta.get("mu", "nan")) != mu:
            problems.append("%s: mu %s, want %r" % (name, meta.get("mu"), mu))
    for key, ref in (("sigmas", sig), ("timesteps", ts), ("model_timesteps", model_t)):
        ref64 = ref.double().numpy()
        if tensors[key].shape != ref64.shape or not np.array_equal(tensors[key], ref64):
            problems.append("%s: %s %s differ from diffusers' %s" % (name, key, tensors[key], ref64))
    print("  sigmas %s" % np.array2string(sig.numpy(), precision=6))

    # ---- 3. torch text encoder + transformer + pipeline loop, float32 and float64 ----
    te32 = te_ref.load_te(meta["te_weights"], meta["text_encoder"])
    if sd3:
        model = sd3_ref.load_sd3(meta["weights"], model_name)
    else:
        model = flux_ref.load_flux(meta["weights"], model_name)
    results = {}
    t0 = time.time()
    for tag, dt in (("f32", torch.float32), ("f64", torch.float64)):
        te = te32 if dt == torch.float32 else te_ref.load_te(meta["te_weights"], meta["text_encoder"]).double()
        m = model if dt == torch.float32 else model.double()
        with torch.no_grad():
            ctx, pooled = te.encode(prompts)
            nctx, npooled = te.encode([""] * len(prompts))  # SD3: negative_prompt "" per item
        x = torch.from_numpy(noise_c.copy()).to(dt)
        if sd3:
            fin, traj = flow_sample_ref.sample_sd3(m, x, ctx, pooled, nctx, npooled, cfg, sig, ts)
        else:
            fin, traj = flow_sample_ref.sample_flux(m, x, ctx, pooled, guidance, sig, ts)
        results[tag] = (fin.double().numpy(), [t.double().numpy() for t in traj])
    t_py = time.time() - t0

    traj_c = tensors["trajectory"].astype(np.float64)
    if traj_c.shape[0] != steps + 1:
        return problems + ["%s: trajectory has %d entries, want %d" % (name, traj_c.shape[0], steps + 1)]
    print("  step  sigma      max|C-torch32|  max|C-torch64|  max|torch32-torch64|  max|x|")
    for k in range(steps + 1):
        r32, r64 = results["f32"][1][k], results["f64"][1][k]
        print("  %4d  %-9.6f  %.3e       %.3e       %.3e            %.3f"
              % (k, float(sig[k]), np.max(np.abs(traj_c[k] - r32)), np.max(np.abs(traj_c[k] - r64)),
                 np.max(np.abs(r32 - r64)), np.max(np.abs(r64))))
    fin_c = tensors["latents"].astype(np.float64)
    if not np.array_equal(fin_c, traj_c[-1]):
        problems.append("%s: 'latents' is not the last trajectory entry" % name)
    e32 = float(np.max(np.abs(fin_c - results["f32"][0])))
    e64 = float(np.max(np.abs(fin_c - results["f64"][0])))
    t64 = float(np.max(np.abs(results["f32"][0] - results["f64"][0])))
    bar = max(TOL, 2.0 * t64)
    print("  final: max|C - torch32| = %.3e (bar %.3g), |C - torch64| = %.3e, |torch32 - torch64| = %.3e, "
          "max|x| %.3f" % (e32, bar, e64, t64, float(np.max(np.abs(results["f64"][0])))))
    if bar > TOL:
        print("  NOTE: torch's own float32 error (%.3e) makes 2x it exceed the issue's 1e-3 at this latents' "
              "magnitude, so the scale-aware bar max(1e-3, 2 x |torch32 - torch64|) = %.3g applies" % (t64, bar))
    else:
        print("  the issue's bar 1e-3 applies (torch's own float32 error %.3e is far below it)" % t64)
    print("  time: repro %.2f s (whole process, %d steps, no decode), torch f32+f64 %.2f s" % (t_c, steps, t_py))
    if not e32 <= bar:
        problems.append("%s: final latents differ from torch float32 by %.3g > %.3g" % (name, e32, bar))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repro", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--only", default=None, help="run only the case with this name")
    args = ap.parse_args()
    os.makedirs(args.scratch, exist_ok=True)
    torch.set_num_threads(2)
    sample_ref.check_philox_kat()
    print("torch %s; numpy Philox4x32-10 matches Random123's known answers" % torch.__version__)
    problems = []
    for case in CASES:
        if args.only and case[0] != args.only:
            continue
        print("\ncase %s: %s, %d steps, options %s, items %s, first index %d" % case)
        problems += run_case(args, *case)
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
