"""trace_cmp.py — is a parallel run's trace the single rank's, layer by layer?

    trace_cmp.py A/trace.safetensors B/trace.safetensors REL

Pass (exit 0): the same records (names "e<eval>/<layer>"), each with the same numel and
sample stride (the single-rank layout: a shard or a group gathered wrongly changes them
or its values by O(1)), and every sample within REL * max(1, max|a|) of A's. Prints the
worst relative difference and the layer it is in. Exit 1 otherwise, 77 without numpy."""
import os
import sys

try:
    import numpy as np
except ImportError as e:
    print("SKIP: numpy not importable with %s (%s)" % (sys.executable, e))
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import st  # noqa: E402


def layout(meta, name):
    kv = dict(x.split("=", 1) for x in meta[name].split(","))
    return kv["numel"], kv["stride"]


def main():
    a, am = st.load(sys.argv[1])
    b, bm = st.load(sys.argv[2])
    rel = float(sys.argv[3])
    problems = []
    if sorted(a) != sorted(b):
        problems.append("records differ: only in A %s, only in B %s" % (sorted(set(a) - set(b)), sorted(set(b) - set(a))))
    worst, where = 0.0, "-"
    for name in sorted(set(a) & set(b)):
        if layout(am, name) != layout(bm, name):
            problems.append("%s: numel/stride %s vs %s" % (name, layout(am, name), layout(bm, name)))
            continue
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        d = float(np.max(np.abs(x - y))) / max(1.0, float(np.max(np.abs(x)))) if x.size else 0.0
        if d > worst:
            worst, where = d, name
    print("trace: %d records, same layout, worst sample difference %.3g relative (%s)" % (len(a), worst, where))
    if worst > rel:
        problems.append("%s differs by %.3g > %.3g relative" % (where, worst, rel))
    for p in problems:
        print("trace: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
