# generate_flow.cmake — `repro generate` for the text-conditional families (SD3, FLUX):
#   reference.flow_sample_parity  the whole pipeline (text encoder, transformer, flow-matching
#                                 Euler, CFG / embedded guidance) against the independent torch
#                                 loops of tests/reference/flow_sample_ref.py (label reference;
#                                 exit 77 = skipped when /usr/bin/python3 lacks torch)
#   cli.generate_flow.<mode>      CLI acceptance, determinism, prompts files, usage errors and
#                                 `repro weights` for the new presets
#                                 (tests/cli/generate_flow_cli.sh)
#   cli.generate_batch.<model>    batch independence: item i of a batch of 4 against the same
#                                 item run alone (tests/cli/generate_batch.sh, with the
#                                 latents_cmp and gemm_rows tools)
# Synthetic weights go to a cache inside the build tree, never the user's ~/.cache.
add_test(NAME reference.flow_sample_parity
         COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/test_flow_sample_parity.py
                 --repro $<TARGET_FILE:repro>
                 --scratch ${CMAKE_BINARY_DIR}/reference-scratch/flow-sample)
set_tests_properties(reference.flow_sample_parity PROPERTIES
  LABELS reference
  SKIP_RETURN_CODE 77
  TIMEOUT 600
  ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OMP_NUM_THREADS=2;OPENBLAS_NUM_THREADS=2")

foreach(mode acceptance determinism prompts-file usage weights)
  add_test(NAME cli.generate_flow.${mode}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/generate_flow_cli.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/generate-flow-${mode} ${mode})
  set_tests_properties(cli.generate_flow.${mode} PROPERTIES
    LABELS cli
    TIMEOUT 300
    ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=2")
endforeach()

# latents_cmp: compares one item of a tensor between two latents files (bitwise / ulps);
# gemm_rows: whether rp_gemm's row bits depend on M for given (N, K) — the evidence the
# batch test prints when a joint batch is not bitwise equal to lone runs.
foreach(tool latents_cmp gemm_rows)
  add_executable(${tool} ${CMAKE_SOURCE_DIR}/tests/tools/${tool}.c)
  target_link_libraries(${tool} PRIVATE repro_core)
  set_target_properties(${tool} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
endforeach()
# cli.invariant.<model>: numerics invariant bitwise across OpenBLAS kernel sets, thread
# counts and the batch (tests/cli/invariant_kernels.sh)
foreach(model dit-tiny sd3-tiny sd3.5-medium-tiny flux-tiny)
  add_test(NAME cli.invariant.${model}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/invariant_kernels.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/invariant-${model} ${model} $<TARGET_FILE:latents_cmp>)
  set_tests_properties(cli.invariant.${model} PROPERTIES
    LABELS cli TIMEOUT 300 ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache")
endforeach()
foreach(model sd3-tiny flux-tiny)
  add_test(NAME cli.generate_batch.${model}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/generate_batch.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/generate-batch-${model} ${model}
                   $<TARGET_FILE:latents_cmp> $<TARGET_FILE:gemm_rows>)
  set_tests_properties(cli.generate_batch.${model} PROPERTIES
    LABELS cli
    TIMEOUT 300
    ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=2")
endforeach()
