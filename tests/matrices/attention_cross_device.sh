#!/bin/sh
# attention_cross_device.sh — matrices/attention_cross_device.yaml (ctest
# matrix.shipped.attention_cross_device, label matrix; the GPU part:
# gpu.shipped.attention_cross_device, label gpu). Usage and modes: tests/matrices/lib.sh.
#
# Beyond the sweep's own expectations (exit 0: every case drift or identical), explains
# auto's extra difference: per precision and "machine" (OpenBLAS core x device profile) it
# prints the share of changed pixels with attention auto and with forced math, and what auto
# chose there (the engine's "attention.auto*" trace notes: variant, framework path, chunk
# sizes, per attention shape when they differ), and checks the explanation holds:
#   - auto records a choice on every machine, forced math records none;
#   - on each machine, auto's output is bitwise math's exactly when none of auto's choices
#     reorders the sums: math, split (query slices leave every row's sums alone),
#     sub-quadratic with one key chunk (kv chunk >= the keys); a flash choice (SDPA flash or
#     mem-efficient key tiles) gives other bits;
#   - with forced math the machines differ only through their GEMM kernels: math runs whose
#     processes loaded the same OpenBLAS core (env.json) give the same bits, whatever device
#     profile they carry.
# It draws the table as SCRATCH/report/scenario/attention_changed.png (gnuplot, when
# installed): per machine, the changed pixels with forced math and with auto, fp32 and bf16.
. "$(dirname "$0")/lib.sh"
run_matrix attention_cross_device

"$py" - "$summary" "$mode" "$repro" "$scratch/report/scenario" <<'EOF'
import json, math, os, re, shutil, struct, subprocess, sys
s = json.load(open(sys.argv[1]))
check = sys.argv[2] != "explain"
repro = sys.argv[3]
plotdir = sys.argv[4]
bad = []

