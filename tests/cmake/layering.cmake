# layering.cmake — the folders' declared layering (ci/layers.tsv). Label unit.
#
# unit.layering: every #include of engine/, backends/, harness/ and reports/ stays in its
# folder or goes to a folder its row uses (each of a lower layer: no cycles between folders),
# and README's layout table is the one generated from the declaration (ci/layering.sh;
# docs/architecture.md). The build runs the same include rules (CMakeLists.txt).
add_test(NAME unit.layering COMMAND sh ${CMAKE_SOURCE_DIR}/ci/layering.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(unit.layering PROPERTIES LABELS unit TIMEOUT 60)

# unit.layering_link: the build's link checks (CMakeLists.txt, repro_linkcheck) do catch a
# call against the layering. Two programs built as engine/samplers' check is, each with one
# planted function: a call down to the engine's core (which engine/samplers uses) must link;
# a call up to harness/sweep (rp_git_revision, build/gitrev.c) must fail to link, and for
# that undefined symbol, not another reason. Neither is part of the normal build.
foreach(_dir up down)
  if(_dir STREQUAL "up")
    set(_body "const char *rp_git_revision(void);\nconst char *rp_planted(void) { return rp_git_revision(); }\n")
  else()
    set(_body "struct rp_error;\nvoid rp_error_clear(struct rp_error *e);\nvoid rp_planted(struct rp_error *e) { rp_error_clear(e); }\n")
  endif()
  file(WRITE ${CMAKE_BINARY_DIR}/linkcheck/planted_${_dir}.c.in "${_body}")
  configure_file(${CMAKE_BINARY_DIR}/linkcheck/planted_${_dir}.c.in
                 ${CMAKE_BINARY_DIR}/linkcheck/planted_${_dir}.c COPYONLY)
  repro_linkcheck(linkcheck_planted_${_dir} repro_engine_samplers ${CMAKE_BINARY_DIR}/linkcheck/planted_${_dir}.c)
  set_target_properties(linkcheck_planted_${_dir} PROPERTIES EXCLUDE_FROM_ALL ON)
endforeach()
add_test(NAME unit.layering_link COMMAND sh -c [[
b=$1
"$2" --build "$b" --target linkcheck_planted_down >/dev/null 2>&1 ||
    { echo "FAIL: engine/samplers calling the engine's core (a folder it uses) did not link"; exit 1; }
if out=$("$2" --build "$b" --target linkcheck_planted_up 2>&1); then
    echo "FAIL: engine/samplers calling harness/sweep (a higher layer) linked"; exit 1
fi
echo "$out" | grep -Eq "undefined (reference to|symbol:) .?rp_git_revision" ||
    { echo "$out"; echo "FAIL: the planted upward call failed to link, but not for its undefined symbol"; exit 1; }
echo "layering_link: a call from engine/samplers down links, one up to harness/sweep does not"
]] layering_link ${CMAKE_BINARY_DIR} ${CMAKE_COMMAND})
set_tests_properties(unit.layering_link PROPERTIES LABELS unit TIMEOUT 120)
