/* cmd_history.c — `repro history DB`: the runs recorded by `repro report
 * --history DB`, or one case's metric across them with a text sparkline. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/error.h"
#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "reports/report.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: repro history DB [--case ID [--metric M]] [--last N]\n"
            "\n"
            "Reads the SQLite history written by `repro report RESULTS --history DB`.\n"
            "  (no --case)   the recorded runs, oldest first: id, finish time, git, host, counts\n"
            "  --case ID     one case (its id, a unique prefix of it, or its exact name): per run\n"
            "                the verdict and the metric, then the trend as a sparkline\n"
            "  --metric M    psnr (default), ssim, changed, max_abs, rel_l2, wall_s,\n"
            "                first_step_ratio, first_layer_ratio\n"
            "  --last N      only the last N runs\n"
            "exit codes: 0 ok, 1 an error (no such database or case), 2 usage\n");
}

static void fmt_value(double v, char *buf, size_t cap) {
    if (isnan(v)) snprintf(buf, cap, "-");
    else if (isinf(v)) snprintf(buf, cap, v > 0 ? "inf" : "-inf");
    else snprintf(buf, cap, "%.6g", v);
}

int rp_cmd_history(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    if (rp_arg_flag(&a, "help")) {
        usage(stdout);
        return 0;
    }
    const char *cid = rp_arg_str(&a, "case", NULL);
    const char *metric = rp_arg_str(&a, "metric", "psnr");
    const int last = (int)rp_arg_int(&a, "last", 0);
    const char *db = NULL;
    const int npos = rp_args_positional(&a, &db, 1);
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) {
        rp_report_error(&err);
        return 2;
    }
    if (!db || npos != 1 || last < 0) {
        fprintf(stderr, "repro history: needs one DB%s (see repro history --help)\n", last < 0 ? " and --last >= 0" : "");
        return 2;
    }
    if (!cid) return rp_history_print_runs(db, last, stdout, &err) == RP_OK ? 0 : rp_report_error(&err);
    rp_hist_point *pts = NULL;
    int n = 0;
    char full[40];
    rp_status st = rp_history_trend(db, cid, metric, last, &pts, &n, full, &err);
    if (st != RP_OK) {
        rp_report_error(&err);
        return st == RP_ERR_INVALID && strstr(err.msg, "unknown metric") ? 2 : 1;
    }
    printf("case %s: %s over %d run%s\n", full, metric, n, n == 1 ? "" : "s");
    printf("%5s  %-20s  %-16s  %-16s  %s\n", "run", "finished", "git", "verdict", metric);
    double *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        char val[32];
        fmt_value(pts[i].value, val, sizeof val);
        printf("%5lld  %-20s  %-16.16s  %-16s  %s\n", pts[i].run_id, pts[i].when, pts[i].git, pts[i].verdict, val);
        if (v) v[i] = pts[i].value;
        if (isfinite(pts[i].value)) {
            lo = pts[i].value < lo ? pts[i].value : lo;
            hi = pts[i].value > hi ? pts[i].value : hi;
        }
    }
    if (v && n) {
        char line[4096], a1[32], a2[32], a3[32];
        rp_sparkline_text(v, n, line, sizeof line);
        fmt_value(isfinite(lo) ? lo : NAN, a1, sizeof a1);
        fmt_value(isfinite(hi) ? hi : NAN, a2, sizeof a2);
        fmt_value(pts[n - 1].value, a3, sizeof a3);
        printf("trend: %s  (min %s, max %s, last %s%s)\n", line, a1, a2, a3,
               strcmp(metric, "psnr") ? "" : "; inf = identical, drawn as an arrow");
    }
    free(v);
    free(pts);
    return 0;
}
