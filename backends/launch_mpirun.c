/* launch_mpirun.c — the mpirun launcher (backends/launcher.h): every job is one Open
 * MPI mpirun on hosts taken from the hostfile's pool.
 *
 *   mpirun [--allow-run-as-root] -n <world> -H <a>:<k>,<b>:<k> --map-by slot
 *          --bind-to none -x NAME... /bin/sh -c '"$@" >rank<r>.out 2>rank<r>.err;
 *          echo $? >rank<r>.status; ...' repro-rank <program> <args>
 *
 * Why these: -H with hosts of our own pool and k slots each, mapped by slot, so rank r
 * runs on the (r / k)-th host; --bind-to none, as the local launcher binds nothing;
 * -x forwards the variables the ranks need (mpirun passes the environment only to
 * ranks on its own host): the job's (threads, REPRO_STORE_DIR, REPRO_RUN_DIR) and
 * REPRO_*, GLOO_*, OPENBLAS_*, OMP_*, PATH, LD_LIBRARY_PATH from the sweep's. The
 * shell names each rank's output files as the local launcher names them, and records how
 * the rank ended in rank<r>.status (its wait status: the code, or 128 + the signal),
 * then ends the same way itself (the signal raised again), so mpirun sees what the rank
 * did. Open MPI signals each rank's process group, so a stop reaches the rank through
 * the shell. mpirun's own options (plm_rsh_agent, the network to use) come from
 * OMPI_MCA_* variables, which it reads itself.
 *
 * How it ended comes from mpirun's messages in <run dir>/mpirun.err:
 *   mpirun noticed that process rank R with PID P on node NODE exited on signal S (...)
 *   Process name: [[J,1],R]  /  Exit code: N      (the first rank to exit non-zero)
 * and, where mpirun names no rank (it sometimes says only "1 process returned a non-zero
 * exit code": a crash whose report lost a race in mpirun), from the ranks' status files.
 * At the deadline (or on cancel) mpirun's process group gets SIGTERM — mpirun then
 * kills its ranks on every host — and SIGKILL after the grace time. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/launch_cluster.h"

typedef struct mpirun_impl {
    rp_node_pool pool;
    char mpirun[PATH_MAX];
} mpirun_impl;

static const char RANK_SH[] = "r=\"$REPRO_RUN_DIR/rank$OMPI_COMM_WORLD_RANK\"; "
                              "\"$@\" <>/dev/null >\"$r.out\" 2>\"$r.err\"; s=$?; "
                              "echo $s >\"$r.status\"; "
                              "[ $s -gt 128 ] && kill -$((s - 128)) $$; exit $s";

/* 1 for the variables a rank on another host needs (see the file comment). */
static int forwarded(const char *kv, const rp_launch_spec *spec) {
    static const char *const PREFIX[] = {"REPRO_", "GLOO_", "OPENBLAS_", "OMP_"};
    static const char *const NAME[] = {"PATH", "LD_LIBRARY_PATH"};
    size_t n = strcspn(kv, "=");
    for (size_t i = 0; i < sizeof PREFIX / sizeof PREFIX[0]; i++)
        if (!strncmp(kv, PREFIX[i], strlen(PREFIX[i]))) return 1;
    for (size_t i = 0; i < sizeof NAME / sizeof NAME[0]; i++)
        if (n == strlen(NAME[i]) && !strncmp(kv, NAME[i], n)) return 1;
    for (const char *const *e = spec->env; e && *e; e++)
        if (strcspn(*e, "=") == n && !strncmp(*e, kv, n)) return 1;
    return 0;
}

