#!/bin/sh
# attention_cross_device.sh — matrices/attention_cross_device.yaml (ctest
# matrix.shipped.attention_cross_device, label matrix; the GPU part:
# gpu.shipped.attention_cross_device, label gpu). Usage and modes: tests/matrices/lib.sh.
#
# Beyond the sweep's own expectations (exit 0: every case drift or identical), explains
# auto's extra difference: per precision and "machine" (OpenBLAS core x device profile) it
# prints the share of changed pixels with attention auto and with forced math, and what auto
# chose there (the engine's "attention.auto*" trace notes: variant, framework path, chunk
# sizes, per attention shape when they differ), and checks the explanation holds, asserting
# bit-equality only where the code makes the same calls into the same GEMM arithmetic:
#   - auto records a choice on every machine, forced math records none;
#   - on each machine, auto's latents are bitwise math's when auto's choices for the models'
#     attention make math's calls, and its images too when the VAE's choice does as well:
#     math (SDPA math), or split / sub-quadratic with one key chunk whose query slices hold
#     every query row (q >= Tq). With slices of fewer rows the per-row operations are math's
#     but each GEMM has fewer rows, and whether a BLAS gives a row the same bits for another
#     row count is the BLAS's property, not ours: on the CPU it is measured in the same run
#     (tests/tools/gemm_rows --nt / --nn, the two attention GEMMs at the slice and full row
#     counts, under the case's kernel set and thread count) and bits are required equal only
#     where it says the rows do not depend on it; on a GPU (cuBLASLt picks a tile and split-K
#     per shape) never. A flash choice (SDPA flash or mem-efficient key tiles) or sub-
#     quadratic with several key chunks does other operations (exp(m_old - m_new) rescaling,
#     one division at the end), which must give other latents when the models' attention
#     does so; the VAE's attention (single head) feeds only the 8-bit images, where its
#     differences may round away: nothing is asserted of those;
#   - with forced math the CPU machines differ only through their GEMM kernels (the device
#     profile enters no forced-math computation): CPU math runs whose processes loaded the
#     same OpenBLAS kernel set (env.json) at the same thread count give the same bits. GPU
#     cases are not paired by the host's kernel set: their GEMMs are cuBLASLt's (on a GPU
#     machine's host the "gpu math" case reports the host's core, e.g. Prescott, and of
#     course other bits than the CPU's math).
# It draws the table as SCRATCH/report/scenario/attention_changed.png (gnuplot, when
# installed): per machine, the changed pixels with forced math and with auto, fp32 and bf16.
. "$(dirname "$0")/lib.sh"
run_matrix attention_cross_device

gemm_rows=${REPRO_GEMM_ROWS:-$(dirname "$repro")/tests/gemm_rows}
"$py" - "$summary" "$mode" "$repro" "$scratch/report/scenario" "$gemm_rows" <<'EOF'
import json, math, os, re, shutil, struct, subprocess, sys
s = json.load(open(sys.argv[1]))
check = sys.argv[2] not in ("explain", "md")
md, mdout = sys.argv[2] == "md", sys.stdout
if md:
    sys.stdout = sys.stderr   # the text tables; the Markdown goes to mdout
repro = sys.argv[3]
plotdir = sys.argv[4]
gemm_rows = sys.argv[5]
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

def parse(shape, summary):
    """(variant, q chunk, kv chunk, Tq, Tk, D) of one choice; Tq.. None when the shape is unknown"""
    parts = summary.split()
    num = lambda i: int(parts[i].split("=")[1]) if len(parts) > i and "=" in parts[i] else 0
    dims = [int(x) for x in shape.split("x")] if shape[:1].isdigit() else [None] * 5
    return parts[0], num(2), num(3), dims[2], dims[3], dims[4]

def reorders(shape, summary):
    """Does this choice sum in another order than math does? Rows are independent, so query
    slices never change a sum; key chunks (subquad) and key tiles (flash) do."""
    var, q, kv, Tq, Tk, D = parse(shape, summary)
    if var in ("math", "split"):
        return False
    if var == "subquad":
        return Tk is None or kv < Tk
    return True  # flash: a running max and sum over key tiles

rows_cache = {}
def rows_invariant(shape, summary, c):
    """Are math's calls and this choice's query-slice calls bitwise the same per row here?
    (True, why) when the choice makes math's calls or gemm_rows finds no row-count dependence
    for its slice shapes under the case's kernel set and threads; (False, why) otherwise."""
    var, q, kv, Tq, Tk, D = parse(shape, summary)
    if var == "math":
        return True, "math's calls"
    if Tq is not None and q >= Tq:
        return True, "one slice of all %d rows: math's calls" % Tq
    if ((c.get("config") or {}).get("device") or "cpu") != "cpu":
        return False, "query slices on a GPU: cuBLASLt chooses per shape"
    if Tq is None or q < 1:
        return False, "unknown attention shape or slice size"
    core = core_of(c)
    threads = str((c.get("config") or {}).get("threads") or 1)
    ms = sorted({q} | ({Tq % q} if Tq % q else set()))
    key = (core, threads, tuple(ms), Tq, Tk, D)
    if key not in rows_cache:
        envv = dict(os.environ, OPENBLAS_NUM_THREADS=threads)
        if core not in ("?", "unknown"):
            envv["OPENBLAS_CORETYPE"] = core
        outs, ok = [], True
        for m in ms:
            for op, n, k in (("--nt", Tk, D), ("--nn", D, Tk)):
                try:
                    r = subprocess.run([gemm_rows, op, str(m), str(Tq), str(n), str(k)], capture_output=True,
                                       text=True, env=envv)
                except OSError as e:
                    r = None
                    outs.append("gemm_rows did not run: %s" % e)
                if r is None or r.returncode != 0 or "0 of 1 shapes" not in r.stdout:
                    ok = False
                    if r is not None:
                        outs.append(" ".join(r.stdout.split("\n")[0].split()) or r.stderr.strip())
        rows_cache[key] = (ok, "%s, %s thread(s): %s" % (core, threads, "rows of %s vs %d rows bitwise equal" %
                                                         ("/".join(map(str, ms)), Tq) if ok else "; ".join(outs)))
    return rows_cache[key]

