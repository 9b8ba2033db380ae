/* comm_hstage.c — HOST buffers over a device-memory backend (nccl): the inverse of
 * comm_stage.c. Every call copies its host inputs into one device scratch buffer of
 * the communicator, runs the device backend's call on the scratch, and copies the
 * results back to the host. For callers whose data lives on the host between device
 * computations (the pipeline's CFG allgather, dp gather and the sequence-parallel
 * exchanges it stages through the host), so NCCL transports them GPU to GPU.
 *
 * The scratch: one block per communicator (a split child gets its own), allocated at
 * the first call and regrown (freed, then allocated at the new size) when a call needs
 * more; the pieces a call uses start at 256-byte offsets. Freed at destroy.
 *
 * Ordering: the inputs go in with cudaMemcpy on the legacy default stream followed by
 * a synchronisation of that stream (a pageable host->device cudaMemcpy may return
 * before the data has landed, and NCCL runs on its own non-blocking stream, which does
 * not wait for the legacy one); the device backend drains its stream before it returns,
 * and the device->host cudaMemcpy then returns with the data in host memory. So calls
 * are synchronous like every backend's: on return the host buffers are final.
 *
 * Bits: the collective runs on exactly the values given (a copy is exact), so results
 * are those of the same call on device buffers. */
#include "backends/comm_internal.h"

#ifdef REPRO_HAVE_CUDA

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

typedef struct hstage_impl {
    rp_comm *inner; /* owned; device memory */
    int device;
    void *scratch;  /* device */
    size_t cap;     /* bytes of scratch */
} hstage_impl;

#define ALIGN_UP(n) (((n) + 255u) & ~(size_t)255u)

static hstage_impl *impl_of(rp_comm *c) { return (hstage_impl *)c->impl; }
static rp_comm *inner_of(rp_comm *c) { return impl_of(c)->inner; }

/* Makes the device current and the scratch at least bytes large. */
static rp_status scratch(rp_comm *c, const char *op, size_t bytes, char **out, rp_error *err) {
    hstage_impl *h = impl_of(c);
    cudaError_t e = cudaSetDevice(h->device);
    if (e != cudaSuccess)
        return RP_FAIL(err, RP_ERR_COMM, "%s %s (host-staged): rank %d of %d: cudaSetDevice(%d): %s",
                       inner_of(c)->ops->name, op, c->rank, c->world, h->device, cudaGetErrorString(e));
    if (bytes == 0) bytes = 1;
    if (bytes > h->cap) {
        if (h->scratch) cudaFree(h->scratch); /* the device backend drained its stream */
        h->scratch = NULL;
        h->cap = 0;
        size_t want = ALIGN_UP(bytes);
        if (want < ((size_t)1 << 20)) want = (size_t)1 << 20; /* small calls share one 1 MiB block */
        if ((e = cudaMalloc(&h->scratch, want)) != cudaSuccess) {
            cudaGetLastError();
            h->scratch = NULL;
            return RP_FAIL(err, RP_ERR_NOMEM,
                           "%s %s (host-staged): rank %d of %d: %zu bytes of device scratch on GPU %d: %s",
                           inner_of(c)->ops->name, op, c->rank, c->world, want, h->device, cudaGetErrorString(e));
        }
        h->cap = want;
    }
    *out = h->scratch;
    return RP_OK;
}

/* Host -> device, complete on return. */
static rp_status put(rp_comm *c, const char *op, void *dst, const void *src, size_t bytes, rp_error *err) {
    if (bytes == 0) return RP_OK;
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaStreamSynchronize(0);
    if (e != cudaSuccess)
        return RP_FAIL(err, RP_ERR_IO, "%s %s (host-staged): rank %d of %d: staging copy host->device of %zu bytes "
                       "failed: %s", inner_of(c)->ops->name, op, c->rank, c->world, bytes, cudaGetErrorString(e));
    return RP_OK;
}

/* Device -> host, complete on return. */
static rp_status get(rp_comm *c, const char *op, void *dst, const void *src, size_t bytes, rp_error *err) {
    if (bytes == 0) return RP_OK;
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess)
        return RP_FAIL(err, RP_ERR_IO, "%s %s (host-staged): rank %d of %d: staging copy device->host of %zu bytes "
                       "failed: %s", inner_of(c)->ops->name, op, c->rank, c->world, bytes, cudaGetErrorString(e));
    return RP_OK;
}

