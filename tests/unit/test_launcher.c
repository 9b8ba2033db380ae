/* test_launcher.c — the cluster launchers' pure parts (backends/launcher.h,
 * backends/launch_cluster.h): srun's and mpirun's failure messages (text as the real
 * programs print it: Slurm 22.05, Open MPI 4.1) read back into the failed rank, its end
 * and the first failure; the rank-to-node layout; the node pool; the ranks'
 * environment; launcher names. The launchers themselves run in tests/cluster/. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/launch_cluster.h"

/* Writes text to a fresh file and returns its path (static buffer). */
static const char *text_file(const char *text) {
    static char path[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/repro-test-launcher-%d.err", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* A pool n1..n<n>. */
/* srun's stderr at path, the launcher never having stopped the step. */
static void srun_parse(const char *path, rp_launch_result *res, unsigned char *failed) {
    rp_srun_parse_err(path, -1, res, failed);
}

static void pool_of(rp_node_pool *p, int n) {
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i + 1);
        ck_assert_int_eq(rp_pool_add(p, name, "test", NULL), RP_OK);
    }
}

/* rp_cluster_outcome after a launcher process that exited with code, ranks on n1.. k each. */
static void outcome(rp_launch_result *res, const unsigned char *failed, int code, int k, int want_rc) {
    rp_node_pool pool;
    pool_of(&pool, 4);
    int idx[4] = {0, 1, 2, 3};
    rp_cluster_proc p = {.exited = 1, .code = code, .wall_s = 1.0};
    ck_assert_int_eq(rp_cluster_outcome(&p, &pool, idx, k, failed, res), want_rc);
}

START_TEST(srun_segfault_first_then_killed) {
    rp_launch_result res;
    memset(&res, 0, sizeof res);
    res.nranks = 2;
    unsigned char failed[RP_LAUNCH_MAX_RANKS] = {0};
    srun_parse(text_file("srun: error: n2: task 1: Segmentation fault\n"
                                "srun: launch/slurm: _step_signal: Terminating StepId=1.2\n"
                                "srun: error: n1: task 0: Terminated\n"
                                "srun: Force Terminated StepId=1.2\n"),
                      &res, failed);
    ck_assert_int_eq(failed[1], 1);
    ck_assert_int_eq(failed[0], 2); /* after the step was being killed: a consequence */
    ck_assert_int_eq(res.ranks[1].exited, 0);
    ck_assert_int_eq(res.ranks[1].term_signal, SIGSEGV);
    ck_assert_int_eq(res.ranks[0].term_signal, SIGTERM);
    outcome(&res, failed, 139, 1, 0);
    /* both died of a signal; rank 0 is lower, but rank 1 failed on its own */
    ck_assert_int_eq(res.first_failed, 1);
    ck_assert_int_eq(res.status, RP_LAUNCH_CRASH);
    ck_assert_str_eq(res.ranks[1].node, "n2");
    ck_assert_str_eq(res.ranks[0].node, "n1");
}
END_TEST

START_TEST(srun_task_ranges_and_exit_codes) {
    rp_launch_result res;
    memset(&res, 0, sizeof res);
    res.nranks = 6;
    unsigned char failed[RP_LAUNCH_MAX_RANKS] = {0};
    srun_parse(text_file("srun: error: n1: tasks 0-1,3: Exited with exit code 4\n"
                                "srun: error: n2: task 4: Exited with exit code 3\n"
                                "srun: error: n2: task 5: Exited with exit code 0\n"
                                "srun: error: n2: task 9: Killed\n" /* no such rank: ignored */
                                "srun: error: Unable to create step for job 2: whatever\n"),
                      &res, failed);
    const unsigned char want[6] = {1, 1, 0, 1, 1, 0};
    for (int r = 0; r < 6; r++) ck_assert_int_eq(failed[r], want[r]);
    ck_assert_int_eq(res.ranks[3].exit_code, 4);
    ck_assert_int_eq(res.ranks[4].exit_code, 3);
    outcome(&res, failed, 4, 3, 0);
    /* a configuration error (3) outranks communication timeouts (4), whoever came first */
    ck_assert_int_eq(res.first_failed, 4);
    ck_assert_int_eq(res.status, RP_LAUNCH_CONFIG);
    ck_assert_str_eq(res.ranks[4].node, "n2"); /* k = 3: ranks 3..5 on the second node */
    ck_assert_str_eq(res.ranks[2].node, "n1");
    ck_assert_int_eq(res.ranks[2].killed_by_launcher, 1);
}
END_TEST

