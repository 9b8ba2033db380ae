#!/usr/bin/python3
"""bench/torch_flux.py — the PyTorch peer of build/bench/cuda_models for FLUX-dev.

tests/reference/flux_ref.py's FluxTransformer2DModel (the independent PyTorch FLUX.1 the
engine is parity-tested against, diffusers' FluxTransformer2DModel layout: 19 double +
38 single blocks, hidden 3072, 24 heads of 128, MLP 12288, guidance embedder) with its
attention switched to torch.nn.functional.scaled_dot_product_attention, at 1024 px
(4096 image tokens from the packed 128x128x16 latent, 512 text tokens of width 4096),
batch 1, weights and activations in bf16, on CUDA — the forward bench/cuda_models
--model flux-dev --res 1024 times. Built like bench/torch_dit.py (whose timing loop and
RESULT records it shares):
    eager                                    the module as written
    compile-default                          torch.compile(model)
    compile-max-autotune-no-cudagraphs       torch.compile(model, mode="max-autotune-no-cudagraphs")
                                             (not in the default --variants: its autotuning of
                                             57 blocks' GEMMs takes long)
Each: `warmup` untimed forwards (the first compiles), then `iters` forwards timed on the
host between torch.cuda.synchronize() calls; median and min ms. TFLOP/s = 2 x MACs /
median with MACs counted from the config as the engine's rp_flux_macs does (FLUX-dev
1024 px: 37.19 TMAC per image). Inputs, the RoPE ids included, live on the GPU (the
C bench's time also includes its input upload and output download, a few MB).

The model is built on the meta device and materialised in bf16 directly on the GPU
(12 G parameters: 24 GB, never an fp32 host copy), then initialised like torch's
defaults (nn.Linear's kaiming-uniform weights and uniform biases, RMSNorm weights 1);
the timing does not depend on the values.

One JSON line per result, prefixed "RESULT ", plus "#" lines; a variant that cannot run
prints a RESULT with "status": "unavailable" or "error" and the reason.

    /usr/bin/python3 bench/torch_flux.py [--warmup N] [--iters N] [--batch B] [--res PX]
                                         [--text-len L] [--peak TFLOPS] [--variants ...]
                                         [--cpu-smoke]

Without a CUDA device (or with a CPU-only torch, as Debian's python3-torch) it prints
"torch_flux: no CUDA device: skipped (...)" and exits 0.
--cpu-smoke (no GPU): checks the MAC count, builds the peer at the flux-tiny preset on
the CPU through the same constructor, runs fp32 and bf16 forwards, and checks the SDPA
attention against the reference's written-out one with the same state_dict (on a torch
without SDPA, 1.13, the peer falls back to the written-out attention and says so).
"""
import argparse
import math
import os
import sys

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # the Python on PATH may lack torch; CMake passes /usr/bin/python3
    print("torch_flux: SKIP: torch not importable with %s (%s)" % (sys.executable, e))
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
sys.path.insert(0, HERE)
import flux_ref  # noqa: E402
import torch_dit  # noqa: E402  (emit, time_model, run_variants)

HAVE_SDPA = hasattr(F, "scaled_dot_product_attention")
FLUX_DEV_1024_TMAC = 37.19e12  # bench/cuda_models.c, bench/README.md: FLUX-dev 1024 px, 4096 + 512 tokens


