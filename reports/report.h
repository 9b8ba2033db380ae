/* report.h — reports of stored results: summary.json (machines), report.html
 * (people), report.md (CI comments, terminals), junit.xml (test reporters),
 * gnuplot plots, an SQLite history of runs and the end-of-run terminal summary.
 *
 * Everything here reads the result store (harness/store/store.h) and never runs a
 * case: a report is rebuilt from <results>/<matrix>/<case id>/ at any time.
 * The in-memory model is rp_run: one row (rp_rcase) per case with its config,
 * its verdict (classification.json when the classifier has written one, else
 * a provisional one from result.json's status: ok -> "unclassified"), the
 * evidence and the metrics. A comparison of two runs (rp_run_compare) is an
 * rp_run too, so every writer serves both.
 *
 * Output (rp_report_write): OUT/summary.json, report.html, report.md,
 * junit.xml, images/ (diff heatmaps and thumbnails), plots/ (SVG + PNG and the
 * gnuplot script that made them). Every file is written atomically (tmp +
 * rename) and is a pure function of the stored results: rebuilding a report
 * gives the same bytes. The schema of summary.json is docs/report-schema.md. */
#ifndef REPRO_REPORT_H
#define REPRO_REPORT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "engine/error.h"
#include "harness/analysis/verdict.h"

#define RP_REPORT_SCHEMA_VERSION 1
#define RP_REPORT_PATHLEN 4096

/* Display classes: the verdicts (rp_verdict values 0..RP_V_COUNT-1) and two
 * provisional ones for cases the classifier has not seen. */
enum {
    RP_RC_UNCLASSIFIED = RP_V_COUNT, /* ran ok, no classification.json yet */
    RP_RC_PENDING,                   /* listed by the runner, not run */
    RP_RC_COUNT
};

typedef enum rp_tone { RP_TONE_RED = 0, RP_TONE_AMBER, RP_TONE_BLUE, RP_TONE_GREEN, RP_TONE_GREY } rp_tone;

/* "identical" ... "SKIPPED", "unclassified", "pending"; NULL outside 0..RP_RC_COUNT-1. */
const char *rp_rclass_name(int k);
/* Parses a class name (exact); -1 when unknown. */
int rp_rclass_parse(const char *s);
/* Red (BUG, MISMATCH, CRASH, HANG, NONDETERMINISTIC), amber (CONFIG_ERROR,
 * approx), blue (unclassified, pending), green (identical, drift), grey (SKIPPED). */
rp_tone rp_rclass_tone(int k);
/* Position in the red-first order every report lists classes in (0 first). */
int rp_rclass_rank(int k);
/* The classes in that order (RP_RC_COUNT entries). */
const int *rp_rclass_order(void);

/* One case of a run (or of a comparison). Strings are "" when unknown; cJSON
 * members are owned by the case and NULL when the file was absent. */
typedef struct rp_rcase {
    char id[40];
    char name[256];
    char matrix[128];
    char dir[RP_REPORT_PATHLEN];     /* the case's result directory; "" (SKIPPED cases have none) */
    char ref_id[40];                 /* its reference case; "" none; == id for a reference */
    char ref_dir[RP_REPORT_PATHLEN]; /* the reference's directory ("" when not in the store) */
    char ref_label[256];             /* what the reference is, for people: "reference <name>" / "run A" */
    int is_ref;                      /* some case compares against it */
    char status[24];                 /* result.json: ok | CONFIG_ERROR | CRASH | HANG | SKIPPED | pending */
    int verdict;                     /* display class, 0..RP_RC_COUNT-1 */
    int classified;                  /* 1: verdict from classification.json; 0: provisional */
    char expected[32];               /* expected verdict/status label; "" none */
    int pass;                        /* 1 acceptable, 0 failing (also when the verdict against
                                        the golden fails) */
    char evidence[1024];             /* one line: why this verdict */
    char reason[1024];               /* result.json / summary reason (CONFIG_ERROR, CRASH, ...) */
    double wall_s;
    int world;
    char degrees[96];                /* "dp2 ulysses2", "1" */
    int n_images;                    /* image-<i>.png files in dir */
    cJSON *config;                   /* case.json (normalised: every field) */
    cJSON *result;                   /* result.json */
    cJSON *classification;           /* classification.json */
    cJSON *golden;                   /* classification-golden.json (--golden runs): the case
                                        against the golden of its reference */
    cJSON *metrics;                  /* metrics.json, or computed by rp_run_fill_metrics */
    int metrics_computed;            /* 1: metrics computed by the report, not the runner */
    cJSON *env;                      /* env.json */
    cJSON *env_ref;                  /* comparison: run A's env.json of the case; NULL otherwise */
    char finished_at[32];
    char run_stamp[96];
    char verdict_a[24], verdict_b[24]; /* comparison: each run's own verdict ("" otherwise) */
} rp_rcase;

