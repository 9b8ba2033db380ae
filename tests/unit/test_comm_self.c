/* test_comm_self.c — backends/comm.h without a network: backend names,
 * option checking (every rule refused before any store is contacted), the
 * world-1 "self" backend's exact semantics, and the helpers the backends
 * share (rank lists in messages, MPI_Comm_split ordering). Multi-rank checks
 * live in tests/comm/comm_check.c. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/comm.h"
#include "backends/comm_internal.h"

START_TEST(kind_names_round_trip) {
    rp_comm_kind k;
    rp_error err = {0};
    const rp_comm_kind all[] = {RP_COMM_SELF, RP_COMM_GLOO, RP_COMM_NCCL};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(rp_comm_kind_parse(rp_comm_kind_name(all[i]), &k, &err), RP_OK);
        ck_assert_int_eq(k, all[i]);
    }
    ck_assert_int_eq(rp_comm_kind_parse("mpi", &k, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "'mpi'"));
    ck_assert_ptr_nonnull(strstr(err.msg, "self, gloo or nccl"));
    ck_assert_int_eq(rp_comm_kind_parse("GLOO", &k, &err), RP_ERR_INVALID);
    ck_assert_int_eq(rp_comm_kind_parse(NULL, &k, &err), RP_ERR_INVALID);
    ck_assert_str_eq(rp_comm_kind_name((rp_comm_kind)42), "unknown");
}
END_TEST

START_TEST(availability_matches_build) {
    ck_assert_int_eq(rp_comm_available(RP_COMM_SELF), 1);
#ifdef REPRO_HAVE_GLOO
    ck_assert_int_eq(rp_comm_available(RP_COMM_GLOO), 1);
#else
    ck_assert_int_eq(rp_comm_available(RP_COMM_GLOO), 0);
#endif
#ifdef REPRO_HAVE_NCCL
    ck_assert_int_eq(rp_comm_available(RP_COMM_NCCL), 1);
#else
    ck_assert_int_eq(rp_comm_available(RP_COMM_NCCL), 0);
#endif
}
END_TEST

/* create must refuse with `code` and a message containing `needle`. */
static void refused(rp_comm_opts o, rp_status code, const char *needle) {
    rp_comm *c = (rp_comm *)0x1;
    rp_error err = {0};
    rp_status s = rp_comm_create(&o, &c, &err);
    ck_assert_msg(s == code, "expected %s, got %s: %s", rp_status_name(code), rp_status_name(s), err.msg);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
    ck_assert_ptr_eq(c, (rp_comm *)0x1); /* untouched on failure */
    ck_assert(strstr(err.where, "backends/") == err.where);
}

START_TEST(options_are_checked_first) {
    rp_comm_opts o = {.kind = RP_COMM_SELF, .rank = 1, .world = 1};
    refused(o, RP_ERR_INVALID, "rank 1 of world 1");
    o.rank = 0;
    o.world = 0;
    refused(o, RP_ERR_INVALID, "out of range");
    o.world = 2;
    refused(o, RP_ERR_INVALID, "world must be 1");
    o = (rp_comm_opts){.kind = (rp_comm_kind)9, .world = 1};
    refused(o, RP_ERR_INVALID, "unknown backend kind");
    o = (rp_comm_opts){.kind = RP_COMM_SELF, .world = 1, .mem = (rp_mem_kind)5};
    refused(o, RP_ERR_INVALID, "unknown memory kind");
    if (rp_comm_available(RP_COMM_GLOO)) {
        /* no store, two stores: refused before anything is contacted (no
         * such directory is created, no Redis connection tried) */
        o = (rp_comm_opts){.kind = RP_COMM_GLOO, .rank = 0, .world = 2};
        refused(o, RP_ERR_INVALID, "exactly one rendezvous store");
        o.store_dir = "/nonexistent/should-not-be-created";
        o.redis_host = "127.0.0.1";
        refused(o, RP_ERR_INVALID, "got both");
        ck_assert_int_ne(access("/nonexistent/should-not-be-created", F_OK), 0);
        o.redis_host = NULL;
        o.redis_port = 70000;
        refused(o, RP_ERR_INVALID, "redis port");
    }
    if (rp_comm_available(RP_COMM_NCCL)) {
        o = (rp_comm_opts){.kind = RP_COMM_NCCL, .rank = 0, .world = 1, .store_dir = "/tmp/x"};
        refused(o, RP_ERR_INVALID, "mem = cuda");
        o.mem = RP_MEM_CUDA;
        o.cuda_device = -1;
        refused(o, RP_ERR_INVALID, "negative");
        /* host buffers staged through the GPU: host memory only, and a device to stage on */
        o.host_staged = 1;
        o.cuda_device = 0;
        refused(o, RP_ERR_INVALID, "host_staged stages host buffers; it needs mem = host");
        o.mem = RP_MEM_HOST;
        o.cuda_device = -1;
        refused(o, RP_ERR_INVALID, "negative");
    } else {
        o = (rp_comm_opts){.kind = RP_COMM_NCCL, .rank = 0, .world = 1, .store_dir = "/tmp/x",
                           .mem = RP_MEM_CUDA};
        refused(o, RP_ERR_UNSUPPORTED, "no nccl backend");
    }
}
END_TEST

