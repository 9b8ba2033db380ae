# GPU attention test (label gpu): every CUDA attention variant against the CPU math
# attention; exits 77 (skipped) when no CUDA device is visible. Built only with CUDA.
if(REPRO_HAVE_CUDA)
  add_executable(test_cuda_attention ${CMAKE_SOURCE_DIR}/tests/gpu/test_cuda_attention.c)
  target_link_libraries(test_cuda_attention PRIVATE repro_core)
  set_target_properties(test_cuda_attention PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME gpu.attention COMMAND test_cuda_attention)
  set_tests_properties(gpu.attention PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
endif()
# The canonical attention of numerics invariant on the device (issue 19) against the CPU's
# rp_attention_canonical, bit for bit: label gpu; 77 without a CUDA device.
if(REPRO_HAVE_CUDA)
  add_executable(test_cuda_attention_canonical ${CMAKE_SOURCE_DIR}/tests/gpu/test_cuda_attention_canonical.c)
  target_link_libraries(test_cuda_attention_canonical PRIVATE repro_core)
  set_target_properties(test_cuda_attention_canonical PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME gpu.attention_canonical COMMAND test_cuda_attention_canonical)
  set_tests_properties(gpu.attention_canonical PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
