/* comm_stage.c — CUDA buffers over a host-memory backend (self, gloo): every
 * call copies its device inputs to host memory, runs the host backend's call,
 * and copies the results back. Slow by design; it lets a layout over gloo run
 * the same GPU code path as one over nccl, so the two can be compared.
 * Synchronous like the host backends: cudaMemcpy on the legacy default stream
 * orders the copies after the caller's earlier work on that stream (callers on
 * other streams synchronise them first). */
#include "backends/comm_internal.h"

#ifdef REPRO_HAVE_CUDA

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

typedef struct stage_impl {
    rp_comm *inner;  /* owned; host memory */
    int device;
} stage_impl;

static rp_comm *inner_of(rp_comm *c) { return ((stage_impl *)c->impl)->inner; }

rp_status rp_comm_cuda_check_device(const char *backend, int rank, int device, rp_error *err) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED,
                       "%s comm: rank %d: no CUDA device visible (%s)", backend, rank,
                       e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
    if (device >= n)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED,
                       "%s comm: rank %d: CUDA device %d requested but only %d visible", backend,
                       rank, device, n);
    if ((e = cudaSetDevice(device)) != cudaSuccess)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "%s comm: rank %d: cannot use CUDA device %d: %s",
                       backend, rank, device, cudaGetErrorString(e));
    return RP_OK;
}

/* Copies bytes between host and device (kind), naming op in the error. */
static rp_status copy(rp_comm *c, const char *op, void *dst, const void *src, size_t bytes,
                      enum cudaMemcpyKind kind, rp_error *err) {
    if (bytes == 0) return RP_OK;
    cudaError_t e = cudaMemcpy(dst, src, bytes, kind);
    if (e != cudaSuccess)
        return RP_FAIL(err, RP_ERR_IO, "%s %s: rank %d of %d: staging copy %s of %zu bytes failed: %s",
                       inner_of(c)->ops->name, op, c->rank, c->world,
                       kind == cudaMemcpyDeviceToHost ? "device->host" : "host->device", bytes,
                       cudaGetErrorString(e));
    return RP_OK;
}

static void *host_alloc(size_t bytes) { return malloc(bytes ? bytes : 1); }

#define NOMEM(op) RP_FAIL(err, RP_ERR_NOMEM, "%s %s: staging buffer: out of memory", \
                          inner_of(c)->ops->name, op)

static rp_status st_allreduce(rp_comm *c, float *buf, size_t count, rp_reduce_op op,
                              rp_error *err) {
    size_t bytes;
    RP_TRY(rp_comm_check_mul(c, "allreduce", count, sizeof(float), &bytes, err));
    float *h = host_alloc(bytes);
    if (!h) return NOMEM("allreduce");
    rp_status s = copy(c, "allreduce", h, buf, bytes, cudaMemcpyDeviceToHost, err);
    if (s == RP_OK) s = inner_of(c)->ops->allreduce(inner_of(c), h, count, op, err);
    if (s == RP_OK) s = copy(c, "allreduce", buf, h, bytes, cudaMemcpyHostToDevice, err);
    free(h);
    return s;
}

static rp_status st_allgather(rp_comm *c, const float *send, size_t count, float *recv,
                              rp_error *err) {
    size_t sb, total, rb;
    RP_TRY(rp_comm_check_mul(c, "allgather", count, sizeof(float), &sb, err));
    RP_TRY(rp_comm_check_mul(c, "allgather", count, (size_t)c->world, &total, err));
    RP_TRY(rp_comm_check_mul(c, "allgather", total, sizeof(float), &rb, err));
    float *hs = host_alloc(sb), *hr = host_alloc(rb);
    rp_status s = (!hs || !hr) ? NOMEM("allgather") : RP_OK;
    if (s == RP_OK) s = copy(c, "allgather", hs, send, sb, cudaMemcpyDeviceToHost, err);
    if (s == RP_OK) s = inner_of(c)->ops->allgather(inner_of(c), hs, count, hr, err);
    if (s == RP_OK) s = copy(c, "allgather", recv, hr, rb, cudaMemcpyHostToDevice, err);
    free(hs);
    free(hr);
    return s;
}

