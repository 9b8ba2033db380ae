# multinode.cmake — multi-node runs and the matrix that needs a second node
# (tests/multinode/, labels "matrix" and "multinode").
#   multinode.netns.selftest   two network namespaces (node0, node1) joined by a veth
#                              pair, redis-server in node0, 2 ranks per node started with
#                              torchrun's variables: comm-selftest across the link
#   multinode.netns.case       a tiny real case on the two nodes, bitwise identical to the
#                              same case under `repro launch -n 4` on this machine
#   multinode.netns.partition  node1's link goes down mid-run: node0's ranks fail within
#                              their communication timeout (exit 4), no hang
#   multinode.flux_matrix      matrices/flux_multinode.yaml: --dry-run verdicts (the
#                              doubled VAE factor is an expected CONFIG_ERROR, the correct
#                              one validates) and a real run of the CONFIG_ERROR group
# The netns tests need root, `ip netns`, redis-server and the gloo backend; without
# them they exit 77 (skipped) saying which. Each sets up and removes its own
# namespaces (unique names, private addresses), so they may run in parallel. The
# scripts bound every wait themselves; TIMEOUT is only ctest's backstop.
if(REPRO_HAVE_GLOO)
  set(_mn_comm gloo)
else()
  set(_mn_comm self)
endif()
set(_mn_env "OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1;REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache")
foreach(mode selftest case partition)
  add_test(NAME multinode.netns.${mode}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/multinode/netns.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/multinode-${mode} ${mode} ${_mn_comm})
  set_tests_properties(multinode.netns.${mode} PROPERTIES
    LABELS "matrix;multinode" SKIP_RETURN_CODE 77 TIMEOUT 120 ENVIRONMENT "${_mn_env}")
endforeach()
add_test(NAME multinode.flux_matrix
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/multinode/flux_matrix.sh $<TARGET_FILE:repro>
                 ${CMAKE_BINARY_DIR}/cli-scratch/multinode-flux-matrix ${CMAKE_SOURCE_DIR})
set_tests_properties(multinode.flux_matrix PROPERTIES
  LABELS "matrix;multinode" TIMEOUT 120 ENVIRONMENT "${_mn_env}")
