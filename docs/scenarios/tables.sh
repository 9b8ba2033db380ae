#!/bin/sh
# tables.sh — the README's scenario tables, from stored runs of the shipped matrices, each
# under a line naming the machine, CPU, OpenBLAS kernel set and threads it came from, so
# another machine can refresh them (README.md, "The five reports").
#
#   docs/scenarios/tables.sh [--run] REPRO RESULTS_ROOT > tables.md
#
#   --run          first run each scenario's CPU part into RESULTS_ROOT (a finished case is
#                  kept, not recomputed: ~12 min on 2 cores from nothing)
#   REPRO          the repro binary (build/repro)
#   RESULTS_ROOT   holds RESULTS_ROOT/<matrix>/ for flux_dp, attention_cross_device,
#                  sd3_batch, dit_async_warmup
# The tables are the scenario tests' own (tests/matrices/<matrix>.sh in `md` mode: the same
# code that checks the claims prints them). Scenarios without results are said so and skipped.
set -eu
run=0
[ "${1:-}" = --run ] && { run=1; shift; }
[ $# -eq 2 ] || { echo "usage: $0 [--run] REPRO RESULTS_ROOT" >&2; exit 2; }
repro=$1 root=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
py=${REPRO_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=$(command -v python3)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for m in flux_dp attention_cross_device sd3_batch dit_async_warmup; do
    if [ $run = 1 ]; then
        "$repro" --matrix "$src/matrices/$m.yaml" --filter device=cpu --results "$root" --progress plain \
            >"$tmp/$m.sweep" 2>&1 || { tail -n 30 "$tmp/$m.sweep" >&2; echo "$m: the sweep failed" >&2; exit 1; }
    fi
    echo "### $m"
    echo
    if [ ! -d "$root/$m" ]; then
        echo "(no results under $root/$m)"
        echo
        continue
    fi
    # provenance: the machine every case of the run recorded (env.json), and the threads per rank
    "$py" - "$root/$m" <<'EOF'
import glob, json, os, sys, time
envs, threads, newest, pick, forced = [], set(), 0, set(), set()
for d in sorted(glob.glob(os.path.join(sys.argv[1], "*", ""))):
    try:
        e = json.load(open(d + "env.json"))
        c = json.load(open(d + "case.json"))
    except (OSError, ValueError):
        continue
    if (c.get("device") or "cpu") != "cpu":
        continue
    envs.append(e)
    (forced if c.get("blas_core") else pick).add((e.get("openblas") or {}).get("core", "?"))
    threads.add(c.get("threads") or 1)
    newest = max(newest, os.path.getmtime(d + "env.json"))
if not envs:
    print("(no CPU case with an env.json)\n")
    sys.exit(0)
h, b = envs[0].get("host") or {}, envs[0].get("openblas") or {}
kern = "OpenBLAS kernels %s (the library's pick)" % "/".join(sorted(pick))
if forced - pick:
    kern += "; cases that force theirs: %s" % ", ".join(sorted(forced - pick))
own = b.get("config", "").split()
simd = " ".join(s for s in (h.get("cpu_simd") or "").split() if s in ("avx512f", "avx2", "avx", "sse4_2"))
print("_Measured on %s (%s cores, %s), %s %s; %s; %s thread%s per rank; repro %s, %s. "
      "Refresh: `docs/scenarios/tables.sh --run build/repro results`._\n" % (
          h.get("cpu_model", "?"), h.get("cpu_cores_online", "?"), simd or "?", own[0] if own else "OpenBLAS",
          own[1] if len(own) > 1 else "?", kern,
          "/".join(map(str, sorted(threads))), "" if threads == {1} else "s",
          (envs[0].get("build") or {}).get("git_revision", "?"), time.strftime("%Y-%m-%d", time.gmtime(newest))))
EOF
    sh "$src/tests/matrices/$m.sh" "$repro" "$tmp/$m" "$src" md "$root/$m" 2>"$tmp/$m.err" ||
        { cat "$tmp/$m.err" >&2; echo "$m: the table failed" >&2; exit 1; }
    echo
done
