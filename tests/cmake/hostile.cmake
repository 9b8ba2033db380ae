# hostile.cmake — inputs that once took unbounded time or memory, and infrastructure
# failures that once became verdicts (issue 22).
#   cli.hostile.<mode>   tests/cli/hostile_inputs.sh: each input ends within 2 s and
#                        256 MiB (tests/tools/bounded_run) with a clear error: yaml_depth,
#                        st_metadata, size_bounds, worker_timeout, nul_name, png_limits,
#                        minor (label cli)
#   matrix.disk_full     tests/cli/disk_full.sh: smoke.yaml on a 12 MiB tmpfs is
#                        INFRA_ERROR, not CRASH, and recovers once the disk grows; needs
#                        root to mount (skips, 77, otherwise) (label matrix)
#   matrix.fd_exhausted  the same with `ulimit -n` too low for the launcher (EMFILE)
add_executable(bounded_run ${CMAKE_SOURCE_DIR}/tests/tools/bounded_run.c)
set_target_properties(bounded_run PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

set(_hostile_env "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
foreach(mode yaml_depth st_metadata size_bounds worker_timeout nul_name png_limits minor)
  add_test(NAME cli.hostile.${mode}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/hostile_inputs.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/hostile-${mode} ${mode} $<TARGET_FILE:bounded_run>)
  set_tests_properties(cli.hostile.${mode} PROPERTIES
    LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 120 ENVIRONMENT "${_hostile_env}")
endforeach()
add_test(NAME matrix.disk_full
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/disk_full.sh $<TARGET_FILE:repro>
                 ${CMAKE_BINARY_DIR}/cli-scratch/disk-full ${CMAKE_SOURCE_DIR})
set_tests_properties(matrix.disk_full PROPERTIES
  LABELS matrix SKIP_RETURN_CODE 77 TIMEOUT 300 ENVIRONMENT "${_hostile_env}")
add_test(NAME matrix.fd_exhausted
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/disk_full.sh $<TARGET_FILE:repro>
                 ${CMAKE_BINARY_DIR}/cli-scratch/fd-exhausted ${CMAKE_SOURCE_DIR} fds)
set_tests_properties(matrix.fd_exhausted PROPERTIES
  LABELS matrix TIMEOUT 300 ENVIRONMENT "${_hostile_env}")
