/* comm_nccl.c — the NCCL backend: CUDA device buffers, one GPU per rank.
 *
 * Rendezvous goes through the same gloo store as the gloo backend (scope
 * "<prefix>/nccl"): every rank joins, publishes "<hostname>|<PCI bus id>" of
 * its GPU so that two ranks on one GPU are refused by every rank before NCCL
 * is touched (NCCL itself would fail late or hang), then rank 0 publishes the
 * ncclUniqueId.
 *
 * Timeouts: NCCL calls never return early on a dead peer by themselves, so the
 * communicator is created non-blocking (config.blocking = 0) and every call is
 * followed by polling ncclCommGetAsyncError and the stream against the
 * deadline; on expiry the communicator is aborted (ncclCommAbort), which is
 * what releases the GPU kernels waiting for the missing peer. Calls are
 * synchronous like the other backends: on return the buffers are final. */
#include "backends/comm_internal.h"

#ifdef REPRO_HAVE_NCCL

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

typedef struct nccl_impl {
    ncclComm_t comm;       /* owned; NULL once aborted */
    cudaStream_t stream;   /* owned; every operation runs on it */
    float *scratch;        /* one device float: the barrier's allreduce */
    int device;
    int broken;
    char broken_msg[1024];
} nccl_impl;

#define MSG_CAP 768

static nccl_impl *impl_of(rp_comm *c) { return (nccl_impl *)c->impl; }

static void pause_briefly(void) {
    struct timespec ts = {0, 50000}; /* 50 us: far below any collective's run time */
    nanosleep(&ts, NULL);
}

static const char *last_error(ncclComm_t comm) {
    const char *s = comm ? ncclGetLastError(comm) : NULL;
    return s && s[0] ? s : "no further detail";
}

/* Waits until a non-blocking communicator has left ncclInProgress (after
 * init, split, finalize or an enqueue). RP_OK when it reached ncclSuccess. */
static rp_status wait_ready(ncclComm_t comm, double t0, double timeout_s, const char *what,
                            rp_error *err) {
    for (;;) {
        ncclResult_t ae = ncclSuccess;
        ncclResult_t r = ncclCommGetAsyncError(comm, &ae);
        if (r != ncclSuccess) ae = r;
        if (ae == ncclSuccess) return RP_OK;
        if (ae != ncclInProgress)
            return RP_FAIL(err, RP_ERR_COMM, "%s failed: %s (%s)", what, ncclGetErrorString(ae),
                           last_error(comm));
        if (rp_comm_now() - t0 > timeout_s)
            return RP_FAIL(err, RP_ERR_TIMEOUT, "%s did not complete within %.1f s", what, timeout_s);
        pause_briefly();
    }
}

/* Marks c broken and aborts its communicator: aborting is what unblocks GPU
 * kernels still waiting for a dead peer, and it makes later calls fail fast. */
static void break_comm(rp_comm *c, const char *why) {
    nccl_impl *n = impl_of(c);
    if (!n->broken) snprintf(n->broken_msg, sizeof n->broken_msg, "%s", why);
    n->broken = 1;
    if (n->comm) {
        ncclCommAbort(n->comm);
        n->comm = NULL;
    }
}

static rp_status check_usable(rp_comm *c, const char *op, rp_error *err) {
    nccl_impl *n = impl_of(c);
    if (n->broken)
        return RP_FAIL(err, RP_ERR_COMM,
                       "nccl %s: rank %d of %d: communicator is broken by an earlier failure (%s)",
                       op, c->rank, c->world, n->broken_msg);
    cudaError_t e = cudaSetDevice(n->device);
    if (e != cudaSuccess)
        return RP_FAIL(err, RP_ERR_COMM, "nccl %s: rank %d of %d: cudaSetDevice(%d): %s", op,
                       c->rank, c->world, n->device, cudaGetErrorString(e));
    return RP_OK;
}

/* Completes an operation whose enqueue returned `launched` (t0: when the call
 * began): waits for NCCL to accept it, then for the stream to drain, all
 * within the timeout; on any failure aborts the communicator. what: counts
 * for the message. */
