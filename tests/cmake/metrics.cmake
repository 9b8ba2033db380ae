# metrics.cmake — `repro diff` (harness/metrics/metrics.c, harness/cli/cmd_diff.c) against
# Debian's scikit-image and numpy: SSIM (value and full map, 'reflect' borders),
# PSNR, pixel counts, heatmaps, latents files and result directories.
# tests/unit/test_metrics.c (label unit) registers itself through the unit glob.
add_test(NAME reference.ssim_skimage
         COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/test_ssim_skimage.py
                 --repro $<TARGET_FILE:repro>
                 --scratch ${CMAKE_BINARY_DIR}/reference-scratch/metrics)
set_tests_properties(reference.ssim_skimage PROPERTIES
  LABELS reference
  SKIP_RETURN_CODE 77
  TIMEOUT 300
  ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")
