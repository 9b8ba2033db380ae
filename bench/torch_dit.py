#!/usr/bin/python3
"""bench/torch_dit.py — the PyTorch peer of build/bench/cuda_models for DiT-XL/2.

An independent PyTorch DiT-XL/2 (tests/reference/dit_ref.py, the reference the engine is
parity-tested against, with its attention switched to SDPA), laid out like
facebookresearch/DiT models.py (timm
PatchEmbed conv, sinusoidal timestep MLP, label embedding with the null class, 28
DiTBlocks with adaLN-Zero modulation, attention through
torch.nn.functional.scaled_dot_product_attention, MLP with GELU(tanh), final layer,
unpatchify), at 256 px (latent 32x32x4), batch 2 (a classifier-free-guidance pair:
class 207 and the null class), weights and activations in bf16 (model.to(bfloat16)),
on CUDA. Times:
    eager                                    the module as written
    compile-default                          torch.compile(model)
    compile-max-autotune-no-cudagraphs       torch.compile(model, mode="max-autotune-no-cudagraphs")
Each: `warmup` untimed forwards (the first compiles), then `iters` forwards, each timed
on the host between torch.cuda.synchronize() calls; median and min ms. TFLOP/s =
2 x MACs / median, MACs counted from the config as the engine's rp_dit_macs does
(118.62 GMAC per image; asserted within 1% of the 118.6e9 the DiT paper quotes).
The C bench's per-forward time also includes the host->device input copy and the
device->host output copy (a few KB each); this one keeps inputs on the GPU.

One JSON line per result, prefixed "RESULT ", plus "#" lines. A variant that does
not run (no torch.compile in this torch, a compile error) prints a RESULT line with
"status": "unavailable" or "error" and the reason, never a silent gap.

    /usr/bin/python3 bench/torch_dit.py [--warmup N] [--iters N] [--batch B] [--peak TFLOPS]
                                        [--variants eager,compile-default,...] [--cpu-smoke]

Without a CUDA device (or with a torch built without CUDA, as Debian's python3-torch
is) it prints "torch_dit: no CUDA device: skipped (...)" and exits 0.
--cpu-smoke (no GPU needed): builds the model on the CPU at depth 2, checks the MAC
count, runs fp32 and bf16 forwards, and checks the SDPA attention against the
reference's written-out one with the same state_dict, so this model computes the
same function as the one the C bench times.
"""
import argparse
import importlib
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

HAVE_SDPA = hasattr(F, "scaled_dot_product_attention")

DIT_XL_2_256 = dict(input_size=32, patch_size=2, in_channels=4, hidden_size=1152, depth=28, num_heads=16,
                    mlp_ratio=4.0, num_classes=1000, learn_sigma=True)
PAPER_GMAC = 118.6e9  # DiT paper, Table 4: DiT-XL/2 at 256 px, 118.6 "Gflops" (fvcore counts MACs)


def dit_macs(input_size, patch_size, in_channels, hidden_size, depth, num_heads, mlp_ratio=4.0,
             num_classes=1000, learn_sigma=True, freq_dim=256):
    """Multiply-accumulates of one forward for one image, as engine/models/dit.c rp_dit_macs."""
    C, p = float(hidden_size), float(patch_size)
    T = (input_size // patch_size) ** 2
    M = mlp_ratio * C
    Cout = 2 * in_channels if learn_sigma else in_channels
    macs = T * (in_channels * p * p) * C              # x_embedder (patch conv)
    macs += freq_dim * C + C * C                      # t_embedder MLP
    block = (6.0 * C * C                              # adaLN_modulation
             + T * C * 3.0 * C                        # qkv
             + 2.0 * T * T * C                        # Q K^T and P V over all heads
             + T * C * C                              # proj
             + 2.0 * T * C * M)                       # fc1 + fc2
    macs += depth * block
    macs += 2.0 * C * C + T * C * p * p * Cout        # final adaLN + linear
    return macs


# ---- the model: tests/reference/dit_ref.py (facebookresearch/DiT models.py structure and
# state_dict names; the engine's DiT is parity-tested against it), attention through SDPA ----

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import dit_ref  # noqa: E402


def sdpa_attention_forward(self, x):
    """timm Attention with torch.nn.functional.scaled_dot_product_attention (the fused
    kernels a PyTorch deployment runs); the written-out form where torch has no SDPA."""
    B, N, C = x.shape
    qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]  # (B, H, N, D)
    if HAVE_SDPA:
        x = F.scaled_dot_product_attention(q, k, v)
    else:  # torch < 2.0 (Debian's 1.13): the same function written out
        x = torch.softmax((q * self.scale) @ k.transpose(-2, -1), dim=-1) @ v
    return self.proj(x.transpose(1, 2).reshape(B, N, C))