static rp_status finish(rp_comm *c, const char *op, const char *what, ncclResult_t launched,
                        double t0, rp_error *err) {
    nccl_impl *n = impl_of(c);
    char detail[512];
    rp_status s = RP_OK;
    if (launched != ncclSuccess && launched != ncclInProgress) {
        snprintf(detail, sizeof detail, "%s (%s)", ncclGetErrorString(launched), last_error(n->comm));
        s = RP_ERR_COMM;
    } else {
        for (;;) {
            ncclResult_t ae = ncclSuccess;
            ncclResult_t r = ncclCommGetAsyncError(n->comm, &ae);
            if (r != ncclSuccess) ae = r;
            if (ae != ncclSuccess && ae != ncclInProgress) {
                snprintf(detail, sizeof detail, "%s (%s)", ncclGetErrorString(ae),
                         last_error(n->comm));
                s = RP_ERR_COMM;
                break;
            }
            if (ae == ncclSuccess) {
                cudaError_t q = cudaStreamQuery(n->stream);
                if (q == cudaSuccess) return RP_OK;
                if (q != cudaErrorNotReady) {
                    snprintf(detail, sizeof detail, "CUDA: %s", cudaGetErrorString(q));
                    s = RP_ERR_COMM;
                    break;
                }
            }
            if (rp_comm_now() - t0 > c->timeout_s) {
                snprintf(detail, sizeof detail,
                         "did not complete (a peer died, hung or never made this call); "
                         "communicator aborted");
                s = RP_ERR_TIMEOUT;
                break;
            }
            pause_briefly();
        }
    }
    RP_FAIL(err, s, "nccl %s: rank %d of %d (%s) failed after %.2f s (timeout %.1f s): %s", op,
            c->rank, c->world, what, rp_comm_now() - t0, c->timeout_s, detail);
    break_comm(c, err ? err->msg : detail);
    return s;
}

static rp_status nccl_allreduce(rp_comm *c, float *buf, size_t count, rp_reduce_op op,
                                rp_error *err) {
    if (op != RP_REDUCE_SUM && op != RP_REDUCE_MAX)
        return RP_FAIL(err, RP_ERR_INVALID, "nccl allreduce: unknown reduce op %d", (int)op);
    RP_TRY(check_usable(c, "allreduce", err));
    if (count == 0) return RP_OK;
    if (!buf) return RP_FAIL(err, RP_ERR_INVALID, "nccl allreduce: rank %d: NULL buffer", c->rank);
    double t0 = rp_comm_now();
    ncclResult_t r = ncclAllReduce(buf, buf, count, ncclFloat32, op == RP_REDUCE_MAX ? ncclMax : ncclSum,
                                   impl_of(c)->comm, impl_of(c)->stream);
    char what[96];
    snprintf(what, sizeof what, "%zu floats, %s", count, op == RP_REDUCE_MAX ? "max" : "sum");
    return finish(c, "allreduce", what, r, t0, err);
}

static rp_status nccl_allgather(rp_comm *c, const float *send, size_t count, float *recv,
                                rp_error *err) {
    size_t total;
    RP_TRY(rp_comm_check_mul(c, "allgather", count, (size_t)c->world * sizeof(float), &total, err));
    RP_TRY(check_usable(c, "allgather", err));
    if (count == 0) return RP_OK;
    if (!send || !recv)
        return RP_FAIL(err, RP_ERR_INVALID, "nccl allgather: rank %d: NULL buffer", c->rank);
    double t0 = rp_comm_now();
    ncclResult_t r = ncclAllGather(send, recv, count, ncclFloat32, impl_of(c)->comm,
                                   impl_of(c)->stream);
    char what[64];
    snprintf(what, sizeof what, "%zu floats per rank", count);
    return finish(c, "allgather", what, r, t0, err);
}

/* alltoall and alltoallv as grouped send/recv (what NCCL's own alltoall does;
 * portable to NCCL versions without ncclAlltoAll). Zero pieces are skipped. */
