"""sample_ref.py — an independent reference for repro's sampling: the DiT schedule and
its respacing (numpy float64, as facebookresearch/DiT gaussian_diffusion.py + respace.py),
DDIM / DDPM / DPM-Solver++(2M) / Euler ancestral in torch, classifier-free guidance
around the torch DiT of dit_ref.py, and repro's counter-based noise (Philox4x32-10 +
Box-Muller) re-implemented in numpy from its specification in engine/rng.h.

Nothing here is shared with or derived from the C code: the samplers are written the
way their upstreams write them (DiT's p_sample / ddim_sample with float32 coefficient
tensors, k-diffusion's sample_dpmpp_2m / sample_euler_ancestral), so agreement checks
the C formulation against the originals, not against itself.

API:
    philox4x32_10(ctr (n,4) uint32, key (2,) uint32) -> (n,4) uint32
    randn(n, seed, index, stream) -> (n,) float32     as rp_randn
    Schedule(steps)       .timesteps (N,) int, .alphas_cumprod (N,) f64, ... (ascending)
    space_timesteps(T, N) -> sorted list of kept training timesteps
    guided_model(model, y, cfg) -> f(x, t) -> model output (B, Cout, S, S), CFG on all Cin channels
    sample(model_fn, x_T, sched, sampler, noise_fn, eta, learn_sigma=True)
        -> (x_0, trajectory list of N+1 tensors (VP latents), timesteps in sampling order)
        noise_fn(k) -> (B, C, S, S) tensor: ancestral noise of loop step k (k = 0 first)
    item_noise(seeds, indices, shape, stream) -> np (B, *shape) float32
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

STREAM_INIT_NOISE = 0
STREAM_STEP_NOISE_BASE = 16

# ---- Philox4x32-10 (Salmon et al., SC'11; Random123's philox4x32) ----------------------

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF


def philox4x32_10(ctr, key):
    """ctr (n, 4) uint32, key (2,) ints -> (n, 4) uint32: ten rounds of
    (c0, c1, c2, c3) -> (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)),
    the key bumped by the Weyl constants between rounds."""
    c = [np.asarray(ctr[:, i], dtype=np.uint64) for i in range(4)]
    k0, k1 = int(key[0]) & _MASK, int(key[1]) & _MASK
    for r in range(10):
        if r:
            k0, k1 = (k0 + _W0) & _MASK, (k1 + _W1) & _MASK
        p0 = np.uint64(_M0) * c[0]
        p1 = np.uint64(_M1) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & np.uint64(_MASK),
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & np.uint64(_MASK)]
    return np.stack(c, axis=1).astype(np.uint32)


# Known answers of philox4x32-10 from Random123's kat_vectors.
PHILOX_KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((_MASK,) * 4, (_MASK,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def check_philox_kat():
    for ctr, key, want in PHILOX_KAT:
        got = philox4x32_10(np.array([ctr], dtype=np.uint32), key)[0]
        assert tuple(int(v) for v in got) == want, "philox KAT failed: %s" % [hex(int(v)) for v in got]


def randn(n, seed, index, stream):
    """(n,) float32 standard normals for (seed, index, stream), per engine/rng.h: element j
    comes from block counter (j // 4, stream, index_lo, index_hi) with key (seed_lo, seed_hi);
    words (w0, w1) and (w2, w3) each give a Box-Muller pair, in double:
    u1 = (w0 + 1) 2^-32, u2 = w1 2^-32, r = sqrt(-2 ln u1), (r cos 2 pi u2, r sin 2 pi u2)."""
    nb = (n + 3) // 4
    ctr = np.zeros((nb, 4), dtype=np.uint32)
    ctr[:, 0] = np.arange(nb, dtype=np.uint64).astype(np.uint32)
    ctr[:, 1] = stream & _MASK
    ctr[:, 2] = index & _MASK
    ctr[:, 3] = (index >> 32) & _MASK
    w = philox4x32_10(ctr, (seed & _MASK, (seed >> 32) & _MASK)).astype(np.float64)
    out = np.empty((nb, 4), dtype=np.float64)
    for a, b in ((0, 1), (2, 3)):
        u1 = (w[:, a] + 1.0) * 2.0 ** -32
        u2 = w[:, b] * 2.0 ** -32
        r = np.sqrt(-2.0 * np.log(u1))
        out[:, a] = r * np.cos(2.0 * math.pi * u2)
        out[:, b] = r * np.sin(2.0 * math.pi * u2)
    return out.reshape(-1)[:n].astype(np.float32)


def item_noise(seeds, indices, shape, stream):
    """np (B, *shape) float32: item b's noise keyed by (seeds[b], indices[b], stream)."""
    n = int(np.prod(shape))
    return np.stack([randn(n, s, i, stream).reshape(shape) for s, i in zip(seeds, indices)])


# ---- schedule (numpy float64, as DiT) ------------------------------------------------------

def space_timesteps(num_timesteps, n):
    """DiT/ADM respace.space_timesteps(num_timesteps, str(n)) for a single section."""
    frac_stride = 1 if n <= 1 else (num_timesteps - 1) / (n - 1)
    cur, taken = 0.0, []
    for _ in range(n):
        taken.append(round(cur))  # Python round: half to even
        cur += frac_stride
    return sorted(set(taken))


class Schedule:
    """DiT's linear 1000-step betas respaced to `steps`, every per-step array DiT's
    GaussianDiffusion derives from the respaced betas (ascending time)."""

    def __init__(self, steps, train_steps=1000):
        scale = 1000 / train_steps
        betas = np.linspace(scale * 0.0001, scale * 0.02, train_steps, dtype=np.float64)
        abar_train = np.cumprod(1.0 - betas, axis=0)
        use = set(space_timesteps(train_steps, steps))
        last, new_betas, tmap = 1.0, [], []
        for i, a in enumerate(abar_train):
            if i in use:
                new_betas.append(1 - a / last)
                last = a
                tmap.append(i)
        b = np.array(new_betas, dtype=np.float64)
        self.steps = len(b)
        self.timesteps = np.array(tmap)
        self.betas = b
        self.alphas_cumprod = np.cumprod(1.0 - b, axis=0)
        self.alphas_cumprod_prev = np.append(1.0, self.alphas_cumprod[:-1])
        self.sqrt_recip_alphas_cumprod = np.sqrt(1.0 / self.alphas_cumprod)
        self.sqrt_recipm1_alphas_cumprod = np.sqrt(1.0 / self.alphas_cumprod - 1)
        self.posterior_variance = b * (1.0 - self.alphas_cumprod_prev) / (1.0 - self.alphas_cumprod)
        self.posterior_log_variance_clipped = (
            np.log(np.append(self.posterior_variance[1], self.posterior_variance[1:]))
            if self.steps > 1 else np.array([]))
        self.posterior_mean_coef1 = b * np.sqrt(self.alphas_cumprod_prev) / (1.0 - self.alphas_cumprod)
        self.posterior_mean_coef2 = ((1.0 - self.alphas_cumprod_prev) * np.sqrt(1.0 - b)
                                     / (1.0 - self.alphas_cumprod))
        self.abar_train = abar_train


def _ext(arr, i, x):
    """DiT's _extract_into_tensor for one timestep: arr[i] as a tensor of x's dtype
    (float32 like upstream for a float32 x), broadcastable to x."""
    return torch.tensor(float(arr[i]), dtype=x.dtype)


# ---- guidance --------------------------------------------------------------------------------

def guided_model(model, y, cfg):
    """f(x (B, C, S, S), t int) -> (B, Cout, S, S): DiT forward_with_cfg applied to all
    Cin channels (repro's documented choice): eps = u + cfg (c - u), rest = the
    conditional rows' remaining channels. cfg <= 1: the conditional pass alone."""
    y = torch.as_tensor(y, dtype=torch.int64)
    B = y.shape[0]
    guided = cfg > 1.0

    def f(x, t):
        if guided:
            xx = torch.cat([x, x], 0)
            yy = torch.cat([y, torch.full_like(y, model.num_classes)], 0)
        else:
            xx, yy = x, y
        tt = torch.full((xx.shape[0],), int(t), dtype=torch.int64)
        with torch.no_grad():
            out = model(xx, tt, yy)
        if not guided:
            return out
        C = model.in_channels
        cond, unc = out[:B], out[B:]
        eps = unc[:, :C] + cfg * (cond[:, :C] - unc[:, :C])
        return torch.cat([eps, cond[:, C:]], dim=1)

    return f


# ---- samplers ----------------------------------------------------------------------------------

def _split(out, C, learn_sigma):
    return (out[:, :C], out[:, C:2 * C]) if learn_sigma else (out, None)


def ddim_step(sched, i, x, out, eta, noise, C, learn_sigma):
    """DiT ddim_sample (clip_denoised=False) at respaced index i."""
    eps_m, _ = _split(out, C, learn_sigma)
    pred_x0 = _ext(sched.sqrt_recip_alphas_cumprod, i, x) * x - _ext(sched.sqrt_recipm1_alphas_cumprod, i, x) * eps_m
    eps = (_ext(sched.sqrt_recip_alphas_cumprod, i, x) * x - pred_x0) / _ext(sched.sqrt_recipm1_alphas_cumprod, i, x)
    a = _ext(sched.alphas_cumprod, i, x)
    ap = _ext(sched.alphas_cumprod_prev, i, x)
    sigma = eta * torch.sqrt((1 - ap) / (1 - a)) * torch.sqrt(1 - a / ap)
    mean = pred_x0 * torch.sqrt(ap) + torch.sqrt(1 - ap - sigma ** 2) * eps
    if i == 0 or eta == 0:
        return mean
    return mean + sigma * noise()


def ddpm_step(sched, i, x, out, noise, C, learn_sigma):
    """DiT p_sample (clip_denoised=False), LEARNED_RANGE variance when learn_sigma
    (FIXED_SMALL otherwise); no noise at i = 0."""
    eps_m, v = _split(out, C, learn_sigma)
    pred_x0 = _ext(sched.sqrt_recip_alphas_cumprod, i, x) * x - _ext(sched.sqrt_recipm1_alphas_cumprod, i, x) * eps_m
    mean = _ext(sched.posterior_mean_coef1, i, x) * pred_x0 + _ext(sched.posterior_mean_coef2, i, x) * x
    if i == 0:
        return mean
    min_log = _ext(sched.posterior_log_variance_clipped, i, x)
    if v is not None:
        max_log = _ext(np.log(sched.betas), i, x)
        frac = (v + 1) / 2
        log_var = frac * max_log + (1 - frac) * min_log
    else:
        log_var = min_log
    return mean + torch.exp(0.5 * log_var) * noise()


def sample(model_fn, x_T, sched, sampler, noise_fn=None, eta=None, learn_sigma=True):
    """Runs `sampler` from x_T (B, C, S, S). Returns (x0, trajectory, timesteps):
    trajectory holds N+1 VP latents (x_T, after each step); for Euler ancestral the
    VE state x_sigma is divided by sqrt(1 + sigma^2) to give the VP view."""
    N, C = sched.steps, x_T.shape[1]
    x = x_T.clone()
    traj, ts = [x.clone()], []
    if sampler in ("ddim", "ddpm"):
        if eta is None:
            eta = 0.0
        for k in range(N):
            i = N - 1 - k
            t = int(sched.timesteps[i])
            ts.append(t)
            out = model_fn(x, t)
            nz = (lambda k=k: noise_fn(k))
            if sampler == "ddim":
                x = ddim_step(sched, i, x, out, eta, nz, C, learn_sigma)
            else:
                x = ddpm_step(sched, i, x, out, nz, C, learn_sigma)
            traj.append(x.clone())
        return x, traj, ts

    # k-diffusion samplers: sigma_i = sqrt((1 - abar_i) / abar_i) over the respaced
    # steps, descending, then 0; the eps model is called at the respaced timestep.
    abar = sched.alphas_cumprod[::-1]
    sig = np.append(np.sqrt((1 - abar) / abar), 0.0)
    tsteps = sched.timesteps[::-1]
    if sampler == "dpmpp-2m":
        # DPM-Solver++(2M) in k-diffusion's VE form (x_ve = x_vp / alpha, t = -log sigma),
        # which is the VP algorithm of Lu et al. with lambda = -log sigma_ve.
        x = x * math.sqrt(1 + sig[0] ** 2)
        old = None
        for k in range(N):
            t = int(tsteps[k])
            ts.append(t)
            c_in = 1 / math.sqrt(sig[k] ** 2 + 1)
            eps = model_fn(x * c_in, t)[:, :C]
            denoised = x - sig[k] * eps
            if sig[k + 1] == 0:
                x = denoised
            else:
                tt, tn = -math.log(sig[k]), -math.log(sig[k + 1])
                h = tn - tt
                if old is None:
                    x = (sig[k + 1] / sig[k]) * x - math.expm1(-h) * denoised
                else:
                    h_last = tt - (-math.log(sig[k - 1]))
                    r = h_last / h
                    dd = (1 + 1 / (2 * r)) * denoised - (1 / (2 * r)) * old
                    x = (sig[k + 1] / sig[k]) * x - math.expm1(-h) * dd
            old = denoised
            traj.append(x / math.sqrt(1 + sig[k + 1] ** 2))
        return x, traj, ts

    if sampler == "euler-a":
        if eta is None:
            eta = 1.0
        # start so that the first model input x * c_in is x_T itself (see samplers.h)
        x = x * math.sqrt(1 + sig[0] ** 2)
        for k in range(N):
            t = int(tsteps[k])
            ts.append(t)
            s_from, s_to = sig[k], sig[k + 1]
            c_in = 1 / math.sqrt(s_from ** 2 + 1)
            eps = model_fn(x * c_in, t)[:, :C]
            denoised = x - s_from * eps
            # k-diffusion get_ancestral_step
            s_up = min(s_to, eta * (s_to ** 2 * (s_from ** 2 - s_to ** 2) / s_from ** 2) ** 0.5) if eta else 0.0
            s_down = (s_to ** 2 - s_up ** 2) ** 0.5
            d = (x - denoised) / s_from
            x = x + d * (s_down - s_from)
            if s_to > 0 and s_up > 0:
                x = x + noise_fn(k) * s_up
            traj.append(x / math.sqrt(1 + s_to ** 2))
        return x, traj, ts
    raise ValueError("unknown sampler %r" % sampler)
