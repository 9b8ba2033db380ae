"""test_vae_parity.py — the C VAE decoder against the independent PyTorch model (vae_ref.py).

For each case: random latents are written with st.save, `repro decode --dump-float`
decodes them (synthetic weights from the cache, or the same file passed explicitly),
and vae_ref.py loads that weights file and decodes the same latents in float32 and
float64.
Pass:
  * max|C - torch_f32| <= 1e-4 on the float image;
  * each PNG equals the reference uint8 conversion of torch's float32 image, except
    pixels off by exactly one level whose float value lies within 1e-4 of a rounding
    boundary (counted and printed);
Printed too: both errors against float64 (C vs f64, torch f32 vs f64), so the log
shows whether C is as accurate as torch, and decode timings.

Usage: test_vae_parity.py --repro PATH/TO/repro --scratch DIR   (REPRO_CACHE from the env)
Exit 0 pass, 1 fail, 77 skip (no torch)."""
import argparse
import os
import struct
import subprocess
import sys
import time
import zlib

try:
    import numpy as np
    import torch
except ImportError as e:  # the Python on PATH may lack torch; CMake passes /usr/bin/python3
    print("SKIP: torch/numpy not importable with %s (%s)" % (sys.executable, e))
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402
import vae_ref  # noqa: E402

TOL = 1e-4           # max|C - torch_f32| on the float image
BOUNDARY_TOL = 1e-4  # a 1-level PNG difference is allowed only this close to a rounding boundary

# The 16-channel VAE interface of SD3 / FLUX (no post_quant_conv; latents / scaling_factor +
# shift_factor, as StableDiffusion3Pipeline and FluxPipeline write it). Written here from the
# diffusers configs (stabilityai/stable-diffusion-3-medium-diffusers vae/config.json:
# scaling_factor 1.5305, shift_factor 0.0609), not from engine/vae/vae.c.
vae_ref.PRESETS.setdefault("vae-tiny-16", dict(latent_channels=16, block_out=(32, 32, 64, 64), layers_per_block=1,
                                               groups=8, use_post_quant_conv=False, scaling_factor=1.5305,
                                               shift_factor=0.0609))

# (preset, batch, latent h, latent w, latent seed, weight seed, explicit weights file)
CASES = [
    ("vae-tiny", 2, 16, 16, 1, 0, False),     # B = 2: one PNG per item
    ("vae-tiny", 1, 12, 20, 2, 3, True),      # non-square, weights passed with --vae-weights
    ("sd-vae", 1, 8, 8, 3, 0, False),         # real shapes at a small latent
    ("vae-tiny-16", 2, 16, 12, 4, 0, False),  # SD3 / FLUX interface: 16 channels, shift, no post_quant_conv
    ("vae-digits", 4, 8, 8, 5, 0, False),     # trained, shipped weights (the weight seed does not apply)
]