typedef struct rp_run {
    char kind[16];                   /* "run" or "compare" */
    char title[512];                 /* the matrix name(s), or "A vs B" */
    char source[2][RP_REPORT_PATHLEN]; /* results directories (source[1]: compare's RUN_B) */
    char git[96], engine[32];        /* from the first case that has them */
    char finished_at[32];            /* the latest case's finish time (UTC ISO 8601) */
    int n, cap;
    rp_rcase *cases;                 /* owned */
} rp_run;

void rp_run_init(rp_run *r);
void rp_run_free(rp_run *r);

/* Loads the stored results under dir: a matrix directory (<results>/<matrix>,
 * holding case directories and the runner's summary.json) or a results root
 * holding several (each loaded, in name order). Cases come in the runner's
 * summary.json order (SKIPPED ones, which have no directory, from it alone),
 * then any further case directories in name order. Directories starting with
 * '.' and report outputs are ignored. RP_ERR_NOT_FOUND when dir holds no
 * results; unreadable case files are RP_ERR_IO / RP_ERR_FORMAT naming them. */
rp_status rp_run_load(const char *dir, rp_run *r, rp_error *err);

/* For every ok case that has a reference in the run but no metrics (no
 * metrics.json, or one without vs_reference), computes them from the stored
 * outputs as the runner would (latents, trajectory, images). A case whose
 * outputs cannot be compared keeps no metrics and gets the reason as evidence. */
void rp_run_fill_metrics(rp_run *r);

/* Re-derives c->verdict, pass and evidence from its files (used after the
 * metrics change). */
void rp_rcase_resolve(rp_rcase *c);

/* ---- metric accessors (worst image; NaN when absent) ----------------------------- */

/* The vs-reference comparison object: classification.json "metrics" when the
 * classifier wrote one with images, else metrics.json "vs_reference"; NULL none. */
const cJSON *rp_rcase_vs(const rp_rcase *c);
double rp_rcase_psnr(const rp_rcase *c);     /* worst image PSNR, +inf identical */
double rp_rcase_ssim(const rp_rcase *c);
double rp_rcase_changed(const rp_rcase *c);  /* share 0..1 */
double rp_rcase_max_abs(const rp_rcase *c);  /* latents */
double rp_rcase_rel_l2(const rp_rcase *c);   /* latents */
/* Per-step series into a malloc'd array (caller frees; *n 0 and NULL when
 * absent; null entries are NaN): per step k = 0..T-1 "local" (evidence
 * local_errors) and "envelope" (evidence envelope.steps); per trajectory row
 * r = 0..T (row 0 the initial noise, row k + 1 the result of step k)
 * "accumulated" (evidence accumulated, else the classifier's metrics.steps,
 * else metrics.json's trajectory rel-L2) and "envelope_accumulated" (evidence
 * envelope.accumulated). */
double *rp_rcase_series(const rp_rcase *c, const char *which, int *n);
/* A field of the case config as text ("" when unknown); numbers printed %g. */
void rp_rcase_field(const rp_rcase *c, const char *key, char *buf, size_t cap);
/* A numeric field of the case config; def when absent. */
double rp_rcase_num(const rp_rcase *c, const char *key, double def);

