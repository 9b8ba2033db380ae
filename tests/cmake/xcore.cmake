# xcore.cmake — the hardware-sensitive tests again under every OpenBLAS kernel set this CPU
# can run, with 1 and 2 threads (label xcore; not in the default ci/test.sh run, which
# excludes it: `ci/test.sh -L xcore`, or one kernel set: `ci/test.sh -L xcore -R Haswell`).
# Another x86-64 machine computes its GEMMs with another kernel set and may run another
# thread count; every claim these tests make must hold there too. Each test is
#   xcore.<core>.t<threads>.<test>   tests/xcore/run.sh: OPENBLAS_CORETYPE=<core>, the thread
#                                    count in the environment and in every case of the
#                                    matrices it reads; skipped (77) where the CPU lacks
#                                    the kernel set's instructions (SkylakeX: AVX-512)
# over
#   classify.drift|bugs|approx       the classifier's acceptance sets (classify.cmake)
#   shipped.<m>                      every scenario's CPU part and its assertions
#                                    (shipped_matrices.cmake; dit_async_warmup included)
#   isa_bitwise                      our own float code at three -march levels (isa.cmake)
#   own_check                        the own checks' recomputations (unit test_own_check)
#   parallel.dit.monotone            quality vs warmup and ranks (parallel.cmake)
# Cores: Prescott (SSE3), Nehalem (SSE4.2), Sandybridge (AVX), Haswell (AVX2+FMA), SkylakeX
# (AVX-512). One kernel set and thread count took 39 min on the 2-core CI machine while
# other work loaded it (load ~10): 29 min dit_async_warmup, 10 min all the others (flux_dp
# 2.5, classify drift 2.3, approx 1.7, bugs 1.6, sd3_batch 1.3, attention 0.5, monotone
# 0.3); quiet, about 15. The tests labelled also xcore-quick (the attention cross-device
# claims, classify.approx, isa_bitwise, parallel.dit.monotone, own_check: 1.6 min at -j2) are what
# .ci/run adds under one kernel set other than the machine's own.
set(REPRO_XCORE_CORES Prescott Nehalem Sandybridge Haswell SkylakeX CACHE STRING
    "OpenBLAS kernel sets (OPENBLAS_CORETYPE) the xcore label runs the hardware-sensitive tests under")
set(_xcore_run sh ${CMAKE_SOURCE_DIR}/tests/xcore/run.sh)
set(_xcore_env "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;REPRO_PYTHON=${REPRO_PYTHON}")
set(_xcore_quick shipped.attention_cross_device classify.approx isa_bitwise parallel.dit.monotone own_check)

# xcore_test(NAME TIMEOUT COST COMMAND...): one test per core and thread count; the
# command's @SRC@ and @SCRATCH@ are filled in by run.sh
function(xcore_test name timeout cost)
  foreach(core ${REPRO_XCORE_CORES})
    foreach(t 1 2)
      set(full xcore.${core}.t${t}.${name})
      add_test(NAME ${full}
               COMMAND ${_xcore_run} ${core} ${t} $<TARGET_FILE:repro> ${CMAKE_SOURCE_DIR}
                       ${CMAKE_BINARY_DIR}/xcore-scratch/${core}-t${t}-${name} -- ${ARGN})
      set(labels xcore)
      if(name IN_LIST _xcore_quick)
        list(APPEND labels xcore-quick)
      endif()
      set_tests_properties(${full} PROPERTIES LABELS "${labels}" SKIP_RETURN_CODE 77
                           TIMEOUT ${timeout} COST ${cost} ENVIRONMENT "${_xcore_env}")
    endforeach()
  endforeach()
endfunction()

if(REPRO_HAVE_GLOO)
  foreach(set drift bugs approx)
    xcore_test(classify.${set} 1800 200
               sh ${CMAKE_SOURCE_DIR}/tests/cli/classify_matrix.sh $<TARGET_FILE:repro> @SCRATCH@ ${set} @SRC@)
  endforeach()
  foreach(m flux_dp sd3_batch dit_async_warmup)
    xcore_test(shipped.${m} 3000 ${_cost_${m}}
               sh ${CMAKE_SOURCE_DIR}/tests/matrices/${m}.sh $<TARGET_FILE:repro> @SCRATCH@ @SRC@ cpu)
  endforeach()
  xcore_test(parallel.dit.monotone 600 60
             sh ${CMAKE_SOURCE_DIR}/tests/parallel/approx.sh $<TARGET_FILE:repro> @SCRATCH@ dit monotone
             ${REPRO_PYTHON} $<TARGET_FILE:latents_cmp>)
endif()
xcore_test(shipped.attention_cross_device 1500 80
           sh ${CMAKE_SOURCE_DIR}/tests/matrices/attention_cross_device.sh $<TARGET_FILE:repro> @SCRATCH@ @SRC@ cpu)
if(_isa_bins)
  xcore_test(isa_bitwise 300 5 sh ${CMAKE_SOURCE_DIR}/tests/isa/compare.sh ${_isa_bins})
endif()
# the own checks' recomputations (the same BLAS call asked again gives the same bits) must
# hold under every kernel set, or a correct kernel would be reported as a BUG there
if(TARGET test_own_check)
  xcore_test(own_check 300 5 $<TARGET_FILE:test_own_check>)
endif()
