#!/bin/sh
# sd3_batch.sh — matrices/sd3_batch.yaml (ctest matrix.shipped.sd3_batch, label matrix; the
# GPU part: gpu.shipped.sd3_batch, label gpu). Usage and modes: tests/matrices/lib.sh.
#
# Beyond the sweep's own expectations (exit 0: correct layouts drift or identical,
# dp-rank-layout MISMATCH where it acts, drift at dp 2 x cfg 2 where it is latent), checks
# that every MISMATCH names a real reassignment (some image i matches reference image j != i)
# and that its evidence (the report's "assignment" line) names both prompts of every swapped
# image, and prints, per MISMATCH case, which prompt each image actually got.
. "$(dirname "$0")/lib.sh"
run_matrix sd3_batch

"$py" - "$summary" "$mode" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
check = sys.argv[2] != "explain"
bad = []
print("\nsd3_batch: verdicts, and for each MISMATCH the prompt each image actually got")
for c in s["cases"]:
    cfg = c.get("config")
    if not cfg:
        continue
    print("  %-36s %-9s %-10s %s" % (c["name"], c["degrees"], c["verdict"], (c.get("evidence") or {}).get("summary") or ""))
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
if bad:
    print("\n".join("FAIL: " + b for b in bad), file=sys.stderr)
    sys.exit(1)
EOF
[ $? -eq 0 ] || exit 1
echo ok