/* a + b without overflow (sizes of two scratch pieces) */
static rp_status add_size(rp_comm *c, const char *op, size_t a, size_t b, size_t *out, rp_error *err) {
    if (a > SIZE_MAX - 256 || b > SIZE_MAX - 256 - ALIGN_UP(a))
        return RP_FAIL(err, RP_ERR_INVALID, "%s %s (host-staged): rank %d of %d: %zu + %zu bytes overflows",
                       inner_of(c)->ops->name, op, c->rank, c->world, a, b);
    *out = ALIGN_UP(a) + b;
    return RP_OK;
}

static rp_status hs_allreduce(rp_comm *c, float *buf, size_t count, rp_reduce_op op, rp_error *err) {
    size_t bytes;
    char *d;
    RP_TRY(rp_comm_check_mul(c, "allreduce", count, sizeof(float), &bytes, err));
    RP_TRY(scratch(c, "allreduce", bytes, &d, err));
    RP_TRY(put(c, "allreduce", d, buf, bytes, err));
    RP_TRY(inner_of(c)->ops->allreduce(inner_of(c), (float *)d, count, op, err));
    return get(c, "allreduce", buf, d, bytes, err);
}

static rp_status hs_allgather(rp_comm *c, const float *send, size_t count, float *recv, rp_error *err) {
    size_t sb, total, rb, all = 0;
    char *d;
    RP_TRY(rp_comm_check_mul(c, "allgather", count, sizeof(float), &sb, err));
    RP_TRY(rp_comm_check_mul(c, "allgather", count, (size_t)c->world, &total, err));
    RP_TRY(rp_comm_check_mul(c, "allgather", total, sizeof(float), &rb, err));
    RP_TRY(add_size(c, "allgather", sb, rb, &all, err));
    RP_TRY(scratch(c, "allgather", all, &d, err));
    float *ds = (float *)d, *dr = (float *)(d + ALIGN_UP(sb));
    RP_TRY(put(c, "allgather", ds, send, sb, err));
    RP_TRY(inner_of(c)->ops->allgather(inner_of(c), ds, count, dr, err));
    return get(c, "allgather", recv, dr, rb, err);
}

static rp_status hs_alltoall(rp_comm *c, const float *send, float *recv, size_t count, rp_error *err) {
    size_t total, bytes, all = 0;
    char *d;
    RP_TRY(rp_comm_check_mul(c, "alltoall", count, (size_t)c->world, &total, err));
    RP_TRY(rp_comm_check_mul(c, "alltoall", total, sizeof(float), &bytes, err));
    RP_TRY(add_size(c, "alltoall", bytes, bytes, &all, err));
    RP_TRY(scratch(c, "alltoall", all, &d, err));
    float *ds = (float *)d, *dr = (float *)(d + ALIGN_UP(bytes));
    RP_TRY(put(c, "alltoall", ds, send, bytes, err));
    RP_TRY(inner_of(c)->ops->alltoall(inner_of(c), ds, dr, count, err));
    return get(c, "alltoall", recv, dr, bytes, err);
}

/* Only the received pieces are copied back: the gaps between them belong to the
 * caller and keep their host contents. */
static rp_status hs_alltoallv(rp_comm *c, const float *send, const size_t *send_counts, const size_t *send_displs,
                              float *recv, const size_t *recv_counts, const size_t *recv_displs, rp_error *err) {
    size_t se, re, all = 0;
    char *d;
    RP_TRY(rp_comm_check_alltoallv(c, send_counts, send_displs, recv_counts, recv_displs, &se, &re, err));
    RP_TRY(add_size(c, "alltoallv", se * sizeof(float), re * sizeof(float), &all, err));
    RP_TRY(scratch(c, "alltoallv", all, &d, err));
    float *ds = (float *)d, *dr = (float *)(d + ALIGN_UP(se * sizeof(float)));
    RP_TRY(put(c, "alltoallv", ds, send, se * sizeof(float), err));
    RP_TRY(inner_of(c)->ops->alltoallv(inner_of(c), ds, send_counts, send_displs, dr, recv_counts, recv_displs,
                                       err));
    for (int p = 0; p < c->world; p++)
        RP_TRY(get(c, "alltoallv", recv + recv_displs[p], dr + recv_displs[p], recv_counts[p] * sizeof(float), err));
    return RP_OK;
}

static rp_status hs_broadcast(rp_comm *c, void *buf, size_t bytes, int root, rp_error *err) {
    char *d;
    RP_TRY(rp_comm_check_root(c, "broadcast", root, err));
    RP_TRY(scratch(c, "broadcast", bytes, &d, err));
    if (c->rank == root) RP_TRY(put(c, "broadcast", d, buf, bytes, err));
    RP_TRY(inner_of(c)->ops->broadcast(inner_of(c), d, bytes, root, err));
    return c->rank == root ? RP_OK : get(c, "broadcast", buf, d, bytes, err);
}

