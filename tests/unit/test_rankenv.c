/* test_rankenv.c — rank/world detection: every launcher's variables, their
 * precedence, and a clear error for every malformed or inconsistent value. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/worker/rankenv.h"

/* Detects from a literal environment; fails the test on an error. */
static rp_rankenv ok(const char *const *envp) {
    rp_rankenv re;
    rp_error err;
    rp_error_clear(&err);
    rp_status st = rp_rankenv_from(envp, &re, &err);
    ck_assert_msg(st == RP_OK, "unexpected error: %s", err.msg);
    return re;
}

/* Expects RP_ERR_INVALID whose message contains n1 and (when not NULL) n2. */
static void bad(const char *const *envp, const char *n1, const char *n2) {
    rp_rankenv re;
    rp_error err;
    rp_error_clear(&err);
    ck_assert_int_eq(rp_rankenv_from(envp, &re, &err), RP_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, n1), "'%s' not in: %s", n1, err.msg);
    if (n2) ck_assert_msg(strstr(err.msg, n2), "'%s' not in: %s", n2, err.msg);
    ck_assert_ptr_nonnull(strstr(err.where, "harness/worker/rankenv.c:"));
    /* the documented fallback on error */
    ck_assert_int_eq(re.rank, 0);
    ck_assert_int_eq(re.world, 1);
}

START_TEST(none_is_single_process) {
    const char *e[] = {"HOME=/root", "PATH=/bin", NULL};
    rp_rankenv re = ok(e);
    ck_assert_int_eq(re.rank, 0);
    ck_assert_int_eq(re.world, 1);
    ck_assert_int_eq(re.local_rank, 0);
    ck_assert_int_eq(re.source, RP_RANKSRC_NONE);
    ck_assert_str_eq(rp_rank_source_name(re.source), "none");
    const char *nothing[] = {NULL};
    ck_assert_int_eq(ok(nothing).world, 1);
    ck_assert_int_eq(ok(NULL).world, 1);
}
END_TEST

START_TEST(repro_source) {
    const char *e[] = {"REPRO_RANK=2", "REPRO_WORLD=4", "REPRO_LOCAL_RANK=2", NULL};
    rp_rankenv re = ok(e);
    ck_assert_int_eq(re.rank, 2);
    ck_assert_int_eq(re.world, 4);
    ck_assert_int_eq(re.local_rank, 2);
    ck_assert_int_eq(re.source, RP_RANKSRC_REPRO);
    ck_assert_str_eq(rp_rank_source_name(re.source), "repro");
    /* local rank absent: defaults to the rank */
    const char *e2[] = {"REPRO_RANK=3", "REPRO_WORLD=4", NULL};
    ck_assert_int_eq(ok(e2).local_rank, 3);
}
END_TEST

START_TEST(ompi_source) {
    const char *e[] = {"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8", "OMPI_COMM_WORLD_LOCAL_RANK=1", NULL};
    rp_rankenv re = ok(e);
    ck_assert_int_eq(re.rank, 5);
    ck_assert_int_eq(re.world, 8);
    ck_assert_int_eq(re.local_rank, 1);
    ck_assert_int_eq(re.source, RP_RANKSRC_OMPI);
    ck_assert_str_eq(rp_rank_source_name(re.source), "mpirun");
}
END_TEST

