# reference_devices.cmake — every reference model's forward keeps its tensors on its
# inputs' device (torch's meta device stands in for CUDA; no GPU needed).
add_test(NAME reference.ref_devices
         COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/test_ref_devices.py)
set_tests_properties(reference.ref_devices PROPERTIES
  LABELS reference
  SKIP_RETURN_CODE 77
  TIMEOUT 120
  ENVIRONMENT "OMP_NUM_THREADS=2")