static rp_status hs_send(rp_comm *c, const void *buf, size_t bytes, int peer, int tag, rp_error *err) {
    char *d;
    RP_TRY(rp_comm_check_tag(c, "send", tag, err));
    RP_TRY(rp_comm_check_peer(c, "send", peer, err));
    RP_TRY(scratch(c, "send", bytes, &d, err));
    RP_TRY(put(c, "send", d, buf, bytes, err));
    return inner_of(c)->ops->send(inner_of(c), d, bytes, peer, tag, err);
}

static rp_status hs_recv(rp_comm *c, void *buf, size_t bytes, int peer, int tag, rp_error *err) {
    char *d;
    RP_TRY(rp_comm_check_tag(c, "recv", tag, err));
    RP_TRY(rp_comm_check_peer(c, "recv", peer, err));
    RP_TRY(scratch(c, "recv", bytes, &d, err));
    RP_TRY(inner_of(c)->ops->recv(inner_of(c), d, bytes, peer, tag, err));
    return get(c, "recv", buf, d, bytes, err);
}

static rp_status hs_sendrecv(rp_comm *c, const void *send, size_t send_bytes, int dst, void *recv,
                             size_t recv_bytes, int src, int tag, rp_error *err) {
    int local;
    RP_TRY(rp_comm_check_sendrecv(c, dst, send_bytes, src, recv_bytes, tag, &local, err));
    if (local) {
        if (send_bytes && send != recv) memmove(recv, send, send_bytes);
        return RP_OK;
    }
    const int do_send = dst != RP_COMM_NO_PEER, do_recv = src != RP_COMM_NO_PEER;
    const size_t sb = do_send ? send_bytes : 0, rb = do_recv ? recv_bytes : 0;
    size_t all = 0;
    char *d;
    RP_TRY(add_size(c, "sendrecv", sb, rb, &all, err));
    RP_TRY(scratch(c, "sendrecv", all, &d, err));
    char *ds = d, *dr = d + ALIGN_UP(sb);
    if (do_send) RP_TRY(put(c, "sendrecv", ds, send, sb, err));
    RP_TRY(inner_of(c)->ops->sendrecv(inner_of(c), do_send ? ds : NULL, sb, dst, do_recv ? dr : NULL, rb, src, tag,
                                      err));
    return do_recv ? get(c, "sendrecv", recv, dr, rb, err) : RP_OK;
}

static rp_status hs_barrier(rp_comm *c, rp_error *err) { return inner_of(c)->ops->barrier(inner_of(c), err); }

static rp_status hs_split(rp_comm *c, int color, int key, rp_comm **out, rp_error *err) {
    rp_comm *child = NULL;
    *out = NULL;
    RP_TRY(inner_of(c)->ops->split(inner_of(c), color, key, &child, err));
    if (!child) return RP_OK;
    return rp_comm_host_stage_wrap(child, impl_of(c)->device, out, err);
}

static void hs_destroy(rp_comm *c) {
    hstage_impl *h = c->impl;
    rp_comm_destroy(h->inner);
    if (h->scratch && cudaSetDevice(h->device) == cudaSuccess) cudaFree(h->scratch);
    free(h);
    free(c);
}

static const rp_comm_ops hstage_ops = {
    .name = "nccl-host-staged",
    .allreduce = hs_allreduce,
    .allgather = hs_allgather,
    .alltoall = hs_alltoall,
    .alltoallv = hs_alltoallv,
    .broadcast = hs_broadcast,
    .send = hs_send,
    .recv = hs_recv,
    .sendrecv = hs_sendrecv,
    .barrier = hs_barrier,
    .split = hs_split,
    .destroy = hs_destroy,
};

rp_status rp_comm_host_stage_wrap(rp_comm *inner, int cuda_device, rp_comm **out, rp_error *err) {
    assert(inner && inner->mem == RP_MEM_CUDA);
    rp_comm *c = calloc(1, sizeof *c);
    hstage_impl *h = calloc(1, sizeof *h);
    if (!c || !h) {
        free(c);
        free(h);
        rp_comm_destroy(inner);
        return RP_FAIL(err, RP_ERR_NOMEM, "host-staged comm: out of memory");
    }
    h->inner = inner;
    h->device = cuda_device;
    c->ops = &hstage_ops;
    c->kind = inner->kind;
    c->rank = inner->rank;
    c->world = inner->world;
    c->timeout_s = inner->timeout_s;
    c->mem = RP_MEM_HOST;
    c->impl = h;
    *out = c;
    return RP_OK;
}

#else
typedef int rp_comm_host_stage_unavailable;
#endif
