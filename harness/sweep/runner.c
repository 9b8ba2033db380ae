/* runner.c — schedules a matrix's cases, keeps the result store, compares each
 * case with its reference (see runner.h for the store layout and the rules).
 *
 * Threads: the main thread plans, schedules and prints; each running case has
 * a thread of its own that calls rp_launch (which blocks until the ranks are
 * reaped), writes the case's files into its temporary directory, computes its
 * metrics and renames the directory into place. A case thread writes only its
 * own outcome slot and its own directories; the shared counters, the states
 * and the progress output are under one mutex. rp_launch sets
 * PR_SET_PDEATHSIG in the ranks relative to the forking thread, which lives
 * until its ranks are reaped, so a SIGKILLed sweep takes its ranks with it. */
#include "runner.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/launcher.h"
#include "engine/clock.h"
#include "engine/device.h"
#include "engine/fsutil.h"
#include "engine/image.h"
#include "engine/safetensors.h"
#include "harness/analysis/classify.h"
#include "harness/sweep/env.h"
#include "harness/sweep/golden.h"
#include "backends/launch.h"
#include "harness/metrics/metrics.h"
#include "harness/sweep/validate.h"
#include "harness/analysis/verdict.h"

#define PATHLEN 4096

const char *rp_case_status_name(rp_case_status s) {
    switch (s) {
    case RP_CASE_PENDING: return "pending";
    case RP_CASE_OK: return "ok";
    case RP_CASE_CONFIG_ERROR: return "CONFIG_ERROR";
    case RP_CASE_CRASH: return "CRASH";
    case RP_CASE_HANG: return "HANG";
    case RP_CASE_SKIPPED: return "SKIPPED";
    case RP_CASE_INFRA: return "INFRA_ERROR";
    }
    return "?";
}

/* Parses a status name (case-insensitive); -1 when s is none. */
static int status_parse(const char *s) {
    for (int k = RP_CASE_OK; k <= RP_CASE_INFRA; k++)
        if (!strcasecmp(s, rp_case_status_name((rp_case_status)k))) return k;
    return -1;
}

static const char *get_str(const cJSON *o, const char *key, const char *def) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : def;
}

/* ---- comparing two result directories --------------------------------------------------- */

/* What a comparison of two result directories found (rp_store_compare_outputs); ok: it
 * was made (the directories' outputs could be compared at all). */
typedef struct cmp_summary {
    int ok;
    rp_outputs_cmp c;
} cmp_summary;

/* Compares result dir db with reference dir da; returns the comparison object
 * (never NULL unless out of memory): either the metrics, or {"error": why}. */
static cJSON *compare_dirs(const char *da, const char *db, int n_items, cmp_summary *s) {
    memset(s, 0, sizeof *s);
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    rp_error e;
    rp_error_clear(&e);
    if (rp_store_compare_outputs(da, db, n_items, o, &s->c, &e) != RP_OK) {
        cJSON_Delete(o);
        o = cJSON_CreateObject();
        if (o) cJSON_AddStringToObject(o, "error", e.msg);
        memset(s, 0, sizeof *s);
        return o;
    }
    s->ok = 1;
    cJSON_AddBoolToObject(o, "identical", s->c.identical);
    return o;
}

/* ---- the runner's state -------------------------------------------------------------- */

typedef enum cstate { CS_NONE = 0, CS_TODO, CS_RUNNING, CS_DONE } cstate;

/* A case's serial emulation (rp_cls_emulation) is a job of its own: it reads nothing the case
 * computes, so the scheduler starts it on any free slot (beside a reference that runs its
 * twins alone, beside another emulation) rather than after the case's launch on the cores
 * that launch held, one of them idle under a one-rank run. It runs in its side directory
 * (emulation_side) and moves into the case's when the case reaches it (emulation_collect);
 * a case that gets there first runs its emulation itself. */
typedef enum estate { ES_NONE = 0, ES_TODO, ES_RUNNING, ES_DONE, ES_CANCELLED, ES_FAILED } estate;

/* The scheduler's jobs: case i is job i, its emulation job JOB_EMULATION * n_cases + i, the
 * twins of reference i (twins_thread) JOB_TWINS * n_cases + i. */
enum { JOB_CASE = 0, JOB_EMULATION, JOB_TWINS, JOB_KINDS };

typedef struct runner {
    const rp_matrix *m;
    const rp_runner_opts *o;
    rp_sweep *s;
    unsigned char *state;       /* cstate per case */
    unsigned char *emu;         /* (n_cases) estate of each case's emulation job */
    unsigned char *twn;         /* (n_cases) estate of each reference's twins job (ES_FAILED: the
                                   machine failed it, nothing moved in) */
    int *slots;                 /* (JOB_KINDS n_cases) cores a job takes (the job indices above) */
    int *held;                  /* (JOB_KINDS n_cases) cores a running job holds now (a case gives some
                                   back while it runs or waits for its emulation or twins) */
    pthread_t *tid;             /* (JOB_KINDS n_cases) as slots */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ncpu, free_slots, running, jobs;
    int cancelled;
    int to_run, finished, failed;
    double t0;
    int live;                   /* live progress line on stderr */
    int line_shown;             /* the live line is on screen */
    double timeout_s;
    rp_validate_env host;       /* this machine, for the checks the classifier's runs need */
    char build_id[RP_BUILD_ID_CAP]; /* the binary's (rp_build_id): a stored result of another is stale */
    rp_launcher *launcher;      /* starts every run's ranks (local, srun, mpirun) */
    int ranks_per_node;         /* cluster launchers: 0 = spread over min(world, nodes) */
} runner;

typedef struct case_arg {
    runner *r;
    int i;
} case_arg;

static void case_dir(const runner *r, int i, char *buf) { rp_pathf(buf, PATHLEN, "%s/%s", r->s->dir, r->m->cases[i].id); }

static void verdict_load(const char *dir, const char *file, int *have, int *verdict, int *pass, char *summary,
                         size_t cap);

static int threads_of(const rp_case *c) { return c->threads > 0 ? c->threads : 1; }

/* ---- progress -------------------------------------------------------------------------- */

static void fmt_eta(double s, char *buf, size_t cap) {
    if (!(s >= 0) || s > 99 * 3600) snprintf(buf, cap, "--");
    else snprintf(buf, cap, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
}

/* Redraws the live line (caller holds the mutex). */
static void progress_line(runner *r) {
    if (!r->live) return;
    char eta[32];
    const double el = rp_now_s() - r->t0;
    fmt_eta(r->finished ? el / r->finished * (r->to_run - r->finished) : -1, eta, sizeof eta);
    char names[160] = "";
    for (int i = 0; i < r->m->n_cases; i++)
        if ((r->state[i] == CS_RUNNING || r->emu[i] == ES_RUNNING || r->twn[i] == ES_RUNNING) &&
            strlen(names) + 3 < sizeof names) {
            size_t l = strlen(names);
            char nm[sizeof r->m->cases[i].c.name];
            rp_case_display_name(r->m->cases[i].c.name, 0, nm, sizeof nm);
            snprintf(names + l, sizeof names - l, "%s%s%s", l ? ", " : "", nm,
                     r->state[i] == CS_RUNNING ? "" : r->emu[i] == ES_RUNNING ? " (emulation)" : " (twins)");
        }
    char line[320];
    snprintf(line, sizeof line, "[%d/%d] %d failed  elapsed %.0f s  ETA %s  running: %s", r->finished, r->to_run,
             r->failed, el, eta, names);
    /* a line wider than the terminal wraps, and \r would then redraw only its tail */
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10 && strlen(line) >= ws.ws_col)
        line[ws.ws_col - 1] = '\0';
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    r->line_shown = 1;
}

/* A permanent line (caller holds the mutex): clears the live line first. */
static void progress_say(runner *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress_say(runner *r, const char *fmt, ...) {
    if (r->line_shown) fputs("\r\033[K", stderr);
    r->line_shown = 0;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

/* ---- outcomes from the store ------------------------------------------------------------ */

/* Fills the metric fields of oc from a metrics.json object. */
static void outcome_metrics(rp_case_outcome *oc, const cJSON *mj) {
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(mj, "vs_reference");
    const cJSON *lat = cJSON_GetObjectItemCaseSensitive(vs, "latents");
    const cJSON *wi = cJSON_GetObjectItemCaseSensitive(vs, "worst_image");
    oc->have_metrics = lat != NULL;
    oc->max_abs = rp_store_num(lat, "max_abs", NAN);
    oc->rel_l2 = rp_store_num(lat, "rel_l2", NAN);
    oc->psnr = rp_store_num(wi, "psnr", NAN);
    oc->ssim = rp_store_num(wi, "ssim", NAN);
    oc->changed = rp_store_num(wi, "changed", NAN);
    const cJSON *tol = cJSON_GetObjectItemCaseSensitive(mj, "tolerances");
    const cJSON *within = cJSON_GetObjectItemCaseSensitive(tol, "within");
    oc->within_tol = cJSON_IsBool(within) ? cJSON_IsTrue(within) : -1;
    const cJSON *reps = cJSON_GetObjectItemCaseSensitive(mj, "repeats");
    oc->repeat_identical = -1;
    oc->repeat_max_abs = 0;
    if (cJSON_IsArray(reps) && cJSON_GetArraySize(reps) > 0) {
        oc->repeat_identical = 1;
        const cJSON *e;
        cJSON_ArrayForEach(e, reps) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "identical");
            if (!cJSON_IsTrue(id)) oc->repeat_identical = 0;
            const double d = rp_store_num(cJSON_GetObjectItemCaseSensitive(e, "latents"), "max_abs", NAN);
            if (!(d <= oc->repeat_max_abs)) oc->repeat_max_abs = d;
        }
    }
}

/* Which build made a stored result (result.json's "git" and "build_id"; "" unrecorded). */
typedef struct made_by {
    char git[64];
    char build_id[RP_BUILD_ID_CAP];
} made_by;

/* Reads a finished case's result.json (and metrics.json) into oc, and into *by (NULL: not
 * wanted) the build that made it. Returns 0 when dir holds no finished case. *stage gets
 * "validate" or "run". */
static int outcome_load(const char *dir, rp_case_outcome *oc, char *stage, size_t cap, made_by *by) {
    char p[PATHLEN];
    rp_store_path(p, sizeof p, dir, RP_ART_RESULT);
    cJSON *j = NULL;
    rp_error e;
    if (rp_store_read_json(p, &j, &e) != RP_OK) return 0;
    const int k = status_parse(get_str(j, "status", ""));
    if (k < 0) {
        cJSON_Delete(j);
        return 0;
    }
    oc->status = (rp_case_status)k;
    snprintf(oc->reason, sizeof oc->reason, "%s", get_str(j, "reason", ""));
    snprintf(stage, cap, "%s", get_str(j, "stage", "run"));
    oc->wall_s = rp_store_num(j, "wall_s", 0);
    oc->failed_rank = (int)rp_store_num(j, "failed_rank", -1);
    if (by) {
        snprintf(by->git, sizeof by->git, "%s", get_str(j, "git", ""));
        snprintf(by->build_id, sizeof by->build_id, "%s", get_str(j, "build_id", ""));
    }
    cJSON_Delete(j);
    rp_store_path(p, sizeof p, dir, RP_ART_METRICS);
    if (rp_store_read_json(p, &j, &e) == RP_OK) {
        outcome_metrics(oc, j);
        cJSON_Delete(j);
    }
    verdict_load(dir, "classification.json", &oc->have_verdict, &oc->verdict, &oc->verdict_pass,
                 oc->verdict_summary, sizeof oc->verdict_summary);
    if (!oc->have_verdict) oc->verdict_pass = -1;
    verdict_load(dir, "classification-golden.json", &oc->have_golden_verdict, &oc->golden_verdict,
                 &oc->golden_verdict_pass, NULL, 0);
    return 1;
}

/* The run stamp of a finished case dir into buf ("" if none). */
static void stamp_of(const char *dir, char *buf, size_t cap) {
    char p[PATHLEN];
    rp_store_path(p, sizeof p, dir, RP_ART_RESULT);
    cJSON *j = NULL;
    rp_error e;
    buf[0] = '\0';
    if (rp_store_read_json(p, &j, &e) == RP_OK) snprintf(buf, cap, "%s", get_str(j, "run_stamp", ""));
    cJSON_Delete(j);
}

/* 0 when the finished result in dir, made by the build *by (outcome_load), was made for case c
 * by this very binary (build_id): a resumed sweep reuses it. Else 1, with why (cap bytes): the
 * stored case.json is not c (the id is a hash of it: the comparison of the full text is what
 * the id stands for), or another build made it (a rebuilt engine's results are not the old
 * one's). */
static int stored_stale(const char *dir, const made_by *by, const rp_case *c, const char *build_id, char *why,
                        size_t cap) {
    char p[PATHLEN];
    rp_case sc;
    rp_error e;
    rp_store_path(p, sizeof p, dir, RP_ART_CASE);
    if (rp_case_load(p, &sc, &e) != RP_OK) {
        snprintf(why, cap, "its case.json cannot be read (%.200s)", e.msg);
        return 1;
    }
    if (!rp_case_same(&sc, c)) {
        snprintf(why, cap, "its case.json is not the case the matrix gives now (another case under the same id)");
        return 1;
    }
    const int other = strcmp(by->build_id, build_id) != 0;
    if (other)
        snprintf(why, cap, "it was made by another build (git %.40s, build id %.16s; this one: git %.40s, build id %.16s)",
                 by->git, by->build_id[0] ? by->build_id : "unrecorded", rp_git_revision(), build_id);
    return other;
}

/* ---- metrics.json ----------------------------------------------------------------------- */

static int tol_set(double t) { return !isnan(t); }

/* The tolerances as text: metrics.json keeps it, so editing them in the matrix
 * makes the stored verdicts stale. */
static void tol_key(const rp_tolerances *t, char *buf, size_t cap) {
    snprintf(buf, cap, "%.17g %.17g %.17g %.17g %.17g", t->latents_max_abs, t->latents_rel_l2, t->psnr_min,
             t->ssim_min, t->changed_max);
}

