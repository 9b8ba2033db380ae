/* launch_cluster.c — what the srun and mpirun launchers share; see launch_cluster.h. */
#include "backends/launch_cluster.h"
#include "engine/clock.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- the node pool ------------------------------------------------------------------- */

rp_status rp_pool_add(rp_node_pool *p, const char *name, const char *what, rp_error *err) {
    if (!name[0]) return RP_FAIL(err, RP_ERR_INVALID, "%s: an empty node name", what);
    if (strlen(name) >= RP_LAUNCHER_NODE_NAME)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: node name '%.80s...' is longer than %d characters", what, name,
                       RP_LAUNCHER_NODE_NAME - 1);
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->name[i], name))
            return RP_FAIL(err, RP_ERR_INVALID, "%s: node '%s' is listed twice (give each host once, with its "
                           "slots)", what, name);
    if (p->n >= RP_LAUNCHER_MAX_NODES)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: more than %d nodes", what, RP_LAUNCHER_MAX_NODES);
    snprintf(p->name[p->n], sizeof p->name[p->n], "%s", name);
    p->busy[p->n++] = 0;
    return RP_OK;
}

rp_status rp_pool_take(rp_node_pool *p, int want, int *idx, rp_error *err) {
    pthread_mutex_lock(&p->mu);
    int got = 0;
    for (int i = 0; i < p->n && got < want; i++)
        if (!p->busy[i]) idx[got++] = i;
    if (got < want) {
        pthread_mutex_unlock(&p->mu);
        return RP_FAIL(err, RP_ERR_INVALID, "launch: %d nodes wanted, %d of %d free", want, got, p->n);
    }
    for (int i = 0; i < want; i++) p->busy[idx[i]] = 1;
    pthread_mutex_unlock(&p->mu);
    return RP_OK;
}

void rp_pool_give(rp_node_pool *p, const int *idx, int n) {
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < n; i++) p->busy[idx[i]] = 0;
    pthread_mutex_unlock(&p->mu);
}

rp_status rp_cluster_layout(const rp_launch_spec *spec, int pool_nodes, const char *who, int *nodes, int *k,
                            rp_error *err) {
    if (spec->nranks < 1 || spec->nranks > RP_LAUNCH_MAX_RANKS)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: %d ranks requested; 1 to %d supported", who, spec->nranks,
                       RP_LAUNCH_MAX_RANKS);
    int n = spec->nodes > 0 ? spec->nodes : 1;
    if (n > spec->nranks)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: %d nodes for %d ranks (at most one node per rank)", who, n,
                       spec->nranks);
    if (n > pool_nodes)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: the job needs %d nodes, the launcher has %d", who, n, pool_nodes);
    if (spec->rank_env)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "%s: per-rank environments are for the local launcher only", who);
    *nodes = n;
    *k = (spec->nranks + n - 1) / n;
    return RP_OK;
}

rp_status rp_cluster_exe(const rp_launch_spec *spec, char *buf, size_t cap, rp_error *err) {
    if (spec->exe) {
        if (spec->exe[0] == '/') {
            if (snprintf(buf, cap, "%s", spec->exe) >= (int)cap)
                return RP_FAIL(err, RP_ERR_INVALID, "launch: program path too long: %s", spec->exe);
        } else if (!realpath(spec->exe, buf)) {
            return RP_FAIL(err, RP_ERR_INVALID, "launch: cannot find %s: %s", spec->exe, strerror(errno));
        }
    } else {
        /* /proc/self/exe means this machine's binary; the nodes need its path */
        ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
        if (n <= 0) return RP_FAIL(err, RP_ERR_IO, "launch: cannot read /proc/self/exe: %s", strerror(errno));
        buf[n] = '\0';
    }
    if (access(buf, X_OK) != 0)
        return RP_FAIL(err, RP_ERR_INVALID, "launch: cannot execute %s: %s", buf, strerror(errno));
    return RP_OK;
}

rp_status rp_cluster_which(const char *name, const char *hint, char *buf, size_t cap, rp_error *err) {
    if (strchr(name, '/')) {
        if (access(name, X_OK) != 0)
            return RP_FAIL(err, RP_ERR_NOT_FOUND, "%s: cannot execute it: %s (%s)", name, strerror(errno), hint);
        snprintf(buf, cap, "%s", name);
        return RP_OK;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (len > 0 && (int)len < (int)cap - 2 &&
            snprintf(buf, cap, "%.*s/%s", (int)len, p, name) < (int)cap && access(buf, X_OK) == 0)
            return RP_OK;
        p += len + (colon ? 1 : 0);
    }
    return RP_FAIL(err, RP_ERR_NOT_FOUND, "%s not found on PATH (%s)", name, hint);
}

/* ---- the environment ----------------------------------------------------------------- */

/* Rank variables of the local launcher and of an mpirun around the sweep: a rank of
 * the new job must not read them. (SLURM_PROCID from an outer srun is overridden by
 * srun itself and outranked by OMPI_* under mpirun: harness/rankenv.h.) */
