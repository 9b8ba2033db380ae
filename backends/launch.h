/* launch.h — the local launcher: N rank processes on this machine, watched
 * as one job.
 *
 * rp_launch() forks N children and execs `exe argv[1..]` in each, with
 *   REPRO_RANK=r, REPRO_WORLD=N, REPRO_LOCAL_RANK=r,
 *   REPRO_STORE_DIR=<run dir>/rendezvous-XXXXXX (fresh for every launch, so a
 *     rerun in the same run dir never reads a previous run's store keys),
 *   REPRO_RUN_DIR=<run dir>, REPRO_COMM_STATE_DIR=<run dir> (the deadlock watch below),
 * plus spec->env for every rank and spec->rank_env[r] for rank r (later wins:
 * rank_env over env over the inherited environment over nothing — but the
 * REPRO_* variables above always win). stdin is /dev/null; stdout and stderr
 * go to <run dir>/rank<r>.out and rank<r>.err.
 *
 * All ranks share one process group (rank 0's pid), so anything a rank starts
 * is killed with it. The launcher then waits, without installing any signal
 * handler (it polls pidfds, or waitid every 20 ms where pidfds are missing):
 *   - all ranks exit 0                  -> RP_LAUNCH_OK
 *   - a rank exits non-zero or is killed by a signal: the others are sent
 *     SIGTERM at once and SIGKILL after grace_s; the first rank to fail is
 *     reported (status by its exit code, see rp_worker_exit below). Ranks
 *     found dead together are told apart by likely cause: a signal before
 *     an exit code, exit 1 before a communication timeout, then lowest rank.
 *   - the deadline passes               -> RP_LAUNCH_HANG, the still-running
 *     ranks are flagged, and the group gets SIGTERM then SIGKILL
 *   - every running rank has been inside the same call of its communicator for
 *     spec->deadlock_s (each rank's <run dir>/rank<r>.comm, written by a comm
 *     made with REPRO_COMM_STATE_DIR, which every rank gets = <run dir>; stale
 *     ones are removed before the ranks start: comm_watch.h)
 *                                       -> RP_LAUNCH_DEADLOCK, the same kill; the
 *     report names the call each rank was waiting in (the state files stay; after
 *     a job that ended OK they are removed)
 *   - cancel_fd becomes readable        -> RP_LAUNCH_CANCELLED, same kill
 * Every child is reaped before rp_launch returns, and the group gets a final
 * SIGKILL while a zombie still holds its id, so no rank or grandchild outlives
 * the call and no zombie remains. Children also get PR_SET_PDEATHSIG(SIGKILL),
 * so ranks do not outlive a launcher that is itself SIGKILLed.
 *
 * Precondition: SIGCHLD must not be ignored (SIG_IGN / SA_NOCLDWAIT make the
 * kernel discard exit statuses); rp_launch checks and refuses. It only ever
 * waits for its own children's pids, so other children of the process and any
 * SIGCHLD handler the caller installed are left alone. Not thread-safe with
 * respect to other threads calling fork/exec (file descriptors are O_CLOEXEC). */
#ifndef REPRO_LAUNCH_H
#define REPRO_LAUNCH_H

#include <limits.h>
#include <sys/types.h>

#include "engine/error.h"

#define RP_LAUNCH_MAX_RANKS 128
#define RP_LAUNCH_TAIL_LINES 20

/* Exit codes of `repro worker` (and any rank program that wants its failures
 * classified): 2 and 3 are configuration problems no rerun will fix; 4 means a
 * collective or the rendezvous timed out, i.e. a peer died or never came. */
enum rp_worker_exit {
    RP_WORKER_EXIT_OK = 0,
    RP_WORKER_EXIT_FAIL = 1,
    RP_WORKER_EXIT_USAGE = 2,
    RP_WORKER_EXIT_CONFIG = 3,
    RP_WORKER_EXIT_COMM_TIMEOUT = 4
};

/* The exit code a rank reports for a failed status: timeouts -> COMM_TIMEOUT; invalid,
 * unsupported or missing things -> CONFIG (no rerun fixes them); the rest -> FAIL. */
int rp_worker_exit_code(rp_status st);

typedef enum rp_launch_status {
    RP_LAUNCH_OK = 0,
    RP_LAUNCH_CRASH,        /* first failure: a signal, or an exit code not listed below */
    RP_LAUNCH_CONFIG,       /* first failure exited RP_WORKER_EXIT_USAGE or _CONFIG */
    RP_LAUNCH_COMM_TIMEOUT, /* first failure exited RP_WORKER_EXIT_COMM_TIMEOUT */
    RP_LAUNCH_HANG,         /* the deadline passed with ranks still running */
    RP_LAUNCH_CANCELLED,    /* cancel_fd fired (e.g. the user pressed ^C) */
    RP_LAUNCH_DEADLOCK      /* every running rank sat inside one communicator call for
                               deadlock_s (the local launcher's watch: comm_watch.h) */
} rp_launch_status;

/* The local launcher's default deadlock window: long beyond the time a matched call
 * spends moving its bytes, short beside a case's deadline. */
#define RP_LAUNCH_DEADLOCK_S 20.0

