/* launch_cluster.h — what the srun and mpirun launchers share (backends/launcher.h):
 * the pool of named nodes, the ranks' environment, and running the one launcher
 * process (srun or mpirun) that starts a job's ranks, under the job's deadline.
 * Internal to backends/launch_*.c. */
#ifndef REPRO_LAUNCH_CLUSTER_H
#define REPRO_LAUNCH_CLUSTER_H

#include <pthread.h>

#include "backends/launcher.h"

/* Named nodes, each held by at most one job at a time. */
typedef struct rp_node_pool {
    int n;
    char name[RP_LAUNCHER_MAX_NODES][RP_LAUNCHER_NODE_NAME];
    unsigned char busy[RP_LAUNCHER_MAX_NODES];
    pthread_mutex_t mu;
} rp_node_pool;

/* The constructors behind rp_launcher_open (launch_srun.c, launch_mpirun.c). */
rp_status rp_launcher_srun(const rp_launcher_opts *o, rp_launcher **out, rp_error *err);
rp_status rp_launcher_mpirun(const rp_launcher_opts *o, rp_launcher **out, rp_error *err);

/* Adds a node name; RP_ERR_INVALID when the pool is full, the name is empty, too long
 * or already there (what names the list: a hostfile line, the allocation). */
rp_status rp_pool_add(rp_node_pool *p, const char *name, const char *what, rp_error *err);

/* Marks `want` free nodes busy and writes their indices to idx (lowest first).
 * RP_ERR_INVALID when fewer are free. */
rp_status rp_pool_take(rp_node_pool *p, int want, int *idx, rp_error *err);

void rp_pool_give(rp_node_pool *p, const int *idx, int n);

/* Ranks per node for a job: k = ceil(nranks / nodes), after checking 1 <= nodes <= nranks
 * and nodes <= the pool's size. */
rp_status rp_cluster_layout(const rp_launch_spec *spec, int pool_nodes, const char *who, int *nodes, int *k,
                            rp_error *err);

/* Absolute path of the program to run as each rank: spec->exe, or this binary. */
rp_status rp_cluster_exe(const rp_launch_spec *spec, char *buf, size_t cap, rp_error *err);

/* Finds name on PATH (or checks it when it contains '/'); RP_ERR_NOT_FOUND naming it
 * and what installs it (hint). */
rp_status rp_cluster_which(const char *name, const char *hint, char *buf, size_t cap, rp_error *err);

/* The launcher process's environment: environ without the local launcher's rank
 * variables (REPRO_RANK, REPRO_WORLD, REPRO_LOCAL_RANK, REPRO_STORE_DIR, REPRO_RUN_DIR)
 * and an outer mpirun's (OMPI_COMM_WORLD_*), then spec->env, REPRO_STORE_DIR and
 * REPRO_RUN_DIR; later entries win. NULL-terminated; free with rp_cluster_env_free. */
char **rp_cluster_env(const rp_launch_spec *spec, const rp_launch_result *res);
void rp_cluster_env_free(char **envp);

/* One launcher process: its command line and environment, the job's deadline, and how
 * to stop the job before the process group gets SIGTERM (srun: scancel the step). */
typedef struct rp_cluster_proc {
    char *const *argv;           /* argv[0]: absolute path */
    char *const *envp;
    const char *log_base;        /* stdout/stderr go to <run dir>/<log_base>.out/.err */
    const rp_launch_spec *spec;  /* timeout_s, grace_s, cancel_fd */
    const rp_launch_result *res; /* run_dir */
    void (*stop)(void *ctx);     /* at the deadline or on cancel, first; may be NULL */
    void *stop_ctx;
    /* out */
    int exited, code, sig;       /* how the launcher process ended */
    int hit_deadline, cancelled; /* why it was stopped, if it was */
    long err_at_stop;            /* the size of <log_base>.err when the stop began (-1: no stop):
                                    what the launcher reported after it, the stop caused */
    double wall_s;
} rp_cluster_proc;

/* Starts p->argv in a process group of its own (stdin /dev/null, PR_SET_PDEATHSIG) and
 * waits for it: at the deadline or when cancel_fd is readable it calls p->stop, sends
 * the group SIGTERM, and SIGKILL after grace_s (the job's ranks are the launcher's to
 * stop; srun and mpirun both take their ranks down when they die). Reaps it before
 * returning. An error only when it could not be started. */
rp_status rp_cluster_run(rp_cluster_proc *p, rp_error *err);

/* The signal whose strsignal() text starts text ("Killed", "Segmentation fault"...), or 0. */
int rp_cluster_signal_from_text(const char *text);

/* Fills the result of a finished cluster job: rank r's node from the layout (nodes
 * idx[0..], k per node); status from p (deadline -> HANG with every rank flagged,
 * cancel -> CANCELLED) or from the failed ranks the launcher named (ranks[].exited /
 * exit_code / term_signal set by the caller; failed[r] = 1 ended on its own, 2 ended
 * after the launcher began killing the job), the first failure chosen as the local
 * launcher does among the 1s (else the 2s): a signal before an exit code, exit 1
 * before a communication timeout, then the lowest rank. Ranks not named are ok when the job
 * was, else killed by the launcher. Returns 0, or -1 when the launcher process failed
 * without naming a failed rank (the caller reports that as its own error). */
int rp_cluster_outcome(const rp_cluster_proc *p, const rp_node_pool *pool, const int *idx, int k,
                       const unsigned char *failed, rp_launch_result *res);

/* Reads the failed ranks srun names in its stderr at path ("srun: error: NODE: task R:
 * Exited with exit code N" / "tasks R-S,T: <strsignal text>") into res->ranks[] (exited,
 * exit_code / term_signal) and failed[]: 1 for a task that ended on its own, 2 for one
 * reported after the step began to be killed: after srun said so (kill-on-bad-exit,
 * scancel, SIGTERM), or at or after byte stopped_at of the file, its size when the
 * launcher began stopping the step (a deadline, a cancel; -1: it did not). Those ended
 * because another did or because the launcher stopped them, however srun words it. The
 * first report of a rank stands. */
void rp_srun_parse_err(const char *path, long stopped_at, rp_launch_result *res, unsigned char *failed);

/* The same from mpirun's stderr: "process rank R with PID P on node NODE exited on signal
 * S" and "Process name: [[J,1],R]" followed by "Exit code: N"; failed[r] = 1, or 2 for a
 * report at or after byte stopped_at (as rp_srun_parse_err). */
void rp_mpirun_parse_err(const char *path, long stopped_at, rp_launch_result *res, unsigned char *failed);

/* When failed[] names no rank: each rank's status file in run_dir (rank<r>.status, written
 * by the shell around it: its wait status, the exit code or 128 + the signal) for a rank
 * that ended non-zero on its own (failed[r] = 1). mpirun at times reports only that "1
 * process returned a non-zero exit code" and not which. */
void rp_mpirun_read_status(const char *run_dir, rp_launch_result *res, unsigned char *failed);

#endif