static ncclResult_t grouped(rp_comm *c, const float *send, const size_t *sc, const size_t *sd,
                            float *recv, const size_t *rc, const size_t *rd, size_t uniform) {
    nccl_impl *n = impl_of(c);
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) return r;
    for (int p = 0; p < c->world && r == ncclSuccess; p++) {
        size_t scount = sc ? sc[p] : uniform, rcount = rc ? rc[p] : uniform;
        const float *sp = send + (sd ? sd[p] : (size_t)p * uniform);
        float *rp = recv + (rd ? rd[p] : (size_t)p * uniform);
        if (scount) r = ncclSend(sp, scount, ncclFloat32, p, n->comm, n->stream);
        if (r == ncclSuccess && rcount) r = ncclRecv(rp, rcount, ncclFloat32, p, n->comm, n->stream);
    }
    ncclResult_t e = ncclGroupEnd();
    return r != ncclSuccess ? r : e;
}

static rp_status nccl_alltoall(rp_comm *c, const float *send, float *recv, size_t count,
                               rp_error *err) {
    size_t total;
    RP_TRY(rp_comm_check_mul(c, "alltoall", count, (size_t)c->world * sizeof(float), &total, err));
    RP_TRY(check_usable(c, "alltoall", err));
    if (count == 0) return RP_OK;
    if (!send || !recv)
        return RP_FAIL(err, RP_ERR_INVALID, "nccl alltoall: rank %d: NULL buffer", c->rank);
    double t0 = rp_comm_now();
    ncclResult_t r = grouped(c, send, NULL, NULL, recv, NULL, NULL, count);
    char what[64];
    snprintf(what, sizeof what, "%zu floats per peer", count);
    return finish(c, "alltoall", what, r, t0, err);
}

static rp_status nccl_alltoallv(rp_comm *c, const float *send, const size_t *send_counts,
                                const size_t *send_displs, float *recv, const size_t *recv_counts,
                                const size_t *recv_displs, rp_error *err) {
    size_t se, re;
    RP_TRY(rp_comm_check_alltoallv(c, send_counts, send_displs, recv_counts, recv_displs, &se, &re,
                                   err));
    RP_TRY(check_usable(c, "alltoallv", err));
    if ((se && !send) || (re && !recv))
        return RP_FAIL(err, RP_ERR_INVALID, "nccl alltoallv: rank %d: NULL buffer", c->rank);
    if (se == 0 && re == 0) return RP_OK;
    double t0 = rp_comm_now();
    ncclResult_t r = grouped(c, send, send_counts, send_displs, recv, recv_counts, recv_displs, 0);
    return finish(c, "alltoallv", "variable pieces", r, t0, err);
}

static rp_status nccl_broadcast(rp_comm *c, void *buf, size_t bytes, int root, rp_error *err) {
    RP_TRY(rp_comm_check_root(c, "broadcast", root, err));
    RP_TRY(check_usable(c, "broadcast", err));
    if (bytes == 0) return RP_OK;
    if (!buf) return RP_FAIL(err, RP_ERR_INVALID, "nccl broadcast: rank %d: NULL buffer", c->rank);
    double t0 = rp_comm_now();
    ncclResult_t r = ncclBroadcast(buf, buf, bytes, ncclUint8, root, impl_of(c)->comm,
                                   impl_of(c)->stream);
    char what[64];
    snprintf(what, sizeof what, "%zu bytes from root %d", bytes, root);
    return finish(c, "broadcast", what, r, t0, err);
}

