# GPU attention test (label gpu): every CUDA attention variant against the CPU math
# attention; exits 77 (skipped) when no CUDA device is visible. Built only with CUDA.
if(REPRO_HAVE_CUDA)
  add_executable(test_cuda_attention ${CMAKE_SOURCE_DIR}/tests/gpu/test_cuda_attention.c)
  target_link_libraries(test_cuda_attention PRIVATE repro_core)
  set_target_properties(test_cuda_attention PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME gpu.attention COMMAND test_cuda_attention)
  set_tests_properties(gpu.attention PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
endif()
