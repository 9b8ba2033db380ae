"""Independent PyTorch reference of diffusers' AutoencoderKL decoder.

Written from diffusers' module structure (Decoder, UNetMidBlock2D,
UpDecoderBlock2D, ResnetBlock2D, Attention with group_norm, Upsample2D), with
the same module names so a diffusers state_dict (or repro's synthetic weights)
loads by name with strict=True. It never calls the C code: the parity test
compares the two.

    decode(z) = decoder(post_quant_conv(z / scaling_factor + shift_factor))
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

EPS = 1e-6

# Mirrors engine/vae/vae.c's presets (kept separate on purpose).
PRESETS = {
    "vae-tiny": dict(latent_channels=4, block_out=(32, 32, 64, 64), layers_per_block=1, groups=8,
                     use_post_quant_conv=True, scaling_factor=0.18215, shift_factor=0.0),
    # trained (tests/reference/train/train_digits.py): two levels, 8x8 -> 16x16; scaling_factor as the
    # training wrote it into the file's metadata (test_vae_parity.py checks the two agree)
    "vae-digits": dict(latent_channels=4, block_out=(16, 32), layers_per_block=1, groups=8,
                       use_post_quant_conv=True, scaling_factor=1.026, shift_factor=0.0),
    "sd-vae": dict(latent_channels=4, block_out=(128, 256, 512, 512), layers_per_block=2, groups=32,
                   use_post_quant_conv=True, scaling_factor=0.18215, shift_factor=0.0),
}


class ResnetBlock2D(nn.Module):
    def __init__(self, cin, cout, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, cin, eps=EPS)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2 = nn.GroupNorm(groups, cout, eps=EPS)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.conv_shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        s = self.conv_shortcut(x) if self.conv_shortcut is not None else x
        return s + h  # output_scale_factor 1


class Attention(nn.Module):
    """Single head over the H*W tokens, dim_head = C, residual connection."""

    def __init__(self, c, groups):
        super().__init__()
        self.group_norm = nn.GroupNorm(groups, c, eps=EPS)
        self.to_q = nn.Linear(c, c)
        self.to_k = nn.Linear(c, c)
        self.to_v = nn.Linear(c, c)
        self.to_out = nn.ModuleList([nn.Linear(c, c), nn.Dropout(0.0)])
        self.scale = c ** -0.5

    def forward(self, x):
        b, c, hh, ww = x.shape
        t = self.group_norm(x).view(b, c, hh * ww).transpose(1, 2)  # (B, T, C)
        q, k, v = self.to_q(t), self.to_k(t), self.to_v(t)
        p = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * self.scale, dim=-1)  # (B, T, T)
        o = self.to_out[1](self.to_out[0](torch.bmm(p, v)))  # (B, T, C)
        return x + o.transpose(1, 2).reshape(b, c, hh, ww)


class UNetMidBlock2D(nn.Module):
    def __init__(self, c, groups):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock2D(c, c, groups), ResnetBlock2D(c, c, groups)])
        self.attentions = nn.ModuleList([Attention(c, groups)])

    def forward(self, x):
        x = self.resnets[0](x)
        x = self.attentions[0](x)
        return self.resnets[1](x)


class Upsample2D(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class UpDecoderBlock2D(nn.Module):
    def __init__(self, cin, cout, n_layers, groups, add_upsample):
        super().__init__()
        self.resnets = nn.ModuleList(
            [ResnetBlock2D(cin if i == 0 else cout, cout, groups) for i in range(n_layers)])
        self.upsamplers = nn.ModuleList([Upsample2D(cout)]) if add_upsample else None

    def forward(self, x):
        for r in self.resnets:
            x = r(x)
        if self.upsamplers is not None:
            x = self.upsamplers[0](x)
        return x


class Decoder(nn.Module):
    def __init__(self, latent_channels, block_out, layers_per_block, groups, out_channels=3):
        super().__init__()
        rev = list(reversed(block_out))
        self.conv_in = nn.Conv2d(latent_channels, rev[0], 3, padding=1)
        self.mid_block = UNetMidBlock2D(rev[0], groups)
        blocks, prev = [], rev[0]
        for i, c in enumerate(rev):
            blocks.append(UpDecoderBlock2D(prev, c, layers_per_block + 1, groups, i < len(rev) - 1))
            prev = c
        self.up_blocks = nn.ModuleList(blocks)
        self.conv_norm_out = nn.GroupNorm(groups, block_out[0], eps=EPS)
        self.conv_out = nn.Conv2d(block_out[0], out_channels, 3, padding=1)

    def forward(self, z):
        x = self.mid_block(self.conv_in(z))
        for b in self.up_blocks:
            x = b(x)
        return self.conv_out(F.silu(self.conv_norm_out(x)))


class AutoencoderKLDecoder(nn.Module):
    """The decode half of diffusers' AutoencoderKL (post_quant_conv + decoder)."""

    def __init__(self, latent_channels, block_out, layers_per_block, groups, use_post_quant_conv,
                 scaling_factor, shift_factor):
        super().__init__()
        self.scaling_factor, self.shift_factor = scaling_factor, shift_factor
        self.post_quant_conv = nn.Conv2d(latent_channels, latent_channels, 1) if use_post_quant_conv else None
        self.decoder = Decoder(latent_channels, block_out, layers_per_block, groups)

    def forward(self, latents):
        # the pipeline's step: model-space latents -> VAE latents (a division, as diffusers)
        z = latents / self.scaling_factor + self.shift_factor
        if self.post_quant_conv is not None:
            z = self.post_quant_conv(z)
        return self.decoder(z)


