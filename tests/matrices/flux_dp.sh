#!/bin/sh
# flux_dp.sh — matrices/flux_dp.yaml (ctest matrix.shipped.flux_dp, label matrix; the GPU
# part: gpu.shipped.flux_dp, label gpu). Usage and modes: tests/matrices/lib.sh.
#
# Beyond the sweep's own expectations (exit 0: every layout drift or identical, ulysses 4/8
# CONFIG_ERROR, dp-shared-noise BUG), checks that
#   - no layout case is BUG, and every drift case has its local errors recorded (teacher
#     forcing ran: the verdict rests on per-step evidence, not on the final PSNR);
#   - dp-shared-noise is caught where it acts: the initial noise, step 0;
# and prints the table the report is read for: final PSNR / SSIM / changed pixels per
# layout and degree at each resolution, next to the largest local-error ratio (local error
# over its rounding envelope; a bug needs > the classifier's factor, 64). It also draws that
# table as SCRATCH/report/scenario/flux_dp_psnr.png (gnuplot, when installed): final PSNR
# versus degree, one line per strategy and resolution, the planted bug left out (the
# report's psnr_vs_degree plot keeps the worst case per degree over both resolutions, so
# there the planted bug's 10 dB hides the dp line).
. "$(dirname "$0")/lib.sh"
run_matrix flux_dp

"$py" - "$summary" "$mode" "$scratch/report/scenario" <<'EOF'
import json, math, os, re, shutil, subprocess, sys
s = json.load(open(sys.argv[1]))
mode = sys.argv[2]
plotdir = sys.argv[3]
check = mode not in ("explain", "md")
md, mdout = mode == "md", sys.stdout
if md:
    sys.stdout = sys.stderr   # the text tables; the Markdown goes to mdout
bad = []

def worst_ratio(c):
    ev = c.get("evidence") or {}
    loc = ev.get("local_errors") or []
    env = ((ev.get("envelope") or {}).get("steps")) or []
    fl = (ev.get("envelope") or {}).get("floor") or 0
    r = 0.0
    for k, v in enumerate(loc):
        if v is None or k >= len(env) or not isinstance(v, (int, float)):
            continue
        r = max(r, v / max(env[k], fl) if max(env[k], fl) > 0 else 0)
    return r, len([v for v in loc if v is not None])

def num(x):
    return float(x) if isinstance(x, (int, float)) else float(str(x))

rows = {}
inv = []  # the invariant-numerics cases: identical to their invariant serial run, the fault BUG
for c in s["cases"]:
    cfg = c.get("config")
    if not cfg:
        continue
    if cfg.get("numerics") == "invariant" and c["status"] != "SKIPPED":
        inv.append("  %-40s %-10s %-10s %s" % (c["name"][:40], c["degrees"], c["verdict"],
                                               ((c.get("evidence") or {}).get("summary") or "")[:90]))
        want = "BUG" if cfg.get("inject") else "identical"
        if check and c["verdict"] != want:
            bad.append("%s: verdict %s, not %s (numerics invariant)" % (c["name"], c["verdict"], want))
        continue
    res = cfg.get("width")
    w = (c["metrics"].get("worst") or {})
    ratio, nloc = worst_ratio(c)
    layout = c["name"].rsplit(" ", 1)[0] if c["name"].endswith("px") else c["name"]
    rows.setdefault(res, []).append((c["world"], c["degrees"], c["name"], c["verdict"], w.get("psnr"), w.get("ssim"),
                                     w.get("changed"), ratio, nloc))
    if not check:
        continue
    inj = cfg.get("inject") or ""
    if c["status"] == "SKIPPED":
        continue
    if inj == "dp-shared-noise":
        fs = (c.get("evidence") or {}).get("first_step") or {}
        if c["verdict"] != "BUG":
            bad.append("%s: verdict %s, not BUG" % (c["name"], c["verdict"]))
        elif fs.get("step") != 0 or fs.get("what") not in ("initial noise", "first evaluation"):
            bad.append("%s: BUG but first_step %s, not the initial noise at step 0" % (c["name"], fs))
    elif c["verdict"] == "drift":
        if nloc == 0:
            bad.append("%s: drift without teacher-forced local errors" % c["name"])
    elif c["verdict"] not in ("identical", "CONFIG_ERROR"):
        bad.append("%s: verdict %s" % (c["name"], c["verdict"]))

def f(x, fmt):
    if x is None:
        return "-"
    try:
        v = num(x)
    except ValueError:
        return str(x)
    return "inf" if math.isinf(v) else fmt % v

print("\nflux_dp: final quality vs the serial run, per resolution (worst of the 8 images)")
print("  %-5s %-30s %-10s %-12s %9s %8s %8s %12s" % ("px", "case", "degrees", "verdict", "PSNR dB", "SSIM",
                                                     "changed", "local/env"))
for res in sorted(rows):
    for world, deg, name, verdict, p, ss, ch, ratio, nloc in sorted(rows[res], key=lambda r: (r[1] != "1", "".join(ch for ch in r[1] if not ch.isdigit()), r[0], r[2])):
        print("  %-5s %-30s %-10s %-12s %9s %8s %8s %12s" % (res, name[:30], deg, verdict, f(p, "%.2f"), f(ss, "%.5f"),
              f(None if ch is None else num(ch) * 100, "%.1f%%"), f(ratio if nloc else None, "x%.2f")))
if inv:
    print("\nflux_dp: invariant numerics (every exact layout must be bitwise the invariant serial run)")
    print("\n".join(inv))
# the reporters' observation: the same layouts at the smaller size differ more
means = {}
for res, rs in rows.items():
    ps = [num(r[4]) for r in rs if r[3] == "drift" and r[4] is not None and math.isfinite(num(r[4]))]
    if ps:
        means[res] = sum(ps) / len(ps)
