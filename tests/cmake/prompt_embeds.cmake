# prompt_embeds.cmake — precomputed prompt embeddings through `repro generate` and a matrix
# case, bitwise against the text encoder's own (tests/cli/prompt_embeds.sh, label cli).
foreach(mode generate matrix)
  add_test(NAME cli.prompt_embeds.${mode}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/prompt_embeds.sh $<TARGET_FILE:repro> $<TARGET_FILE:latents_cmp>
                   ${CMAKE_BINARY_DIR}/cli-scratch/prompt-embeds-${mode} ${mode})
  set_tests_properties(cli.prompt_embeds.${mode} PROPERTIES
    LABELS cli
    TIMEOUT 300
    ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=2")
endforeach()
