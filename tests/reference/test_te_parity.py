"""test_te_parity.py — the C byte-level text encoder against the independent PyTorch model (te_ref.py).

For each case, te_forward writes synthetic weights, encodes a prompt list and dumps
tokens, mask, context and pooled; the torch model loads the same weights file, tokenizes
the same prompts itself and runs in float32 and float64.
Pass: tokens and mask identical; pad rows of the C context exactly 0; C encoded the same
batch twice to identical bytes, and each prompt alone to the same bytes as inside the batch;
max|C - torch_f32| <= 1e-4 for context and pooled (the issue's fp32 bar). Printed: errors
against float64 too (is C as accurate as torch?) and timings.

Usage: test_te_parity.py --te-forward PATH/TO/te_forward --scratch DIR
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
import st  # noqa: E402
import te_ref  # noqa: E402

TOL = 1e-4  # fp32: max|C - torch_f32|, the bar

LONG = ("A very long prompt, well past any tiny context: a lighthouse on a cliff at dusk, "
        "waves below, gulls above, oil painting, warm light, and then some more words.")
PROMPTS_TINY = [
    "",                                   # the unconditional input: bos, eos, pads
    "a photo of a cat",
    "naïve café — 東京 🌸",                # 2-, 3- and 4-byte UTF-8 sequences
    LONG,                                 # > max_len: truncated, eos kept
    "x" * 30,                             # exactly fills 32 tokens (bos + 30 + eos)
    "y" * 31,                             # one byte too many
    "a" * 29 + "é",                       # truncation cuts the 2-byte é in half
    "a",                                  # 3 tokens: an odd count, then pads
    "a photo of a dog.",                  # 19 tokens: odd, pads after (the others are even or full)
]

# (preset, weight seed, prompts)
CASES = [
    ("te-tiny", 0, PROMPTS_TINY),
    ("te-tiny", 7, PROMPTS_TINY[:4]),
    ("te-sd3", 0, ["", "a photo of a cat", "a cat", LONG]),  # "a cat": 7 tokens, odd, pads after
    ("te-flux", 0, ["", "a cat", LONG * 4]),  # 4x LONG > 512 bytes: truncated at FLUX's length
]


def run_case(tool, scratch, preset, wseed, prompts):
    tag = "%s-w%d-b%d" % (preset, wseed, len(prompts))
    wpath = os.path.join(scratch, tag + ".weights.safetensors")
    out = os.path.join(scratch, tag + ".out.safetensors")
    cmd = [tool, "--preset", preset, "--weight-seed", str(wseed), "--weights", wpath, "--out", out,
           "--threads", "2", "--"] + prompts
    print("\n$ %s --preset %s --weight-seed %d ... (%d prompts)" % (tool, preset, wseed, len(prompts)))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    print(r.stdout.decode("utf-8", "replace").rstrip())
    if r.returncode != 0:
        return ["%s: te_forward exited %d" % (tag, r.returncode)]

    data, meta = st.load(out)
    problems = []
    cfg = te_ref.PRESETS[preset]
    L = cfg["max_len"]
    for b, p in enumerate(prompts):
        toks, mask = te_ref.tokenize(p, L)
        if list(data["tokens"][b]) != toks:
            problems.append("%s: prompt %d tokens differ from the reference tokenizer" % (tag, b))
        if list(data["mask"][b]) != mask:
            problems.append("%s: prompt %d mask differs from the reference tokenizer" % (tag, b))
    if prompts[0] == "" and list(data["tokens"][0][:3]) != [te_ref.BOS, te_ref.EOS, te_ref.PAD]:
        problems.append("%s: the empty prompt is not bos, eos, pad..." % tag)
    pad_rows = data["mask"] == 0
    if np.any(data["context"][pad_rows] != 0):
        problems.append("%s: C context is not exactly 0 on padded positions" % tag)
    if meta.get("repeat_bitwise") != "1":
        problems.append("%s: C encode is not bitwise repeatable" % tag)
    if meta.get("batch_invariant") != "1":
        problems.append("%s: a prompt encoded alone differs bitwise from the same prompt in the batch" % tag)

    t0 = time.time()
    model = te_ref.load_te(wpath, preset)
    tokens = torch.from_numpy(data["tokens"].astype(np.int64))
    mask = torch.from_numpy(data["mask"].astype(bool))
    with torch.no_grad():
        c32, p32 = model(tokens, mask)
        c64, p64 = copy.deepcopy(model).double()(tokens, mask)
    t_torch = time.time() - t0
    cc, pc = data["context"].astype(np.float64), data["pooled"].astype(np.float64)
    for name, c, r32, r64 in (("context", cc, c32, c64), ("pooled", pc, p32, p64)):
        r32, r64 = r32.double().numpy(), r64.numpy()
        if c.shape != r32.shape:
            problems.append("%s: %s shape C %s, torch %s" % (tag, name, c.shape, r32.shape))
            continue
        e_ct = float(np.max(np.abs(c - r32)))
        e_c64 = float(np.max(np.abs(c - r64)))
        e_t64 = float(np.max(np.abs(r32 - r64)))
        print("  %s %-7s: max|ref| %.3f  max|C - torch32| %.3g  max|C - f64| %.3g  max|torch32 - f64| %.3g"
              % (tag, name, float(np.max(np.abs(r64))), e_ct, e_c64, e_t64))
        if not e_ct <= TOL:  # also catches NaN
            problems.append("%s: %s max|C - torch32| = %.3g > %.0e" % (tag, name, e_ct, TOL))
    print("  %s: C encode %ss, torch f32+f64 %.2fs" % (tag, meta.get("seconds"), t_torch))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--te-forward", required=True)
    ap.add_argument("--scratch", required=True)
    args = ap.parse_args()
    os.makedirs(args.scratch, exist_ok=True)
    torch.set_num_threads(2)
    print("torch %s" % torch.__version__)
    problems = []
    for case in CASES:
        problems += run_case(args.te_forward, args.scratch, *case)
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("PASS: %d cases (tokens, masks exact; context and pooled within %.0e of torch float32)"
          % (len(CASES), TOL))
    return 0


if __name__ == "__main__":
    sys.exit(main())
