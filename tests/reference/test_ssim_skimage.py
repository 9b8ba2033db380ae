"""test_ssim_skimage.py — `repro diff` against scikit-image / numpy.

Images: for each pair below, the two PNGs are written here (own encoder, not the
C writer), `repro diff A B --ssim-map M --heatmap H` runs, and its lines are
compared with
  * ssim: skimage.metrics.structural_similarity(a, b, gaussian_weights=True,
    sigma=1.5, use_sample_covariance=False, data_range=255, channel_axis=2),
    |C - skimage| <= 1e-6 (the brief's bar; both compute in float64 and differ
    only in rounding order, ~1e-15 in practice, printed); below 11x11 skimage
    refuses (ValueError) and repro must print nan;
  * the full SSIM map (--ssim-map) against skimage's full=True map, same bar:
    this is where the 'reflect' border handling shows;
  * psnr: skimage.metrics.peak_signal_noise_ratio(a, b, data_range=255); both
    take the MSE as an exact integer sum over n (one rounding), so they may
    differ only in log10 (<= 1 ulp per libm) and the final x10 (0.5 ulp each):
    |diff| <= 3 ulp of the value; inf for identical images on both sides;
  * max_abs, changed, changed_gt8: integer-derived, compared exactly;
  * the heatmap: its size, the colour of unchanged pixels (ramp bottom), of
    the largest difference (ramp top) and heatmap_scale == max_abs.
Latents: files written with st.py (F32, and one F16 pair), compared with numpy
in float64: max_abs exactly (the same float64 subtraction of the same floats);
sums (mean_abs, rel_l2, cosine, per-step rel_l2) within the summation-order
bound 2 n u sum|terms| / |sum| (+ a few u for the division and square roots),
n terms, u = 2^-53: repro sums sequentially, numpy pairwise, each within
(n - 1) u sum|terms| of the exact sum.
Directories: two result trees with shared and unshared files; every
`<file>.<metric>` line must equal the single-pair run.
Usage errors: mismatched sizes and mixed kinds fail with a message.

Usage: test_ssim_skimage.py --repro PATH/TO/repro --scratch DIR
Exit 0 pass, 1 fail, 77 skip (no numpy / skimage)."""
import argparse
import math
import os
import shutil
import struct
import subprocess
import sys
import zlib

try:
    import numpy as np
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity
except ImportError as e:  # the Python on PATH may lack them; CMake passes /usr/bin/python3
    print("SKIP: numpy / scikit-image not importable with %s (%s)" % (sys.executable, e))
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402

SSIM_TOL = 1e-6
U = 2.0 ** -53
FAILS = []


def check(ok, what):
    if not ok:
        FAILS.append(what)
        print("FAIL:", what)


