# launch.cmake — the local launcher (`repro launch`, backends/launch.c), the
# rank worker (`repro worker`) and launching under mpirun / srun, as CLI tests
# (tests/cli/launch_*.sh, label "cli"). The unit tests test_launch and
# test_rankenv come in through the tests/unit glob (label "unit").
#
# Each script takes REPRO SCRATCH MODE COMM, where COMM is "gloo" when the gloo
# backend is built (backends/backends.cmake sets REPRO_HAVE_GLOO) and "self"
# otherwise; modes that need several communicating ranks skip (77) without it.
# The scripts bound every wait themselves; TIMEOUT is only ctest's backstop.
if(REPRO_HAVE_GLOO)
  set(_launch_comm gloo)
else()
  set(_launch_comm self)
endif()
set(_launch_cases
  local:ok local:crash local:exitcode local:rendezvous local:hang local:deadlock local:cancel local:usage
  mpirun:selftest mpirun:crash
  srun:selftest srun:missing-rank srun:bad-env)
foreach(c ${_launch_cases})
  string(REPLACE ":" ";" _parts ${c})
  list(GET _parts 0 _script)
  list(GET _parts 1 _mode)
  add_test(NAME cli.launch.${_script}.${_mode}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/launch_${_script}.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/launch-${_script}-${_mode} ${_mode} ${_launch_comm})
  set_tests_properties(cli.launch.${_script}.${_mode} PROPERTIES
    LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 180
    ENVIRONMENT "OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")
endforeach()