/* Writes <dir>/metrics.json for case i whose files are in dir (its temporary
 * or its final directory): against its reference's final directory (when that
 * finished ok), and its repeats against its first run. Fills oc's metrics. */
static rp_status write_metrics(runner *r, int i, const char *dir, rp_case_outcome *oc, rp_error *err) {
    const rp_matrix_case *mc = &r->m->cases[i];
    const int self = mc->ref == i;
    char rdir[PATHLEN], stamp[128];
    case_dir(r, mc->ref, rdir);
    if (self) stamp_of(dir, stamp, sizeof stamp);
    else stamp_of(rdir, stamp, sizeof stamp);
    cJSON *j = cJSON_CreateObject();
    if (!j) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    cJSON_AddStringToObject(j, "case", mc->id);
    cJSON *ref = cJSON_AddObjectToObject(j, "reference");
    cJSON_AddStringToObject(ref, "id", r->m->cases[mc->ref].id);
    cJSON_AddStringToObject(ref, "name", r->m->cases[mc->ref].c.name);
    cJSON_AddStringToObject(ref, "run_stamp", stamp);
    cJSON_AddBoolToObject(ref, "self", self);
    char tk[160];
    tol_key(&r->m->tol, tk, sizeof tk);
    cJSON_AddStringToObject(j, "tolerances_key", tk);
    oc->have_metrics = 0;
    oc->within_tol = -1;
    if (!self) {
        rp_case_outcome ro;
        char stage[16];
        memset(&ro, 0, sizeof ro);
        if (!outcome_load(rdir, &ro, stage, sizeof stage, NULL)) {
            cJSON_AddStringToObject(ref, "status", "missing");
        } else {
            cJSON_AddStringToObject(ref, "status", rp_case_status_name(ro.status));
            if (ro.status == RP_CASE_OK) {
                cmp_summary cs;
                cJSON *vs = compare_dirs(rdir, dir, mc->c.n_items, &cs);
                if (vs) cJSON_AddItemToObject(j, "vs_reference", vs);
                if (cs.ok) {
                    oc->have_metrics = 1;
                    oc->max_abs = cs.c.max_abs;
                    oc->rel_l2 = cs.c.rel_l2;
                    oc->psnr = cs.c.n_images ? cs.c.psnr : NAN;
                    oc->ssim = cs.c.n_images ? cs.c.ssim : NAN;
                    oc->changed = cs.c.n_images ? cs.c.changed : NAN;
                    const rp_tolerances *t = &r->m->tol;
                    if (tol_set(t->latents_max_abs) || tol_set(t->latents_rel_l2) || tol_set(t->psnr_min) ||
                        tol_set(t->ssim_min) || tol_set(t->changed_max)) {
                        /* NaN metrics fail every tolerance they are checked against */
                        int within = 1;
                        if (tol_set(t->latents_max_abs)) within &= cs.c.max_abs <= t->latents_max_abs;
                        if (tol_set(t->latents_rel_l2)) within &= cs.c.rel_l2 <= t->latents_rel_l2;
                        if (cs.c.n_images && tol_set(t->psnr_min)) within &= cs.c.psnr >= t->psnr_min;
                        if (cs.c.n_images && tol_set(t->ssim_min)) within &= cs.c.ssim >= t->ssim_min;
                        if (cs.c.n_images && tol_set(t->changed_max)) within &= cs.c.changed <= t->changed_max;
                        cJSON *tj = cJSON_AddObjectToObject(j, "tolerances");
                        if (tol_set(t->latents_max_abs)) rp_store_put_num(tj, "latents_max_abs", t->latents_max_abs);
                        if (tol_set(t->latents_rel_l2)) rp_store_put_num(tj, "latents_rel_l2", t->latents_rel_l2);
                        if (tol_set(t->psnr_min)) rp_store_put_num(tj, "psnr_min", t->psnr_min);
                        if (tol_set(t->ssim_min)) rp_store_put_num(tj, "ssim_min", t->ssim_min);
                        if (tol_set(t->changed_max)) rp_store_put_num(tj, "changed_max", t->changed_max);
                        cJSON_AddBoolToObject(tj, "within", within);
                        oc->within_tol = within;
                    }
                }
            }
        }
    }
    /* run-to-run: every further run against the first */
    oc->repeat_identical = -1;
    oc->repeat_max_abs = 0;
    if (r->m->repeat > 1) {
        cJSON *reps = cJSON_AddArrayToObject(j, "repeats");
        oc->repeat_identical = 1;
        for (int k = 2; k <= r->m->repeat; k++) {
            char rd[PATHLEN];
            rp_pathf(rd, PATHLEN, "%s/repeat-%d", dir, k);
            cmp_summary cs;
            cJSON *c = compare_dirs(dir, rd, mc->c.n_items, &cs);
            if (!c) continue;
            cJSON_AddNumberToObject(c, "run", k);
            cJSON_AddItemToArray(reps, c);
            if (!cs.ok || !cs.c.identical) oc->repeat_identical = 0;
            if (cs.ok && !(cs.c.max_abs <= oc->repeat_max_abs)) oc->repeat_max_abs = cs.c.max_abs;
        }
    }
    char p[PATHLEN];
    rp_store_path(p, sizeof p, dir, RP_ART_METRICS);
    rp_status st = rp_store_write_json(p, j, err);
    cJSON_Delete(j);
    return st;
}

/* 1 when <dir>/metrics.json is missing, or was made against another reference
 * run than the one now in the store, other tolerances or another repeat count. */
static int metrics_stale(runner *r, int i) {
    char dir[PATHLEN], rdir[PATHLEN], p[PATHLEN], stamp[128];
    case_dir(r, i, dir);
    case_dir(r, r->m->cases[i].ref, rdir);
    rp_store_path(p, sizeof p, dir, RP_ART_METRICS);
    cJSON *j = NULL;
    rp_error e;
    if (rp_store_read_json(p, &j, &e) != RP_OK) return 1;
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(j, "reference");
    stamp_of(rdir, stamp, sizeof stamp);
    char tk[160];
    tol_key(&r->m->tol, tk, sizeof tk);
    const int stale = strcmp(get_str(ref, "id", ""), r->m->cases[r->m->cases[i].ref].id) ||
                      strcmp(get_str(ref, "run_stamp", ""), stamp) || strcmp(get_str(j, "tolerances_key", ""), tk) ||
                      (r->m->repeat > 1) != (cJSON_GetObjectItemCaseSensitive(j, "repeats") != NULL);
    cJSON_Delete(j);
    return stale;
}

/* ---- running one case --------------------------------------------------------------------- */

/* Nodes a run of case c is spread over: 1 with the local launcher; with srun / mpirun
 * ceil(world / ranks_per_node), or without ranks_per_node as many as there are, up to one
 * node per rank. */
static int nodes_of(const runner *r, const rp_case *c) {
    const int world = rp_case_world(c);
    if (!r->launcher || r->launcher->kind == RP_LAUNCHER_LOCAL) return 1;
    if (r->ranks_per_node > 0) return (world + r->ranks_per_node - 1) / r->ranks_per_node;
    return world < r->launcher->nodes ? world : r->launcher->nodes;
}

/* Writes <dir>/result.json; takes ownership of runs (may be NULL). */
static rp_status write_result(runner *r, int i, const char *dir, const rp_case_outcome *oc, const char *stage,
                              const char *report, cJSON *runs, rp_error *err) {
    const rp_matrix_case *mc = &r->m->cases[i];
    cJSON *j = cJSON_CreateObject();
    if (!j) {
        cJSON_Delete(runs);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char stamp[96], when[64];
    snprintf(stamp, sizeof stamp, "%lld.%09ld-%ld-%d", (long long)ts.tv_sec, ts.tv_nsec, (long)getpid(), i);
    struct tm tmv;
    gmtime_r(&ts.tv_sec, &tmv);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    cJSON_AddStringToObject(j, "id", mc->id);
    cJSON_AddStringToObject(j, "name", mc->c.name);
    cJSON_AddStringToObject(j, "matrix", r->m->name);
    cJSON_AddStringToObject(j, "status", rp_case_status_name(oc->status));
    cJSON_AddStringToObject(j, "stage", stage);
    cJSON_AddStringToObject(j, "reason", oc->reason);
    cJSON_AddNumberToObject(j, "failed_rank", oc->failed_rank);
    if (report && *report) cJSON_AddStringToObject(j, "report", report);
    cJSON_AddNumberToObject(j, "world", rp_case_world(&mc->c));
    if (r->launcher && strcmp(stage, "validate")) { /* a validation verdict launched nothing */
        cJSON_AddStringToObject(j, "launcher", r->launcher->name);
        cJSON_AddNumberToObject(j, "nodes", nodes_of(r, &mc->c));
    }
    cJSON_AddNumberToObject(j, "wall_s", oc->wall_s);
    cJSON_AddNumberToObject(j, "repeat", r->m->repeat);
    if (runs) cJSON_AddItemToObject(j, "runs", runs);
    cJSON_AddStringToObject(j, "engine", REPRO_VERSION);
    cJSON_AddStringToObject(j, "git", rp_git_revision());
    cJSON_AddStringToObject(j, "build_id", r->build_id);
    cJSON_AddStringToObject(j, "finished_at", when);
    cJSON_AddStringToObject(j, "run_stamp", stamp);
    char p[PATHLEN];
    rp_store_path(p, sizeof p, dir, RP_ART_RESULT);
    rp_status st = rp_store_write_json(p, j, err);
    cJSON_Delete(j);
    return st;
}

/* First line of text into out. */
static void first_line(const char *text, char *out, size_t cap) {
    const char *nl = strchr(text, '\n');
    const size_t n = nl ? (size_t)(nl - text) : strlen(text);
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), text);
}

/* 1 when the failed run in out (res) ended on an infrastructure failure: the failing rank
 * (or, with none known, any rank) says so in the tail of its stderr. */
static int rank_infra(const char *out, const rp_launch_result *res) {
    for (int k = 0; k < res->nranks; k++) {
        if (res->first_failed >= 0 && k != res->first_failed) continue;
        char p[PATHLEN], tail[4096];
        rp_pathf(p, PATHLEN, "%s/rank%d.err", out, k);
        if (rp_file_tail(p, RP_LAUNCH_TAIL_LINES, tail, sizeof tail) > 0 && rp_exhausted_text(tail)) return 1;
    }
    return rp_exhausted_text(res->report);
}

/* One launch of case c (case_json) writing into out, with extra worker arguments (NULL-
 * terminated, or NULL); fills *oc's status, reason and failed rank, and appends the run's
 * record to runs (may be NULL); returns 1 when the run was cancelled. */
static int launch_run(runner *r, const rp_case *c, const char *case_json, const char *out,
                      const char *const *extra, int planned, rp_launch_result *res, rp_case_outcome *oc,
                      cJSON *runs, char *report, size_t report_cap) {
    char thr[64], omp[64];
    snprintf(thr, sizeof thr, "OPENBLAS_NUM_THREADS=%d", threads_of(c));
    snprintf(omp, sizeof omp, "OMP_NUM_THREADS=%d", threads_of(c));
    const char *env[] = {thr, omp, NULL};
    /* a collective may wait as long as the case may run (the worker's default is 60 s) */
    char tmo[32];
    snprintf(tmo, sizeof tmo, "%.17g", r->timeout_s);
    const char *argv[26] = {"repro", "worker", "--job", "case", "--case-file", case_json, "--out-dir", out,
                            "--timeout", tmo};
    int na = 10;
    for (int k = 0; extra && extra[k]; k++) {
        assert(na < 25);
        argv[na++] = extra[k];
    }
    argv[na] = NULL;
    rp_launch_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.nranks = rp_case_world(c);
    spec.exe = r->o->worker_exe;
    spec.argv = argv;
    spec.run_dir = out;
    /* the classifier's runs in the same launch (planned) each get the case's own time */
    spec.timeout_s = r->timeout_s * (1 + planned);
    spec.env = env;
    spec.cancel_fd = r->o->cancel_fd;
    rp_error e;
    rp_error_clear(&e);
    spec.nodes = nodes_of(r, c);
    rp_status st = r->launcher->launch(r->launcher, &spec, res, &e);
    cJSON *run = runs ? cJSON_CreateObject() : NULL;
    if (st != RP_OK) { /* no rank ran: fork, pipes or the run directory failed */
        oc->status = RP_CASE_INFRA;
        oc->failed_rank = -1;
        snprintf(oc->reason, sizeof oc->reason, "the launcher failed: %.560s", e.msg);
        snprintf(report, report_cap, "%s", e.msg);
    } else {
        if (res->store_dir[0]) (void)rp_store_remove_tree(res->store_dir, NULL); /* rendezvous files */
        oc->wall_s += res->wall_s;
        oc->failed_rank = res->first_failed;
        snprintf(report, report_cap, "%s", res->report);
        first_line(res->report, oc->reason, sizeof oc->reason);
        switch (res->status) {
        case RP_LAUNCH_OK: {
            char done[PATHLEN];
            rp_store_path(done, sizeof done, out, RP_ART_DONE);
            oc->status = RP_CASE_OK;
            if (!rp_is_file(done)) {
                oc->status = RP_CASE_CRASH;
                snprintf(oc->reason, sizeof oc->reason, "every rank exited 0 but rank 0 wrote no done.json");
            }
            break;
        }
        case RP_LAUNCH_CONFIG: oc->status = RP_CASE_CONFIG_ERROR; break;
        case RP_LAUNCH_CRASH: oc->status = RP_CASE_CRASH; break;
        /* a rank stuck in a collective until it gave up: the job hung, nobody crashed first */
        case RP_LAUNCH_COMM_TIMEOUT:
        case RP_LAUNCH_HANG:
        case RP_LAUNCH_DEADLOCK: oc->status = RP_CASE_HANG; break; /* seen early: each rank's wait named */
        case RP_LAUNCH_CANCELLED: oc->status = RP_CASE_PENDING; break;
        }
        if (oc->status == RP_CASE_CONFIG_ERROR || oc->status == RP_CASE_CRASH) {
            /* the reason users want is the failing rank's own message: its last stderr line */
            char p[PATHLEN], tail[600];
            rp_pathf(p, PATHLEN, "%s/rank%d.err", out, res->first_failed);
            if (res->first_failed >= 0 && rp_file_tail(p, 1, tail, sizeof tail) > 0) {
                char *nl = strchr(tail, '\n');
                if (nl) *nl = '\0';
                char head[300];
                snprintf(head, sizeof head, "%.299s", oc->reason);
                snprintf(oc->reason, sizeof oc->reason, "%.250s: %.340s", head, tail);
            }
        }
        if (oc->status != RP_CASE_OK && oc->status != RP_CASE_PENDING && rank_infra(out, res)) {
            char why[sizeof oc->reason];
            snprintf(why, sizeof why, "%s", oc->reason);
            oc->status = RP_CASE_INFRA;
            snprintf(oc->reason, sizeof oc->reason, "infrastructure: %.570s", why);
        }
    }
    if (run) {
        cJSON_AddStringToObject(run, "status", st == RP_OK ? rp_launch_status_name(res->status) : "launcher-error");
        cJSON_AddNumberToObject(run, "wall_s", st == RP_OK ? res->wall_s : 0);
        cJSON_AddNumberToObject(run, "first_failed", st == RP_OK ? res->first_failed : -1);
        if (st == RP_OK && res->nranks > 0 && res->ranks[0].node[0]) {
            /* where a cluster launcher put the ranks: node of rank 0, 1, ... */
            cJSON *nodes = cJSON_AddArrayToObject(run, "rank_nodes");
            for (int k = 0; k < res->nranks; k++) cJSON_AddItemToArray(nodes, cJSON_CreateString(res->ranks[k].node));
        }
        if (st == RP_OK && res->status != RP_LAUNCH_OK) {
            /* how every rank ended, and the failing (or, for a hang, each stuck) rank's stderr */
            cJSON *ranks = cJSON_AddArrayToObject(run, "ranks");
            for (int k = 0; k < res->nranks; k++) {
                char desc[160], p[PATHLEN], tail[4096];
                rp_launch_describe_rank(&res->ranks[k], desc, sizeof desc);
                cJSON *rk = cJSON_CreateObject();
                cJSON_AddNumberToObject(rk, "rank", k);
                if (res->ranks[k].node[0]) cJSON_AddStringToObject(rk, "node", res->ranks[k].node);
                cJSON_AddStringToObject(rk, "end", desc);
                cJSON_AddBoolToObject(rk, "running_at_deadline", res->ranks[k].running_at_deadline);
                if (k == res->first_failed || res->ranks[k].running_at_deadline) {
                    rp_pathf(p, PATHLEN, "%s/rank%d.err", out, k);
                    if (rp_file_tail(p, RP_LAUNCH_TAIL_LINES, tail, sizeof tail) > 0)
                        cJSON_AddStringToObject(rk, "stderr_tail", tail);
                }
                cJSON_AddItemToArray(ranks, rk);
            }
        }
        cJSON_AddItemToArray(runs, run);
    }
    return st == RP_OK && res->status == RP_LAUNCH_CANCELLED;
}

