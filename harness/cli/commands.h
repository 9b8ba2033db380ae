/* commands.h — the repro subcommands. Each takes (argc, argv) with argv[0] the
 * subcommand name, prints errors to stderr itself, and returns a process exit
 * code (0 ok, 1 failure, 2 usage error). */
#ifndef REPRO_COMMANDS_H
#define REPRO_COMMANDS_H

int rp_cmd_generate(int argc, char **argv); /* harness/cli/cmd_generate.c */
int rp_cmd_weights(int argc, char **argv);  /* harness/cli/cmd_weights.c */
int rp_cmd_forward(int argc, char **argv);  /* harness/cli/cmd_forward.c: one model forward, for parity tests */
int rp_cmd_decode(int argc, char **argv);   /* harness/cli/cmd_decode.c: VAE decode of a latents file */
int rp_cmd_env(int argc, char **argv);      /* harness/cli/cmd_env.c: print the environment record */
int rp_cmd_diff(int argc, char **argv);     /* harness/cli/cmd_diff.c: image / latents metrics of two results */
int rp_cmd_worker(int argc, char **argv);   /* harness/cli/cmd_worker.c: one rank of a multi-process job */
int rp_cmd_launch(int argc, char **argv);   /* harness/cli/cmd_launch.c: run N worker ranks locally */
int rp_cmd_matrix(int argc, char **argv);   /* harness/cli/cmd_matrix.c: repro --matrix / --help-matrix
                                               (argv[0] is the program: --matrix is a top-level option) */
int rp_cmd_golden(int argc, char **argv);   /* harness/cli/cmd_golden.c: record / list golden outputs */
int rp_cmd_classify(int argc, char **argv); /* harness/cli/cmd_classify.c: classify a case against its reference */

int rp_cmd_report(int argc, char **argv);   /* harness/cli/cmd_report.c: rebuild the reports of stored results */
int rp_cmd_compare(int argc, char **argv);  /* harness/cli/cmd_compare.c: two runs case by case, with reports */
int rp_cmd_history(int argc, char **argv);  /* harness/cli/cmd_history.c: runs and trends in the SQLite history */

/* rp_report_error (a failed status to stderr): engine/error.h */
#include "engine/error.h"

#endif
