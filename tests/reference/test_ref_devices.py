"""test_ref_devices.py — every reference model's forward builds its tensors on its inputs'
device (no GPU needed).

Each model (dit_ref, flux_ref, sd3_ref, te_ref, vae_ref; tiny presets) and its inputs go to
torch's "meta" device, which has shapes but no data, and one forward runs. Any tensor a
forward creates on the CPU (a torch.arange / torch.ones without device=) then meets a meta
tensor and torch raises "Expected all tensors to be on the same device": exactly the error
a CUDA run hits (bench/torch_dit.py crashed in dit_ref's timestep embedding that way).
The output shape is checked too.

Usage: test_ref_devices.py. Exit 0 pass, 1 fail, 77 skip (no torch)."""
import os
import sys

try:
    import torch
except ImportError as e:  # the Python on PATH may lack torch; CMake passes /usr/bin/python3
    print("SKIP: torch not importable with %s (%s)" % (sys.executable, e))
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dit_ref  # noqa: E402
import flux_ref  # noqa: E402
import sd3_ref  # noqa: E402
import te_ref  # noqa: E402
import vae_ref  # noqa: E402

META = torch.device("meta")


def m(*shape):
    return torch.empty(*shape, device=META)


def case_dit():
    model = dit_ref.build_dit("dit-tiny", depth=1).to(META)
    S, C = dit_ref.PRESETS["dit-tiny"]["input_size"], dit_ref.PRESETS["dit-tiny"]["in_channels"]
    y = torch.zeros(2, dtype=torch.int64, device=META)
    return model(m(2, C, S, S), m(2), y), (2, 2 * C, S, S)


def case_flux():
    model = flux_ref.build_flux("flux-tiny").to(META)
    cfg = flux_ref.PRESETS["flux-tiny"]
    N, L = 16, 4  # a 4 x 4 packed grid, 4 text tokens
    img_ids = flux_ref.prepare_latent_image_ids(4, 4).to(META)
    txt_ids = torch.zeros(L, 3, device=META)
    mask = torch.ones(2, L, dtype=torch.bool, device=META)
    out = model(m(2, N, cfg["in_channels"]), m(2, L, cfg["joint_attention_dim"]), m(2, cfg["pooled_projection_dim"]),
                m(2), img_ids, txt_ids, m(2), key_mask=mask)
    return out, (2, N, cfg["in_channels"])


def case_flux_cpu_ids():
    """velocity()'s ids are CPU tensors: the tables move to the latents' device."""
    model = flux_ref.build_flux("flux-tiny").to(META)
    cfg = flux_ref.PRESETS["flux-tiny"]
    out = model(m(1, 16, cfg["in_channels"]), m(1, 4, cfg["joint_attention_dim"]), m(1, cfg["pooled_projection_dim"]),
                m(1), flux_ref.prepare_latent_image_ids(4, 4), torch.zeros(4, 3), m(1))
    return out, (1, 16, cfg["in_channels"])


def case_sd3():
    cfg = sd3_ref.config("sd3-tiny")
    model = sd3_ref.SD3Transformer2DModel(**cfg).to(META)
    S = cfg["sample_size"]
    mask = torch.ones(2, 4, dtype=torch.bool, device=META)
    out = model(m(2, cfg["in_channels"], S, S), m(2, 4, cfg["joint_attention_dim"]), m(2, cfg["pooled_projection_dim"]),
                m(2), context_mask=mask)
    return out, (2, cfg["out_channels"], S, S)


def case_te():
    cfg = te_ref.PRESETS["te-tiny"]
    model = te_ref.TextEncoder(**cfg).to(META)
    L = cfg["max_len"]
    tokens = torch.zeros(2, L, dtype=torch.int64, device=META)
    mask = torch.ones(2, L, dtype=torch.bool, device=META)
    ctx, pooled = model(tokens, mask)
    return pooled, (2, cfg["pooled_dim"])


def case_vae():
    model = vae_ref.build("vae-tiny").to(META)
    C = vae_ref.PRESETS["vae-tiny"]["latent_channels"]
    return model(m(1, C, 4, 4)), (1, 3, 32, 32)


def main():
    failed = 0
    for name, fn in [("dit", case_dit), ("flux", case_flux), ("flux (cpu ids)", case_flux_cpu_ids),
                     ("sd3", case_sd3), ("te", case_te), ("vae", case_vae)]:
        try:
            with torch.no_grad():
                out, want = fn()
            ok = out.device == META and tuple(out.shape) == want
            print("%-16s %s: output %s on %s (want %s on meta)" % (name, "ok" if ok else "FAIL", tuple(out.shape),
                                                                   out.device, want))
        except Exception as e:  # noqa: BLE001
            ok = False
            print("%-16s FAIL: %s: %s" % (name, type(e).__name__, str(e)[:300]))
        failed += not ok
    print("test_ref_devices: %s" % ("FAILED" if failed else "ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
