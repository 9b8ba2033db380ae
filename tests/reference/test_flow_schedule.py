"""test_flow_schedule.py — repro's flow-matching schedules (engine/samplers/flow.c) against a
direct numpy implementation of diffusers' FlowMatchEulerDiscreteScheduler formulas as the
SD3 and FLUX pipelines drive them.

The reference below is written from the diffusers formulas, in the dtypes diffusers uses:
  __init__ (torch float32): s = arange(1000..1) / 1000; static shift f(s) = shift s / (1 + (shift-1) s)
      (SD3's config), so sigma_max = f(1), sigma_min = f(1/1000).
  set_timesteps, SD3 (float64 numpy): sigmas = f(linspace(sigma_max*1000, sigma_min*1000, N) / 1000).
  set_timesteps, FLUX: the pipeline passes sigmas = linspace(1, 1/N, N); the scheduler casts them to
      float32 and applies time_shift(mu, 1, s) = exp(mu) / (exp(mu) + (1/s - 1) ** 1) in numpy float32;
      mu = calculate_shift(image_seq_len, 256, 4096, 0.5, 1.15).
  both: sigmas stored as float32, timesteps = sigmas * 1000 (float32), a final sigma 0 appended.
  FLUX model input: timesteps / 1000 (float32 division).
Pass: every C value equals the reference bit for bit (the C code reproduces diffusers'
operation order and precisions). Also printed, not failed: how far the older diffusers
(FLUX time_shift in float64 before the float32 cast) would differ, and how many FLUX model
timesteps torch's CUDA reciprocal-multiply division (t * fl(1/1000)) would change.

Usage: test_flow_schedule.py --dump-tool PATH/TO/test_flow      (test_flow --dump ... prints the
C schedule as hex floats). Exit 0 pass, 1 fail, 77 skip (no numpy)."""
import argparse
import math
import subprocess
import sys

try:
    import numpy as np
except ImportError as e:
    print("SKIP: numpy not importable with %s (%s)" % (sys.executable, e))
    sys.exit(77)
try:
    import torch
except ImportError:
    torch = None

T = 1000


def calculate_shift(image_seq_len, base_seq_len=256, max_seq_len=4096, base_shift=0.5, max_shift=1.15):
    m = (max_shift - base_shift) / (max_seq_len - base_seq_len)
    b = base_shift - m * base_seq_len
    return image_seq_len * m + b


def train_ends(shift):
    """sigma_max, sigma_min of the scheduler's __init__ table (float32 arithmetic), as Python floats."""
    ts = np.linspace(1, T, T, dtype=np.float32)[::-1].copy()
    s = ts / T  # float32 / int -> float32 division
    s = shift * s / (1 + (shift - 1) * s)
    assert s.dtype == np.float32
    if torch is not None:  # the same in torch, which is what diffusers runs
        st = torch.from_numpy(ts) / T
        st = shift * st / (1 + (shift - 1) * st)
        assert np.array_equal(st.numpy(), s), "numpy and torch float32 disagree on the __init__ table"
    return float(s[0]), float(s[-1])


def ref_sd3(N, shift):
    smax, smin = train_ends(shift)
    t = np.linspace(smax * T, smin * T, N)
    sig = t / T
    sig = shift * sig / (1 + (shift - 1) * sig)  # float64
    return finish(sig.astype(np.float32))


def time_shift(mu, s):
    return math.exp(mu) / (math.exp(mu) + (1 / s - 1) ** 1.0)


def ref_dynamic(N, mu, old=False):
    lin = np.linspace(1.0, 1 / N, N)
    if old:  # diffusers before the float32 cast of passed-in sigmas: float64 time_shift
        sig = time_shift(mu, lin).astype(np.float32)
    else:
        sig = time_shift(mu, lin.astype(np.float32))
        assert sig.dtype == np.float32, "numpy promoted the float32 time_shift to %s" % sig.dtype
    return finish(sig)


def finish(sig32):
    ts = sig32 * np.float32(T)  # torch: float32 tensor * 1000
    flux_t = ts / np.float32(T)  # FluxPipeline: timestep / 1000
    sigmas = np.concatenate([sig32, np.zeros(1, np.float32)])
    return sigmas, ts, flux_t


