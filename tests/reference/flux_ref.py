"""flux_ref.py — an independent PyTorch FLUX.1 transformer, laid out like diffusers'
FluxTransformer2DModel (module names = state_dict names), so a diffusers checkpoint or
repro's synthetic weights load by name with load_state_dict(strict=True).

It shares no code or logic with the C engine (engine/models/flux.c): q/k/v stay in
torch's (B, heads, T, D) views, RoPE is computed per axis from the ids and applied with
even/odd slices, attention is written out (q k^T * scale, softmax, @ v), and packing is
the pipeline's view/permute. It is the yardstick the C forward is checked against.

Torch 1.13 has no scaled_dot_product_attention; attention here is the plain math.

API (tests/reference/* import it):
    FluxTransformer2DModel(in_channels=64, num_layers, num_single_layers, attention_head_dim,
                           num_attention_heads, joint_attention_dim, pooled_projection_dim,
                           guidance_embeds, axes_dims_rope)
        .forward(hidden_states, encoder_hidden_states, pooled_projections, timestep, img_ids,
                 txt_ids, guidance=None, key_mask=None, acts=None) -> (B, N, in_channels)
            hidden_states (B, N, 64) packed latents; encoder_hidden_states (B, L, Dctx);
            pooled_projections (B, Dpool); timestep, guidance (B,) in [0, 1] / guidance scale
            (multiplied by 1000 inside, as diffusers); img_ids (N, 3), txt_ids (L, 3);
            key_mask (B, L) bool or None (True = attend; diffusers' FLUX has none).
            When `acts` is a dict it is filled with the activations repro's trace records
            (same names and layouts, text tokens first in every joint tensor).
    PRESETS                        "flux-tiny", "flux-dev" -> model kwargs
    build_flux(preset, n_double=None, n_single=None)    random init, eval mode
    load_flux(weights_path, preset, n_double=None, n_single=None)   weights by name (memory-mapped)
    pack_latents(x) (B, C, H, W) -> (B, HW/4, 4C);  unpack_latents(tok, H, W) -> (B, C, H, W)
    prepare_latent_image_ids(h2, w2) -> (h2 * w2, 3) float
    velocity(model, x, t, guidance, context, pooled, key_mask=None, acts=None) -> (B, C, H, W)
        the whole FluxPipeline-side wrapping: pack, ids, model, unpack.

Numerics follow diffusers on CPU: the timestep sinusoid in the model's dtype (float32 for a
float32 model), RoPE angles in float64 rounded to the model's dtype. A model cast with
.double() computes everything in float64 (the float64 yardstick).
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PRESETS = {
    "flux-tiny": dict(in_channels=64, num_layers=2, num_single_layers=2, attention_head_dim=32,
                      num_attention_heads=2, joint_attention_dim=64, pooled_projection_dim=64,
                      guidance_embeds=True, axes_dims_rope=(8, 12, 12)),
    "flux-dev": dict(in_channels=64, num_layers=19, num_single_layers=38, attention_head_dim=128,
                     num_attention_heads=24, joint_attention_dim=4096, pooled_projection_dim=768,
                     guidance_embeds=True, axes_dims_rope=(16, 56, 56)),
}


# ---- small modules --------------------------------------------------------------------

class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight over the last dim."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        ms = (x * x).mean(dim=-1, keepdim=True)
        return x * torch.rsqrt(ms + self.eps) * self.weight


def layer_norm(x):
    """LayerNorm over the last dim, no affine, eps 1e-6."""
    return F.layer_norm(x, (x.shape[-1],), eps=1e-6)


class TimestepEmbedding(nn.Module):
    def __init__(self, in_channels, dim):
        super().__init__()
        self.linear_1 = nn.Linear(in_channels, dim)
        self.act = nn.SiLU()
        self.linear_2 = nn.Linear(dim, dim)

    def forward(self, x):
        return self.linear_2(self.act(self.linear_1(x)))


class TextProjection(nn.Module):
    """PixArtAlphaTextProjection with SiLU: linear_1, act_1, linear_2."""

    def __init__(self, in_features, dim):
        super().__init__()
        self.linear_1 = nn.Linear(in_features, dim)
        self.act_1 = nn.SiLU()
        self.linear_2 = nn.Linear(dim, dim)

    def forward(self, x):
        return self.linear_2(self.act_1(self.linear_1(x)))


def sinusoid(t, dim, dtype):
    """Timesteps(dim, flip_sin_to_cos=True, downscale_freq_shift=0): [cos(t f), sin(t f)],
    f_i = exp(-ln(10000) i / (dim/2)), computed in dtype."""
    half = dim // 2
    expo = -math.log(10000.0) * torch.arange(half, dtype=dtype, device=t.device) / half
    ang = t.to(dtype)[:, None] * torch.exp(expo)[None, :]
    return torch.cat([torch.cos(ang), torch.sin(ang)], dim=1)


class CombinedTimestepGuidanceTextProjEmbeddings(nn.Module):
    """timestep_embedder(sin(t)) [+ guidance_embedder(sin(g))] + text_embedder(pooled).
    With guidance=False it is diffusers' CombinedTimestepTextProjEmbeddings."""

    def __init__(self, dim, pooled_dim, guidance):
        super().__init__()
        self.timestep_embedder = TimestepEmbedding(256, dim)
        if guidance:
            self.guidance_embedder = TimestepEmbedding(256, dim)
        self.text_embedder = TextProjection(pooled_dim, dim)

    def forward(self, timestep, guidance, pooled):
        dt = pooled.dtype
        emb = self.timestep_embedder(sinusoid(timestep, 256, dt))
        if hasattr(self, "guidance_embedder"):
            emb = emb + self.guidance_embedder(sinusoid(guidance, 256, dt))
        return emb + self.text_embedder(pooled)