def write_png(path, rgb):
    """Minimal 8-bit RGB PNG encoder (filter 0 on every row), independent of the C writer."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def read_png(path):
    """Decoder for what repro writes (8-bit RGB, not interlaced, any filter)."""
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(raw):
        (n,) = struct.unpack(">I", raw[pos:pos + 4])
        kind, body = raw[pos + 4:pos + 8], raw[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert (depth, ctype, interlace) == (8, 2, 0)
    data = zlib.decompress(idat)
    stride = w * 3
    out = np.zeros((h, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        ft = data[y * (stride + 1)]
        line = np.frombuffer(data[y * (stride + 1) + 1:(y + 1) * (stride + 1)], dtype=np.uint8).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        for x in range(stride):
            a = cur[x - 3] if x >= 3 else 0
            b = prev[x]
            c = prev[x - 3] if x >= 3 else 0
            if ft == 0:
                p = 0
            elif ft == 1:
                p = a
            elif ft == 2:
                p = b
            elif ft == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + p) & 255
        out[y] = cur
        prev = cur
    return out.reshape(h, w, 3).astype(np.uint8)


def run(args, expect_rc=0):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != expect_rc:
        print(r.stdout, r.stderr)
        check(False, "%s: exit %d, expected %d" % (" ".join(args[1:]), r.returncode, expect_rc))
    return r


def parse(out):
    vals = {}
    for line in out.splitlines():
        name, value = line.split(" ")
        vals[name] = float(value)
    return vals


# ---- image pairs ------------------------------------------------------------------

def image_pairs():
    rng = np.random.default_rng(20240611)
    u8 = lambda x: np.clip(np.rint(x), 0, 255).astype(np.uint8)  # noqa: E731
    pairs = []
    a = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
    pairs.append(("random", a, rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)))
    yy, xx = np.mgrid[0:80, 0:96].astype(np.float64)
    g = np.stack([xx * 2.5, yy * 3.0, (xx + yy) * 1.4], axis=2)
    pairs.append(("gradients", u8(g), u8(g * 0.97 + 4 + 3 * np.sin(xx / 7)[..., None])))
    a = rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)
    b = a.copy()
    b[17, 23, 1] ^= 0x5A
    pairs.append(("one_pixel", a, b))
    a = u8(128 + 60 * np.sin(xx / 9)[..., None] * np.cos(yy / 13)[..., None] + np.zeros((80, 96, 3)))
    pairs.append(("heavy_noise", a, u8(a + rng.normal(0, 60, a.shape))))
    pairs.append(("odd_7x9", rng.integers(0, 256, (7, 9, 3), dtype=np.uint8),
                  rng.integers(0, 256, (7, 9, 3), dtype=np.uint8)))
    a = rng.integers(0, 256, (33, 65, 3), dtype=np.uint8)
    pairs.append(("odd_33x65", a, u8(a.astype(np.float64) + rng.normal(0, 6, a.shape))))
    a = rng.integers(0, 256, (11, 11, 3), dtype=np.uint8)
    pairs.append(("tiny_11x11", a, u8(a.astype(np.float64) + rng.normal(0, 20, a.shape))))
    pairs.append(("tiny_12x11", rng.integers(0, 256, (12, 11, 3), dtype=np.uint8),
                  rng.integers(0, 256, (12, 11, 3), dtype=np.uint8)))
    pairs.append(("constant_equal", np.full((20, 24, 3), 128, np.uint8), np.full((20, 24, 3), 128, np.uint8)))
    pairs.append(("constant_offset", np.full((20, 24, 3), 100, np.uint8), np.full((20, 24, 3), 110, np.uint8)))
    a = np.where(rng.random((36, 30, 3)) < 0.5, 0, 255).astype(np.uint8)
    pairs.append(("saturated", a, u8(a.astype(np.float64) + rng.normal(0, 90, a.shape))))
    a = rng.integers(0, 256, (30, 20, 3), dtype=np.uint8)
    pairs.append(("identical", a, a.copy()))
    a = u8(g + rng.normal(0, 10, g.shape))
    pairs.append(("small_shift", a, np.roll(a, 1, axis=1)))
    return pairs


def skimage_ssim(a, b, full=False):
    """skimage's value (and map), or None where it refuses the size."""
    try:
        return structural_similarity(a, b, gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
                                     data_range=255, channel_axis=2, full=full)
    except ValueError:
        return None


def check_images(repro, scratch):
    worst_ssim, worst_map, n_ssim = 0.0, 0.0, 0
    single = {}
    for name, a, b in image_pairs():
        pa, pb = os.path.join(scratch, name + "-a.png"), os.path.join(scratch, name + "-b.png")
        write_png(pa, a)
        write_png(pb, b)
        mpath, hpath = os.path.join(scratch, name + "-map.safetensors"), os.path.join(scratch, name + "-heat.png")
        r = run([repro, "diff", pa, pb, "--ssim-map", mpath, "--heatmap", hpath])
        if r.returncode:
            continue
        v = parse(r.stdout)
        single[name] = v
        H, W, _ = a.shape
        d = np.abs(a.astype(np.int64) - b.astype(np.int64))
        dmax = d.max(axis=2)
        # integer-derived metrics: exact
        check(v["max_abs"] == d.max(), "%s: max_abs %g != %d" % (name, v["max_abs"], d.max()))
        check(v["changed"] == np.count_nonzero(dmax > 0) / (H * W), "%s: changed %r" % (name, v["changed"]))
        check(v["changed_gt8"] == np.count_nonzero(dmax > 8) / (H * W), "%s: changed_gt8 %r" % (name, v["changed_gt8"]))
        # psnr
        with np.errstate(divide="ignore"):
            ps = peak_signal_noise_ratio(a, b, data_range=255)
        if math.isinf(ps):
            check(math.isinf(v["psnr"]) and v["psnr"] > 0, "%s: psnr %r, skimage inf" % (name, v["psnr"]))
        else:
            check(abs(v["psnr"] - ps) <= 3 * np.spacing(abs(ps)), "%s: psnr %r vs skimage %r" % (name, v["psnr"], ps))
        # ssim and its map
        ref = skimage_ssim(a, b, full=True)
        cmap, _ = st.load(mpath)
        cmap = cmap["ssim"]
        check(cmap.shape == (H, W, 3) and cmap.dtype == np.float64, "%s: map shape %s" % (name, cmap.shape))
        if ref is None:
            check(math.isnan(v["ssim"]), "%s: %dx%d: skimage refuses, repro printed ssim %r" % (name, W, H, v["ssim"]))
            print("  %-16s %3dx%-3d skimage: ValueError (win_size); repro: ssim nan" % (name, W, H))
        else:
            s_ref, m_ref = ref
            dev, mdev = abs(v["ssim"] - s_ref), float(np.abs(cmap - m_ref).max())
            worst_ssim, worst_map, n_ssim = max(worst_ssim, dev), max(worst_map, mdev), n_ssim + 1
            check(dev <= SSIM_TOL, "%s: ssim %r vs skimage %r" % (name, v["ssim"], s_ref))
            check(mdev <= SSIM_TOL, "%s: ssim map deviates by %g" % (name, mdev))
            print("  %-16s %3dx%-3d ssim %.12f |d| %.1e  map |d| %.1e  psnr %.6f" % (name, W, H, v["ssim"], dev, mdev, v["psnr"]))
        # heatmap
        hm = read_png(hpath)
        check(hm.shape == a.shape, "%s: heatmap shape %s" % (name, hm.shape))
        check(v["heatmap_scale"] == d.max(), "%s: heatmap_scale %r" % (name, v["heatmap_scale"]))
        if (dmax == 0).any():
            check((hm[dmax == 0] == (0, 0, 4)).all(), "%s: unchanged pixels not at the ramp bottom" % name)
        if d.max() > 0:
            check((hm[dmax == d.max()] == (252, 255, 164)).all(), "%s: largest difference not at the ramp top" % name)
    if n_ssim < 8:
        check(False, "only %d image pairs had a skimage SSIM" % n_ssim)
    print("images: max |ssim - skimage| = %.3g, max |map - skimage| = %.3g over %d pairs" % (worst_ssim, worst_map, n_ssim))
    return single


