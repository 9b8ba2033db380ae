"""te_ref.py — an independent PyTorch model of repro's byte-level prompt encoder
(engine/models/text_encoder.h), the stand-in for T5 (per-token context) and CLIP
(pooled vector) that the SD3/FLUX pipelines condition on.

It shares no code with the C engine: the tokenizer is Python's str.encode("utf-8"),
the layers are torch modules (nn.Embedding, nn.LayerNorm, nn.Linear), attention is
written out (q k^T * scale, masked_fill of padded keys with -inf, softmax, @ v).
Parameter names are the C model's, so repro's synthetic weights load by name.

API:
    PRESETS                         name -> config dict ("te-tiny", "te-digits", "te-sd3", "te-flux")
    tokenize(prompt, max_len)       -> (tokens list[int] (max_len), mask list[int] (max_len))
    TextEncoder(max_len, hidden, depth, heads, context_dim, pooled_dim, mlp_ratio=4, vocab=259)
        .forward(tokens (B, L) int64, mask (B, L) bool) -> (context (B, L, Cc), pooled (B, Pd))
        .encode(prompts)            tokenizes then forward
    load_te(weights_path, preset)   TextEncoder with weights from a safetensors file, float32, eval
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402

PAD, BOS, EOS, BYTE0, VOCAB = 0, 1, 2, 3, 259

PRESETS = {
    "te-tiny": dict(max_len=32, hidden=64, depth=2, heads=2, context_dim=64, pooled_dim=64),
    "te-digits": dict(max_len=32, hidden=64, depth=2, heads=2, context_dim=64, pooled_dim=64),  # te-tiny, shipped
    "te-sd3": dict(max_len=77, hidden=256, depth=2, heads=4, context_dim=4096, pooled_dim=2048),
    "te-flux": dict(max_len=512, hidden=256, depth=2, heads=4, context_dim=4096, pooled_dim=768),
}


def tokenize(prompt, max_len):
    """bos, UTF-8 bytes (cut to max_len - 2), eos, pads; mask 1 on bos..eos."""
    body = list(prompt.encode("utf-8"))[:max_len - 2]
    toks = [BOS] + [BYTE0 + b for b in body] + [EOS]
    mask = [1] * len(toks) + [0] * (max_len - len(toks))
    toks += [PAD] * (max_len - len(toks))
    return toks, mask


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, key_mask):
        B, L, D = x.shape
        H = self.heads
        Dh = D // H
        qkv = self.qkv(x).reshape(B, L, 3, H, Dh).permute(2, 0, 3, 1, 4)  # (3, B, H, L, Dh)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = (q @ k.transpose(-2, -1)) * (Dh ** -0.5)  # (B, H, L, L)
        scores = scores.masked_fill(~key_mask[:, None, None, :], float("-inf"))
        att = scores.softmax(dim=-1) @ v  # (B, H, L, Dh)
        return self.proj(att.transpose(1, 2).reshape(B, L, D))


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class Layer(nn.Module):
    def __init__(self, dim, heads, mlp_ratio):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim, eps=1e-5)
        self.attn = Attention(dim, heads)
        self.ln2 = nn.LayerNorm(dim, eps=1e-5)
        self.mlp = Mlp(dim, mlp_ratio * dim)

    def forward(self, x, key_mask):
        x = x + self.attn(self.ln1(x), key_mask)
        return x + self.mlp(self.ln2(x))


class TextEncoder(nn.Module):
    def __init__(self, max_len, hidden, depth, heads, context_dim, pooled_dim, mlp_ratio=4, vocab=VOCAB):
        super().__init__()
        self.max_len = max_len
        self.token_embedding = nn.Embedding(vocab, hidden)
        self.position_embedding = nn.Embedding(max_len, hidden)
        self.layers = nn.ModuleList([Layer(hidden, heads, mlp_ratio) for _ in range(depth)])
        self.final_ln = nn.LayerNorm(hidden, eps=1e-5)
        self.proj_context = nn.Linear(hidden, context_dim)
        self.proj_pooled = nn.Linear(hidden, pooled_dim)

    def forward(self, tokens, mask):
        B, L = tokens.shape
        pos = torch.arange(L, device=tokens.device)
        x = self.token_embedding(tokens) + self.position_embedding(pos)[None]
        for layer in self.layers:
            x = layer(x, mask)
        h = self.final_ln(x)
        context = self.proj_context(h) * mask[..., None].to(h.dtype)  # pad rows -> exactly 0
        eos = mask.long().sum(dim=1) - 1  # the eos is the last real token
        pooled = self.proj_pooled(h[torch.arange(B, device=h.device), eos])
        return context, pooled

    def encode(self, prompts):
        tm = [tokenize(p, self.max_len) for p in prompts]
        tokens = torch.tensor([t for t, _ in tm], dtype=torch.int64)
        mask = torch.tensor([m for _, m in tm], dtype=torch.bool)
        return self.forward(tokens, mask)


def load_te(weights_path, preset):
    cfg = PRESETS[preset] if isinstance(preset, str) else dict(preset)
    model = TextEncoder(**cfg)
    tensors, _ = st.load(weights_path)
    prefix = "text_encoder."
    sd = {k[len(prefix):]: torch.from_numpy(np.asarray(v, dtype=np.float32))
          for k, v in tensors.items() if k.startswith(prefix)}
    model.load_state_dict(sd, strict=True)  # raises naming any missing or extra tensor
    return model.float().eval()


if __name__ == "__main__":  # smoke: random init, a few prompts
    torch.manual_seed(0)
    m = TextEncoder(**PRESETS["te-tiny"]).eval()
    with torch.no_grad():
        c, p = m.encode(["", "a cat", "naïve"])
    print(c.shape, p.shape, float(c.abs().max()), math.isfinite(float(p.sum())))
