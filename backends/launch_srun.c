/* launch_srun.c — the srun launcher (backends/launcher.h): every job is one Slurm
 * job step inside the allocation the sweep runs in.
 *
 *   srun --job-name repro-<pid>-<n> -N <nodes> -n <world> --ntasks-per-node <k>
 *        -m block -w <the nodes taken from the pool> --kill-on-bad-exit=1
 *        --input none --output <run dir>/rank%t.out --error <run dir>/rank%t.err
 *        --export ALL <program> <args>
 *
 * Why these: -w with nodes of our own pool, so steps never wait for each other inside
 * srun and rank r's node is known (block distribution, k per node); kill-on-bad-exit,
 * so one failed rank ends the step as the local launcher ends the job; %t is the
 * task's rank, so the outputs are named as the local launcher names them.
 *
 * How it ended comes from srun's own messages in <run dir>/srun.err:
 *   srun: error: NODE: task R: Exited with exit code N
 *   srun: error: NODE: tasks R-S,T: Killed            (strsignal text of the signal)
 * At the deadline (or on cancel) the step is cancelled by id (squeue -s finds the id of
 * our step name; scancel), srun gets SIGTERM and, after the grace time, SIGKILL. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/launch_cluster.h"

typedef struct srun_impl {
    rp_node_pool pool;
    char srun[PATH_MAX], scancel[PATH_MAX], squeue[PATH_MAX];
    char job_id[64];
    atomic_int seq;
} srun_impl;

/* Runs cmd through popen and reads its output into buf; -1 when it could not run or
 * exited non-zero. cmd is built from our own values only (ids, names, paths). */
static int capture(const char *cmd, char *buf, size_t cap) {
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    return pclose(f) == 0 ? 0 : -1;
}

typedef struct stop_ctx {
    const srun_impl *s;
    const char *step_name;
} stop_ctx;

/* Cancels our step: its id from squeue (by its unique name), then scancel. */
static void stop_step(void *ctx) {
    const stop_ctx *c = ctx;
    char cmd[3 * PATH_MAX + 256], out[8192];
    snprintf(cmd, sizeof cmd, "timeout 10 '%s' -h -s -j '%s' -o '%%i %%j' 2>/dev/null", c->s->squeue,
             c->s->job_id);
    if (capture(cmd, out, sizeof out) != 0) return;
    char *save = NULL;
    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char id[64], name[256];
        if (sscanf(line, "%63s %255s", id, name) != 2 || strcmp(name, c->step_name)) continue;
        for (const char *q = id; *q; q++)
            if (!((*q >= '0' && *q <= '9') || *q == '.' || *q == '_')) return;
        snprintf(cmd, sizeof cmd, "timeout 10 '%s' --quiet '%s' >/dev/null 2>&1", c->s->scancel, id);
        (void)!system(cmd);
    }
}

/* Parses "R", "R-S" and comma lists of them into failed[] (= mark) with the rank's end.
 * srun names the node too; the layout already knows it (the same name: -w). */
static void mark_tasks(const char *list, rp_launch_result *res, unsigned char *failed, unsigned char mark,
                       int exited, int value) {
    const char *p = list;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p) return;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1) return;
            p = end;
        }
        for (long r = a; r <= b && r >= 0 && r < res->nranks; r++) {
            if (failed[r]) continue; /* the first word on a rank stands */
            failed[r] = mark;
            res->ranks[r].exited = exited;
            if (exited) res->ranks[r].exit_code = value;
            else res->ranks[r].term_signal = value;
        }
        if (*p == ',') p++;
        else return;
    }
}

