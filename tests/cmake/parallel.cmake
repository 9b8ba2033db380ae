# parallel.cmake — engine/parallel (xDiT's exact strategies) and `repro worker --job case`,
# label "parallel":
#   parallel.<family>.exact   dp 2/4, cfg 2, ulysses 2/4, ring 2/4, usp 2x2 and a 3-way hybrid
#                             against the single rank, within a rounding bound measured
#                             against float64 (bitwise where the arithmetic is the same)
#   parallel.<family>.faults  every fault injection changes the result beyond that bound
# (tests/parallel/parallel.sh; ranks through `repro launch`, Gloo on loopback, one GEMM
# thread per rank), and the unit test test_parallel (layout, world-1 and hook bitwise checks,
# forked Gloo ranks for the attention and dp helpers), labelled "unit" and "parallel".
# Without Gloo the end-to-end tests are not registered (nothing to launch over).
if(REPRO_HAVE_GLOO)
  foreach(fam dit sd3 flux)
    foreach(mode exact faults)
      add_test(NAME parallel.${fam}.${mode}
               COMMAND sh ${CMAKE_SOURCE_DIR}/tests/parallel/parallel.sh $<TARGET_FILE:repro>
                       ${CMAKE_BINARY_DIR}/parallel-scratch/${fam}-${mode} ${fam} ${mode} ${REPRO_PYTHON}
                       $<TARGET_FILE:latents_cmp>)
      set_tests_properties(parallel.${fam}.${mode} PROPERTIES
        LABELS parallel SKIP_RETURN_CODE 77 TIMEOUT 300
        ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
    endforeach()
  endforeach()
endif()
# parallel.sd3x.exact: the same exact strategies on sd3.5-medium-tiny (MMDiT-X), whose attn2
# is the image-only attention every sequence-parallel layout must shard and exchange too.
if(REPRO_HAVE_GLOO)
  add_test(NAME parallel.sd3x.exact
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/parallel/parallel.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/parallel-scratch/sd3x-exact sd3x exact ${REPRO_PYTHON}
                   $<TARGET_FILE:latents_cmp>)
  set_tests_properties(parallel.sd3x.exact PROPERTIES
    LABELS parallel SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
endif()
# The faults of the classes a per-layer view of rank 0 misses (issue 17), label "parallel":
#   parallel.<family>.escaped  each acts against the same 2-rank layout without it: the latents
#                              differ, or (image faults) the latents are bitwise the clean run's
#                              and the images differ as the fault says (tests/parallel/escaped.sh)
if(REPRO_HAVE_GLOO)
  foreach(fam dit sd3 flux)
    add_test(NAME parallel.${fam}.escaped
             COMMAND sh ${CMAKE_SOURCE_DIR}/tests/parallel/escaped.sh $<TARGET_FILE:repro>
                     ${CMAKE_BINARY_DIR}/parallel-scratch/${fam}-escaped ${fam} $<TARGET_FILE:latents_cmp>)
    set_tests_properties(parallel.${fam}.escaped PROPERTIES
      LABELS parallel TIMEOUT 120
      ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
  endforeach()
endif()
if(TEST unit.test_parallel)
  set_property(TEST unit.test_parallel APPEND PROPERTY LABELS parallel)
endif()
# The approximate strategies (engine/parallel/pipefusion.c, patch.c), label "parallel":
#   parallel.<family>.approx   (families dit sd3 sd3x flux; sd3x = sd3.5-medium-tiny, MMDiT-X)
#                              pipefusion / patch with warmup = steps against the single rank
#                              (rounding bound), hybrids with dp, cfg, ulysses, ring, per-item;
#                              fewer warmup steps beyond the bound; the per-generation reset;
#                              configuration errors; pipefusion-cache-leak and the faults that
#                              act on these layouts
#   parallel.dit.monotone      the difference to the single rank shrinks as the warmup grows
#                              (warmup 0, 2, 4, 8 of 16 steps, 4 seeds, 2 and 4 ranks)
# (tests/parallel/approx.sh, same setup as parallel.sh).
if(REPRO_HAVE_GLOO)
  foreach(fam dit sd3 sd3x flux)
    add_test(NAME parallel.${fam}.approx
             COMMAND sh ${CMAKE_SOURCE_DIR}/tests/parallel/approx.sh $<TARGET_FILE:repro>
                     ${CMAKE_BINARY_DIR}/parallel-scratch/${fam}-approx ${fam} approx ${REPRO_PYTHON}
                     $<TARGET_FILE:latents_cmp>)
    set_tests_properties(parallel.${fam}.approx PROPERTIES
      LABELS parallel SKIP_RETURN_CODE 77 TIMEOUT 300
      ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
  endforeach()
  add_test(NAME parallel.dit.monotone
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/parallel/approx.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/parallel-scratch/dit-monotone dit monotone ${REPRO_PYTHON}
                   $<TARGET_FILE:latents_cmp>)
  set_tests_properties(parallel.dit.monotone PROPERTIES
    LABELS parallel SKIP_RETURN_CODE 77 TIMEOUT 180
    ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
endif()
# The models' device wiring without a GPU (tests/parallel/device_check.sh): dit-tiny at a
# single rank, dp 2, cfg 2, ulysses 2 and pipefusion 2, once on the plain CPU path and once
# with REPRO_DEVICE=host-check (engine/device.h's checking host device); the latents files
# must be byte for byte identical. Label parallel (CPU only).
if(REPRO_HAVE_GLOO)
  add_test(NAME parallel.dit.device_check
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/parallel/device_check.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/parallel-scratch/dit-device-check)
  set_tests_properties(parallel.dit.device_check PROPERTIES
    LABELS parallel TIMEOUT 600
    ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
  # the same under numerics invariant (issue 19: the device's invariant GEMM and canonical
  # attention, and the staged paths), and every exact layout bitwise the single rank
  add_test(NAME parallel.dit.device_check_invariant
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/parallel/device_check.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/parallel-scratch/dit-device-check-invariant dit invariant)
  set_tests_properties(parallel.dit.device_check_invariant PROPERTIES
    LABELS parallel TIMEOUT 600
    ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
  # the same for sd3.5-medium-tiny (MMDiT-X: attn2's buffers and its image-only attention)
  add_test(NAME parallel.sd3x.device_check
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/parallel/device_check.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/parallel-scratch/sd3x-device-check sd3x)
  set_tests_properties(parallel.sd3x.device_check PROPERTIES
    LABELS parallel TIMEOUT 600
    ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
endif()