void rp_mpirun_parse_err(const char *path, long stopped_at, rp_launch_result *res, unsigned char *failed) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    int pending = -1; /* rank of a "Process name:" line waiting for its "Exit code:" */
    for (int n = 0; n < 100000; n++) {
        const long at = ftell(f);
        if (!fgets(line, sizeof line, f)) break;
        const unsigned char mark = stopped_at >= 0 && at >= stopped_at ? 2 : 1; /* 2: the stop's doing */
        const char *p;
        int r, pid, sig, code;
        char node[RP_LAUNCHER_NODE_NAME];
        if ((p = strstr(line, "process rank ")) &&
            sscanf(p, "process rank %d with PID %d on node %63s exited on signal %d", &r, &pid, node, &sig) == 4) {
            if (r >= 0 && r < res->nranks && !failed[r] && sig > 0) {
                failed[r] = mark;
                res->ranks[r].exited = 0;
                res->ranks[r].term_signal = sig;
            }
        } else if ((p = strstr(line, "Process name:")) && (p = strrchr(p, ',')) && sscanf(p, ",%d]", &r) == 1) {
            pending = r;
        } else if (pending >= 0 && (p = strstr(line, "Exit code:")) && sscanf(p, "Exit code: %d", &code) == 1) {
            if (pending < res->nranks && !failed[pending] && code != 0) {
                failed[pending] = mark;
                res->ranks[pending].exited = 1;
                res->ranks[pending].exit_code = code;
            }
            pending = -1;
        }
    }
    fclose(f);
}

void rp_mpirun_read_status(const char *run_dir, rp_launch_result *res, unsigned char *failed) {
    for (int r = 0; r < res->nranks; r++)
        if (failed[r]) return; /* mpirun named the rank */
    for (int r = 0; r < res->nranks; r++) {
        char p[PATH_MAX + 32];
        snprintf(p, sizeof p, "%s/rank%d.status", run_dir, r);
        FILE *f = fopen(p, "r");
        int s = 0;
        const int got = f && fscanf(f, "%d", &s) == 1;
        if (f) fclose(f);
        if (!got || s == 0) continue;
        failed[r] = 1;
        res->ranks[r].exited = s <= 128;
        if (s > 128) res->ranks[r].term_signal = s - 128;
        else res->ranks[r].exit_code = s;
    }
}

static rp_status mpirun_launch(rp_launcher *l, const rp_launch_spec *spec, rp_launch_result *res, rp_error *err) {
    mpirun_impl *m = l->impl;
    memset(res, 0, sizeof *res);
    res->first_failed = -1;
    res->nranks = spec->nranks;
    int nodes, k;
    RP_TRY(rp_cluster_layout(spec, m->pool.n, "mpirun", &nodes, &k, err));
    char exe[PATH_MAX];
    RP_TRY(rp_cluster_exe(spec, exe, sizeof exe, err));
    if (!spec->argv || !spec->argv[0]) return RP_FAIL(err, RP_ERR_INVALID, "mpirun: empty command line");
    RP_TRY(rp_launch_dirs(spec, res, err));
    int idx[RP_LAUNCHER_MAX_NODES];
    RP_TRY(rp_pool_take(&m->pool, nodes, idx, err));

    char nw[16], hosts[RP_LAUNCHER_MAX_NODES * (RP_LAUNCHER_NODE_NAME + 8)];
    snprintf(nw, sizeof nw, "%d", spec->nranks);
    hosts[0] = '\0';
    for (int i = 0; i < nodes; i++)
        snprintf(hosts + strlen(hosts), sizeof hosts - strlen(hosts), "%s%s:%d", i ? "," : "",
                 m->pool.name[idx[i]], k);
    int nargs = 0, nenv = 0;
    while (spec->argv[nargs]) nargs++;
    char **envp = rp_cluster_env(spec, res);
    while (envp && envp[nenv]) nenv++;
    char **argv = calloc((size_t)(nargs + 2 * nenv + 32), sizeof *argv);
    char *names = calloc((size_t)nenv + 1, 256); /* the -x names */
    rp_status st = RP_OK;
    if (!argv || !envp || !names) st = RP_FAIL(err, RP_ERR_NOMEM, "mpirun: out of memory");
    if (st == RP_OK) {
        int a = 0;
        argv[a++] = m->mpirun;
        if (geteuid() == 0) argv[a++] = "--allow-run-as-root"; /* Open MPI refuses root without it */
        const char *fixed[] = {"-n", nw, "-H", hosts, "--map-by", "slot", "--bind-to", "none"};
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) argv[a++] = (char *)fixed[i];
        for (int i = 0; i < nenv; i++) {
            size_t n = strcspn(envp[i], "=");
            if (!forwarded(envp[i], spec) || n >= 256) continue;
            char *nm = names + (size_t)i * 256;
            snprintf(nm, 256, "%.*s", (int)n, envp[i]);
            argv[a++] = "-x";
            argv[a++] = nm;
        }
        argv[a++] = "/bin/sh";
        argv[a++] = "-c";
        argv[a++] = (char *)RANK_SH;
        argv[a++] = "repro-rank";
        argv[a++] = exe;
        for (int i = 1; i < nargs; i++) argv[a++] = (char *)spec->argv[i];
        argv[a] = NULL;
        rp_cluster_proc p = {.argv = argv, .envp = envp, .log_base = "mpirun", .spec = spec, .res = res};
        st = rp_cluster_run(&p, err);
        if (st == RP_OK) {
            unsigned char failed[RP_LAUNCH_MAX_RANKS] = {0};
            char log[PATH_MAX + 32];
            snprintf(log, sizeof log, "%s/mpirun.err", res->run_dir);
            rp_mpirun_parse_err(log, p.err_at_stop, res, failed);
            rp_mpirun_read_status(res->run_dir, res, failed);
            if (rp_cluster_outcome(&p, &m->pool, idx, k, failed, res) != 0) {
                char tail[2048];
                rp_file_tail(log, 8, tail, sizeof tail);
                st = RP_FAIL(err, RP_ERR_IO, "mpirun on %s %s without naming a failed rank; %s:\n%s", hosts,
                             p.exited ? "exited non-zero" : "was killed by a signal", log, tail);
            } else {
                rp_launch_report(spec, res);
            }
        }
    }
    rp_pool_give(&m->pool, idx, nodes);
    rp_cluster_env_free(envp);
    free(names);
    free(argv);
    return st;
}

