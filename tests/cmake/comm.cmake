# comm.cmake — the communication backends (backends/comm.h): exact-output
# checks of every collective over self, gloo (1-4 ranks, forked by the test
# driver itself) and nccl, failure handling (a rank SIGKILLed or stopped
# mid-collective, a rank that never joins, a reused store), and a Redis-store
# rendezvous against a throwaway redis-server. Label "comm". Tests that need
# something this machine lacks (no gloo build, no CUDA device, no
# redis-server) exit 77 and show as skipped.
add_executable(comm_check ${CMAKE_SOURCE_DIR}/tests/comm/comm_check.c)
target_link_libraries(comm_check PRIVATE repro_core)
set_target_properties(comm_check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

set(_comm_store ${CMAKE_BINARY_DIR}/comm-stores)
# name | backend | ranks | scenario | timeout (s) | extra arguments (";"-free, space separated)
set(_comm_cases
  "self.w1|self|1|collectives|30|"
  "gloo.w1|gloo|1|collectives|30|"
  "gloo.w2|gloo|2|collectives|30|"
  "gloo.w3|gloo|3|collectives|30|"
  "gloo.w4|gloo|4|collectives|30|"
  "gloo.iface|gloo|2|collectives|30|--iface lo"
  "gloo.kill|gloo|3|kill|3|"
  "gloo.kill4|gloo|4|kill|3|"
  "gloo.stop|gloo|3|stop|3|"
  "gloo.nojoin|gloo|3|nojoin|3|"
  "gloo.stale|gloo|2|stale|10|"
  "gloo-cuda.w2|gloo|2|collectives|60|--mem cuda"
  "nccl.w1|nccl|1|collectives|60|"
  "nccl-host.w1|nccl|1|collectives|60|--mem host-staged"
  "nccl.dupgpu|nccl|2|dupgpu|30|")
foreach(c ${_comm_cases})
  string(REPLACE "|" ";" _f "${c}")
  list(GET _f 0 _name)
  list(GET _f 1 _backend)
  list(GET _f 2 _n)
  list(GET _f 3 _scenario)
  list(GET _f 4 _timeout)
  list(LENGTH _f _nf)
  set(_extra "")
  if(_nf GREATER 5)
    list(GET _f 5 _extra)
    separate_arguments(_extra UNIX_COMMAND "${_extra}")
  endif()
  add_test(NAME comm.${_name}
           COMMAND comm_check --backend ${_backend} --spawn ${_n} --scenario ${_scenario}
                   --timeout ${_timeout} --hostname 127.0.0.1 --store-dir ${_comm_store} ${_extra})
  set_tests_properties(comm.${_name} PROPERTIES LABELS comm SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
endforeach()

# Redis-store rendezvous: the script starts redis-server on 127.0.0.1 at a free
# port, runs 3 gloo ranks through it, checks an unreachable port fails
# cleanly, and kills the server. Skips (77) without redis-server.
add_test(NAME comm.gloo.redis
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/comm/redis_rendezvous.sh $<TARGET_FILE:comm_check>
                 ${CMAKE_BINARY_DIR}/comm-stores/redis)
set_tests_properties(comm.gloo.redis PROPERTIES LABELS comm SKIP_RETURN_CODE 77 TIMEOUT 300)