class AdaLayerNormZero(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.silu = nn.SiLU()
        self.linear = nn.Linear(dim, 6 * dim)

    def forward(self, x, emb):
        sh_msa, sc_msa, g_msa, sh_mlp, sc_mlp, g_mlp = self.linear(self.silu(emb)).chunk(6, dim=1)
        return layer_norm(x) * (1 + sc_msa[:, None]) + sh_msa[:, None], g_msa, sh_mlp, sc_mlp, g_mlp


class AdaLayerNormZeroSingle(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.silu = nn.SiLU()
        self.linear = nn.Linear(dim, 3 * dim)

    def forward(self, x, emb):
        sh, sc, g = self.linear(self.silu(emb)).chunk(3, dim=1)
        return layer_norm(x) * (1 + sc[:, None]) + sh[:, None], g


class AdaLayerNormContinuous(nn.Module):
    """Note the chunk order: scale first, then shift."""

    def __init__(self, dim):
        super().__init__()
        self.silu = nn.SiLU()
        self.linear = nn.Linear(dim, 2 * dim)

    def forward(self, x, emb):
        scale, shift = self.linear(self.silu(emb)).chunk(2, dim=1)
        return layer_norm(x) * (1 + scale[:, None]) + shift[:, None]


class GELUProj(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out)

    def forward(self, x):
        return F.gelu(self.proj(x), approximate="tanh")


class FeedForward(nn.Module):
    """net.0 = GELU(tanh) projection, net.1 = dropout (identity in eval), net.2 = Linear."""

    def __init__(self, dim, mult=4):
        super().__init__()
        self.net = nn.ModuleList([GELUProj(dim, mult * dim), nn.Dropout(0.0), nn.Linear(mult * dim, dim)])

    def forward(self, x):
        for m in self.net:
            x = m(x)
        return x


# ---- rotary embedding --------------------------------------------------------------------

def rope_tables(ids, axes_dims, theta=10000):
    """ids (T, n_axes) -> cos, sin (T, D) float64. Axis a of width d fills its d columns
    with pairs (cos, cos), (sin, sin) of pos * theta^(-2j/d), j = 0 .. d/2-1."""
    pos = ids.to(torch.float64)
    cos_parts, sin_parts = [], []
    for a, d in enumerate(axes_dims):
        j = torch.arange(0, d, 2, dtype=torch.float64, device=ids.device)
        inv = 1.0 / (float(theta) ** (j / d))
        ang = pos[:, a:a + 1] * inv[None, :]                      # (T, d/2)
        # each column twice: repeat_interleave(2, dim=1), written so it also runs on the meta
        # device (tests/reference/test_ref_devices.py)
        c, s = torch.cos(ang), torch.sin(ang)
        cos_parts.append(torch.stack([c, c], dim=2).flatten(1))
        sin_parts.append(torch.stack([s, s], dim=2).flatten(1))
    return torch.cat(cos_parts, dim=1), torch.cat(sin_parts, dim=1)


def rotate(x, cos, sin):
    """x (B, H, T, D); pairs (x[2j], x[2j+1]) rotated: (e c - o s, o c + e s)."""
    e, o = x[..., 0::2], x[..., 1::2]
    ce, co = cos[:, 0::2], cos[:, 1::2]
    se, so = sin[:, 0::2], sin[:, 1::2]
    out_e = e * ce - o * se
    out_o = o * co + e * so
    return torch.stack([out_e, out_o], dim=-1).flatten(-2)


# ---- attention ------------------------------------------------------------------------------

class Attention(nn.Module):
    """diffusers Attention as FLUX configures it (qk_norm rms_norm, bias, FluxAttnProcessor2_0).
    added=True: the double block's text projections (add_*_proj, norm_added_*, to_add_out);
    pre_only=True: the single block (no to_out)."""

    def __init__(self, dim, heads, head_dim, added=False, pre_only=False):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        inner = heads * head_dim
        self.norm_q = RMSNorm(head_dim)
        self.norm_k = RMSNorm(head_dim)
        self.to_q = nn.Linear(dim, inner)
        self.to_k = nn.Linear(dim, inner)
        self.to_v = nn.Linear(dim, inner)
        self.added = added
        if added:
            self.add_k_proj = nn.Linear(dim, inner)
            self.add_v_proj = nn.Linear(dim, inner)
            self.add_q_proj = nn.Linear(dim, inner)
        if not pre_only:
            self.to_out = nn.ModuleList([nn.Linear(inner, dim), nn.Dropout(0.0)])
        if added:
            self.to_add_out = nn.Linear(inner, dim)
            self.norm_added_q = RMSNorm(head_dim)
            self.norm_added_k = RMSNorm(head_dim)

    def _heads(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.head_dim).transpose(1, 2)  # (B, H, T, D)

    def forward(self, x, ctx=None, rope=None, key_mask=None):
        q = self.norm_q(self._heads(self.to_q(x)))
        k = self.norm_k(self._heads(self.to_k(x)))
        v = self._heads(self.to_v(x))
        L = 0
        if ctx is not None:  # text FIRST in the joint sequence
            L = ctx.shape[1]
            q = torch.cat([self.norm_added_q(self._heads(self.add_q_proj(ctx))), q], dim=2)
            k = torch.cat([self.norm_added_k(self._heads(self.add_k_proj(ctx))), k], dim=2)
            v = torch.cat([self._heads(self.add_v_proj(ctx)), v], dim=2)
        if rope is not None:
            cos, sin = rope
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))  # (B, H, T, T)
        if key_mask is not None:
            scores = scores.masked_fill(~key_mask[:, None, None, :], float("-inf"))
        a = scores.softmax(dim=-1) @ v                                          # (B, H, T, D)
        B, H, T, D = a.shape
        a = a.transpose(1, 2).reshape(B, T, H * D)
        if ctx is None:
            return a
        return self.to_out[0](a[:, L:]), self.to_add_out(a[:, :L])