static rp_status p2p(rp_comm *c, const char *op, const void *send, size_t send_bytes, int dst,
                     void *recv, size_t recv_bytes, int src, rp_error *err) {
    nccl_impl *n = impl_of(c);
    int do_send = dst != RP_COMM_NO_PEER && send_bytes, do_recv = src != RP_COMM_NO_PEER && recv_bytes;
    if ((do_send && !send) || (do_recv && !recv))
        return RP_FAIL(err, RP_ERR_INVALID, "nccl %s: rank %d: NULL buffer", op, c->rank);
    if (!do_send && !do_recv) return RP_OK;
    double t0 = rp_comm_now();
    ncclResult_t r = ncclGroupStart();
    if (r == ncclSuccess && do_send) r = ncclSend(send, send_bytes, ncclUint8, dst, n->comm, n->stream);
    if (r == ncclSuccess && do_recv) r = ncclRecv(recv, recv_bytes, ncclUint8, src, n->comm, n->stream);
    ncclResult_t e = ncclGroupEnd();
    if (r == ncclSuccess) r = e;
    char what[128];
    snprintf(what, sizeof what, "%zu bytes to rank %d, %zu bytes from rank %d",
             do_send ? send_bytes : 0, dst, do_recv ? recv_bytes : 0, src);
    return finish(c, op, what, r, t0, err);
}

static rp_status nccl_send(rp_comm *c, const void *buf, size_t bytes, int peer, int tag,
                           rp_error *err) {
    RP_TRY(rp_comm_check_tag(c, "send", tag, err));
    RP_TRY(rp_comm_check_peer(c, "send", peer, err));
    RP_TRY(check_usable(c, "send", err));
    return p2p(c, "send", buf, bytes, peer, NULL, 0, RP_COMM_NO_PEER, err);
}

static rp_status nccl_recv(rp_comm *c, void *buf, size_t bytes, int peer, int tag,
                           rp_error *err) {
    RP_TRY(rp_comm_check_tag(c, "recv", tag, err));
    RP_TRY(rp_comm_check_peer(c, "recv", peer, err));
    RP_TRY(check_usable(c, "recv", err));
    return p2p(c, "recv", NULL, 0, RP_COMM_NO_PEER, buf, bytes, peer, err);
}