/* One launch of case i (its own config) writing into out, with the classifier's runs in
 * the same launch (extra: the worker's --then-* arguments, planned: how many runs they
 * are); see launch_run. */
static int launch_once(runner *r, int i, const char *case_json, const char *out, const char *const *extra,
                       int planned, rp_launch_result *res, rp_case_outcome *oc, cJSON *runs, char *report,
                       size_t report_cap) {
    return launch_run(r, &r->m->cases[i].c, case_json, out, extra, planned, res, oc, runs, report, report_cap);
}

/* ---- the classifier's runs and verdicts ---------------------------------------------------- */

/* A launch of one of the classifier's runs of case c into dir (made here) with extra worker
 * arguments and planned runs after the first (launch_run); *o says how it ended
 * (INFRA_ERROR when memory or the directory gave out first). Returns 1 when cancelled. */
static int aux_launch(runner *r, const rp_case *c, const char *case_json, const char *dir,
                      const char *const *extra, int planned, rp_case_outcome *o) {
    rp_launch_result *res = malloc(sizeof *res);
    char *report = malloc(4096);
    memset(o, 0, sizeof *o);
    rp_error e;
    rp_error_clear(&e);
    int cancelled = 0;
    if (!res || !report) {
        o->status = RP_CASE_INFRA;
        snprintf(o->reason, sizeof o->reason, "runner: out of memory");
    } else if (rp_store_mkdirs(dir, &e) != RP_OK) {
        o->status = RP_CASE_INFRA;
        snprintf(o->reason, sizeof o->reason, "%.590s", e.msg);
    } else {
        cancelled = launch_run(r, c, case_json, dir, extra, planned, res, o, NULL, report, 4096);
    }
    free(res);
    free(report);
    return cancelled;
}

/* One of the classifier's runs (kind: a twin, "teacher", "fresh") of case c into dir with
 * extra worker arguments; dir/aux.json records its end. *ok = 1 when it finished ok.
 * Returns 1 when cancelled. */
static int aux_run(runner *r, const rp_case *c, const char *case_json, const char *dir, const char *kind,
                   const char *const *extra, int *ok) {
    rp_case_outcome o;
    const int cancelled = aux_launch(r, c, case_json, dir, extra, 0, &o);
    *ok = !cancelled && o.status == RP_CASE_OK;
    if (!cancelled) /* the runner's memory or directory giving out is the machine's: INFRA_ERROR */
        rp_cls_write_aux(dir, kind, *ok ? "ok" : rp_case_status_name(o.status), o.reason, o.wall_s);
    return cancelled;
}

/* Whether case j and its reference ref get an invariant shadow each (the classifier's
 * evidence 12, rp_cls_invariant_shadow_pair): the pair exists and both shadows pass
 * validation on this machine (a ring shard of whole canonical key blocks). */
static int invariant_shadows(const runner *r, int j, int ref) {
    const rp_case *c = &r->m->cases[j].c, *rc = &r->m->cases[ref].c;
    if (!r->m->cls.invariant_shadow || !rp_cls_invariant_shadow_pair(c, rc)) return 0;
    rp_case sc, sr;
    rp_error e;
    (void)rp_cls_invariant_shadow(c, &sc);
    (void)rp_cls_invariant_shadow(rc, &sr);
    rp_validate_env env = r->host;
    env.world = rp_case_world(&sc);
    if (rp_case_validate(&sc, &env, &e) != RP_OK) return 0;
    env.world = rp_case_world(&sr);
    return rp_case_validate(&sr, &env, &e) == RP_OK;
}

/* How many other cases compare against case i (0: it needs no classifier runs as a
 * reference); *envelope = 1 when one of them needs the rounding envelope (its twins), i.e.
 * is not an invariant pair with it (rp_cls_invariant_pair: bitwise or a bug); *invariant =
 * 1 when one of them gets an invariant shadow (invariant_shadows). */
static int dependents(const runner *r, int i, int *envelope, int *invariant, int *shadow_decode) {
    const rp_matrix *m = r->m;
    int n = 0;
    *envelope = *invariant = *shadow_decode = 0;
    for (int j = 0; j < m->n_cases; j++)
        if (j != i && m->cases[j].ref == i) {
            n++;
            if (!rp_cls_invariant_pair(&m->cases[j].c, &m->cases[i].c)) *envelope = 1;
            if (!*invariant && invariant_shadows(r, j, i)) *invariant = 1;
            if (rp_cls_decode_shadow_ref(&m->cases[j].c, &m->cases[i].c)) *shadow_decode = 1;
        }
    return n;
}

/* How many twins the cases of reference i need (0 when i is no reference, or
 * each of its cases is an invariant pair with it). */
static int twins_needed(const runner *r, int i) {
    int envelope = 0, invariant, shadow_decode;
    if (!r->m->cls.enabled || r->m->cases[i].ref != i || !dependents(r, i, &envelope, &invariant, &shadow_decode))
        return 0;
    return envelope ? r->m->cls.twins : 0;
}

/* The classifier's runs of case i, made by its first launch after the case's own run
 * (job_case.h: a launch, its rendezvous and its weights cost more than a tiny case's run):
 * a reference's own teacher run (its rounding twins, which read only its published trajectory,
 * are a job of their own: twins_thread, beside its cases' launches); a case's
 * teacher run against its reference (skipped by the worker when bitwise identical to it);
 * the invariant shadows (invariant_shadows); the leak check (the teacher run after the case's
 * own run recomputes its first steps: rp_cls_rerun_check). Fills argv (the worker's extra
 * arguments, NULL-terminated; bufs holds their text) and returns how many runs that is. */
typedef struct cls_plan {
    const char *argv[12];
    char twins[16], steps[16], ref[PATHLEN];
} cls_plan;

static int classify_plan(runner *r, int i, cls_plan *p) {
    const rp_matrix *m = r->m;
    const rp_classify_opts *co = &m->cls;
    const rp_matrix_case *mc = &m->cases[i];
    int na = 0, planned = 0;
    snprintf(p->steps, sizeof p->steps, "%d", co->teacher_steps);
    int envelope = 0, invariant = 0, shadow_decode = 0;
    /* a reference's own teacher run is also its leak check (rp_cls_rerun_check) */
    if (mc->ref == i && (dependents(r, i, &envelope, &invariant, &shadow_decode) || co->leak_check)) {
        const int twins = twins_needed(r, i); /* 0: its own teacher run only */
        snprintf(p->twins, sizeof p->twins, "%d", twins);
        p->argv[na++] = "--then-twins";
        p->argv[na++] = p->twins;
        if (twins && r->twn[i] == ES_TODO) p->argv[na++] = "--twins-apart"; /* their own job (twins_thread) */
        if (shadow_decode) p->argv[na++] = "--then-shadow-decode"; /* in its fp32 shadow: no run more */
        int kinds[RP_CLS_TWIN_KINDS];
        const int here = r->twn[i] == ES_TODO ? 0 : twins; /* the twins this launch runs */
        planned += here ? rp_cls_twin_list(&mc->c, here, kinds) + 3 : 1; /* twins, their teacher runs, its own */
    } else if (mc->ref != i) {
        char done[PATHLEN];
        case_dir(r, mc->ref, p->ref);
        rp_store_path(done, sizeof done, p->ref, RP_ART_DONE);
        if (rp_is_file(done)) {
            p->argv[na++] = "--then-teacher";
            p->argv[na++] = p->ref;
            planned += 1 + (rp_cls_own_decode_rule(&mc->c, &m->cases[mc->ref].c) != RP_CLS_DECODE_NONE);
            invariant = invariant_shadows(r, i, mc->ref);
        }
    }
    if (invariant) {
        p->argv[na++] = "--then-invariant";
        rp_case own;
        planned += 1 + rp_cls_invariant_shadow_own(&mc->c, &own); /* at fp32; at a bf16 case's own too */
    }
    if (na) {
        p->argv[na++] = "--teacher-steps";
        p->argv[na++] = p->steps;
    }
    if (co->leak_check) p->argv[na++] = "--then-leak"; /* steps recomputed after the case's run */
    p->argv[na] = NULL;
    return planned;
}

/* Case c (its JSON at case_json) alone twice, each in a fresh launch (tmp/<pair[0]>,
 * tmp/<pair[1]>), after a comparison of bits that presumes deterministic runs differed: the
 * two differ when the runs are nondeterministic, agree when the difference is the case's
 * own. They decode only when images (1) are what differed (a serial emulation's images):
 * the pair's other bits (latents, trace, replicas: rp_cls's runs_agree) are all made before
 * the decode, which in a tiny preset costs several times the sampling. A failed run is
 * recorded in its aux.json for the classifier, not a failure of the case. Returns 1 when
 * cancelled. */
static int fresh_pair(runner *r, const rp_case *c, const char *case_json, const char *tmp,
                      const rp_store_sub pair[2], int images) {
    static const char *const NO_IMAGES[] = {"--no-images", NULL};
    for (int k = 0; k < 2; k++) {
        char dir[PATHLEN];
        int ok = 0;
        rp_store_subdir(dir, sizeof dir, tmp, pair[k]);
        if (aux_run(r, c, case_json, dir, "fresh", images ? NULL : NO_IMAGES, &ok)) return 1;
        if (!ok) return 0;
    }
    return 0;
}

/* The case as it ran (tmp/fresh, tmp/fresh-2). */
static int fresh_runs(runner *r, int i, const char *tmp, int images) {
    static const rp_store_sub PAIR[2] = {RP_SUB_FRESH, RP_SUB_FRESH_2};
    char cj[PATHLEN];
    rp_store_path(cj, sizeof cj, tmp, RP_ART_CASE);
    return fresh_pair(r, &r->m->cases[i].c, cj, tmp, PAIR, images);
}

/* A derived case c of the classifier's (not the matrix's) into tmp/<sub>/case.json, the
 * directory made: 1, with dir and cj (PATHLEN each) its directory and JSON; 0 when that
 * failed, recorded as a CRASH of run kind in the directory's aux.json. */
static int derived_case(const rp_case *c, const char *tmp, rp_store_sub sub, const char *kind, char *dir, char *cj) {
    rp_error e;
    rp_store_subdir(dir, PATHLEN, tmp, sub);
    rp_store_path(cj, PATHLEN, dir, RP_ART_CASE);
    if (rp_store_mkdirs(dir, &e) == RP_OK && rp_case_save(c, cj, &e) == RP_OK) return 1;
    rp_cls_write_aux(dir, kind, "CRASH", e.msg, 0);
    return 0;
}

/* The case at fp32 (tmp/fresh-fp32, tmp/fresh-fp32-2; its JSON in the first), after its fp32
 * shadow's leak check differed while its own agreed: the precision where those bits were
 * seen. */
static int fresh_runs_fp32(runner *r, int i, const char *tmp, int images) {
    static const rp_store_sub PAIR[2] = {RP_SUB_FRESH_FP32, RP_SUB_FRESH_FP32_2};
    rp_case c = r->m->cases[i].c;
    snprintf(c.precision, sizeof c.precision, "fp32");
    char dir[PATHLEN], cj[PATHLEN];
    return derived_case(&c, tmp, PAIR[0], "fresh", dir, cj) ? fresh_pair(r, &c, cj, tmp, PAIR, images) : 0;
}

