/* cmd_launch.c — `repro launch`: run N ranks of a repro subcommand on this
 * machine with the local launcher (backends/launch.h) and report how they ended.
 *
 * ^C / SIGTERM / SIGHUP to the launcher end the job cleanly: they are blocked
 * and read through a signalfd that rp_launch polls as its cancel descriptor,
 * so the ranks — in their own process group, out of reach of the terminal's
 * ^C — are killed and reaped rather than orphaned. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "engine/error.h"
#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "backends/launch.h"

#define MAX_ENV 64

static void usage(FILE *f) {
    fprintf(f,
            "usage: repro launch -n N [--timeout S] [--deadlock S] [--run-dir DIR] [--grace S] [--env K=V]...\n"
            "                    [--rank-env R:K=V]... -- worker ARGS...\n"
            "\n"
            "Starts N processes of `repro ARGS...` (normally `worker ...`) on this machine, each with\n"
            "REPRO_RANK, REPRO_WORLD, REPRO_LOCAL_RANK and REPRO_STORE_DIR (a fresh rendezvous dir\n"
            "under the run dir), and watches them as one job: when a rank fails the others are\n"
            "killed at once; at the deadline the whole group is killed and the job is a hang.\n"
            "  -n N, --ranks N    number of ranks (1..%d)\n"
            "  --timeout S        deadline for the whole job in seconds (default 600; 0: none)\n"
            "  --deadlock S       end the job once every running rank has waited S seconds inside\n"
            "                     one communicator call (a deadlock: no rank is left to complete it;\n"
            "                     default 20; 0: no watch), naming the call each rank waits in\n"
            "  --grace S          SIGTERM to SIGKILL delay when killing (default 2)\n"
            "  --run-dir DIR      where rank<R>.out / rank<R>.err and the rendezvous dir go\n"
            "                     (default: a fresh $TMPDIR/repro-launch-XXXXXX)\n"
            "  --env K=V          extra environment for every rank (repeatable)\n"
            "  --rank-env R:K=V   extra environment for rank R only, e.g. 1:OPENBLAS_CORETYPE=Haswell\n"
            "  --exe PATH         program to start instead of this repro binary\n"
            "\n"
            "exit codes: 0 all ranks ok, 1 a rank failed (crash or communication timeout), 2 usage,\n"
            "3 a rank reported a configuration error, 124 hang or deadlock, 130 cancelled (^C, SIGTERM)\n",
            RP_LAUNCH_MAX_RANKS);
}

/* Splits "R:K=V" into rank and "K=V". */
static rp_status parse_rank_env(const char *s, int nranks, int *rank, const char **kv, rp_error *err) {
    char *end;
    long r = strtol(s, &end, 10);
    if (end == s || *end != ':' || r < 0 || r >= nranks || !strchr(end + 1, '=') || end[1] == '=')
        return RP_FAIL(err, RP_ERR_INVALID, "--rank-env '%s': want R:NAME=value with 0 <= R < %d", s, nranks);
    *rank = (int)r;
    *kv = end + 1;
    return RP_OK;
}

/* One word for a rank's part in the outcome. */
static const char *rank_label(const rp_launch_result *res, int r) {
    const rp_rank_result *rr = &res->ranks[r];
    if (r == res->first_failed) return "FAILED";
    if (rr->running_at_deadline) return "HUNG";
    if (rr->exited && rr->exit_code == 0 && !rr->status_lost) return "ok";
    if (rr->killed_by_launcher && !rr->exited) return "killed";
    return "failed";
}

static int exit_code_for(rp_launch_status s) {
    switch (s) {
    case RP_LAUNCH_OK: return 0;
    case RP_LAUNCH_CONFIG: return 3;
    case RP_LAUNCH_HANG:
    case RP_LAUNCH_DEADLOCK: return 124;
    case RP_LAUNCH_CANCELLED: return 130;
    case RP_LAUNCH_CRASH:
    case RP_LAUNCH_COMM_TIMEOUT: return 1;
    }
    return 1;
}

/* Runs the launch with ^C/TERM/HUP turned into a cancel descriptor; restores
 * the signal mask afterwards. */
static rp_status launch_cancellable(rp_launch_spec *spec, rp_launch_result *res, rp_error *err) {
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    /* Without a signalfd we still launch; ^C then kills only the launcher and
     * the ranks follow through PR_SET_PDEATHSIG. */
    int sfd = signalfd(-1, &block, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) sigprocmask(SIG_SETMASK, &old, NULL);
    spec->cancel_fd = sfd;
    /* The command owns this process: an inherited "ignore SIGCHLD" would make
     * rp_launch refuse (exit statuses would be discarded). */
    signal(SIGCHLD, SIG_DFL);
    rp_status st = rp_launch(spec, res, err);
    if (sfd >= 0) {
        /* Consume the signals that cancelled the job, so unblocking does not
         * kill us before the report is printed; the exit code says it (130). */
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {}
        close(sfd);
        sigprocmask(SIG_SETMASK, &old, NULL);
    }
    return st;
}