static rp_comm *make_self(void) {
    rp_comm_opts o = {.kind = RP_COMM_SELF, .rank = 0, .world = 1};
    rp_comm *c = NULL;
    rp_error err = {0};
    ck_assert_int_eq(rp_comm_create(&o, &c, &err), RP_OK);
    ck_assert_ptr_nonnull(c);
    return c;
}

START_TEST(self_defaults) {
    rp_comm *c = make_self();
    ck_assert_int_eq(c->rank, 0);
    ck_assert_int_eq(c->world, 1);
    ck_assert_int_eq(c->kind, RP_COMM_SELF);
    ck_assert_int_eq(c->mem, RP_MEM_HOST);
    ck_assert(c->timeout_s == RP_COMM_DEFAULT_TIMEOUT_S);
    ck_assert_str_eq(c->ops->name, "self");
    rp_comm_destroy(c);
    rp_comm_destroy(NULL);
}
END_TEST

START_TEST(self_collectives_are_exact) {
    rp_comm *c = make_self();
    rp_error err = {0};
    float buf[5] = {1.5f, -2, NAN, 0, 3e38f}, copy[5];
    memcpy(copy, buf, sizeof buf);
    ck_assert_int_eq(c->ops->allreduce(c, buf, 5, RP_REDUCE_SUM, &err), RP_OK);
    ck_assert_int_eq(memcmp(buf, copy, sizeof buf), 0); /* bits, NaN included */
    ck_assert_int_eq(c->ops->allreduce(c, buf, 5, RP_REDUCE_MAX, &err), RP_OK);
    ck_assert_int_eq(memcmp(buf, copy, sizeof buf), 0);
    ck_assert_int_eq(c->ops->allreduce(c, buf, 5, (rp_reduce_op)7, &err), RP_ERR_INVALID);
    ck_assert_int_eq(c->ops->allreduce(c, NULL, 0, RP_REDUCE_SUM, &err), RP_OK);

    float out[5] = {0};
    ck_assert_int_eq(c->ops->allgather(c, copy, 5, out, &err), RP_OK);
    ck_assert_int_eq(memcmp(out, copy, sizeof out), 0);
    memset(out, 0, sizeof out);
    ck_assert_int_eq(c->ops->alltoall(c, copy, out, 5, &err), RP_OK);
    ck_assert_int_eq(memcmp(out, copy, sizeof out), 0);
    ck_assert_int_eq(c->ops->allgather(c, NULL, 0, NULL, &err), RP_OK);

    /* alltoallv: 3 elements from offset 2 land at offset 4; the rest stays */
    float src[6] = {9, 9, 1, 2, 3, 9}, dst[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    size_t sc[1] = {3}, sd[1] = {2}, rc[1] = {3}, rd[1] = {4};
    ck_assert_int_eq(c->ops->alltoallv(c, src, sc, sd, dst, rc, rd, &err), RP_OK);
    const float want[8] = {-1, -1, -1, -1, 1, 2, 3, -1};
    ck_assert_int_eq(memcmp(dst, want, sizeof dst), 0);
    rc[0] = 2;
    ck_assert_int_eq(c->ops->alltoallv(c, src, sc, sd, dst, rc, rd, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "sends itself 3 elements but expects 2"));
    ck_assert_int_eq(c->ops->alltoallv(c, src, NULL, sd, dst, rc, rd, &err), RP_ERR_INVALID);

    unsigned char bytes[3] = {1, 2, 3};
    ck_assert_int_eq(c->ops->broadcast(c, bytes, 3, 0, &err), RP_OK);
    ck_assert_int_eq(bytes[2], 3);
    ck_assert_int_eq(c->ops->broadcast(c, bytes, 3, 1, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "root 1 out of range"));
    ck_assert_int_eq(c->ops->barrier(c, &err), RP_OK);
    rp_comm_destroy(c);
}
END_TEST

START_TEST(self_point_to_point) {
    rp_comm *c = make_self();
    rp_error err = {0};
    char a[4] = "abc", b[4] = "xyz";
    /* there is no other rank: blocking send/recv to oneself is refused */
    ck_assert_int_eq(c->ops->send(c, a, 4, 0, 0, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "would deadlock"));
    ck_assert_int_eq(c->ops->recv(c, b, 4, 1, 0, &err), RP_ERR_INVALID);
    ck_assert_int_eq(c->ops->send(c, a, 4, 0, -1, &err), RP_ERR_INVALID);
    /* a ring shift on one rank is a local copy */
    ck_assert_int_eq(c->ops->sendrecv(c, a, 4, 0, b, 4, 0, 5, &err), RP_OK);
    ck_assert_str_eq(b, "abc");
    ck_assert_int_eq(c->ops->sendrecv(c, a, 4, 0, b, 3, 0, 5, &err), RP_ERR_INVALID);
    ck_assert_int_eq(c->ops->sendrecv(c, a, 4, 0, b, 4, RP_COMM_NO_PEER, 5, &err), RP_ERR_INVALID);
    ck_assert_int_eq(c->ops->sendrecv(c, NULL, 0, RP_COMM_NO_PEER, NULL, 0, RP_COMM_NO_PEER, 0, &err),
                     RP_OK);
    rp_comm_destroy(c);
}
END_TEST

START_TEST(self_split) {
    rp_comm *c = make_self();
    rp_error err = {0};
    rp_comm *sub = (rp_comm *)0x1;
    ck_assert_int_eq(c->ops->split(c, -1, 0, &sub, &err), RP_OK);
    ck_assert_ptr_null(sub);
    ck_assert_int_eq(c->ops->split(c, 3, 9, &sub, &err), RP_OK);
    ck_assert_ptr_nonnull(sub);
    ck_assert_int_eq(sub->world, 1);
    ck_assert_int_eq(sub->rank, 0);
    rp_comm_destroy(c); /* the child outlives its parent */
    ck_assert_int_eq(sub->ops->barrier(sub, &err), RP_OK);
    rp_comm_destroy(sub);
}
END_TEST

START_TEST(cuda_buffers_need_a_device) {
    rp_comm_opts o = {.kind = RP_COMM_SELF, .rank = 0, .world = 1, .mem = RP_MEM_CUDA};
    rp_comm *c = NULL;
    rp_error err = {0};
    rp_status s = rp_comm_create(&o, &c, &err);
    /* OK on a machine with a GPU; otherwise a clear "unsupported" */
    ck_assert_msg(s == RP_OK || s == RP_ERR_UNSUPPORTED, "%s: %s", rp_status_name(s), err.msg);
    if (s == RP_OK) {
        ck_assert_int_eq(c->mem, RP_MEM_CUDA);
        rp_comm_destroy(c);
    } else {
        ck_assert(strstr(err.msg, "CUDA") != NULL);
    }
}
END_TEST

START_TEST(rank_lists) {
    char buf[64];
    int a[] = {3};
    rp_comm_format_ranks(a, 1, buf, sizeof buf);
    ck_assert_str_eq(buf, "3");
    int b[] = {1, 4, 5, 6, 9, 10};
    rp_comm_format_ranks(b, 6, buf, sizeof buf);
    ck_assert_str_eq(buf, "1, 4-6, 9-10");
    rp_comm_format_ranks(b, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "");
    char tiny[6];
    rp_comm_format_ranks(b, 6, tiny, sizeof tiny); /* truncates, stays terminated */
    ck_assert_uint_lt(strlen(tiny), sizeof tiny);
}
END_TEST

START_TEST(split_order_is_mpi) {
    /* colors and keys of 6 ranks; ties in key are broken by rank */
    int colors[6] = {0, 1, 0, 1, 0, -1}, keys[6] = {5, 0, 5, 2, -1, 0};
    int members[6], n, me;
    rp_comm_split_members(6, 2, colors, keys, members, &n, &me);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(members[0], 4); /* key -1 */
    ck_assert_int_eq(members[1], 0); /* key 5, rank 0 */
    ck_assert_int_eq(members[2], 2); /* key 5, rank 2 */
    ck_assert_int_eq(me, 2);
    rp_comm_split_members(6, 3, colors, keys, members, &n, &me);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(members[0], 1);
    ck_assert_int_eq(members[1], 3);
    ck_assert_int_eq(me, 1);
}
END_TEST

#ifdef REPRO_HAVE_GLOO
/* gloo with one rank goes through the real store and TCP device, in process. */
START_TEST(gloo_world_one) {
    char dir[] = "/tmp/repro-test-comm-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    rp_comm_opts o = {.kind = RP_COMM_GLOO, .rank = 0, .world = 1, .store_dir = dir,
                      .hostname = "127.0.0.1", .timeout_s = 5, .prefix = "unit"};
    rp_comm *c = NULL;
    rp_error err = {0};
    ck_assert_msg(rp_comm_create(&o, &c, &err) == RP_OK, "%s", err.msg);
    float x[3] = {1, 2, 3}, y[3];
    ck_assert_int_eq(c->ops->allreduce(c, x, 3, RP_REDUCE_SUM, &err), RP_OK);
    ck_assert(x[2] == 3);
    ck_assert_int_eq(c->ops->allgather(c, x, 3, y, &err), RP_OK);
    ck_assert(y[1] == 2);
    ck_assert_int_eq(c->ops->barrier(c, &err), RP_OK);
    rp_comm *sub = NULL;
    ck_assert_int_eq(c->ops->split(c, 0, 0, &sub, &err), RP_OK);
    ck_assert_int_eq(sub->ops->barrier(sub, &err), RP_OK);
    rp_comm_destroy(sub);
    rp_comm_destroy(c);
    /* the same store and prefix again: refused as a previous run's */
    ck_assert_int_eq(rp_comm_create(&o, &c, &err), RP_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "previous run"));
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST
#endif

int main(void) {
    Suite *s = suite_create("comm_self");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, kind_names_round_trip);
    tcase_add_test(tc, availability_matches_build);
    tcase_add_test(tc, options_are_checked_first);
    tcase_add_test(tc, self_defaults);
    tcase_add_test(tc, self_collectives_are_exact);
    tcase_add_test(tc, self_point_to_point);
    tcase_add_test(tc, self_split);
    tcase_add_test(tc, cuda_buffers_need_a_device);
    tcase_add_test(tc, rank_lists);
    tcase_add_test(tc, split_order_is_mpi);
#ifdef REPRO_HAVE_GLOO
    tcase_add_test(tc, gloo_world_one);
#endif
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
