"""test_flux_parity.py — the C FLUX forward against the independent PyTorch model (flux_ref.py).

For each case: tests/tools/flux_forward writes synthetic weights (rp_params_write_synthetic)
and x, t, guidance, context, pooled[, mask], out (+ a trace); the torch model loads the same
weights file and runs on the same inputs in float32 and then float64.
Pass: max|C - torch_f32| <= 1e-4. Also printed: both errors against float64 (whether C is
as accurate as torch's own float32) and a per-layer trace comparison (the C trace's strided
samples vs the torch activations at the same indices).

Cases: flux-tiny batch 2 (square latent; a 12x20 latent, which catches a row/col swap in the
image ids or packing; a text key mask), and flux-dev real widths with 1 double + 1 single
block on a 32x32 latent (256x256 image, 256 image tokens) with 32 text tokens of width 4096.
The flux-dev weights (~2.2 GB fp32) are written once into the scratch dir and deleted at the end.

Usage: test_flux_parity.py --tool PATH/TO/flux_forward --scratch DIR [--quick]
Exit 0 pass, 1 fail, 77 skip (no torch)."""
import argparse
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
import flux_ref  # noqa: E402
import st  # noqa: E402

TOL = 1e-4  # fp32: max|C - torch_f32|

# (preset, n_double, n_single, batch, latent H, latent W, text tokens, input seed, weight seed, mask)
CASES = [
    ("flux-tiny", None, None, 2, 16, 16, 16, 1, 0, False),
    ("flux-tiny", None, None, 2, 12, 20, 16, 2, 5, False),
    ("flux-tiny", None, None, 2, 16, 16, 16, 3, 0, True),
    ("flux-dev", 1, 1, 1, 32, 32, 32, 4, 0, False),
]


def parse_stats(s):
    return dict(kv.split("=", 1) for kv in s.split(","))


def compare_trace(trace_path, acts32, acts64, loose):
    """Per layer, in forward order: max|C sample - torch sample| against float32 and float64
    torch at the trace's strided indices. Returns (rows, problems)."""
    tensors, meta = st.load(trace_path)
    rows, problems = [], []
    extra = [k for k in tensors if k.startswith("e0/") and k[3:] not in acts32]
    if extra:
        problems.append("trace layers without a torch counterpart: %s" % extra[:4])
    for name, act in acts32.items():
        key = "e0/" + name
        if key not in tensors:
            problems.append("trace lacks layer '%s'" % name)
            continue
        stats = parse_stats(meta[key])
        ref32 = act.detach().reshape(-1).double().numpy()
        ref64 = acts64[name].detach().reshape(-1).numpy()
        if int(stats["numel"]) != ref32.size:
            problems.append("trace layer '%s': numel %s, torch has %d" % (name, stats["numel"], ref32.size))
            continue
        samp = tensors[key].astype(np.float64)
        idx = np.arange(0, ref32.size, int(stats["stride"]))[:samp.size]
        if idx.size != samp.size:
            problems.append("trace layer '%s': %d samples at stride %s, torch gives %d"
                            % (name, samp.size, stats["stride"], idx.size))
            continue
        d32 = float(np.max(np.abs(samp - ref32[idx]))) if samp.size else 0.0
        d64 = float(np.max(np.abs(samp - ref64[idx]))) if samp.size else 0.0
        t64 = float(np.max(np.abs(ref32[idx] - ref64[idx]))) if samp.size else 0.0
        scale = max(1.0, float(np.max(np.abs(ref64))))
        rows.append((name, d32, d64, t64, d32 / scale))
        # loose: the tight bar is on the output; this catches a trace of the wrong tensor
        if not d32 <= loose * scale:
            problems.append("trace layer '%s' differs by %.3g (scale %.3g)" % (name, d32, scale))
    return rows, problems