if means:
    print("  mean PSNR of the drift cases: " + ", ".join("%s px %.2f dB" % (k, v) for k, v in sorted(means.items())))
if md:
    # the README's table: per strategy, PSNR per degree at each resolution, changed pixels and
    # the worst local error / envelope over both; the planted fault on its own row
    names = {"dp": "dp", "r": "ring", "u": "Ulysses", "u+r": "USP (Ulysses x ring)"}
    res_l = sorted(rows)
    by = {}
    for res, rs in rows.items():
        for world, deg, name, verdict, p, ss, ch, ratio, nloc in rs:
            strat = "".join(x for x in deg if not x.isdigit()).strip().replace(" ", "+")
            if "noise" in name:
                strat = "fault"
            if verdict in ("drift", "identical", "BUG") and strat and deg != "1":
                by.setdefault(strat, []).append((world, deg, res, verdict, p, ss, ch, ratio, nloc))
    print("| | " + " | ".join("PSNR at %s px" % r for r in res_l) + " | pixels changed | worst local error / envelope |",
          file=mdout)
    print("|---" * (len(res_l) + 3) + "|", file=mdout)
    for strat in [k for k in ("dp", "u", "r", "u+r") if k in by] + [k for k in sorted(by) if k not in ("dp", "u", "r", "u+r", "fault")]:
        rs = sorted(by[strat])
        degs = sorted({(w, d) for w, d, *_ in rs})
        label = names.get(strat, strat) + " " + " / ".join("×".join(re.findall(r"\d+", d)) if "+" in strat else str(w)
                                                          for w, d in degs)
        cells = []
        for res in res_l:
            ps = [f(r[4], "%.2f") for r in rs if r[2] == res]
            cells.append(" / ".join(ps) + " dB" if ps else "")
        chs = [num(r[6]) * 100 for r in rs if r[6] is not None]
        rat = [r[7] for r in rs if r[8]]
        print("| %s | %s | %s | %s |" % (label, " | ".join(cells), "%.0f–%.0f %%" % (min(chs), max(chs)) if chs else "-",
                                         "x%.2f" % max(rat) if rat else "-"), file=mdout)
    for world, deg, res, verdict, p, ss, ch, ratio, nloc in sorted(by.get("fault", [])):
        cells = ["%s dB, SSIM %s" % (f(p, "%.2f"), f(ss, "%.3f")) if r == res else "" for r in res_l]
        print("| %s + `dp-shared-noise` | %s | %s | %s |" % (deg, " | ".join(cells), f(None if ch is None else num(ch) * 100, "%.0f %%"),
                                                           verdict + (" at the initial noise" if verdict == "BUG" else "")), file=mdout)
    if means:
        print("\nMean PSNR of the drift cases: " + ", ".join("%s px %.2f dB" % (k, v) for k, v in sorted(means.items())) + ".",
              file=mdout)
# the scenario plot: PSNR vs degree per strategy and resolution (drift cases and the serial runs)
series = {}
for res, rs in rows.items():
    for world, deg, name, verdict, p, ss, ch, ratio, nloc in rs:
        if verdict not in ("drift", "identical") or p is None or "noise" in name:
            continue
        strat = "".join(ch_ for ch_ in deg if not ch_.isdigit()).strip().replace(" ", "+") or "serial"
        strat = {"dp": "dp", "u": "ulysses", "r": "ring", "u+r": "ulysses x ring (USP)"}.get(strat, strat)
        if strat == "serial":
            continue
        series.setdefault((strat, res), []).append((world, num(p)))
if series and shutil.which(os.environ.get("REPRO_GNUPLOT", "gnuplot") or "none"):
    os.makedirs(plotdir, exist_ok=True)
    dat, cmd = [], []
    for k, ((strat, res), pts) in enumerate(sorted(series.items())):
        dat.append("$s%d << EOD" % k)
        dat += ["%d %.6g" % xy for xy in sorted(pts)]
        dat.append("EOD")
        cmd.append("$s%d using 1:2 with linespoints lw 2 pt %d dt %d lc %d title '%s, %s px'" %
                   (k, 7 if res == min(r for _, r in series) else 5, 1 if res == min(r for _, r in series) else 2,
                    ["dp", "ring", "ulysses", "ulysses x ring (USP)"].index(strat) + 1 if strat in
                    ["dp", "ring", "ulysses", "ulysses x ring (USP)"] else 5, strat, res))
    gp = "\n".join(dat) + """
set terminal pngcairo size 720,460 font 'sans,10' noenhanced
set output '%s/flux_dp_psnr.png'
set title 'flux_dp (bf16): final PSNR vs the serial run, worst of 8 images (serial = identical = inf)'
set xlabel 'parallel degree (ranks)'
set ylabel 'PSNR (dB)'
set logscale x 2
set xrange [1.6:10]
set xtics (2, 4, 8)
set grid
set key below maxrows 4
plot %s
""" % (plotdir, ", ".join(cmd))
    open(plotdir + "/flux_dp_psnr.gp", "w").write(gp)
    r = subprocess.run([os.environ.get("REPRO_GNUPLOT") or "gnuplot", plotdir + "/flux_dp_psnr.gp"],
                       capture_output=True, text=True)
    print("  plot: %s" % (plotdir + "/flux_dp_psnr.png" if r.returncode == 0 else "gnuplot failed: " + r.stderr[-300:]))
if bad:
    print("\n".join("FAIL: " + b for b in bad), file=sys.stderr)
    sys.exit(1)
EOF
[ $? -eq 0 ] || exit 1
[ "$mode" = md ] || echo ok
