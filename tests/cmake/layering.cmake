# layering.cmake — the folders' declared layering (ci/layers.tsv): every #include of engine/,
# backends/, harness/ and reports/ stays in its folder or goes to a lower layer (no cycles
# between folders), and README's layout table is the one generated from the declaration
# (ci/layering.sh; docs/architecture.md). Label unit.
add_test(NAME unit.layering COMMAND sh ${CMAKE_SOURCE_DIR}/ci/layering.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(unit.layering PROPERTIES LABELS unit TIMEOUT 60)