def run_case(tool, scratch, preset, nd, ns, batch, H, W, L, seed, wseed, mask):
    tag = "%s%s-b%d-%dx%d-L%d-s%d-w%d%s" % (preset, "-d%ds%d" % (nd, ns) if nd is not None else "", batch, H, W,
                                            L, seed, wseed, "-mask" if mask else "")
    wpath = os.path.join(scratch, tag + ".weights.safetensors")
    out = os.path.join(scratch, tag + ".safetensors")
    trace = os.path.join(scratch, tag + ".trace.safetensors")
    cmd = [tool, "--preset", preset, "--weights", wpath, "--write-weights", "--weight-seed", str(wseed),
           "--batch", str(batch), "--height", str(H), "--width", str(W), "--text-len", str(L),
           "--seed", str(seed), "--threads", "2", "--trace", trace, "--out", out]
    if nd is not None:
        cmd += ["--double", str(nd), "--single", str(ns)]
    if mask:
        cmd += ["--mask"]
    try:
        print("\n$ " + " ".join(cmd))
        sys.stdout.flush()
        t0 = time.time()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        t_c = time.time() - t0
        print(r.stdout.rstrip())
        if r.returncode != 0:
            return ["%s: flux_forward exited %d" % (tag, r.returncode)]

        data, meta = st.load(out)
        problems = []
        want = {"preset": preset, "height": str(H), "width": str(W), "text_len": str(L)}
        if any(meta.get(k) != v for k, v in want.items()):
            problems.append("%s: metadata %s lacks %s" % (tag, meta, want))
        c_out = data["out"].astype(np.float64)

        t0 = time.time()
        model = flux_ref.load_flux(wpath, preset, nd, ns)
        x = torch.from_numpy(data["x"])
        t = torch.from_numpy(data["t"])
        g = torch.from_numpy(data["guidance"]) if "guidance" in data else None
        ctx = torch.from_numpy(data["context"])
        pooled = torch.from_numpy(data["pooled"])
        km = torch.from_numpy(data["mask"]).bool() if mask else None
        if mask and bool(km.all()):
            problems.append("%s: the mask masks nothing, so the masked path is not tested" % tag)
        acts32, acts64 = {}, {}
        with torch.no_grad():
            o32 = flux_ref.velocity(model, x, t, g, ctx, pooled, km, acts32).double().numpy()
            model.double()  # in place: the float32 weights are freed as they are converted
            o64 = flux_ref.velocity(model, x.double(), t.double(), None if g is None else g.double(),
                                    ctx.double(), pooled.double(), km, acts64).numpy()
        del model
        t_torch = time.time() - t0
        if c_out.shape != o32.shape:
            return problems + ["%s: C out shape %s, torch %s" % (tag, c_out.shape, o32.shape)]

        e_ct = float(np.max(np.abs(c_out - o32)))
        e_c64 = float(np.max(np.abs(c_out - o64)))
        e_t64 = float(np.max(np.abs(o32 - o64)))
        amax = float(np.max(np.abs(o64)))
        print("  %s: max|out| %.3f  max|C - torch32| %.3g  max|C - f64| %.3g  max|torch32 - f64| %.3g"
              "  (C tool %.1fs incl. weights, torch f32+f64 %.1fs)" % (tag, amax, e_ct, e_c64, e_t64, t_c, t_torch))
        if not e_ct <= TOL:  # also catches NaN
            problems.append("%s: max|C - torch32| = %.3g > %.3g" % (tag, e_ct, TOL))

        rows, tp = compare_trace(trace, acts32, acts64, 1e-3)
        problems += ["%s: %s" % (tag, p) for p in tp]
        if rows:
            print("    %-38s %14s %12s %16s" % ("trace layer", "|C - torch32|", "|C - f64|", "|torch32 - f64|"))
            for name, d32, d64, t64, _ in rows:
                print("    %-38s %14.3g %12.3g %16.3g" % (name, d32, d64, t64))
            worst = max(rows, key=lambda r: r[4])
            first = next((r[0] for r in rows if r[2] > 10 * r[3] + 1e-6), None)
            print("    trace: C departs most from torch32 at '%s' (%.2g of the layer's scale); first layer with "
                  "|C - f64| > 10x |torch32 - f64|: %s" % (worst[0], worst[4], first or "none"))
        return problems
    finally:
        for p in (wpath, out, trace):
            if os.path.exists(p):
                os.remove(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--quick", action="store_true", help="flux-tiny cases only")
    args = ap.parse_args()
    os.makedirs(args.scratch, exist_ok=True)
    torch.set_num_threads(2)
    print("torch %s" % torch.__version__)
    t0 = time.time()
    cases = [c for c in CASES if not (args.quick and c[0] != "flux-tiny")]
    problems = []
    for case in cases:
        problems += run_case(args.tool, args.scratch, *case)
    print("\ntotal %.1f s" % (time.time() - t0))
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("PASS: %d cases within %.0e of torch float32" % (len(cases), TOL))
    return 0


if __name__ == "__main__":
    sys.exit(main())