# ---- latents ------------------------------------------------------------------------

def sum_tol(terms):
    """Bound on |repro - numpy| for a sum of these float64 terms: 2 n u sum|t|."""
    n = terms.size
    return 2 * n * U * float(np.abs(terms).sum())


def check_latents(repro, scratch):
    rng = np.random.default_rng(7)
    shape = (2, 4, 16, 12)
    steps = 5
    cases = []
    x = rng.standard_normal((steps + 1,) + shape).astype(np.float32)
    y = (x + 1e-3 * rng.standard_normal(x.shape)).astype(np.float32)
    cases.append(("perturbed", x, y, np.float32))
    cases.append(("identical", x, x.copy(), np.float32))
    z = rng.standard_normal((steps + 1,) + shape).astype(np.float32)
    cases.append(("unrelated", x, z, np.float32))
    h = x.astype(np.float16)
    cases.append(("f16", h, (h + np.float16(0.01)).astype(np.float16), np.float16))
    single = {}
    for name, ta, tb, dt in cases:
        pa, pb = os.path.join(scratch, name + "-a.safetensors"), os.path.join(scratch, name + "-b.safetensors")
        st.save(pa, {"latents": ta[-1], "trajectory": ta, "noise": ta[0]})
        st.save(pb, {"latents": tb[-1], "trajectory": tb, "noise": tb[0]})
        r = run([repro, "diff", pa, pb])
        if r.returncode:
            continue
        v = parse(r.stdout)
        single[name] = v
        a, b = ta[-1].astype(np.float64).ravel(), tb[-1].astype(np.float64).ravel()
        d = a - b
        n = a.size
        check(v["max_abs"] == np.abs(d).max(), "%s: max_abs %r vs %r" % (name, v["max_abs"], np.abs(d).max()))
        mean_abs = np.abs(d).mean()
        check(abs(v["mean_abs"] - mean_abs) <= sum_tol(np.abs(d)) / n + 2 * U * mean_abs,
              "%s: mean_abs %r vs %r" % (name, v["mean_abs"], mean_abs))
        rel = np.sqrt(np.dot(d, d)) / np.sqrt(np.dot(a, a))
        # relative error of a sum of squares <= 2 n u; through sqrt and the quotient: n u each, + 3 u roundings
        rtol = (2 * n * U + 4 * U) * max(rel, 1e-300)
        check(abs(v["rel_l2"] - rel) <= rtol, "%s: rel_l2 %r vs %r" % (name, v["rel_l2"], rel))
        na, nb = np.dot(a, a), np.dot(b, b)
        cos = np.dot(a, b) / np.sqrt(na * nb)
        ctol = sum_tol(a * b) / math.sqrt(na * nb) + (2 * n * U + 4 * U) * abs(cos)
        check(abs(v["cosine"] - cos) <= ctol, "%s: cosine %r vs %r" % (name, v["cosine"], cos))
        if name == "identical":
            check(v["cosine"] == 1.0 and v["rel_l2"] == 0.0 and v["max_abs"] == 0.0, "identical: not exact")
        worst = 0.0
        for t in range(steps + 1):
            at, bt = ta[t].astype(np.float64).ravel(), tb[t].astype(np.float64).ravel()
            dt_ = at - bt
            ref = np.sqrt(np.dot(dt_, dt_)) / np.sqrt(np.dot(at, at))
            got = v.get("rel_l2_step.%d" % t)
            check(got is not None and abs(got - ref) <= (2 * n * U + 4 * U) * ref,
                  "%s: rel_l2_step.%d %r vs %r" % (name, t, got, ref))
            if got is not None:
                worst = max(worst, abs(got - ref))
        check(("rel_l2_step.%d" % (steps + 1)) not in v, "%s: too many steps" % name)
        print("  latents %-10s rel_l2 %.6e cosine %.15f  max step |d| %.1e" % (name, v["rel_l2"], v["cosine"], worst))
    # shapes must match
    pa, pb = os.path.join(scratch, "shape-a.safetensors"), os.path.join(scratch, "shape-b.safetensors")
    st.save(pa, {"latents": x[0]})
    st.save(pb, {"latents": x[0][:1]})
    r = run([repro, "diff", pa, pb], expect_rc=1)
    check("'latents'" in r.stderr and "(2, 4, 16, 12)" in r.stderr, "shape mismatch message: %r" % r.stderr)
    return single


