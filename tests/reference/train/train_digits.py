"""train_digits.py — trains the "digits" family that repro ships in engine/models/digits/:

    vae-digits.safetensors  a small AutoencoderKL (diffusers names; encoder + decoder,
                            repro runs the decoder): 16x16 RGB <-> 4x8x8 latents
    dit-digits.safetensors  a class-conditional DiT (facebookresearch/DiT names; DDPM
                            epsilon objective with the learned-sigma VLB term, as upstream,
                            the eps term weighted by Min-SNR-5: see MIN_SNR)
    sd3-digits.safetensors  a text-conditional MMDiT (diffusers SD3Transformer2DModel
                            names; rectified flow as diffusers' SD3 training scripts)
    te-digits.safetensors   the prompt encoder the MMDiT is conditioned on: repro's te-tiny
                            synthetic weights (seed 0), frozen and shipped, so the MMDiT's
                            conditioning never depends on a run's --weight-seed

Data: tests/reference/train/digits_data.py (the digit glyphs of fonts-dejavu-core, jittered).
The models are the reference PyTorch modules repro's parity tests check the C engine
against (tests/reference/{dit,sd3,vae,te}_ref.py), so "the training code's forward" is
the parity yardstick; only the VAE encoder (training-only) is defined here.

Deterministic: fixed seeds, torch.use_deterministic_algorithms, one thread per process
(the VAE first, then the DiT and the MMDiT as two processes side by side); a rerun on the
same machine and torch build writes the same bytes (checked at full scale against the
shipped files; another CPU or BLAS may round differently, so the bytes may differ there).
Measured on the 2-core Xeon, quiet, a full run: 903 s wall, 1396 CPU-s, and the four files
byte for byte the shipped ones (README, "A trained family").

Usage: /usr/bin/python3 tests/reference/train/train_digits.py --repro build/repro [--out engine/models/digits]
       [--scale 1.0]   (multiplies the step counts; < 1 for a quick smoke run)
Prints the wall and CPU time of each stage and in total.
"""
import argparse
import math
import os
import resource
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # tests/reference/train -> the repository
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import digits_data  # noqa: E402
import dit_ref  # noqa: E402
import sd3_ref  # noqa: E402
import st  # noqa: E402
import te_ref  # noqa: E402
import vae_ref  # noqa: E402

# ---- the family's shapes (engine presets: dit-digits, sd3-digits, vae-digits, te-digits) ----
# (the reference modules' presets, which the parity tests compare with engine/'s)
VAE_CFG = {k: v for k, v in vae_ref.PRESETS["vae-digits"].items() if k != "scaling_factor"}
DIT_CFG = dict(dit_ref.PRESETS["dit-digits"])
SD3_CFG = dict(sd3_ref.PRESETS["sd3-digits"])
SD3_SHIFT = 3.0  # repro's SD3 sampler shift (engine/samplers/flow.h), also the training shift
# DiT's eps loss weight min(SNR, 5) / SNR: with w = 1 (upstream) the 8x8 latents' low-noise
# steps, whose eps error is mostly the posterior sample's own unpredictable noise, outweighed
# the high-noise steps that decide the digit 450:1 in the gradient, and 3000 steps of batch 64
# drew the requested digit in only 44 of 100 seeds (rectified flow weights those steps up by
# construction: the MMDiT drew 100 of 100). The objective stays the eps MSE + learned-sigma VB.
MIN_SNR = 5.0


# ---- the VAE encoder (diffusers Encoder, DownEncoderBlock2D; training only) -----------------

class Downsample2D(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, stride=2, padding=0)

    def forward(self, x):
        return self.conv(F.pad(x, (0, 1, 0, 1)))  # diffusers' asymmetric pad


class DownEncoderBlock2D(nn.Module):
    def __init__(self, cin, cout, n_layers, groups, add_downsample):
        super().__init__()
        self.resnets = nn.ModuleList([vae_ref.ResnetBlock2D(cin if i == 0 else cout, cout, groups)
                                      for i in range(n_layers)])
        self.downsamplers = nn.ModuleList([Downsample2D(cout)]) if add_downsample else None

    def forward(self, x):
        for r in self.resnets:
            x = r(x)
        return self.downsamplers[0](x) if self.downsamplers is not None else x