def notes(d):
    try:
        with open(d + "/trace.safetensors", "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            h = json.loads(f.read(n))
    except OSError:
        return None
    m = h.get("__metadata__") or {}
    return {k[5:]: v for k, v in m.items() if k.startswith("note/attention.auto")}

def choices(n):
    """[(shape "BxHxTqxTkxD", "variant backend q=Q kv=K")] of auto's choices: the first call's
    (its shape read from the reason) and one per other shape."""
    m = re.search(r"B=(\d+) H=(\d+) Tq=(\d+) Tk=(\d+) D=(\d+)", n.get("attention.auto.reason", ""))
    out = [("x".join(m.groups()) if m else "?", n.get("attention.auto.summary", "?"))]
    for k, v in sorted(n.items()):
        rest = k[len("attention.auto."):]
        if rest[:1].isdigit():
            out.append((rest, v))
    return out

def reorders(shape, summary):
    """Does this choice sum in another order than math does? Rows are independent, so query
    slices never change a sum; key chunks (subquad) and key tiles (flash) do."""
    parts = summary.split()
    var = parts[0]
    kv = int(parts[3].split("=")[1]) if len(parts) > 3 else 0
    Tk = int(shape.split("x")[3]) if shape[:1].isdigit() else None
    if var in ("math", "split"):
        return False
    if var == "subquad":
        return Tk is None or kv < Tk
    return True  # flash: a running max and sum over key tiles

def same_bits(a, b):
    out = subprocess.run([repro, "diff", a + "/latents.safetensors", b + "/latents.safetensors"],
                         capture_output=True, text=True)
    for line in out.stdout.splitlines():
        k, _, v = line.partition(" ")
        if k == "max_abs":
            return float(v) == 0.0
    return None

cases = {}
for c in s["cases"]:
    cfg = c.get("config")
    if not cfg or c["status"] != "ok":
        continue
    machine = c["name"].split(" auto ")[0].split(" math ")[0]
    cases[(cfg["precision"], machine, cfg["attention"])] = c

def core(c):
    try:
        return json.load(open(c["files"]["dir"] + "/env.json"))["openblas"]["core"]
    except (OSError, KeyError, ValueError):
        return "?"

table = {}   # (prec, machine) -> (math %, auto %, auto's variants)
print("\nattention_cross_device: changed pixels vs this machine's forced math, and what auto chose")
print("  %-5s %-13s %-12s %8s %8s  %s" % ("prec", "machine", "BLAS core", "math", "auto",
                                         "auto chose (per attention shape B x H x Tq x Tk x D)"))
for (prec, machine, att), c in sorted(cases.items()):
    if att != "auto":
        continue
    m = cases.get((prec, machine, "math"))
    ch = lambda x: "-" if x is None else "%.2f%%" % (100 * float((x["metrics"].get("worst") or {}).get("changed") or 0))
    d = c["files"]["dir"]
    n = notes(d) or {}
    ch_list = choices(n) if n else []
    print("  %-5s %-13s %-12s %8s %8s  %s" % (prec, machine, core(c), ch(m), ch(c),
                                           "; ".join("%s: %s" % x for x in ch_list) or "(no note)"))
    chv = lambda x: None if x is None else 100 * float((x["metrics"].get("worst") or {}).get("changed") or 0)
    table[(prec, machine)] = (chv(m), chv(c), "/".join(sorted({v.split()[0] for _, v in ch_list})) if ch_list else "?")
    reason = n.get("attention.auto.reason")
    if reason:
        print("  %-43s why: %s" % ("", reason[:300]))
    if not check:
        continue
    if not n:
        bad.append("%s: attention auto left no attention.auto note in its trace" % c["name"])
        continue
    if m is None:
        bad.append("%s: no forced-math case on the same machine" % c["name"])
        continue
    if notes(m["files"]["dir"]):
        bad.append("%s: forced math recorded an auto choice" % m["name"])
    # the report explains auto's choice: the classifier copies it into the case's evidence
    aa = (c.get("evidence") or {}).get("attention_auto") or ""
    if not aa.startswith("this case: " + n.get("attention.auto.summary", "?")):
        bad.append("%s: evidence.attention_auto %r does not name auto's choice %r" %
                   (c["name"], aa[:120], n.get("attention.auto.summary")))
    r = any(reorders(sh, v) for sh, v in ch_list)
    same = same_bits(d, m["files"]["dir"])
    if same is None:
        bad.append("%s: repro diff gave no max_abs" % c["name"])
    elif same == r:
        bad.append("%s: auto %s math's bits although its choices %s the sums" %
                   (c["name"], "gives" if same else "does not give", "reorder" if r else "do not reorder"))
# the scenario plot: per machine, changed pixels with forced math and with auto, per precision
if table and shutil.which(os.environ.get("REPRO_GNUPLOT") or "gnuplot"):
    os.makedirs(plotdir, exist_ok=True)
    order = ["this machine", "avx512-24g", "avx2-8g", "lowmem-2g", "sse2-4g"]
    mach = sorted({k[1] for k in table}, key=lambda x: order.index(x) if x in order else 99)
    gp = []
    for prec in ("fp32", "bf16"):
        gp.append("$%s << EOD" % prec)
        for mm in mach:
            t = table.get((prec, mm))
            if t:
                gp.append('"%s\\n%s" %.6g %.6g' % (mm, t[2], t[0] or 0, t[1] or 0))
        gp.append("EOD")
    gp.append("""set terminal pngcairo size 1100,440 font 'sans,9' noenhanced
set output '%s/attention_changed.png'
set multiplot layout 1,2 title 'attention_cross_device: pixels changed vs this machine forced math (one prompt, one seed, SD3 256 px)'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics nomirror scale 0 font 'sans,8'
set grid ytics
set yrange [0:*]
set key top left
set bmargin 4
set ylabel 'changed pixels (%%)'
set title 'fp32'
plot $fp32 using 2:xtic(1) title 'forced math' lc rgb '#4c72b0', '' using 3 title 'auto' lc rgb '#dd8452'
set title 'bf16'
plot $bf16 using 2:xtic(1) title 'forced math' lc rgb '#4c72b0', '' using 3 title 'auto' lc rgb '#dd8452'
unset multiplot
""" % plotdir)
    open(plotdir + "/attention_changed.gp", "w").write("\n".join(gp))
    r = subprocess.run([os.environ.get("REPRO_GNUPLOT") or "gnuplot", plotdir + "/attention_changed.gp"],
                       capture_output=True, text=True)
    print("  plot: %s" % (plotdir + "/attention_changed.png" if r.returncode == 0 else "gnuplot failed: " + r.stderr[-300:]))

# forced math: the same loaded core gives the same bits, whatever the device profile
first = {}
for (prec, machine, att), c in sorted(cases.items()):
    if att != "math" or not check:
        continue
    k = (prec, core(c))
    if k not in first:
        first[k] = c
    elif same_bits(first[k]["files"]["dir"], c["files"]["dir"]) is not True:
        bad.append("%s and %s: forced math with the same OpenBLAS core %s gives other bits" %
                   (first[k]["name"], c["name"], k[1]))
if bad:
    print("\n".join("FAIL: " + b for b in bad), file=sys.stderr)
    sys.exit(1)
EOF
[ $? -eq 0 ] || exit 1
echo ok