static rp_status nccl_sendrecv(rp_comm *c, const void *send, size_t send_bytes, int dst,
                               void *recv, size_t recv_bytes, int src, int tag, rp_error *err) {
    int local;
    RP_TRY(rp_comm_check_sendrecv(c, dst, send_bytes, src, recv_bytes, tag, &local, err));
    RP_TRY(check_usable(c, "sendrecv", err));
    if (local) {
        if (!send_bytes || send == recv) return RP_OK;
        cudaError_t e = cudaMemcpyAsync(recv, send, send_bytes, cudaMemcpyDeviceToDevice,
                                        impl_of(c)->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(impl_of(c)->stream);
        return e == cudaSuccess ? RP_OK
                                : RP_FAIL(err, RP_ERR_COMM, "nccl sendrecv: rank %d: local copy: %s",
                                          c->rank, cudaGetErrorString(e));
    }
    return p2p(c, "sendrecv", send, send_bytes, dst, recv, recv_bytes, src, err);
}

static rp_status nccl_barrier(rp_comm *c, rp_error *err) {
    RP_TRY(check_usable(c, "barrier", err));
    double t0 = rp_comm_now();
    ncclResult_t r = ncclAllReduce(impl_of(c)->scratch, impl_of(c)->scratch, 1, ncclFloat32,
                                   ncclSum, impl_of(c)->comm, impl_of(c)->stream);
    return finish(c, "barrier", "all ranks", r, t0, err);
}

static rp_status wrap(ncclComm_t comm, int rank, int world, double timeout_s, int device,
                      rp_comm **out, rp_error *err);

static rp_status nccl_split(rp_comm *c, int color, int key, rp_comm **out, rp_error *err) {
    *out = NULL;
    RP_TRY(check_usable(c, "split", err));
    nccl_impl *n = impl_of(c);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t child = NULL;
    double t0 = rp_comm_now();
    ncclResult_t r = ncclCommSplit(n->comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, &cfg);
    rp_status s = (r == ncclSuccess || r == ncclInProgress) ? RP_OK : RP_ERR_COMM;
    if (s != RP_OK) {
        RP_FAIL(err, s, "nccl split: rank %d of %d: %s (%s)", c->rank, c->world,
                ncclGetErrorString(r), last_error(n->comm));
        break_comm(c, err ? err->msg : "split failed");
        return s;
    }
    /* The parent and (when this rank has a color) the child both take part. */
    char what[96];
    snprintf(what, sizeof what, "nccl split: rank %d of %d, color %d", c->rank, c->world, color);
    s = wait_ready(n->comm, t0, c->timeout_s, what, err);
    if (s == RP_OK && child) s = wait_ready(child, t0, c->timeout_s, what, err);
    if (s != RP_OK) {
        if (child) ncclCommAbort(child);
        break_comm(c, err ? err->msg : what);
        return s;
    }
    if (!child) return RP_OK;
    int crank = 0, cworld = 0;
    ncclCommUserRank(child, &crank);
    ncclCommCount(child, &cworld);
    return wrap(child, crank, cworld, c->timeout_s, n->device, out, err);
}

static void nccl_destroy(rp_comm *c) {
    nccl_impl *n = impl_of(c);
    if (n) {
        cudaSetDevice(n->device);
        if (n->comm) {
            /* Finalize flushes outstanding work with the peers; if that does
             * not finish in time the communicator is aborted instead. */
            double t0 = rp_comm_now();
            ncclResult_t r = ncclCommFinalize(n->comm);
            if ((r == ncclSuccess || r == ncclInProgress) &&
                wait_ready(n->comm, t0, c->timeout_s, "finalize", NULL) == RP_OK)
                ncclCommDestroy(n->comm);
            else
                ncclCommAbort(n->comm);
        }
        if (n->scratch) cudaFree(n->scratch);
        if (n->stream) cudaStreamDestroy(n->stream);
        free(n);
    }
    free(c);
}

static const rp_comm_ops nccl_ops = {
    .name = "nccl",
    .allreduce = nccl_allreduce,
    .allgather = nccl_allgather,
    .alltoall = nccl_alltoall,
    .alltoallv = nccl_alltoallv,
    .broadcast = nccl_broadcast,
    .send = nccl_send,
    .recv = nccl_recv,
    .sendrecv = nccl_sendrecv,
    .barrier = nccl_barrier,
    .split = nccl_split,
    .destroy = nccl_destroy,
};

/* Wraps a ready communicator (ownership taken, also on failure) with its own
 * stream and barrier scratch on `device`. */
static rp_status wrap(ncclComm_t comm, int rank, int world, double timeout_s, int device,
                      rp_comm **out, rp_error *err) {
    rp_comm *c = calloc(1, sizeof *c);
    nccl_impl *n = calloc(1, sizeof *n);
    if (!c || !n) {
        free(c);
        free(n);
        ncclCommAbort(comm);
        return RP_FAIL(err, RP_ERR_NOMEM, "nccl comm: out of memory");
    }
    n->comm = comm;
    n->device = device;
    cudaError_t e = cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMalloc((void **)&n->scratch, sizeof(float));
    if (e == cudaSuccess) e = cudaMemset(n->scratch, 0, sizeof(float));
    c->ops = &nccl_ops;
    c->kind = RP_COMM_NCCL;
    c->rank = rank;
    c->world = world;
    c->timeout_s = timeout_s;
    c->mem = RP_MEM_CUDA;
    c->impl = n;
    if (e != cudaSuccess) {
        rp_status s = RP_FAIL(err, RP_ERR_COMM, "nccl comm: rank %d: stream/scratch on device %d: %s",
                              rank, device, cudaGetErrorString(e));
        n->broken = 1;
        ncclCommAbort(n->comm);
        n->comm = NULL;
        nccl_destroy(c);
        return s;
    }
    *out = c;
    return RP_OK;
}

/* Polls until key exists under st or the deadline (t0 + timeout_s) passes. */
static rp_status wait_key(rp_gloo_store *st, const char *key, int rank, int world, double t0,
                          double timeout_s, const char *what, rp_error *err) {
    char msg[MSG_CAP];
    for (;;) {
        int present = 0;
        int rc = rp_gloo_store_has(st, key, &present, msg, sizeof msg);
        if (rc != RP_GLOO_OK)
            return RP_FAIL(err, rp_comm_gloo_status(rc), "nccl rendezvous: rank %d of %d: %s", rank,
                           world, msg);
        if (present) return RP_OK;
        if (rp_comm_now() - t0 > timeout_s)
            return RP_FAIL(err, RP_ERR_TIMEOUT,
                           "nccl rendezvous: rank %d of %d waited %.1f s in %s for %s",
                           rank, world, rp_comm_now() - t0, rp_gloo_store_where(st), what);
        struct timespec ts = {0, 5000000}; /* 5 ms: store polls cost a syscall or a Redis trip */
        nanosleep(&ts, NULL);
    }
}

/* "host|bus|ordinal" -> host, bus (truncated to fit). */
static void split_gpu_id(const char *id, char *host, size_t hcap, char *bus, size_t bcap) {
    const char *a = strchr(id, '|');
    const char *b = a ? strchr(a + 1, '|') : NULL;
    snprintf(host, hcap, "%.*s", a ? (int)(a - id) : (int)strlen(id), id);
    snprintf(bus, bcap, "%.*s", a ? (int)(b ? b - (a + 1) : (ptrdiff_t)strlen(a + 1)) : 0,
             a ? a + 1 : "");
}

/* Publishes this rank's GPU and refuses when two ranks would share one:
 * every rank compares every pair, so all of them fail at once. */
static rp_status check_gpus(rp_gloo_store *st, const rp_comm_opts *o, double t0, rp_error *err) {
    char key[64], mine[160], msg[MSG_CAP], host[64] = "?", bus[32] = "?";
    gethostname(host, sizeof host - 1);
    cudaError_t e = cudaDeviceGetPCIBusId(bus, sizeof bus, o->cuda_device);
    if (e != cudaSuccess)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "nccl comm: rank %d: PCI bus id of device %d: %s",
                       o->rank, o->cuda_device, cudaGetErrorString(e));
    int len = snprintf(mine, sizeof mine, "%s|%s|%d", host, bus, o->cuda_device);
    snprintf(key, sizeof key, "gpu/%d", o->rank);
    int rc = rp_gloo_store_set(st, key, mine, (size_t)len, msg, sizeof msg);
    if (rc != RP_GLOO_OK)
        return RP_FAIL(err, rp_comm_gloo_status(rc), "nccl rendezvous: rank %d of %d: %s", o->rank,
                       o->world, msg);
    char (*ids)[160] = calloc((size_t)o->world, sizeof *ids);
    if (!ids) return RP_FAIL(err, RP_ERR_NOMEM, "nccl rendezvous: out of memory");
    rp_status s = RP_OK;
    for (int r = 0; r < o->world && s == RP_OK; r++) {
        snprintf(key, sizeof key, "gpu/%d", r);
        char what[96];
        snprintf(what, sizeof what, "rank %d's GPU identity", r);
        s = wait_key(st, key, o->rank, o->world, t0, o->timeout_s, what, err);
        size_t got = 0;
        if (s == RP_OK && (rc = rp_gloo_store_get(st, key, ids[r], sizeof ids[r] - 1, &got, msg,
                                                  sizeof msg)) != RP_GLOO_OK)
            s = RP_FAIL(err, rp_comm_gloo_status(rc), "nccl rendezvous: rank %d of %d: %s", o->rank,
                        o->world, msg);
    }
    for (int a = 0; a < o->world && s == RP_OK; a++)
        for (int b = a + 1; b < o->world && s == RP_OK; b++) {
            /* compare host and bus id, not the ordinal: CUDA_VISIBLE_DEVICES renumbers */
            char ha[64], ba[32], hb[64], bb[32];
            split_gpu_id(ids[a], ha, sizeof ha, ba, sizeof ba);
            split_gpu_id(ids[b], hb, sizeof hb, bb, sizeof bb);
            if (strcmp(ha, hb) == 0 && strcmp(ba, bb) == 0)
                s = RP_FAIL(err, RP_ERR_INVALID,
                            "nccl comm: ranks %d and %d would both use GPU %s on host %s (NCCL "
                            "needs one GPU per rank); give each rank its own device, e.g. "
                            "cuda_device = local rank", a, b, ba, ha);
        }
    free(ids);
    return s;
}

