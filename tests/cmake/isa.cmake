# Our elementwise float code must give the same bits on every x86-64 ISA level:
# build the op dump at three -march levels (ISA clones off) and compare.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64" AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
  set(_isa_bins)
  file(GLOB _isa_attn_src ${CMAKE_SOURCE_DIR}/engine/attention/*.c)
  list(APPEND _isa_attn_src ${CMAKE_SOURCE_DIR}/engine/ctx.c ${CMAKE_SOURCE_DIR}/engine/trace.c
       ${CMAKE_SOURCE_DIR}/engine/error.c ${CMAKE_SOURCE_DIR}/engine/safetensors.c
       ${CMAKE_SOURCE_DIR}/engine/fsutil.c ${CMAKE_SOURCE_DIR}/engine/threads.c)
  foreach(arch x86-64 x86-64-v3 x86-64-v4)
    add_executable(isa_dump_${arch} ${CMAKE_SOURCE_DIR}/tests/isa/isa_dump.c
                   ${CMAKE_SOURCE_DIR}/engine/ops.c ${CMAKE_SOURCE_DIR}/engine/gemm.c ${CMAKE_SOURCE_DIR}/engine/gemm_check.c
                   ${CMAKE_SOURCE_DIR}/engine/gemm_invariant.c
                   ${CMAKE_SOURCE_DIR}/engine/rng.c ${_isa_attn_src})
    target_include_directories(isa_dump_${arch} PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/engine)
    target_compile_options(isa_dump_${arch} PRIVATE -march=${arch} -DREPRO_NO_CLONES)
    target_link_libraries(isa_dump_${arch} PRIVATE PkgConfig::OPENBLAS PkgConfig::CJSON Threads::Threads m)
    set_target_properties(isa_dump_${arch} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
    list(APPEND _isa_bins $<TARGET_FILE:isa_dump_${arch}>)
  endforeach()
  add_test(NAME unit.isa_bitwise COMMAND sh ${CMAKE_SOURCE_DIR}/tests/isa/compare.sh ${_isa_bins})
  set_tests_properties(unit.isa_bitwise PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
endif()
