# reference_te.cmake — the byte-level text encoder (engine/models/text_encoder.c) against the
# independent PyTorch model in tests/reference/te_ref.py (float32 bar 1e-4, float64 errors
# logged), and the flow-matching sigma schedules (engine/samplers/flow.c) against a direct
# numpy implementation of diffusers' formulas. Both skip (77) when torch/numpy are missing.

# te_forward: synthetic weights -> encode a prompt list -> safetensors dump (tests only).
add_executable(te_forward ${CMAKE_SOURCE_DIR}/tests/tools/te_forward.c)
target_link_libraries(te_forward PRIVATE repro_core)
set_target_properties(te_forward PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

add_test(NAME reference.te_parity
         COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/test_te_parity.py
                 --te-forward $<TARGET_FILE:te_forward>
                 --scratch ${CMAKE_BINARY_DIR}/reference-scratch/te)
set_tests_properties(reference.te_parity PROPERTIES
  LABELS reference
  SKIP_RETURN_CODE 77
  TIMEOUT 300
  ENVIRONMENT "OMP_NUM_THREADS=2;OPENBLAS_NUM_THREADS=2")

# The schedule values come from the C library through a tiny ctypes-free route: the
# unit test binary test_flow prints them (--dump), so this test needs it built.
if(TARGET test_flow)
  add_test(NAME reference.flow_schedule
           COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/test_flow_schedule.py
                   --dump-tool $<TARGET_FILE:test_flow>)
  set_tests_properties(reference.flow_schedule PROPERTIES
    LABELS reference
    SKIP_RETURN_CODE 77
    TIMEOUT 120)
endif()