class Encoder(nn.Module):
    def __init__(self, latent_channels, block_out, layers_per_block, groups):
        super().__init__()
        self.conv_in = nn.Conv2d(3, block_out[0], 3, padding=1)
        blocks, prev = [], block_out[0]
        for i, c in enumerate(block_out):
            blocks.append(DownEncoderBlock2D(prev, c, layers_per_block, groups, i < len(block_out) - 1))
            prev = c
        self.down_blocks = nn.ModuleList(blocks)
        self.mid_block = vae_ref.UNetMidBlock2D(block_out[-1], groups)
        self.conv_norm_out = nn.GroupNorm(groups, block_out[-1], eps=vae_ref.EPS)
        self.conv_out = nn.Conv2d(block_out[-1], 2 * latent_channels, 3, padding=1)

    def forward(self, x):
        x = self.conv_in(x)
        for b in self.down_blocks:
            x = b(x)
        return self.conv_out(F.silu(self.conv_norm_out(self.mid_block(x))))


class AutoencoderKL(nn.Module):
    """encoder + quant_conv + post_quant_conv + decoder under diffusers' names."""

    def __init__(self, latent_channels, block_out, layers_per_block, groups, **_):
        super().__init__()
        self.encoder = Encoder(latent_channels, block_out, layers_per_block, groups)
        self.quant_conv = nn.Conv2d(2 * latent_channels, 2 * latent_channels, 1)
        self.post_quant_conv = nn.Conv2d(latent_channels, latent_channels, 1)
        self.decoder = vae_ref.Decoder(latent_channels, block_out, layers_per_block, groups)

    def encode(self, x):  # -> (mean, logvar) (B, Cl, h, w)
        mean, logvar = self.quant_conv(self.encoder(x)).chunk(2, dim=1)
        return mean, logvar.clamp(-30.0, 20.0)

    def decode(self, z):
        return self.decoder(self.post_quant_conv(z))


def to_rgb(x01):
    """(N, 16, 16) in [0, 1] -> (N, 3, 16, 16) in [-1, 1] (grey, as RGB)."""
    x = torch.from_numpy(x01 * 2.0 - 1.0)[:, None]
    return x.expand(-1, 3, -1, -1).contiguous()


def train_vae(images, steps, log):
    torch.manual_seed(1)
    vae = AutoencoderKL(**VAE_CFG)
    opt = torch.optim.Adam(vae.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps, pct_start=0.1)
    g = torch.Generator().manual_seed(11)
    N = images.shape[0]
    for it in range(steps):
        idx = torch.randint(0, N, (64,), generator=g)
        x = images[idx]
        mean, logvar = vae.encode(x)
        z = mean + torch.exp(0.5 * logvar) * torch.randn(mean.shape, generator=g)
        rec = vae.decode(z)
        mse = F.mse_loss(rec, x)
        kl = 0.5 * (mean ** 2 + logvar.exp() - 1.0 - logvar).mean()
        loss = mse + 1e-2 * kl  # strong enough that the decoder tolerates latent noise
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if it % 200 == 0 or it == steps - 1:
            log("vae %5d/%d  mse %.5f  kl %.3f" % (it, steps, float(mse), float(kl)))
    return vae.eval()


# ---- DDPM with learned sigma (facebookresearch/DiT diffusion/gaussian_diffusion.py) --------

