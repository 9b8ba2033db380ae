# classify.cmake — the classifier (harness/analysis/classify.c, its runner integration, `repro classify`).
#   unit.test_classify     pure functions and the driver on constructed data (label unit;
#                          registered by the tests/unit glob, scratch set here)
#   cli.classify           `repro classify` and the worker's classifier modes: teacher forcing
#                          reproduces each sampler's own trajectory, the noise twin moves one
#                          ulp, the leak check, usage errors (tests/cli/classify_cli.sh, label cli)
#   cli.classify.witness   the witnesses that are no other run: a reference posing another problem
#                          (CONFIG_ERROR), another attention kernel than asked, the noise against
#                          its draw from case.json's seed, the teacher run's input rows (BUG
#                          each, at its own first step) (tests/cli/classify_witness.sh, label cli)
#   cli.classify.decode    the decodes at the case's own decoder arithmetic: fp32's decode-own/,
#                          bf16's fp32 shadow decode; clean drift, damaged BUG at vae.decode
#                          (tests/cli/classify_decode.sh, label cli)
#   matrix.classify.drift  single rank vs dp 2/4, ulysses 2/4, ring 2/4, USP, cfg parallel,
#                          attention math/split/subquad/flash, threads 2, OpenBLAS core types,
#                          reduce_split, over dit-tiny, sd3-tiny, flux-tiny, 4 seeds as items:
#                          every verdict identical or drift
#   matrix.classify.corpus the drift corpus (>= 500 cases; samplers, layouts, knobs, fp32 and
#                          bf16, normal and sharpened weights): identical or drift, and the
#                          largest drift ratio at least 4x below the factor
#   matrix.classify.bugs   every fault injection on every family where it applies: BUG
#                          (dp-rank-layout: MISMATCH) at the right first step, the right layer;
#                          also per-item batches against the joint reference (bugs-peritem.yaml)
#   matrix.classify.approx pipefusion and patch with warmup 0..steps: approx or drift, quality
#                          improving with warmup (skips, 77, while those strategies are missing)
#   matrix.classify.invariant numerics: invariant: every exact layout (dp, cfg, ulysses, ring,
#                          USP; batches 1, 3, 8; fp32 and bf16) over dit-tiny, sd3-tiny and
#                          flux-tiny identical to serial, the planted faults BUG, an item's
#                          bits independent of its batch (~4.5 min alone on 2 cores, 7 beside
#                          another test: label sweep since 2026-11-30, when the default run
#                          passed CI's 25 min on a slower VM; cli.invariant.* and the
#                          invariant layouts of matrix.shipped.flux_dp stay in it)
#   matrix.classify.invariantxl the same on dit-xl-2-128 at depth 4 (DiT-XL/2's widths; ~12 min:
#                          label sweep, run with ci/test.sh -L sweep)
#   matrix.classify.digits-drift, .digits-bugs  the drift and bug sets on the trained family
#                          (dit-digits, sd3-digits; ~1 min each: labels matrix and corpus)
#   the matrix tests print the confusion table and require it diagonal
#   (tests/cli/classify_matrix.sh, tests/classify/*.yaml; label matrix)
if(TARGET test_classify)
  target_compile_definitions(test_classify PRIVATE
                             REPRO_TEST_SCRATCH="${CMAKE_BINARY_DIR}/unit-scratch/classify")
endif()
set(_classify_env "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
add_test(NAME cli.classify
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/classify_cli.sh $<TARGET_FILE:repro>
                 ${CMAKE_BINARY_DIR}/cli-scratch/classify ${CMAKE_SOURCE_DIR})
set_tests_properties(cli.classify PROPERTIES
  LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 300 ENVIRONMENT "${_classify_env}")
add_test(NAME cli.classify.witness
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/classify_witness.sh $<TARGET_FILE:repro>
                 ${CMAKE_BINARY_DIR}/cli-scratch/classify-witness)
set_tests_properties(cli.classify.witness PROPERTIES
  LABELS cli TIMEOUT 300 ENVIRONMENT "${_classify_env}")
if(REPRO_HAVE_GLOO)
  add_test(NAME cli.classify.decode
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/classify_decode.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/classify-decode)
  set_tests_properties(cli.classify.decode PROPERTIES
    LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 300 ENVIRONMENT "${_classify_env}")
endif()
if(REPRO_HAVE_GLOO)
  foreach(set drift corpus bugs approx invariant invariantxl)
    # the corpus also holds the trained family (corpus-digits-{dit,sd3}.yaml)
    set(_families "dit sd3 flux")
    if(set STREQUAL "corpus")
      set(_families "dit sd3 flux digits-dit digits-sd3")
    elseif(set STREQUAL "bugs")  # and per-item batches against the joint reference
      set(_families "dit sd3 flux peritem")
    endif()
    add_test(NAME matrix.classify.${set}
             COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/classify_matrix.sh $<TARGET_FILE:repro>
                     ${CMAKE_BINARY_DIR}/cli-scratch/classify-${set} ${set} ${CMAKE_SOURCE_DIR}
                     ${_families})
    if(set STREQUAL "corpus")  # ~20 min on 2 cores: only when asked for (ci/test.sh -L corpus)
      set_tests_properties(matrix.classify.${set} PROPERTIES
        LABELS "matrix;corpus" SKIP_RETURN_CODE 77 TIMEOUT 5400 ENVIRONMENT "${_classify_env}")
    elseif(set STREQUAL "invariantxl" OR set STREQUAL "invariant")  # ~12 / ~5 min: ci/test.sh -L sweep
      set_tests_properties(matrix.classify.${set} PROPERTIES
        LABELS "matrix;sweep" SKIP_RETURN_CODE 77 TIMEOUT 3600 ENVIRONMENT "${_classify_env}")
    else()
      set_tests_properties(matrix.classify.${set} PROPERTIES
        LABELS matrix SKIP_RETURN_CODE 77 TIMEOUT 900 COST 200 ENVIRONMENT "${_classify_env}")
    endif()
  endforeach()
  # the trained family (engine/models/digits/): the drift set (fp32 and bf16, 58 cases) and the bug
  # set (54), ~1 min each on 2 cores: with the corpus (ci/test.sh -L corpus), as the default
  # run has ~4 min of CI budget left
  foreach(set drift bugs)
    add_test(NAME matrix.classify.digits-${set}
             COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/classify_matrix.sh $<TARGET_FILE:repro>
                     ${CMAKE_BINARY_DIR}/cli-scratch/classify-digits-${set} ${set} ${CMAKE_SOURCE_DIR}
                     "digits-dit digits-sd3")
    set_tests_properties(matrix.classify.digits-${set} PROPERTIES
      LABELS "matrix;corpus" SKIP_RETURN_CODE 77 TIMEOUT 900 ENVIRONMENT "${_classify_env}")
  endforeach()
endif()
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/unit-scratch/classify)  # the unit test's mkdir is not recursive
