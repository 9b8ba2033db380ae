# weights.cmake — CLI tests of `repro weights` (tests/cli/weights.sh): synthetic
# weights are byte-identical across runs, and bad input gives the documented
# exit codes (1 for a failed request, 2 for usage) with a helpful message.
foreach(mode deterministic bad-model usage)
  add_test(NAME cli.weights.${mode}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/weights.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/weights-${mode} ${mode})
  set_tests_properties(cli.weights.${mode} PROPERTIES LABELS cli TIMEOUT 120)
endforeach()