class Diffusion:
    def __init__(self, T=1000):
        b = np.linspace(1e-4, 0.02, T, dtype=np.float64)  # DiT's "linear" schedule
        a = np.cumprod(1.0 - b)
        ap = np.append(1.0, a[:-1])
        pv = b * (1.0 - ap) / (1.0 - a)
        t64 = lambda v: torch.from_numpy(np.asarray(v, dtype=np.float64))  # noqa: E731
        self.T = T
        self.sqrt_a, self.sqrt_1ma = t64(np.sqrt(a)), t64(np.sqrt(1.0 - a))
        self.snr = t64(a / (1.0 - a))
        self.sqrt_recip_a, self.sqrt_recipm1_a = t64(np.sqrt(1.0 / a)), t64(np.sqrt(1.0 / a - 1))
        self.post_logvar = t64(np.log(np.append(pv[1], pv[1:])))
        self.log_betas = t64(np.log(b))
        self.coef1 = t64(b * np.sqrt(ap) / (1.0 - a))
        self.coef2 = t64((1.0 - ap) * np.sqrt(1.0 - b) / (1.0 - a))

    @staticmethod
    def _at(v, t):
        return v[t].float()[:, None, None, None]

    def q_sample(self, x0, t, noise):
        return self._at(self.sqrt_a, t) * x0 + self._at(self.sqrt_1ma, t) * noise

    def posterior(self, x0, xt, t):
        return self._at(self.coef1, t) * x0 + self._at(self.coef2, t) * xt, self._at(self.post_logvar, t)

    def losses(self, model_out, x0, xt, t, noise, min_snr=MIN_SNR):
        """w(t) mse(eps) + vb (KL to the true posterior, decoder NLL at t = 0) with the mean frozen;
        w(t) = min(SNR(t), min_snr) / SNR(t) (Min-SNR-gamma, Hang et al. 2023; upstream DiT: w = 1).
        Returns (loss, the unweighted mse)."""
        C = x0.shape[1]
        eps, v = model_out[:, :C], model_out[:, C:]
        mse = ((eps - noise) ** 2).mean(dim=(1, 2, 3))
        snr = self.snr[t].float()
        w = torch.clamp(snr, max=min_snr) / snr
        x0_hat = self._at(self.sqrt_recip_a, t) * xt - self._at(self.sqrt_recipm1_a, t) * eps.detach()
        mean, _ = self.posterior(x0_hat, xt, t)
        frac = (v + 1) / 2
        logvar = frac * self._at(self.log_betas, t) + (1 - frac) * self._at(self.post_logvar, t)
        tmean, tlogvar = self.posterior(x0, xt, t)
        kl = 0.5 * (-1.0 + logvar - tlogvar + torch.exp(tlogvar - logvar) + (tmean - mean) ** 2 * torch.exp(-logvar))
        kl = kl.mean(dim=(1, 2, 3)) / math.log(2.0)
        nll = -_discretized_gaussian_loglik(x0, mean, 0.5 * logvar).mean(dim=(1, 2, 3)) / math.log(2.0)
        vb = torch.where(t == 0, nll, kl)
        return (w * mse + vb).mean(), mse.mean()


def _approx_std_normal_cdf(x):
    return 0.5 * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _discretized_gaussian_loglik(x, means, log_scales):
    cx = x - means
    inv = torch.exp(-log_scales)
    cdf_plus = _approx_std_normal_cdf(inv * (cx + 1.0 / 255.0))
    cdf_min = _approx_std_normal_cdf(inv * (cx - 1.0 / 255.0))
    log_cdf_plus = torch.log(cdf_plus.clamp(min=1e-12))
    log_1m_cdf_min = torch.log((1.0 - cdf_min).clamp(min=1e-12))
    delta = cdf_plus - cdf_min
    return torch.where(x < -0.999, log_cdf_plus,
                       torch.where(x > 0.999, log_1m_cdf_min, torch.log(delta.clamp(min=1e-12))))


def zero_adaln_dit(m):
    """DiT's initialize_weights: xavier linears, zeroed adaLN modulation and output layer."""
    for mod in m.modules():
        if isinstance(mod, nn.Linear):
            nn.init.xavier_uniform_(mod.weight)
            nn.init.zeros_(mod.bias)
    nn.init.normal_(m.y_embedder.embedding_table.weight, std=0.02)
    nn.init.normal_(m.t_embedder.mlp[0].weight, std=0.02)
    nn.init.normal_(m.t_embedder.mlp[2].weight, std=0.02)
    for b in m.blocks:
        nn.init.zeros_(b.adaLN_modulation[-1].weight)
        nn.init.zeros_(b.adaLN_modulation[-1].bias)
    for p in (m.final_layer.adaLN_modulation[-1].weight, m.final_layer.adaLN_modulation[-1].bias,
              m.final_layer.linear.weight, m.final_layer.linear.bias):
        nn.init.zeros_(p)


class Ema:
    def __init__(self, model, decay):
        self.decay = decay
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}

    @torch.no_grad()
    def update(self, model):
        for k, v in model.state_dict().items():
            if v.dtype.is_floating_point:
                self.shadow[k].mul_(self.decay).add_(v.detach(), alpha=1.0 - self.decay)

    def copy_to(self, model):
        model.load_state_dict(self.shadow)


def latent_batch(lat_mean, lat_std, idx, g):
    m, s = lat_mean[idx], lat_std[idx]
    return m + s * torch.randn(m.shape, generator=g)