void rp_srun_parse_err(const char *path, long stopped_at, rp_launch_result *res, unsigned char *failed) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    unsigned char mark = 1;
    for (int n = 0; n < 100000; n++) {
        const long at = ftell(f);
        if (!fgets(line, sizeof line, f)) break;
        /* from here on, tasks end because the step is being killed: consequences */
        if ((stopped_at >= 0 && at >= stopped_at) || strstr(line, "Terminating StepId") ||
            strstr(line, "forcing job termination") || strstr(line, "Job step aborted") ||
            strstr(line, "Force Terminated"))
            mark = 2;
        const char *p = strstr(line, "srun: error: ");
        if (!p) continue;
        p += strlen("srun: error: ");
        const char *colon = strstr(p, ": task");
        if (!colon) continue;
        char node[RP_LAUNCHER_NODE_NAME];
        snprintf(node, sizeof node, "%.*s", (int)(colon - p), p);
        p = colon + strlen(": task");
        if (*p == 's') p++;
        if (*p++ != ' ') continue;
        char list[256];
        const char *c2 = strstr(p, ": ");
        if (!c2 || c2 - p >= (long)sizeof list) continue;
        snprintf(list, sizeof list, "%.*s", (int)(c2 - p), p);
        const char *what = c2 + 2;
        int code;
        if (sscanf(what, "Exited with exit code %d", &code) == 1) {
            if (code != 0) mark_tasks(list, res, failed, mark, 1, code);
        } else {
            int sig = rp_cluster_signal_from_text(what);
            if (sig > 0) mark_tasks(list, res, failed, mark, 0, sig);
        }
    }
    fclose(f);
}

static rp_status srun_launch(rp_launcher *l, const rp_launch_spec *spec, rp_launch_result *res, rp_error *err) {
    srun_impl *s = l->impl;
    memset(res, 0, sizeof *res);
    res->first_failed = -1;
    res->nranks = spec->nranks;
    int nodes, k;
    RP_TRY(rp_cluster_layout(spec, s->pool.n, "srun", &nodes, &k, err));
    char exe[PATH_MAX];
    RP_TRY(rp_cluster_exe(spec, exe, sizeof exe, err));
    if (!spec->argv || !spec->argv[0]) return RP_FAIL(err, RP_ERR_INVALID, "srun: empty command line");
    RP_TRY(rp_launch_dirs(spec, res, err));
    int idx[RP_LAUNCHER_MAX_NODES];
    RP_TRY(rp_pool_take(&s->pool, nodes, idx, err));

    char name[96], nn[16], nw[16], nk[16], out[PATH_MAX + 32], errp[PATH_MAX + 32];
    char nodelist[RP_LAUNCHER_MAX_NODES * RP_LAUNCHER_NODE_NAME];
    snprintf(name, sizeof name, "repro-%ld-%d", (long)getpid(), atomic_fetch_add(&s->seq, 1));
    snprintf(nn, sizeof nn, "%d", nodes);
    snprintf(nw, sizeof nw, "%d", spec->nranks);
    snprintf(nk, sizeof nk, "%d", k);
    snprintf(out, sizeof out, "%s/rank%%t.out", res->run_dir);
    snprintf(errp, sizeof errp, "%s/rank%%t.err", res->run_dir);
    nodelist[0] = '\0';
    for (int i = 0; i < nodes; i++) {
        strcat(nodelist, i ? "," : "");
        strcat(nodelist, s->pool.name[idx[i]]);
    }
    int nargs = 0;
    while (spec->argv[nargs]) nargs++;
    char **argv = calloc((size_t)nargs + 32, sizeof *argv);
    char **envp = rp_cluster_env(spec, res);
    rp_status st = RP_OK;
    if (!argv || !envp) st = RP_FAIL(err, RP_ERR_NOMEM, "srun: out of memory");
    if (st == RP_OK) {
        int a = 0;
        const char *fixed[] = {s->srun, "--job-name", name, "-N", nn, "-n", nw, "--ntasks-per-node", nk, "-m",
                               "block", "-w", nodelist, "--kill-on-bad-exit=1", "--input", "none", "--output",
                               out, "--error", errp, "--export", "ALL", exe};
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) argv[a++] = (char *)fixed[i];
        for (int i = 1; i < nargs; i++) argv[a++] = (char *)spec->argv[i];
        argv[a] = NULL;
        stop_ctx sc = {s, name};
        rp_cluster_proc p = {.argv = argv, .envp = envp, .log_base = "srun", .spec = spec, .res = res,
                             .stop = stop_step, .stop_ctx = &sc};
        st = rp_cluster_run(&p, err);
        if (st == RP_OK) {
            unsigned char failed[RP_LAUNCH_MAX_RANKS] = {0};
            char log[PATH_MAX + 32];
            snprintf(log, sizeof log, "%s/srun.err", res->run_dir);
            rp_srun_parse_err(log, p.err_at_stop, res, failed);
            if (rp_cluster_outcome(&p, &s->pool, idx, k, failed, res) != 0) {
                char tail[2048];
                rp_file_tail(log, 8, tail, sizeof tail);
                st = RP_FAIL(err, RP_ERR_IO, "srun %s (step %s on %s) without naming a failed task; %s:\n%s",
                             p.exited ? "exited non-zero" : "was killed by a signal", name, nodelist, log, tail);
            } else {
                rp_launch_report(spec, res);
            }
        }
    }
    rp_pool_give(&s->pool, idx, nodes);
    rp_cluster_env_free(envp);
    free(argv);
    return st;
}

