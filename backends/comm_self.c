/* comm_self.c — the world-1 backend: every collective is a local copy or
 * nothing, with the same argument rules as the multi-rank backends so code
 * tested on one rank does not break on several. Host memory only; comm.c
 * wraps it for CUDA buffers. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "backends/comm_internal.h"

/* memmove, not memcpy: allgather/alltoall from a buffer onto itself is a
 * caller bug elsewhere, but here it must not be undefined behaviour. */
static void copy(void *dst, const void *src, size_t bytes) {
    if (bytes && dst != src) memmove(dst, src, bytes);
}

static rp_status self_allreduce(rp_comm *c, float *buf, size_t count, rp_reduce_op op,
                                rp_error *err) {
    if (op != RP_REDUCE_SUM && op != RP_REDUCE_MAX)
        return RP_FAIL(err, RP_ERR_INVALID, "self allreduce: unknown reduce op %d", (int)op);
    if (count && !buf) return RP_FAIL(err, RP_ERR_INVALID, "self allreduce: NULL buffer");
    return RP_OK; /* one contribution: the reduction is the input itself */
}

static rp_status self_allgather(rp_comm *c, const float *send, size_t count, float *recv,
                                rp_error *err) {
    size_t bytes;
    RP_TRY(rp_comm_check_mul(c, "allgather", count, sizeof(float), &bytes, err));
    if (count && (!send || !recv)) return RP_FAIL(err, RP_ERR_INVALID, "self allgather: NULL buffer");
    copy(recv, send, bytes);
    return RP_OK;
}

static rp_status self_alltoall(rp_comm *c, const float *send, float *recv, size_t count,
                               rp_error *err) {
    size_t bytes;
    RP_TRY(rp_comm_check_mul(c, "alltoall", count, sizeof(float), &bytes, err));
    if (count && (!send || !recv)) return RP_FAIL(err, RP_ERR_INVALID, "self alltoall: NULL buffer");
    copy(recv, send, bytes);
    return RP_OK;
}

static rp_status self_alltoallv(rp_comm *c, const float *send, const size_t *send_counts,
                                const size_t *send_displs, float *recv, const size_t *recv_counts,
                                const size_t *recv_displs, rp_error *err) {
    size_t se, re;
    RP_TRY(rp_comm_check_alltoallv(c, send_counts, send_displs, recv_counts, recv_displs, &se,
                                   &re, err));
    if ((se && !send) || (re && !recv))
        return RP_FAIL(err, RP_ERR_INVALID, "self alltoallv: NULL buffer");
    copy(recv + recv_displs[0], send + send_displs[0], send_counts[0] * sizeof(float));
    return RP_OK;
}

static rp_status self_broadcast(rp_comm *c, void *buf, size_t bytes, int root, rp_error *err) {
    return rp_comm_check_root(c, "broadcast", root, err);
}

static rp_status self_send(rp_comm *c, const void *buf, size_t bytes, int peer, int tag,
                           rp_error *err) {
    RP_TRY(rp_comm_check_tag(c, "send", tag, err));
    return rp_comm_check_peer(c, "send", peer, err); /* always fails: there is no other rank */
}

static rp_status self_recv(rp_comm *c, void *buf, size_t bytes, int peer, int tag,
                           rp_error *err) {
    RP_TRY(rp_comm_check_tag(c, "recv", tag, err));
    return rp_comm_check_peer(c, "recv", peer, err);
}

static rp_status self_sendrecv(rp_comm *c, const void *send, size_t send_bytes, int dst,
                               void *recv, size_t recv_bytes, int src, int tag, rp_error *err) {
    int local;
    RP_TRY(rp_comm_check_sendrecv(c, dst, send_bytes, src, recv_bytes, tag, &local, err));
    assert(local || (dst == RP_COMM_NO_PEER && src == RP_COMM_NO_PEER));
    if (local) copy(recv, send, send_bytes);
    return RP_OK;
}

static rp_status self_barrier(rp_comm *c, rp_error *err) { return RP_OK; }

static rp_status self_split(rp_comm *c, int color, int key, rp_comm **out, rp_error *err) {
    *out = NULL;
    if (color < 0) return RP_OK;
    rp_comm_opts o = {.kind = RP_COMM_SELF, .rank = 0, .world = 1, .timeout_s = c->timeout_s};
    return rp_comm_self_create(&o, out, err);
}

static void self_destroy(rp_comm *c) { free(c); }

static const rp_comm_ops self_ops = {
    .name = "self",
    .allreduce = self_allreduce,
    .allgather = self_allgather,
    .alltoall = self_alltoall,
    .alltoallv = self_alltoallv,
    .broadcast = self_broadcast,
    .send = self_send,
    .recv = self_recv,
    .sendrecv = self_sendrecv,
    .barrier = self_barrier,
    .split = self_split,
    .destroy = self_destroy,
};

rp_status rp_comm_self_create(const rp_comm_opts *o, rp_comm **out, rp_error *err) {
    assert(o->world == 1 && o->rank == 0 && o->mem == RP_MEM_HOST);
    rp_comm *c = calloc(1, sizeof *c);
    if (!c) return RP_FAIL(err, RP_ERR_NOMEM, "self comm: out of memory");
    c->ops = &self_ops;
    c->kind = RP_COMM_SELF;
    c->rank = 0;
    c->world = 1;
    c->timeout_s = o->timeout_s > 0 ? o->timeout_s : RP_COMM_DEFAULT_TIMEOUT_S;
    c->mem = RP_MEM_HOST;
    *out = c;
    return RP_OK;
}