def flux_macs(cfg, H, W, L, freq_dim=256, mlp_ratio=4):
    """Multiply-accumulates of one forward for one item (latent H x W, L text tokens), as
    engine/models/flux.c rp_flux_macs: every Linear rows x in x out, attention 2 T^2 C."""
    C = float(cfg["num_attention_heads"] * cfg["attention_head_dim"])
    M, P = mlp_ratio * C, float(cfg["in_channels"])
    N = float((H // 2) * (W // 2))
    T = N + L
    macs = N * P * C + float(L) * cfg["joint_attention_dim"] * C   # x_ / context_embedder
    macs += freq_dim * C + C * C                                   # timestep_embedder
    if cfg["guidance_embeds"]:
        macs += freq_dim * C + C * C                               # guidance_embedder
    macs += cfg["pooled_projection_dim"] * C + C * C               # text_embedder
    dbl = 2 * 6 * C * C + 3 * T * C * C + 2 * T * T * C + T * C * C + 2 * T * C * M
    sgl = 3 * C * C + 3 * T * C * C + 2 * T * T * C + T * C * M + T * (C + M) * C
    macs += cfg["num_layers"] * dbl + cfg["num_single_layers"] * sgl
    macs += 2 * C * C + N * C * P                                  # norm_out + proj_out
    return macs


# ---- the model: flux_ref's FluxTransformer2DModel with SDPA attention ----------------------

def sdpa_attention_forward(self, x, ctx=None, rope=None, key_mask=None):
    """flux_ref.Attention.forward with the written-out q k^T / softmax / @ v replaced by
    scaled_dot_product_attention (the fused kernels a PyTorch deployment runs); the
    written-out form where torch has no SDPA."""
    q = self.norm_q(self._heads(self.to_q(x)))
    k = self.norm_k(self._heads(self.to_k(x)))
    v = self._heads(self.to_v(x))
    L = 0
    if ctx is not None:  # text first in the joint sequence
        L = ctx.shape[1]
        q = torch.cat([self.norm_added_q(self._heads(self.add_q_proj(ctx))), q], dim=2)
        k = torch.cat([self.norm_added_k(self._heads(self.add_k_proj(ctx))), k], dim=2)
        v = torch.cat([self._heads(self.add_v_proj(ctx)), v], dim=2)
    if rope is not None:
        cos, sin = rope
        q, k = flux_ref.rotate(q, cos, sin), flux_ref.rotate(k, cos, sin)
    mask = key_mask[:, None, None, :] if key_mask is not None else None  # True = attend
    if HAVE_SDPA:
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    else:  # torch < 2.0 (Debian's 1.13): the same function written out
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        a = s.softmax(dim=-1) @ v
    B, H, T, D = a.shape
    a = a.transpose(1, 2).reshape(B, T, H * D)
    if ctx is None:
        return a
    return self.to_out[0](a[:, L:]), self.to_add_out(a[:, :L])


def use_sdpa(model):
    for m in model.modules():
        if isinstance(m, flux_ref.Attention):
            m.forward = sdpa_attention_forward.__get__(m)
    return model


def init_like_torch(model):
    """torch's default initialisation, in place, for a model materialised with to_empty:
    every nn.Linear reset_parameters(), every RMSNorm weight 1."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):
                m.reset_parameters()
            elif isinstance(m, flux_ref.RMSNorm):
                m.weight.fill_(1.0)
    return model


def materialise(model, device, dtype):
    """A (meta-device) model's parameters allocated in dtype on device, then initialised
    like torch's defaults."""
    return init_like_torch(model.to(dtype).to_empty(device=device))


def build_peer(cfg, device, dtype):
    """flux_ref.FluxTransformer2DModel(**cfg) in eval mode, SDPA attention, parameters in
    dtype on device. Where torch can build on the meta device (torch.device as a context
    manager, torch >= 2.0) the parameters are allocated once, in dtype, on the device;
    otherwise (1.13) the model is built on the CPU and moved. Returns (model, how)."""
    meta_ok = hasattr(torch.device("meta"), "__enter__") and hasattr(nn.Module, "to_empty")
    if meta_ok:
        with torch.device("meta"):
            model = flux_ref.FluxTransformer2DModel(**cfg)
        model = materialise(model, device, dtype)
        how = "meta -> to_empty(%s) in %s, torch default init" % (device, dtype)
    else:
        model = flux_ref.FluxTransformer2DModel(**cfg).to(device=device, dtype=dtype)
        how = "built on the CPU (torch %s: no meta-device construction), moved to %s in %s" % (
            torch.__version__, device, dtype)
    return use_sdpa(model.eval()), how


def inputs(cfg, batch, H, W, L, device, dtype, seed=0):
    """Packed latents (B, N, 64), text (B, L, Dctx), pooled (B, Dpool), t, guidance, and
    the RoPE ids (N, 3) / (L, 3), all on device."""
    g = torch.Generator().manual_seed(seed)
    N = (H // 2) * (W // 2)
    x = torch.randn(batch, N, cfg["in_channels"], generator=g).to(device=device, dtype=dtype)
    ctx = torch.randn(batch, L, cfg["joint_attention_dim"], generator=g).to(device=device, dtype=dtype)
    pooled = torch.randn(batch, cfg["pooled_projection_dim"], generator=g).to(device=device, dtype=dtype)
    t = torch.full((batch,), 1.0, device=device)
    guidance = torch.full((batch,), 3.5, device=device)
    img_ids = flux_ref.prepare_latent_image_ids(H // 2, W // 2).to(device)
    txt_ids = torch.zeros(L, 3, device=device)
    return x, ctx, pooled, t, img_ids, txt_ids, guidance


def cpu_smoke():
    torch.manual_seed(0)
    dev_cfg = flux_ref.PRESETS["flux-dev"]
    macs = flux_macs(dev_cfg, 128, 128, 512)
    ok = abs(macs - FLUX_DEV_1024_TMAC) <= 1e-3 * FLUX_DEV_1024_TMAC
    print("# MACs per image (FLUX-dev 1024 px, 4096 + 512 tokens): %.4f T (cuda_models: 37.19 T)" % (macs / 1e12))
    cfg = flux_ref.PRESETS["flux-tiny"]
    model, how = build_peer(cfg, torch.device("cpu"), torch.float32)
    print("# built the peer at flux-tiny on the CPU: %s; %d parameters; attention: %s"
          % (how, sum(p.numel() for p in model.parameters()),
             "sdpa" if HAVE_SDPA else "written out (torch %s has no sdpa)" % torch.__version__))
    H = W = 8  # a 4 x 4 packed grid
    L = 6
    args = inputs(cfg, 2, H, W, L, "cpu", torch.float32)
    with torch.no_grad():
        out = model(*args)
    shape_ok = tuple(out.shape) == (2, 16, cfg["in_channels"]) and bool(torch.isfinite(out).all())
    ok = ok and shape_ok
    # the reference with its written-out attention, same state_dict: checks the SDPA swap
    ref = flux_ref.FluxTransformer2DModel(**cfg).eval()
    ref.load_state_dict(model.state_dict(), strict=True)
    with torch.no_grad():
        r = ref(*args)
        mask = torch.ones(2, L, dtype=torch.bool)
        mask[1, L // 2:] = False
        om, rm = model(*args, key_mask=mask), ref(*args, key_mask=mask)
    rel = ((out - r).norm() / r.norm()).item()
    relm = ((om - rm).norm() / rm.norm()).item()
    print("# fp32 vs tests/reference/flux_ref.py's own attention (same weights): relative L2 %.3e, with a key "
          "mask %.3e" % (rel, relm))
    ok = ok and rel < 1e-5 and relm < 1e-5
    # bf16: against the reference in bf16 (same weights). Not against fp32: flux_ref computes
    # the timestep / guidance sinusoids in the model dtype, as diffusers, and guidance
    # 3.5 * 1000 is 3504 in bf16, so the bf16 model conditions on another embedding.
    m16, _ = build_peer(cfg, torch.device("cpu"), torch.bfloat16)
    m16.load_state_dict(model.state_dict())
    r16 = ref.to(torch.bfloat16)
    args16 = inputs(cfg, 2, H, W, L, "cpu", torch.bfloat16)
    with torch.no_grad():
        ob, rb = m16(*args16), r16(*args16)
    rel16 = ((ob.float() - rb.float()).norm() / rb.float().norm()).item()
    rel32 = ((ob.float() - out).norm() / out.norm()).item()
    print("# bf16 forward on the CPU: dtype %s, finite %s, relative L2 to the bf16 reference %.3e (to fp32 %.3e)"
          % (ob.dtype, bool(torch.isfinite(ob).all()), rel16, rel32))
    # SDPA and the written-out attention differ by bf16 roundings (2^-8 each) of a few
    # intermediates per block: 0.05 is ten of them
    ok = ok and ob.dtype == torch.bfloat16 and bool(torch.isfinite(ob).all()) and rel16 < 0.05
    # the GPU run's construction path (meta -> to_empty -> default init), here from a CPU model
    mm = use_sdpa(materialise(flux_ref.FluxTransformer2DModel(**cfg), torch.device("cpu"), torch.bfloat16).eval())
    norms_one = all(bool((m.weight == 1).all()) for m in mm.modules() if isinstance(m, flux_ref.RMSNorm))
    finite = all(bool(torch.isfinite(p).all()) for p in mm.parameters())
    with torch.no_grad():
        om16 = mm(*args16)
    print("# materialise (to_empty + default init) in bf16: parameters finite %s, RMSNorm weights 1 %s, forward "
          "finite %s" % (finite, norms_one, bool(torch.isfinite(om16).all())))
    ok = ok and finite and norms_one and bool(torch.isfinite(om16).all())
    print("torch_flux: cpu smoke %s (torch %s, torch.compile %s, sdpa %s)"
          % ("ok" if ok else "FAILED", torch.__version__, "present" if hasattr(torch, "compile") else "absent",
             "present" if HAVE_SDPA else "absent"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--res", type=int, default=1024, help="image side in px (latent res/8, packed 2x2)")
    ap.add_argument("--text-len", type=int, default=512)
    ap.add_argument("--peak", type=float, default=989.0, help="TFLOP/s the rates are divided by (H200 dense bf16)")
    ap.add_argument("--variants", default="eager,compile-default")
    ap.add_argument("--cpu-smoke", action="store_true")
    a = ap.parse_args()
    if a.cpu_smoke:
        return cpu_smoke()
    if a.warmup < 1 or a.iters < 1 or a.batch < 1 or a.text_len < 1:
        ap.error("--warmup, --iters, --batch and --text-len must be >= 1")
    if a.res < 16 or a.res % 16:
        ap.error("--res %d: FLUX needs a multiple of 16 px (latent /8, then 2x2 packing)" % a.res)
    known = ("eager", "compile-default", "compile-max-autotune-no-cudagraphs")
    variants = [v for v in a.variants.split(",") if v]
    for v in variants:
        if v not in known:
            ap.error("unknown variant %r (known: %s)" % (v, ", ".join(known)))
    if not torch.cuda.is_available():
        print("torch_flux: no CUDA device: skipped (torch %s, built with CUDA %s)"
              % (torch.__version__, torch.version.cuda or "no: a CPU-only build"))
        return 0

    cfg = flux_ref.PRESETS["flux-dev"]
    H = W = a.res // 8
    macs_img = flux_macs(cfg, H, W, a.text_len)
    macs = macs_img * a.batch
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(dev)
    torch.manual_seed(0)
    model, how = build_peer(cfg, dev, torch.bfloat16)
    nparam = sum(p.numel() for p in model.parameters())
    print("# torch %s, CUDA %s, device %s; sdpa %s; flux-dev %d px, %d image + %d text tokens, batch %d; "
          "%.4f TMAC per image; %.3f G parameters (%s)"
          % (torch.__version__, torch.version.cuda, name, "yes" if HAVE_SDPA else "no (written out)", a.res,
             (H // 2) * (W // 2), a.text_len, a.batch, macs_img / 1e12, nparam / 1e9, how), flush=True)
    args = inputs(cfg, a.batch, H, W, a.text_len, dev, torch.bfloat16)
    base = dict(bench="torch_flux", model="flux-dev", device=name, torch=torch.__version__, dtype="bf16",
                batch=a.batch, res=a.res, text_tokens=a.text_len, macs_per_image=macs_img, macs=macs,
                warmup=a.warmup, iters=a.iters, peak_tflops=a.peak, attention="sdpa" if HAVE_SDPA else "written-out")
    return torch_dit.run_variants(model, args, variants, a.warmup, a.iters, macs, a.peak, base)


if __name__ == "__main__":
    sys.exit(main())
