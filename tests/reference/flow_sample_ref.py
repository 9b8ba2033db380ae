"""flow_sample_ref.py — an independent reference for repro's SD3 / FLUX sampling: diffusers'
FlowMatchEulerDiscreteScheduler (schedule + Euler step) and the denoising loops of
StableDiffusion3Pipeline and FluxPipeline, written here from the diffusers source formulas
around the torch models of sd3_ref.py / flux_ref.py.

Nothing here calls or mirrors the C code (engine/samplers/flow.c, engine/pipeline/pipeline.c): the
schedule is computed the way diffusers computes it (numpy float64 linspace, torch/numpy
float32 shift, float32 timesteps), the loops are the pipelines' loop bodies (torch.cat of
[negative, positive] for SD3's CFG; packed latents, `timestep / 1000` and a guidance tensor
for FLUX), so agreement checks the C formulation against the originals.

API:
    calculate_shift(image_seq_len, base_seq_len=256, max_seq_len=4096, base_shift=0.5, max_shift=1.15)
    sd3_schedule(N, shift=3.0)            -> (sigmas (N+1,) float32 tensor, timesteps (N,) float32 tensor)
    flux_schedule(N, image_seq_len)       -> (sigmas, timesteps, mu)
    euler_step(sample, model_output, sigma, sigma_next) -> prev_sample   (FlowMatchEulerDiscreteScheduler.step)
    sample_sd3(model, latents, prompt_embeds, pooled, neg_embeds, neg_pooled, cfg, sigmas, timesteps)
        -> (final (B, C, h, w), trajectory: list of N+1 (B, C, h, w) tensors)
    sample_flux(model, latents, prompt_embeds, pooled, guidance, sigmas, timesteps)
        -> (final (B, C, h, w) unpacked, trajectory of N+1 unpacked tensors)
The dtype of the run is the model's and the latents' (float32, or float64 for the yardstick):
the schedule stays the float32 values diffusers stores, held in the run's dtype.
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flux_ref  # noqa: E402

NUM_TRAIN_TIMESTEPS = 1000


def calculate_shift(image_seq_len, base_seq_len=256, max_seq_len=4096, base_shift=0.5, max_shift=1.15):
    """diffusers.pipelines.flux.pipeline_flux.calculate_shift."""
    m = (max_shift - base_shift) / (max_seq_len - base_seq_len)
    b = base_shift - m * base_seq_len
    mu = image_seq_len * m + b
    return mu


def _finish(sigmas32):
    """set_timesteps' tail: float32 sigmas tensor, timesteps = sigmas * 1000, a final 0 appended."""
    sigmas = torch.from_numpy(np.asarray(sigmas32)).to(dtype=torch.float32)
    timesteps = sigmas * NUM_TRAIN_TIMESTEPS
    sigmas = torch.cat([sigmas, torch.zeros(1, dtype=torch.float32)])
    return sigmas, timesteps


def sd3_schedule(N, shift=3.0):
    """FlowMatchEulerDiscreteScheduler(shift=shift) (SD3's scheduler_config), set_timesteps(N)."""
    # __init__: the training table in torch float32, shifted once
    ts = np.linspace(1, NUM_TRAIN_TIMESTEPS, NUM_TRAIN_TIMESTEPS, dtype=np.float32)[::-1].copy()
    s = torch.from_numpy(ts).to(dtype=torch.float32) / NUM_TRAIN_TIMESTEPS
    s = shift * s / (1 + (shift - 1) * s)
    sigma_max, sigma_min = s[0].item(), s[-1].item()
    # set_timesteps: numpy float64 linspace over _sigma_to_t(...) = sigma * 1000, shifted again
    t = np.linspace(sigma_max * NUM_TRAIN_TIMESTEPS, sigma_min * NUM_TRAIN_TIMESTEPS, N)
    sig = t / NUM_TRAIN_TIMESTEPS
    sig = shift * sig / (1 + (shift - 1) * sig)
    return _finish(sig.astype(np.float32))


def flux_schedule(N, image_seq_len):
    """FluxPipeline: sigmas = linspace(1, 1/N, N) passed to set_timesteps(sigmas=..., mu=...) of the
    dynamic-shifting scheduler, which casts them to float32 and applies
    time_shift(mu, 1.0, s) = exp(mu) / (exp(mu) + (1 / s - 1) ** 1.0) in numpy float32."""
    mu = calculate_shift(image_seq_len)
    sig = np.array(np.linspace(1.0, 1 / N, N)).astype(np.float32)
    sig = math.exp(mu) / (math.exp(mu) + (1 / sig - 1) ** 1.0)
    assert sig.dtype == np.float32
    sigmas, timesteps = _finish(sig)
    return sigmas, timesteps, mu


def euler_step(sample, model_output, sigma, sigma_next):
    """FlowMatchEulerDiscreteScheduler.step (no stochastic options): prev = sample + (s' - s) v, the
    difference a 0-dim tensor of the schedule, then a multiply and an add."""
    return sample + (sigma_next - sigma) * model_output


def sample_sd3(model, latents, prompt_embeds, pooled, neg_embeds, neg_pooled, cfg, sigmas, timesteps):
    """StableDiffusion3Pipeline's denoising loop (no skip-layer guidance, no callbacks)."""
    dt = latents.dtype
    sig, ts = sigmas.to(dt), timesteps.to(dt)
    do_cfg = cfg > 1
    if do_cfg:
        prompt_embeds = torch.cat([neg_embeds, prompt_embeds], dim=0)
        pooled = torch.cat([neg_pooled, pooled], dim=0)
    traj = [latents.clone()]
    for i in range(len(ts)):
        t = ts[i]
        x_in = torch.cat([latents] * 2) if do_cfg else latents
        timestep = t.expand(x_in.shape[0])
        with torch.no_grad():
            noise_pred = model(x_in, prompt_embeds, pooled, timestep)
        if do_cfg:
            noise_pred_uncond, noise_pred_text = noise_pred.chunk(2)
            noise_pred = noise_pred_uncond + cfg * (noise_pred_text - noise_pred_uncond)
        latents = euler_step(latents, noise_pred, sig[i], sig[i + 1])
        traj.append(latents.clone())
    return latents, traj


def sample_flux(model, latents, prompt_embeds, pooled, guidance, sigmas, timesteps):
    """FluxPipeline's denoising loop on packed latents (no true CFG), unpacked at the end;
    latents (B, C, h, w) is the pipeline's noise before _pack_latents."""
    dt = latents.dtype
    sig, ts = sigmas.to(dt), timesteps.to(dt)
    B, C, h, w = latents.shape
    x = flux_ref.pack_latents(latents)
    img_ids = flux_ref.prepare_latent_image_ids(h // 2, w // 2).to(dt)
    txt_ids = torch.zeros(prompt_embeds.shape[1], 3, dtype=dt)
    g = torch.full([1], guidance, dtype=torch.float32).expand(B)  # float32, as the pipeline makes it
    traj = [latents.clone()]
    for i in range(len(ts)):
        t = ts[i]
        timestep = t.expand(B).to(x.dtype)
        with torch.no_grad():
            noise_pred = model(x, prompt_embeds, pooled, timestep / 1000, img_ids, txt_ids, g.to(dt))
        x = euler_step(x, noise_pred, sig[i], sig[i + 1])
        traj.append(flux_ref.unpack_latents(x, h, w))
    return flux_ref.unpack_latents(x, h, w), traj
