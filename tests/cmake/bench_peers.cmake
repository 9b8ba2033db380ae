# bench_peers.cmake — the PyTorch peers of the GPU benches build and compute the
# reference's function (bench/torch_flux.py --cpu-smoke: flux-tiny on the CPU, no GPU).
add_test(NAME reference.torch_flux_smoke
         COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/bench/torch_flux.py --cpu-smoke)
set_tests_properties(reference.torch_flux_smoke PROPERTIES
  LABELS reference
  SKIP_RETURN_CODE 77
  TIMEOUT 120
  ENVIRONMENT "OMP_NUM_THREADS=2")