def read_png(path):
    """Minimal independent PNG decoder for what repro writes: 8-bit RGB, not
    interlaced, any filter types. Returns (H, W, 3) uint8."""
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n", "%s: bad signature" % path
    pos, idat, ihdr, chunks = 8, b"", None, []
    while pos < len(raw):
        (n,) = struct.unpack(">I", raw[pos:pos + 4])
        kind = raw[pos + 4:pos + 8]
        body = raw[pos + 8:pos + 8 + n]
        assert zlib.crc32(kind + body) == struct.unpack(">I", raw[pos + 8 + n:pos + 12 + n])[0]
        chunks.append(kind.decode())
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert (depth, ctype, interlace) == (8, 2, 0), "%s: not 8-bit RGB non-interlaced" % path
    assert "tIME" not in chunks, "%s: carries a time stamp" % path
    data = zlib.decompress(idat)
    stride, bpp = w * 3, 3
    out = np.zeros((h, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        ft = data[y * (stride + 1)]
        line = np.frombuffer(data, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        for x in range(stride):
            a = cur[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ft == 0:
                p = 0
            elif ft == 1:
                p = a
            elif ft == 2:
                p = b
            elif ft == 3:
                p = (a + b) // 2
            elif ft == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            else:
                raise AssertionError("%s: bad filter type %d" % (path, ft))
            cur[x] = (line[x] + p) & 0xFF
        out[y] = cur
        prev = cur
    return out.reshape(h, w, 3)


def run_case(repro, scratch, preset, batch, h, w, seed, wseed, explicit):
    tag = "%s-b%d-%dx%d-s%d-w%d" % (preset, batch, h, w, seed, wseed)
    lat_path = os.path.join(scratch, tag + ".latents.safetensors")
    png = os.path.join(scratch, tag + ".png")
    dump = os.path.join(scratch, tag + ".image.safetensors")
    cl = vae_ref.PRESETS[preset]["latent_channels"]
    lat = np.random.default_rng(seed).standard_normal((batch, cl, h, w)).astype(np.float32)
    st.save(lat_path, {"latents": lat})
    for p in [png, dump] + [os.path.join(scratch, "%s-%d.png" % (tag, i)) for i in range(batch)]:
        if os.path.exists(p):
            os.unlink(p)

    weights = None
    if explicit:
        # written by `repro weights` and passed by path (not through the cache)
        weights = os.path.join(scratch, "%s-seed%d.safetensors" % (preset, wseed))
        r = subprocess.run([repro, "weights", "--model", preset, "--weight-seed", str(wseed), "--out", weights],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            print(r.stdout)
            return ["%s: repro weights exited %d" % (tag, r.returncode)]
    cmd = [repro, "decode", "--vae", preset, "--latents", lat_path, "--out", png, "--dump-float", dump,
           "--threads", "2"]
    cmd += ["--vae-weights", weights] if explicit else ["--weight-seed", str(wseed)]
    print("\n$ " + " ".join(cmd))
    t0 = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t_c = time.time() - t0
    print(r.stdout.rstrip())
    if r.returncode != 0:
        return ["%s: repro decode exited %d" % (tag, r.returncode)]

    data, meta = st.load(dump)
    c_img = data["image"]
    f = 2 ** (len(vae_ref.PRESETS[preset]["block_out"]) - 1)
    problems = []
    if c_img.shape != (batch, 3, h * f, w * f) or c_img.dtype != np.float32:
        return ["%s: dumped image is %s %s, want (%d, 3, %d, %d) float32"
                % (tag, c_img.shape, c_img.dtype, batch, h * f, w * f)]
    if meta.get("vae") != preset:
        problems.append("%s: metadata vae=%r, want %r" % (tag, meta.get("vae"), preset))

    sd, wmeta = st.load(meta["weights"])
    if wmeta.get("repro.model", preset) != preset:
        problems.append("%s: weights file is for %r" % (tag, wmeta.get("repro.model")))
    # a trained VAE's file records the scaling_factor its training computed: the presets
    # (vae_ref's, and through the float comparison below engine/vae/vae.c's) must use it
    if "scaling_factor" in wmeta and float(wmeta["scaling_factor"]) != vae_ref.PRESETS[preset]["scaling_factor"]:
        problems.append("%s: weights were trained with scaling_factor %s, the preset has %r"
                        % (tag, wmeta["scaling_factor"], vae_ref.PRESETS[preset]["scaling_factor"]))
    t0 = time.time()
    ref32 = vae_ref.decode_np(preset, sd, lat, torch.float32)
    t_32 = time.time() - t0
    t0 = time.time()
    ref64 = vae_ref.decode_np(preset, sd, lat, torch.float64)
    t_64 = time.time() - t0

    c64 = c_img.astype(np.float64)
    e32 = float(np.max(np.abs(c64 - ref32.astype(np.float64))))
    ec64 = float(np.max(np.abs(c64 - ref64)))
    et64 = float(np.max(np.abs(ref32.astype(np.float64) - ref64)))
    scale = float(np.max(np.abs(ref64)))
    print("%s: max|x| %.3f  max|C - torch_f32| %.3g (bar %.0e)  vs float64: C %.3g, torch_f32 %.3g"
          % (tag, scale, e32, TOL, ec64, et64))
    print("%s: timings  C decode (process) %.2f s  torch f32 %.2f s  torch f64 %.2f s" % (tag, t_c, t_32, t_64))
    if not e32 <= TOL:  # also catches NaN
        problems.append("%s: max|C - torch_f32| = %.3g > %.0e" % (tag, e32, TOL))

    # PNGs against the reference conversion of torch's float32 image
    want = vae_ref.to_rgb8(ref32)                      # (B, H, W, 3)
    near = vae_ref.boundary_distance(ref32).transpose(0, 2, 3, 1) <= BOUNDARY_TOL
    n_off = 0
    for i in range(batch):
        p = png if batch == 1 else os.path.join(scratch, "%s-%d.png" % (tag, i))
        if not os.path.exists(p):
            problems.append("%s: %s was not written" % (tag, p))
            continue
        got = read_png(p)
        if got.shape != want[i].shape:
            problems.append("%s: %s is %s, want %s" % (tag, p, got.shape, want[i].shape))
            continue
        # exact rule check on C's own floats: any difference here is a conversion bug
        mine = vae_ref.to_rgb8(c_img[i:i + 1])[0]
        if not np.array_equal(got, mine):
            problems.append("%s: %s differs from the conversion rule applied to C's own floats in %d values"
                            % (tag, p, int(np.sum(got != mine))))
        d = np.abs(got.astype(np.int32) - want[i].astype(np.int32))
        bad = (d > 1) | ((d == 1) & ~near[i])
        n_off += int(np.sum(d == 1))
        if np.any(bad):
            problems.append("%s: %s differs from torch's uint8 image in %d values not explained by rounding"
                            % (tag, p, int(np.sum(bad))))
    print("%s: PNG vs torch uint8: %d of %d values off by one level (all within %.0e of a rounding boundary: %s)"
          % (tag, n_off, want.size, BOUNDARY_TOL, "yes" if not any("rounding" in q for q in problems) else "NO"))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repro", required=True)
    ap.add_argument("--scratch", required=True)
    args = ap.parse_args()
    os.makedirs(args.scratch, exist_ok=True)
    os.environ.setdefault("REPRO_CACHE", os.path.join(args.scratch, "cache"))
    torch.set_num_threads(2)
    print("torch %s, numpy %s, REPRO_CACHE=%s" % (torch.__version__, np.__version__, os.environ["REPRO_CACHE"]))
    problems = []
    t0 = time.time()
    for case in CASES:
        problems += run_case(args.repro, args.scratch, *case)
    print("\ntotal %.1f s" % (time.time() - t0))
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("PASS: %d cases" % len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
