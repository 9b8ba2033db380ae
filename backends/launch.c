/* launch.c — the local launcher; see launch.h for the contract.
 *
 * Shape of rp_launch: prepare everything that allocates or can fail (run dir,
 * rendezvous dir, output files, each rank's environment) before the first
 * fork, because between fork and exec a child may only make async-signal-safe
 * calls. Then fork all ranks into one process group, watch them with
 * waitid(WNOWAIT) — observing exits without reaping, so every pid, and rank 0's
 * pid as the group id, stays reserved until the final group SIGKILL — and
 * reap everything at the end. */
#include "engine/clock.h"
#include "engine/strutil.h"
#include "backends/launch.h"
#include "backends/comm_watch.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* How often ranks without a pidfd are checked (old kernels, or no_pidfd). */
#define POLL_FALLBACK_MS 20
/* how often the deadlock watch reads the ranks' state files */
#define DEADLOCK_POLL_MS 250

/* ---- signal names ------------------------------------------------------ */

static const struct { int sig; const char *name; } SIGNALS[] = {
    {SIGHUP, "HUP"},   {SIGINT, "INT"},     {SIGQUIT, "QUIT"}, {SIGILL, "ILL"},   {SIGTRAP, "TRAP"},
    {SIGABRT, "ABRT"}, {SIGBUS, "BUS"},     {SIGFPE, "FPE"},   {SIGKILL, "KILL"}, {SIGUSR1, "USR1"},
    {SIGSEGV, "SEGV"}, {SIGUSR2, "USR2"},   {SIGPIPE, "PIPE"}, {SIGALRM, "ALRM"}, {SIGTERM, "TERM"},
    {SIGCHLD, "CHLD"}, {SIGCONT, "CONT"},   {SIGSTOP, "STOP"}, {SIGTSTP, "TSTP"}, {SIGTTIN, "TTIN"},
    {SIGTTOU, "TTOU"}, {SIGURG, "URG"},     {SIGXCPU, "XCPU"}, {SIGXFSZ, "XFSZ"}, {SIGVTALRM, "VTALRM"},
    {SIGPROF, "PROF"}, {SIGWINCH, "WINCH"}, {SIGIO, "IO"},     {SIGPWR, "PWR"},   {SIGSYS, "SYS"},
};

const char *rp_signal_name(int sig, char *buf, size_t cap) {
    assert(buf && cap >= 16);
    for (size_t i = 0; i < sizeof SIGNALS / sizeof SIGNALS[0]; i++)
        if (SIGNALS[i].sig == sig) {
            snprintf(buf, cap, "SIG%s", SIGNALS[i].name);
            return buf;
        }
    snprintf(buf, cap, "SIG%d", sig);
    return buf;
}

rp_status rp_signal_parse(const char *s, int *sig, rp_error *err) {
    const char *name = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
    for (size_t i = 0; i < sizeof SIGNALS / sizeof SIGNALS[0]; i++)
        if (strcasecmp(name, SIGNALS[i].name) == 0) {
            *sig = SIGNALS[i].sig;
            return RP_OK;
        }
    char *end;
    long v = strtol(s, &end, 10);
    if (s[0] >= '0' && s[0] <= '9' && !*end && v > 0 && v < NSIG) {
        *sig = (int)v;
        return RP_OK;
    }
    return RP_FAIL(err, RP_ERR_INVALID, "unknown signal '%s' (use a name like KILL, SEGV, ABRT or a number)", s);
}

const char *rp_launch_status_name(rp_launch_status s) {
    switch (s) {
    case RP_LAUNCH_OK: return "ok";
    case RP_LAUNCH_CRASH: return "crash";
    case RP_LAUNCH_CONFIG: return "config-error";
    case RP_LAUNCH_COMM_TIMEOUT: return "comm-timeout";
    case RP_LAUNCH_HANG: return "hang";
    case RP_LAUNCH_CANCELLED: return "cancelled";
    case RP_LAUNCH_DEADLOCK: return "deadlock";
    }
    return "unknown";
}

/* What a worker exit code means, for reports. */
static const char *exit_meaning(int code) {
    switch (code) {
    case RP_WORKER_EXIT_OK: return "";
    case RP_WORKER_EXIT_USAGE: return " (usage error)";
    case RP_WORKER_EXIT_CONFIG: return " (configuration error)";
    case RP_WORKER_EXIT_COMM_TIMEOUT: return " (communication timeout: a peer died or never joined)";
    case 127: return " (could not exec the rank program)";
    default: return "";
    }
}

