"""dit_ref.py — an independent PyTorch DiT (Peebles & Xie, "Scalable Diffusion Models
with Transformers"), laid out like facebookresearch/DiT models.py so a state_dict
(upstream checkpoint or repro's synthetic weights) loads by name.

It shares no code or logic with the C engine: patch embedding is a real Conv2d,
attention is written out (q k^T * scale, softmax, @ v), unpatchify is the upstream
einsum. It is the yardstick the C forward is checked against.

API (kept small; tests/reference/* import it):
    DiT(input_size, patch_size, in_channels, hidden_size, depth, num_heads,
        mlp_ratio=4.0, num_classes=1000, learn_sigma=True)
        .forward(x, t, y, acts=None) -> (B, Cout, S, S)
            x (B, Cin, S, S) float; t (B,) timesteps (float or int); y (B,) int64 class ids,
            y == num_classes selects the null (CFG) class. When `acts` is a dict it is
            filled with the activations repro's trace records, same names and layouts:
            "x_embedder" (B,T,C) after +pos_embed, "t_embedder" (B,C), "y_embedder" (B,C),
            "blocks.N.attn" / "blocks.N.mlp" (B,T,C) before the gate, "blocks.N" (B,T,C),
            "final_layer" (B,T,p*p*Cout).
    PRESETS                       name -> DiT kwargs ("dit-tiny", "dit-xl-2-128", "dit-xl-2-256", "dit-xl-2-512",
                                  "dit-digits": the trained one, 10 classes)
    build_dit(preset, depth=None) preset: a PRESETS name or a dict of DiT kwargs -> DiT (random init)
    load_dit(weights_path, **cfg) DiT(**cfg) with weights from a safetensors file, eval mode, float32
                                  (cfg may be a preset name: load_dit(path, preset="dit-tiny", depth=2))
    get_2d_sincos_pos_embed(embed_dim, grid_size) -> np.ndarray (grid_size**2, embed_dim) float64

Numerics follow upstream, including its float32 timestep embedding; a model cast
with .double() computes everything (the frequencies too) in float64.
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
    "dit-tiny": dict(input_size=16, patch_size=2, in_channels=4, hidden_size=96, depth=4, num_heads=4),
    "dit-xl-2-128": dict(input_size=16, patch_size=2, in_channels=4, hidden_size=1152, depth=28, num_heads=16),
    "dit-xl-2-256": dict(input_size=32, patch_size=2, in_channels=4, hidden_size=1152, depth=28, num_heads=16),
    "dit-xl-2-512": dict(input_size=64, patch_size=2, in_channels=4, hidden_size=1152, depth=28, num_heads=16),
    # trained (tests/reference/train/train_digits.py trains this module): the ten digits on vae-digits' latents
    "dit-digits": dict(input_size=8, patch_size=2, in_channels=4, hidden_size=96, depth=4, num_heads=4,
                       num_classes=10, learn_sigma=True),
}


def modulate(x, shift, scale):
    # x (B, T, C); shift, scale (B, C)
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class PatchEmbed(nn.Module):
    """timm PatchEmbed with flatten: Conv2d(k = stride = p) -> (B, T, C)."""

    def __init__(self, img_size, patch_size, in_chans, embed_dim):
        super().__init__()
        self.grid_size = img_size // patch_size
        self.num_patches = self.grid_size ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size, bias=True)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class TimestepEmbedder(nn.Module):
    def __init__(self, hidden_size, frequency_embedding_size=256):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(frequency_embedding_size, hidden_size, bias=True),
            nn.SiLU(),
            nn.Linear(hidden_size, hidden_size, bias=True),
        )
        self.frequency_embedding_size = frequency_embedding_size

    @staticmethod
    def timestep_embedding(t, dim, max_period=10000, dtype=torch.float32):
        # [cos(t f), sin(t f)], f_i = max_period^(-i / half); upstream computes in float32.
        # The frequencies live on t's device (a CUDA t met CPU freqs: bench/torch_dit.py crashed).
        half = dim // 2
        freqs = torch.exp(-math.log(max_period) * torch.arange(0, half, dtype=dtype, device=t.device) / half)
        args = t[:, None].to(dtype) * freqs[None]
        emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
        if dim % 2:
            emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)
        return emb

    def forward(self, t):
        dtype = self.mlp[0].weight.dtype
        return self.mlp(self.timestep_embedding(t, self.frequency_embedding_size, dtype=dtype))


class LabelEmbedder(nn.Module):
    """Class table with one extra row for the null class; labels arrive already dropped."""

    def __init__(self, num_classes, hidden_size):
        super().__init__()
        self.embedding_table = nn.Embedding(num_classes + 1, hidden_size)
        self.num_classes = num_classes

    def forward(self, labels):
        return self.embedding_table(labels)


class Attention(nn.Module):
    """timm vision_transformer.Attention (qkv_bias=True), softmax written out."""

    def __init__(self, dim, num_heads):
        super().__init__()
        assert dim % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]          # (B, H, N, D)
        attn = (q * self.scale) @ k.transpose(-2, -1)  # (B, H, N, N)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class DiTBlock(nn.Module):
    def __init__(self, hidden_size, num_heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        self.attn = Attention(hidden_size, num_heads)
        self.norm2 = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        self.mlp = Mlp(hidden_size, int(hidden_size * mlp_ratio))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden_size, 6 * hidden_size, bias=True))

    def forward(self, x, c, acts=None, name=None):
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.adaLN_modulation(c).chunk(6, dim=1)
        a = self.attn(modulate(self.norm1(x), shift_msa, scale_msa))
        x = x + gate_msa.unsqueeze(1) * a
        m = self.mlp(modulate(self.norm2(x), shift_mlp, scale_mlp))
        x = x + gate_mlp.unsqueeze(1) * m
        if acts is not None:
            acts[name + ".attn"], acts[name + ".mlp"], acts[name] = a, m, x
        return x


class FinalLayer(nn.Module):
    def __init__(self, hidden_size, patch_size, out_channels):
        super().__init__()
        self.norm_final = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        self.linear = nn.Linear(hidden_size, patch_size * patch_size * out_channels, bias=True)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden_size, 2 * hidden_size, bias=True))

    def forward(self, x, c):
        shift, scale = self.adaLN_modulation(c).chunk(2, dim=1)
        return self.linear(modulate(self.norm_final(x), shift, scale))


class DiT(nn.Module):
    def __init__(self, input_size, patch_size, in_channels, hidden_size, depth, num_heads,
                 mlp_ratio=4.0, num_classes=1000, learn_sigma=True):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = in_channels * 2 if learn_sigma else in_channels
        self.patch_size = patch_size
        self.num_classes = num_classes
        self.x_embedder = PatchEmbed(input_size, patch_size, in_channels, hidden_size)
        self.t_embedder = TimestepEmbedder(hidden_size)
        self.y_embedder = LabelEmbedder(num_classes, hidden_size)
        T = self.x_embedder.num_patches
        self.pos_embed = nn.Parameter(torch.zeros(1, T, hidden_size), requires_grad=False)
        self.blocks = nn.ModuleList([DiTBlock(hidden_size, num_heads, mlp_ratio) for _ in range(depth)])
        self.final_layer = FinalLayer(hidden_size, patch_size, self.out_channels)
        pe = get_2d_sincos_pos_embed(hidden_size, self.x_embedder.grid_size)
        self.pos_embed.data.copy_(torch.from_numpy(pe).float().unsqueeze(0))

    def unpatchify(self, x):
        # x (B, T, p*p*c) ordered (p, q, c) -> (B, c, H, W)
        c, p = self.out_channels, self.patch_size
        h = w = int(round(x.shape[1] ** 0.5))
        assert h * w == x.shape[1]
        x = x.reshape(x.shape[0], h, w, p, p, c)
        x = torch.einsum("nhwpqc->nchpwq", x)
        return x.reshape(x.shape[0], c, h * p, w * p)

    def forward(self, x, t, y, acts=None):
        x = self.x_embedder(x) + self.pos_embed  # (B, T, C)
        t = self.t_embedder(t)                   # (B, C)
        y = self.y_embedder(y)                   # (B, C)
        if acts is not None:
            acts["x_embedder"], acts["t_embedder"], acts["y_embedder"] = x, t, y
        c = t + y
        for i, block in enumerate(self.blocks):
            x = block(x, c, acts, "blocks.%d" % i)
        x = self.final_layer(x, c)               # (B, T, p*p*Cout)
        if acts is not None:
            acts["final_layer"] = x
        return self.unpatchify(x)


# ---- fixed 2-D sin-cos position table (MAE / DiT), in float64 numpy ------------------

def get_1d_sincos_pos_embed_from_grid(embed_dim, pos):
    assert embed_dim % 2 == 0
    omega = np.arange(embed_dim // 2, dtype=np.float64) / (embed_dim / 2.0)
    omega = 1.0 / 10000 ** omega
    out = np.einsum("m,d->md", pos.reshape(-1).astype(np.float64), omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def get_2d_sincos_pos_embed(embed_dim, grid_size):
    """(grid_size**2, embed_dim): first half from the w coordinate, second from h."""
    assert embed_dim % 4 == 0
    grid_h = np.arange(grid_size, dtype=np.float64)
    grid_w = np.arange(grid_size, dtype=np.float64)
    grid = np.meshgrid(grid_w, grid_h)  # w goes first, as upstream
    grid = np.stack(grid, axis=0).reshape(2, 1, grid_size, grid_size)
    emb_h = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[0])
    emb_w = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[1])
    return np.concatenate([emb_h, emb_w], axis=1)


# ---- construction -----------------------------------------------------------------------

def _cfg(preset=None, depth=None, **cfg):
    if preset is not None:
        base = dict(PRESETS[preset]) if isinstance(preset, str) else dict(preset)
        base.update(cfg)
        cfg = base
    if depth is not None:
        cfg["depth"] = depth
    return cfg


def build_dit(preset, depth=None):
    """A DiT from a PRESETS name or a dict of DiT kwargs (random init, eval mode)."""
    return DiT(**_cfg(preset, depth)).eval()


def load_dit(weights_path, **cfg):
    """DiT(**cfg) (cfg may use preset=NAME, depth=N) loaded from safetensors by name.
    Every model parameter must be in the file with its shape; extra tensors (deeper
    blocks of a full checkpoint) are ignored."""
    model = DiT(**_cfg(**cfg)).eval()
    tensors, _ = st.load(weights_path)
    own = model.state_dict()
    missing = [k for k in own if k not in tensors]
    if missing:
        raise KeyError("%s: missing %d tensors, e.g. %s" % (weights_path, len(missing), missing[:3]))
    sd = {k: torch.from_numpy(np.ascontiguousarray(tensors[k], dtype=np.float32)) for k in own}
    model.load_state_dict(sd, strict=True)
    return model
