/* report.c — rp_report_write: every report of a run into one directory. */
#include "reports/report.h"

#include <stdio.h>

#include "harness/store/store.h"
#include "reports/rutil.h"

rp_status rp_report_write(const rp_run *r, const rp_report_opts *o, rp_error *err) {
    char p[RP_REPORT_PATHLEN];
    RP_TRY(rp_store_mkdirs(o->out_dir, err));
    /* the history first, so the sparklines include this run */
    if (o->history_db) RP_TRY(rp_history_append(o->history_db, r, NULL, err));
    rp_plots plots = {0};
    rp_status st = RP_OK;
    if (o->plots) st = rp_plots_render(r, o->out_dir, &plots, err);
    else st = rp_plots_skip_all(r, "plots not asked for (--no-plots)", &plots, err);
    if (st == RP_OK && rp_store_path(p, sizeof p, o->out_dir, RP_ART_SUMMARY))
        st = RP_FAIL(err, RP_ERR_INVALID, "path too long: %s", o->out_dir);
    if (st == RP_OK) st = rp_report_json(r, &plots, p, err);
    if (st == RP_OK) {
        rp_html_opts ho = {o->out_dir, o->history_db, &plots};
        rp_pathf(p, sizeof p, "%s/report.html", o->out_dir);
        st = rp_report_html(r, &ho, p, err);
    }
    if (st == RP_OK) {
        rp_pathf(p, sizeof p, "%s/report.md", o->out_dir);
        st = rp_report_markdown(r, &plots, p, err);
    }
    if (st == RP_OK) {
        rp_pathf(p, sizeof p, "%s/junit.xml", o->out_dir);
        st = rp_report_junit(r, p, err);
    }
    rp_plots_free(&plots);
    return st;
}

rp_status rp_report_after_run(const char *matrix_dir, const char *history_db, const char *report_dir, FILE *out,
                              int colour, rp_error *err) {
    rp_run r;
    rp_status st = rp_run_load(matrix_dir, &r, err);
    if (st == RP_OK) {
        rp_run_fill_metrics(&r);
        if (report_dir) { /* as `repro report`, which appends the history itself */
            rp_report_opts o = {report_dir, history_db, 1};
            st = rp_report_write(&r, &o, err);
        } else if (history_db) {
            st = rp_history_append(history_db, &r, NULL, err);
        }
        rp_report_terminal(&r, out, colour);
    }
    rp_run_free(&r);
    return st;
}
