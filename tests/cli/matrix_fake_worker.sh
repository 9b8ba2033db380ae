#!/bin/sh
# matrix_fake_worker.sh — stands in for `repro worker` in the runner's tests
# (repro --matrix ... --worker-exe this-script): it runs the real worker, unless
# the case file names a case it is told to break. Steered by the environment,
# which the launcher passes to every rank:
#   REPRO_TEST_REPRO   the real repro binary (required)
#   REPRO_TEST_DELAY   seconds to sleep before starting (a window to kill the sweep in)
#   REPRO_TEST_FAULT   ';'-separated KIND:TEXT, for cases whose case.json contains TEXT
#                      (e.g. a case name): crash (REPRO_TEST_RANK, default 1, raises
#                      SIGSEGV), hang (every rank sleeps), stall (rank REPRO_TEST_RANK, default
#                      1, sleeps; the others run), exit3 (rank 0 exits 3 with a
#                      configuration message)
real=${REPRO_TEST_REPRO:?REPRO_TEST_REPRO must name the real repro binary}
casefile= prev=
for a in "$@"; do
    [ "$prev" = --case-file ] && casefile=$a
    prev=$a
done
[ -n "${REPRO_TEST_DELAY:-}" ] && sleep "$REPRO_TEST_DELAY"
rank=${REPRO_RANK:-${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-0}}} # repro launch, srun, mpirun
IFS=';'
for f in ${REPRO_TEST_FAULT:-}; do
    kind=${f%%:*} text=${f#*:}
    [ -n "$casefile" ] && grep -qF -- "$text" "$casefile" || continue
    case $kind in
    crash)
        if [ "$rank" = "${REPRO_TEST_RANK:-1}" ]; then
            echo "fake worker rank $rank: crashing as asked (SIGSEGV)" >&2
            kill -SEGV $$
        fi
        ;;
    hang)
        echo "fake worker rank $rank: hanging as asked" >&2
        exec sleep 3600
        ;;
    stall)
        if [ "$rank" = "${REPRO_TEST_RANK:-1}" ]; then
            echo "fake worker rank $rank: stalling as asked" >&2
            exec sleep 3600
        fi
        ;;
    exit3)
        if [ "$rank" = 0 ]; then
            echo "fake worker rank 0: heads=6 not divisible by ulysses=4 (as asked)" >&2
            exit 3
        fi
        exec sleep 3600
        ;;
    esac
done
unset IFS
exec "$real" "$@"
