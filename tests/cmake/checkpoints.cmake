# prompt_embeds.cmake — running real checkpoints as they ship (label cli):
#   cli.prompt_embeds.<mode>  precomputed prompt embeddings through `repro generate` and a matrix
#                             case, bitwise against the text encoder's own (tests/cli/prompt_embeds.sh)
#   cli.checkpoints.<mode>    BFL / ComfyUI / sharded FLUX files through `repro generate --weights`,
#                             bitwise against the diffusers-named file; VAEs under the LDM
#                             names (bare, first_stage_model.) through --vae-weights, bitwise
#                             the same image; FLUX-schnell's schedule
#                             (tests/cli/checkpoints.sh; exit 77 = skipped without numpy)
foreach(mode generate matrix)
  add_test(NAME cli.prompt_embeds.${mode}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/prompt_embeds.sh $<TARGET_FILE:repro> $<TARGET_FILE:latents_cmp>
                   ${CMAKE_BINARY_DIR}/cli-scratch/prompt-embeds-${mode} ${mode})
  set_tests_properties(cli.prompt_embeds.${mode} PROPERTIES
    LABELS cli
    TIMEOUT 300
    ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=2")
endforeach()
foreach(mode formats schnell vae)
  add_test(NAME cli.checkpoints.${mode}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/checkpoints.sh $<TARGET_FILE:repro> $<TARGET_FILE:latents_cmp>
                   ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}/cli-scratch/checkpoints-${mode} ${mode})
  set_tests_properties(cli.checkpoints.${mode} PROPERTIES
    LABELS cli
    TIMEOUT 300
    SKIP_RETURN_CODE 77
    ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=2")
endforeach()