def train_dit(lat_mean, lat_std, labels, steps, log):
    torch.manual_seed(2)
    m = dit_ref.DiT(**DIT_CFG)
    zero_adaln_dit(m)
    m.train()
    ema = Ema(m, 0.995)
    diff = Diffusion()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-3, total_steps=steps, pct_start=0.05)
    g = torch.Generator().manual_seed(12)
    N = lat_mean.shape[0]
    for it in range(steps):
        idx = torch.randint(0, N, (128,), generator=g)
        x0 = latent_batch(lat_mean, lat_std, idx, g)
        y = labels[idx].clone()
        y[torch.rand(y.shape, generator=g) < 0.1] = DIT_CFG["num_classes"]  # class dropout (null class)
        t = torch.randint(0, diff.T, (x0.shape[0],), generator=g)
        noise = torch.randn(x0.shape, generator=g)
        xt = diff.q_sample(x0, t, noise)
        loss, mse = diff.losses(m(xt, t, y), x0, xt, t, noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sched.step()
        ema.update(m)
        if it % 200 == 0 or it == steps - 1:
            log("dit %5d/%d  loss %.4f  mse %.4f" % (it, steps, float(loss), float(mse)))
    ema.copy_to(m)
    return m.eval()


# ---- rectified flow for the MMDiT (diffusers train_dreambooth_sd3.py) ----------------------

def zero_adaln_sd3(m):
    for b in m.transformer_blocks:
        for lin in (b.norm1.linear, b.norm1_context.linear):
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)
    for p in (m.norm_out.linear.weight, m.norm_out.linear.bias, m.proj_out.weight, m.proj_out.bias):
        nn.init.zeros_(p)