void rp_launch_describe_rank(const rp_rank_result *r, char *buf, size_t cap) {
    char sb[32];
    if (r->status_lost)
        snprintf(buf, cap, "exit status lost (reaped by another part of the process) after %.2f s", r->wall_s);
    else if (r->exited)
        snprintf(buf, cap, "exit %d%s after %.2f s", r->exit_code, exit_meaning(r->exit_code), r->wall_s);
    else if (r->killed_by_launcher && (r->term_signal == SIGTERM || r->term_signal == SIGKILL))
        snprintf(buf, cap, "%s from the launcher after %.2f s", rp_signal_name(r->term_signal, sb, sizeof sb),
                 r->wall_s);
    else
        snprintf(buf, cap, "killed by %s after %.2f s", rp_signal_name(r->term_signal, sb, sizeof sb), r->wall_s);
}

/* ---- small file helpers -------------------------------------------------- */

int rp_file_tail(const char *path, int lines, char *buf, size_t cap) {
    assert(buf && cap > 0);
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    /* The tail is within the last few KB unless lines are huge; reading at
     * most cap-1 bytes from the end bounds the work for a rank that logged GBs. */
    size_t want = cap - 1;
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return 0; }
    long size = ftell(f);
    long from = size > (long)want ? size - (long)want : 0;
    fseek(f, from, SEEK_SET);
    size_t n = fread(buf, 1, want, f);
    fclose(f);
    buf[n] = '\0';
    /* Walk back from the end over `lines` newlines (a final newline ends the
     * last line rather than starting an empty one). */
    size_t end = n;
    if (end > 0 && buf[end - 1] == '\n') end--;
    if (end == 0) { buf[0] = '\0'; return 0; }
    int count = 1;
    size_t start = end;
    while (start > 0) {
        if (buf[start - 1] == '\n') {
            if (count == lines) break;
            count++;
        }
        start--;
    }
    memmove(buf, buf + start, n - start + 1);
    return count;
}

/* mkdir -p for the run dir. */
static rp_status make_dirs(const char *path, rp_error *err) {
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return RP_FAIL(err, RP_ERR_INVALID, "run dir path too long: %s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return RP_FAIL(err, RP_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return RP_FAIL(err, RP_ERR_IO, "cannot create run dir %s: %s", tmp, strerror(errno));
    struct stat st;
    if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode))
        return RP_FAIL(err, RP_ERR_IO, "run dir %s is not a directory", tmp);
    return RP_OK;
}

/* ---- per-rank preparation ------------------------------------------------ */

enum { N_REPRO_VARS = 6 };

/* Everything one rank needs at exec time, built before fork. Owns envp (the
 * array; its strings point into environ, the spec, or vars). */
typedef struct rank_proc {
    char **envp;
    char vars[N_REPRO_VARS][PATH_MAX + 32];
    int out_fd, err_fd;
    int pidfd;
    pid_t pid;
    int running;
    char state_path[PATH_MAX + 32]; /* <run dir>/rank<r>.comm (comm_watch.h) */
    uint64_t seen_calls;            /* the deadlock watch: the counter last read */
    double seen_at;                 /* when it last moved or was even */
} rank_proc;

static size_t name_len(const char *kv) {
    const char *eq = strchr(kv, '=');
    return eq ? (size_t)(eq - kv) : strlen(kv);
}

static rp_status check_env_list(const char *const *list, const char *what, rp_error *err) {
    for (const char *const *e = list; e && *e; e++)
        if (!strchr(*e, '=') || (*e)[0] == '=')
            return RP_FAIL(err, RP_ERR_INVALID, "%s entry '%s' is not NAME=value", what, *e);
    return RP_OK;
}

/* envp = inherited environ, then spec->env, then rank_env, then our REPRO_*
 * variables, keeping only the last entry for each name. */