# ---- blocks ------------------------------------------------------------------------------------

class FluxTransformerBlock(nn.Module):
    def __init__(self, dim, heads, head_dim):
        super().__init__()
        self.norm1 = AdaLayerNormZero(dim)
        self.norm1_context = AdaLayerNormZero(dim)
        self.attn = Attention(dim, heads, head_dim, added=True)
        self.ff = FeedForward(dim)
        self.ff_context = FeedForward(dim)

    def forward(self, x, c, temb, rope, key_mask=None, acts=None, name=None):
        nx, g_msa, sh_mlp, sc_mlp, g_mlp = self.norm1(x, temb)
        nc, cg_msa, csh_mlp, csc_mlp, cg_mlp = self.norm1_context(c, temb)
        a_x, a_c = self.attn(nx, nc, rope, key_mask)
        x = x + g_msa[:, None] * a_x
        f_x = self.ff(layer_norm(x) * (1 + sc_mlp[:, None]) + sh_mlp[:, None])
        x = x + g_mlp[:, None] * f_x
        c = c + cg_msa[:, None] * a_c
        f_c = self.ff_context(layer_norm(c) * (1 + csc_mlp[:, None]) + csh_mlp[:, None])
        c = c + cg_mlp[:, None] * f_c
        if acts is not None:
            acts[name + ".attn"] = torch.cat([a_c, a_x], dim=1)
            acts[name + ".ff"] = torch.cat([f_c, f_x], dim=1)
            acts[name] = torch.cat([c, x], dim=1)
        return c, x