/* The fresh runs after an exact comparison decided a BUG (exact_bug_needs_fresh_runs): the
 * case as it ran, and a case that rounds coarser than fp32 on the CPU at fp32 too, where
 * the ulps of a timing-dependent order survive (a bf16 case's own bits can round them away,
 * while the compared values — an own check's fp32 attention, a shadow — kept them). */
static int fresh_runs_exact(runner *r, int i, const char *tmp, int images) {
    const rp_case *c = &r->m->cases[i].c;
    if (fresh_runs(r, i, tmp, images)) return 1;
    if (!strcmp(rp_cls_effective_precision(c), "fp32") || rp_device_name_is_cuda(c->device)) return 0;
    return fresh_runs_fp32(r, i, tmp, images);
}

/* Case i's serial emulation (rp_cls_emulation) when it has one that validates here with its
 * own world (one whose injected fault cannot be planted on one stage has none): 1 and *ec. */
static int emulation_case(const runner *r, int i, rp_case *ec) {
    if (!r->m->cls.enabled || !rp_cls_emulation(&r->m->cases[i].c, ec)) return 0;
    rp_validate_env env = r->host;
    env.world = rp_case_world(ec);
    rp_error e;
    return rp_case_validate(ec, &env, &e) == RP_OK;
}

/* Case i's emulation into tmp/emulation: a plain launch of the derived case; the classifier
 * compares it with the case's run bitwise (its evidence 13). Returns 1 when cancelled. */
static int emulation_run(runner *r, int i, const char *tmp) {
    rp_case ec;
    if (!emulation_case(r, i, &ec)) return 0;
    char dir[PATHLEN], cj[PATHLEN];
    int ok = 0;
    return derived_case(&ec, tmp, RP_SUB_EMULATION, "emulation", dir, cj) &&
           aux_run(r, &ec, cj, dir, "emulation", NULL, &ok);
}

/* Where case i's emulation job runs (its run in emulation/ below, as in the case's directory):
 * <sweep>/.tmp-<id>-emulation-<pid>, which clean_stale removes after a killed sweep. */
static void emulation_side(const runner *r, int i, char *buf) {
    rp_pathf(buf, PATHLEN, "%s/.tmp-%s-emulation-%ld", r->s->dir, r->m->cases[i].id, (long)getpid());
}

/* Gives back n of the cores job k holds (caller holds the mutex). */
static void give_back_slots(runner *r, int k, int n) {
    assert(n >= 0 && n <= r->held[k]);
    r->held[k] -= n;
    r->free_slots += n;
    pthread_cond_broadcast(&r->cv);
}

/* The emulation job of case a->i (the scheduler started it: ES_RUNNING, its slots held). */
static void *emulation_thread(void *p) {
    case_arg *a = p;
    runner *r = a->r;
    const int i = a->i, k = JOB_EMULATION * r->m->n_cases + i;
    char side[PATHLEN];
    emulation_side(r, i, side);
    (void)rp_store_remove_tree(side, NULL);
    rp_error e;
    int cancelled = 0;
    if (rp_store_mkdirs(side, &e) == RP_OK) cancelled = emulation_run(r, i, side);
    pthread_mutex_lock(&r->mu);
    r->emu[i] = cancelled ? ES_CANCELLED : ES_DONE; /* no side directory: the case records the failed move */
    r->running--;
    give_back_slots(r, k, r->held[k]);
    const int orphan = r->state[i] == CS_DONE; /* its case ended without it (its run failed) */
    pthread_mutex_unlock(&r->mu);
    if (orphan) (void)rp_store_remove_tree(side, NULL);
    free(a);
    return NULL;
}

/* Case i's emulation into tmp/emulation, after the case's launch: the job's run moved in,
 * waited for holding no cores when it is running; or, when no job has started it, run here
 * on the cores a one-rank run takes, the others given back. (A fresh run after it takes the
 * case's world again without holding its cores: they may be overcommitted for that rare
 * run.) Returns 1 when cancelled. */
static int emulation_collect(runner *r, int i, const char *tmp) {
    const int k = JOB_EMULATION * r->m->n_cases + i;
    pthread_mutex_lock(&r->mu);
    if (r->emu[i] == ES_NONE) {
        pthread_mutex_unlock(&r->mu);
        return 0;
    }
    if (r->emu[i] == ES_TODO) {
        r->emu[i] = ES_RUNNING;
        give_back_slots(r, i, r->held[i] > r->slots[k] ? r->held[i] - r->slots[k] : 0);
        pthread_mutex_unlock(&r->mu);
        const int cancelled = emulation_run(r, i, tmp);
        pthread_mutex_lock(&r->mu);
        r->emu[i] = ES_NONE;
        pthread_mutex_unlock(&r->mu);
        return cancelled;
    }
    give_back_slots(r, i, r->held[i]);
    while (r->emu[i] == ES_RUNNING) pthread_cond_wait(&r->cv, &r->mu);
    const int cancelled = r->emu[i] == ES_CANCELLED;
    r->emu[i] = ES_NONE;
    pthread_mutex_unlock(&r->mu);
    char side[PATHLEN], from[PATHLEN], to[PATHLEN];
    emulation_side(r, i, side);
    rp_store_subdir(from, sizeof from, side, RP_SUB_EMULATION);
    rp_store_subdir(to, sizeof to, tmp, RP_SUB_EMULATION);
    if (!cancelled && rename(from, to) != 0) {
        char why[PATHLEN + 64];
        snprintf(why, sizeof why, "runner: cannot move %s into the case: %s", from, strerror(errno));
        rp_error e;
        if (rp_store_mkdirs(to, &e) == RP_OK) rp_cls_write_aux(to, "emulation", "CRASH", why, 0);
    }
    (void)rp_store_remove_tree(side, NULL);
    return cancelled;
}

/* After the case's first verdict rested on its leak check (fresh_runs_needed): when the
 * check differs (rp_cls_rerun_check: a step the launch recomputed from the case's own input
 * gave other bits), the fresh runs: they tell nondeterminism from state leaked between
 * calls; when only its fp32 shadow's does (rp_cls_shadow_rerun_check), the same at fp32.
 * Returns 1 when cancelled. */
static int classify_runs(runner *r, int i, const char *tmp) {
    const rp_matrix_case *mc = &r->m->cases[i];
    char ref[PATHLEN];
    if (mc->ref == i) snprintf(ref, sizeof ref, "%s", tmp);
    else case_dir(r, mc->ref, ref);
    int step;
    double m;
    if (rp_cls_rerun_check(tmp, ref, &step, &m) == 1) {
        if (fresh_runs(r, i, tmp, 0)) return 1;
        /* the self check's steps as the first call of a fresh launch, rotated as the self
         * check was: differing there too, no earlier call (no state carried between calls) can
         * explain it; then, for a rotated one, the same steps unrotated: agreeing there, the
         * rotation made the difference (a part's result depends on which rank computes it) */
        char self[PATHLEN], p[PATHLEN], dir[PATHLEN], cj[PATHLEN];
        rp_store_subdir(self, sizeof self, tmp, RP_SUB_SELF);
        rp_store_path(p, sizeof p, self, RP_ART_TEACHER);
        /* a case bitwise its reference's has no self check: its leak check ran rotated */
        const int rotated = mc->ref != i && rp_cls_self_rotated(&mc->c);
        if (!rp_is_file(p) && !rotated) return 0;
        rp_store_subdir(dir, sizeof dir, tmp, RP_SUB_FRESH_SELF);
        rp_store_path(cj, sizeof cj, tmp, RP_ART_CASE);
        const char *extra[] = {"--teacher-force", tmp, rotated ? "--rotate" : NULL, NULL};
        int ok = 0;
        if (aux_run(r, &mc->c, cj, dir, "fresh self", extra, &ok)) return 1;
        if (!ok || !rotated || rp_cls_fresh_self_check(tmp, 0, &step, &m) != 1) return 0;
        rp_store_subdir(dir, sizeof dir, tmp, RP_SUB_FRESH_SELF_PLAIN);
        extra[2] = NULL;
        return aux_run(r, &mc->c, cj, dir, "fresh self plain", extra, &ok);
    }
    if (rp_cls_shadow_rerun_check(tmp, &step, &m) == 1) return fresh_runs_fp32(r, i, tmp, 0);
    return 0;
}

/* Which fresh runs <dir>'s first classification asks for (none once they were made), and the
 * case is then classified again:
 *   FRESH_LEAK   its verdict rests on a recomputation in the launch that differed (the leak
 *                check, the self check, the fp32 shadow's leak check): classify_runs tells
 *                nondeterminism, a leak and a loop fault apart. A verdict decided before
 *                them (a MISMATCH, the initial noise) needs none;
 *   FRESH_EXACT  a BUG (in mode fast, the NONDETERMINISTIC it is there until two fresh runs
 *                agree) whose first evidence is an exact comparison of two computations that
 *                presumes deterministic kernels — the invariant shadow against its
 *                reference's, the case against its serial emulation, or a kernel-computed
 *                replica against its leader's copy (a
 *                nondeterministic kernel can leave the leak check equal, absorbed by rounding,
 *                while the shadow or a copy differs). A host-computed replica (the world
 *                group) needs none: no kernel's timing reaches it.
 * A leak check that ran in the rotated layout (rotated: rp_cls_self_rotated, for a case) and
 * differed asks for FRESH_LEAK whatever decided first but a MISMATCH: until the fresh runs
 * tell the rotation's doing from a leak, a first verdict that presumed a leak (and set the
 * later runs' evidence aside as its effect) may rest on the wrong one.
 * *images = 1 when what differed first is a decoded image (the emulation's, first layer
 * vae.decode): the fresh pair then decodes too (fresh_pair). */
enum { FRESH_NONE = 0, FRESH_LEAK, FRESH_EXACT };
static int fresh_runs_needed(const char *dir, int rotated, int *images) {
    char p[PATHLEN];
    *images = 0;
    rp_store_subdir(p, sizeof p, dir, RP_SUB_FRESH);
    struct stat sb;
    if (stat(p, &sb) == 0) return FRESH_NONE;
    rp_store_subdir(p, sizeof p, dir, RP_SUB_FRESH_FP32);
    if (stat(p, &sb) == 0) return FRESH_NONE;
    rp_store_path(p, sizeof p, dir, RP_ART_CLASSIFICATION);
    cJSON *j = NULL;
    rp_error e;
    if (rp_store_read_json(p, &j, &e) != RP_OK) return FRESH_NONE;
    const cJSON *fs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "evidence"), "first_step");
    const char *what = get_str(fs, "what", "");
    /* a BUG, or in mode fast the NONDETERMINISTIC the same evidence gives unless the fresh
     * pair shows the runs deterministic */
    const char *v = get_str(j, "verdict", "");
    const int bug = !strcmp(v, rp_verdict_name(RP_V_BUG)) || !strcmp(v, rp_verdict_name(RP_V_NONDETERMINISTIC));
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "evidence"), "first_layer");
    *images = !strcmp(get_str(fl, "name", ""), "vae.decode");
    const cJSON *det = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "evidence"),
                                                        "determinism");
    /* (a MISMATCH is decided by assignment before any of this, and presumes no leak) */
    const int rotated_differs = rotated && strcmp(v, rp_verdict_name(RP_V_MISMATCH)) &&
                                cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(det, "leak_first_step"));
    const int need = !strncmp(what, "leak check", 10) || !strcmp(what, "self check") || rotated_differs ? FRESH_LEAK
                     : bug && (!strcmp(what, "invariant shadow") || !strcmp(what, "emulation") ||
                               (!strcmp(what, "replica") &&
                                !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fs, "host_computed"))))
                         ? FRESH_EXACT
                         : FRESH_NONE;
    cJSON_Delete(j);
    return need;
}

/* Reads <dir>/<file> (a classification) into the verdict fields: *have, *verdict, *pass
 * and, when summary is not NULL, the summary. */
static void verdict_load(const char *dir, const char *file, int *have, int *verdict, int *pass, char *summary,
                         size_t cap) {
    char p[PATHLEN];
    cJSON *j = NULL;
    rp_error e;
    *have = 0;
    rp_pathf(p, PATHLEN, "%s/%s", dir, file);
    if (!rp_is_file(p) || rp_store_read_json(p, &j, &e) != RP_OK) return;
    const int v = rp_verdict_parse(get_str(j, "verdict", ""));
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(j, "pass");
    if (v >= 0) {
        *have = 1;
        *verdict = v;
        *pass = cJSON_IsTrue(ok);
        if (summary) snprintf(summary, cap, "%s", get_str(j, "summary", ""));
    }
    cJSON_Delete(j);
}

/* Classifies case i, whose files are in dir (its temporary or its final directory), against
 * its reference's final directory; fills oc's verdict fields. The reference must have run
 * ok (else no verdict: the reference's own failure fails the sweep). */
static void classify_now(runner *r, int i, const char *dir, rp_case_outcome *oc) {
    const rp_matrix_case *mc = &r->m->cases[i];
    char ref[PATHLEN], done[PATHLEN];
    oc->have_verdict = 0;
    oc->verdict_pass = -1;
    oc->verdict_summary[0] = '\0';
    if (!r->m->cls.enabled) return;
    if (mc->ref == i) snprintf(ref, sizeof ref, "%s", dir);
    else case_dir(r, mc->ref, ref);
    rp_store_path(done, sizeof done, ref, RP_ART_DONE);
    if (oc->status == RP_CASE_OK && !rp_is_file(done)) {
        snprintf(oc->verdict_summary, sizeof oc->verdict_summary, "not classified: the reference did not run ok");
        return;
    }
    rp_cls_inputs in;
    memset(&in, 0, sizeof in);
    in.case_dir = dir;
    in.ref_dir = ref;
    in.repeat = r->m->repeat;
    in.opts = r->m->cls;
    rp_verdict v;
    int pass = 0;
    rp_error e;
    rp_error_clear(&e);
    if (rp_classify_dir(&in, &v, &pass, &e) != RP_OK) {
        oc->verdict_pass = 0; /* a case that cannot be classified does not pass */
        snprintf(oc->verdict_summary, sizeof oc->verdict_summary, "classification failed: %.270s", e.msg);
        return;
    }
    verdict_load(dir, "classification.json", &oc->have_verdict, &oc->verdict, &oc->verdict_pass,
                 oc->verdict_summary, sizeof oc->verdict_summary);
}

