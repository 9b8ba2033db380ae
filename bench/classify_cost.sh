#!/usr/bin/env bash
# bench/classify_cost.sh — what the classifier's evidence costs a sweep: each matrix swept
# with its classifier (the default) and with `classify: false`, in fresh result
# directories, alternating which goes first, REPS times; prints per matrix the median wall
# seconds of both and their ratio (the figure issue 17 holds to <= 1.5), and the machine.
#
#   bench/classify_cost.sh [-r REPS] [REPRO] [MATRIX...]
#     default REPRO: build/../repro next to this script; default MATRIX: smoke and the
#     scenario matrices that run on a CPU (dit_async_warmup, attention_cross_device,
#     flux_dp, sd3_batch: their GPU halves are SKIPPED here, as in CI)
# Ratios, not seconds, are the result: both sweeps run on the same machine in the same
# minute, so its speed cancels. Run it on a quiet machine.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
reps=3
if [[ "${1:-}" == "-r" ]]; then reps=$2; shift 2; fi
repro=${1:-$here/../repro}
shift || true
mats=("$@")
if ((${#mats[@]} == 0)); then
    for m in smoke dit_async_warmup attention_cross_device flux_dp sd3_batch; do mats+=("$here/../matrices/$m.yaml"); done
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# the matrix with its classify: key (a scalar or a block) replaced by `classify: false`
no_classify() {
    awk 'BEGIN { skip = 0 }
         /^classify:/ { skip = 1; next }
         skip && /^[ \t]/ { next }
         { skip = 0; print }
         END { print "classify: false" }' "$1"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

sweep() { # matrix results -> wall seconds
    local t0 t1
    t0=$(date +%s.%N)
    "$repro" --matrix "$1" --results "$2" --progress plain >/dev/null 2>&1 || true
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}

echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores;" \
     "OpenBLAS core ${OPENBLAS_CORETYPE:-library pick}; git $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?')"
printf '%-28s %10s %10s %7s\n' matrix classify_s plain_s ratio
for m in "${mats[@]}"; do
    name=$(basename "$m" .yaml)
    no_classify "$m" >"$work/$name-plain.yaml"
    : >"$work/c" ; : >"$work/p"
    for ((k = 0; k < reps; k++)); do
        rm -rf "$work/rc" "$work/rp"
        if ((k % 2 == 0)); then
            sweep "$m" "$work/rc" >>"$work/c"; sweep "$work/$name-plain.yaml" "$work/rp" >>"$work/p"
        else
            sweep "$work/$name-plain.yaml" "$work/rp" >>"$work/p"; sweep "$m" "$work/rc" >>"$work/c"
        fi
    done
    c=$(median <"$work/c") p=$(median <"$work/p")
    printf '%-28s %10.2f %10.2f %7.2f\n' "$name" "$c" "$p" "$(echo "$c / $p" | bc -l)"
done