class FluxSingleTransformerBlock(nn.Module):
    def __init__(self, dim, heads, head_dim, mlp_ratio=4):
        super().__init__()
        self.norm = AdaLayerNormZeroSingle(dim)
        self.proj_mlp = nn.Linear(dim, mlp_ratio * dim)
        self.proj_out = nn.Linear(dim + mlp_ratio * dim, dim)
        self.attn = Attention(dim, heads, head_dim, pre_only=True)

    def forward(self, x, temb, rope, key_mask=None, acts=None, name=None):
        h, gate = self.norm(x, temb)
        mlp = F.gelu(self.proj_mlp(h), approximate="tanh")
        a = self.attn(h, None, rope, key_mask)
        y = self.proj_out(torch.cat([a, mlp], dim=2))
        x = x + gate[:, None] * y
        if acts is not None:
            acts[name + ".proj_out"] = y
            acts[name] = x
        return x


class FluxTransformer2DModel(nn.Module):
    def __init__(self, in_channels=64, num_layers=19, num_single_layers=38, attention_head_dim=128,
                 num_attention_heads=24, joint_attention_dim=4096, pooled_projection_dim=768,
                 guidance_embeds=False, axes_dims_rope=(16, 56, 56)):
        super().__init__()
        dim = num_attention_heads * attention_head_dim
        assert sum(axes_dims_rope) == attention_head_dim
        self.axes_dims_rope = tuple(axes_dims_rope)
        self.guidance_embeds = guidance_embeds
        self.time_text_embed = CombinedTimestepGuidanceTextProjEmbeddings(dim, pooled_projection_dim,
                                                                          guidance_embeds)
        self.context_embedder = nn.Linear(joint_attention_dim, dim)
        self.x_embedder = nn.Linear(in_channels, dim)
        self.transformer_blocks = nn.ModuleList(
            [FluxTransformerBlock(dim, num_attention_heads, attention_head_dim) for _ in range(num_layers)])
        self.single_transformer_blocks = nn.ModuleList(
            [FluxSingleTransformerBlock(dim, num_attention_heads, attention_head_dim)
             for _ in range(num_single_layers)])
        self.norm_out = AdaLayerNormContinuous(dim)
        self.proj_out = nn.Linear(dim, in_channels)

    def forward(self, hidden_states, encoder_hidden_states, pooled_projections, timestep, img_ids, txt_ids,
                guidance=None, key_mask=None, acts=None):
        dt = self.x_embedder.weight.dtype
        x = self.x_embedder(hidden_states.to(dt))
        t = timestep.to(dt) * 1000
        g = guidance.to(dt) * 1000 if guidance is not None else None
        if self.guidance_embeds and g is None:
            raise ValueError("this model has a guidance embedder; pass guidance")
        temb = self.time_text_embed(t, g, pooled_projections.to(dt))
        c = self.context_embedder(encoder_hidden_states.to(dt))
        if acts is not None:  # the text states as the transformer takes them first (C: "text_encoder")
            if encoder_hidden_states.shape[1] > 0:
                acts["text_encoder"] = encoder_hidden_states
            if pooled_projections is not None:
                acts["text_encoder.pooled"] = pooled_projections
            acts["x_embedder"], acts["time_text_embed"], acts["context_embedder"] = x, temb, c
        # the tables are computed on the ids' device and used on the latents' (velocity's ids
        # are CPU tensors; a CUDA peer passes CUDA ids and keeps it all on the GPU)
        cos, sin = rope_tables(torch.cat([txt_ids, img_ids], dim=0), self.axes_dims_rope)
        rope = (cos.to(device=x.device, dtype=dt), sin.to(device=x.device, dtype=dt))
        L, N = c.shape[1], x.shape[1]
        jmask = None
        if key_mask is not None:
            jmask = torch.cat([key_mask.bool().to(x.device), torch.ones(x.shape[0], N, dtype=torch.bool,
                                                                          device=x.device)], dim=1)
        for i, blk in enumerate(self.transformer_blocks):
            c, x = blk(x, c, temb, rope, jmask, acts, "transformer_blocks.%d" % i)
        x = torch.cat([c, x], dim=1)
        for i, blk in enumerate(self.single_transformer_blocks):
            x = blk(x, temb, rope, jmask, acts, "single_transformer_blocks.%d" % i)
        x = self.norm_out(x[:, L:], temb)
        out = self.proj_out(x)
        if acts is not None:
            acts["norm_out"], acts["proj_out"] = x, out
        return out


