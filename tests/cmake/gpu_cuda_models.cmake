# gpu_cuda_models.cmake — whole DiT / SD3 / FLUX generations on the CUDA device against the
# CPU (tests/gpu/test_cuda_models.c): deterministic twice bitwise, fp32 within a derived
# NMSE bound, fast / tf32 / bf16 reported. Label gpu; 77 without a visible GPU.
if(REPRO_HAVE_CUDA)
  add_executable(test_cuda_models ${CMAKE_SOURCE_DIR}/tests/gpu/test_cuda_models.c)
  target_link_libraries(test_cuda_models PRIVATE repro_core)
  set_target_properties(test_cuda_models PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME gpu.models_c COMMAND test_cuda_models)
  set_tests_properties(gpu.models_c PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()