/* ---- axes: the config fields that vary --------------------------------------------- */

#define RP_AXIS_LEN 32

/* The config fields whose value differs between the run's cases, most distinct
 * values first (ties: parallel degrees, attention, precision, warmup, then the
 * config's field order), at most max into axes. The pseudo field "degrees"
 * (rp_case_degrees_text: "dp2 ulysses2") stands for the parallel degrees when
 * it has more values than any single degree, which is then left out.
 * Returns the count. */
int rp_run_axes(const rp_run *r, char (*axes)[RP_AXIS_LEN], int max);
/* The case's value of an axis as text ("" unknown). */
void rp_rcase_axis_value(const rp_rcase *c, const char *axis, char *buf, size_t cap);
/* The axis's distinct known values in display order (numbers ascending, else first
 * appearance): a malloc'd array of n strings of RP_AXIS_VALUE_LEN (caller frees). */
#define RP_AXIS_VALUE_LEN 96
char (*rp_run_axis_values(const rp_run *r, const char *axis, int *n))[RP_AXIS_VALUE_LEN];

/* ---- comparing two runs ------------------------------------------------------------ */

typedef struct rp_compare_opts {
    double psnr_min;     /* both ok and images differ: drift when every image is at least this (default 30) */
    double ssim_min;     /* ... and at least this SSIM (default 0.99) */
    double rel_l2_max;   /* no images: drift when the latents' rel-L2 is at most this (default 1e-3) */
} rp_compare_opts;

void rp_compare_opts_default(rp_compare_opts *o);

/* Matches a's and b's cases by id (the id hashes the config, so the same config
 * on two machines has the same id) and compares b's outputs with a's: out gets
 * one case per id in a or b (a's order, then b-only ones), its "reference" the
 * case in a, its metrics b against a, and a verdict: identical (bitwise),
 * drift (within the bounds), BUG (beyond them), the failing status when the
 * case did not finish ok in one run, SKIPPED when it is in one run only. */
rp_status rp_run_compare(const rp_run *a, const rp_run *b, const rp_compare_opts *o, rp_run *out, rp_error *err);

/* ---- writers --------------------------------------------------------------------- */

typedef struct rp_plot {
    char name[96];       /* "psnr_vs_degree", "steps-<id>", ... */
    char title[160];
    char svg[256], png[256]; /* paths relative to the output dir ("" when skipped) */
    int written;
    char reason[256];    /* why skipped */
    char case_id[40];    /* per-case plots: the case; "" otherwise */
} rp_plot;

typedef struct rp_plots {
    int n, cap;
    rp_plot *p;          /* owned */
    int gnuplot;         /* 1 gnuplot was found and ran */
} rp_plots;

void rp_plots_free(rp_plots *p);
/* The plot of that name, or NULL. */
const rp_plot *rp_plots_find(const rp_plots *p, const char *name);

/* Renders the run's plots into out_dir/plots/ with gnuplot (the program named
 * by $REPRO_GNUPLOT, else "gnuplot" on PATH): final PSNR and SSIM versus
 * parallel degree per strategy, quality versus warmup steps for the
 * approximate strategies, the share of changed pixels per attention variant,
 * and per case the local and accumulated error per step with the rounding
 * envelope. Plots without data, or all of them when gnuplot is absent or
 * fails, are listed as skipped with the reason: never an error. Errors are
 * only the output directory's. */
rp_status rp_plots_render(const rp_run *r, const char *out_dir, rp_plots *out, rp_error *err);
/* Lists the plots rp_plots_render would draw, every one skipped with reason;
 * writes nothing. */
rp_status rp_plots_skip_all(const rp_run *r, const char *reason, rp_plots *out, rp_error *err);

/* Writes summary.json (schema docs/report-schema.md) to path. plots may be NULL. */
rp_status rp_report_json(const rp_run *r, const rp_plots *plots, const char *path, rp_error *err);
/* The summary as a cJSON tree (caller deletes); NULL out of memory. */
cJSON *rp_report_json_tree(const rp_run *r, const rp_plots *plots);