def c_schedule(tool, kind, N, param):
    r = subprocess.run([tool, "--dump", kind, str(N), repr(param)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s --dump %s %d %r: exit %d: %s" % (tool, kind, N, param, r.returncode, r.stdout))
    lines = r.stdout.split("\n")
    mu = float.fromhex(lines[0].split()[1])
    rows = [l.split() for l in lines[1:] if l and not l.startswith("final")]
    final = [l for l in lines if l.startswith("final")][0].split()[1]
    sig = np.array([float.fromhex(x[1]) for x in rows] + [float.fromhex(final)])
    ts = np.array([float.fromhex(x[2]) for x in rows])
    ft = np.array([float.fromhex(x[3]) for x in rows])
    return mu, sig, ts, ft


def ulps32(a, b):
    a = np.asarray(a, np.float32).view(np.int32).astype(np.int64)
    b = np.asarray(b, np.float32).view(np.int32).astype(np.int64)
    return int(np.max(np.abs(a - b))) if a.size else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump-tool", required=True)
    args = ap.parse_args()
    print("numpy %s, torch %s" % (np.__version__, torch.__version__ if torch else "absent (init check numpy only)"))
    Ns = [1, 2, 3, 4, 10, 28, 50, 1000]
    cases = [("sd3", N, sh) for sh in (3.0, 1.0, 2.7) for N in Ns]
    cases += [("flux", N, seq) for seq in (1, 256, 1024, 4096, 6400) for N in Ns]
    cases += [("dyn", N, mu) for mu in (0.0, -0.3, 2.0) for N in (1, 4, 28)]
    problems = []
    old_ulps, cuda_changed, cuda_total = 0, 0, 0
    for kind, N, p in cases:
        mu_c, sig_c, ts_c, ft_c = c_schedule(args.dump_tool, kind, N, p)
        if kind == "sd3":
            sig_r, ts_r, ft_r = ref_sd3(N, p)
            mu_r = 0.0
        else:
            mu_r = calculate_shift(p) if kind == "flux" else p
            sig_r, ts_r, ft_r = ref_dynamic(N, mu_r)
            old_ulps = max(old_ulps, ulps32(ref_dynamic(N, mu_r, old=True)[0], sig_r))
            cuda_t = ts_r * np.float32(1.0 / T)  # float32 tensor times the float32 reciprocal
            cuda_changed += int(np.sum(cuda_t != ft_r))
            cuda_total += N
        tag = "%s N=%d %s=%r" % (kind, N, "shift" if kind == "sd3" else ("seq" if kind == "flux" else "mu"), p)
        if mu_c != mu_r:
            problems.append("%s: mu C %r, reference %r" % (tag, mu_c, mu_r))
        for name, c, r in (("sigmas", sig_c, sig_r), ("timesteps", ts_c, ts_r), ("flux model t", ft_c, ft_r)):
            r64 = r.astype(np.float64)
            if c.shape != r64.shape or not np.array_equal(c, r64):
                bad = int(np.argmax(c != r64)) if c.shape == r64.shape else -1
                problems.append("%s: %s differ (first at %d: C %r, reference %r; %d ulp max)"
                                % (tag, name, bad, c[bad] if bad >= 0 else None, r64[bad] if bad >= 0 else None,
                                   ulps32(c, r) if c.shape == r64.shape else -1))
        if not (sig_c[-1] == 0.0 and np.all(np.diff(sig_c) < 0)):
            problems.append("%s: sigmas not strictly decreasing to 0" % tag)
    sd3 = ref_sd3(28, 3.0)[0]
    flux = ref_dynamic(28, calculate_shift(4096))[0]
    print("SD3 28 steps, shift 3:    sigmas[0..3] %s ... sigmas[-2] %.9g" % (np.array2string(sd3[:4]), sd3[-2]))
    print("FLUX 28 steps, seq 4096:  sigmas[0..3] %s ... sigmas[-2] %.9g" % (np.array2string(flux[:4]), flux[-2]))
    print("older diffusers (float64 time_shift) would differ by at most %d float32 ulp" % old_ulps)
    print("FLUX model timesteps that a reciprocal-multiply division (torch CUDA) changes: %d of %d"
          % (cuda_changed, cuda_total))
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems[:40]))
        return 1
    print("PASS: %d schedules bitwise equal to the diffusers formulas (sigmas, timesteps, FLUX model t)"
          % len(cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