START_TEST(srun_failed_without_a_task) {
    rp_launch_result res;
    memset(&res, 0, sizeof res);
    res.nranks = 4;
    unsigned char failed[RP_LAUNCH_MAX_RANKS] = {0};
    srun_parse(text_file("srun: error: Unable to create step for job 2: More processors requested than "
                                "permitted\n"),
                      &res, failed);
    for (int r = 0; r < 4; r++) ck_assert_int_eq(failed[r], 0);
    outcome(&res, failed, 1, 2, -1); /* the launcher's own failure: the caller's error */
    memset(&res, 0, sizeof res);
    res.nranks = 4;
    outcome(&res, failed, 0, 2, 0);
    ck_assert_int_eq(res.status, RP_LAUNCH_OK);
    ck_assert_int_eq(res.first_failed, -1);
}
END_TEST

START_TEST(mpirun_signal_and_exit_code) {
    rp_launch_result res;
    memset(&res, 0, sizeof res);
    res.nranks = 4;
    unsigned char failed[RP_LAUNCH_MAX_RANKS] = {0};
    rp_mpirun_parse_err(
        text_file("--------------------------------------------------------------------------\n"
                  "Primary job  terminated normally, but 1 process returned\n"
                  "a non-zero exit code. Per user-direction, the job has been aborted.\n"
                  "--------------------------------------------------------------------------\n"
                  "mpirun noticed that process rank 2 with PID 31656 on node 10.79.0.2 exited on signal 11 "
                  "(Segmentation fault).\n"),
        -1, &res, failed);
    ck_assert_int_eq(failed[2], 1);
    ck_assert_int_eq(res.ranks[2].term_signal, SIGSEGV);
    memset(&res, 0, sizeof res);
    res.nranks = 4;
    memset(failed, 0, sizeof failed);
    rp_mpirun_parse_err(text_file("mpirun detected that one or more processes exited with non-zero status, thus "
                                  "causing\nthe job to be terminated. The first process to do so was:\n\n"
                                  "  Process name: [[47823,1],3]\n  Exit code:    4\n"),
                        -1, &res, failed);
    ck_assert_int_eq(failed[3], 1);
    ck_assert_int_eq(res.ranks[3].exited, 1);
    ck_assert_int_eq(res.ranks[3].exit_code, 4);
    outcome(&res, failed, 4, 2, 0);
    ck_assert_int_eq(res.status, RP_LAUNCH_COMM_TIMEOUT);
    ck_assert_str_eq(res.ranks[3].node, "n2");
}
END_TEST

/* mpirun at times says only that "1 process returned a non-zero exit code": the ranks'
 * status files (the shell around each rank writes its wait status) name it. */
START_TEST(mpirun_status_files) {
    rp_launch_result res;
    memset(&res, 0, sizeof res);
    res.nranks = 2;
    const char *tmp = getenv("TMPDIR");
    snprintf(res.run_dir, sizeof res.run_dir, "%s/repro-test-launcher-status-%d", tmp && *tmp ? tmp : "/tmp",
             (int)getpid());
    ck_assert_int_eq(mkdir(res.run_dir, 0755), 0);
    char p[sizeof res.run_dir + 32];
    snprintf(p, sizeof p, "%s/rank1.status", res.run_dir);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs("139\n", f);
    fclose(f);
    unsigned char failed[RP_LAUNCH_MAX_RANKS] = {0};
    rp_mpirun_parse_err(text_file("--------------------------------------------------------------------------\n"
                                  "Primary job  terminated normally, but 1 process returned\n"
                                  "a non-zero exit code. Per user-direction, the job has been aborted.\n"),
                        -1, &res, failed);
    ck_assert_int_eq(failed[0] + failed[1], 0);
    rp_mpirun_read_status(res.run_dir, &res, failed);
    ck_assert_int_eq(failed[0], 0); /* no status file: killed with the job */
    ck_assert_int_eq(failed[1], 1);
    ck_assert_int_eq(res.ranks[1].exited, 0);
    ck_assert_int_eq(res.ranks[1].term_signal, SIGSEGV);
    /* mpirun's own report stands: the files are not read then */
    memset(failed, 0, sizeof failed);
    failed[0] = 1;
    res.ranks[1].term_signal = 0;
    rp_mpirun_read_status(res.run_dir, &res, failed);
    ck_assert_int_eq(failed[1], 0);
    /* an exit code */
    f = fopen(p, "w");
    fputs("3\n", f);
    fclose(f);
    memset(failed, 0, sizeof failed);
    rp_mpirun_read_status(res.run_dir, &res, failed);
    ck_assert(failed[1] == 1 && res.ranks[1].exited && res.ranks[1].exit_code == 3);
    remove(p);
    rmdir(res.run_dir);
}
END_TEST

