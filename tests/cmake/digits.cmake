# digits.cmake — the trained family (dit-digits sd3-digits vae-digits te-digits; weights
# shipped in engine/models/digits/, trained by tests/reference/train/train_digits.py):
#   reference.digits_samples  `repro generate` draws what is asked: a logistic regression
#                             fitted on real glyphs recognises the requested digit in >= 90
#                             of 100 seeds, for dit-digits (--class) and sd3-digits (--prompt)
#                             (tests/reference/test_digits_samples.py; ~10 s on 2 cores)
#   matrix.classify.digits-{drift,bugs}  the classifier's drift and bug sets on the trained
#                             family (tests/classify/{drift,bugs}-digits-{dit,sd3}.yaml; registered
#                             in classify.cmake, labels matrix and corpus: ci/test.sh -L corpus)
#   train-digits              not a test: `cmake --build build --target train-digits`
#                             retrains and rewrites engine/models/digits/ (~27 CPU-minutes, two processes)
# The forward parity of the trained weights is a case of reference.{dit,sd3,vae}_parity.
add_test(NAME reference.digits_samples
         COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/test_digits_samples.py
                 --repro $<TARGET_FILE:repro>
                 --scratch ${CMAKE_BINARY_DIR}/reference-scratch/digits)
set_tests_properties(reference.digits_samples PROPERTIES
  LABELS reference
  SKIP_RETURN_CODE 77
  TIMEOUT 300
  ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")
add_custom_target(train-digits
  COMMAND ${REPRO_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/train/train_digits.py --repro $<TARGET_FILE:repro>
          --out ${CMAKE_SOURCE_DIR}/engine/models/digits
  DEPENDS repro USES_TERMINAL COMMENT "training the digits family into engine/models/digits/")
