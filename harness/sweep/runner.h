/* runner.h — runs the cases of an expanded matrix and keeps their results.
 *
 * Store: one directory per finished case, its layout and every artifact's name in
 * harness/store/store.h; the runner builds each case in a temporary directory and publishes it
 * whole, and derives metrics.json and classification.json from what is kept.
 *
 * Before anything runs each case is validated (harness/sweep/validate.h): a rule
 * broken on any hardware -> CONFIG_ERROR, recorded without launching; a case
 * that only this machine cannot run (no matching GPU, backend not built) ->
 * SKIPPED with the reason.
 *
 * Scheduling: every case runs as its own rp_launch job of world ranks (`repro
 * worker --job case --case-file case.json --out-dir DIR`) under the matrix's
 * timeout. A case waits until its reference has finished, so a group's
 * reference runs first and its outputs serve every case of the group. Without
 * --jobs, cases run side by side while their ranks fit the cores (a case of
 * world W takes W x threads cores; a case larger than the machine runs alone);
 * --jobs N runs up to N cases at once regardless. With --launcher srun or mpirun
 * (backends/launcher.h) cases are packed by nodes instead: a case of world W takes
 * ceil(W / ranks_per_node) whole nodes (default min(W, the nodes there are)) of the
 * allocation's or the hostfile's, and runs when that many are free (--jobs still caps
 * the count); a case needing more nodes than there are is SKIPPED. Ranks of a case with
 * threads: 0 get OPENBLAS_NUM_THREADS=1, so results never depend on how many
 * cases happened to share the machine. */
#ifndef REPRO_RUNNER_H
#define REPRO_RUNNER_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "engine/error.h"
#include "harness/sweep/matrix.h"
#include "harness/store/store.h"

typedef enum rp_case_status {
    RP_CASE_PENDING = 0,   /* not run (not selected, or the sweep was cancelled) */
    RP_CASE_OK,
    RP_CASE_CONFIG_ERROR,
    RP_CASE_CRASH,
    RP_CASE_HANG,
    RP_CASE_SKIPPED,
    RP_CASE_INFRA          /* the machine failed, not the code under test (disk or quota full,
                            * no file descriptors, the launcher or the store could not work):
                            * nothing is stored, so the next run computes the case again */
} rp_case_status;

/* "pending" | "ok" | "CONFIG_ERROR" | "CRASH" | "HANG" | "SKIPPED" | "INFRA_ERROR" */
const char *rp_case_status_name(rp_case_status s);

typedef struct rp_runner_opts {
    const char *results_dir;         /* store root (default "results") */
    int jobs;                        /* > 0: at most this many cases at once; 0: fit the cores */
    int rerun;                       /* recompute finished cases */
    int retry_failed;                /* recompute finished CRASH / HANG cases */
    int dry_run;                     /* list the cases and their verdicts; run and write nothing */
    const char *const *filters;      /* "KEY=VALUE" (rp_matrix_select) */
    int n_filters;
    int refs_only;                   /* run only reference cases (golden record) */
    const char *golden_dir;          /* compare every case with its reference's golden; NULL: no */
    double timeout_s;                /* > 0: per-run deadline instead of the matrix's */
    const char *worker_exe;          /* program run as the rank (tests); NULL: this binary */
    int progress;                    /* -1: live line when stderr is a TTY; 0: plain lines; 1: live */
    int cancel_fd;                   /* readable -> stop: running cases are killed and discarded; < 0 none */
    const char *launcher;            /* "local" | "srun" | "mpirun"; NULL: the matrix's launcher: key,
                                        else local (backends/launcher.h) */
    const char *hostfile;            /* mpirun: the hosts */
    int ranks_per_node;              /* srun / mpirun: > 0 overrides the matrix's ranks_per_node */
    FILE *out;                       /* the table; NULL = stdout. Progress goes to stderr. */
} rp_runner_opts;

