# reference_dit.cmake — DiT forward parity: `repro forward` against the independent
# PyTorch model in tests/reference/dit_ref.py (float32 bar 1e-4, float64 errors logged).
# Synthetic weights go to a cache inside the build tree, never the user's ~/.cache.
add_test(NAME reference.dit_parity
         COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/test_dit_parity.py
                 --repro $<TARGET_FILE:repro>
                 --scratch ${CMAKE_BINARY_DIR}/reference-scratch/dit)
set_tests_properties(reference.dit_parity PROPERTIES
  LABELS reference
  SKIP_RETURN_CODE 77
  TIMEOUT 300
  ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OMP_NUM_THREADS=2;OPENBLAS_NUM_THREADS=2")