/* 1 when <dir>/classification.json is missing or was made with other classify options. */
static int classification_stale(const runner *r, const char *dir) {
    if (!r->m->cls.enabled) return 0;
    char p[PATHLEN], key[256];
    rp_store_path(p, sizeof p, dir, RP_ART_CLASSIFICATION);
    cJSON *j = NULL;
    rp_error e;
    if (!rp_is_file(p) || rp_store_read_json(p, &j, &e) != RP_OK) return 1;
    rp_classify_opts_key(&r->m->cls, key, sizeof key);
    const int stale = strcmp(get_str(j, "options_key", ""), key) != 0;
    cJSON_Delete(j);
    return stale;
}

/* The runner's own step failed with e (the case is not stored): INFRA_ERROR when the
 * store or memory gave out, CRASH otherwise. */
static void runner_failed(rp_case_outcome *oc, const rp_error *e) {
    const int infra = e->code == RP_ERR_IO || e->code == RP_ERR_NOMEM;
    oc->status = infra ? RP_CASE_INFRA : RP_CASE_CRASH;
    snprintf(oc->reason, sizeof oc->reason, "%srunner: %.560s", infra ? "infrastructure: " : "", e->msg);
}

/* Marks oc INFRA_ERROR when one of the classifier's runs under dir (aux.json, up to
 * twins/<name>/teacher/) ended on an infrastructure failure: its verdict would judge
 * the machine, not the code. */
static void aux_infra(const char *dir, int depth, rp_case_outcome *oc) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while (oc->status != RP_CASE_INFRA && (de = readdir(d))) {
        char p[PATHLEN];
        struct stat sb;
        if (de->d_name[0] == '.' || rp_pathf(p, PATHLEN, "%s/%s", dir, de->d_name)) continue;
        if (!strcmp(de->d_name, rp_artifact_name(RP_ART_AUX))) {
            cJSON *j = NULL;
            rp_error e;
            if (rp_store_read_json(p, &j, &e) != RP_OK) continue;
            if (!strcmp(get_str(j, "status", ""), rp_case_status_name(RP_CASE_INFRA))) {
                oc->status = RP_CASE_INFRA;
                snprintf(oc->reason, sizeof oc->reason, "%s run: %.560s", get_str(j, "kind", "?"),
                         get_str(j, "reason", ""));
            }
            cJSON_Delete(j);
        } else if (depth < 3 && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            aux_infra(p, depth + 1, oc);
        }
    }
    closedir(d);
}

/* ---- a reference's twins: a job of their own ------------------------------------------------ */

/* A reference's rounding twins (their teacher runs, and its fp32 shadow's twins) read nothing
 * but its published trajectory, so where one of its cases could start beside them (twins_apart)
 * they run in a launch of their own (worker --twins-of) that starts once the reference is
 * published, beside its cases' launches: a case waits for the
 * twins only where its classification reads them (twins_await), not to start. The launch
 * writes into a side directory (twins_side); the job then moves the twins into the
 * reference's directory (rp_store_adopt_twins: twins/ last, so its presence says they are
 * whole, and a sweep killed before that runs them again) and classifies the reference again
 * in place, with its envelope. On an infrastructure failure nothing is moved in, and the
 * reference's cases are not stored: their verdicts would lack the envelope. */

static void twins_side(const runner *r, int i, char *buf) {
    rp_pathf(buf, PATHLEN, "%s/.tmp-%s-twins-%ld", r->s->dir, r->m->cases[i].id, (long)getpid());
}

/* Whether the twins of reference i, which runs now, are a job of their own: only when one of
 * its cases could start beside them, i.e. the references that run now leave the machine room
 * (cores, nodes, or --jobs) and one of i's cases fits in what its twins leave. Elsewhere no
 * case starts sooner, and a launch of their own would only add a start, a weights load and a
 * text encoding. */
static int twins_apart(const runner *r, int i) {
    int refs = 0, slots = 0;
    for (int j = 0; j < r->m->n_cases; j++)
        if (r->state[j] == CS_TODO && r->m->cases[j].ref == j) {
            refs++;
            slots += r->slots[j];
        }
    if (r->o->jobs > 0) return refs < r->o->jobs;
    const int room = r->launcher->kind != RP_LAUNCHER_LOCAL ? r->launcher->nodes : r->ncpu;
    if (slots >= room) return 0;
    for (int j = 0; j < r->m->n_cases; j++)
        if (j != i && r->state[j] == CS_TODO && r->m->cases[j].ref == i && r->slots[j] <= room - r->slots[i])
            return 1;
    return 0;
}

/* The twins' launch of reference i (published in fin) into side. A launch that failed before
 * a twin recorded its end records it for each (aux.json: the classifier reports a failed
 * twin). Returns 1 when cancelled; *infra = 1 when the machine failed it. */
static int twins_launch(runner *r, int i, const char *side, const char *fin, int *infra) {
    const rp_case *c = &r->m->cases[i].c;
    int kinds[RP_CLS_TWIN_KINDS];
    const int n = twins_needed(r, i), nk = rp_cls_twin_list(c, n, kinds);
    char cj[PATHLEN], count[16];
    rp_store_path(cj, sizeof cj, fin, RP_ART_CASE);
    snprintf(count, sizeof count, "%d", n);
    const char *extra[] = {"--twins-of", fin, "--then-twins", count, NULL};
    rp_case_outcome o;
    rp_error e;
    /* each twin its free or teacher run, each the case's time */
    const int cancelled = aux_launch(r, c, cj, side, extra, 2 * nk * (1 + rp_cls_has_fp32_shadow(c)), &o);
    if (!cancelled && o.status != RP_CASE_INFRA) aux_infra(side, 0, &o);
    *infra = !cancelled && o.status == RP_CASE_INFRA;
    if (*infra) {
        pthread_mutex_lock(&r->mu);
        progress_say(r, "%s: the twins of %s failed on the machine: %s", r->m->name, r->m->cases[i].id, o.reason);
        pthread_mutex_unlock(&r->mu);
    }
    for (int t = 0; t < nk && !cancelled && !*infra && o.status != RP_CASE_OK; t++) {
        char d[PATHLEN], a[PATHLEN], td[PATHLEN];
        struct stat sb;
        rp_store_twin_dir(d, sizeof d, side, rp_cls_twin_name(kinds[t]));
        rp_store_path(a, sizeof a, d, RP_ART_AUX);
        rp_store_subdir(td, sizeof td, d, RP_SUB_TEACHER);
        if (!rp_is_file(a) && stat(td, &sb) != 0 && rp_store_mkdirs(d, &e) == RP_OK)
            rp_cls_write_aux(d, rp_cls_twin_name(kinds[t]), rp_case_status_name(o.status), o.reason, 0);
    }
    return cancelled;
}

/* The twins job of reference i, its state ES_RUNNING (twins_thread, or twins_await on the
 * cores of a case that got there first): the launch, the move into the reference's
 * directory, its classification again; then its state (ES_DONE, ES_FAILED, ES_CANCELLED)
 * for the cases waiting. Returns 1 when cancelled. */
static int twins_job(runner *r, int i) {
    char side[PATHLEN], fin[PATHLEN];
    twins_side(r, i, side);
    case_dir(r, i, fin);
    (void)rp_store_remove_tree(side, NULL);
    int infra = 0;
    const int cancelled = twins_launch(r, i, side, fin, &infra);
    rp_error e;
    if (!cancelled && !infra && rp_store_adopt_twins(side, fin, &e) != RP_OK) {
        infra = 1; /* the store's (a move within the results directory) */
        pthread_mutex_lock(&r->mu);
        progress_say(r, "%s: the twins of %s were not moved in: %s", r->m->name, r->m->cases[i].id, e.msg);
        pthread_mutex_unlock(&r->mu);
    }
    (void)rp_store_remove_tree(side, NULL);
    rp_case_outcome oc;
    if (!cancelled && !infra) { /* the reference's envelope, in its own classification too */
        pthread_mutex_lock(&r->mu);
        oc = r->s->o[i];
        pthread_mutex_unlock(&r->mu);
        classify_now(r, i, fin, &oc);
    }
    pthread_mutex_lock(&r->mu);
    if (!cancelled && !infra) {
        rp_case_outcome *so = &r->s->o[i];
        so->have_verdict = oc.have_verdict;
        so->verdict = oc.verdict;
        so->verdict_pass = oc.verdict_pass;
        snprintf(so->verdict_summary, sizeof so->verdict_summary, "%s", oc.verdict_summary);
    }
    r->twn[i] = cancelled ? ES_CANCELLED : infra ? ES_FAILED : ES_DONE;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return cancelled;
}

static void *twins_thread(void *p) {
    case_arg *a = p;
    runner *r = a->r;
    const int i = a->i, k = JOB_TWINS * r->m->n_cases + i;
    (void)twins_job(r, i);
    pthread_mutex_lock(&r->mu);
    r->running--;
    give_back_slots(r, k, r->held[k]);
    pthread_mutex_unlock(&r->mu);
    free(a);
    return NULL;
}

/* Before case i is classified: its reference's twins, moved in. A twins job still waiting for
 * cores runs here, on the case's (as emulation_collect runs an emulation); a running one is
 * waited for holding none. Returns 1 when cancelled; INFRA_ERROR in oc when the machine
 * failed the twins (the case is then not stored: its verdict would lack its envelope). */
static int twins_await(runner *r, int i, rp_case_outcome *oc) {
    const int ref = r->m->cases[i].ref;
    if (ref == i) return 0;
    pthread_mutex_lock(&r->mu);
    if (r->twn[ref] == ES_TODO) {
        r->twn[ref] = ES_RUNNING;
        pthread_mutex_unlock(&r->mu);
        (void)twins_job(r, ref);
        pthread_mutex_lock(&r->mu);
    } else if (r->twn[ref] == ES_RUNNING) {
        give_back_slots(r, i, r->held[i]);
        while (r->twn[ref] == ES_RUNNING) pthread_cond_wait(&r->cv, &r->mu);
    }
    const int s = r->twn[ref];
    pthread_mutex_unlock(&r->mu);
    if (s == ES_FAILED) {
        oc->status = RP_CASE_INFRA;
        snprintf(oc->reason, sizeof oc->reason, "infrastructure: the twins of its reference %s failed on the machine",
                 r->m->cases[ref].id);
    }
    return s == ES_CANCELLED;
}

/* Runs case i (all its repeats) in a temporary directory, then publishes it.
 * Returns 1 when cancelled (nothing is kept). */
static int run_case(runner *r, int i, rp_case_outcome *oc) {
    const rp_matrix_case *mc = &r->m->cases[i];
    char tmp[PATHLEN], fin[PATHLEN], cj[PATHLEN];
    rp_pathf(tmp, PATHLEN, "%s/.tmp-%s-%ld", r->s->dir, mc->id, (long)getpid());
    case_dir(r, i, fin);
    rp_store_path(cj, sizeof cj, tmp, RP_ART_CASE);
    rp_error e;
    rp_error_clear(&e);
    oc->wall_s = 0;
    oc->failed_rank = -1;
    oc->reason[0] = '\0';
    if (mc->ref != i && r->s->o[mc->ref].status == RP_CASE_INFRA) { /* nothing to compare with */
        oc->status = RP_CASE_INFRA;
        snprintf(oc->reason, sizeof oc->reason, "infrastructure: its reference %s failed on the machine",
                 r->m->cases[mc->ref].id);
        return 0;
    }
    (void)rp_store_remove_tree(tmp, NULL);
    rp_status st = rp_store_mkdirs(tmp, &e);
    if (st == RP_OK) st = rp_case_save(&mc->c, cj, &e);
    if (st != RP_OK) {
        runner_failed(oc, &e);
        (void)rp_store_remove_tree(tmp, NULL);
        return 0;
    }
    rp_launch_result *res = malloc(sizeof *res);
    char *report = malloc(8192);
    cJSON *runs = cJSON_CreateArray();
    int cancelled = 0;
    if (!res || !report || !runs) {
        oc->status = RP_CASE_INFRA;
        snprintf(oc->reason, sizeof oc->reason, "infrastructure: runner: out of memory");
    } else {
        report[0] = '\0';
        for (int k = 1; k <= r->m->repeat; k++) {
            char out[PATHLEN];
            if (k == 1) snprintf(out, sizeof out, "%s", tmp);
            else rp_pathf(out, PATHLEN, "%s/repeat-%d", tmp, k);
            if (k > 1 && rp_store_mkdirs(out, &e) != RP_OK) {
                runner_failed(oc, &e);
                break;
            }
            cls_plan plan;
            const int planned = k == 1 && r->m->cls.enabled ? classify_plan(r, i, &plan) : 0;
            cancelled = launch_once(r, i, cj, out, planned ? plan.argv : NULL, planned, res, oc, runs, report, 8192);
            if (cancelled || oc->status != RP_CASE_OK) {
                if (k > 1 && !cancelled) {
                    char why[sizeof oc->reason];
                    snprintf(why, sizeof why, "%s", oc->reason);
                    snprintf(oc->reason, sizeof oc->reason, "run %d of %d: %.560s", k, r->m->repeat, why);
                }
                break;
            }
        }
    }
    int infra = 0; /* an infrastructure failure in the fresh runs the first verdict asked for */
    if (!cancelled && oc->status == RP_CASE_OK) cancelled = emulation_collect(r, i, tmp);
    if (!cancelled && oc->status == RP_CASE_OK && r->m->cls.enabled) cancelled = twins_await(r, i, oc);
    if (!cancelled && oc->status == RP_CASE_OK) aux_infra(tmp, 0, oc);
    /* The launches are over: what is left (the result, the metrics, the classification, the
     * publish) is this thread's own work, so the cores go to the next job now instead of
     * idling through it. A fresh run the verdict asks for takes the case's world again without
     * holding them, as a fresh run after an emulation does (they may be overcommitted for
     * that rare run). */
    pthread_mutex_lock(&r->mu);
    give_back_slots(r, i, r->held[i]);
    pthread_mutex_unlock(&r->mu);
    if (oc->status == RP_CASE_INFRA) st = RP_ERR_IO; /* not stored: the next run computes it again */
    if (!cancelled && res && report && runs && st == RP_OK) {
        st = write_result(r, i, tmp, oc, "run", report, runs, &e);
        runs = NULL; /* owned by the result now (freed with it) */
        if (st == RP_OK && oc->status == RP_CASE_OK) st = write_metrics(r, i, tmp, oc, &e);
        if (st == RP_OK) classify_now(r, i, tmp, oc);
        int images = 0;
        const int rotated = r->m->cases[i].ref != i && rp_cls_self_rotated(&r->m->cases[i].c);
        const int fresh = st == RP_OK && r->m->cls.enabled ? fresh_runs_needed(tmp, rotated, &images) : FRESH_NONE;
        if (fresh &&
            !(cancelled = fresh == FRESH_LEAK ? classify_runs(r, i, tmp) : fresh_runs_exact(r, i, tmp, images))) {
            aux_infra(tmp, 0, oc);
            infra = oc->status == RP_CASE_INFRA; /* not stored: the next run computes it again */
            if (!infra) classify_now(r, i, tmp, oc);
        }
        if (st == RP_OK && !cancelled && !infra) st = rp_store_publish_dir(tmp, fin, &e);
        if (st != RP_OK) runner_failed(oc, &e);
    }
    cJSON_Delete(runs);
    free(res);
    free(report);
    if (cancelled || st != RP_OK || infra) (void)rp_store_remove_tree(tmp, NULL);
    return cancelled;
}