# ---- directories ----------------------------------------------------------------------

def check_dirs(repro, scratch, images, latents):
    da, db, hd = (os.path.join(scratch, n) for n in ("dir-a", "dir-b", "heat"))
    for p in (da, db, hd):
        shutil.rmtree(p, ignore_errors=True)
    for p in (da, db):
        os.makedirs(os.path.join(p, "sub"))
    # shared: two images (one in a subdirectory) and one latents file; unshared: one
    # image on each side; a safetensors without "latents" in both (skipped)
    for side, d in (("a", da), ("b", db)):
        shutil.copy(os.path.join(scratch, "gradients-%s.png" % side), os.path.join(d, "img.png"))
        shutil.copy(os.path.join(scratch, "heavy_noise-%s.png" % side), os.path.join(d, "sub", "img.png"))
        shutil.copy(os.path.join(scratch, "perturbed-%s.safetensors" % side), os.path.join(d, "latents.safetensors"))
        st.save(os.path.join(d, "weights.safetensors"), {"w": np.zeros(3, np.float32)})
    shutil.copy(os.path.join(scratch, "random-a.png"), os.path.join(da, "only_a.png"))
    shutil.copy(os.path.join(scratch, "random-b.png"), os.path.join(db, "sub", "only_b.png"))
    r = run([repro, "diff", da, db, "--heatmap", hd])
    if r.returncode:
        return
    v = parse(r.stdout)
    want = {}
    for prefix, ref in (("img.png.", images["gradients"]), ("sub/img.png.", images["heavy_noise"]),
                        ("latents.safetensors.", latents["perturbed"])):
        for k, x in ref.items():
            want[prefix + k] = x
    check(set(v) == set(want), "directory lines: extra %s, missing %s" % (sorted(set(v) - set(want)),
                                                                       sorted(set(want) - set(v))))
    for k in want:
        if k in v:
            same = v[k] == want[k] or (math.isnan(v[k]) and math.isnan(want[k]))
            check(same, "directory %s = %r, single run %r" % (k, v[k], want[k]))
    check("only_a.png" in r.stderr and "sub/only_b.png" in r.stderr, "unshared files not listed: %r" % r.stderr)
    check("weights.safetensors" in r.stderr, "non-latents file not noted: %r" % r.stderr)
    for f in ("img.png", "sub_img.png"):
        check(os.path.exists(os.path.join(hd, f)), "heatmap %s missing" % f)
    print("directories: %d lines, all equal to the single-pair runs" % len(v))


def check_usage(repro, scratch):
    a = os.path.join(scratch, "random-a.png")
    small = os.path.join(scratch, "odd_7x9-a.png")
    lat = os.path.join(scratch, "perturbed-a.safetensors")
    r = run([repro, "diff", a, small], expect_rc=1)
    check("64x48" in r.stderr and "7x9" in r.stderr, "size mismatch message: %r" % r.stderr)
    r = run([repro, "diff", a, lat], expect_rc=2)
    check("PNG" in r.stderr, "mixed kinds message: %r" % r.stderr)
    run([repro, "diff", a], expect_rc=2)
    run([repro, "diff", a, a, a], expect_rc=2)
    run([repro, "diff", a, a, "--bogus"], expect_rc=2)
    r = run([repro, "diff", "--help"])
    check("usage: repro diff" in r.stdout, "--help")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repro", required=True)
    ap.add_argument("--scratch", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(args.scratch)
    images = check_images(args.repro, args.scratch)
    latents = check_latents(args.repro, args.scratch)
    if "gradients" in images and "heavy_noise" in images and "perturbed" in latents:
        check_dirs(args.repro, args.scratch, images, latents)
    check_usage(args.repro, args.scratch)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
