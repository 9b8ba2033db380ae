# fuzz.cmake — libFuzzer targets for the input readers (tests/fuzz/): the matrix loader,
# the safetensors reader, the PNG reader and the trace reader.
#   In a build configured with -DREPRO_FUZZ=ON (clang; tests/fuzz/run.sh makes one in
#   <build>/fuzz): the executables fuzz_matrix, fuzz_safetensors, fuzz_png, fuzz_trace.
#   In the normal build: the tests (label fuzz; not in ci/test.sh's run, .ci/run runs
#   them after it)
#     fuzz.build      configures and builds <build>/fuzz with clang (77: no clang or no
#                     libFuzzer)
#     fuzz.<target>   runs it for REPRO_FUZZ_SECONDS (25: a smoke run in CI; set it higher
#                     for a real campaign) from its seed corpus
#                     tests/fuzz/corpus/<target>/ (77 without the build)
set(REPRO_FUZZ_TARGETS matrix safetensors png trace)
if(REPRO_FUZZ)
  foreach(t ${REPRO_FUZZ_TARGETS})
    add_executable(fuzz_${t} ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_${t}.c)
    target_link_libraries(fuzz_${t} PRIVATE repro_core)
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
  endforeach()
  return()
endif()
set(REPRO_FUZZ_SECONDS 25 CACHE STRING "Seconds each fuzz.<target> test runs")
add_test(NAME fuzz.build
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/fuzz/run.sh build ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}/fuzz)
set_tests_properties(fuzz.build PROPERTIES LABELS fuzz SKIP_RETURN_CODE 77 TIMEOUT 1800
                     FIXTURES_SETUP fuzz_build)
foreach(t ${REPRO_FUZZ_TARGETS})
  add_test(NAME fuzz.${t}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/fuzz/run.sh run ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}/fuzz
                   ${t} ${REPRO_FUZZ_SECONDS})
  set_tests_properties(fuzz.${t} PROPERTIES LABELS fuzz SKIP_RETURN_CODE 77
                       TIMEOUT 600 FIXTURES_REQUIRED fuzz_build)
endforeach()