typedef struct rp_html_opts {
    const char *out_dir;      /* where images/ goes (heatmaps and thumbnails written there) */
    const char *history_db;   /* NULL: no sparklines */
    const rp_plots *plots;    /* NULL: none */
} rp_html_opts;

/* Writes the self-contained report.html to path: every image and plot is
 * inlined (data: URIs), nothing is loaded from elsewhere. */
rp_status rp_report_html(const rp_run *r, const rp_html_opts *o, const char *path, rp_error *err);
rp_status rp_report_markdown(const rp_run *r, const rp_plots *plots, const char *path, rp_error *err);
rp_status rp_report_junit(const rp_run *r, const char *path, rp_error *err);

/* The end-of-run summary: a table of the verdict counts (red first) and every
 * failing case with its one-line evidence. colour: ANSI colours. */
void rp_report_terminal(const rp_run *r, FILE *f, int colour);
/* Whether to colour output to f: choice "always", "never", or "auto" (f is a
 * terminal and NO_COLOR is not set). */
int rp_report_colour(const char *choice, FILE *f);

/* ---- history (SQLite) --------------------------------------------------------------- */

/* Appends the run's verdicts and metrics to the database at path (created with
 * its tables when missing). A run already recorded (same matrix and the same
 * case run stamps) is replaced, not duplicated, so rebuilding a report does not
 * add a point to every trend. *run_id gets the run's row id (may be NULL). */
rp_status rp_history_append(const char *path, const rp_run *r, long long *run_id, rp_error *err);

typedef struct rp_hist_point {
    long long run_id;
    char when[32];       /* the run's finish time */
    char git[96];
    char verdict[24];
    double value;        /* NaN when the run has no such metric for the case */
} rp_hist_point;

/* The metric's trend for one case (id or a unique id prefix), oldest first, at
 * most last points (<= 0: all). *pts malloc'd (caller frees). full_id gets the
 * matched id (>= 40 bytes). RP_ERR_NOT_FOUND: no such case; RP_ERR_INVALID:
 * the prefix matches several. */
rp_status rp_history_trend(const char *path, const char *case_id, const char *metric, int last,
                           rp_hist_point **pts, int *n, char *full_id, rp_error *err);

/* Prints the recorded runs, oldest first (at most the last `last`; <= 0 all):
 * id, finish time, git revision, host, cases, failing, title. */
rp_status rp_history_print_runs(const char *path, int last, FILE *f, rp_error *err);

/* Metric names the history records per case. */
extern const char *const RP_HISTORY_METRICS[];

/* A text sparkline of v[0..n) ("▁▂▃▄▅▆▇█", "·" for NaN, "↑" for +inf) into buf. */
void rp_sparkline_text(const double *v, int n, char *buf, size_t cap);

/* ---- all of it --------------------------------------------------------------------- */

typedef struct rp_report_opts {
    const char *out_dir;      /* created when missing */
    const char *history_db;   /* NULL: none; else appended to, and sparklines drawn */
    int plots;                /* 0: no plots (listed as skipped) */
} rp_report_opts;

/* Writes every report of r into o->out_dir (plots, summary.json, report.html,
 * report.md, junit.xml) and, with a history database, appends the run first. */
rp_status rp_report_write(const rp_run *r, const rp_report_opts *o, rp_error *err);

/* The end of a sweep, for the runner's command (harness/cli/cmd_matrix.c): loads
 * the matrix directory just written (<results>/<matrix>), with report_dir writes
 * every report there (rp_report_write, plots included), prints the terminal
 * summary (rp_report_terminal) to out and, with history_db, appends the run to
 * it. Errors are loading, report and history ones; failing cases are not errors. */
rp_status rp_report_after_run(const char *matrix_dir, const char *history_db, const char *report_dir, FILE *out,
                              int colour, rp_error *err);

#endif
