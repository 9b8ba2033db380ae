/* cmd_matrix.c — `repro --matrix FILE`: expand a YAML matrix and run it (or
 * list it with --dry-run); `repro --help-matrix`: the matrix schema.
 *
 * Called with the whole command line (argv[0] = the program), since --matrix
 * is an option of repro itself rather than a subcommand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/error.h"
#include "harness/cli/args.h"
#include "harness/cli/common.h"
#include "reports/report.h"
#include "harness/cli/commands.h"
#include "harness/sweep/matrix.h"
#include "harness/sweep/runner.h"
#include "harness/sweep/validate.h"

#define MAX_FILTERS 32

static void usage(FILE *f) {
    fprintf(f,
            "usage: repro --matrix FILE [--results DIR] [--jobs N] [--rerun | --retry-failed] [--dry-run]\n"
            "                           [--filter KEY=VALUE]... [--golden DIR] [--timeout S]\n"
            "                           [--progress auto|live|plain]\n"
            "                           [--launcher local|srun|mpirun [--hostfile FILE] [--ranks-per-node K]]\n"
            "       repro --help-matrix    the matrix file schema and the case rules\n"
            "\n"
            "Expands the matrix (errors: FILE:LINE:COLUMN, before anything runs), validates every\n"
            "case, runs the runnable ones (each in its own ranks, with a timeout; a group's\n"
            "reference first), compares each with its reference and prints a summary table.\n"
            "  --results DIR      store root; results go to DIR/<matrix name>/<case id>/ (default results)\n"
            "  --jobs N           run up to N cases at once (default: as many as fit the cores,\n"
            "                     a case of W ranks taking W cores)\n"
            "  --resume           the default: finished cases are kept, not recomputed\n"
            "  --rerun            recompute every selected case\n"
            "  --retry-failed     recompute finished cases that ended CRASH or HANG\n"
            "  --dry-run          list the expanded cases and their validation verdicts; run nothing\n"
            "  --filter KEY=VALUE only the matching cases (and their references); KEY is a case\n"
            "                     field, id (a prefix) or name. Repeated: the same KEY is any of\n"
            "                     the values, different KEYs must all match\n"
            "  --golden DIR       also compare each case with the golden of its reference\n"
            "  --history DB       append the run's verdicts and metrics to an SQLite history\n"
            "                     (recorded with `repro golden record`, matched by config)\n"
            "  --timeout S        per-run deadline in seconds (default: the matrix's timeout, 900)\n"
            "  --progress P       auto (a live line when stderr is a terminal), live, plain\n"
            "  --no-report        do not write the reports (by default, as `repro report`, into\n"
            "                     DIR/<matrix name>/report/: report.html, report.md, junit.xml,\n"
            "                     summary.json, plots; the last line of the output names report.html)\n"
            "  --launcher L       how each case's ranks start (default: the matrix's launcher:, else\n"
            "                     local): local forks them here; srun runs each case as one Slurm step\n"
            "                     (srun -N <nodes> -n <world>) inside the sweep's allocation (salloc,\n"
            "                     sbatch); mpirun runs each case with Open MPI on hosts of --hostfile.\n"
            "                     Cases run side by side on free nodes; results must be on a file\n"
            "                     system every node sees (the rendezvous is a file store there)\n"
            "  --hostfile FILE    mpirun: the hosts, one per line\n"
            "  --ranks-per-node K srun / mpirun: a case of world W takes ceil(W / K) nodes (default:\n"
            "                     the matrix's ranks_per_node, else min(W, the nodes there are))\n"
            "  --worker-exe PATH  program started as each rank instead of this binary (tests)\n"
            "\n"
            "exit codes: 0 every case as expected (ok, or its expect label; SKIPPED allowed) and\n"
            "within the tolerances, 1 otherwise, 2 usage or matrix file error, 130 interrupted\n");
}

int rp_cmd_matrix(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help-matrix")) {
            rp_matrix_help(stdout);
            printf("\n%s", rp_validate_describe_rules());
            return 0;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    }
    rp_args a;
    rp_args_init(&a, argc, argv);
    const char *file = rp_arg_str(&a, "matrix", NULL);
    rp_runner_opts o;
    memset(&o, 0, sizeof o);
    o.cancel_fd = -1;
    o.results_dir = rp_arg_str(&a, "results", "results");
    o.jobs = (int)rp_arg_int(&a, "jobs", 0);
    (void)rp_arg_flag(&a, "resume");
    o.rerun = rp_arg_flag(&a, "rerun");
    o.retry_failed = rp_arg_flag(&a, "retry-failed");
    o.dry_run = rp_arg_flag(&a, "dry-run");
    const char *filters[MAX_FILTERS];
    o.n_filters = rp_arg_strs(&a, "filter", filters, MAX_FILTERS);
    o.filters = filters;
    o.golden_dir = rp_arg_str(&a, "golden", NULL);
    const char *history = rp_arg_str(&a, "history", NULL);
    o.timeout_s = rp_arg_double(&a, "timeout", 0);
    o.worker_exe = rp_arg_str(&a, "worker-exe", NULL);
    o.launcher = rp_arg_str(&a, "launcher", NULL);
    o.hostfile = rp_arg_str(&a, "hostfile", NULL);
    o.ranks_per_node = (int)rp_arg_int(&a, "ranks-per-node", 0);
    const char *progress = rp_arg_str(&a, "progress", "auto");
    const int no_report = rp_arg_flag(&a, "no-report");
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) {
        rp_report_error(&err);
        return 2;
    }
    if (!file) {
        fprintf(stderr, "repro: --matrix FILE is required\n");
        usage(stderr);
        return 2;
    }
    if (o.jobs < 0 || o.timeout_s < 0 || o.ranks_per_node < 0) {
        fprintf(stderr, "repro: --jobs, --timeout and --ranks-per-node must be >= 0\n");
        return 2;
    }
    if (!strcmp(progress, "auto")) o.progress = -1;
    else if (!strcmp(progress, "live")) o.progress = 1;
    else if (!strcmp(progress, "plain")) o.progress = 0;
    else {
        fprintf(stderr, "repro: --progress '%s': auto, live or plain\n", progress);
        return 2;
    }
    rp_matrix m;
    rp_sweep s;
    int rc = rp_cli_run_matrix(file, &o, &m, &s, &err);
    if (rc >= 0) return rc;
    rc = o.dry_run ? 0 : rp_sweep_exit_code(&s);
    /* the compact verdict summary, the reports and the history row once the sweep is stored */
    char report_dir[4200];
    snprintf(report_dir, sizeof report_dir, "%s/report", s.dir);
    if (!o.dry_run) {
        if (rp_report_after_run(s.dir, history, no_report ? NULL : report_dir, stdout,
                                rp_report_colour("auto", stdout), &err) != RP_OK)
            rc = rp_report_error(&err);
        else if (!no_report)
            printf("report: %s/report.html\n", report_dir);
    }
    rp_sweep_free(&s);
    rp_matrix_free(&m);
    return rc;
}