def DiT(**cfg):
    """dit_ref.DiT(**cfg) in eval mode with every block's attention on SDPA. Default init
    (upstream zero-initialises adaLN-Zero, which would make an untrained model's blocks
    identities; the timing does not depend on the values)."""
    model = dit_ref.DiT(**cfg).eval()
    for block in model.blocks:
        block.attn.forward = sdpa_attention_forward.__get__(block.attn)
    return model


# ---- benchmark ---------------------------------------------------------------------------

def emit(rec):
    print("RESULT " + json.dumps(rec, sort_keys=False), flush=True)


def inputs(cfg, batch, device, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    S, Cin = cfg["input_size"], cfg["in_channels"]
    x = torch.randn(batch, Cin, S, S, generator=g).to(device=device, dtype=dtype)
    t = torch.full((batch,), 500.0, device=device)
    y = torch.tensor([207 if i % 2 == 0 else cfg["num_classes"] for i in range(batch)], device=device)
    return x, t, y


def time_model(fn, args, warmup, iters):
    t0 = time.perf_counter()
    fn(*args)
    torch.cuda.synchronize()
    first_s = time.perf_counter() - t0
    for _ in range(max(warmup - 1, 0)):
        fn(*args)
    torch.cuda.synchronize()
    ms = []
    for _ in range(iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn(*args)
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - t0) * 1e3)
    return first_s, statistics.median(ms), min(ms), out


