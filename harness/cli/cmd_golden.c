/* cmd_golden.c — `repro golden`: record a matrix's reference outputs as goldens,
 * list a golden store. Comparing against goldens is `repro --matrix M --golden DIR`. */
#include <stdio.h>
#include <string.h>

#include "engine/error.h"
#include "harness/cli/args.h"
#include "harness/cli/common.h"
#include "harness/cli/commands.h"
#include "harness/sweep/golden.h"
#include "harness/sweep/matrix.h"
#include "harness/sweep/runner.h"

#define MAX_FILTERS 32

static void usage(FILE *f) {
    fprintf(f,
            "usage: repro golden record --matrix FILE --store DIR [--results DIR] [--jobs N] [--rerun]\n"
            "                           [--filter KEY=VALUE]... [--timeout S] [--progress P]\n"
            "                           [--launcher L [--hostfile FILE] [--ranks-per-node K]]\n"
            "       repro golden list --store DIR\n"
            "\n"
            "record  runs the matrix's reference cases (finished ones are reused from --results,\n"
            "        default results) and saves each successful one with its env.json into\n"
            "        DIR/<case id>/ (replacing an earlier recording of the same config)\n"
            "list    one line per golden: id, model, degrees, device, when, matrix, hardware\n"
            "\n"
            "Compare a run on other hardware with `repro --matrix FILE --golden DIR`: each case is\n"
            "compared with the golden of its reference, found by config (not by path).\n"
            "exit codes: 0 ok, 1 some reference could not be recorded, 2 usage, 130 interrupted\n");
}

static int cmd_record(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    rp_runner_opts o;
    memset(&o, 0, sizeof o);
    o.cancel_fd = -1;
    o.refs_only = 1;
    const char *file = rp_arg_str(&a, "matrix", NULL);
    const char *store = rp_arg_str(&a, "store", NULL);
    o.results_dir = rp_arg_str(&a, "results", "results");
    o.jobs = (int)rp_arg_int(&a, "jobs", 0);
    o.rerun = rp_arg_flag(&a, "rerun");
    const char *filters[MAX_FILTERS];
    o.n_filters = rp_arg_strs(&a, "filter", filters, MAX_FILTERS);
    o.filters = filters;
    o.timeout_s = rp_arg_double(&a, "timeout", 0);
    o.worker_exe = rp_arg_str(&a, "worker-exe", NULL);
    o.launcher = rp_arg_str(&a, "launcher", NULL); /* as `repro --matrix` takes them */
    o.hostfile = rp_arg_str(&a, "hostfile", NULL);
    o.ranks_per_node = (int)rp_arg_int(&a, "ranks-per-node", 0);
    const char *progress = rp_arg_str(&a, "progress", "auto");
    o.progress = !strcmp(progress, "live") ? 1 : !strcmp(progress, "plain") ? 0 : -1;
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) {
        rp_report_error(&err);
        return 2;
    }
    if (!file || !store) {
        fprintf(stderr, "repro golden record: --matrix FILE and --store DIR are required\n");
        return 2;
    }
    rp_matrix m;
    rp_sweep s;
    int rc = rp_cli_run_matrix(file, &o, &m, &s, &err), saved = 0, failed = 0;
    if (rc >= 0) return rc;
    if (s.cancelled) {
        rc = 130;
    } else {
        for (int i = 0; i < m.n_cases; i++) {
            if (!s.o[i].selected || !m.cases[i].is_ref) continue;
            if (s.o[i].status != RP_CASE_OK) {
                char nm[sizeof m.cases[i].c.name];
                rp_case_display_name(m.cases[i].c.name, 0, nm, sizeof nm);
                fprintf(stderr, "repro golden: reference %s (%s) is %s; not recorded\n", m.cases[i].id, nm,
                        rp_case_status_name(s.o[i].status));
                failed++;
                continue;
            }
            char dir[8192];
            snprintf(dir, sizeof dir, "%s/%s", s.dir, m.cases[i].id);
            if (rp_golden_save(store, dir, &m.cases[i].c, m.name, &err) != RP_OK) {
                rp_report_error(&err);
                failed++;
                continue;
            }
            saved++;
        }
        printf("recorded %d golden(s) in %s%s\n", saved, store, failed ? "; some references failed (above)" : "");
        rc = failed ? 1 : 0;
    }
    rp_sweep_free(&s);
    rp_matrix_free(&m);
    return rc;
}

static int cmd_list(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    const char *store = rp_arg_str(&a, "store", NULL);
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) {
        rp_report_error(&err);
        return 2;
    }
    if (!store) {
        fprintf(stderr, "repro golden list: --store DIR is required\n");
        return 2;
    }
    if (rp_golden_list(store, stdout, &err) != RP_OK) return rp_report_error(&err);
    return 0;
}

int rp_cmd_golden(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    /* the action is argv[1]; the options parser then sees "record --matrix ..." */
    if (!strcmp(argv[1], "record")) return cmd_record(argc - 1, argv + 1);
    if (!strcmp(argv[1], "list")) return cmd_list(argc - 1, argv + 1);
    fprintf(stderr, "repro golden: unknown action '%s' (record, list)\n", argv[1]);
    usage(stderr);
    return 2;
}