def same_bits(a, b):
    out = subprocess.run([repro, "diff", a + "/latents.safetensors", b + "/latents.safetensors"],
                         capture_output=True, text=True)
    for line in out.stdout.splitlines():
        k, _, v = line.partition(" ")
        if k == "max_abs":
            return float(v) == 0.0
    return None

def same_images(a, b):
    """every image bitwise equal (True), some differ (False), none compared (None)"""
    out = subprocess.run([repro, "diff", a, b], capture_output=True, text=True)
    vals = [float(line.split()[1]) for line in out.stdout.splitlines()
            if line.startswith("image-") and line.split()[0].endswith(".max_abs")]
    return None if not vals else all(v == 0.0 for v in vals)

cases = {}
for c in s["cases"]:
    cfg = c.get("config")
    if not cfg or c["status"] != "ok":
        continue
    machine = c["name"].split(" auto ")[0].split(" math ")[0]
    cases[(cfg["precision"], machine, cfg["attention"])] = c

def core_of(c):
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
    print("  %-5s %-13s %-12s %8s %8s  %s" % (prec, machine, core_of(c), ch(m), ch(c),
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
    # the VAE's attention (the engine's only single-head one, engine/vae/vae.c) feeds the
    # images, not the latents: its choices bear on the images' bits only
    vae = lambda sh: sh.split("x")[1:2] == ["1"]
    model_ch = [(sh, v) for sh, v in ch_list if not vae(sh)]
    r_model = any(reorders(sh, v) for sh, v in model_ch)
    r_all = any(reorders(sh, v) for sh, v in ch_list)
    inv = {(sh, v): rows_invariant(sh, v, c) for sh, v in ch_list if not reorders(sh, v)}
    print("  %-43s bits: %s" % ("", "; ".join(sorted({"%s: %s" % (sh, w) for (sh, v), (ok, w) in inv.items()})) or "-"))
    lat, img = same_bits(d, m["files"]["dir"]), same_images(d, m["files"]["dir"])
    if lat is None or img is None:
        bad.append("%s: repro diff gave no max_abs for the latents or the images" % c["name"])
    elif r_model and lat:
        bad.append("%s: auto gives math's latents bit for bit although its choices reorder the sums" % c["name"])
    elif not r_model and not lat and all(inv[x][0] for x in model_ch):
        bad.append("%s: auto's latents are not math's although its choices make math's calls or calls "
                   "whose rows this BLAS computes bitwise alike (%s)" % (c["name"], "; ".join(inv[x][1] for x in model_ch)))
    elif not r_all and not img and all(ok for ok, _ in inv.values()):
        bad.append("%s: auto's images are not math's although every choice (the VAE's too) makes math's calls "
                   "or calls whose rows this BLAS computes bitwise alike" % c["name"])
if md and table:
    order = ["this machine", "avx512-24g", "avx2-8g", "lowmem-2g", "sse2-4g"]
    cores = {}
    for (prec, machine, att), c in cases.items():
        cores.setdefault(machine, core_of(c))
    print("| machine (device profile) | OpenBLAS kernels | fp32: forced math | fp32: auto | bf16: forced math | bf16: auto | auto chose |",
          file=mdout)
    print("|---|---|---|---|---|---|---|", file=mdout)
    pc = lambda v: "-" if v is None else "0" if v == 0 else "%.3f %%" % v if v < 1 else "%.1f %%" % v
    for mm in sorted({k[1] for k in table}, key=lambda x: order.index(x) if x in order else 99):
        f32, b16 = table.get(("fp32", mm), (None, None, "?")), table.get(("bf16", mm), (None, None, "?"))
        print("| %s | %s | %s | %s | %s | %s | %s |" % (mm, cores.get(mm, "?"), pc(f32[0]), pc(f32[1]), pc(b16[0]), pc(b16[1]),
                                                     f32[2] if f32[2] == b16[2] else "%s / %s" % (f32[2], b16[2])), file=mdout)
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

# forced math on the CPU: the same loaded kernel set and thread count give the same bits,
# whatever the device profile (GPU cases compute their GEMMs with cuBLASLt: not paired)
first = {}
for (prec, machine, att), c in sorted(cases.items()):
    if att != "math" or not check or (c["config"].get("device") or "cpu") != "cpu":
        continue
    k = (prec, core_of(c), c["config"].get("threads"))
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
[ "$mode" = md ] || echo ok
