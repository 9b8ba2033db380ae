/* cmd_report.c — `repro report RESULTS_DIR`: every report rebuilt from stored
 * results (summary.json, report.html, report.md, junit.xml, plots), without
 * running a case; optionally appended to the SQLite history. */
#include <stdio.h>
#include <string.h>

#include "engine/error.h"
#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "reports/report.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: repro report RESULTS_DIR [--out DIR] [--history DB] [--no-plots] [--check]\n"
            "                    [--quiet] [--colour auto|always|never]\n"
            "\n"
            "Rebuilds the reports of stored results without running anything. RESULTS_DIR is a\n"
            "matrix's directory (results/<matrix>) or a results root holding several. Each case\n"
            "gets its classifier verdict (classification.json) or, until it has one, a provisional\n"
            "verdict from the runner's status (ok -> unclassified); metrics the runner did not store\n"
            "are computed from the outputs.\n"
            "  --out DIR        where the reports go (default RESULTS_DIR/report):\n"
            "                   summary.json (schema: docs/report-schema.md), report.html (self-\n"
            "                   contained), report.md, junit.xml, images/ (diff heatmaps), plots/\n"
            "  --history DB     append this run's verdicts and metrics to the SQLite database DB\n"
            "                   (created when missing; a run appended again replaces itself) and\n"
            "                   draw each case's trend in report.html; see `repro history`\n"
            "  --no-plots       do not run gnuplot (the plots are listed as skipped)\n"
            "  --check          exit 1 when a case fails\n"
            "  --quiet          no summary on stdout\n"
            "  --colour C       colours in the summary: auto (a terminal without NO_COLOR), always, never\n"
            "Plots need gnuplot ($REPRO_GNUPLOT or gnuplot on PATH); without it they are skipped.\n"
            "exit codes: 0 reports written, 1 an error (or --check and a failing case), 2 usage\n");
}

int rp_cmd_report(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    if (rp_arg_flag(&a, "help")) {
        usage(stdout);
        return 0;
    }
    const char *out = rp_arg_str(&a, "out", NULL);
    const char *hist = rp_arg_str(&a, "history", NULL);
    const int no_plots = rp_arg_flag(&a, "no-plots");
    const int check = rp_arg_flag(&a, "check");
    const int quiet = rp_arg_flag(&a, "quiet");
    const char *colour = rp_arg_str(&a, "colour", "auto");
    const char *dir = NULL;
    const int npos = rp_args_positional(&a, &dir, 1);
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) {
        rp_report_error(&err);
        return 2;
    }
    if (!dir || npos != 1 || (strcmp(colour, "auto") && strcmp(colour, "always") && strcmp(colour, "never"))) {
        fprintf(stderr, "repro report: needs one RESULTS_DIR%s (see repro report --help)\n",
                dir && npos == 1 ? "; --colour is auto, always or never" : "");
        return 2;
    }
    char def_out[RP_REPORT_PATHLEN];
    if (!out) {
        snprintf(def_out, sizeof def_out, "%s/report", dir);
        out = def_out;
    }
    rp_run run;
    rp_status st = rp_run_load(dir, &run, &err);
    if (st == RP_OK) {
        rp_run_fill_metrics(&run);
        rp_report_opts o = {out, hist, !no_plots};
        st = rp_report_write(&run, &o, &err);
    }
    if (st != RP_OK) {
        rp_run_free(&run);
        return rp_report_error(&err);
    }
    int failing = 0;
    for (int i = 0; i < run.n; i++) failing += !run.cases[i].pass;
    if (!quiet) {
        rp_report_terminal(&run, stdout, rp_report_colour(colour, stdout));
        printf("reports: %s/report.html (summary.json, report.md, junit.xml)\n", out);
    }
    rp_run_free(&run);
    return check && failing ? 1 : 0;
}
