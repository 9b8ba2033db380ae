"""rounding.py — how the tests order two measured differences that carry rounding (imported
by tests/matrices/*.sh, tests/cli/classify_matrix.sh and tests/parallel/approx.sh; standard
library only).

A measured difference to a reference is e = a + r: a is what the configuration itself does
(the stale activations of a PipeFusion step, the wrong rows of a fault) and r is rounding,
which another machine (another CPU, another OpenBLAS kernel set, another thread count) draws
anew. |r| is bounded by the rounding envelope E measured in the same run (the classifier's
twins: reduce_split, threads 1 <-> 2, one ulp of noise, each run from the same reference),
so a claim "a_x <= a_y" ("more warmup is no worse") can only be asserted of the measured
values as

    e_x <= e_y + 2 E          (the two rounding terms), or
    e_x <= factor * E         (x is at rounding level, where nothing is ordered: the
                               classifier's own drift threshold, 64 by default)

and "a_x > a_y" (strictly worse) only as e_x > e_y + 2 E and e_x > factor * E. Nothing else
about the order of two rounding-level values holds on another machine.

8-bit images add their own rounding: each value is rounded to a level once per image, so the
8-bit difference d8 of two images is within one level of the float difference dF value by
value (|d8 - dF| <= 1), hence RMS(d8) = RMS(dF) +- 1 level. "The image is no worse" is
therefore asserted as RMS8_x <= RMS8_y + 2 levels, with RMS8 = 255 * 10^(-PSNR / 20).
Above ~48 dB (RMS8 < 1 level: a few values one level apart) PSNR orders nothing.
"""
import math

# the classifier's default bug factor (harness/analysis/classify.h: RP_CLS_DEFAULT_FACTOR); the tests
# read the factor a case was classified with from its evidence where they have it
FACTOR = 64.0


def envelope(*envs, floor=0.0):
    """The envelope of a comparison of several cases: the largest of theirs and the floor
    (the precision's unit roundoff). None entries are skipped."""
    vals = [float(e) for e in envs if e is not None and not math.isnan(float(e))] + [float(floor)]
    return max(vals)


def at_most(ex, ey, env, factor=FACTOR):
    """x is no worse than y beyond rounding: ex <= ey + 2 env, or ex <= factor * env."""
    return ex <= ey + 2.0 * env or ex <= factor * env


def worse(ex, ey, env, factor=FACTOR):
    """x is worse than y beyond rounding: ex > ey + 2 env and ex above rounding level."""
    return ex > ey + 2.0 * env and ex > factor * env


def rms_levels(psnr):
    """RMS difference in 8-bit levels of an image pair with this PSNR (inf: identical)."""
    p = float(psnr)
    return 0.0 if math.isinf(p) and p > 0 else 255.0 * 10.0 ** (-p / 20.0)


def image_at_most(psnr_x, psnr_y):
    """Image x is no worse than image y beyond 8-bit rounding: RMS8_x <= RMS8_y + 2 levels."""
    return rms_levels(psnr_x) <= rms_levels(psnr_y) + 2.0
