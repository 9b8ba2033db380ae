#!/bin/sh
# sd3_batch.sh — matrices/sd3_batch.yaml (ctest matrix.shipped.sd3_batch, label matrix; the
# GPU part: gpu.shipped.sd3_batch, label gpu). Usage and modes: tests/matrices/lib.sh.
#
# Beyond the sweep's own expectations (exit 0: correct layouts drift or identical,
# dp-rank-layout MISMATCH where it acts, BUG at dp 2 x cfg 2 where it is latent: its images are
# right, and the rotated layout shows its groups follow the rank number), checks that the latent
# case's BUG comes from the rotated layout, and
# that every MISMATCH names a real reassignment (some image i matches reference image j != i)
# and that its evidence (the report's "assignment" line) names both prompts of every swapped
# image, and prints, per MISMATCH case, which prompt each image actually got.
. "$(dirname "$0")/lib.sh"
run_matrix sd3_batch

"$py" - "$summary" "$mode" <<'EOF'
import json, math, sys
s = json.load(open(sys.argv[1]))
check = sys.argv[2] not in ("explain", "md")
md, mdout = sys.argv[2] == "md", sys.stdout
if md:
    sys.stdout = sys.stderr   # the text tables; the Markdown goes to mdout
bad = []
cells = {}  # (degrees, world) -> {(items, fault): "verdict (PSNR)"}
print("\nsd3_batch: verdicts, and for each MISMATCH the prompt each image actually got")
for c in s["cases"]:
    cfg = c.get("config")
    if not cfg:
        continue
    print("  %-36s %-9s %-10s %s" % (c["name"], c["degrees"], c["verdict"], (c.get("evidence") or {}).get("summary") or ""))
    p = (c["metrics"].get("worst") or {}).get("psnr")
    p = "" if p is None else " (inf)" if math.isinf(float(p)) else " (%.1f dB)" % float(p)
    key = (len(cfg["items"]), bool(cfg.get("inject")), cfg.get("numerics") == "invariant")
    cells.setdefault((c["world"], c["degrees"]), {})[key] = c["verdict"] + (
        p if c["verdict"] in ("drift", "identical") else "")
    summ = (c.get("evidence") or {}).get("summary") or ""
    if cfg.get("inject") and c["degrees"] == "dp2 cfg2":  # latent: right images, rank-keyed groups
        if check and c["status"] == "ok" and (c["verdict"] != "BUG" or "rotated" not in summ):
            bad.append("%s: the latent fault is %s, not a BUG of the rotated layout: %s" % (c["name"], c["verdict"],
                                                                                          summ[:160]))
        continue
    if c["verdict"] != "MISMATCH":
        if check and c["status"] == "ok" and c["verdict"] not in ("identical", "drift"):
            bad.append("%s: verdict %s" % (c["name"], c["verdict"]))
        continue
    items = cfg["items"]
    a = (c.get("evidence") or {}).get("assignment") or {}
    perm = a.get("permutation") or []
    if check and (len(perm) != len(items) or all(j == i for i, j in enumerate(perm))):
        bad.append("%s: MISMATCH without a permutation naming another item: %s" % (c["name"], perm))
    msg = a.get("message") or ""
    for i, j in enumerate(perm):
        # the report's assignment line names, for each swapped image, both prompts
        want = 'image %d, asked for prompt "%s", shows item %d\'s "%s"' % (i, items[i]["prompt"], j, items[j]["prompt"])
        if check and j != i and want not in msg:
            bad.append("%s: the assignment message does not say %r: %r" % (c["name"], want, msg[:200]))
        if j != i:
            print("      image %d, asked for %-36s got prompt %d %s" % (i, '"%s",' % items[i]["prompt"], j,
                                                                    '"%s"' % items[j]["prompt"]))
if md and cells:
    cols = sorted({k for v in cells.values() for k in v}, key=lambda k: (k[2], -k[0], k[1]))
    print("| degrees | " + " | ".join("%d prompts%s%s" % (n, ", `dp-rank-layout`" if f else "", ", invariant" if inv else "")
                                     for n, f, inv in cols) + " |", file=mdout)
    print("|---" * (len(cols) + 1) + "|", file=mdout)
    for (w, deg), v in sorted(cells.items()):
        print("| %s | %s |" % (deg.replace(" ", " x "), " | ".join(v.get(k, "") for k in cols)), file=mdout)
if bad:
    print("\n".join("FAIL: " + b for b in bad), file=sys.stderr)
    sys.exit(1)
EOF
[ $? -eq 0 ] || exit 1
[ "$mode" = md ] || echo ok