def train_sd3(lat_mean, lat_std, labels, ctx, pooled, steps, log):
    """ctx (11, L, 64), pooled (11, 64): rows 0..9 the digits' prompts, row 10 the "" prompt."""
    torch.manual_seed(3)
    m = sd3_ref.SD3Transformer2DModel(**SD3_CFG)
    D = SD3_CFG["num_attention_heads"] * SD3_CFG["attention_head_dim"]
    M, base = SD3_CFG["pos_embed_max_size"], SD3_CFG["sample_size"] // SD3_CFG["patch_size"]
    pe = sd3_ref.get_2d_sincos_pos_embed(D, M, base_size=base)  # what diffusers' constructor builds
    m.pos_embed.pos_embed.copy_(torch.from_numpy(pe).float()[None])
    zero_adaln_sd3(m)
    m.train()
    ema = Ema(m, 0.995)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-3, total_steps=steps, pct_start=0.05)
    g = torch.Generator().manual_seed(13)
    N = lat_mean.shape[0]
    for it in range(steps):
        idx = torch.randint(0, N, (64,), generator=g)
        x0 = latent_batch(lat_mean, lat_std, idx, g)
        row = labels[idx].clone()
        row[torch.rand(row.shape, generator=g) < 0.1] = 10  # caption dropout -> ""
        # logit-normal u, then the scheduler's shifted sigma (timesteps[u * 1000] of a shift-3 scheduler)
        u = torch.sigmoid(torch.randn(x0.shape[0], generator=g))
        s = SD3_SHIFT * u / (1.0 + (SD3_SHIFT - 1.0) * u)
        noise = torch.randn(x0.shape, generator=g)
        xt = (1.0 - s)[:, None, None, None] * x0 + s[:, None, None, None] * noise
        v = m(xt, ctx[row], pooled[row], s * 1000.0)
        loss = F.mse_loss(v, noise - x0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sched.step()
        ema.update(m)
        if it % 200 == 0 or it == steps - 1:
            log("sd3 %5d/%d  loss %.4f" % (it, steps, float(loss)))
    ema.copy_to(m)
    return m.eval()


def state_np(model, prefix=""):
    return {prefix + k: v.detach().float().numpy().copy() for k, v in model.state_dict().items()}


def load_vae(out_dir):
    """The trained VAE from out_dir and its scaling_factor (from the file's metadata)."""
    t, meta = st.load(os.path.join(out_dir, "vae-digits.safetensors"))
    vae = AutoencoderKL(**VAE_CFG)
    vae.load_state_dict({k: torch.from_numpy(v) for k, v in t.items()})
    return vae.eval(), float(meta["scaling_factor"])


def training_latents(out_dir, images):
    """Posterior mean and std of every training image, in model space (x scaling_factor)."""
    vae, scaling = load_vae(out_dir)
    with torch.no_grad():
        mean, logvar = vae.encode(images)
    return mean * scaling, torch.exp(0.5 * logvar) * scaling


def stage_vae(args, images, log):
    vae = train_vae(images, args.steps(1000), log)
    g = torch.Generator().manual_seed(14)
    with torch.no_grad():
        mean, logvar = vae.encode(images)
        rec = vae.decode(mean)
        z = mean + torch.exp(0.5 * logvar) * torch.randn(mean.shape, generator=g)
    # as for SD's VAE: 1 / the std of posterior samples, so the diffusion sees unit variance
    scaling = float("%.4g" % (1.0 / float(z.std())))
    log("vae: recon mse %.5f; latent means' std %.4f, posterior std (mean) %.4f, samples' std %.4f -> "
        "scaling_factor %s" % (float(F.mse_loss(rec, images)), float(mean.std()),
                               float(torch.exp(0.5 * logvar).mean()), float(z.std()), scaling))
    st.save(os.path.join(args.out, "vae-digits.safetensors"), state_np(vae),
            {"repro.model": "vae-digits", "scaling_factor": scaling})


def stage_dit(args, images, labels, log):
    lat_mean, lat_std = training_latents(args.out, images)
    dit = train_dit(lat_mean, lat_std, labels, args.steps(7000), log)
    st.save(os.path.join(args.out, "dit-digits.safetensors"), state_np(dit), {"repro.model": "dit-digits"})


def stage_sd3(args, images, labels, log):
    lat_mean, lat_std = training_latents(args.out, images)
    # the prompt encoder: te-tiny's synthetic weights at seed 0, re-labelled te-digits
    tmp = os.path.join(args.out, ".te-tiny.tmp.safetensors")
    subprocess.run([args.repro, "weights", "--model", "te-tiny", "--weight-seed", "0", "--out", tmp], check=True,
                   stdout=subprocess.DEVNULL)
    te_t, _ = st.load(tmp)
    os.remove(tmp)
    te_path = os.path.join(args.out, "te-digits.safetensors")
    st.save(te_path, te_t, {"repro.model": "te-digits"})
    te = te_ref.load_te(te_path, "te-digits")
    with torch.no_grad():
        ctx, pooled = te.encode([digits_data.prompt(k) for k in range(10)] + [""])
    sd3 = train_sd3(lat_mean, lat_std, labels, ctx, pooled, args.steps(3000), log)
    st.save(os.path.join(args.out, "sd3-digits.safetensors"), state_np(sd3), {"repro.model": "sd3-digits"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repro", required=True, help="repro binary (writes te-tiny's synthetic weights)")
    ap.add_argument("--out", default=os.path.join(ROOT, "engine", "models", "digits"))
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every stage's step count")
    ap.add_argument("--stage", choices=("all", "vae", "dit", "sd3"), default="all",
                    help="all: vae, then dit and sd3 as two processes side by side (one core each)")
    args = ap.parse_args()
    args.steps = lambda n: max(1, int(round(n * args.scale)))
    # One thread per process: on a shared 2-core machine two OpenMP threads of one process
    # spin-wait for each other (a 3x3 conv measured 5x slower with 2 than with 1); the two
    # denoisers train side by side instead. The thread count is part of what makes a rerun
    # bitwise the same.
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out, exist_ok=True)
    t_all = time.time()

    def log(msg):
        print("[%7.1fs] %s%s" % (time.time() - t_all, "" if args.stage == "all" else args.stage + ": ", msg),
              flush=True)

    images01, labels_np = digits_data.render(800, seed=0)
    images, labels = to_rgb(images01), torch.from_numpy(labels_np)
    if args.stage == "all":
        log("data: %d glyph images of %dx%d" % images01.shape)
    if args.stage in ("all", "vae"):
        stage_vae(args, images, log)
        log("vae done")
    if args.stage == "dit":
        stage_dit(args, images, labels, log)
    if args.stage == "sd3":
        stage_sd3(args, images, labels, log)
    if args.stage == "all":
        base = [sys.executable, os.path.abspath(__file__), "--repro", args.repro, "--out", args.out,
                "--scale", str(args.scale)]
        procs = [subprocess.Popen(base + ["--stage", s]) for s in ("dit", "sd3")]
        rcs = [p.wait() for p in procs]
        if any(rcs):
            log("a stage failed: exit codes %s" % rcs)
            return 1
    cpu = time.process_time() + (resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
                                 if args.stage == "all" else 0.0)
    log("%s done: %.0f s wall, %.0f s CPU" % (args.stage, time.time() - t_all, cpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