static void *case_thread(void *p) {
    case_arg *a = p;
    runner *r = a->r;
    const int i = a->i;
    rp_case_outcome oc = r->s->o[i];
    const int cancelled = run_case(r, i, &oc);
    pthread_mutex_lock(&r->mu);
    r->s->o[i] = oc;
    r->s->o[i].ran = !cancelled;
    if (cancelled) r->s->o[i].status = RP_CASE_PENDING;
    r->state[i] = CS_DONE;
    r->running--;
    give_back_slots(r, i, r->held[i]); /* none left unless run_case returned before launching */
    /* an emulation that finished but was never collected (the case's run failed) */
    const int leftover = r->emu[i] == ES_DONE || r->emu[i] == ES_CANCELLED;
    /* a reference that did not end ok has no twins to run (its cases get no verdict) */
    if (r->twn[i] == ES_TODO && (cancelled || oc.status != RP_CASE_OK)) r->twn[i] = ES_NONE;
    if (!cancelled) {
        r->finished++;
        const rp_matrix_case *mc = &r->m->cases[i];
        if (oc.status != RP_CASE_OK) r->failed++;
        char nm[sizeof mc->c.name];
        rp_case_display_name(mc->c.name, 0, nm, sizeof nm);
        if (!r->live || oc.status != RP_CASE_OK)
            progress_say(r, "[%d/%d] %-12s %s %s (%.1f s)%s%s", r->finished, r->to_run, rp_case_status_name(oc.status),
                         mc->id, nm, oc.wall_s, oc.reason[0] ? ": " : "", oc.reason);
        progress_line(r);
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (leftover) {
        char side[PATHLEN];
        emulation_side(r, i, side);
        (void)rp_store_remove_tree(side, NULL);
    }
    free(a);
    return NULL;
}

/* ---- scheduling ------------------------------------------------------------------------------ */

/* The cores (a cluster launcher: the nodes) case c takes while it runs. */
static int slots_of(const runner *r, const rp_case *c) {
    if (r->launcher && r->launcher->kind != RP_LAUNCHER_LOCAL) return nodes_of(r, c);
    const int need = rp_case_world(c) * threads_of(c);
    return need < r->ncpu ? need : r->ncpu;
}

/* Whether job k (JOB_KINDS: a case, an emulation, a reference's twins) starts now (caller holds the
 * mutex): nodes are never shared, whatever --jobs says; cores may be overcommitted (--jobs,
 * and a job larger than the machine runs alone). */
static int fits(const runner *r, int k) {
    if (r->launcher->kind != RP_LAUNCHER_LOCAL)
        return (r->jobs <= 0 || r->running < r->jobs) && r->slots[k] <= r->free_slots;
    return r->jobs > 0 ? r->running < r->jobs : r->running == 0 || r->slots[k] <= r->free_slots;
}

/* Starts job k on a thread running fn, *state set to running_state and its cores held (caller
 * holds the mutex); 1 when it started. When no thread can start and no job runs, *st says
 * why and the sweep stops. */
static int start_job(runner *r, int k, void *(*fn)(void *), unsigned char *state, unsigned char running_state,
                     unsigned char *started, rp_status *st, rp_error *err) {
    const int n = r->m->n_cases;
    assert(k >= 0 && k < JOB_KINDS * n);
    case_arg *a = malloc(sizeof *a);
    const unsigned char before = *state;
    if (a) {
        *a = (case_arg){r, k % n};
        *state = running_state; /* before the thread runs: it reads and sets it under the mutex */
        r->running++;
        r->held[k] = r->slots[k];
        r->free_slots -= r->slots[k];
        if (pthread_create(&r->tid[k], NULL, fn, a) == 0) {
            started[k] = 1;
            return 1;
        }
        *state = before;
        r->running--;
        give_back_slots(r, k, r->held[k]);
        free(a);
    }
    if (r->running == 0) {
        *st = RP_FAIL(err, RP_ERR_NOMEM, "cannot start a thread for case %s", r->m->cases[k % n].id);
        r->cancelled = 1;
    }
    return 0;
}

/* ---- planning ------------------------------------------------------------------------------- */

/* CONFIG_ERROR when c breaks a rule on any hardware; SKIPPED when only this
 * machine cannot run it; RP_CASE_OK when it can run here. */
static rp_case_status plan_case(const rp_case *c, const rp_validate_env *host, char *reason, size_t cap) {
    const int world = rp_case_world(c);
    /* the machine the case asks for: a matching GPU per rank (and, for cuda:#<i>, GPUs
     * 0..i), every backend built. Whether ranks may share a GPU (gloo, self) or need one
     * each (nccl) and what gpu_mode allows are validation's rules, the same here and there. */
    rp_validate_env want;
    memset(&want, 0, sizeof want);
    want.world = world;
    want.gloo_built = want.nccl_built = 1;
    const int ordinal = strncmp(c->device, "cuda:#", 6) == 0 ? atoi(c->device + 6) : -1;
    int gpus = world > ordinal ? world : ordinal + 1;
    want.n_gpus = gpus < RP_VALIDATE_MAX_GPUS ? gpus : RP_VALIDATE_MAX_GPUS;
    for (int g = 0; g < want.n_gpus; g++)
        snprintf(want.gpu_names[g], sizeof want.gpu_names[g], "%s",
                 strncmp(c->device, "cuda:", 5) == 0 && ordinal < 0 ? c->device + 5 : "GPU");
    rp_error e;
    rp_error_clear(&e);
    reason[0] = '\0';
    if (rp_case_validate(c, &want, &e) != RP_OK) {
        snprintf(reason, cap, "%.590s", e.msg);
        return RP_CASE_CONFIG_ERROR;
    }
    rp_validate_env here = *host;
    here.world = world;
    if (rp_case_validate(c, &here, &e) != RP_OK) {
        snprintf(reason, cap, "valid config, not on this machine: %.560s", e.msg);
        return RP_CASE_SKIPPED;
    }
    return RP_CASE_OK;
}

/* Records a validation CONFIG_ERROR as a finished case directory (no launch). */
static rp_status record_config_error(runner *r, int i, rp_case_outcome *oc, rp_error *err) {
    const rp_matrix_case *mc = &r->m->cases[i];
    char tmp[PATHLEN], fin[PATHLEN], cj[PATHLEN];
    rp_pathf(tmp, PATHLEN, "%s/.tmp-%s-%ld", r->s->dir, mc->id, (long)getpid());
    case_dir(r, i, fin);
    rp_store_path(cj, sizeof cj, tmp, RP_ART_CASE);
    (void)rp_store_remove_tree(tmp, NULL);
    RP_TRY(rp_store_mkdirs(tmp, err));
    rp_status st = rp_case_save(&mc->c, cj, err);
    if (st == RP_OK) st = write_result(r, i, tmp, oc, "validate", NULL, NULL, err);
    if (st == RP_OK) classify_now(r, i, tmp, oc);
    if (st == RP_OK) st = rp_store_publish_dir(tmp, fin, err);
    if (st != RP_OK) (void)rp_store_remove_tree(tmp, NULL);
    return st;
}

static int cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Removes what killed sweeps left behind: .tmp-* directories and files (we hold the lock). */
static void clean_stale(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, ".tmp-", 5) && !strstr(de->d_name, ".tmp.")) continue;
        char p[PATHLEN];
        if (!rp_pathf(p, PATHLEN, "%s/%s", dir, de->d_name)) (void)rp_store_remove_tree(p, NULL);
    }
    closedir(d);
}

/* Takes <dir>/.lock (flock, released by the kernel when we die); returns the fd. */
static rp_status take_lock(const char *dir, int *fd, rp_error *err) {
    char p[PATHLEN];
    rp_pathf(p, PATHLEN, "%s/.lock", dir);
    *fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (*fd < 0) return RP_FAIL(err, RP_ERR_IO, "cannot open %s: %s", p, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t n = pread(*fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        close(*fd);
        *fd = -1;
        pid[strcspn(pid, "\n")] = '\0'; /* the file holds "PID\n" */
        return RP_FAIL(err, RP_ERR_IO, "%s is in use by another sweep (pid %s); wait for it or stop it", dir,
                       pid[0] ? pid : "?");
    }
    char pid[32];
    const int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(*fd, 0) != 0 || pwrite(*fd, pid, (size_t)n, 0) != n) { /* the pid is only for the message */ }
    return RP_OK;
}

/* ---- golden comparison ---------------------------------------------------------------------- */

/* --golden with the classifier: case i (in dir) against the golden gd of its reference,
 * teacher-forced from the golden's trajectory (unless bitwise equal to it), with the
 * envelope of the local reference's twins: classification-golden.json. Returns 1 when
 * cancelled. */
static int classify_golden(runner *r, int i, const char *dir, const char *gd, rp_case_outcome *oc) {
    const rp_matrix_case *mc = &r->m->cases[i];
    char cj[PATHLEN], td[PATHLEN], ref[PATHLEN], label[PATHLEN + 8], nsteps[32];
    rp_store_path(cj, sizeof cj, dir, RP_ART_CASE);
    rp_pathf(td, PATHLEN, "%s/teacher-golden", dir);
    case_dir(r, mc->ref, ref);
    snprintf(label, sizeof label, "golden %s", gd);
    snprintf(nsteps, sizeof nsteps, "%d", r->m->cls.teacher_steps);
    (void)rp_store_remove_tree(td, NULL);
    int ok = 0;
    if (!rp_cls_runs_identical(gd, dir)) {
        const char *targs[] = {"--teacher-force", gd, "--teacher-steps", nsteps, NULL};
        if (aux_run(r, &mc->c, cj, td, "teacher-golden", targs, &ok)) return 1;
    }
    rp_cls_inputs in;
    memset(&in, 0, sizeof in);
    in.case_dir = dir;
    in.ref_dir = gd;
    in.twin_base_dir = ref;
    in.teacher_dir = td;
    in.out_name = "classification-golden.json";
    in.ref_label = label;
    in.repeat = r->m->repeat;
    in.opts = r->m->cls;
    rp_verdict v;
    int pass = 0;
    rp_error e;
    rp_error_clear(&e);
    if (rp_classify_dir(&in, &v, &pass, &e) != RP_OK) {
        oc->verdict_pass = 0;
        snprintf(oc->verdict_summary, sizeof oc->verdict_summary, "classification against the golden failed: %.250s",
                 e.msg);
        return 0;
    }
    oc->have_golden_verdict = 1;
    oc->golden_verdict = v;
    oc->golden_verdict_pass = pass;
    return 0;
}

static rp_status compare_goldens(runner *r, rp_error *err) {
    rp_golden_store *g = NULL;
    RP_TRY(rp_golden_open(r->o->golden_dir, &g, err));
    rp_status st = RP_OK;
    for (int i = 0; i < r->m->n_cases && st == RP_OK; i++) {
        rp_case_outcome *oc = &r->s->o[i];
        if (!oc->selected || oc->status != RP_CASE_OK) continue;
        const rp_matrix_case *mc = &r->m->cases[i];
        const char *gd = rp_golden_find(g, &r->m->cases[mc->ref].c);
        oc->have_golden = 0;
        if (!gd) continue;
        char dir[PATHLEN], p[PATHLEN];
        case_dir(r, i, dir);
        cmp_summary cs;
        cJSON *j = cJSON_CreateObject();
        cJSON *vs = compare_dirs(gd, dir, mc->c.n_items, &cs);
        if (!j || !vs) {
            cJSON_Delete(j);
            cJSON_Delete(vs);
            st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
            break;
        }
        cJSON_AddStringToObject(j, "golden_store", r->o->golden_dir);
        cJSON_AddStringToObject(j, "golden", gd);
        cJSON_AddStringToObject(j, "golden_of", r->m->cases[mc->ref].id);
        cJSON *info = NULL;
        rp_store_path(p, sizeof p, gd, RP_ART_GOLDEN);
        rp_error e2;
        if (rp_store_read_json(p, &info, &e2) == RP_OK) cJSON_AddItemToObject(j, "recorded", info);
        cJSON_AddItemToObject(j, "vs_golden", vs);
        rp_store_path(p, sizeof p, dir, RP_ART_GOLDEN);
        st = rp_store_write_json(p, j, err);
        cJSON_Delete(j);
        if (cs.ok) {
            oc->have_golden = 1;
            oc->g_max_abs = cs.c.max_abs;
            oc->g_psnr = cs.c.n_images ? cs.c.psnr : NAN;
            if (st == RP_OK && r->m->cls.enabled && classify_golden(r, i, dir, gd, oc)) {
                r->s->cancelled = 1;
                break;
            }
        }
    }
    rp_golden_close(g);
    return st;
}

/* ---- summary --------------------------------------------------------------------------------- */