START_TEST(deadline_flags_every_rank) {
    rp_launch_result res;
    memset(&res, 0, sizeof res);
    res.nranks = 2;
    unsigned char failed[RP_LAUNCH_MAX_RANKS] = {0};
    srun_parse(text_file("srun: forcing job termination\n"
                                "srun: error: n1: task 0: Killed\n"
                                "srun: error: n2: task 1: Killed\n"),
                      &res, failed);
    rp_node_pool pool;
    pool_of(&pool, 2);
    int idx[2] = {0, 1};
    rp_cluster_proc p = {.exited = 0, .sig = SIGTERM, .hit_deadline = 1};
    ck_assert_int_eq(rp_cluster_outcome(&p, &pool, idx, 1, failed, &res), 0);
    ck_assert_int_eq(res.status, RP_LAUNCH_HANG);
    ck_assert_int_eq(res.ranks[0].running_at_deadline, 1);
    ck_assert_int_eq(res.ranks[1].running_at_deadline, 1);
}
END_TEST

/* At a deadline srun (or mpirun) may report the stopped tasks in words that do not say the step was
 * being killed ("task 1: Terminated" with no "forcing job termination"): what it wrote
 * after the launcher began the stop (stopped_at, the file's size then) is a consequence,
 * so every rank is still running at the deadline; a report before it is a rank's own. */
START_TEST(deadline_reports_after_the_stop) {
    const char *before = "srun: error: n2: task 1: Exited with exit code 3\n";
    const char *after = "srun: error: n1: task 0: Terminated\n";
    char text[256];
    snprintf(text, sizeof text, "%s%s", before, after);
    const char *path = text_file(text);
    rp_node_pool pool;
    pool_of(&pool, 2);
    int idx[2] = {0, 1};
    rp_cluster_proc p = {.exited = 0, .sig = SIGTERM, .hit_deadline = 1};
    for (int stop_first = 0; stop_first < 2; stop_first++) {
        rp_launch_result res;
        memset(&res, 0, sizeof res);
        res.nranks = 2;
        unsigned char failed[RP_LAUNCH_MAX_RANKS] = {0};
        /* the stop began before anything was written, or after rank 1's own exit */
        rp_srun_parse_err(path, stop_first ? 0 : (long)strlen(before), &res, failed);
        ck_assert_int_eq(failed[0], 2);
        ck_assert_int_eq(failed[1], stop_first ? 2 : 1);
        ck_assert_int_eq(rp_cluster_outcome(&p, &pool, idx, 1, failed, &res), 0);
        ck_assert_int_eq(res.status, RP_LAUNCH_HANG);
        ck_assert_int_eq(res.ranks[0].running_at_deadline, 1);
        ck_assert_int_eq(res.ranks[1].running_at_deadline, stop_first);
    }
    /* mpirun alike: its report of a rank the stop's SIGTERM ended */
    rp_launch_result res;
    memset(&res, 0, sizeof res);
    res.nranks = 2;
    unsigned char failed[RP_LAUNCH_MAX_RANKS] = {0};
    rp_mpirun_parse_err(text_file("mpirun noticed that process rank 1 with PID 4242 on node 10.79.0.2 exited on "
                                  "signal 15 (Terminated).\n"),
                        0, &res, failed);
    ck_assert_int_eq(failed[1], 2);
    ck_assert_int_eq(rp_cluster_outcome(&p, &pool, idx, 1, failed, &res), 0);
    ck_assert_int_eq(res.ranks[0].running_at_deadline, 1);
    ck_assert_int_eq(res.ranks[1].running_at_deadline, 1);
}
END_TEST

