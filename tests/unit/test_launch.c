/* test_launch.c — the local launcher (backends/launch.h) with /bin/sh ranks:
 * environment and output files, first-failure reports, prompt killing of the
 * other ranks, hangs, SIGTERM-proof ranks, grandchildren, cancellation, the
 * pidfd-less fallback, and that nothing is left running or unreaped. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/comm_watch.h"
#include "backends/launch.h"

/* A fresh run dir name per test (Check forks each test; pids differ). */
static void run_dir(char *buf, size_t cap, const char *name) {
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, cap, "%s/repro-test-launch-%s-%d", tmp && *tmp ? tmp : "/tmp", name, (int)getpid());
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* rm -rf of a test's run dir, so repeated runs leave nothing in $TMPDIR. */
static void rm_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Launches `sh -c script` on n ranks and returns the result; asserts rp_launch itself worked. */
static void launch_sh_in(char *dir, const char *name, int n, const char *script, double timeout, int no_pidfd,
                         rp_launch_result *res) {
    run_dir(dir, PATH_MAX, name);
    const char *argv[] = {"sh", "-c", script, NULL};
    rp_launch_spec spec = {.nranks = n, .exe = "/bin/sh", .argv = argv, .run_dir = dir, .timeout_s = timeout,
                           .grace_s = 0.5, .cancel_fd = -1, .no_pidfd = no_pidfd};
    rp_error err;
    rp_error_clear(&err);
    rp_status st = rp_launch(&spec, res, &err);
    ck_assert_msg(st == RP_OK, "rp_launch: %s [%s]", err.msg, err.where);
}

/* launch_sh_in without keeping the run dir. */
static void launch_sh(const char *name, int n, const char *script, double timeout, int no_pidfd,
                      rp_launch_result *res) {
    char dir[PATH_MAX];
    launch_sh_in(dir, name, n, script, timeout, no_pidfd, res);
    rm_tree(dir);
}

/* Whole file into buf ("" if missing). */
static void slurp(const char *dir, const char *file, char *buf, size_t cap) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* No child of ours is left, not even a zombie. */
static void assert_no_children(void) {
    errno = 0;
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
    ck_assert_int_eq(errno, ECHILD);
}

