"""sd3_ref.py — an independent PyTorch SD3 MMDiT ("Scaling Rectified Flow Transformers",
Esser et al. 2024), laid out like diffusers' SD3Transformer2DModel so a diffusers
state_dict (a real transformer checkpoint, or repro's synthetic weights) loads by name
with strict=True.

It shares no code or logic with the C engine: patch embedding is a real Conv2d, the
pos_embed crop is a 4-D slice, heads are split with view/transpose, attention is
written out (q k^T * scale, masked_fill, softmax, @ v) over torch.cat([image, text]),
unpatchify is diffusers' einsum. It is the yardstick the C forward is checked against.

API (tests/reference/* import it):
    SD3Transformer2DModel(sample_size, patch_size, in_channels, num_layers, attention_head_dim,
                          num_attention_heads, joint_attention_dim, caption_projection_dim,
                          pooled_projection_dim, out_channels, pos_embed_max_size, qk_norm=None,
                          dual_attention_layers=())
        .forward(x, context, pooled, t, context_mask=None, acts=None) -> (B, Cout, H, W)
            x (B, Cin, H, W); context (B, L, Djoint); pooled (B, Dpool); t (B,) float in
            [0, 1000]; context_mask (B, L) bool/uint8 (nonzero = attend) or None (diffusers'
            default: no mask). When `acts` is a dict it is filled with the activations repro's
            trace records, same names and layouts (see sd3.h): "text_encoder" (context as
            given), "text_encoder.pooled" (pooled as given), "pos_embed", "time_text_embed",
            "context_embedder", "transformer_blocks.N.attn", ".attn.context", ".ff",
            ".ff_context", "transformer_blocks.N", ".context", "proj_out", and ".attn2" in the
            dual-attention (MMDiT-X) blocks.
    PRESETS                        name -> constructor kwargs ("sd3-tiny", "sd3-digits" (trained),
                                   "sd3-medium", "sd3.5-medium-tiny")
    load_sd3(path, preset, depth=None)  model with weights from a safetensors file (float32, eval)
    get_2d_sincos_pos_embed(embed_dim, grid_size, base_size=None) -> np.ndarray (g*g, D) float64
        base_size None: integer grid positions (what repro's synthetic init writes);
        base_size b: diffusers' positions arange(g) / (g / b) (what diffusers' constructor builds)

MMDiT-X (SD3.5 Medium): the blocks listed in dual_attention_layers norm x with a 9-chunk
adaLN (shift, scale, gate for msa, mlp, msa2) and add, after the joint attention's residual,
gate_msa2 * attn2(LN(x_in) * (1 + scale_msa2) + shift_msa2): a self-attention over the image
tokens alone with its own projections and qk norm (SD3.5's mmditx.py DismantledBlock with
x_block_self_attn; diffusers JointTransformerBlock(use_dual_attention=True)).

A model cast with .double() computes everything in float64 (timestep frequencies too).
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402

PRESETS = {
    "sd3-tiny": dict(sample_size=16, patch_size=2, in_channels=16, num_layers=2, attention_head_dim=32,
                     num_attention_heads=2, joint_attention_dim=64, caption_projection_dim=64,
                     pooled_projection_dim=64, out_channels=16, pos_embed_max_size=16, qk_norm="rms_norm"),
    # trained (tests/reference/train/train_digits.py trains this module): vae-digits' 4x8x8 latents, te-digits'
    # text (64 wide); the pos_embed buffer is diffusers' table (positions x base_size / M)
    "sd3-digits": dict(sample_size=8, patch_size=2, in_channels=4, num_layers=3, attention_head_dim=32,
                       num_attention_heads=2, joint_attention_dim=64, caption_projection_dim=64,
                       pooled_projection_dim=64, out_channels=4, pos_embed_max_size=8, qk_norm="rms_norm"),
    "sd3-medium": dict(sample_size=128, patch_size=2, in_channels=16, num_layers=24, attention_head_dim=64,
                       num_attention_heads=24, joint_attention_dim=4096, caption_projection_dim=1536,
                       pooled_projection_dim=2048, out_channels=16, pos_embed_max_size=192, qk_norm=None),
    # sd3-tiny's widths as MMDiT-X: 3 blocks, dual attention in blocks 0 and 1
    "sd3.5-medium-tiny": dict(sample_size=16, patch_size=2, in_channels=16, num_layers=3, attention_head_dim=32,
                              num_attention_heads=2, joint_attention_dim=64, caption_projection_dim=64,
                              pooled_projection_dim=64, out_channels=16, pos_embed_max_size=16, qk_norm="rms_norm",
                              dual_attention_layers=(0, 1)),
}


# ---- embeddings -------------------------------------------------------------------------

class PatchEmbed(nn.Module):
    """Conv2d(k = stride = p) -> (B, T, D), plus the centre crop of a (M, M, D) table."""

    def __init__(self, patch_size, in_channels, embed_dim, pos_embed_max_size):
        super().__init__()
        self.patch_size = patch_size
        self.max_size = pos_embed_max_size
        self.proj = nn.Conv2d(in_channels, embed_dim, kernel_size=patch_size, stride=patch_size, bias=True)
        # persistent, as diffusers registers it when pos_embed_max_size is set
        self.register_buffer("pos_embed", torch.zeros(1, pos_embed_max_size ** 2, embed_dim))

    def forward(self, x):
        gh, gw = x.shape[-2] // self.patch_size, x.shape[-1] // self.patch_size
        assert gh <= self.max_size and gw <= self.max_size
        top, left = (self.max_size - gh) // 2, (self.max_size - gw) // 2
        table = self.pos_embed.view(1, self.max_size, self.max_size, -1)[:, top:top + gh, left:left + gw]
        tokens = self.proj(x).flatten(2).transpose(1, 2)  # (B, gh*gw, D), row-major grid
        return tokens + table.reshape(1, gh * gw, -1)


class Timesteps(nn.Module):
    """256 sinusoidal channels, flip_sin_to_cos=True, downscale_freq_shift=0: [cos, sin]."""

    def __init__(self, num_channels=256):
        super().__init__()
        self.num_channels = num_channels

    def forward(self, t, dtype):
        half = self.num_channels // 2
        exponent = -math.log(10000.0) * torch.arange(half, dtype=dtype, device=t.device) / half
        args = t.to(dtype)[:, None] * torch.exp(exponent)[None, :]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class MLPEmbedding(nn.Module):
    """linear_1 -> SiLU -> linear_2 (diffusers TimestepEmbedding / PixArtAlphaTextProjection)."""

    def __init__(self, in_features, dim):
        super().__init__()
        self.linear_1 = nn.Linear(in_features, dim)
        self.linear_2 = nn.Linear(dim, dim)

    def forward(self, x):
        return self.linear_2(torch.nn.functional.silu(self.linear_1(x)))


class CombinedTimestepTextProjEmbeddings(nn.Module):
    def __init__(self, dim, pooled_projection_dim):
        super().__init__()
        self.time_proj = Timesteps(256)
        self.timestep_embedder = MLPEmbedding(256, dim)
        self.text_embedder = MLPEmbedding(pooled_projection_dim, dim)

    def forward(self, t, pooled):
        freqs = self.time_proj(t, self.timestep_embedder.linear_1.weight.dtype)
        return self.timestep_embedder(freqs) + self.text_embedder(pooled)


# ---- norms ------------------------------------------------------------------------------

def layer_norm(x, eps=1e-6):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], eps=eps)


class AdaLayerNormZero(nn.Module):
    """linear(silu(emb)) -> shift, scale, gate (msa), shift, scale, gate (mlp)."""

    def __init__(self, dim):
        super().__init__()
        self.linear = nn.Linear(dim, 6 * dim)

    def forward(self, x, emb):
        sh, sc, g, sh2, sc2, g2 = self.linear(torch.nn.functional.silu(emb)).chunk(6, dim=1)
        return layer_norm(x) * (1 + sc[:, None]) + sh[:, None], g, sh2, sc2, g2


class AdaLayerNormZeroX(nn.Module):
    """linear(silu(emb)) -> 9 chunks: shift, scale, gate for msa, mlp and msa2. Returns both
    modulations of the one LN(x) and the five other chunks."""

    def __init__(self, dim):
        super().__init__()
        self.linear = nn.Linear(dim, 9 * dim)

    def forward(self, x, emb):
        sh, sc, g, sh2, sc2, g2, sha, sca, ga = self.linear(torch.nn.functional.silu(emb)).chunk(9, dim=1)
        n = layer_norm(x)
        return n * (1 + sc[:, None]) + sh[:, None], g, sh2, sc2, g2, n * (1 + sca[:, None]) + sha[:, None], ga


class AdaLayerNormContinuous(nn.Module):
    """linear(silu(emb)) -> scale, shift (that order)."""

    def __init__(self, dim):
        super().__init__()
        self.linear = nn.Linear(dim, 2 * dim)

    def forward(self, x, emb):
        scale, shift = self.linear(torch.nn.functional.silu(emb)).chunk(2, dim=1)
        return layer_norm(x) * (1 + scale)[:, None, :] + shift[:, None, :]


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


# ---- joint attention --------------------------------------------------------------------

class JointAttention(nn.Module):
    def __init__(self, dim, heads, head_dim, context_pre_only, qk_norm):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.context_pre_only = context_pre_only
        inner = heads * head_dim
        if qk_norm == "rms_norm":
            self.norm_q, self.norm_k = RMSNorm(head_dim), RMSNorm(head_dim)
        else:
            assert qk_norm is None
            self.norm_q = self.norm_k = None
        self.to_q, self.to_k, self.to_v = nn.Linear(dim, inner), nn.Linear(dim, inner), nn.Linear(dim, inner)
        self.add_k_proj, self.add_v_proj = nn.Linear(dim, inner), nn.Linear(dim, inner)
        self.add_q_proj = nn.Linear(dim, inner)
        self.to_out = nn.ModuleList([nn.Linear(inner, dim), nn.Dropout(0.0)])
        if not context_pre_only:
            self.to_add_out = nn.Linear(inner, dim)
        if qk_norm == "rms_norm":
            self.norm_added_q, self.norm_added_k = RMSNorm(head_dim), RMSNorm(head_dim)
        else:
            self.norm_added_q = self.norm_added_k = None

    def _heads(self, x):  # (B, N, H*hd) -> (B, H, N, hd)
        return x.view(x.shape[0], -1, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, c, context_mask=None):
        T = x.shape[1]
        q, k, v = self._heads(self.to_q(x)), self._heads(self.to_k(x)), self._heads(self.to_v(x))
        cq, ck = self._heads(self.add_q_proj(c)), self._heads(self.add_k_proj(c))
        cv = self._heads(self.add_v_proj(c))
        if self.norm_q is not None:
            q, k = self.norm_q(q), self.norm_k(k)
            cq, ck = self.norm_added_q(cq), self.norm_added_k(ck)
        q, k, v = torch.cat([q, cq], dim=2), torch.cat([k, ck], dim=2), torch.cat([v, cv], dim=2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))  # (B, H, S, S)
        if context_mask is not None:
            keep = torch.cat([torch.ones(x.shape[0], T, dtype=torch.bool, device=x.device),
                              context_mask.bool().to(x.device)], dim=1)
            scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        o = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(x.shape[0], -1, self.heads * self.head_dim)
        ox, oc = o[:, :T], o[:, T:]
        out_x = self.to_out[1](self.to_out[0](ox))
        out_c = None if self.context_pre_only else self.to_add_out(oc)
        return out_x, out_c


class SelfAttention(nn.Module):
    """MMDiT-X's attn2: softmax attention over one sequence (the image tokens), with its own
    to_q/k/v, to_out and optional per-head RMSNorm on q, k."""

    def __init__(self, dim, heads, head_dim, qk_norm):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        inner = heads * head_dim
        if qk_norm == "rms_norm":
            self.norm_q, self.norm_k = RMSNorm(head_dim), RMSNorm(head_dim)
        else:
            assert qk_norm is None
            self.norm_q = self.norm_k = None
        self.to_q, self.to_k, self.to_v = nn.Linear(dim, inner), nn.Linear(dim, inner), nn.Linear(dim, inner)
        self.to_out = nn.ModuleList([nn.Linear(inner, dim), nn.Dropout(0.0)])

    def forward(self, x):
        def heads(t):  # (B, N, H*hd) -> (B, H, N, hd)
            return t.view(t.shape[0], -1, self.heads, self.head_dim).transpose(1, 2)
        q, k, v = heads(self.to_q(x)), heads(self.to_k(x)), heads(self.to_v(x))
        if self.norm_q is not None:
            q, k = self.norm_q(q), self.norm_k(k)
        p = ((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))).softmax(dim=-1)
        o = (p @ v).transpose(1, 2).reshape(x.shape[0], -1, self.heads * self.head_dim)
        return self.to_out[1](self.to_out[0](o))


class GELUProj(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out)

    def forward(self, x):
        return torch.nn.functional.gelu(self.proj(x), approximate="tanh")


class FeedForward(nn.Module):
    def __init__(self, dim, mult=4):
        super().__init__()
        self.net = nn.ModuleList([GELUProj(dim, mult * dim), nn.Dropout(0.0), nn.Linear(mult * dim, dim)])

    def forward(self, x):
        for layer in self.net:
            x = layer(x)
        return x


class JointTransformerBlock(nn.Module):
    def __init__(self, dim, heads, head_dim, context_pre_only, qk_norm, dual=False):
        super().__init__()
        self.context_pre_only, self.dual = context_pre_only, dual
        self.norm1 = AdaLayerNormZeroX(dim) if dual else AdaLayerNormZero(dim)
        self.norm1_context = AdaLayerNormContinuous(dim) if context_pre_only else AdaLayerNormZero(dim)
        self.attn = JointAttention(dim, heads, head_dim, context_pre_only, qk_norm)
        if dual:
            self.attn2 = SelfAttention(dim, heads, head_dim, qk_norm)
        self.ff = FeedForward(dim)
        if not context_pre_only:
            self.ff_context = FeedForward(dim)

    def forward(self, x, c, temb, context_mask=None, acts=None, name=None):
        if self.dual:
            nx, g, sh2, sc2, g2, nx2, ga = self.norm1(x, temb)
        else:
            nx, g, sh2, sc2, g2 = self.norm1(x, temb)
        if self.context_pre_only:
            nc = self.norm1_context(c, temb)
        else:
            nc, cg, csh2, csc2, cg2 = self.norm1_context(c, temb)
        ax, ac = self.attn(nx, nc, context_mask)
        x = x + g[:, None] * ax
        if self.dual:  # after the joint attention's residual, from the block input's norm
            a2 = self.attn2(nx2)
            x = x + ga[:, None] * a2
            if acts is not None:
                acts[name + ".attn2"] = a2
        fx = self.ff(layer_norm(x) * (1 + sc2[:, None]) + sh2[:, None])
        x = x + g2[:, None] * fx
        if acts is not None:
            acts[name + ".attn"], acts[name + ".ff"], acts[name] = ax, fx, x
        if self.context_pre_only:
            return x, None
        c = c + cg[:, None] * ac
        fc = self.ff_context(layer_norm(c) * (1 + csc2[:, None]) + csh2[:, None])
        c = c + cg2[:, None] * fc
        if acts is not None:
            acts[name + ".attn.context"], acts[name + ".ff_context"], acts[name + ".context"] = ac, fc, c
        return x, c


class SD3Transformer2DModel(nn.Module):
    def __init__(self, sample_size, patch_size, in_channels, num_layers, attention_head_dim,
                 num_attention_heads, joint_attention_dim, caption_projection_dim, pooled_projection_dim,
                 out_channels, pos_embed_max_size, qk_norm=None, dual_attention_layers=()):
        super().__init__()
        dim = num_attention_heads * attention_head_dim
        assert caption_projection_dim == dim
        self.patch_size, self.out_channels, self.sample_size = patch_size, out_channels, sample_size
        self.pos_embed = PatchEmbed(patch_size, in_channels, dim, pos_embed_max_size)
        self.time_text_embed = CombinedTimestepTextProjEmbeddings(dim, pooled_projection_dim)
        self.context_embedder = nn.Linear(joint_attention_dim, caption_projection_dim)
        self.transformer_blocks = nn.ModuleList([
            JointTransformerBlock(dim, num_attention_heads, attention_head_dim, i == num_layers - 1, qk_norm,
                                  i in dual_attention_layers)
            for i in range(num_layers)])
        self.norm_out = AdaLayerNormContinuous(dim)
        self.proj_out = nn.Linear(dim, patch_size * patch_size * out_channels)

    def forward(self, x, context, pooled, t, context_mask=None, acts=None):
        B, _, H, W = x.shape
        p, co = self.patch_size, self.out_channels
        hs = self.pos_embed(x)
        temb = self.time_text_embed(t, pooled)
        c = self.context_embedder(context)
        if acts is not None:  # the text states as the transformer takes them first (C: "text_encoder")
            acts["text_encoder"], acts["text_encoder.pooled"] = context, pooled
            acts["pos_embed"], acts["time_text_embed"], acts["context_embedder"] = hs, temb, c
        for i, block in enumerate(self.transformer_blocks):
            hs, c = block(hs, c, temb, context_mask, acts, "transformer_blocks.%d" % i)
        hs = self.proj_out(self.norm_out(hs, temb))  # (B, T, p*p*Cout), (p, q, c) order
        if acts is not None:
            acts["proj_out"] = hs
        hs = hs.reshape(B, H // p, W // p, p, p, co)
        hs = torch.einsum("nhwpqc->nchpwq", hs)
        return hs.reshape(B, co, H, W)


# ---- fixed 2-D sin-cos table ----------------------------------------------------------------

def get_2d_sincos_pos_embed(embed_dim, grid_size, base_size=None):
    """(g*g, D) float64: first D/2 from the w coordinate, last D/2 from h, each half
    [sin(pos w_m), cos(pos w_m)], w_m = 10000^(-m / (D/4)). Positions are the integer grid,
    or diffusers' arange(g) / (g / base_size) when base_size is given."""
    assert embed_dim % 4 == 0
    pos = np.arange(grid_size, dtype=np.float64)
    if base_size is not None:
        pos = np.arange(grid_size, dtype=np.float32) / np.float32(grid_size / base_size)
        pos = pos.astype(np.float64)
    omega = 1.0 / 10000 ** (np.arange(embed_dim // 4, dtype=np.float64) / (embed_dim / 4.0))
    ph = np.repeat(pos, grid_size)  # h coordinate of token i*g + j
    pw = np.tile(pos, grid_size)    # w coordinate
    aw, ah = np.outer(pw, omega), np.outer(ph, omega)
    return np.concatenate([np.sin(aw), np.cos(aw), np.sin(ah), np.cos(ah)], axis=1)


# ---- construction ---------------------------------------------------------------------------

def config(preset, depth=None):
    cfg = dict(PRESETS[preset]) if isinstance(preset, str) else dict(preset)
    if depth:
        cfg["num_layers"] = depth
    return cfg


def load_sd3(weights_path, preset, depth=None):
    """SD3Transformer2DModel(**config(preset, depth)) loaded by name from safetensors, strict.
    Extra tensors (deeper blocks of a full checkpoint) are ignored; missing ones raise."""
    model = SD3Transformer2DModel(**config(preset, depth)).eval()
    tensors, _ = st.load(weights_path)
    own = model.state_dict()
    missing = [k for k in own if k not in tensors]
    if missing:
        raise KeyError("%s: missing %d tensors, e.g. %s" % (weights_path, len(missing), missing[:3]))
    sd = {k: torch.from_numpy(np.ascontiguousarray(tensors.pop(k), dtype=np.float32)) for k in own}
    del tensors
    model.load_state_dict(sd, strict=True)
    return model
