# reference_sd3.cmake — SD3 (MMDiT) forward parity: tests/tools/sd3_forward (C engine on
# synthetic weights) against the independent PyTorch model in tests/reference/sd3_ref.py
# (float32 bar 1e-4; float64 errors logged). Scratch files stay inside the build tree.
add_executable(sd3_forward ${CMAKE_SOURCE_DIR}/tests/tools/sd3_forward.c)
target_link_libraries(sd3_forward PRIVATE repro_core)
set_target_properties(sd3_forward PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

add_test(NAME reference.sd3_parity
         COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/test_sd3_parity.py
                 --tool $<TARGET_FILE:sd3_forward>
                 --scratch ${CMAKE_BINARY_DIR}/reference-scratch/sd3)
set_tests_properties(reference.sd3_parity PROPERTIES
  LABELS reference
  SKIP_RETURN_CODE 77
  TIMEOUT 300
  ENVIRONMENT "OMP_NUM_THREADS=2;OPENBLAS_NUM_THREADS=2")