static void mpirun_close(rp_launcher *l) {
    mpirun_impl *m = l->impl;
    pthread_mutex_destroy(&m->pool.mu);
    free(m);
    free(l);
}

/* Reads the hostfile: the first word of each line is a host ("host slots=N" and other
 * Open MPI options after it are left to the per-job -H list, which sets the slots). */
static rp_status read_hostfile(const char *path, rp_node_pool *pool, rp_error *err) {
    FILE *f = fopen(path, "r");
    if (!f) return RP_FAIL(err, RP_ERR_IO, "--hostfile %s: cannot read it: %s", path, strerror(errno));
    char line[1024], what[PATH_MAX + 32];
    rp_status st = RP_OK;
    for (int no = 1; st == RP_OK && fgets(line, sizeof line, f); no++) {
        if (!strchr(line, '\n') && !feof(f)) {
            st = RP_FAIL(err, RP_ERR_INVALID, "%s:%d: the line is longer than %zu characters", path, no,
                         sizeof line - 2);
            break;
        }
        line[strcspn(line, "#\r\n")] = '\0';
        char host[256];
        if (sscanf(line, "%255s", host) != 1) continue;
        snprintf(what, sizeof what, "%s:%d", path, no);
        st = rp_pool_add(pool, host, what, err);
    }
    fclose(f);
    if (st == RP_OK && pool->n == 0) st = RP_FAIL(err, RP_ERR_INVALID, "--hostfile %s lists no host", path);
    return st;
}

rp_status rp_launcher_mpirun(const rp_launcher_opts *o, rp_launcher **out, rp_error *err) {
    *out = NULL;
    if (!o->hostfile || !*o->hostfile)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "--launcher mpirun needs --hostfile FILE: the hosts to place cases on, one per line");
    mpirun_impl *m = calloc(1, sizeof *m);
    rp_launcher *l = calloc(1, sizeof *l);
    if (!m || !l) {
        free(m);
        free(l);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&m->pool.mu, NULL);
    *l = (rp_launcher){.name = "mpirun", .kind = RP_LAUNCHER_MPIRUN, .launch = mpirun_launch,
                       .close = mpirun_close, .impl = m};
    rp_status st = rp_cluster_which(o->program ? o->program : "mpirun", "Open MPI: apt-get install openmpi-bin",
                                    m->mpirun, sizeof m->mpirun, err);
    if (st == RP_OK) st = read_hostfile(o->hostfile, &m->pool, err);
    if (st != RP_OK) {
        mpirun_close(l);
        return st;
    }
    l->nodes = m->pool.n;
    *out = l;
    return RP_OK;
}