static rp_status st_alltoall(rp_comm *c, const float *send, float *recv, size_t count,
                             rp_error *err) {
    size_t total, bytes;
    RP_TRY(rp_comm_check_mul(c, "alltoall", count, (size_t)c->world, &total, err));
    RP_TRY(rp_comm_check_mul(c, "alltoall", total, sizeof(float), &bytes, err));
    float *hs = host_alloc(bytes), *hr = host_alloc(bytes);
    rp_status s = (!hs || !hr) ? NOMEM("alltoall") : RP_OK;
    if (s == RP_OK) s = copy(c, "alltoall", hs, send, bytes, cudaMemcpyDeviceToHost, err);
    if (s == RP_OK) s = inner_of(c)->ops->alltoall(inner_of(c), hs, hr, count, err);
    if (s == RP_OK) s = copy(c, "alltoall", recv, hr, bytes, cudaMemcpyHostToDevice, err);
    free(hs);
    free(hr);
    return s;
}

/* Only the received pieces are copied back: the gaps between them belong to
 * the caller and must keep their device contents. */
static rp_status st_alltoallv(rp_comm *c, const float *send, const size_t *send_counts,
                              const size_t *send_displs, float *recv, const size_t *recv_counts,
                              const size_t *recv_displs, rp_error *err) {
    size_t se, re;
    RP_TRY(rp_comm_check_alltoallv(c, send_counts, send_displs, recv_counts, recv_displs, &se, &re,
                                   err));
    float *hs = host_alloc(se * sizeof(float)), *hr = host_alloc(re * sizeof(float));
    rp_status s = (!hs || !hr) ? NOMEM("alltoallv") : RP_OK;
    if (s == RP_OK)
        s = copy(c, "alltoallv", hs, send, se * sizeof(float), cudaMemcpyDeviceToHost, err);
    if (s == RP_OK)
        s = inner_of(c)->ops->alltoallv(inner_of(c), hs, send_counts, send_displs, hr,
                                        recv_counts, recv_displs, err);
    for (int p = 0; s == RP_OK && p < c->world; p++)
        s = copy(c, "alltoallv", recv + recv_displs[p], hr + recv_displs[p],
                 recv_counts[p] * sizeof(float), cudaMemcpyHostToDevice, err);
    free(hs);
    free(hr);
    return s;
}

static rp_status st_broadcast(rp_comm *c, void *buf, size_t bytes, int root, rp_error *err) {
    RP_TRY(rp_comm_check_root(c, "broadcast", root, err));
    void *h = host_alloc(bytes);
    if (!h) return NOMEM("broadcast");
    rp_status s = RP_OK;
    if (c->rank == root) s = copy(c, "broadcast", h, buf, bytes, cudaMemcpyDeviceToHost, err);
    if (s == RP_OK) s = inner_of(c)->ops->broadcast(inner_of(c), h, bytes, root, err);
    if (s == RP_OK && c->rank != root)
        s = copy(c, "broadcast", buf, h, bytes, cudaMemcpyHostToDevice, err);
    free(h);
    return s;
}

static rp_status st_sendrecv(rp_comm *c, const void *send, size_t send_bytes, int dst,
                             void *recv, size_t recv_bytes, int src, int tag, rp_error *err) {
    int local;
    RP_TRY(rp_comm_check_sendrecv(c, dst, send_bytes, src, recv_bytes, tag, &local, err));
    if (local) {
        cudaError_t e = send_bytes && send != recv
                            ? cudaMemcpy(recv, send, send_bytes, cudaMemcpyDeviceToDevice)
                            : cudaSuccess;
        return e == cudaSuccess ? RP_OK
                                : RP_FAIL(err, RP_ERR_IO, "sendrecv: rank %d: local copy failed: %s",
                                          c->rank, cudaGetErrorString(e));
    }
    int do_send = dst != RP_COMM_NO_PEER, do_recv = src != RP_COMM_NO_PEER;
    void *hs = do_send ? host_alloc(send_bytes) : NULL, *hr = do_recv ? host_alloc(recv_bytes) : NULL;
    rp_status s = ((do_send && !hs) || (do_recv && !hr)) ? NOMEM("sendrecv") : RP_OK;
    if (s == RP_OK && do_send)
        s = copy(c, "sendrecv", hs, send, send_bytes, cudaMemcpyDeviceToHost, err);
    if (s == RP_OK)
        s = inner_of(c)->ops->sendrecv(inner_of(c), hs, do_send ? send_bytes : 0, dst, hr,
                                       do_recv ? recv_bytes : 0, src, tag, err);
    if (s == RP_OK && do_recv)
        s = copy(c, "sendrecv", recv, hr, recv_bytes, cudaMemcpyHostToDevice, err);
    free(hs);
    free(hr);
    return s;
}