# ---- FluxPipeline-side helpers ----------------------------------------------------------------

def pack_latents(x):
    """(B, C, H, W) -> (B, (H/2)(W/2), 4C), each token ordered (c, py, px)."""
    B, C, H, W = x.shape
    x = x.view(B, C, H // 2, 2, W // 2, 2).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // 2) * (W // 2), C * 4)


def unpack_latents(tok, H, W):
    """(B, (H/2)(W/2), 4C) -> (B, C, H, W), the inverse of pack_latents."""
    B, N, P = tok.shape
    x = tok.view(B, H // 2, W // 2, P // 4, 2, 2).permute(0, 3, 1, 4, 2, 5)
    return x.reshape(B, P // 4, H, W)


def prepare_latent_image_ids(h2, w2):
    """(h2 * w2, 3): (0, row, col) on the packed grid, row-major."""
    ids = torch.zeros(h2, w2, 3)
    ids[..., 1] = torch.arange(h2, dtype=torch.float32)[:, None]
    ids[..., 2] = torch.arange(w2, dtype=torch.float32)[None, :]
    return ids.reshape(h2 * w2, 3)


def velocity(model, x, t, guidance, context, pooled, key_mask=None, acts=None):
    """Unpacked latents in, unpacked model output out (the C API's contract)."""
    B, C, H, W = x.shape
    img_ids = prepare_latent_image_ids(H // 2, W // 2)
    txt_ids = torch.zeros(context.shape[1], 3)
    out = model(pack_latents(x), context, pooled, t, img_ids, txt_ids, guidance, key_mask, acts)
    return unpack_latents(out, H, W)


# ---- construction and loading ------------------------------------------------------------------

def _cfg(preset, n_double=None, n_single=None):
    cfg = dict(PRESETS[preset]) if isinstance(preset, str) else dict(preset)
    if n_double is not None:
        cfg["num_layers"] = n_double
    if n_single is not None:
        cfg["num_single_layers"] = n_single
    return cfg


def build_flux(preset, n_double=None, n_single=None):
    return FluxTransformer2DModel(**_cfg(preset, n_double, n_single)).eval()


def _mmap_safetensors(path):
    """name -> read-only-safe (copy-on-write) numpy view of each F32 tensor, memory-mapped,
    so a multi-GB file is never held twice in RAM."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    raw = np.memmap(path, dtype=np.uint8, mode="c")
    base = 8 + n
    out = {}
    for name, info in header.items():
        if info["dtype"] != "F32":
            raise ValueError("%s: tensor %s is %s; this loader reads F32" % (path, name, info["dtype"]))
        b, e = info["data_offsets"]
        out[name] = np.asarray(raw[base + b:base + e]).view("<f4").reshape(info["shape"])
    return out


def load_flux(weights_path, preset, n_double=None, n_single=None):
    """FluxTransformer2DModel for preset (optionally reduced depth) with weights read by name;
    every model parameter must be in the file with its shape; extra tensors are ignored."""
    model = FluxTransformer2DModel(**_cfg(preset, n_double, n_single)).eval()
    tensors = _mmap_safetensors(weights_path)
    own = model.state_dict()
    missing = [k for k in own if k not in tensors]
    if missing:
        raise KeyError("%s: missing %d tensors, e.g. %s" % (weights_path, len(missing), missing[:3]))
    sd = {k: torch.from_numpy(tensors[k]) for k in own}
    model.load_state_dict(sd, strict=True)
    return model
