# shipped_matrices.cmake — the shipped scenario matrices (matrices/flux_dp.yaml,
# attention_cross_device.yaml, sd3_batch.yaml, dit_async_warmup.yaml), the nightly matrices
# and ci/nightly.sh (scripts in tests/matrices/; README.md says what each shows).
#   matrix.shipped.<m>            the matrix's CPU part, run as a researcher runs it
#                                 (--filter device=cpu): passes when every verdict is what the
#                                 matrix expects (the sweep exits 0), plus the scenario's own
#                                 checks (tests/matrices/<m>.sh); label matrix. About 0.7 (
#                                 attention), 0.7 (sd3), 1.8 (flux) and 8 (DiT-XL/2 widths)
#                                 minutes on 2 cores.
#                                 dit_async_warmup is labelled sweep instead (not in the default
#                                 ci/test.sh run, which excludes sweep and xcore): its claims
#                                 run faster at CI sizes elsewhere — approx below warmup = all and
#                                 identical/drift at all in matrix.classify.approx (dit, sd3,
#                                 flux; ~45 s), the cache leak a BUG found by the leak check in
#                                 matrix.classify.bugs, the loss shrinking with warmup in both and
#                                 growing with ranks (2 vs 4) in parallel.dit.monotone (~30 s),
#                                 its expectations in matrix.shipped.dryrun; what only it shows is
#                                 the same at DiT-XL/2's widths (ci/test.sh -L sweep; xcore runs
#                                 it under every kernel set).
#   gpu.shipped.<m>               the GPU part (--filter device=cuda); label gpu; skipped (77)
#                                 without a GPU, without enough GPUs or NCCL for the layouts,
#                                 or when this build's engine has no CUDA compute path
#   matrix.shipped.dryrun         every shipped matrix parses; the scenario matrices and
#                                 nightly.yaml expand to the cases and expectations they
#                                 document (--dry-run)
#   matrix.shipped.nightly_script ci/nightly.sh end to end on a tiny matrix: two machines (the
#                                 second with other OpenBLAS kernels) in one RESULTS_ROOT,
#                                 goldens recorded once, cross-hardware comparison, history,
#                                 a planted regression exits 1 (~30 s)
# Results go under the build tree (cli-scratch/shipped-*), synthetic weights to its test cache.
set(_shipped_env "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1;REPRO_PYTHON=${REPRO_PYTHON}")
# attention_cross_device runs one rank per case (backend self); the others need Gloo
set(_shipped attention_cross_device)
if(REPRO_HAVE_GLOO)
  list(APPEND _shipped flux_dp sd3_batch dit_async_warmup)
endif()
foreach(m ${_shipped})
  add_test(NAME matrix.shipped.${m}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/matrices/${m}.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/shipped-${m} ${CMAKE_SOURCE_DIR} cpu)
  set_tests_properties(matrix.shipped.${m} PROPERTIES
    LABELS matrix SKIP_RETURN_CODE 77 TIMEOUT 1500 ENVIRONMENT "${_shipped_env}")
endforeach()
if(TEST matrix.shipped.dit_async_warmup)   # 8 min quiet, 25+ on a busy machine
  set_tests_properties(matrix.shipped.dit_async_warmup PROPERTIES LABELS sweep TIMEOUT 3000)
endif()
# COST orders a fresh clone's first ctest run (no timing history yet) longest first, so the
# long sweeps overlap the many short tests instead of starting last
set(_cost_dit_async_warmup 1000)
set(_cost_flux_dp 250)
set(_cost_sd3_batch 100)
set(_cost_attention_cross_device 80)
foreach(m ${_shipped})
  set_tests_properties(matrix.shipped.${m} PROPERTIES COST ${_cost_${m}})
endforeach()
foreach(m ${_shipped})
  add_test(NAME gpu.shipped.${m}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/matrices/${m}.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/shipped-gpu-${m} ${CMAKE_SOURCE_DIR} gpu)
  set_tests_properties(gpu.shipped.${m} PROPERTIES
    LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 3600 ENVIRONMENT "${_shipped_env}")
endforeach()
add_test(NAME matrix.shipped.dryrun
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/matrices/dryrun.sh $<TARGET_FILE:repro>
                 ${CMAKE_BINARY_DIR}/cli-scratch/shipped-dryrun ${CMAKE_SOURCE_DIR})
set_tests_properties(matrix.shipped.dryrun PROPERTIES
  LABELS matrix TIMEOUT 120 ENVIRONMENT "${_shipped_env}")
if(REPRO_HAVE_GLOO)
  add_test(NAME matrix.shipped.nightly_script
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/matrices/nightly_cli.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/shipped-nightly ${CMAKE_SOURCE_DIR})
  set_tests_properties(matrix.shipped.nightly_script PROPERTIES
    LABELS matrix TIMEOUT 600 ENVIRONMENT "${_shipped_env}")
endif()