static const char *const DROP[] = {"REPRO_RANK",          "REPRO_WORLD",          "REPRO_LOCAL_RANK",
                                   "REPRO_STORE_DIR",     "REPRO_RUN_DIR",        "OMPI_COMM_WORLD_RANK",
                                   "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"};

static size_t name_len(const char *kv) {
    const char *eq = strchr(kv, '=');
    return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* Removes entries of envp[0..n) named like kv (keeps the order of the rest). */
static int drop_name(char **envp, int n, const char *kv, size_t len) {
    int w = 0;
    for (int i = 0; i < n; i++)
        if (!(name_len(envp[i]) == len && !strncmp(envp[i], kv, len))) envp[w++] = envp[i];
    return w;
}

char **rp_cluster_env(const rp_launch_spec *spec, const rp_launch_result *res) {
    int n_env = 0, n_spec = 0;
    while (environ[n_env]) n_env++;
    while (spec->env && spec->env[n_spec]) n_spec++;
    /* the array, then two owned strings at its end */
    size_t ns = strlen(res->store_dir) + 32, nr = strlen(res->run_dir) + 32;
    char **envp = malloc((size_t)(n_env + n_spec + 3) * sizeof *envp + ns + nr);
    if (!envp) return NULL;
    char *store = (char *)(envp + n_env + n_spec + 3), *run = store + ns;
    snprintf(store, ns, "REPRO_STORE_DIR=%s", res->store_dir);
    snprintf(run, nr, "REPRO_RUN_DIR=%s", res->run_dir);
    int n = 0;
    for (int i = 0; i < n_env; i++) {
        int keep = 1;
        for (size_t d = 0; d < sizeof DROP / sizeof DROP[0]; d++)
            if (name_len(environ[i]) == strlen(DROP[d]) && !strncmp(environ[i], DROP[d], strlen(DROP[d]))) keep = 0;
        if (keep) envp[n++] = environ[i];
    }
    for (int i = 0; i < n_spec; i++) {
        n = drop_name(envp, n, spec->env[i], name_len(spec->env[i]));
        envp[n++] = (char *)spec->env[i];
    }
    envp[n++] = store;
    envp[n++] = run;
    envp[n] = NULL;
    return envp;
}

void rp_cluster_env_free(char **envp) { free(envp); }

/* ---- the launcher process ------------------------------------------------------------ */

static rp_status open_log(const char *run_dir, const char *base, const char *ext, int *fd, rp_error *err) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s.%s", run_dir, base, ext);
    *fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (*fd < 0) return RP_FAIL(err, RP_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    return RP_OK;
}

rp_status rp_cluster_run(rp_cluster_proc *p, rp_error *err) {
    const rp_launch_spec *spec = p->spec;
    p->exited = p->code = p->sig = p->hit_deadline = p->cancelled = 0;
    p->err_at_stop = -1;
    struct sigaction sa;
    sigaction(SIGCHLD, NULL, &sa);
    if (sa.sa_handler == SIG_IGN || (sa.sa_flags & SA_NOCLDWAIT))
        return RP_FAIL(err, RP_ERR_INVALID, "launch: SIGCHLD is ignored in this process, so exit statuses would be lost");
    int out_fd = -1, err_fd = -1, in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in_fd < 0) return RP_FAIL(err, RP_ERR_IO, "cannot open /dev/null: %s", strerror(errno));
    rp_status st = open_log(p->res->run_dir, p->log_base, "out", &out_fd, err);
    if (st == RP_OK) st = open_log(p->res->run_dir, p->log_base, "err", &err_fd, err);
    if (st != RP_OK) {
        close(in_fd);
        if (out_fd >= 0) close(out_fd);
        return st;
    }
    const pid_t parent = getpid();
    const double t0 = rp_now_s();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fork();
    if (pid == 0) {
        /* async-signal-safe calls only until exec */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        dup2(in_fd, 0);
        dup2(out_fd, 1);
        dup2(err_fd, 2);
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (int s = 1; s < NSIG; s++) sigaction(s, &dfl, NULL);
        sigset_t none;
        sigemptyset(&none);
        pthread_sigmask(SIG_SETMASK, &none, NULL);
        execve(p->argv[0], p->argv, p->envp);
        _exit(127);
    }
    int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(in_fd);
    close(out_fd);
    close(err_fd);
    if (pid < 0) return RP_FAIL(err, RP_ERR_IO, "launch: fork for %s failed: %s", p->argv[0], strerror(fork_errno));
    setpgid(pid, pid);
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    const double deadline = spec->timeout_s > 0 ? t0 + spec->timeout_s : 0;
    const double grace = spec->grace_s > 0 ? spec->grace_s : 2.0;
    double kill_at = 0;
    int stopping = 0, killed = 0;
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) break;
        struct pollfd fds[2];
        int nfds = 0, cslot = -1;
        if (pidfd >= 0) fds[nfds++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
        if (!stopping && spec->cancel_fd >= 0) {
            cslot = nfds;
            fds[nfds++] = (struct pollfd){.fd = spec->cancel_fd, .events = POLLIN};
        }
        double until = stopping ? (killed ? 0 : kill_at) : deadline;
        int timeout = -1;
        if (until > 0) {
            double d = (until - rp_now_s()) * 1000.0;
            timeout = d <= 0 ? 0 : (int)d + 1;
        }
        if (pidfd < 0 && (timeout < 0 || timeout > 20)) timeout = 20;
        int pr = poll(fds, (nfds_t)nfds, timeout);
        int cancel = cslot >= 0 && pr > 0 && (fds[cslot].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL));
        int late = !stopping && deadline > 0 && rp_now_s() >= deadline;
        if (!stopping && (cancel || late)) {
            if (cancel) p->cancelled = 1;
            else p->hit_deadline = 1;
            stopping = 1;
            char log[PATH_MAX + 64];
            struct stat sb;
            snprintf(log, sizeof log, "%s/%s.err", p->res->run_dir, p->log_base);
            p->err_at_stop = stat(log, &sb) == 0 ? (long)sb.st_size : 0;
            if (p->stop) p->stop(p->stop_ctx);
            kill(-pid, SIGTERM);
            kill_at = rp_now_s() + grace;
        } else if (stopping && !killed && rp_now_s() >= kill_at) {
            kill(-pid, SIGKILL);
            killed = 1;
        }
    }
    /* the launcher is a zombie now (waitid WNOWAIT), so its pid, the group id, is still
     * ours: anything it left in its group goes before the reap frees the id */
    kill(-pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (pidfd >= 0) close(pidfd);
    p->wall_s = rp_now_s() - t0;
    if (WIFEXITED(status)) {
        p->exited = 1;
        p->code = WEXITSTATUS(status);
    } else {
        p->sig = WTERMSIG(status);
    }
    return RP_OK;
}

