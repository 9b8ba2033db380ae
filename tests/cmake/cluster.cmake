# cluster.cmake — sweeps through the cluster launchers (backends/launcher.h,
# tests/cluster/; label "cluster").
#   cluster.errors   --launcher srun outside an allocation, mpirun without --hostfile or
#                    with a bad one, srun / mpirun missing from PATH, a bad launcher: key:
#                    clear errors before anything runs (no root needed; about a second)
#   cluster.srun     a real two-node Slurm (munged, slurmctld, slurmd n1 + n2 on this
#                    machine, tests/cluster/slurm_up.sh): smoke.yaml, a 2 nodes x 2 ranks
#                    flux-tiny case and flux_multinode.yaml through srun with the verdicts
#                    and bits of the local launcher; a crash (CRASH naming rank and node) and
#                    a hang (HANG at the deadline, the step cancelled), one stalled rank
#                    (HANG), ci/nightly.sh --launcher srun; 26-35 s on 2 cores
#   cluster.mpirun   the same through Open MPI's mpirun on two network-namespace hosts
#                    (tests/cluster/mpirun_sweep.sh); 25-45 s
# srun and mpirun need root; they install their Debian packages with apt-get when missing
# and skip (77) when that fails or they are not root. REPRO_NO_APT=1: never apt-get.
# REPRO_SKIP_CLUSTER_TESTS=1 skips them (e.g. a CI without the time to spare).
if(REPRO_HAVE_GLOO)
  set(_cl_comm gloo)
else()
  set(_cl_comm self)
endif()
set(_cl_env "OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1;REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache")
add_test(NAME cluster.errors
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cluster/errors.sh $<TARGET_FILE:repro>
                 ${CMAKE_BINARY_DIR}/cli-scratch/cluster-errors ${CMAKE_SOURCE_DIR})
set_tests_properties(cluster.errors PROPERTIES LABELS "cluster" TIMEOUT 60 ENVIRONMENT "${_cl_env}")
foreach(l srun mpirun)
  add_test(NAME cluster.${l}
           COMMAND sh -c "[ -n \"\$REPRO_SKIP_CLUSTER_TESTS\" ] && { echo 'SKIP: REPRO_SKIP_CLUSTER_TESTS is set'; exit 77; }; exec sh \"$0\" \"$@\""
                   ${CMAKE_SOURCE_DIR}/tests/cluster/${l}_sweep.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/cluster-${l} ${CMAKE_SOURCE_DIR} ${_cl_comm})
  set_tests_properties(cluster.${l} PROPERTIES LABELS "cluster;multinode" SKIP_RETURN_CODE 77 TIMEOUT 420
                       ENVIRONMENT "${_cl_env}")
endforeach()
