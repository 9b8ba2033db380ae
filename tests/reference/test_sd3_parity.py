"""test_sd3_parity.py — the C SD3 forward against the independent PyTorch model (sd3_ref.py).

For each case the tool tests/tools/sd3_forward writes synthetic weights, runs the C
forward on seeded inputs and writes x, t, context, pooled, [context_mask], out (+ a trace);
the torch model loads the same weights file by name (strict) and runs the same inputs in
float32 and float64.
Pass: max|C - torch_f32| <= 1e-4. Also printed: both errors against float64 (is C as
accurate as torch?) and a per-layer trace comparison (the C trace's strided samples vs
the torch activations at the same indices). One bf16 case checks the precision knob
reaches the GEMMs (loose bar, relative to max|out|).

Usage: test_sd3_parity.py --tool PATH/TO/sd3_forward --scratch DIR
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
    print("SKIP: torch/numpy not importable with %s (%s); run with /usr/bin/python3" % (sys.executable, e))
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sd3_ref  # noqa: E402
import st  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAINED = {"sd3-digits": os.path.join(ROOT, "engine", "models", "digits", "sd3-digits.safetensors")}
TOL = 1e-4        # fp32: max|C - torch_f32|
TOL_BF16 = 3e-2   # bf16 GEMM inputs: relative to max|out|; a wiring check, not a bar

# (preset, depth override, batch, text tokens, latent H, W, input seed, weight seed, mask, precision)
CASES = [
    # full sample size: the 8x8 grid is the centre of the 16x16 table
    ("sd3-tiny", None, 2, 24, 16, 16, 1, 0, False, "fp32"),
    # non-square latent (6x4 grid, asymmetric crop), other weights, a text key mask
    ("sd3-tiny", None, 3, 24, 12, 8, 2, 5, True, "fp32"),
    ("sd3-tiny", None, 2, 24, 16, 16, 1, 0, False, "bf16"),
    # the trained MMDiT (engine/models/digits/sd3-digits.safetensors, read as shipped): its 4x4 grid is
    # the centre of the 8x8 table; 32 text tokens, te-digits' length
    ("sd3-digits", None, 3, 32, 8, 8, 1, 0, False, "fp32"),
    # SD3-medium shapes (D 1536, 24 heads, Djoint 4096, Dpool 2048, 192x192 table), 2 blocks
    # (block 1 is context_pre_only), 32x32 latent = 256 image tokens, 16 text tokens
    ("sd3-medium", 2, 2, 16, 32, 32, 3, 0, False, "fp32"),
    # MMDiT-X (SD3.5 Medium's dual attention): blocks 0, 1 dual, block 2 plain and
    # context_pre_only; then the same non-square masked case; then depth 2, whose last block
    # is both dual and context_pre_only
    ("sd3.5-medium-tiny", None, 2, 24, 16, 16, 1, 0, False, "fp32"),
    ("sd3.5-medium-tiny", None, 3, 24, 12, 8, 2, 5, True, "fp32"),
    ("sd3.5-medium-tiny", 2, 2, 24, 16, 16, 4, 3, False, "fp32"),
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
        if idx.size != samp.size or samp.size == 0:
            problems.append("trace layer '%s': %d samples at stride %s, torch gives %d"
                            % (name, samp.size, stats["stride"], idx.size))
            continue
        d32 = float(np.max(np.abs(samp - ref32[idx])))
        d64 = float(np.max(np.abs(samp - ref64[idx])))
        t64 = float(np.max(np.abs(ref32[idx] - ref64[idx])))
        scale = max(1.0, float(np.max(np.abs(ref64))))
        rows.append((name, d32, d64, t64, d32 / scale))
        if not d32 <= loose * scale:  # catches a trace of the wrong tensor, and NaN
            problems.append("trace layer '%s' differs by %.3g (scale %.3g)" % (name, d32, scale))
    return rows, problems


def run_case(tool, scratch, preset, depth, batch, L, H, W, seed, wseed, mask, precision):
    tag = "%s%s-b%d-l%d-%dx%d-s%d-w%d%s-%s" % (preset, "-d%d" % depth if depth else "", batch, L, H, W,
                                               seed, wseed, "-mask" if mask else "", precision)
    out = os.path.join(scratch, tag + ".safetensors")
    trace = os.path.join(scratch, tag + ".trace.safetensors")
    weights = os.path.join(scratch, "%s%s-w%d.weights.safetensors" % (preset, "-d%d" % depth if depth else "",
                                                                       wseed))
    weights = TRAINED.get(preset, weights)
    cmd = [tool, "--preset", preset, "--batch", str(batch), "--ctx-len", str(L), "--height", str(H),
           "--width", str(W), "--seed", str(seed), "--weight-seed", str(wseed), "--precision", precision,
           "--threads", "2", "--weights", weights, "--trace", trace, "--out", out]
    if depth:
        cmd += ["--depth", str(depth)]
    if mask:
        cmd += ["--mask"]
    if preset in TRAINED:
        cmd += ["--load"]
    print("\n$ " + " ".join(cmd))
    t0 = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t_c = time.time() - t0
    print(r.stdout.rstrip())
    if r.returncode != 0:
        return ["%s: sd3_forward exited %d" % (tag, r.returncode)]

    data, meta = st.load(out)
    problems = []
    want = {"model": preset, "precision": precision, "weights": weights}
    if depth:
        want["depth"] = str(depth)
    if any(meta.get(k) != v for k, v in want.items()):
        problems.append("%s: metadata %s lacks %s" % (tag, meta, want))
    c_out = data["out"].astype(np.float64)
    cmask = data.get("context_mask")
    if mask and (cmask is None or cmask.all()):
        problems.append("%s: --mask given but the output holds no masked text token" % tag)

    t0 = time.time()
    model = sd3_ref.load_sd3(weights, preset, depth)
    t_load = time.time() - t0
    # The synthetic pos_embed must be the integer-grid MAE table (the documented init); the
    # trained one is the table diffusers' constructor builds (positions x base_size / M).
    pe = model.pos_embed.pos_embed[0].double().numpy()
    M = model.pos_embed.max_size
    base = sd3_ref.PRESETS[preset]["sample_size"] // sd3_ref.PRESETS[preset]["patch_size"]
    pe_want = sd3_ref.get_2d_sincos_pos_embed(pe.shape[-1], M, base if preset in TRAINED else None)
    pe_err = float(np.max(np.abs(pe - pe_want)))
    if pe_err > 1e-5:
        problems.append("%s: weights' pos_embed differs from the %s sin-cos table by %.3g"
                        % (tag, "diffusers" if preset in TRAINED else "integer-grid", pe_err))

    x = torch.from_numpy(data["x"])
    t = torch.from_numpy(data["t"])
    ctx = torch.from_numpy(data["context"])
    pooled = torch.from_numpy(data["pooled"])
    cm = torch.from_numpy(cmask.astype(bool)) if cmask is not None else None
    acts32, acts64 = {}, {}
    t0 = time.time()
    with torch.no_grad():
        o32 = model(x, ctx, pooled, t, cm, acts32).double().numpy()
        t_t32 = time.time() - t0
        m64 = copy.deepcopy(model).double()
        del model
        t0 = time.time()
        o64 = m64(x.double(), ctx.double(), pooled.double(), t.double(), cm, acts64).numpy()
        t_t64 = time.time() - t0
        del m64
    if c_out.shape != o32.shape:
        return problems + ["%s: C out shape %s, torch %s" % (tag, c_out.shape, o32.shape)]

    e_ct = float(np.max(np.abs(c_out - o32)))
    e_c64 = float(np.max(np.abs(c_out - o64)))
    e_t64 = float(np.max(np.abs(o32 - o64)))
    amax = float(np.max(np.abs(o64)))
    print("  %s: max|out| %.3f  max|C - torch32| %.3g  max|C - f64| %.3g  max|torch32 - f64| %.3g"
          % (tag, amax, e_ct, e_c64, e_t64))
    print("    pos_embed err %.2g; C forward %ss (tool %.1fs incl. weights), torch load %.1fs, "
          "f32 forward %.2fs, f64 forward %.2fs; %.3f GMAC"
          % (pe_err, meta.get("forward_s", "?"), t_c, t_load, t_t32, t_t64, float(meta.get("macs", "nan")) / 1e9))
    bar = TOL if precision == "fp32" else TOL_BF16 * amax
    if not e_ct <= bar:  # also catches NaN
        problems.append("%s: max|C - torch32| = %.3g > %.3g" % (tag, e_ct, bar))

    rows, tp = compare_trace(trace, acts32, acts64, 1e-3 if precision == "fp32" else 0.1)
    problems += ["%s: %s" % (tag, p) for p in tp]
    if rows:
        print("    %-34s %14s %12s %16s" % ("trace layer", "|C - torch32|", "|C - f64|", "|torch32 - f64|"))
        for name, d32, d64, t64, _ in rows:
            print("    %-34s %14.3g %12.3g %16.3g" % (name, d32, d64, t64))
        worst = max(rows, key=lambda r: r[4])
        first = next((r[0] for r in rows if r[2] > 10 * r[3] + 1e-6), None)
        print("    trace: C departs most from torch32 at '%s' (%.2g of the layer's scale); first layer with "
              "|C - f64| > 10x |torch32 - f64|: %s" % (worst[0], worst[4], first or "none"))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True, help="the sd3_forward executable")
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--quick", action="store_true", help="the tiny presets' and sd3-digits' cases only")
    args = ap.parse_args()
    os.makedirs(args.scratch, exist_ok=True)
    torch.set_num_threads(2)
    print("torch %s" % torch.__version__)
    # For the record: what diffusers' constructor would put in pos_embed (positions scaled
    # by base_size / M) vs the integer-grid table repro's synthetic init writes. Real
    # checkpoints store the buffer, so this never affects loading them.
    for name in ("sd3-tiny", "sd3-medium"):
        cfg = sd3_ref.PRESETS[name]
        D = cfg["num_attention_heads"] * cfg["attention_head_dim"]
        M, base = cfg["pos_embed_max_size"], cfg["sample_size"] // cfg["patch_size"]
        if M * M * D <= 64 * 64 * 1536:
            d = np.max(np.abs(sd3_ref.get_2d_sincos_pos_embed(D, M) - sd3_ref.get_2d_sincos_pos_embed(D, M, base)))
            print("note: %s synthetic pos_embed uses integer positions; diffusers' table (positions x %d/%d) "
                  "differs by up to %.3g" % (name, base, M, d))
    problems = []
    cases = [c for c in CASES if not args.quick or c[0] in ("sd3-tiny", "sd3.5-medium-tiny", "sd3-digits")]
    try:
        for case in cases:
            problems += run_case(args.tool, args.scratch, *case)
    finally:
        # the medium weights file is ~0.8 GB: do not leave it in the build tree
        for f in os.listdir(args.scratch):
            if f.startswith("sd3-medium") and f.endswith(".weights.safetensors"):
                os.remove(os.path.join(args.scratch, f))
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("PASS: %d cases (fp32 within %.0e of torch float32; bf16 within %.0e of max|out|)"
          % (len(cases), TOL, TOL_BF16))
    return 0


if __name__ == "__main__":
    sys.exit(main())