rp_status rp_comm_nccl_create(const rp_comm_opts *o, rp_comm **out, rp_error *err) {
    assert(o->mem == RP_MEM_CUDA);
    RP_TRY(rp_comm_cuda_check_device("nccl", o->rank, o->cuda_device, err));
    if (o->store_dir) RP_TRY(rp_comm_mkdirs(o->store_dir, err));
    char msg[MSG_CAP], sub[16] = "nccl";
    rp_gloo_store *root = NULL, *st = NULL;
    int rc = rp_gloo_store_open(o->store_dir, o->redis_host, o->redis_port, o->prefix, &root, msg,
                                sizeof msg);
    if (rc == RP_GLOO_OK) rc = rp_gloo_store_scope(root, sub, &st, msg, sizeof msg);
    rp_gloo_store_close(root);
    if (rc != RP_GLOO_OK)
        return RP_FAIL(err, rp_comm_gloo_status(rc), "nccl rendezvous: rank %d of %d: %s", o->rank,
                       o->world, msg);
    double t0 = rp_comm_now();
    rp_status s = rp_comm_store_join(st, "nccl", o->rank, o->world, o->timeout_s, err);
    if (s == RP_OK) s = check_gpus(st, o, t0, err);
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (s == RP_OK && o->rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&id);
        if (r != ncclSuccess)
            s = RP_FAIL(err, RP_ERR_COMM, "nccl comm: rank 0: ncclGetUniqueId: %s",
                        ncclGetErrorString(r));
        else if ((rc = rp_gloo_store_set(st, "uid", &id, sizeof id, msg, sizeof msg)) != RP_GLOO_OK)
            s = RP_FAIL(err, rp_comm_gloo_status(rc), "nccl rendezvous: rank 0: %s", msg);
    } else if (s == RP_OK) {
        size_t got = 0;
        s = wait_key(st, "uid", o->rank, o->world, t0, o->timeout_s, "rank 0's ncclUniqueId", err);
        if (s == RP_OK && (rc = rp_gloo_store_get(st, "uid", &id, sizeof id, &got, msg,
                                                  sizeof msg)) != RP_GLOO_OK)
            s = RP_FAIL(err, rp_comm_gloo_status(rc), "nccl rendezvous: rank %d: %s", o->rank, msg);
        if (s == RP_OK && got != sizeof id)
            s = RP_FAIL(err, RP_ERR_COMM, "nccl rendezvous: rank %d: unique id has %zu bytes, "
                        "expected %zu (rank 0 runs another NCCL version?)", o->rank, got, sizeof id);
    }
    rp_gloo_store_close(st);
    if (s != RP_OK) return s;

    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t comm = NULL;
    ncclResult_t r = ncclCommInitRankConfig(&comm, o->world, id, o->rank, &cfg);
    if (r != ncclSuccess && r != ncclInProgress) {
        s = RP_FAIL(err, RP_ERR_COMM, "nccl comm: rank %d of %d on device %d: ncclCommInitRank: %s (%s)",
                    o->rank, o->world, o->cuda_device, ncclGetErrorString(r), last_error(comm));
        if (comm) ncclCommAbort(comm);
        return s;
    }
    char what[96];
    snprintf(what, sizeof what, "nccl comm: rank %d of %d: ncclCommInitRank", o->rank, o->world);
    s = wait_ready(comm, t0, o->timeout_s, what, err);
    if (s != RP_OK) {
        ncclCommAbort(comm);
        return s;
    }
    return wrap(comm, o->rank, o->world, o->timeout_s, o->cuda_device, out, err);
}

#else
typedef int rp_comm_nccl_unavailable;
#endif