START_TEST(slurm_source) {
    const char *e[] = {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0", NULL};
    rp_rankenv re = ok(e);
    ck_assert_int_eq(re.rank, 1);
    ck_assert_int_eq(re.world, 2);
    ck_assert_int_eq(re.local_rank, 0);
    ck_assert_int_eq(re.source, RP_RANKSRC_SLURM);
    ck_assert_str_eq(rp_rank_source_name(re.source), "srun");
    /* an salloc shell: SLURM_NTASKS without a step's SLURM_PROCID is not an error */
    const char *salloc[] = {"SLURM_NTASKS=4", "SLURM_JOB_ID=17", NULL};
    re = ok(salloc);
    ck_assert_int_eq(re.world, 1);
    ck_assert_int_eq(re.source, RP_RANKSRC_NONE);
}
END_TEST

START_TEST(torchrun_source) {
    const char *e[] = {"RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=3", NULL};
    rp_rankenv re = ok(e);
    ck_assert_int_eq(re.rank, 3);
    ck_assert_int_eq(re.world, 4);
    ck_assert_int_eq(re.local_rank, 3);
    ck_assert_int_eq(re.source, RP_RANKSRC_TORCHRUN);
    ck_assert_str_eq(rp_rank_source_name(re.source), "torchrun");
}
END_TEST

START_TEST(precedence) {
    /* all four: ours wins */
    const char *all[] = {"RANK=3",         "WORLD_SIZE=7",           "SLURM_PROCID=2",
                         "SLURM_NTASKS=6", "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=5",
                         "REPRO_RANK=0",   "REPRO_WORLD=4",          NULL};
    rp_rankenv re = ok(all);
    ck_assert_int_eq(re.source, RP_RANKSRC_REPRO);
    ck_assert_int_eq(re.rank, 0);
    ck_assert_int_eq(re.world, 4);
    /* then mpirun over srun and torchrun */
    const char *no_repro[] = {"RANK=3",         "WORLD_SIZE=7",           "SLURM_PROCID=2",
                              "SLURM_NTASKS=6", "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=5", NULL};
    re = ok(no_repro);
    ck_assert_int_eq(re.source, RP_RANKSRC_OMPI);
    ck_assert_int_eq(re.rank, 1);
    ck_assert_int_eq(re.world, 5);
    /* then srun over torchrun */
    const char *slurm_torch[] = {"RANK=3", "WORLD_SIZE=7", "SLURM_PROCID=2", "SLURM_NTASKS=6", NULL};
    re = ok(slurm_torch);
    ck_assert_int_eq(re.source, RP_RANKSRC_SLURM);
    ck_assert_int_eq(re.rank, 2);
    ck_assert_int_eq(re.world, 6);
    /* a lower-precedence source is not even parsed once a higher one matched */
    const char *shadowed_junk[] = {"REPRO_RANK=1", "REPRO_WORLD=2", "RANK=junk", "WORLD_SIZE=0", NULL};
    ck_assert_int_eq(ok(shadowed_junk).rank, 1);
    /* the local rank comes from the same source as the rank */
    const char *mixed_local[] = {"SLURM_PROCID=1", "SLURM_NTASKS=2", "LOCAL_RANK=0", NULL};
    ck_assert_int_eq(ok(mixed_local).local_rank, 1);
}
END_TEST

START_TEST(first_occurrence_wins) {
    const char *e[] = {"REPRO_RANK=1", "REPRO_WORLD=2", "REPRO_RANK=0", NULL};
    ck_assert_int_eq(ok(e).rank, 1);
    /* names are matched whole: REPRO_RANKX is not REPRO_RANK */
    const char *e2[] = {"REPRO_RANKX=1", "XRANK=1", NULL};
    ck_assert_int_eq(ok(e2).source, RP_RANKSRC_NONE);
}
END_TEST

START_TEST(rank_not_below_world) {
    const char *e[] = {"REPRO_RANK=4", "REPRO_WORLD=4", NULL};
    bad(e, "REPRO_RANK=4", "REPRO_WORLD=4");
    const char *o[] = {"OMPI_COMM_WORLD_RANK=9", "OMPI_COMM_WORLD_SIZE=2", NULL};
    bad(o, "OMPI_COMM_WORLD_RANK=9", "OMPI_COMM_WORLD_SIZE=2");
    const char *s[] = {"SLURM_PROCID=2", "SLURM_NTASKS=2", NULL};
    bad(s, "SLURM_PROCID=2", "SLURM_NTASKS=2");
    const char *t[] = {"RANK=1", "WORLD_SIZE=1", NULL};
    bad(t, "RANK=1", "WORLD_SIZE=1");
    const char *l[] = {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=2", NULL};
    bad(l, "LOCAL_RANK=2", NULL);
    const char *z[] = {"REPRO_RANK=0", "REPRO_WORLD=0", NULL};
    bad(z, "REPRO_WORLD=0", "at least one");
}
END_TEST

START_TEST(non_numeric) {
    /* {rank value, world value, what the error must name} */
    static const char *const cases[][3] = {
        {"abc", "2", "REPRO_RANK='abc'"}, {"1", "2x", "REPRO_WORLD='2x'"}, {"-1", "2", "REPRO_RANK='-1'"},
        {" 1", "2", "REPRO_RANK=' 1'"},   {"+1", "2", "REPRO_RANK='+1'"},   {"1.0", "2", "REPRO_RANK='1.0'"},
        {"0", "0x10", "REPRO_WORLD='0x10'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rank[64], world[64];
        snprintf(rank, sizeof rank, "REPRO_RANK=%s", cases[i][0]);
        snprintf(world, sizeof world, "REPRO_WORLD=%s", cases[i][1]);
        const char *e[] = {rank, world, NULL};
        bad(e, cases[i][2], "not a non-negative integer");
    }
    const char *blank[] = {"SLURM_PROCID=", "SLURM_NTASKS=2", NULL};
    bad(blank, "SLURM_PROCID", "empty");
    const char *huge[] = {"RANK=0", "WORLD_SIZE=99999999999999999999", NULL};
    bad(huge, "WORLD_SIZE", "out of range");
    const char *big[] = {"RANK=0", "WORLD_SIZE=2147483648", NULL};
    bad(big, "WORLD_SIZE", "out of range");
    const char *local[] = {"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=x", NULL};
    bad(local, "OMPI_COMM_WORLD_LOCAL_RANK", NULL);
}
END_TEST

START_TEST(half_configured) {
    const char *r[] = {"REPRO_RANK=0", NULL};
    bad(r, "REPRO_RANK is set but REPRO_WORLD is not", NULL);
    const char *w[] = {"REPRO_WORLD=2", NULL};
    bad(w, "REPRO_WORLD is set but REPRO_RANK is not", NULL);
    const char *o[] = {"OMPI_COMM_WORLD_SIZE=2", NULL};
    bad(o, "OMPI_COMM_WORLD_SIZE", "mpirun");
    const char *s[] = {"SLURM_PROCID=0", NULL};
    bad(s, "SLURM_NTASKS", "srun");
    const char *t[] = {"WORLD_SIZE=2", NULL};
    bad(t, "WORLD_SIZE is set but RANK is not", "torchrun");
}
END_TEST

START_TEST(process_environment) {
    setenv("REPRO_RANK", "1", 1);
    setenv("REPRO_WORLD", "3", 1);
    unsetenv("REPRO_LOCAL_RANK");
    rp_rankenv re;
    rp_error err;
    rp_error_clear(&err);
    ck_assert_int_eq(rp_rankenv_detect(&re, &err), RP_OK);
    ck_assert_int_eq(re.rank, 1);
    ck_assert_int_eq(re.world, 3);
    unsetenv("REPRO_RANK");
    unsetenv("REPRO_WORLD");
}
END_TEST

int main(void) {
    Suite *s = suite_create("rankenv");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, none_is_single_process);
    tcase_add_test(tc, repro_source);
    tcase_add_test(tc, ompi_source);
    tcase_add_test(tc, slurm_source);
    tcase_add_test(tc, torchrun_source);
    tcase_add_test(tc, precedence);
    tcase_add_test(tc, first_occurrence_wins);
    tcase_add_test(tc, rank_not_below_world);
    tcase_add_test(tc, non_numeric);
    tcase_add_test(tc, half_configured);
    tcase_add_test(tc, process_environment);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
