# gpu_ops.cmake — the CUDA non-GEMM operators (engine/cuda/ops_*.cu) against the CPU
# operators they mirror (tests/gpu/test_cuda_ops.c). Label gpu; exits 77 (skipped)
# when no CUDA device is visible, so CPU-only machines report it as skipped.
if(REPRO_HAVE_CUDA)
  add_executable(test_cuda_ops ${CMAKE_SOURCE_DIR}/tests/gpu/test_cuda_ops.c)
  target_link_libraries(test_cuda_ops PRIVATE repro_core)
  set_target_properties(test_cuda_ops PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME gpu.ops COMMAND test_cuda_ops)
  set_tests_properties(gpu.ops PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