static void expectations(const rp_matrix *m, rp_sweep *s) {
    s->n_ok = s->n_failed = s->n_skipped = s->n_unexpected = 0;
    for (int i = 0; i < s->n; i++) {
        rp_case_outcome *oc = &s->o[i];
        if (!oc->selected || oc->status == RP_CASE_PENDING) continue;
        const char *ex = m->cases[i].c.expect;
        const int k = ex[0] ? status_parse(ex) : -1;
        oc->expect_met = k < 0 ? -1 : k == (int)oc->status;
        /* a verdict label (drift, BUG, ...) is met by the classifier's verdict */
        if (k < 0 && ex[0] && rp_verdict_parse(ex) >= 0 && oc->have_verdict) oc->expect_met = oc->verdict_pass == 1;
        if (oc->status == RP_CASE_OK) s->n_ok++;
        else if (oc->status == RP_CASE_SKIPPED) s->n_skipped++;
        else s->n_failed++;
        int bad;
        if (oc->expect_met >= 0) bad = !oc->expect_met;
        else bad = oc->status != RP_CASE_OK && oc->status != RP_CASE_SKIPPED;
        /* tolerances gate cases with no label, or labelled ok */
        if (oc->within_tol == 0 && (!ex[0] || k == RP_CASE_OK)) bad = 1;
        /* the classifier: a failing verdict (or one against the label), also against a golden */
        if (oc->verdict_pass == 0) bad = 1;
        if (oc->have_golden_verdict && !oc->golden_verdict_pass) bad = 1;
        s->n_unexpected += bad;
    }
}

static rp_status write_summary(const runner *r, rp_error *err) {
    const rp_matrix *m = r->m;
    const rp_sweep *s = r->s;
    cJSON *j = cJSON_CreateObject();
    if (!j) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    cJSON_AddStringToObject(j, "matrix", m->name);
    cJSON_AddStringToObject(j, "file", m->path);
    cJSON_AddStringToObject(j, "engine", REPRO_VERSION);
    cJSON_AddStringToObject(j, "git", rp_git_revision());
    cJSON_AddNumberToObject(j, "repeat", m->repeat);
    cJSON_AddBoolToObject(j, "cancelled", s->cancelled);
    cJSON *arr = cJSON_AddArrayToObject(j, "cases");
    for (int i = 0; i < m->n_cases; i++) {
        const rp_case_outcome *oc = &s->o[i];
        if (!oc->selected) continue;
        const rp_matrix_case *mc = &m->cases[i];
        cJSON *c = cJSON_CreateObject();
        char deg[96];
        rp_case_degrees_text(&mc->c, deg, sizeof deg);
        cJSON_AddStringToObject(c, "id", mc->id);
        cJSON_AddStringToObject(c, "name", mc->c.name);
        cJSON_AddStringToObject(c, "degrees", deg);
        cJSON_AddNumberToObject(c, "world", rp_case_world(&mc->c));
        cJSON_AddStringToObject(c, "reference", m->cases[mc->ref].id);
        cJSON_AddBoolToObject(c, "is_reference", mc->is_ref);
        cJSON_AddStringToObject(c, "status", rp_case_status_name(oc->status));
        cJSON_AddStringToObject(c, "reason", oc->reason);
        cJSON_AddStringToObject(c, "expect", mc->c.expect);
        if (oc->expect_met >= 0) cJSON_AddBoolToObject(c, "expect_met", oc->expect_met);
        cJSON_AddBoolToObject(c, "resumed", oc->resumed);
        if (oc->have_verdict) {
            cJSON_AddStringToObject(c, "verdict", rp_verdict_name((rp_verdict)oc->verdict));
            cJSON_AddBoolToObject(c, "verdict_pass", oc->verdict_pass == 1);
            cJSON_AddStringToObject(c, "verdict_summary", oc->verdict_summary);
        } else if (oc->verdict_summary[0]) {
            cJSON_AddStringToObject(c, "verdict_summary", oc->verdict_summary);
        }
        if (oc->have_golden_verdict) {
            cJSON_AddStringToObject(c, "golden_verdict", rp_verdict_name((rp_verdict)oc->golden_verdict));
            cJSON_AddBoolToObject(c, "golden_verdict_pass", oc->golden_verdict_pass);
        }
        cJSON_AddNumberToObject(c, "wall_s", oc->wall_s);
        if (oc->have_metrics) {
            cJSON *v = cJSON_AddObjectToObject(c, "vs_reference");
            rp_store_put_num(v, "latents_max_abs", oc->max_abs);
            rp_store_put_num(v, "latents_rel_l2", oc->rel_l2);
            rp_store_put_num(v, "psnr", oc->psnr);
            rp_store_put_num(v, "ssim", oc->ssim);
            rp_store_put_num(v, "changed", oc->changed);
            if (oc->within_tol >= 0) cJSON_AddBoolToObject(v, "within_tolerances", oc->within_tol);
        }
        if (oc->repeat_identical >= 0) {
            cJSON *v = cJSON_AddObjectToObject(c, "repeats");
            cJSON_AddBoolToObject(v, "identical", oc->repeat_identical);
            rp_store_put_num(v, "max_abs", oc->repeat_max_abs);
        }
        if (oc->have_golden) {
            cJSON *v = cJSON_AddObjectToObject(c, "vs_golden");
            rp_store_put_num(v, "latents_max_abs", oc->g_max_abs);
            rp_store_put_num(v, "psnr", oc->g_psnr);
        }
        cJSON_AddItemToArray(arr, c);
    }
    char p[PATHLEN];
    rp_store_path(p, sizeof p, s->dir, RP_ART_SUMMARY);
    rp_status st = rp_store_write_json(p, j, err);
    cJSON_Delete(j);
    return st;
}

static void cell_num(char *buf, size_t cap, const char *fmt, double v, int have) {
    if (!have || isnan(v)) snprintf(buf, cap, "-");
    else if (isinf(v)) snprintf(buf, cap, "inf");
    else if (v == 0) snprintf(buf, cap, "0");
    else snprintf(buf, cap, fmt, v);
}

/* The confusion table of the cases with a verdict label (drift, approx, BUG, ...). */
static void print_confusion(const rp_matrix *m, const rp_sweep *s, FILE *f) {
    rp_verdict *ex = malloc(sizeof *ex * (size_t)(m->n_cases + 1)), *vd = malloc(sizeof *vd * (size_t)(m->n_cases + 1));
    int n = 0;
    for (int i = 0; ex && vd && i < m->n_cases; i++) {
        const int e = m->cases[i].c.expect[0] ? rp_verdict_parse(m->cases[i].c.expect) : -1;
        if (!s->o[i].selected || !s->o[i].have_verdict || e < 0) continue;
        ex[n] = (rp_verdict)e;
        vd[n++] = (rp_verdict)s->o[i].verdict;
    }
    if (ex && vd) rp_cls_confusion_print(f, ex, vd, n);
    free(ex);
    free(vd);
}

void rp_sweep_print(const rp_matrix *m, const rp_sweep *s, FILE *f) {
    fprintf(f, "%-16s  %-34s %-10s %-13s %9s %7s %7s %8s  %-16s  %s\n", "id", "name", "degrees", "status", "max-abs",
            "PSNR", "SSIM", "changed", "verdict", "note");
    for (int i = 0; i < m->n_cases; i++) {
        const rp_case_outcome *oc = &s->o[i];
        if (!oc->selected) continue;
        const rp_matrix_case *mc = &m->cases[i];
        char deg[64], st[32], ma[32], ps[32], ss[32], ch[32], vd[32], note[900] = "";
        rp_case_degrees_text(&mc->c, deg, sizeof deg);
        snprintf(st, sizeof st, "%s%s", rp_case_status_name(oc->status), mc->is_ref ? " (ref)" : "");
        const int hm = oc->have_metrics;
        cell_num(ma, sizeof ma, "%.2e", oc->max_abs, hm);
        cell_num(ps, sizeof ps, "%.2f", oc->psnr, hm);
        cell_num(ss, sizeof ss, "%.4f", oc->ssim, hm);
        if (hm && !isnan(oc->changed)) snprintf(ch, sizeof ch, "%.2f%%", 100 * oc->changed);
        else snprintf(ch, sizeof ch, "-");
        snprintf(vd, sizeof vd, "%s", oc->have_verdict ? rp_verdict_name((rp_verdict)oc->verdict) : "-");
        size_t n = 0;
#define NOTE(...) (n += (size_t)snprintf(note + n, n < sizeof note ? sizeof note - n : 0, __VA_ARGS__))
        /* the evidence of a verdict that is not plain drift (or that fails) */
        if ((oc->have_verdict && oc->verdict != RP_V_IDENTICAL && oc->verdict != RP_V_DRIFT &&
             oc->verdict != RP_V_SKIPPED && oc->status == RP_CASE_OK) || oc->verdict_pass == 0)
            NOTE("%s%s; ", oc->verdict_pass == 0 ? "FAILS: " : "", oc->verdict_summary);
        if (oc->have_golden_verdict)
            NOTE("vs golden: %s%s; ", rp_verdict_name((rp_verdict)oc->golden_verdict),
                 oc->golden_verdict_pass ? "" : " (FAILS)");
        if (mc->c.expect[0]) {
            if (oc->expect_met == 1) NOTE("expected %s; ", mc->c.expect);
            else if (oc->expect_met == 0) NOTE("UNEXPECTED (expected %s); ", mc->c.expect);
            else NOTE("expect %s; ", mc->c.expect);
        }
        if (oc->within_tol == 0) NOTE("OUTSIDE TOLERANCE; ");
        if (oc->repeat_identical == 1) NOTE("repeats identical; ");
        else if (oc->repeat_identical == 0) NOTE("repeats DIFFER (max-abs %.2e); ", oc->repeat_max_abs);
        if (oc->have_golden) {
            char gm[32], gp[32];
            cell_num(gm, sizeof gm, "%.2e", oc->g_max_abs, 1);
            cell_num(gp, sizeof gp, "%.2f", oc->g_psnr, 1);
            NOTE("golden max-abs %s PSNR %s; ", gm, gp);
        }
        if (oc->resumed) NOTE("resumed; ");
        if (oc->status != RP_CASE_OK && oc->reason[0]) NOTE("%s", oc->reason);
#undef NOTE
        n = strlen(note);
        while (n && (note[n - 1] == ' ' || note[n - 1] == ';')) note[--n] = '\0';
        char name[sizeof mc->c.name];
        rp_case_display_name(mc->c.name, 34, name, sizeof name);
        char line[1400];
        snprintf(line, sizeof line, "%-16s  %-34s %-10s %-13s %9s %7s %7s %8s  %-16s  %.300s", mc->id, name, deg, st,
                 ma, ps, ss, ch, vd, note);
        for (size_t l = strlen(line); l && line[l - 1] == ' '; l--) line[l - 1] = '\0';
        fprintf(f, "%s\n", line);
    }
    int by[RP_CASE_INFRA + 1] = {0};
    for (int i = 0; i < s->n; i++)
        if (s->o[i].selected) by[s->o[i].status]++;
    fprintf(f, "%s: %d cases: %d ok, %d CONFIG_ERROR, %d CRASH, %d HANG, %d SKIPPED", m->name, s->n_selected,
            by[RP_CASE_OK], by[RP_CASE_CONFIG_ERROR], by[RP_CASE_CRASH], by[RP_CASE_HANG], by[RP_CASE_SKIPPED]);
    if (by[RP_CASE_INFRA])
        fprintf(f, ", %d INFRA_ERROR (the machine failed; not stored, they run again next time)", by[RP_CASE_INFRA]);
    if (by[RP_CASE_PENDING]) fprintf(f, ", %d not run", by[RP_CASE_PENDING]);
    fprintf(f, "; %d run now, %d from earlier runs", s->n_ran, s->n_resumed);
    if (s->n_unexpected) fprintf(f, "; %d not as expected", s->n_unexpected);
    if (s->cancelled) fprintf(f, "; CANCELLED");
    fputc('\n', f);
    int byv[RP_V_COUNT] = {0}, nv = 0;
    for (int i = 0; i < s->n; i++)
        if (s->o[i].selected && s->o[i].have_verdict) byv[s->o[i].verdict]++, nv++;
    if (nv) {
        fprintf(f, "verdicts:");
        for (int v = 0, first = 1; v < RP_V_COUNT; v++)
            if (byv[v]) fprintf(f, "%s %d %s", first ? "" : ",", byv[v], rp_verdict_name((rp_verdict)v)), first = 0;
        fputc('\n', f);
        print_confusion(m, s, f);
    }
    fprintf(f, "results: %s\n", s->dir);
}

int rp_sweep_exit_code(const rp_sweep *s) {
    if (s->cancelled) return 130;
    return s->n_unexpected ? 1 : 0;
}

void rp_sweep_free(rp_sweep *s) {
    if (!s) return;
    free(s->o);
    s->o = NULL;
    s->n = 0;
}

/* ---- dry run -------------------------------------------------------------------------------- */

static void print_plan(const runner *r, const unsigned char *verdict, FILE *f) {
    const rp_matrix *m = r->m;
    fprintf(f, "%-16s  %-34s %-10s %5s %-16s  %s\n", "id", "name", "degrees", "world", "reference", "verdict");
    int by[4] = {0};
    for (int i = 0; i < m->n_cases; i++) {
        const rp_case_outcome *oc = &r->s->o[i];
        if (!oc->selected) continue;
        const rp_matrix_case *mc = &m->cases[i];
        char deg[64], verd[800];
        rp_case_degrees_text(&mc->c, deg, sizeof deg);
        switch (verdict[i]) {
        case 0: snprintf(verd, sizeof verd, "run"); break;
        case 1: snprintf(verd, sizeof verd, "done (%s, from an earlier run)", rp_case_status_name(oc->status)); break;
        case 2: snprintf(verd, sizeof verd, "CONFIG_ERROR: %.700s", oc->reason); break;
        default: snprintf(verd, sizeof verd, "SKIPPED: %.700s", oc->reason); break;
        }
        by[verdict[i]]++;
        char name[sizeof mc->c.name];
        rp_case_display_name(mc->c.name, 34, name, sizeof name);
        fprintf(f, "%-16s  %-34s %-10s %5d %-16s  %s%s%s%s\n", mc->id, name, deg, rp_case_world(&mc->c),
                mc->ref == i ? "self" : m->cases[mc->ref].id, verd, mc->c.expect[0] ? " [expect " : "",
                mc->c.expect, mc->c.expect[0] ? "]" : "");
    }
    fprintf(f, "%s: %d cases: %d to run, %d done, %d CONFIG_ERROR, %d SKIPPED (dry run: nothing was run or written)\n",
            m->name, r->s->n_selected, by[0], by[1], by[2], by[3]);
}

