# matrix.cmake — matrix files and the sweep runner (harness/sweep/matrix.c, runner.c,
# golden.c, cmd_matrix.c, cmd_golden.c).
#   unit.test_matrix       expansion, filters, the malformed set tests/matrix/bad/
#                          (each NAME.yaml with its one-line error in NAME.err), store
#                          helpers (label unit; registered by the tests/unit glob)
#   cli.matrix.*           the CLI: malformed files, --dry-run / --filter / --help-matrix,
#                          CONFIG_ERROR / SKIPPED / CRASH / HANG outcomes and resume rules,
#                          repeats, the golden store (tests/cli/matrix_cli.sh, label cli)
#   matrix.smoke           ./repro --matrix matrices/smoke.yaml: under 2 minutes, the table,
#                          results/ complete (tests/cli/matrix_smoke.sh, label matrix)
#   matrix.sigkill_resume  SIGKILL the sweep midway, run it again: it completes, nothing
#                          finished is recomputed, nothing is corrupt (label matrix)
# Results go under the build tree; synthetic weights to its test cache.
if(TARGET test_matrix)
  target_compile_definitions(test_matrix PRIVATE REPRO_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                             REPRO_TEST_SCRATCH="${CMAKE_BINARY_DIR}/unit-scratch/matrix")
endif()

set(_matrix_env "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
foreach(mode bad dryrun outcomes resume repeat golden)
  add_test(NAME cli.matrix.${mode}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/matrix_cli.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/matrix-${mode} ${mode} ${CMAKE_SOURCE_DIR})
  set_tests_properties(cli.matrix.${mode} PROPERTIES
    LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 300 ENVIRONMENT "${_matrix_env}")
endforeach()
foreach(mode smoke sigkill_resume)
  add_test(NAME matrix.${mode}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/matrix_smoke.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/matrix-${mode} ${mode} ${CMAKE_SOURCE_DIR})
  set_tests_properties(matrix.${mode} PROPERTIES
    LABELS matrix SKIP_RETURN_CODE 77 TIMEOUT 600 ENVIRONMENT "${_matrix_env}")
endforeach()
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/unit-scratch/matrix)  # the unit test's mkdir is not recursive