def cpu_smoke():
    torch.manual_seed(0)
    macs = dit_macs(**DIT_XL_2_256)
    assert abs(macs - PAPER_GMAC) <= 0.01 * PAPER_GMAC, macs
    print("# MACs per image (DiT-XL/2 256): %.4f G (paper 118.6 G, %.3f%% off)" % (macs / 1e9,
          100 * (macs - PAPER_GMAC) / PAPER_GMAC))
    cfg = dict(DIT_XL_2_256, depth=2)
    model = DiT(**cfg).eval()
    nparam = sum(p.numel() for p in model.parameters())
    full = sum(p.numel() for p in DiT(**DIT_XL_2_256).parameters())
    print("# built DiT-XL/2 at depth 2 on the CPU: %.1f M parameters (depth 28: %.1f M; upstream 675 M)"
          % (nparam / 1e6, full / 1e6))
    assert abs(full - 675.13e6) < 1e6, full
    x, t, y = inputs(cfg, 2, "cpu", torch.float32)
    with torch.no_grad():
        out = model(x, t, y)
    assert out.shape == (2, 8, 32, 32) and torch.isfinite(out).all(), out.shape
    ok = True
    # the reference with its written-out attention, same state_dict: checks the SDPA swap
    ref = dit_ref.DiT(**cfg).eval()
    ref.load_state_dict(model.state_dict(), strict=True)
    with torch.no_grad():
        r = ref(x, t, y)
    rel = ((out - r).norm() / r.norm()).item()
    print("# fp32 vs tests/reference/dit_ref.py's own attention (same weights): relative L2 %.3e (attention: %s)"
          % (rel, "sdpa" if HAVE_SDPA else "written out, torch %s has no sdpa" % torch.__version__))
    ok = rel < 1e-5
    m16 = DiT(**cfg).eval()
    m16.load_state_dict(model.state_dict())
    m16 = m16.to(torch.bfloat16)
    xb, tb, yb = inputs(cfg, 2, "cpu", torch.bfloat16)
    with torch.no_grad():
        ob = m16(xb, tb, yb)
    rel16 = ((ob.float() - out).norm() / out.norm()).item()
    print("# bf16 forward on the CPU: dtype %s, finite %s, relative L2 to fp32 %.3e"
          % (ob.dtype, bool(torch.isfinite(ob).all()), rel16))
    ok = ok and ob.dtype == torch.bfloat16 and bool(torch.isfinite(ob).all()) and rel16 < 0.1
    print("torch_dit: cpu smoke %s (torch %s, torch.compile %s, sdpa %s)"
          % ("ok" if ok else "FAILED", torch.__version__, "present" if hasattr(torch, "compile") else "absent",
             "present" if HAVE_SDPA else "absent"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--peak", type=float, default=989.0, help="TFLOP/s the rates are divided by (H200 dense bf16)")
    ap.add_argument("--variants", default="eager,compile-default,compile-max-autotune-no-cudagraphs")
    ap.add_argument("--cpu-smoke", action="store_true")
    a = ap.parse_args()
    if a.cpu_smoke:
        return cpu_smoke()
    if a.warmup < 1 or a.iters < 1 or a.batch < 1:
        ap.error("--warmup and --iters must be >= 1, --batch >= 1")
    known = ("eager", "compile-default", "compile-max-autotune-no-cudagraphs")
    variants = [v for v in a.variants.split(",") if v]
    for v in variants:
        if v not in known:
            ap.error("unknown variant %r (known: %s)" % (v, ", ".join(known)))
    if not torch.cuda.is_available():
        print("torch_dit: no CUDA device: skipped (torch %s, built with CUDA %s)"
              % (torch.__version__, torch.version.cuda or "no: a CPU-only build"))
        return 0

    cfg = DIT_XL_2_256
    macs_img = dit_macs(**cfg)
    assert abs(macs_img - PAPER_GMAC) <= 0.01 * PAPER_GMAC, macs_img
    macs = macs_img * a.batch
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(dev)
    print("# torch %s, CUDA %s, cuDNN %s, device %s; sdpa %s; bf16 weights and activations; batch %d; "
          "%.4f GMAC per image" % (torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), name,
                                   "yes" if HAVE_SDPA else "no (written out)", a.batch, macs_img / 1e9), flush=True)
    torch.manual_seed(0)
    model = DiT(**cfg).to(device=dev, dtype=torch.bfloat16).eval()
    x, t, y = inputs(cfg, a.batch, dev, torch.bfloat16)
    base = dict(bench="torch_dit", model="dit-xl-2-256", device=name, torch=torch.__version__, dtype="bf16",
                batch=a.batch, res=256, macs_per_image=macs_img, macs=macs, warmup=a.warmup, iters=a.iters,
                peak_tflops=a.peak, attention="sdpa" if HAVE_SDPA else "written-out")
    return run_variants(model, (x, t, y), variants, a.warmup, a.iters, macs, a.peak, base)


def run_variants(model, args, variants, warmup, iters, macs, peak, base):
    """Times model(*args) as each variant ("eager", "compile-default", "compile-<mode>") and
    emits one RESULT line per variant (status ok / unavailable / error). Returns 1 when
    eager fails or an output is not finite, else 0. bench/torch_flux.py uses it too."""
    rc = 0
    for v in variants:
        rec = dict(base, impl=v)
        if v == "eager":
            fn = model
        elif not hasattr(torch, "compile"):
            emit(dict(rec, status="unavailable", reason="torch %s has no torch.compile" % torch.__version__))
            continue
        else:
            try:  # a fresh compile cache per mode
                importlib.import_module("torch._dynamo").reset()
            except Exception:  # noqa: BLE001
                pass
            mode = None if v == "compile-default" else v[len("compile-"):]
            fn = torch.compile(model, mode=mode)
        try:
            with torch.no_grad():
                first_s, med, best, out = time_model(fn, args, warmup, iters)
        except Exception as e:  # noqa: BLE001
            emit(dict(rec, status="error", reason=("%s: %s" % (type(e).__name__, e))[:500]))
            if v == "eager":
                rc = 1
            continue
        finite = bool(torch.isfinite(out).all())
        tf = 2.0 * macs / (med * 1e-3) / 1e12
        print("# %s: first call %.1f s, median %.3f ms (min %.3f), %.1f TFLOP/s = %.3f of %.0f"
              % (v, first_s, med, best, tf, tf / peak, peak), flush=True)
        emit(dict(rec, status="ok", first_call_s=first_s, median_ms=med, min_ms=best, tflops=tf,
                  tflops_best=2.0 * macs / (best * 1e-3) / 1e12, frac_peak=tf / peak, finite=finite))
        if not finite:
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