/* pid is gone or a zombie someone else (init) has yet to reap: not running. */
static int pid_running(pid_t pid) {
    char path[64], stat[512] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    stat[n] = '\0';
    fclose(f);
    const char *paren = strrchr(stat, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

START_TEST(all_ok_env_and_output) {
    rp_launch_result res;
    char dir[PATH_MAX];
    run_dir(dir, sizeof dir, "ok");
    const char *argv[] = {"sh", "-c",
                          "echo \"r=$REPRO_RANK w=$REPRO_WORLD l=$REPRO_LOCAL_RANK all=$ALL one=$ONE\";"
                          "echo \"store=$REPRO_STORE_DIR run=$REPRO_RUN_DIR\"; echo to-err >&2;"
                          "test -d \"$REPRO_STORE_DIR\" || exit 5;"
                          "if read x; then exit 6; fi", /* stdin is /dev/null: read fails */
                          NULL};
    /* REPRO_RANK in the user env must lose against the launcher's */
    const char *env[] = {"ALL=yes", "REPRO_RANK=99", "ONE=common", NULL};
    const char *r1[] = {"ONE=only-rank-1", NULL};
    const char *const *rank_env[3] = {NULL, r1, NULL};
    rp_launch_spec spec = {.nranks = 3, .exe = "/bin/sh", .argv = argv, .run_dir = dir, .timeout_s = 20,
                           .env = env, .rank_env = rank_env, .cancel_fd = -1};
    rp_error err;
    rp_error_clear(&err);
    ck_assert_int_eq(rp_launch(&spec, &res, &err), RP_OK);
    ck_assert_str_eq(rp_launch_status_name(res.status), "ok");
    ck_assert_int_eq(res.first_failed, -1);
    ck_assert_str_eq(res.report, "");
    ck_assert_str_eq(res.run_dir, dir);
    ck_assert_msg(strncmp(res.store_dir, dir, strlen(dir)) == 0 && strstr(res.store_dir, "/rendezvous-"),
                  "store dir %s not under %s", res.store_dir, dir);
    for (int r = 0; r < 3; r++) {
        ck_assert_int_eq(res.ranks[r].exited, 1);
        ck_assert_int_eq(res.ranks[r].exit_code, 0);
        ck_assert(res.ranks[r].pid > 0);
        char name[32], out[3 * PATH_MAX], want[3 * PATH_MAX];
        snprintf(name, sizeof name, "rank%d.out", r);
        slurp(dir, name, out, sizeof out);
        snprintf(want, sizeof want, "r=%d w=3 l=%d all=yes one=%s\nstore=%s run=%s\n", r, r,
                 r == 1 ? "only-rank-1" : "common", res.store_dir, dir);
        ck_assert_str_eq(out, want);
        snprintf(name, sizeof name, "rank%d.err", r);
        slurp(dir, name, out, sizeof out);
        ck_assert_str_eq(out, "to-err\n");
    }
    assert_no_children();
    /* A second launch in the same run dir gets a fresh rendezvous dir. */
    char first_store[PATH_MAX];
    snprintf(first_store, sizeof first_store, "%s", res.store_dir);
    const char *argv2[] = {"sh", "-c", "true", NULL};
    spec.argv = argv2;
    ck_assert_int_eq(rp_launch(&spec, &res, &err), RP_OK);
    ck_assert_int_eq(res.status, RP_LAUNCH_OK);
    ck_assert_str_ne(res.store_dir, first_store);
    rm_tree(dir);
}
END_TEST

/* Rank 1 SIGKILLs itself; ranks 0 and 2 would sleep 30 s. The launcher must
 * end the job at once, name rank 1 and SIGKILL, and show its stderr. */
static void crash_case(int no_pidfd) {
    rp_launch_result res;
    launch_sh(no_pidfd ? "crash-nopidfd" : "crash", 3,
              "if [ $REPRO_RANK = 1 ]; then for i in $(seq 1 30); do echo line$i >&2; done; sleep 0.2;"
              " kill -KILL $$; fi; exec sleep 30",
              60, no_pidfd, &res);
    ck_assert_int_eq(res.status, RP_LAUNCH_CRASH);
    ck_assert_int_eq(res.first_failed, 1);
    ck_assert_int_eq(res.ranks[1].exited, 0);
    ck_assert_int_eq(res.ranks[1].term_signal, SIGKILL);
    ck_assert_int_eq(res.ranks[1].killed_by_launcher, 0);
    for (int r = 0; r < 3; r += 2) {
        ck_assert_int_eq(res.ranks[r].killed_by_launcher, 1);
        ck_assert_int_eq(res.ranks[r].exited, 0);
        ck_assert_int_eq(res.ranks[r].term_signal, SIGTERM);
    }
    ck_assert_msg(res.wall_s < 5.0, "took %.2f s, not promptly", res.wall_s);
    ck_assert_ptr_nonnull(strstr(res.report, "crash: rank 1 of 3 failed first: killed by SIGKILL"));
    ck_assert_ptr_nonnull(strstr(res.report, "killed by the launcher: 0, 2"));
    /* the last 20 lines of stderr: line11..line30, not line10 */
    ck_assert_ptr_nonnull(strstr(res.report, "last 20 lines"));
    ck_assert_ptr_nonnull(strstr(res.report, "line11\n"));
    ck_assert_ptr_nonnull(strstr(res.report, "line30\n"));
    ck_assert_ptr_null(strstr(res.report, "line10\n"));
    assert_no_children();
}

START_TEST(crash_kills_the_rest) { crash_case(0); }
END_TEST

START_TEST(crash_without_pidfd) { crash_case(1); }
END_TEST

START_TEST(exit_codes_classified) {
    static const struct { int code; rp_launch_status st; const char *word; } cases[] = {
        {1, RP_LAUNCH_CRASH, "exit 1"},
        {RP_WORKER_EXIT_USAGE, RP_LAUNCH_CONFIG, "usage error"},
        {RP_WORKER_EXIT_CONFIG, RP_LAUNCH_CONFIG, "configuration error"},
        {RP_WORKER_EXIT_COMM_TIMEOUT, RP_LAUNCH_COMM_TIMEOUT, "communication timeout"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char script[128];
        snprintf(script, sizeof script, "if [ $REPRO_RANK = 0 ]; then exit %d; fi; exec sleep 30", cases[i].code);
        rp_launch_result res;
        launch_sh("codes", 2, script, 60, 0, &res);
        ck_assert_int_eq(res.status, cases[i].st);
        ck_assert_int_eq(res.first_failed, 0);
        ck_assert_int_eq(res.ranks[0].exit_code, cases[i].code);
        ck_assert_int_eq(res.ranks[1].killed_by_launcher, 1);
        ck_assert_msg(strstr(res.report, cases[i].word), "'%s' not in %s", cases[i].word, res.report);
        ck_assert(res.wall_s < 5.0);
    }
    assert_no_children();
}
END_TEST

START_TEST(early_success_is_not_failure) {
    /* rank 0 finishes first with 0; the job waits for rank 1 and is ok */
    rp_launch_result res;
    launch_sh("early", 2, "if [ $REPRO_RANK = 1 ]; then sleep 0.3; fi; exit 0", 20, 0, &res);
    ck_assert_int_eq(res.status, RP_LAUNCH_OK);
    ck_assert(res.ranks[1].wall_s >= 0.25);
    ck_assert(res.ranks[0].wall_s < res.ranks[1].wall_s);
}
END_TEST

START_TEST(hang_names_running_ranks) {
    rp_launch_result res;
    launch_sh("hang", 3, "if [ $REPRO_RANK = 1 ]; then exit 0; fi; echo stuck-$REPRO_RANK >&2; exec sleep 30", 0.7, 0,
              &res);
    ck_assert_int_eq(res.status, RP_LAUNCH_HANG);
    ck_assert_int_eq(res.first_failed, -1);
    ck_assert_int_eq(res.ranks[0].running_at_deadline, 1);
    ck_assert_int_eq(res.ranks[1].running_at_deadline, 0);
    ck_assert_int_eq(res.ranks[2].running_at_deadline, 1);
    ck_assert_int_eq(res.ranks[1].exit_code, 0);
    ck_assert_msg(res.wall_s >= 0.7 && res.wall_s < 3.0, "wall %.2f", res.wall_s);
    ck_assert_ptr_nonnull(strstr(res.report, "hang: the 0.7 s deadline passed with ranks 0, 2 still running"));
    ck_assert_ptr_nonnull(strstr(res.report, "stuck-2"));
    for (int r = 0; r < 3; r++) ck_assert(!pid_running(res.ranks[r].pid));
    assert_no_children();
}
END_TEST

/* The deadlock watch (comm_watch.h) with shell ranks that publish prepared states: the
 * test writes <dir>/prep<name> in the state file's layout, and a rank script's `st NAME`
 * installs one as its own <dir>/rank<r>.comm (atomically, by rename). */
static void prep_state(const char *dir, const char *name, uint64_t calls, int comm_id, int send_to, int recv_from,
                       const char *what) {
    unsigned char buf[RP_COMM_STATE_BYTES] = {0};
    const int32_t f[4] = {comm_id, send_to, recv_from, 0};
    memcpy(buf, &calls, sizeof calls);
    memcpy(buf + 8, f, sizeof f);
    snprintf((char *)buf + 24, sizeof buf - 24, "%s", what);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/prep%s", dir, name);
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_int_eq(fwrite(buf, 1, sizeof buf, fp), sizeof buf);
    fclose(fp);
}

#define STATE_FN                                                                                                 \
    "st() { d=$REPRO_COMM_STATE_DIR; cp $d/prep$1 $d/tmp$REPRO_RANK && mv $d/tmp$REPRO_RANK $d/rank$REPRO_RANK.comm; }; "

static void launch_watched(const char *dir, int n, const char *script, double timeout, double window,
                           rp_launch_result *res) {
    char full[2048];
    snprintf(full, sizeof full, "%s%s", STATE_FN, script);
    const char *argv[] = {"sh", "-c", full, NULL};
    rp_launch_spec spec = {.nranks = n, .exe = "/bin/sh", .argv = argv, .run_dir = dir, .timeout_s = timeout,
                           .grace_s = 0.5, .cancel_fd = -1, .deadlock_s = window};
    rp_error err;
    rp_error_clear(&err);
    ck_assert_msg(rp_launch(&spec, res, &err) == RP_OK, "rp_launch: %s", err.msg);
    rm_tree(dir);
}

static void watched_dir(char *dir, const char *name) {
    run_dir(dir, PATH_MAX, name);
    mkdir(dir, 0755);
}

START_TEST(deadlock_every_rank_waiting) {
    /* a ring of 4 where rank 3 turned the other way (sends to 2, receives from 0): every rank
     * inside its sendrecv for good; the report names rank 3 and each rank's wait */
    char dir[PATH_MAX];
    watched_dir(dir, "dl-ring");
    for (int r = 0; r < 4; r++) {
        char name[8], what[64];
        const int to = r == 3 ? 2 : (r + 1) % 4, from = r == 3 ? 0 : (r + 3) % 4;
        snprintf(name, sizeof name, "%d", r);
        snprintf(what, sizeof what, "sendrecv to %d from %d", to, from);
        prep_state(dir, name, 7, 2, to, from, what);
    }
    rp_launch_result res;
    launch_watched(dir, 4, "st $REPRO_RANK; exec sleep 30", 20, 0.6, &res);
    ck_assert_int_eq(res.status, RP_LAUNCH_DEADLOCK);
    ck_assert_str_eq(rp_launch_status_name(res.status), "deadlock");
    ck_assert_msg(res.wall_s >= 0.6 && res.wall_s < 10, "wall %.2f", res.wall_s);
    ck_assert_msg(strstr(res.report, "; rank 3 disagrees with its peers ("), "%s", res.report);
    ck_assert_msg(strstr(res.report, "rank 2 sends to rank 3, which receives from rank 0"), "%s", res.report);
    ck_assert_msg(strstr(res.report, "rank 0 receives from rank 3, which sends to rank 2"), "%s", res.report);
    ck_assert_msg(!strstr(res.report, "rank 1 sends") && !strstr(res.report, "rank 1 receives"), "%s", res.report);
    ck_assert_msg(strstr(res.report, ": rank 0 in sendrecv to 1 from 3; rank 1 in sendrecv to 2 from 0; rank 2 in "
                                     "sendrecv to 3 from 1; rank 3 in sendrecv to 2 from 0\n"), "%s", res.report);
    assert_no_children();
}
END_TEST

START_TEST(deadlock_collectives_disagree) {
    /* two ranks of one communicator inside different collectives: said, with no common rank */
    char dir[PATH_MAX];
    watched_dir(dir, "dl-coll");
    prep_state(dir, "0", 5, 1, -1, -1, "allgather of 8 floats");
    prep_state(dir, "1", 5, 1, -1, -1, "barrier");
    rp_launch_result res;
    launch_watched(dir, 2, "st $REPRO_RANK; exec sleep 30", 20, 0.4, &res);
    ck_assert_int_eq(res.status, RP_LAUNCH_DEADLOCK);
    ck_assert_msg(strstr(res.report, "(on communicator 1 rank 0 waits in allgather, rank 1 in barrier)"), "%s",
                  res.report);
    ck_assert_msg(!strstr(res.report, "disagrees"), "%s", res.report);
    assert_no_children();
}
END_TEST

START_TEST(deadlock_not_while_a_rank_computes) {
    /* ranks 1 and 2 compute (their counters even: their last calls returned): rank 0's long
     * wait is no deadlock, and the job runs into its deadline instead (a rank with no state
     * file at all: deadlock_stale_state_is_removed) */
    char dir[PATH_MAX];
    watched_dir(dir, "dl-busy");
    prep_state(dir, "in", 1, 0, -1, 1, "recv from rank 1");
    prep_state(dir, "out", 2, 0, -1, -1, "returned");
    rp_launch_result res;
    launch_watched(dir, 3, "if [ $REPRO_RANK = 0 ]; then st in; else st out; fi; exec sleep 30", 2.0, 0.3, &res);
    ck_assert_int_eq(res.status, RP_LAUNCH_HANG);
    assert_no_children();
}
END_TEST

START_TEST(deadlock_not_while_calls_return) {
    /* a rank whose calls keep completing (its counter moving, odd at every read) makes progress */
    char dir[PATH_MAX];
    watched_dir(dir, "dl-moving");
    for (int k = 0; k < 100; k++) { /* calls 1, 3, 5, ...: a real counter never comes back */
        char name[16];
        snprintf(name, sizeof name, "m%d", k);
        prep_state(dir, name, 2 * (uint64_t)k + 1, 0, -1, -1, "allreduce");
    }
    rp_launch_result res;
    launch_watched(dir, 2, "if [ $REPRO_RANK = 0 ]; then st m0; exec sleep 30; fi; "
                   "k=0; while [ $k -lt 100 ]; do st m$k; sleep 0.05; k=$((k + 1)); done", 4.0, 1.5, &res);
    ck_assert_int_eq(res.status, RP_LAUNCH_HANG);
    assert_no_children();
}
END_TEST

START_TEST(deadlock_stale_state_is_removed) {
    /* a previous launch's state (inside a call) left in the run dir: the new ranks, computing
     * without a communicator, must not read as waiting */
    char dir[PATH_MAX];
    watched_dir(dir, "dl-stale");
    prep_state(dir, "x", 1, 0, -1, -1, "barrier");
    for (int r = 0; r < 2; r++) {
        char from[PATH_MAX + 16], to[PATH_MAX + 16];
        snprintf(from, sizeof from, "%s/prepx", dir);
        snprintf(to, sizeof to, "%s/rank%d.comm", dir, r);
        ck_assert_int_eq(link(from, to), 0);
    }
    const char *argv[] = {"sh", "-c", "sleep 1.5", NULL};
    rp_launch_spec spec = {.nranks = 2, .exe = "/bin/sh", .argv = argv, .run_dir = dir, .timeout_s = 20,
                           .grace_s = 0.5, .cancel_fd = -1, .deadlock_s = 0.3};
    rp_launch_result res;
    rp_error err;
    ck_assert_int_eq(rp_launch(&spec, &res, &err), RP_OK);
    ck_assert_int_eq(res.status, RP_LAUNCH_OK);
    rm_tree(dir);
}
END_TEST

START_TEST(sigterm_proof_rank_gets_sigkill) {
    /* the shell and its sleep ignore SIGTERM: only the SIGKILL after the grace ends them */
    rp_launch_result res;
    launch_sh("termproof", 2, "trap '' TERM; sleep 30", 0.3, 0, &res);
    ck_assert_int_eq(res.status, RP_LAUNCH_HANG);
    for (int r = 0; r < 2; r++) ck_assert_int_eq(res.ranks[r].term_signal, SIGKILL);
    ck_assert_msg(res.wall_s >= 0.8 && res.wall_s < 3.0, "wall %.2f (timeout 0.3 + grace 0.5)", res.wall_s);
    assert_no_children();
}
END_TEST

START_TEST(grandchildren_are_killed) {
    /* each rank leaves a background sleep behind and exits 0 */
    char dir[PATH_MAX];
    rp_launch_result res;
    launch_sh_in(dir, "grandchild", 2, "sleep 30 & echo $! > $REPRO_RUN_DIR/gc$REPRO_RANK.pid; exit 0", 20, 0, &res);
    ck_assert_int_eq(res.status, RP_LAUNCH_OK);
    for (int r = 0; r < 2; r++) {
        char name[32], buf[64];
        snprintf(name, sizeof name, "gc%d.pid", r);
        slurp(dir, name, buf, sizeof buf);
        pid_t gc = (pid_t)atoi(buf);
        ck_assert(gc > 0);
        /* SIGKILL delivery is asynchronous: allow it a moment to land */
        for (int i = 0; i < 100 && pid_running(gc); i++) usleep(10000);
        ck_assert_msg(!pid_running(gc), "grandchild %d survived", (int)gc);
    }
    rm_tree(dir);
    assert_no_children();
}
END_TEST

START_TEST(cancel_fd_stops_the_job) {
    int p[2];
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    ck_assert_int_eq(write(p[1], "x", 1), 1);
    char dir[PATH_MAX];
    run_dir(dir, sizeof dir, "cancel");
    const char *argv[] = {"sh", "-c", "exec sleep 30", NULL};
    rp_launch_spec spec = {.nranks = 2, .exe = "/bin/sh", .argv = argv, .run_dir = dir, .timeout_s = 60,
                           .grace_s = 0.5, .cancel_fd = p[0]};
    rp_launch_result res;
    rp_error err;
    rp_error_clear(&err);
    ck_assert_int_eq(rp_launch(&spec, &res, &err), RP_OK);
    ck_assert_int_eq(res.status, RP_LAUNCH_CANCELLED);
    ck_assert_int_eq(res.ranks[0].killed_by_launcher, 1);
    ck_assert(res.wall_s < 5.0);
    ck_assert_ptr_nonnull(strstr(res.report, "cancelled: ranks 0, 1 still running"));
    close(p[0]);
    close(p[1]);
    rm_tree(dir);
    assert_no_children();
}
END_TEST

/* A host SIGCHLD handler that reaps everything steals our exit statuses: the
 * launcher must notice instead of waiting forever. */
static void reap_all_handler(int sig) {
    (void)sig;
    int e = errno;
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
    errno = e;
}

START_TEST(stolen_status_is_reported) {
    struct sigaction sa = {0};
    sa.sa_handler = reap_all_handler;
    sigaction(SIGCHLD, &sa, NULL);
    rp_launch_result res;
    launch_sh("stolen", 2, "exit 0", 10, 0, &res);
    ck_assert(res.wall_s < 5.0);
    /* whether the handler or we were first is a race; either way it ends */
    if (res.status != RP_LAUNCH_OK) {
        ck_assert_int_eq(res.status, RP_LAUNCH_CRASH);
        ck_assert(res.first_failed >= 0);
        ck_assert_int_eq(res.ranks[res.first_failed].status_lost, 1);
        ck_assert_ptr_nonnull(strstr(res.report, "exit status lost"));
    }
    signal(SIGCHLD, SIG_DFL);
}
END_TEST

START_TEST(bad_specs) {
    const char *argv[] = {"sh", "-c", "true", NULL};
    rp_launch_result res;
    rp_error err;
    rp_launch_spec spec = {.nranks = 0, .exe = "/bin/sh", .argv = argv, .cancel_fd = -1};
    ck_assert_int_eq(rp_launch(&spec, &res, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "0 ranks"));
    spec.nranks = RP_LAUNCH_MAX_RANKS + 1;
    ck_assert_int_eq(rp_launch(&spec, &res, &err), RP_ERR_INVALID);
    spec.nranks = 1;
    spec.exe = "/nonexistent/repro";
    ck_assert_int_eq(rp_launch(&spec, &res, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/repro"));
    ck_assert_ptr_nonnull(strstr(err.where, "backends/launch.c:"));
    spec.exe = "/bin/sh";
    const char *env[] = {"NOEQUALS", NULL};
    spec.env = env;
    ck_assert_int_eq(rp_launch(&spec, &res, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "NOEQUALS"));
    spec.env = NULL;
    spec.run_dir = "/dev/null/x";
    ck_assert_int_eq(rp_launch(&spec, &res, &err), RP_ERR_IO);
    spec.run_dir = NULL;
    spec.cancel_fd = 987;
    ck_assert_int_eq(rp_launch(&spec, &res, &err), RP_ERR_INVALID);
    spec.cancel_fd = -1;
    signal(SIGCHLD, SIG_IGN);
    ck_assert_int_eq(rp_launch(&spec, &res, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "SIGCHLD"));
    signal(SIGCHLD, SIG_DFL);
    assert_no_children();
}
END_TEST

START_TEST(default_run_dir_is_fresh) {
    char tmp[PATH_MAX];
    run_dir(tmp, sizeof tmp, "tmpdir");
    mkdir(tmp, 0755);
    const char *old = getenv("TMPDIR");
    char saved[PATH_MAX];
    snprintf(saved, sizeof saved, "%s", old ? old : "");
    setenv("TMPDIR", tmp, 1);
    const char *argv[] = {"sh", "-c", "exit 0", NULL};
    rp_launch_spec spec = {.nranks = 1, .exe = "/bin/sh", .argv = argv, .cancel_fd = -1};
    rp_launch_result a, b;
    rp_error err;
    ck_assert_int_eq(rp_launch(&spec, &a, &err), RP_OK);
    ck_assert_int_eq(rp_launch(&spec, &b, &err), RP_OK);
    ck_assert_str_ne(a.run_dir, b.run_dir);
    ck_assert_msg(strstr(a.run_dir, "/repro-launch-") && strncmp(a.run_dir, tmp, strlen(tmp)) == 0, "%s", a.run_dir);
    rm_tree(tmp);
    if (old) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
}
END_TEST

START_TEST(file_tail) {
    char path[PATH_MAX], buf[256];
    run_dir(path, sizeof path, "tail.txt");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 1; i <= 30; i++) fprintf(f, "l%d\n", i);
    fclose(f);
    ck_assert_int_eq(rp_file_tail(path, 3, buf, sizeof buf), 3);
    ck_assert_str_eq(buf, "l28\nl29\nl30\n");
    ck_assert_int_eq(rp_file_tail(path, 100, buf, sizeof buf), 30);
    ck_assert(strncmp(buf, "l1\nl2\n", 6) == 0);
    /* a buffer too small keeps the end */
    char small[8];
    rp_file_tail(path, 20, small, sizeof small);
    ck_assert_str_eq(small, "29\nl30\n");
    f = fopen(path, "w");
    fputs("a\nno-newline", f);
    fclose(f);
    ck_assert_int_eq(rp_file_tail(path, 1, buf, sizeof buf), 1);
    ck_assert_str_eq(buf, "no-newline");
    f = fopen(path, "w");
    fclose(f);
    ck_assert_int_eq(rp_file_tail(path, 5, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "");
    ck_assert_int_eq(rp_file_tail("/nonexistent/x", 5, buf, sizeof buf), 0);
    unlink(path);
}
END_TEST

START_TEST(signal_names) {
    char b[32];
    ck_assert_str_eq(rp_signal_name(SIGKILL, b, sizeof b), "SIGKILL");
    ck_assert_str_eq(rp_signal_name(SIGSEGV, b, sizeof b), "SIGSEGV");
    char want[32];
    snprintf(want, sizeof want, "SIG%d", SIGRTMIN + 1); /* no name: the number */
    ck_assert_str_eq(rp_signal_name(SIGRTMIN + 1, b, sizeof b), want);
    int s;
    rp_error err;
    ck_assert_int_eq(rp_signal_parse("KILL", &s, &err), RP_OK);
    ck_assert_int_eq(s, SIGKILL);
    ck_assert_int_eq(rp_signal_parse("sigsegv", &s, &err), RP_OK);
    ck_assert_int_eq(s, SIGSEGV);
    ck_assert_int_eq(rp_signal_parse("6", &s, &err), RP_OK);
    ck_assert_int_eq(s, 6);
    ck_assert_int_eq(rp_signal_parse("BOGUS", &s, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "BOGUS"));
    ck_assert_int_eq(rp_signal_parse("0", &s, &err), RP_ERR_INVALID);
    ck_assert_int_eq(rp_signal_parse("9x", &s, &err), RP_ERR_INVALID);
}
END_TEST

int main(void) {
    Suite *s = suite_create("launch");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, all_ok_env_and_output);
    tcase_add_test(tc, crash_kills_the_rest);
    tcase_add_test(tc, crash_without_pidfd);
    tcase_add_test(tc, exit_codes_classified);
    tcase_add_test(tc, early_success_is_not_failure);
    tcase_add_test(tc, hang_names_running_ranks);
    tcase_add_test(tc, deadlock_every_rank_waiting);
    tcase_add_test(tc, deadlock_collectives_disagree);
    tcase_add_test(tc, deadlock_not_while_a_rank_computes);
    tcase_add_test(tc, deadlock_not_while_calls_return);
    tcase_add_test(tc, deadlock_stale_state_is_removed);
    tcase_add_test(tc, sigterm_proof_rank_gets_sigkill);
    tcase_add_test(tc, grandchildren_are_killed);
    tcase_add_test(tc, cancel_fd_stops_the_job);
    tcase_add_test(tc, stolen_status_is_reported);
    tcase_add_test(tc, bad_specs);
    tcase_add_test(tc, default_run_dir_is_fresh);
    tcase_add_test(tc, file_tail);
    tcase_add_test(tc, signal_names);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
