# reference_vae.cmake — VAE decoder parity: `repro decode --dump-float` against the
# independent PyTorch decoder in tests/reference/vae_ref.py (float32 bar 1e-4, float64
# errors logged, PNG bytes against the reference uint8 conversion).
# Synthetic weights go to a cache inside the build tree, never the user's ~/.cache.
add_test(NAME reference.vae_parity
         COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/test_vae_parity.py
                 --repro $<TARGET_FILE:repro>
                 --scratch ${CMAKE_BINARY_DIR}/reference-scratch/vae)
set_tests_properties(reference.vae_parity PROPERTIES
  LABELS reference
  SKIP_RETURN_CODE 77
  TIMEOUT 300
  ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OMP_NUM_THREADS=2;OPENBLAS_NUM_THREADS=2")