/* ---- the sweep ------------------------------------------------------------------------------ */

/* The launcher the options (else the matrix, else local) name, opened into r. */
static rp_status open_launcher(runner *r, rp_error *err) {
    const char *name = r->o->launcher ? r->o->launcher : r->m->launcher[0] ? r->m->launcher : "local";
    rp_launcher_opts lo = {.hostfile = r->o->hostfile};
    RP_TRY(rp_launcher_parse(name, &lo.kind, err));
    if (lo.kind != RP_LAUNCHER_MPIRUN && r->o->hostfile)
        return RP_FAIL(err, RP_ERR_INVALID, "--hostfile is for --launcher mpirun (the launcher is %s)", name);
    r->ranks_per_node = r->o->ranks_per_node > 0 ? r->o->ranks_per_node : r->m->ranks_per_node;
    return rp_launcher_open(&lo, &r->launcher, err);
}

rp_status rp_runner_run(const rp_matrix *m, const rp_runner_opts *o, rp_sweep *s, rp_error *err) {
    assert(m && o && s);
    memset(s, 0, sizeof *s);
    s->n = m->n_cases;
    s->o = calloc((size_t)m->n_cases, sizeof *s->o);
    runner r;
    memset(&r, 0, sizeof r);
    r.m = m;
    r.o = o;
    r.s = s;
    r.state = calloc((size_t)m->n_cases, 1);
    r.emu = calloc((size_t)m->n_cases, 1);
    r.twn = calloc((size_t)m->n_cases, 1);
    r.slots = calloc(JOB_KINDS * (size_t)m->n_cases, sizeof *r.slots);
    r.held = calloc(JOB_KINDS * (size_t)m->n_cases, sizeof *r.held);
    unsigned char *keep = calloc((size_t)m->n_cases, 1), *verdict = calloc((size_t)m->n_cases, 1);
    r.tid = calloc(JOB_KINDS * (size_t)m->n_cases, sizeof *r.tid);
    unsigned char *started = calloc(JOB_KINDS * (size_t)m->n_cases, 1); /* per job, as r.slots */
    FILE *out = o->out ? o->out : stdout;
    int lock_fd = -1;
    rp_status st = RP_OK;
    if (!s->o || !r.state || !r.emu || !r.twn || !r.slots || !r.held || !keep || !verdict || !r.tid || !started)
        st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    const char *root = o->results_dir ? o->results_dir : "results";
    if (st == RP_OK && rp_pathf(s->dir, PATHLEN, "%s/%s", root, m->name))
        st = RP_FAIL(err, RP_ERR_INVALID, "results path too long: %s", root);
    if (st == RP_OK) st = rp_matrix_select(m, o->filters, o->n_filters, keep, err);
    if (st == RP_OK && o->refs_only) {
        for (int i = 0; i < m->n_cases; i++) keep[i] = keep[i] && m->cases[i].is_ref;
    }
    if (st == RP_OK && !o->dry_run) {
        st = rp_store_mkdirs(s->dir, err);
        if (st == RP_OK) st = take_lock(s->dir, &lock_fd, err);
        if (st == RP_OK) clean_stale(s->dir);
    }
    rp_validate_env host;
    memset(&host, 0, sizeof host);
    if (st == RP_OK) rp_validate_env_host(&host);
    r.host = host;
    rp_build_id(r.build_id);
    r.ncpu = cpu_count();
    if (st == RP_OK && !o->dry_run) st = open_launcher(&r, err);
    r.timeout_s = o->timeout_s > 0 ? o->timeout_s : m->timeout_s;
    /* plan: verdict 0 run, 1 finished earlier, 2 CONFIG_ERROR, 3 SKIPPED */
    for (int i = 0; st == RP_OK && i < m->n_cases; i++) {
        rp_case_outcome *oc = &s->o[i];
        oc->failed_rank = -1;
        oc->within_tol = -1;
        oc->repeat_identical = -1;
        oc->expect_met = -1;
        oc->verdict_pass = -1;
        if (!keep[i]) continue;
        oc->selected = 1;
        s->n_selected++;
        char reason[600], dir[PATHLEN], stage[16] = "";
        const rp_case_status plan = plan_case(&m->cases[i].c, &host, reason, sizeof reason);
        case_dir(&r, i, dir);
        rp_case_outcome prev;
        memset(&prev, 0, sizeof prev);
        prev.within_tol = prev.repeat_identical = prev.expect_met = -1;
        made_by by;
        const int finished = outcome_load(dir, &prev, stage, sizeof stage, &by);
        if (plan == RP_CASE_SKIPPED) {
            oc->status = RP_CASE_SKIPPED;
            snprintf(oc->reason, sizeof oc->reason, "%s", reason);
            oc->have_verdict = m->cls.enabled; /* no directory: the hardware may exist elsewhere */
            oc->verdict = RP_V_SKIPPED;
            oc->verdict_pass = 1;
            verdict[i] = 3;
            continue;
        }
        /* a stored result stands unless forced, a failure to retry, or a stale validation verdict */
        const int stale_validation = finished && !strcmp(stage, "validate") &&
                                     (plan != RP_CASE_CONFIG_ERROR || strcmp(prev.reason, reason));
        const int retry = o->retry_failed && (prev.status == RP_CASE_CRASH || prev.status == RP_CASE_HANG);
        char stale_why[400];
        const int stale =
            finished && !o->rerun && stored_stale(dir, &by, &m->cases[i].c, r.build_id, stale_why, sizeof stale_why);
        if (stale) progress_say(&r, "%s: the stored result of %s is rerun: %s", m->name, m->cases[i].id, stale_why);
        if (finished && !o->rerun && !retry && !stale_validation && !stale) {
            *oc = prev;
            oc->selected = 1;
            oc->resumed = 1;
            verdict[i] = 1;
            continue;
        }
        if (plan == RP_CASE_CONFIG_ERROR) {
            oc->status = RP_CASE_CONFIG_ERROR;
            snprintf(oc->reason, sizeof oc->reason, "%s", reason);
            verdict[i] = 2;
            if (!o->dry_run) st = record_config_error(&r, i, oc, err);
            continue;
        }
        if (r.launcher && r.launcher->kind != RP_LAUNCHER_LOCAL && nodes_of(&r, &m->cases[i].c) > r.launcher->nodes) {
            oc->status = RP_CASE_SKIPPED; /* a larger allocation or hostfile runs it */
            snprintf(oc->reason, sizeof oc->reason, "needs %d nodes; the %s launcher has %d",
                     nodes_of(&r, &m->cases[i].c), r.launcher->name, r.launcher->nodes);
            oc->have_verdict = m->cls.enabled;
            oc->verdict = RP_V_SKIPPED;
            oc->verdict_pass = 1;
            verdict[i] = 3;
            continue;
        }
        verdict[i] = 0;
        r.state[i] = CS_TODO;
        r.to_run++;
        r.slots[i] = slots_of(&r, &m->cases[i].c);
        rp_case ec;
        if (emulation_case(&r, i, &ec)) {
            r.emu[i] = ES_TODO;
            r.slots[JOB_EMULATION * m->n_cases + i] = slots_of(&r, &ec);
        }
    }
    /* the twins jobs: of each reference that runs now when one of its cases could start beside
     * them (twins_apart; else its own launch runs them), and of one stored without them (a sweep
     * killed before they were moved in) */
    for (int i = 0; st == RP_OK && !o->dry_run && i < m->n_cases; i++) {
        char dir[PATHLEN], done[PATHLEN];
        case_dir(&r, i, dir);
        rp_store_path(done, sizeof done, dir, RP_ART_DONE);
        const int stored_without = r.state[i] != CS_TODO && rp_is_file(done) && !rp_store_has_twins(dir);
        if (((r.state[i] == CS_TODO && twins_apart(&r, i)) || stored_without) && twins_needed(&r, i)) {
            r.twn[i] = ES_TODO;
            r.slots[JOB_TWINS * m->n_cases + i] = slots_of(&r, &m->cases[i].c);
        }
    }
    if (st != RP_OK) goto done;
    if (o->dry_run) {
        print_plan(&r, verdict, out);
        goto done;
    }
    /* schedule */
    r.jobs = o->jobs;
    const int cluster = r.launcher->kind != RP_LAUNCHER_LOCAL;
    r.free_slots = cluster ? r.launcher->nodes : r.ncpu;
    r.live = o->progress < 0 ? isatty(STDERR_FILENO) : o->progress;
    r.t0 = rp_now_s();
    {
        pthread_mutex_init(&r.mu, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&r.cv, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_lock(&r.mu);
        if (r.to_run) {
            if (cluster)
                progress_say(&r, "%s: %d cases to run (%d selected), %d nodes (%s), cases packed by nodes", m->name,
                             r.to_run, s->n_selected, r.launcher->nodes, r.launcher->name);
            else
                progress_say(&r, "%s: %d cases to run (%d selected), %d cores, %s", m->name, r.to_run,
                             s->n_selected, r.ncpu, r.jobs > 0 ? "fixed --jobs" : "cases packed by ranks");
            progress_line(&r);
        }
        for (;;) {
            if (!r.cancelled && o->cancel_fd >= 0) {
                struct pollfd pf = {o->cancel_fd, POLLIN, 0};
                if (poll(&pf, 1, 0) > 0) {
                    r.cancelled = 1;
                    progress_say(&r, "%s: cancelled; stopping the running cases (their results are discarded)",
                                 m->name);
                }
            }
            int todo = 0;
            /* first a published reference's twins: its cases' verdicts wait for them */
            for (int i = 0; i < m->n_cases && !r.cancelled; i++) {
                if (r.twn[i] != ES_TODO) continue;
                todo++;
                const int k = JOB_TWINS * m->n_cases + i;
                if (r.state[i] != CS_TODO && r.state[i] != CS_RUNNING && fits(&r, k) &&
                    start_job(&r, k, twins_thread, &r.twn[i], ES_RUNNING, started, &st, err))
                    progress_line(&r);
            }
            for (int i = 0; i < m->n_cases && !r.cancelled; i++) {
                if (r.state[i] != CS_TODO) continue;
                todo++;
                const int ref = m->cases[i].ref;
                if (ref != i && (r.state[ref] == CS_TODO || r.state[ref] == CS_RUNNING)) continue;
                if (fits(&r, i) && start_job(&r, i, case_thread, &r.state[i], CS_RUNNING, started, &st, err))
                    progress_line(&r);
            }
            /* then emulations, on the cores no ready case fits in (emulation_thread) */
            for (int i = 0; i < m->n_cases && !r.cancelled; i++)
                if (r.emu[i] == ES_TODO && r.state[i] != CS_DONE && fits(&r, JOB_EMULATION * m->n_cases + i))
                    (void)start_job(&r, JOB_EMULATION * m->n_cases + i, emulation_thread, &r.emu[i], ES_RUNNING,
                                    started, &st, err);
            if (r.running == 0 && (r.cancelled || todo == 0)) break;
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_nsec += 250 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&r.cv, &r.mu, &ts);
            if (r.live) progress_line(&r);
        }
        if (r.line_shown) progress_say(&r, "%s: %d of %d run, %d failed, %.1f s", m->name, r.finished, r.to_run,
                                       r.failed, rp_now_s() - r.t0);
        pthread_mutex_unlock(&r.mu);
        for (int k = 0; k < JOB_KINDS * m->n_cases; k++)
            if (started[k]) pthread_join(r.tid[k], NULL);
        pthread_cond_destroy(&r.cv);
        pthread_mutex_destroy(&r.mu);
        s->cancelled = r.cancelled;
    }
    /* metrics and verdicts of cases finished earlier whose reference was rerun since (or
     * which have none, or whose classify options changed) */
    for (int i = 0; st == RP_OK && !s->cancelled && i < m->n_cases; i++) {
        rp_case_outcome *oc = &s->o[i];
        if (!oc->selected || oc->status == RP_CASE_PENDING || oc->status == RP_CASE_SKIPPED ||
            oc->status == RP_CASE_INFRA)
            continue;
        char dir[PATHLEN];
        case_dir(&r, i, dir);
        const int stale = oc->status == RP_CASE_OK && metrics_stale(&r, i);
        if (stale) st = write_metrics(&r, i, dir, oc, err);
        if (st == RP_OK && (stale || classification_stale(&r, dir))) classify_now(&r, i, dir, oc);
    }
    if (st == RP_OK && o->golden_dir && !s->cancelled) st = compare_goldens(&r, err);
    for (int i = 0; i < m->n_cases; i++) {
        if (s->o[i].ran) s->n_ran++;
        if (s->o[i].resumed) s->n_resumed++;
    }
    expectations(m, s);
    if (st == RP_OK) st = write_summary(&r, err);
    if (st == RP_OK) rp_sweep_print(m, s, out);
done:
    if (lock_fd >= 0) close(lock_fd);
    free(r.state);
    rp_launcher_close(r.launcher);
    free(r.emu);
    free(r.twn);
    free(r.slots);
    free(r.held);
    free(r.tid);
    free(keep);
    free(verdict);
    free(started);
    return st;
}

rp_status rp_runner_run_cancellable(const rp_matrix *m, const rp_runner_opts *o, rp_sweep *s, rp_error *err) {
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &set, &old) != 0) return rp_runner_run(m, o, s, err);
    const int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    rp_runner_opts oo = *o;
    if (fd >= 0) oo.cancel_fd = fd;
    rp_status st = rp_runner_run(m, &oo, s, err);
    if (fd >= 0) {
        /* consume what was delivered, so unblocking does not act on it a second time */
        struct signalfd_siginfo si;
        while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {}
        close(fd);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return st;
}