/* How one case ended (this run or an earlier one). */
typedef struct rp_case_outcome {
    int selected;              /* passed --filter (or is the reference of such a case) */
    rp_case_status status;
    int resumed;               /* finished by an earlier run, not recomputed */
    int ran;                   /* launched by this run */
    double wall_s;             /* of the run(s) that produced it */
    int failed_rank;           /* CRASH / HANG: the rank that failed first (-1: none known) */
    char reason[600];          /* CONFIG_ERROR / SKIPPED / CRASH / HANG: one line */
    /* against the reference (have_metrics) */
    int have_metrics;
    double max_abs, rel_l2;    /* final latents */
    double psnr, ssim, changed;/* worst image: lowest PSNR / SSIM, largest share changed */
    int within_tol;            /* -1: no tolerances or no metrics; 0 / 1 */
    /* repeats against run 1 (repeat > 1) */
    int repeat_identical;      /* -1: no repeats; 1: every run bitwise identical */
    double repeat_max_abs;
    /* against the golden store (--golden) */
    int have_golden;           /* 1 compared; 0 no golden for its reference */
    double g_max_abs, g_psnr;
    int expect_met;            /* -1: no expectation (or a label the runner cannot check); 0 / 1 */
    /* the classifier (classification.json; have_verdict 0 when off or not classified) */
    int have_verdict;
    int verdict;               /* rp_verdict */
    int verdict_pass;          /* meets the expect label (without a verdict label: not a failing verdict) */
    char verdict_summary[300];
    int have_golden_verdict;   /* --golden: classification-golden.json */
    int golden_verdict, golden_verdict_pass;
} rp_case_outcome;

typedef struct rp_sweep {
    int n;                     /* = the matrix's n_cases */
    rp_case_outcome *o;        /* owned */
    char dir[4096];            /* <results>/<matrix name> */
    int cancelled;
    int n_selected, n_ran, n_resumed, n_ok, n_failed, n_skipped, n_unexpected;
} rp_sweep;

/* Runs (or with dry_run, plans) the matrix's selected cases and fills *s
 * (rp_sweep_free after, also on error). Prints progress to stderr and, at the
 * end, the table (rp_sweep_print) to o->out. Errors are the runner's own
 * (results dir not writable, lock held by another sweep, bad filter): the
 * cases' failures are outcomes, not errors. */
rp_status rp_runner_run(const rp_matrix *m, const rp_runner_opts *o, rp_sweep *s, rp_error *err);

/* rp_runner_run with ^C / SIGTERM / SIGHUP turned into a cancel: they are
 * blocked (in this thread and so in the case threads it starts) and read
 * through a signalfd used as o->cancel_fd, so the ranks — in process groups of
 * their own, out of reach of the terminal — are killed and reaped, and no
 * partial case is kept. The signal mask is restored afterwards. */
rp_status rp_runner_run_cancellable(const rp_matrix *m, const rp_runner_opts *o, rp_sweep *s, rp_error *err);

/* The summary table: per selected case id, name, degrees, status and, against
 * the reference, max-abs of the latents, PSNR, SSIM, % pixels changed and the
 * classifier's verdict; then, when cases carry verdict labels, the confusion table
 * (expected label x verdict) and whether it is diagonal (every case's verdict meets
 * its label: rp_cls_meets). */
void rp_sweep_print(const rp_matrix *m, const rp_sweep *s, FILE *f);

void rp_sweep_free(rp_sweep *s);

/* The exit code of a sweep: 0 every selected case ended as expected (ok or its
 * expect label, SKIPPED allowed), within the tolerances, and with a verdict that
 * meets its label or, without one, is not failing (BUG, MISMATCH, CRASH, HANG,
 * CONFIG_ERROR, NONDETERMINISTIC in deterministic mode; also against a golden);
 * 1 otherwise; 130 cancelled. */
int rp_sweep_exit_code(const rp_sweep *s);

#endif