START_TEST(layout_and_pool) {
    rp_launch_spec spec = {.nranks = 5, .nodes = 2};
    int nodes, k;
    ck_assert_int_eq(rp_cluster_layout(&spec, 2, "t", &nodes, &k, NULL), RP_OK);
    ck_assert_int_eq(nodes, 2);
    ck_assert_int_eq(k, 3);
    spec.nodes = 6;
    rp_error err;
    ck_assert_int_eq(rp_cluster_layout(&spec, 8, "t", &nodes, &k, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "6 nodes for 5 ranks"));
    spec.nodes = 3;
    ck_assert_int_eq(rp_cluster_layout(&spec, 2, "t", &nodes, &k, &err), RP_ERR_INVALID);
    rp_node_pool pool;
    pool_of(&pool, 3);
    ck_assert_int_eq(rp_pool_add(&pool, "n2", "hosts:4", &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "hosts:4: node 'n2' is listed twice"));
    int a[3], b[3];
    ck_assert_int_eq(rp_pool_take(&pool, 2, a, NULL), RP_OK);
    ck_assert_int_eq(rp_pool_take(&pool, 2, b, &err), RP_ERR_INVALID); /* one left */
    ck_assert_int_eq(rp_pool_take(&pool, 1, b, NULL), RP_OK);
    ck_assert_int_eq(b[0], 2);
    rp_pool_give(&pool, a, 2);
    ck_assert_int_eq(rp_pool_take(&pool, 2, b, NULL), RP_OK);
    ck_assert_int_eq(b[0], 0);
    ck_assert_int_eq(b[1], 1);
}
END_TEST

START_TEST(environment_drops_local_rank_variables) {
    setenv("REPRO_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    setenv("OPENBLAS_NUM_THREADS", "8", 1);
    const char *env[] = {"OPENBLAS_NUM_THREADS=1", NULL};
    rp_launch_spec spec = {.nranks = 2, .env = env};
    rp_launch_result res;
    memset(&res, 0, sizeof res);
    snprintf(res.run_dir, sizeof res.run_dir, "/shared/run");
    snprintf(res.store_dir, sizeof res.store_dir, "/shared/run/rendezvous-x");
    char **envp = rp_cluster_env(&spec, &res);
    ck_assert_ptr_nonnull(envp);
    int blas = 0, store = 0, run = 0;
    for (char **e = envp; *e; e++) {
        ck_assert_msg(strncmp(*e, "REPRO_RANK=", 11) && strncmp(*e, "OMPI_COMM_WORLD_RANK=", 21), "kept %s", *e);
        if (!strncmp(*e, "OPENBLAS_NUM_THREADS=", 21)) {
            blas++;
            ck_assert_str_eq(*e, "OPENBLAS_NUM_THREADS=1");
        }
        if (!strcmp(*e, "REPRO_STORE_DIR=/shared/run/rendezvous-x")) store++;
        if (!strcmp(*e, "REPRO_RUN_DIR=/shared/run")) run++;
    }
    ck_assert_int_eq(blas, 1);
    ck_assert_int_eq(store, 1);
    ck_assert_int_eq(run, 1);
    rp_cluster_env_free(envp);
}
END_TEST

START_TEST(names_and_signals) {
    rp_launcher_kind k;
    ck_assert_int_eq(rp_launcher_parse("srun", &k, NULL), RP_OK);
    ck_assert_int_eq(k, RP_LAUNCHER_SRUN);
    ck_assert_str_eq(rp_launcher_kind_name(RP_LAUNCHER_MPIRUN), "mpirun");
    rp_error err;
    ck_assert_int_eq(rp_launcher_parse("slurm", &k, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "local, srun or mpirun"));
    ck_assert_int_eq(rp_cluster_signal_from_text("Killed"), SIGKILL);
    ck_assert_int_eq(rp_cluster_signal_from_text("Segmentation fault (core dumped)"), SIGSEGV);
    ck_assert_int_eq(rp_cluster_signal_from_text("Aborted"), SIGABRT);
    ck_assert_int_eq(rp_cluster_signal_from_text("Exited with exit code 1"), 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("launcher");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, srun_segfault_first_then_killed);
    tcase_add_test(tc, srun_task_ranges_and_exit_codes);
    tcase_add_test(tc, srun_failed_without_a_task);
    tcase_add_test(tc, mpirun_signal_and_exit_code);
    tcase_add_test(tc, mpirun_status_files);
    tcase_add_test(tc, deadline_flags_every_rank);
    tcase_add_test(tc, deadline_reports_after_the_stop);
    tcase_add_test(tc, layout_and_pool);
    tcase_add_test(tc, environment_drops_local_rank_variables);
    tcase_add_test(tc, names_and_signals);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