static rp_status st_send(rp_comm *c, const void *buf, size_t bytes, int peer, int tag,
                         rp_error *err) {
    RP_TRY(rp_comm_check_tag(c, "send", tag, err));
    RP_TRY(rp_comm_check_peer(c, "send", peer, err));
    void *h = host_alloc(bytes);
    if (!h) return NOMEM("send");
    rp_status s = copy(c, "send", h, buf, bytes, cudaMemcpyDeviceToHost, err);
    if (s == RP_OK) s = inner_of(c)->ops->send(inner_of(c), h, bytes, peer, tag, err);
    free(h);
    return s;
}

static rp_status st_recv(rp_comm *c, void *buf, size_t bytes, int peer, int tag, rp_error *err) {
    RP_TRY(rp_comm_check_tag(c, "recv", tag, err));
    RP_TRY(rp_comm_check_peer(c, "recv", peer, err));
    void *h = host_alloc(bytes);
    if (!h) return NOMEM("recv");
    rp_status s = inner_of(c)->ops->recv(inner_of(c), h, bytes, peer, tag, err);
    if (s == RP_OK) s = copy(c, "recv", buf, h, bytes, cudaMemcpyHostToDevice, err);
    free(h);
    return s;
}

static rp_status st_barrier(rp_comm *c, rp_error *err) {
    return inner_of(c)->ops->barrier(inner_of(c), err);
}

static rp_status st_split(rp_comm *c, int color, int key, rp_comm **out, rp_error *err) {
    rp_comm *child = NULL;
    *out = NULL;
    RP_TRY(inner_of(c)->ops->split(inner_of(c), color, key, &child, err));
    if (!child) return RP_OK;
    return rp_comm_stage_wrap(child, ((stage_impl *)c->impl)->device, out, err);
}

static void st_destroy(rp_comm *c) {
    stage_impl *s = c->impl;
    rp_comm_destroy(s->inner);
    free(s);
    free(c);
}

static const rp_comm_ops stage_ops = {
    .name = "cuda-staged",
    .allreduce = st_allreduce,
    .allgather = st_allgather,
    .alltoall = st_alltoall,
    .alltoallv = st_alltoallv,
    .broadcast = st_broadcast,
    .send = st_send,
    .recv = st_recv,
    .sendrecv = st_sendrecv,
    .barrier = st_barrier,
    .split = st_split,
    .destroy = st_destroy,
};

rp_status rp_comm_stage_wrap(rp_comm *inner, int cuda_device, rp_comm **out, rp_error *err) {
    assert(inner && inner->mem == RP_MEM_HOST);
    rp_comm *c = calloc(1, sizeof *c);
    stage_impl *s = calloc(1, sizeof *s);
    if (!c || !s) {
        free(c);
        free(s);
        rp_comm_destroy(inner);
        return RP_FAIL(err, RP_ERR_NOMEM, "cuda-staged comm: out of memory");
    }
    s->inner = inner;
    s->device = cuda_device;
    c->ops = &stage_ops;
    c->kind = inner->kind;
    c->rank = inner->rank;
    c->world = inner->world;
    c->timeout_s = inner->timeout_s;
    c->mem = RP_MEM_CUDA;
    c->impl = s;
    *out = c;
    return RP_OK;
}

#else
typedef int rp_comm_stage_unavailable;
#endif
