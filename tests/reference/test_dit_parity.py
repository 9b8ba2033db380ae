"""test_dit_parity.py — the C DiT forward against the independent PyTorch model (dit_ref.py).

For each case: `repro forward` writes x, t, y, out (+ a trace); the torch model loads
the same weights file and runs on the same x, t, y in float32 and float64.
Pass: max|C - torch_f32| <= 1e-4 (the issue's bar). Also printed: both errors against
float64 (so the log shows whether C is as accurate as torch) and a per-layer trace
comparison (the C trace's strided samples vs the torch activations at the same indices).
One bf16 case checks the precision knob reaches the GEMMs (loose bar, relative to max|out|).

Usage: test_dit_parity.py --repro PATH/TO/repro --scratch DIR   (REPRO_CACHE from the env)
Exit 0 pass, 1 fail, 77 skip (no torch)."""
import argparse
import copy
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
import dit_ref  # noqa: E402
import st  # noqa: E402

TOL = 1e-4        # fp32: max|C - torch_f32|, the bar
TOL_BF16 = 3e-2   # bf16 GEMM inputs (8-bit mantissa): relative to max|out|; a wiring check, not a bar

# (preset, depth override, batch, input seed, weight seed, precision)
CASES = [
    ("dit-tiny", None, 3, 1, 0, "fp32"),
    ("dit-tiny", None, 3, 2, 5, "fp32"),
    ("dit-xl-2-256", 2, 2, 3, 0, "fp32"),
    ("dit-xl-2-128", 2, 2, 4, 0, "fp32"),
    ("dit-tiny", None, 3, 1, 0, "bf16"),
    # the trained DiT (engine/models/digits/, resolved by name; the weight seed does not apply)
    ("dit-digits", None, 3, 1, 0, "fp32"),
]


def parse_stats(s):
    return dict(kv.split("=", 1) for kv in s.split(","))


def compare_trace(trace_path, acts32, acts64, loose):
    """Per layer, in forward order: max|C sample - torch sample| against float32 and
    float64 torch at the trace's strided indices. Returns (rows, problems)."""
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


def run_case(repro, scratch, preset, depth, batch, seed, wseed, precision):
    tag = "%s%s-b%d-s%d-w%d-%s" % (preset, "-d%d" % depth if depth else "", batch, seed, wseed, precision)
    out = os.path.join(scratch, tag + ".safetensors")
    trace = os.path.join(scratch, tag + ".trace.safetensors")
    cmd = [repro, "forward", "--model", preset, "--batch", str(batch), "--seed", str(seed),
           "--weight-seed", str(wseed), "--precision", precision, "--threads", "2",
           "--trace", trace, "--out", out]
    if depth:
        cmd += ["--depth", str(depth)]
    print("\n$ " + " ".join(cmd))
    t0 = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t_c = time.time() - t0
    print(r.stdout.rstrip())
    if r.returncode != 0:
        return ["%s: repro forward exited %d" % (tag, r.returncode)]

    data, meta = st.load(out)
    x, t, y, c_out = data["x"], data["t"], data["y"], data["out"].astype(np.float64)
    problems = []
    want = {"model": preset, "precision": precision}
    if depth:
        want["depth"] = str(depth)
    if any(meta.get(k) != v for k, v in want.items()):
        problems.append("%s: metadata %s lacks %s" % (tag, meta, want))
    n_cls = dit_ref.PRESETS[preset].get("num_classes", 1000)
    if batch >= 2 and y[-1] != n_cls:
        problems.append("%s: last item should use the null class %d, got %d" % (tag, n_cls, y[-1]))

    t0 = time.time()
    model = dit_ref.load_dit(meta["weights"], preset=preset, depth=depth)
    # The synthetic pos_embed must be DiT's table (checked against the float64 original).
    pe_ref = dit_ref.get_2d_sincos_pos_embed(model.pos_embed.shape[-1], model.x_embedder.grid_size)
    pe_err = float(np.max(np.abs(model.pos_embed[0].double().numpy() - pe_ref)))
    if pe_err > 1e-5:
        problems.append("%s: weights' pos_embed differs from get_2d_sincos_pos_embed by %.3g" % (tag, pe_err))

    xt, tt, yt = torch.from_numpy(x), torch.from_numpy(t), torch.from_numpy(y.astype(np.int64))
    acts32, acts64 = {}, {}
    with torch.no_grad():
        o32 = model(xt, tt, yt, acts32).double().numpy()
        o64 = copy.deepcopy(model).double()(xt.double(), tt.double(), yt, acts64).numpy()
    t_torch = time.time() - t0
    if c_out.shape != o32.shape:
        return problems + ["%s: C out shape %s, torch %s" % (tag, c_out.shape, o32.shape)]

    e_ct = float(np.max(np.abs(c_out - o32)))
    e_c64 = float(np.max(np.abs(c_out - o64)))
    e_t64 = float(np.max(np.abs(o32 - o64)))
    amax = float(np.max(np.abs(o64)))
    print("  %s: max|out| %.3f  max|C - torch32| %.3g  max|C - f64| %.3g  max|torch32 - f64| %.3g"
          "  (pos_embed err %.2g; C %.1fs, torch %.1fs)"
          % (tag, amax, e_ct, e_c64, e_t64, pe_err, t_c, t_torch))
    bar = TOL if precision == "fp32" else TOL_BF16 * amax
    if not e_ct <= bar:  # also catches NaN
        problems.append("%s: max|C - torch32| = %.3g > %.3g" % (tag, e_ct, bar))

    rows, tp = compare_trace(trace, acts32, acts64, 1e-3 if precision == "fp32" else 0.1)
    problems += ["%s: %s" % (tag, p) for p in tp]
    if rows:
        print("    %-16s %14s %12s %16s" % ("trace layer", "|C - torch32|", "|C - f64|", "|torch32 - f64|"))
        for name, d32, d64, t64, _ in rows:
            print("    %-16s %14.3g %12.3g %16.3g" % (name, d32, d64, t64))
        worst = max(rows, key=lambda r: r[4])
        # where C first becomes clearly less accurate than torch's own float32 rounding
        first = next((r[0] for r in rows if r[2] > 10 * r[3] + 1e-6), None)
        print("    trace: C departs most from torch32 at '%s' (%.2g of the layer's scale); first layer with "
              "|C - f64| > 10x |torch32 - f64|: %s" % (worst[0], worst[4], first or "none"))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repro", required=True)
    ap.add_argument("--scratch", required=True)
    args = ap.parse_args()
    os.makedirs(args.scratch, exist_ok=True)
    torch.set_num_threads(2)
    print("torch %s, REPRO_CACHE=%s" % (torch.__version__, os.environ.get("REPRO_CACHE")))
    problems = []
    for case in CASES:
        problems += run_case(args.repro, args.scratch, *case)
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("PASS: %d cases (fp32 within %.0e of torch float32; bf16 within %.0e of max|out|)"
          % (len(CASES), TOL, TOL_BF16))
    return 0


if __name__ == "__main__":
    sys.exit(main())
