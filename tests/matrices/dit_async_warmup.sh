#!/bin/sh
# dit_async_warmup.sh — matrices/dit_async_warmup.yaml (ctest matrix.shipped.dit_async_warmup,
# label matrix; the GPU part: gpu.shipped.dit_async_warmup, label gpu). Usage and modes:
# tests/matrices/lib.sh.
#
# Beyond the sweep's own expectations (exit 0: approx below warmup = all, drift or identical
# at all, pipefusion-cache-leak BUG), checks the two trends the report plots
# (plots/quality_vs_warmup.svg) from the stored metrics, on the worst image's PSNR:
#   - the loss shrinks with warmup: per strategy and rank count, PSNR never falls by more
#     than 0.5 dB as warmup grows, and warmup = all is bitwise the serial run or drift;
#   - the loss grows with ranks: at each warmup short of all, 4 ranks are not better than 2
#     by more than 0.5 dB, and at warmup 0 and 1 strictly worse;
#   - the cache leak is caught by the leak check (the run after another case in the same
#     worker), not by its own run, which is a clean first call.
. "$(dirname "$0")/lib.sh"
run_matrix dit_async_warmup

"$py" - "$summary" "$mode" <<'EOF'
import json, math, sys
s = json.load(open(sys.argv[1]))
check = sys.argv[2] != "explain"
bad = []
TOL = 0.5
grid = {}       # (strategy, ranks) -> {warmup: psnr}
steps_of = {}
for c in s["cases"]:
    cfg = c.get("config")
    if not cfg or c["status"] != "ok":
        continue
    strat = "pipefusion" if cfg["pipefusion"] > 1 else "patch" if cfg["patch"] > 1 else None
    if strat is None:
        continue
    p = (c["metrics"].get("worst") or {}).get("psnr")
    p = float(p) if p is not None else float("nan")
    if cfg.get("inject"):
        det = (c.get("evidence") or {}).get("determinism") or {}
        leak = det.get("leak_check", "")
        print("  %-44s %-6s leak check: %s" % (c["name"], c["verdict"], leak))
        if check and (c["verdict"] != "BUG" or not str(leak).startswith("differs")):
            bad.append("%s: verdict %s, leak check %r: the leak was not caught by the leak check" %
                       (c["name"], c["verdict"], leak))
        continue
    key = (strat, c["world"])
    grid.setdefault(key, {})[cfg["warmup_steps"]] = (p, c["verdict"])
    steps_of[key] = cfg["steps"]

ws = sorted({w for g in grid.values() for w in g})
fmt = lambda p: "inf" if math.isinf(p) else "%.2f" % p
print("\ndit_async_warmup: worst-image PSNR (dB) vs the serial run, per warmup (all = %s steps)" %
      ",".join(sorted({str(v) for v in steps_of.values()})))
print("  %-18s" % "" + "".join("%9s" % ("all" if w == max(ws) else w) for w in ws))
for key in sorted(grid):
    print("  %-18s" % ("%s %d ranks" % key) + "".join("%9s" % (fmt(grid[key][w][0]) if w in grid[key] else "-")
                                                    for w in ws))
if check:
    for key, g in grid.items():
        prev = None
        for w in sorted(g):
            p, v = g[w]
            if prev is not None and p < prev - TOL:
                bad.append("%s %d ranks: PSNR falls from %.2f to %.2f dB as warmup grows to %d" % (key + (prev, p, w)))
            prev = p if not math.isnan(p) else prev
        full = steps_of[key]
        if full in g and g[full][1] not in ("identical", "drift"):
            bad.append("%s %d ranks: warmup = all gives %s, not drift" % (key + (g[full][1],)))
    for strat in ("pipefusion", "patch"):
        two, four = grid.get((strat, 2), {}), grid.get((strat, 4), {})
        for w in sorted(set(two) & set(four)):
            if w == steps_of[(strat, 2)]:
                continue
            if four[w][0] > two[w][0] + TOL:
                bad.append("%s warmup %d: 4 ranks %.2f dB better than 2 ranks %.2f dB" % (strat, w, four[w][0], two[w][0]))
            if w <= 1 and not four[w][0] < two[w][0]:
                bad.append("%s warmup %d: 4 ranks (%.2f dB) not worse than 2 (%.2f dB)" % (strat, w, four[w][0], two[w][0]))
if bad:
    print("\n".join("FAIL: " + b for b in bad), file=sys.stderr)
    sys.exit(1)
EOF
[ $? -eq 0 ] || exit 1
echo ok
