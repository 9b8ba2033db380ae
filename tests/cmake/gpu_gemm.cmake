# GPU GEMM (cuBLASLt) against the CPU's rp_gemm: label gpu; exits 77 (skipped) when no
# CUDA device is visible. Built only when CMake found nvcc.
if(REPRO_HAVE_CUDA)
  add_executable(test_cuda_gemm ${CMAKE_SOURCE_DIR}/tests/gpu/test_cuda_gemm.c)
  target_link_libraries(test_cuda_gemm PRIVATE repro_core)
  set_target_properties(test_cuda_gemm PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME gpu.gemm COMMAND test_cuda_gemm)
  set_tests_properties(gpu.gemm PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 1200)
endif()
# The invariant GEMM on the device (numerics invariant, issue 19) against the CPU's
# rp_gemm_invariant, bit for bit: label gpu; 77 without a CUDA device.
if(REPRO_HAVE_CUDA)
  add_executable(test_cuda_gemm_invariant ${CMAKE_SOURCE_DIR}/tests/gpu/test_cuda_gemm_invariant.c)
  target_link_libraries(test_cuda_gemm_invariant PRIVATE repro_core)
  set_target_properties(test_cuda_gemm_invariant PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME gpu.gemm_invariant COMMAND test_cuda_gemm_invariant)
  set_tests_properties(gpu.gemm_invariant PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