static void srun_close(rp_launcher *l) {
    srun_impl *s = l->impl;
    pthread_mutex_destroy(&s->pool.mu);
    free(s);
    free(l);
}

rp_status rp_launcher_srun(const rp_launcher_opts *o, rp_launcher **out, rp_error *err) {
    *out = NULL;
    const char *job = getenv("SLURM_JOB_ID");
    if (!job || !*job)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "--launcher srun: SLURM_JOB_ID is not set, so this is not inside a Slurm allocation; "
                       "run the sweep under salloc or sbatch (e.g. salloc -N 2 repro --matrix ...)");
    for (const char *q = job; *q; q++)
        if (*q < '0' || *q > '9') return RP_FAIL(err, RP_ERR_INVALID, "SLURM_JOB_ID='%s' is not a job id", job);
    srun_impl *s = calloc(1, sizeof *s);
    rp_launcher *l = calloc(1, sizeof *l);
    if (!s || !l) {
        free(s);
        free(l);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&s->pool.mu, NULL);
    *l = (rp_launcher){.name = "srun", .kind = RP_LAUNCHER_SRUN, .launch = srun_launch, .close = srun_close,
                       .impl = s};
    snprintf(s->job_id, sizeof s->job_id, "%s", job);
    const char *hint = "Slurm's client commands: apt-get install slurm-client";
    char scontrol[PATH_MAX];
    rp_status st = rp_cluster_which(o->program ? o->program : "srun", hint, s->srun, sizeof s->srun, err);
    if (st == RP_OK) st = rp_cluster_which("scancel", hint, s->scancel, sizeof s->scancel, err);
    if (st == RP_OK) st = rp_cluster_which("squeue", hint, s->squeue, sizeof s->squeue, err);
    if (st == RP_OK) st = rp_cluster_which("scontrol", hint, scontrol, sizeof scontrol, err);
    /* the allocation's nodes, one name a line */
    const char *list = getenv("SLURM_JOB_NODELIST");
    if (st == RP_OK && (!list || !*list))
        st = RP_FAIL(err, RP_ERR_INVALID, "--launcher srun: SLURM_JOB_NODELIST is not set (SLURM_JOB_ID=%s)", job);
    if (st == RP_OK) {
        char cmd[PATH_MAX + 128], names[RP_LAUNCHER_MAX_NODES * RP_LAUNCHER_NODE_NAME];
        snprintf(cmd, sizeof cmd, "timeout 20 '%s' show hostnames 2>&1", scontrol);
        /* scontrol reads the list from SLURM_JOB_NODELIST itself: nothing from the
         * environment goes through the shell */
        if (capture(cmd, names, sizeof names) != 0)
            st = RP_FAIL(err, RP_ERR_IO, "scontrol show hostnames %s failed: %.300s", list, names);
        char *save = NULL;
        for (char *n = strtok_r(names, " \n", &save); st == RP_OK && n; n = strtok_r(NULL, " \n", &save))
            st = rp_pool_add(&s->pool, n, "SLURM_JOB_NODELIST", err);
        if (st == RP_OK && s->pool.n == 0)
            st = RP_FAIL(err, RP_ERR_INVALID, "SLURM_JOB_NODELIST=%s names no node", list);
    }
    if (st != RP_OK) {
        srun_close(l);
        return st;
    }
    l->nodes = s->pool.n;
    *out = l;
    return RP_OK;
}
