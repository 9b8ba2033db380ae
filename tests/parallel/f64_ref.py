"""f64_ref.py — how far a single-rank case run is from exact arithmetic.

Reads RUN_DIR/latents.safetensors (written by `repro worker --job case`: the case, the
weights files and the C noise are in it), reruns the same pipeline with the independent
torch references of tests/reference/ in float64 from the same noise (DiT: dit_ref +
sample_ref; SD3 / FLUX: te_ref + sd3_ref / flux_ref + flow_sample_ref), and prints

    f64_err  max|C final latents - torch float64 final latents|
    max_abs  max|torch float64 final latents|

The parallel tests use f64_err as the measure of the single rank's own rounding: a
parallel layout that only reorders floating-point work must land within a small multiple
of it (tests/parallel/parallel.sh explains the bound).

Usage: f64_ref.py RUN_DIR. Exit 0, 77 when torch/numpy are missing, 1 on an error."""
import json
import os
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # CMake passes Debian's /usr/bin/python3, which has torch
    print("SKIP: torch/numpy not importable with %s (%s)" % (sys.executable, e))
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import dit_ref  # noqa: E402
import flow_sample_ref  # noqa: E402
import flux_ref  # noqa: E402
import sample_ref  # noqa: E402
import sd3_ref  # noqa: E402
import st  # noqa: E402
import te_ref  # noqa: E402


def main():
    if len(sys.argv) != 2:
        print("usage: f64_ref.py RUN_DIR", file=sys.stderr)
        return 1
    torch.set_num_threads(1)
    tensors, meta = st.load(os.path.join(sys.argv[1], "latents.safetensors"))
    case = json.loads(meta["case"])
    model_name, steps, cfg = case["model"], case["steps"], float(case["cfg"])
    if case.get("depth", 0) or case.get("single_depth", 0):
        print("f64_ref: depth overrides are not supported here", file=sys.stderr)
        return 1
    noise = tensors["noise"]
    B, C, h, w = noise.shape
    seeds = [int(s) for s in tensors["seeds"]]
    gidx = list(range(B))
    dt = torch.float64
    x = torch.from_numpy(noise.copy()).to(dt)
    if model_name.startswith("dit"):
        model = dit_ref.load_dit(meta["weights"], preset=model_name).double()
        classes = [int(c) for c in tensors["classes"]]
        sched = sample_ref.Schedule(steps)

        def noise_fn(k):
            return torch.from_numpy(sample_ref.item_noise(seeds, gidx, (C, h, w),
                                                          sample_ref.STREAM_STEP_NOISE_BASE + k)).to(dt)

        fn = sample_ref.guided_model(model, classes, cfg)
        eta = case.get("eta", 0.0)
        fin, _, _ = sample_ref.sample(fn, x, sched, case["sampler"], noise_fn, eta)
    else:
        prompts = [it.get("prompt", "") for it in case["items"]]
        te = te_ref.load_te(meta["te_weights"], meta["text_encoder"]).double()
        with torch.no_grad():
            ctx, pooled = te.encode(prompts)
            nctx, npooled = te.encode([""] * len(prompts))
        if model_name.startswith("sd3"):
            model = sd3_ref.load_sd3(meta["weights"], model_name).double()
            sig, ts = flow_sample_ref.sd3_schedule(steps, 3.0)
            fin, _ = flow_sample_ref.sample_sd3(model, x, ctx, pooled, nctx, npooled, cfg, sig, ts)
        else:
            model = flux_ref.load_flux(meta["weights"], model_name).double()
            sig, ts, _ = flow_sample_ref.flux_schedule(steps, (h // 2) * (w // 2))
            fin, _ = flow_sample_ref.sample_flux(model, x, ctx, pooled, float(case["guidance"]), sig, ts)
    ref = fin.double().numpy()
    err = float(np.max(np.abs(tensors["latents"].astype(np.float64) - ref)))
    print("f64_err %.17g" % err)
    print("max_abs %.17g" % float(np.max(np.abs(ref))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
