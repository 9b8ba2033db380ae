# generate.cmake — `repro generate`: sampler parity against the independent torch
# reference (tests/reference/test_sample_parity.py, label "reference") and CLI checks
# (tests/cli/generate_cli.sh, label "cli"). Synthetic weights go to a cache inside the
# build tree, never the user's ~/.cache.
add_test(NAME reference.sample_parity
         COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/test_sample_parity.py
                 --repro $<TARGET_FILE:repro>
                 --scratch ${CMAKE_BINARY_DIR}/reference-scratch/sample)
set_tests_properties(reference.sample_parity PROPERTIES
  LABELS reference
  SKIP_RETURN_CODE 77
  TIMEOUT 600
  ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OMP_NUM_THREADS=2;OPENBLAS_NUM_THREADS=2")

foreach(mode acceptance determinism items usage)
  add_test(NAME cli.generate.${mode}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/generate_cli.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/generate-${mode} ${mode})
  set_tests_properties(cli.generate.${mode} PROPERTIES
    LABELS cli
    TIMEOUT 300
    ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=2")
endforeach()
