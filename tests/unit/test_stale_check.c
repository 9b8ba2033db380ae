/* test_stale_check.c — the approximate strategies' staleness contract
 * (engine/parallel/stale_check.c): the fingerprint of rows placed in an attention's keys
 * is the fingerprint of the same rows as exchanged (the layout (2, blocks, rows, D)),
 * sees one changed value in them and nothing outside them; a forward's checks fold into
 * one pair of the replica log's STALE group, which differs exactly when one check did, and
 * names the first check that failed. The contract is equality, so no tolerance is chosen. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/parallel/parallel.h"

/* One rank, world 1, at evaluation eval: nothing else set. */
static rp_parallel one_rank(int eval) {
    rp_parallel p;
    memset(&p, 0, sizeof p);
    p.world = 1;
    p.fwd_eval = eval;
    return p;
}

static float value(size_t i) { return (float)((i * 2654435761u) % 1000u) / 997.0f - 0.5f; }

/* Rows [r0, r0 + rows) of nbh blocks of T rows x D in k and v (block b at b * T * D), placed
 * there from a contiguous (2, nbh, rows, D) chunk: the two prints agree. */
START_TEST(test_kv_print_is_the_chunks) {
    enum { NBH = 3, T = 11, D = 4, R0 = 5, ROWS = 4 };
    float k[NBH * T * D], v[NBH * T * D], chunk[2 * NBH * ROWS * D], scratch[2 * NBH * ROWS * D];
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) k[i] = value(i), v[i] = value(i + 7777);
    for (int b = 0; b < NBH; b++) {
        memcpy(chunk + (size_t)b * ROWS * D, k + ((size_t)b * T + R0) * D, sizeof(float) * ROWS * D);
        memcpy(chunk + (size_t)(NBH + b) * ROWS * D, v + ((size_t)b * T + R0) * D, sizeof(float) * ROWS * D);
    }
    const uint64_t want = rp_par_fingerprint(chunk, 2 * NBH * ROWS * D);
    ck_assert(rp_par_kv_print(k + R0 * D, v + R0 * D, NBH, ROWS, D, T * D, scratch) == want);
    /* one value of one placed row of the last block's V: another print */
    const size_t in = ((size_t)(NBH - 1) * T + R0 + ROWS - 1) * D + 2;
    v[in] = nextafterf(v[in], 1.0f);
    ck_assert(rp_par_kv_print(k + R0 * D, v + R0 * D, NBH, ROWS, D, T * D, scratch) != want);
    v[in] = nextafterf(v[in], -1.0f);
    /* a row just outside the placed ones: not part of the print */
    k[(size_t)(R0 + ROWS) * D] += 1.0f;
    k[(size_t)(R0 - 1) * D] += 1.0f;
    ck_assert(rp_par_kv_print(k + R0 * D, v + R0 * D, NBH, ROWS, D, T * D, scratch) == want);
}
END_TEST

/* The forward's pair: equal checks give an equal pair; one that differs (a read of other
 * rows, or nothing due) makes the pair differ whatever follows, named by the first. */
START_TEST(test_pairs_fold_and_name) {
    rp_error err;
    rp_par_replica_report rep;
    rp_parallel p = one_rank(2);
    rp_par_stale_pair(&p, 11, 11, "kv.attn0.patch0", "due a");
    rp_par_stale_pair(&p, 12, 12, "kv.attn0.patch1", "due b");
    rp_par_stale_flush(&p);
    ck_assert_int_eq(rp_par_replica_collect(&p, "", &rep, &err), RP_OK);
    ck_assert_int_eq(rep.first.eval, -1);
    ck_assert_int_eq(rep.checked, 1);
    rp_par_replica_free(&p);

    for (int missing = 0; missing < 2; missing++) {
        p = one_rank(3);
        rp_par_stale_pair(&p, 21, 21, "kv.attn0.patch0", "due a");
        rp_par_stale_pair(&p, 22, missing ? 0 : 23, "kv.attn1.patch1", "read at step 3: due, step 2's");
        rp_par_stale_pair(&p, 24, 25, "kv.attn2.patch1", "a later one");
        rp_par_stale_pair(&p, 26, 26, "kv.attn3.patch0", "due d");
        rp_par_stale_flush(&p);
        ck_assert_int_eq(rp_par_replica_collect(&p, "", &rep, &err), RP_OK);
        ck_assert_int_eq(rep.first.eval, 3);
        ck_assert_int_eq(rep.first.group, RP_PAR_RG_STALE);
        ck_assert_int_eq(rep.first.rank_a, 0);
        ck_assert_int_eq(rep.first.rank_b, 0);
        ck_assert_str_eq(rep.first.name, "kv.attn1.patch1");
        ck_assert_str_eq(rep.first.other, "read at step 3: due, step 2's");
        ck_assert_str_eq(rp_par_rgroup_name(rep.first.group), "stale");
        rp_par_replica_free(&p);
    }

    /* a forward with no check notes nothing; a flush empties the fold */
    p = one_rank(0);
    rp_par_stale_flush(&p);
    ck_assert_int_eq(rp_par_replica_collect(&p, "", &rep, &err), RP_OK);
    ck_assert_int_eq(rep.checked, 0);
    rp_par_stale_pair(&p, 1, 2, "kv.attn0.patch0", "x");
    rp_par_stale_flush(&p);
    p.fwd_eval = 1;
    rp_par_stale_pair(&p, 3, 3, "kv.attn0.patch0", "y");
    rp_par_stale_flush(&p);
    ck_assert_int_eq(rp_par_replica_collect(&p, "", &rep, &err), RP_OK);
    ck_assert_int_eq(rep.checked, 2);
    ck_assert_int_eq(rep.first.eval, 0);
    rp_par_replica_free(&p);
}
END_TEST

int main(void) {
    Suite *s = suite_create("stale_check");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_kv_print_is_the_chunks);
    tcase_add_test(tc, test_pairs_fold_and_name);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