static rp_status build_env(rank_proc *p, const rp_launch_spec *spec, int rank, const char *run_dir,
                           const char *store_dir, rp_error *err) {
    snprintf(p->vars[0], sizeof p->vars[0], "REPRO_RANK=%d", rank);
    snprintf(p->vars[1], sizeof p->vars[1], "REPRO_WORLD=%d", spec->nranks);
    snprintf(p->vars[2], sizeof p->vars[2], "REPRO_LOCAL_RANK=%d", rank);
    snprintf(p->vars[3], sizeof p->vars[3], "REPRO_STORE_DIR=%s", store_dir);
    snprintf(p->vars[4], sizeof p->vars[4], "REPRO_RUN_DIR=%s", run_dir);
    snprintf(p->vars[5], sizeof p->vars[5], "REPRO_COMM_STATE_DIR=%s", run_dir);
    const char *const *rank_env = spec->rank_env ? spec->rank_env[rank] : NULL;
    size_t n = 0;
    for (char **e = environ; e && *e; e++) n++;
    for (const char *const *e = spec->env; e && *e; e++) n++;
    for (const char *const *e = rank_env; e && *e; e++) n++;
    n += N_REPRO_VARS;
    const char **all = malloc(n * sizeof *all);
    p->envp = malloc((n + 1) * sizeof *p->envp);
    if (!all || !p->envp) {
        free(all);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory building the environment of rank %d", rank);
    }
    size_t k = 0;
    for (char **e = environ; e && *e; e++) all[k++] = *e;
    for (const char *const *e = spec->env; e && *e; e++) all[k++] = *e;
    for (const char *const *e = rank_env; e && *e; e++) all[k++] = *e;
    for (int i = 0; i < N_REPRO_VARS; i++) all[k++] = p->vars[i];
    assert(k == n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = name_len(all[i]);
        int overridden = 0;
        for (size_t j = i + 1; j < n && !overridden; j++)
            overridden = name_len(all[j]) == len && strncmp(all[i], all[j], len) == 0;
        if (!overridden) p->envp[m++] = (char *)all[i];
    }
    p->envp[m] = NULL;
    free(all);
    return RP_OK;
}

/* Moves a fresh descriptor to >= 3. When the caller runs with 0, 1 or 2
 * closed, open() hands those out, and the child's dup2 onto 0/1/2 would then
 * overwrite one of its own sources. Returns -1 (errno set) on failure. */
static int high_fd(int fd) {
    if (fd < 0 || fd > 2) return fd;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return hi;
}