int rp_cmd_launch(int argc, char **argv) {
    int sep = -1;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) { sep = i; break; }
    /* Our options are those before "--"; "-n" is the mpirun-style alias of --ranks. */
    int nopt = sep < 0 ? argc : sep;
    char **opt = calloc((size_t)nopt + 1, sizeof *opt);
    if (!opt) return 1;
    for (int i = 0; i < nopt; i++) opt[i] = !strcmp(argv[i], "-n") ? "--ranks" : argv[i];
    rp_args a;
    rp_args_init(&a, nopt, opt);
    if (rp_arg_flag(&a, "help")) {
        usage(stdout);
        free(opt);
        return 0;
    }
    rp_launch_spec spec = {0};
    spec.nranks = (int)rp_arg_int(&a, "ranks", 0);
    spec.timeout_s = rp_arg_double(&a, "timeout", 600.0);
    spec.grace_s = rp_arg_double(&a, "grace", 2.0);
    const double deadlock = rp_arg_double(&a, "deadlock", RP_LAUNCH_DEADLOCK_S);
    spec.deadlock_s = deadlock > 0 ? deadlock : -1; /* 0: no watch */
    spec.run_dir = rp_arg_str(&a, "run-dir", NULL);
    spec.exe = rp_arg_str(&a, "exe", NULL);
    const char *env[MAX_ENV + 1] = {0};
    int nenv = rp_arg_strs(&a, "env", env, MAX_ENV);
    const char *renv[MAX_ENV];
    int nrenv = rp_arg_strs(&a, "rank-env", renv, MAX_ENV);
    rp_error err;
    rp_error_clear(&err);
    int rc = 0;
    const char ***rank_env = NULL;
    if (rp_args_finish(&a, &err) != RP_OK) rc = 2;
    else if (sep < 0 || sep + 1 >= argc)
        rc = 2, RP_FAIL(&err, RP_ERR_INVALID, "launch: give the rank command after --, e.g. "
                                               "repro launch -n 2 -- worker --job comm-selftest");
    else if (spec.nranks < 1 || spec.nranks > RP_LAUNCH_MAX_RANKS)
        rc = 2, RP_FAIL(&err, RP_ERR_INVALID, "launch: -n %d: give 1..%d ranks", spec.nranks, RP_LAUNCH_MAX_RANKS);
    else if (spec.timeout_s < 0 || spec.grace_s < 0 || deadlock < 0)
        rc = 2, RP_FAIL(&err, RP_ERR_INVALID, "launch: --timeout, --deadlock and --grace must be >= 0");
    else if (nenv == MAX_ENV || nrenv == MAX_ENV)
        rc = 2, RP_FAIL(&err, RP_ERR_INVALID, "launch: at most %d --env and %d --rank-env", MAX_ENV - 1, MAX_ENV - 1);
    if (rc == 0 && nrenv > 0) {
        /* rank_env[r]: that rank's entries, NULL-terminated; one block for all. */
        rank_env = calloc((size_t)spec.nranks, sizeof *rank_env);
        const char **cells = calloc((size_t)spec.nranks * (MAX_ENV + 1), sizeof *cells);
        if (!rank_env || !cells) {
            free(rank_env);
            free(cells);
            free(opt);
            return 1;
        }
        int fill[RP_LAUNCH_MAX_RANKS] = {0};
        for (int r = 0; r < spec.nranks; r++) rank_env[r] = cells + (size_t)r * (MAX_ENV + 1);
        for (int i = 0; i < nrenv && rc == 0; i++) {
            int r = 0;
            const char *kv = NULL;
            if (parse_rank_env(renv[i], spec.nranks, &r, &kv, &err) != RP_OK) rc = 2;
            else rank_env[r][fill[r]++] = kv;
        }
    }
    if (rc) {
        rp_report_error(&err);
        if (rank_env) free(rank_env[0]);
        free(rank_env);
        free(opt);
        return rc;
    }
    /* The ranks run `repro ARGS`: argv[0] stays "repro" so ps shows them as such. */
    argv[sep] = "repro";
    spec.argv = (const char *const *)(argv + sep);
    spec.env = nenv ? env : NULL;
    spec.rank_env = (const char *const *const *)rank_env;

    rp_launch_result *res = malloc(sizeof *res);
    if (!res) rc = 1, RP_FAIL(&err, RP_ERR_NOMEM, "launch: out of memory");
    else if (launch_cancellable(&spec, res, &err) != RP_OK) rc = 1;
    if (rc) {
        rp_report_error(&err);
    } else {
        char d[256];
        for (int r = 0; r < res->nranks; r++) {
            rp_launch_describe_rank(&res->ranks[r], d, sizeof d);
            printf("rank %d: %s, %s\n", r, rank_label(res, r), d);
        }
        printf("launch: %s, %d ranks, %.2f s, run dir %s\n", rp_launch_status_name(res->status), res->nranks,
               res->wall_s, res->run_dir);
        fflush(stdout);
        if (res->report[0]) fputs(res->report, stderr);
        rc = exit_code_for(res->status);
    }
    free(res);
    if (rank_env) free(rank_env[0]);
    free(rank_env);
    free(opt);
    return rc;
}
