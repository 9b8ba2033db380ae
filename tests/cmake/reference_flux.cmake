# reference_flux.cmake — FLUX transformer parity: tests/tools/flux_forward (synthetic weights,
# seeded inputs, one rp_flux_forward) against the independent PyTorch model in
# tests/reference/flux_ref.py (float32 bar 1e-4, float64 errors logged).
# Weights (about 2.2 GB for flux-dev at 1 + 1 blocks) are written into the build tree
# per run and deleted by the test when it ends.
add_executable(flux_forward ${CMAKE_SOURCE_DIR}/tests/tools/flux_forward.c)
target_link_libraries(flux_forward PRIVATE repro_core)
set_target_properties(flux_forward PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_test(NAME reference.flux_parity
         COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/test_flux_parity.py
                 --tool $<TARGET_FILE:flux_forward>
                 --scratch ${CMAKE_BINARY_DIR}/reference-scratch/flux)
set_tests_properties(reference.flux_parity PROPERTIES
  LABELS reference
  SKIP_RETURN_CODE 77
  TIMEOUT 300
  ENVIRONMENT "OMP_NUM_THREADS=2;OPENBLAS_NUM_THREADS=2")
