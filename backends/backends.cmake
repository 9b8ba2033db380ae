# backends/backends.cmake — the communication layer (backends/comm.h), included
# from the root CMakeLists.txt right after the per-folder libraries are defined:
# backends/*.c are repro_backends (like every folder's library, built by the root
# CMakeLists.txt from ci/layers.tsv); this adds what they link. Included there so
# that C++ is enabled at the top level (CMake must know the C++ linker in the
# directory that links the executables).
#
#   self  always;
#   gloo  when Gloo's CMake package (libgloo-dev) is found, plus hiredis when
#         that gloo was built with Redis (Debian's is: GLOO_USE_REDIS=1);
#         -DREPRO_GLOO=OFF leaves it out, =ON makes its absence an error;
#   nccl  when CUDA is on (REPRO_HAVE_CUDA), nccl.h and libnccl are in the CUDA
#         toolkit, and gloo is there (its store carries NCCL's unique id).
# Defines REPRO_HAVE_GLOO / REPRO_HAVE_NCCL on repro_config (so every source,
# test and benchmark sees them).

target_link_libraries(repro_backends PUBLIC Threads::Threads)   # launch.c

set(REPRO_GLOO AUTO CACHE STRING "Build the gloo backend: ON, OFF or AUTO")
set_property(CACHE REPRO_GLOO PROPERTY STRINGS ON OFF AUTO)
set(REPRO_HAVE_GLOO OFF)
if(NOT REPRO_GLOO STREQUAL "OFF")
  find_package(Gloo CONFIG QUIET)
  set(_rp_gloo_why "")
  if(NOT Gloo_FOUND OR NOT TARGET gloo)
    set(_rp_gloo_why "Gloo's CMake package was not found (apt-get install libgloo-dev)")
  else()
    get_target_property(_rp_gloo_inc gloo INTERFACE_INCLUDE_DIRECTORIES)
    find_file(REPRO_GLOO_CONFIG_H gloo/config.h HINTS ${_rp_gloo_inc} ${GLOO_INCLUDE_DIRS})
    set(_rp_gloo_redis 0)
    if(REPRO_GLOO_CONFIG_H)
      file(STRINGS ${REPRO_GLOO_CONFIG_H} _rp_redis_line REGEX "#define GLOO_USE_REDIS 1")
      if(_rp_redis_line)
        set(_rp_gloo_redis 1)
      endif()
    endif()
    if(_rp_gloo_redis)
      # gloo/rendezvous/redis_store.h includes <hiredis.h> without a directory.
      pkg_check_modules(HIREDIS IMPORTED_TARGET hiredis)
      if(NOT HIREDIS_FOUND)
        set(_rp_gloo_why "this gloo uses Redis but hiredis was not found (apt-get install libhiredis-dev)")
      endif()
    endif()
  endif()
  if(_rp_gloo_why STREQUAL "")
    enable_language(CXX)
    add_library(repro_gloo_shim STATIC ${CMAKE_SOURCE_DIR}/backends/gloo_shim.cpp)
    set_target_properties(repro_gloo_shim PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
                          CXX_EXTENSIONS OFF)
    target_include_directories(repro_gloo_shim PRIVATE ${CMAKE_SOURCE_DIR})   # backends/gloo_shim.h
    target_compile_options(repro_gloo_shim PRIVATE -Wall -Wextra)
    target_link_libraries(repro_gloo_shim PUBLIC gloo Threads::Threads)
    if(_rp_gloo_redis)
      target_link_libraries(repro_gloo_shim PUBLIC PkgConfig::HIREDIS)
    endif()
    target_link_libraries(repro_backends PUBLIC repro_gloo_shim)
    target_compile_definitions(repro_config INTERFACE REPRO_HAVE_GLOO=1)
    set(REPRO_HAVE_GLOO ON)
  elseif(REPRO_GLOO STREQUAL "ON")
    message(FATAL_ERROR "REPRO_GLOO=ON but ${_rp_gloo_why}")
  else()
    message(STATUS "repro: gloo backend off: ${_rp_gloo_why}")
  endif()
endif()

set(REPRO_HAVE_NCCL OFF)
if(REPRO_HAVE_CUDA AND REPRO_HAVE_GLOO)
  find_library(REPRO_NCCL_LIB nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(REPRO_NCCL_H AND REPRO_NCCL_LIB)
    get_filename_component(_rp_nccl_inc ${REPRO_NCCL_H} DIRECTORY)
    # PUBLIC: harness/sweep/env.c (which uses backends/) records NCCL's version too
    target_include_directories(repro_backends PUBLIC ${_rp_nccl_inc})
    target_link_libraries(repro_backends PUBLIC ${REPRO_NCCL_LIB} CUDA::cudart)
    target_compile_definitions(repro_config INTERFACE REPRO_HAVE_NCCL=1)
    set(REPRO_HAVE_NCCL ON)
  endif()
endif()
message(STATUS "repro: comm backends: self, gloo ${REPRO_HAVE_GLOO}, nccl ${REPRO_HAVE_NCCL}")
