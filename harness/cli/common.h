/* common.h — what several subcommands share: checks of options they take alike (after rp_args has
 * read them): the synthetic-weights seed and the CPU engine settings of decode and forward;
 * loading and running a matrix (`repro --matrix`, `repro golden record`). Errors name the
 * option, as every subcommand's own checks do. */
#ifndef REPRO_CLI_COMMON_H
#define REPRO_CLI_COMMON_H

#include <stdint.h>

#include "engine/ctx.h"
#include "engine/error.h"
#include "harness/sweep/matrix.h"
#include "harness/sweep/runner.h"

/* --weight-seed S (wseed_s; NULL when not given: *wseed = 0) into *wseed. It is refused
 * along with a weights file (weights non-NULL), which wopt names ("--weights"); cmd names
 * the subcommand in that message. */
rp_status rp_cli_weight_seed(const char *cmd, const char *wseed_s, const char *weights, const char *wopt,
                             uint64_t *wseed, rp_error *err);

/* *ctx = rp_ctx_default() with --threads (0..1024; 0 = OpenBLAS's default), --precision
 * (fp32 | bf16) and --attention (a variant name, rp_attn_kind_parse) applied. */
rp_status rp_cli_cpu_ctx(long long threads, const char *prec_s, const char *attn_s, rp_ctx *ctx, rp_error *err);

/* Loads the matrix file into *m and runs it (rp_runner_run_cancellable with o) into *s.
 * -1: the sweep ran (cancelled, perhaps): *s is the caller's to read, then to free with
 * *m. Else the exit status, the error reported and nothing left to free: 2 for a matrix
 * or options that are not valid, 1 for a run that failed. */
int rp_cli_run_matrix(const char *file, const rp_runner_opts *o, rp_matrix *m, rp_sweep *s, rp_error *err);

#endif
