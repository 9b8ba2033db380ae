# reports.cmake — the reports (reports/*.c, harness/cli/cmd_report.c, cmd_compare.c,
# cmd_history.c), label cli except the unit test:
#   unit.test_reports        helpers, verdict classes, a store built in the test,
#                            summary.json, junit.xml, markdown, compare, the SQLite
#                            history, a whole report without gnuplot (label unit)
#   cli.reports.tree         fixture: a synthetic store from `repro generate` runs and
#                            hand-written case/result/classification files
#                            (tests/reports/make_tree.sh; nothing binary is committed)
#   cli.reports.report       repro report: every file, counts, schema, self-contained HTML,
#                            terminal summary, --check, byte-identical rebuilds
#   cli.reports.no_gnuplot   no gnuplot (or a failing one): reports written, plots skipped
#   cli.reports.compare      repro compare RUN_A RUN_B
#   cli.reports.history      --history DB and repro history DB [--case ID]
#   cli.reports.usage        exit codes of bad command lines
#   cli.reports.screenshot   report.html in headless Chromium: no console error, no failed
#                            resource, a screenshot that is not blank (skips without chromium;
#                            the PNG stays in cli-scratch/reports-screenshot/report.png)
if(TARGET test_reports)
  target_compile_definitions(test_reports PRIVATE
                             REPRO_TEST_SCRATCH="${CMAKE_BINARY_DIR}/unit-scratch/reports")
endif()

set(_reports_tree ${CMAKE_BINARY_DIR}/cli-scratch/reports-tree)
set(_reports_env "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1")

add_test(NAME cli.reports.tree
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/reports/reports_cli.sh $<TARGET_FILE:repro>
                 ${CMAKE_BINARY_DIR}/cli-scratch/reports-tree-log tree ${_reports_tree})
set_tests_properties(cli.reports.tree PROPERTIES
  LABELS cli TIMEOUT 600 FIXTURES_SETUP reports_tree ENVIRONMENT "${_reports_env}")

foreach(mode report no_gnuplot compare history usage)
  add_test(NAME cli.reports.${mode}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/reports/reports_cli.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/cli-scratch/reports-${mode} ${mode} ${_reports_tree})
  set_tests_properties(cli.reports.${mode} PROPERTIES
    LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 300 FIXTURES_REQUIRED reports_tree
    ENVIRONMENT "${_reports_env}")
endforeach()

add_test(NAME cli.reports.screenshot
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/reports/screenshot.sh $<TARGET_FILE:repro>
                 ${CMAKE_BINARY_DIR}/cli-scratch/reports-screenshot ${_reports_tree})
set_tests_properties(cli.reports.screenshot PROPERTIES
  LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 300 FIXTURES_REQUIRED reports_tree
  ENVIRONMENT "${_reports_env}")
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/unit-scratch/reports)  # the unit test's mkdir is not recursive