/* ---- the outcome --------------------------------------------------------------------- */

int rp_cluster_signal_from_text(const char *text) {
    for (int s = 1; s < NSIG; s++) {
        const char *d = strsignal(s);
        if (d && *d && !strncmp(text, d, strlen(d))) {
            /* "Real-time signal 1" vs "Real-time signal 10": the whole number must match */
            char c = text[strlen(d)];
            if (c >= '0' && c <= '9') continue;
            return s;
        }
    }
    return 0;
}

int rp_cluster_outcome(const rp_cluster_proc *p, const rp_node_pool *pool, const int *idx, int k,
                       const unsigned char *failed, rp_launch_result *res) {
    res->wall_s = p->wall_s;
    res->first_failed = -1;
    for (int r = 0; r < res->nranks; r++) {
        snprintf(res->ranks[r].node, sizeof res->ranks[r].node, "%s", pool->name[idx[r / k]]);
        res->ranks[r].wall_s = p->wall_s;
    }
    if (p->hit_deadline || p->cancelled) {
        res->status = p->hit_deadline ? RP_LAUNCH_HANG : RP_LAUNCH_CANCELLED;
        for (int r = 0; r < res->nranks; r++) {
            if (failed[r] == 1) continue; /* ended on its own, before the launcher stopped the job */
            res->ranks[r].exited = 0;
            res->ranks[r].term_signal = SIGKILL;
            res->ranks[r].killed_by_launcher = 1;
            res->ranks[r].running_at_deadline = p->hit_deadline;
        }
        return 0;
    }
    /* the ranks that failed on their own first; those the launcher killed only without them */
    int best = -1, best_cause = 0;
    for (int pass = 1; pass <= 2 && best < 0; pass++)
        for (int r = 0; r < res->nranks; r++) {
            if (failed[r] != pass) continue;
            int c = rp_launch_cause(&res->ranks[r]);
            if (c > best_cause) best = r, best_cause = c;
        }
    if (best < 0) {
        if (p->exited && p->code == 0) {
            res->status = RP_LAUNCH_OK;
            for (int r = 0; r < res->nranks; r++) res->ranks[r].exited = 1;
            return 0;
        }
        return -1;
    }
    for (int r = 0; r < res->nranks; r++)
        if (!failed[r]) {
            res->ranks[r].exited = 0;
            res->ranks[r].term_signal = SIGKILL;
            res->ranks[r].killed_by_launcher = 1;
        }
    const rp_rank_result *rr = &res->ranks[best];
    res->first_failed = best;
    if (rr->exited && (rr->exit_code == RP_WORKER_EXIT_USAGE || rr->exit_code == RP_WORKER_EXIT_CONFIG))
        res->status = RP_LAUNCH_CONFIG;
    else if (rr->exited && rr->exit_code == RP_WORKER_EXIT_COMM_TIMEOUT)
        res->status = RP_LAUNCH_COMM_TIMEOUT;
    else
        res->status = RP_LAUNCH_CRASH;
    return 0;
}
