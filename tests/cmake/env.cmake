# `repro env` prints a JSON record naming the CPU, OpenBLAS and the git revision.
add_test(NAME cli.env COMMAND repro env)
set_tests_properties(cli.env PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "\"cpu_model\".*\"openblas\".*\"git_revision\"")
