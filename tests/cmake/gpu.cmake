# GPU tests: label gpu; each exits 77 (skipped) when no CUDA device is visible.
add_executable(gpu_device ${CMAKE_SOURCE_DIR}/tests/gpu/gpu_device.c)
target_link_libraries(gpu_device PRIVATE repro_core)
set_target_properties(gpu_device PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_test(NAME gpu.device COMMAND gpu_device)
set_tests_properties(gpu.device PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