def build(preset, state_dict=None, dtype=torch.float32):
    """The decoder for a preset; state_dict (name -> np.ndarray or tensor) loaded strictly by name.
    Extra tensors (e.g. an encoder in a full checkpoint) are dropped first."""
    m = AutoencoderKLDecoder(**PRESETS[preset])
    if state_dict is not None:
        own = set(m.state_dict().keys())
        sd = {k: torch.as_tensor(np.asarray(v)) for k, v in state_dict.items() if k in own}
        m.load_state_dict(sd, strict=True)
    return m.to(dtype).eval()


def to_rgb8(img):
    """img (B, 3, H, W) float32 array -> (B, H, W, 3) uint8, the rule of
    engine/vae/vae.c rp_image_to_rgb8, op for op in float32:
    t = clamp((x + 1) * 0.5, 0, 1) (NaN -> 0); byte = round half away from zero of t * 255."""
    x = np.asarray(img, dtype=np.float32)
    t = (x + np.float32(1.0)) * np.float32(0.5)
    t = np.nan_to_num(t, nan=0.0)
    t = np.minimum(np.maximum(t, np.float32(0.0)), np.float32(1.0)).astype(np.float32)
    s = (t * np.float32(255.0)).astype(np.float32)
    b = np.floor(s.astype(np.float64) + 0.5)  # exact in float64; s >= 0
    return b.astype(np.uint8).transpose(0, 2, 3, 1).copy()


def boundary_distance(img):
    """Distance (in x units) of each float value to the nearest rounding boundary
    of to_rgb8, i.e. to x where t * 255 is k + 0.5. Same shape as img."""
    x = np.asarray(img, dtype=np.float64)
    s = np.clip((x + 1.0) * 0.5, 0.0, 1.0) * 255.0
    d = np.abs(s - (np.floor(s) + 0.5))
    return d * 2.0 / 255.0


def decode_np(preset, state_dict, latents, dtype=torch.float32):
    m = build(preset, state_dict, dtype)
    with torch.no_grad():
        return m(torch.as_tensor(np.asarray(latents)).to(dtype)).numpy()


__all__ = ["PRESETS", "build", "decode_np", "to_rgb8", "boundary_distance"]