static rp_status open_output(const char *run_dir, int rank, const char *ext, int *fd, rp_error *err) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/rank%d.%s", run_dir, rank, ext);
    *fd = high_fd(open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (*fd < 0) return RP_FAIL(err, RP_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    return RP_OK;
}

/* ---- the child between fork and exec: async-signal-safe calls only -------- */

static void child_write(const char *s) {
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

static void child_fail(const char *what, int e) {
    char num[16];
    int i = (int)sizeof num - 1;
    num[i] = '\0';
    do num[--i] = (char)('0' + e % 10); while ((e /= 10) && i > 0);
    child_write("repro launch: rank setup failed: ");
    child_write(what);
    child_write(" (errno ");
    child_write(num + i);
    child_write(")\n");
    _exit(127);
}

/* Copies fd (>= 3, see high_fd) onto target; dup2 clears O_CLOEXEC on the copy. */
static void child_dup(int fd, int target) {
    assert(fd > 2);
    if (dup2(fd, target) < 0) child_fail("dup2", errno);
}

static void child_exec(const char *exe, char *const argv[], char *const envp[], pid_t pgid, pid_t parent,
                       int in_fd, int out_fd, int err_fd) {
    /* All signals are blocked here (rp_launch blocks them around fork).
     * Until exec this child still has the caller's handlers, and one of them
     * running here — say a test framework's SIGTERM handler that kills its
     * own process group — would act as the caller. So: handlers back to
     * default first (as posix_spawn does), then unblock; a signal that came
     * meanwhile gets its default action. Ignored SIGTERM/INT/... go back to
     * default too: ignored dispositions survive exec, and a rank ignoring
     * SIGTERM would only die at the SIGKILL. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction cur;
        if (sigaction(sig, NULL, &cur) == 0 && cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN)
            sigaction(sig, &dfl, NULL);
    }
    const int reset[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++) sigaction(reset[i], &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setpgid(0, pgid) != 0) child_fail("setpgid", errno);
    /* Die with the launcher; the getppid check closes the race where the
     * launcher died before prctl ran. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail("prctl", errno);
    if (getppid() != parent) _exit(127);
    child_dup(in_fd, 0);
    child_dup(out_fd, 1);
    child_dup(err_fd, 2);
    close_range(3, ~0U, 0); /* no stray descriptors (pipes!) held open by ranks */
    execve(exe, argv, envp);
    child_fail("execve", errno);
}

/* ---- watching --------------------------------------------------------- */

typedef struct watch {
    const rp_launch_spec *spec;
    rank_proc *procs;
    rp_launch_result *res;
    pid_t pgid;
    double t0;
    int terminating;     /* SIGTERM sent to the group */
    int killed;          /* SIGKILL sent to the group */
    double kill_at;      /* when SIGTERM turns into SIGKILL */
} watch;

static int any_running(const watch *w) {
    for (int r = 0; r < w->spec->nranks; r++)
        if (w->procs[r].running) return 1;
    return 0;
}

/* sig to the whole group, and to each unreaped rank by pid too, in case a
 * rank moved itself to another group (its pid cannot have been reused). */
static void signal_all(watch *w, int sig) {
    assert(w->pgid > 0); /* kill(-0) would signal the launcher's own group */
    kill(-w->pgid, sig);
    for (int r = 0; r < w->spec->nranks; r++)
        if (w->procs[r].running) kill(w->procs[r].pid, sig);
}

/* SIGTERM to everything, noting who was still running. */
static void start_kill(watch *w) {
    if (w->terminating) return;
    w->terminating = 1;
    double grace = w->spec->grace_s > 0 ? w->spec->grace_s : 2.0;
    w->kill_at = rp_now_s() + grace;
    for (int r = 0; r < w->spec->nranks; r++)
        if (w->procs[r].running) w->res->ranks[r].killed_by_launcher = 1;
    signal_all(w, SIGTERM);
}

/* Records rank r's end from waitid's info (NULL: the status was lost). */
static void record_exit(watch *w, int r, const siginfo_t *si) {
    rp_rank_result *rr = &w->res->ranks[r];
    rr->wall_s = rp_now_s() - w->t0;
    if (!si) {
        rr->status_lost = 1;
    } else if (si->si_code == CLD_EXITED) {
        rr->exited = 1;
        rr->exit_code = si->si_status;
    } else {
        rr->exited = 0;
        rr->term_signal = si->si_status;
    }
    rank_proc *p = &w->procs[r];
    p->running = 0;
    if (p->pidfd >= 0) close(p->pidfd);
    p->pidfd = -1;
}

/* How likely a failed rank is the cause rather than a consequence, for
 * ranks found dead in the same sweep: a rank killed by a signal usually makes
 * its peers fail with a communication error (1) a moment later, and a timeout
 * (4) is the most derivative of all. 0 = not failed. */
int rp_launch_cause(const rp_rank_result *rr) {
    if (rr->status_lost) return 2;
    if (!rr->exited) return 5;
    switch (rr->exit_code) {
    case 0: return 0;
    case RP_WORKER_EXIT_COMM_TIMEOUT: return 1;
    case RP_WORKER_EXIT_FAIL: return 3;
    default: return 4; /* usage, config, exec failure, anything the rank chose */
    }
}

/* Checks every running rank without blocking or reaping; on the first
 * failure, names the rank that caused it and starts killing the rest. */
static void check_ranks(watch *w) {
    int best = -1, best_cause = 0;
    for (int r = 0; r < w->spec->nranks; r++) {
        if (!w->procs[r].running) continue;
        siginfo_t si;
        memset(&si, 0, sizeof si);
        int rc;
        do rc = waitid(P_PID, (id_t)w->procs[r].pid, &si, WEXITED | WNOHANG | WNOWAIT);
        while (rc != 0 && errno == EINTR);
        if (rc == 0 && si.si_pid == w->procs[r].pid)
            record_exit(w, r, &si);
        else if (rc == 0)
            continue; /* still running */
        else
            /* ECHILD: someone else reaped it — a SIGCHLD handler of the host
             * process calling waitpid(-1). Its status is gone; count it as
             * failed rather than wait for it forever. */
            record_exit(w, r, NULL);
        int cause = rp_launch_cause(&w->res->ranks[r]);
        if (cause > best_cause) best = r, best_cause = cause;
    }
    if (best < 0 || w->terminating || w->res->status != RP_LAUNCH_OK) return;
    const rp_rank_result *rr = &w->res->ranks[best];
    w->res->first_failed = best;
    if (rr->exited && (rr->exit_code == RP_WORKER_EXIT_USAGE || rr->exit_code == RP_WORKER_EXIT_CONFIG))
        w->res->status = RP_LAUNCH_CONFIG;
    else if (rr->exited && rr->exit_code == RP_WORKER_EXIT_COMM_TIMEOUT)
        w->res->status = RP_LAUNCH_COMM_TIMEOUT;
    else
        w->res->status = RP_LAUNCH_CRASH;
    start_kill(w);
}

/* Milliseconds until t (rounded up, so we never spin just before it). */
static int ms_until(double t) {
    double d = (t - rp_now_s()) * 1000.0;
    if (d <= 0) return 0;
    return d > 1e9 ? 1000000000 : (int)d + 1;
}

/* The deadlock watch (comm_watch.h): 1 when every running rank's counter is odd (inside
 * a call) and has not moved for window seconds. A rank with no state file yet is
 * computing (loading, or not using a communicator at all). */
static int deadlocked(watch *w, double window) {
    const double now = rp_now_s();
    int all_stuck = 1, running = 0;
    for (int r = 0; r < w->spec->nranks; r++) {
        rank_proc *p = &w->procs[r];
        if (!p->running) continue;
        running++;
        rp_comm_state st = {0};
        const uint64_t calls = rp_comm_state_read(p->state_path, &st) ? st.calls : 0;
        if (calls % 2 == 0 || calls != p->seen_calls) {
            p->seen_calls = calls;
            p->seen_at = now;
            all_stuck = 0;
        } else if (now - p->seen_at < window) {
            all_stuck = 0;
        }
    }
    return running > 0 && all_stuck;
}

static void watch_loop(watch *w) {
    const rp_launch_spec *spec = w->spec;
    const double deadline = spec->timeout_s > 0 ? w->t0 + spec->timeout_s : 0;
    const double window = spec->deadlock_s < 0 ? 0 : spec->deadlock_s > 0 ? spec->deadlock_s : RP_LAUNCH_DEADLOCK_S;
    struct pollfd fds[RP_LAUNCH_MAX_RANKS + 1];
    check_ranks(w);
    while (any_running(w)) {
        int nfds = 0, fallback = 0;
        for (int r = 0; r < spec->nranks; r++) {
            if (!w->procs[r].running) continue;
            if (w->procs[r].pidfd >= 0)
                fds[nfds++] = (struct pollfd){.fd = w->procs[r].pidfd, .events = POLLIN};
            else
                fallback = 1;
        }
        int cancel_slot = -1;
        if (!w->terminating && spec->cancel_fd >= 0) {
            cancel_slot = nfds;
            fds[nfds++] = (struct pollfd){.fd = spec->cancel_fd, .events = POLLIN};
        }
        int timeout = -1;
        if (!w->terminating && deadline > 0) timeout = ms_until(deadline);
        if (w->terminating && !w->killed) timeout = ms_until(w->kill_at);
        if (fallback && (timeout < 0 || timeout > POLL_FALLBACK_MS)) timeout = POLL_FALLBACK_MS;
        if (window > 0 && !w->terminating && (timeout < 0 || timeout > DEADLOCK_POLL_MS)) timeout = DEADLOCK_POLL_MS;
        int pr = poll(fds, (nfds_t)nfds, timeout);
        check_ranks(w);
        if (!w->terminating && cancel_slot >= 0 && pr > 0 &&
            (fds[cancel_slot].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) {
            w->res->status = RP_LAUNCH_CANCELLED;
            start_kill(w);
        }
        if (!w->terminating && window > 0 && deadlocked(w, window)) {
            w->res->status = RP_LAUNCH_DEADLOCK;
            start_kill(w);
        }
        if (!w->terminating && deadline > 0 && rp_now_s() >= deadline && any_running(w)) {
            w->res->status = RP_LAUNCH_HANG;
            for (int r = 0; r < spec->nranks; r++)
                if (w->procs[r].running) w->res->ranks[r].running_at_deadline = 1;
            start_kill(w);
        }
        if (w->terminating && !w->killed && rp_now_s() >= w->kill_at) {
            signal_all(w, SIGKILL);
            w->killed = 1;
        }
    }
}

/* Final sweep and reap. Every rank is a zombie here (or never started), so
 * rank 0's pid, the group id, cannot have been reused: the SIGKILL reaches
 * only grandchildren our ranks left in the group. */
static void reap_all(rank_proc *procs, int started, pid_t pgid) {
    assert(started == 0 || pgid > 0);
    if (started > 0) kill(-pgid, SIGKILL);
    for (int r = 0; r < started; r++) {
        while (waitpid(procs[r].pid, NULL, 0) < 0 && errno == EINTR) {}
        if (procs[r].pidfd >= 0) close(procs[r].pidfd);
        procs[r].pidfd = -1;
    }
}

/* ---- the report -------------------------------------------------------- */


static void append_tail(rp_launch_result *res, int r, int lines) {
    char path[PATH_MAX + 32], tail[4096];
    snprintf(path, sizeof path, "%s/rank%d.err", res->run_dir, r);
    int n = rp_file_tail(path, lines, tail, sizeof tail);
    if (n == 0) {
        rp_appendf(res->report, sizeof res->report, "--- rank %d stderr (%s): empty ---\n", r, path);
        return;
    }
    rp_appendf(res->report, sizeof res->report, "--- rank %d stderr (last %d lines of %s) ---\n%s", r, n, path, tail);
    if (tail[strlen(tail) - 1] != '\n') rp_appendf(res->report, sizeof res->report, "\n");
    rp_appendf(res->report, sizeof res->report, "---\n");
}

/* Appends ", ranks 1, 2" style lists of ranks with flag set; returns the count. */
static int append_ranks(rp_launch_result *res, int which) {
    int n = 0;
    for (int r = 0; r < res->nranks; r++) {
        int set = which == 0 ? res->ranks[r].killed_by_launcher : res->ranks[r].running_at_deadline;
        if (r == res->first_failed || !set) continue;
        rp_appendf(res->report, sizeof res->report, "%s%d", n ? ", " : "", r);
        if (res->ranks[r].node[0]) rp_appendf(res->report, sizeof res->report, " (node %s)", res->ranks[r].node);
        n++;
    }
    return n;
}

void rp_launch_report(const rp_launch_spec *spec, rp_launch_result *res) {
    char d[256];
    res->report[0] = '\0';
    switch (res->status) {
    case RP_LAUNCH_OK: return;
    case RP_LAUNCH_CRASH:
    case RP_LAUNCH_CONFIG:
    case RP_LAUNCH_COMM_TIMEOUT: {
        int f = res->first_failed;
        assert(f >= 0 && f < res->nranks);
        rp_launch_describe_rank(&res->ranks[f], d, sizeof d);
        rp_appendf(res->report, sizeof res->report, "%s: rank %d of %d%s%s%s failed first: %s\n",
               rp_launch_status_name(res->status), f, res->nranks, res->ranks[f].node[0] ? " (node " : "",
               res->ranks[f].node, res->ranks[f].node[0] ? ")" : "", d);
        rp_appendf(res->report, sizeof res->report, "still running then, killed by the launcher: ");
        if (!append_ranks(res, 0)) rp_appendf(res->report, sizeof res->report, "none");
        rp_appendf(res->report, sizeof res->report, "\n");
        append_tail(res, f, RP_LAUNCH_TAIL_LINES);
        return;
    }
    case RP_LAUNCH_DEADLOCK: {
        /* One line (the runner's reason is the first line): what the waits say about each
         * other, then each rank's wait. The state files outlive the ranks. */
        rp_comm_state st[RP_LAUNCH_MAX_RANKS];
        int have[RP_LAUNCH_MAX_RANKS], common = -1;
        for (int r = 0; r < res->nranks; r++) {
            char path[PATH_MAX + 32];
            rp_comm_state_path(res->run_dir, r, path, sizeof path);
            /* a rank that had ended before is not part of the wait */
            have[r] = res->ranks[r].killed_by_launcher && rp_comm_state_read(path, &st[r]);
        }
        rp_appendf(res->report, sizeof res->report,
                   "deadlock: every running rank sat inside a communicator call that no rank completed, for %.1f s",
                   spec->deadlock_s > 0 ? spec->deadlock_s : RP_LAUNCH_DEADLOCK_S);
        char why[2048] = "";
        if (rp_comm_state_explain(st, have, res->nranks, why, sizeof why, &common) > 0) {
            if (common >= 0) rp_appendf(res->report, sizeof res->report, "; rank %d disagrees with its peers", common);
            rp_appendf(res->report, sizeof res->report, " (%s)", why);
        }
        rp_appendf(res->report, sizeof res->report, ":");
        for (int r = 0, k = 0; r < res->nranks; r++)
            if (res->ranks[r].killed_by_launcher)
                rp_appendf(res->report, sizeof res->report, "%s rank %d in %s", k++ ? ";" : "", r,
                           have[r] ? st[r].what : "(no state: not inside a call)");
        rp_appendf(res->report, sizeof res->report, "\n");
        return;
    }
    case RP_LAUNCH_HANG:
    case RP_LAUNCH_CANCELLED:
        if (res->status == RP_LAUNCH_HANG)
            rp_appendf(res->report, sizeof res->report, "hang: the %.1f s deadline passed with ranks ",
                   spec->timeout_s);
        else
            rp_appendf(res->report, sizeof res->report, "cancelled: ranks ");
        if (!append_ranks(res, res->status == RP_LAUNCH_HANG ? 1 : 0))
            rp_appendf(res->report, sizeof res->report, "(none)");
        /* a cluster launcher (ranks with nodes) stops a step or an mpirun, not a local group */
        rp_appendf(res->report, sizeof res->report, " still running; %s\n",
               res->nranks > 0 && res->ranks[0].node[0] ? "the job was cancelled" : "the process group was killed");
        /* A few lines from each stuck rank: where it was when time ran out. */
        for (int r = 0; r < res->nranks; r++)
            if (res->status == RP_LAUNCH_HANG ? res->ranks[r].running_at_deadline : res->ranks[r].killed_by_launcher)
                append_tail(res, r, 5);
        return;
    }
}

/* ---- rp_launch --------------------------------------------------------- */

static rp_status check_spec(const rp_launch_spec *spec, const char *exe, rp_error *err) {
    if (spec->nranks < 1 || spec->nranks > RP_LAUNCH_MAX_RANKS)
        return RP_FAIL(err, RP_ERR_INVALID, "launch: %d ranks requested; 1 to %d supported", spec->nranks,
                       RP_LAUNCH_MAX_RANKS);
    if (!spec->argv || !spec->argv[0]) return RP_FAIL(err, RP_ERR_INVALID, "launch: empty command line");
    if (access(exe, X_OK) != 0)
        return RP_FAIL(err, RP_ERR_INVALID, "launch: cannot execute %s: %s", exe, strerror(errno));
    RP_TRY(check_env_list(spec->env, "launch env", err));
    for (int r = 0; spec->rank_env && r < spec->nranks; r++)
        RP_TRY(check_env_list(spec->rank_env[r], "launch rank env", err));
    if (spec->cancel_fd >= 0 && fcntl(spec->cancel_fd, F_GETFD) < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "launch: cancel fd %d is not open", spec->cancel_fd);
    struct sigaction sa;
    sigaction(SIGCHLD, NULL, &sa);
    if (sa.sa_handler == SIG_IGN || (sa.sa_flags & SA_NOCLDWAIT))
        return RP_FAIL(err, RP_ERR_INVALID,
                       "launch: SIGCHLD is ignored in this process, so rank exit statuses would be lost");
    return RP_OK;
}

rp_status rp_launch_dirs(const rp_launch_spec *spec, rp_launch_result *res, rp_error *err) {
    if (spec->run_dir) {
        if (snprintf(res->run_dir, sizeof res->run_dir, "%s", spec->run_dir) >= (int)sizeof res->run_dir)
            return RP_FAIL(err, RP_ERR_INVALID, "run dir path too long: %s", spec->run_dir);
        RP_TRY(make_dirs(res->run_dir, err));
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(res->run_dir, sizeof res->run_dir, "%s/repro-launch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(res->run_dir))
            return RP_FAIL(err, RP_ERR_IO, "cannot create a run dir %s: %s", res->run_dir, strerror(errno));
    }
    if (snprintf(res->store_dir, sizeof res->store_dir, "%s/rendezvous-XXXXXX", res->run_dir) >=
        (int)sizeof res->store_dir)
        return RP_FAIL(err, RP_ERR_INVALID, "run dir path too long: %s", res->run_dir);
    if (!mkdtemp(res->store_dir))
        return RP_FAIL(err, RP_ERR_IO, "cannot create the rendezvous dir %s: %s", res->store_dir, strerror(errno));
    return RP_OK;
}

static void free_procs(rank_proc *procs, int n) {
    for (int r = 0; r < n; r++) {
        free(procs[r].envp);
        if (procs[r].out_fd >= 0) close(procs[r].out_fd);
        if (procs[r].err_fd >= 0) close(procs[r].err_fd);
        if (procs[r].pidfd >= 0) close(procs[r].pidfd);
    }
    free(procs);
}

rp_status rp_launch(const rp_launch_spec *spec, rp_launch_result *res, rp_error *err) {
    assert(spec && res);
    memset(res, 0, sizeof *res);
    res->first_failed = -1;
    res->nranks = spec->nranks;
    const char *exe = spec->exe ? spec->exe : "/proc/self/exe";
    RP_TRY(check_spec(spec, exe, err));
    RP_TRY(rp_launch_dirs(spec, res, err));

    rank_proc *procs = calloc((size_t)spec->nranks, sizeof *procs);
    if (!procs) return RP_FAIL(err, RP_ERR_NOMEM, "launch: out of memory");
    for (int r = 0; r < spec->nranks; r++) procs[r].out_fd = procs[r].err_fd = procs[r].pidfd = -1;
    int in_fd = high_fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
    rp_status st = in_fd < 0 ? RP_FAIL(err, RP_ERR_IO, "cannot open /dev/null: %s", strerror(errno)) : RP_OK;
    for (int r = 0; st == RP_OK && r < spec->nranks; r++) {
        st = build_env(&procs[r], spec, r, res->run_dir, res->store_dir, err);
        /* a previous launch's state in this run dir would read as this one's */
        rp_comm_state_path(res->run_dir, r, procs[r].state_path, sizeof procs[r].state_path);
        if (st == RP_OK && unlink(procs[r].state_path) != 0 && errno != ENOENT)
            st = RP_FAIL(err, RP_ERR_IO, "cannot remove %s: %s", procs[r].state_path, strerror(errno));
        if (st == RP_OK) st = open_output(res->run_dir, r, "out", &procs[r].out_fd, err);
        if (st == RP_OK) st = open_output(res->run_dir, r, "err", &procs[r].err_fd, err);
    }
    if (st != RP_OK) {
        if (in_fd >= 0) close(in_fd);
        free_procs(procs, spec->nranks);
        return st;
    }

    watch w = {.spec = spec, .procs = procs, .res = res, .pgid = 0, .t0 = rp_now_s()};
    const pid_t parent = getpid();
    int started = 0;
    sigset_t all, old_mask;
    sigfillset(&all);
    for (int r = 0; r < spec->nranks; r++) {
        /* Blocked across fork so no handler of ours runs in the child (see child_exec). */
        pthread_sigmask(SIG_SETMASK, &all, &old_mask);
        pid_t pid = fork();
        if (pid == 0)
            child_exec(exe, (char *const *)spec->argv, procs[r].envp, w.pgid, parent, in_fd, procs[r].out_fd,
                       procs[r].err_fd);
        int fork_errno = errno;
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
        if (pid < 0) {
            st = RP_FAIL(err, RP_ERR_IO, "launch: fork for rank %d failed: %s", r, strerror(fork_errno));
            break;
        }
        /* Set the group from both sides: whichever runs first wins the race
         * against an early kill(-pgid); the loser's EACCES (child already
         * exec'd) is harmless. */
        if (r == 0) w.pgid = pid;
        setpgid(pid, w.pgid);
        procs[r].pid = pid;
        procs[r].running = 1;
        res->ranks[r].pid = pid;
        started++;
        /* No pidfd (kernel < 5.3): the loop falls back to polling waitid. */
        procs[r].pidfd = spec->no_pidfd ? -1 : (int)syscall(SYS_pidfd_open, pid, 0);
    }
    close(in_fd);
    for (int r = 0; r < spec->nranks; r++) {
        close(procs[r].out_fd);
        close(procs[r].err_fd);
        procs[r].out_fd = procs[r].err_fd = -1;
    }
    if (st == RP_OK) watch_loop(&w);
    reap_all(procs, started, w.pgid);
    /* the ranks' last calls say something only about a job that did not end well */
    for (int r = 0; st == RP_OK && res->status == RP_LAUNCH_OK && r < spec->nranks; r++) unlink(procs[r].state_path);
    free_procs(procs, spec->nranks);
    res->wall_s = rp_now_s() - w.t0;
    if (st != RP_OK) return st;
    rp_launch_report(spec, res);
    return RP_OK;
}

int rp_worker_exit_code(rp_status st) {
    switch (st) {
    case RP_OK: return RP_WORKER_EXIT_OK;
    case RP_ERR_TIMEOUT: return RP_WORKER_EXIT_COMM_TIMEOUT;
    case RP_ERR_INVALID:
    case RP_ERR_UNSUPPORTED:
    case RP_ERR_NOT_FOUND: return RP_WORKER_EXIT_CONFIG;
    default: return RP_WORKER_EXIT_FAIL;
    }
}
