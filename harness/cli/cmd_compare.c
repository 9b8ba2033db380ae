/* cmd_compare.c — `repro compare RUN_A RUN_B`: two stored runs (two machines'
 * nightly runs, two builds) case by case, matched by case id, with the same
 * reports as `repro report`. */
#include <stdio.h>
#include <string.h>

#include "engine/error.h"
#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "reports/report.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: repro compare RUN_A RUN_B [--out DIR] [--psnr-min DB] [--ssim-min S]\n"
            "                     [--rel-l2-max X] [--no-plots] [--check] [--quiet] [--colour C]\n"
            "\n"
            "Compares two stored runs case by case. RUN_A and RUN_B are matrix directories (or\n"
            "results roots); cases are matched by id, which hashes the config, so the same config\n"
            "on two machines has the same id. Each case of B is compared with the same case of A\n"
            "(latents, trajectory, every image):\n"
            "  identical   bitwise equal\n"
            "  drift       different, every image within --psnr-min and --ssim-min (no images:\n"
            "              latents rel-L2 within --rel-l2-max)\n"
            "  BUG         different beyond those bounds\n"
            "  CRASH, HANG, CONFIG_ERROR   the case did not finish in one of the runs\n"
            "  SKIPPED     the case is in one run only\n"
            "  --out DIR        where the reports go (default compare-<A>-vs-<B>): the same files as\n"
            "                   `repro report`, the \"reference\" of each case being run A\n"
            "  --psnr-min DB    default 30; --ssim-min S  default 0.99; --rel-l2-max X  default 1e-3\n"
            "  --no-plots, --check, --quiet, --colour: as for `repro report`\n"
            "exit codes: 0 reports written, 1 an error (or --check and a failing case), 2 usage\n");
}

/* The last path component of p without trailing slashes, into buf. */
static void base_of(const char *p, char *buf, size_t cap) {
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') n--;
    size_t s = n;
    while (s > 0 && p[s - 1] != '/') s--;
    snprintf(buf, cap, "%.*s", (int)(n - s), p + s);
}

int rp_cmd_compare(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    if (rp_arg_flag(&a, "help")) {
        usage(stdout);
        return 0;
    }
    rp_compare_opts co;
    rp_compare_opts_default(&co);
    const char *out = rp_arg_str(&a, "out", NULL);
    co.psnr_min = rp_arg_double(&a, "psnr-min", co.psnr_min);
    co.ssim_min = rp_arg_double(&a, "ssim-min", co.ssim_min);
    co.rel_l2_max = rp_arg_double(&a, "rel-l2-max", co.rel_l2_max);
    const int no_plots = rp_arg_flag(&a, "no-plots");
    const int check = rp_arg_flag(&a, "check");
    const int quiet = rp_arg_flag(&a, "quiet");
    const char *colour = rp_arg_str(&a, "colour", "auto");
    const char *pos[2] = {NULL, NULL};
    const int npos = rp_args_positional(&a, pos, 2);
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) {
        rp_report_error(&err);
        return 2;
    }
    if (npos != 2) {
        fprintf(stderr, "repro compare: needs two runs RUN_A RUN_B (see repro compare --help)\n");
        return 2;
    }
    char def_out[RP_REPORT_PATHLEN], ba[256], bb[256];
    if (!out) {
        base_of(pos[0], ba, sizeof ba);
        base_of(pos[1], bb, sizeof bb);
        snprintf(def_out, sizeof def_out, "compare-%s-vs-%s", ba, bb);
        out = def_out;
    }
    rp_run ra, rb, rc;
    rp_run_init(&rc);
    rp_status st = rp_run_load(pos[0], &ra, &err);
    if (st == RP_OK) st = rp_run_load(pos[1], &rb, &err);
    else rp_run_init(&rb);
    if (st == RP_OK) st = rp_run_compare(&ra, &rb, &co, &rc, &err);
    if (st == RP_OK) {
        rp_report_opts o = {out, NULL, !no_plots};
        st = rp_report_write(&rc, &o, &err);
    }
    int rcode = 0;
    if (st != RP_OK) {
        rcode = rp_report_error(&err);
    } else {
        int failing = 0;
        for (int i = 0; i < rc.n; i++) failing += !rc.cases[i].pass;
        if (!quiet) {
            rp_report_terminal(&rc, stdout, rp_report_colour(colour, stdout));
            printf("reports: %s/report.html (summary.json, report.md, junit.xml)\n", out);
        }
        rcode = check && failing ? 1 : 0;
    }
    rp_run_free(&ra);
    rp_run_free(&rb);
    rp_run_free(&rc);
    return rcode;
}