typedef struct rp_launch_spec {
    int nranks;                  /* 1..RP_LAUNCH_MAX_RANKS */
    const char *exe;             /* program to exec; NULL: /proc/self/exe */
    const char *const *argv;     /* NULL-terminated; argv[0] is passed as is */
    const char *run_dir;         /* created if missing; NULL: mkdtemp $TMPDIR/repro-launch-XXXXXX */
    double timeout_s;            /* whole-job deadline; <= 0: none */
    double grace_s;              /* SIGTERM -> SIGKILL delay; <= 0: 2 s */
    const char *const *env;      /* NULL-terminated "K=V" for every rank, or NULL */
    const char *const *const *rank_env; /* rank_env[r]: NULL-terminated "K=V" for rank r; the
                                           array and each entry may be NULL */
    int cancel_fd;               /* readable -> cancel; < 0: none. Never read, only polled. */
    int no_pidfd;                /* tests: force the waitpid-polling fallback */
    int nodes;                   /* cluster launchers (backends/launcher.h): nodes to spread the
                                    ranks over, 1..nranks; <= 0: 1. The local launcher ignores it. */
    double deadlock_s;           /* local launcher: end the job as RP_LAUNCH_DEADLOCK once every
                                    running rank has been inside the same communicator call this
                                    long; 0: RP_LAUNCH_DEADLOCK_S; < 0: not watched. Cluster
                                    launchers do not watch (the state files are per node). */
} rp_launch_spec;

typedef struct rp_rank_result {
    pid_t pid;
    int exited;                  /* 1: exited with exit_code; 0: killed by term_signal */
    int exit_code;
    int term_signal;
    int killed_by_launcher;      /* still running when the launcher started killing */
    int running_at_deadline;     /* still running when the deadline passed (HANG) */
    int status_lost;             /* reaped by someone else (a caller's SIGCHLD handler) */
    double wall_s;               /* start of the launch to this rank's exit */
    char node[64];               /* cluster launchers: the node the rank ran on; "" locally */
} rp_rank_result;

typedef struct rp_launch_result {
    rp_launch_status status;
    int nranks;
    int first_failed;            /* rank whose failure ended the job, or -1 */
    double wall_s;               /* whole launch, including the kill and reap */
    char run_dir[PATH_MAX];
    char store_dir[PATH_MAX];
    rp_rank_result ranks[RP_LAUNCH_MAX_RANKS];
    /* One paragraph for people: what ended the job, and for a failed rank the
     * last RP_LAUNCH_TAIL_LINES lines of its stderr. Empty when status is OK. */
    char report[8192];
} rp_launch_result;

/* Runs the job described by spec to completion and fills *res (fully
 * overwritten). Returns RP_OK whenever the ranks were started and all reaped —
 * a crash or hang is an outcome in res->status, not an error; an error status
 * means the launcher itself could not do its job (bad spec, run dir not
 * writable, fork failed...), after killing and reaping anything it started. */
rp_status rp_launch(const rp_launch_spec *spec, rp_launch_result *res, rp_error *err);

/* How likely a failed rank's end is the cause of a job's failure rather than a
 * consequence: 0 not failed; a signal (5) before an exit code the rank chose (4),
 * a lost status (2) and exit 1 (3), and a communication timeout (1) last. Every
 * launcher names the failed rank with the highest, the lowest rank on a tie. */
int rp_launch_cause(const rp_rank_result *rr);

/* Sets res->run_dir (spec->run_dir, created if missing, or a fresh mkdtemp) and creates
 * a fresh res->store_dir = <run dir>/rendezvous-XXXXXX, for every launcher. */
rp_status rp_launch_dirs(const rp_launch_spec *spec, rp_launch_result *res, rp_error *err);

/* Fills res->report (see rp_launch_result) from res->status, first_failed, the
 * ranks' ends and nodes, and the tails of <run dir>/rank<r>.err: the one report
 * text every launcher (backends/launcher.h) writes. */
void rp_launch_report(const rp_launch_spec *spec, rp_launch_result *res);

/* "ok" | "crash" | "config-error" | "comm-timeout" | "hang" | "cancelled" | "deadlock" */
const char *rp_launch_status_name(rp_launch_status s);

/* One line describing a rank's end, e.g. "exit 0 after 1.20 s",
 * "killed by SIGKILL after 0.51 s", "SIGTERM from the launcher after 0.52 s". */
void rp_launch_describe_rank(const rp_rank_result *r, char *buf, size_t cap);

/* "SIGKILL" for 9 etc.; "SIG<n>" for numbers without a name. Uses buf (>= 16 bytes). */
const char *rp_signal_name(int sig, char *buf, size_t cap);

/* Parses "KILL", "SIGKILL" or "9" (case-insensitive) into *sig. */
rp_status rp_signal_parse(const char *s, int *sig, rp_error *err);

/* Copies the last `lines` lines of the file at path into buf (NUL-terminated,
 * truncated from the front to fit). Returns the number of lines copied; 0 for
 * an empty or unreadable file. */
int rp_file_tail(const char *path, int lines, char *buf, size_t cap);

#endif
