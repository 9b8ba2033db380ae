/* comm_stage.c — a comm whose callers' buffers live in the other memory than its
 * backend's, in both directions:
 *   rp_comm_stage_wrap       CUDA buffers over a host-memory backend (self, gloo): slow
 *                            by design; it lets a layout over gloo run the same GPU code
 *                            path as one over nccl, so the two can be compared;
 *   rp_comm_host_stage_wrap  HOST buffers over a device-memory backend (nccl): for callers
 *                            whose data lives on the host between device computations (the
 *                            pipeline's CFG allgather, dp gather and the sequence-parallel
 *                            exchanges it stages through the host), so NCCL moves them GPU
 *                            to GPU.
 * Every call copies its inputs into one scratch block in the backend's memory (one per
 * communicator, a split child gets its own; grown when a call needs more, pieces at
 * 256-byte offsets; freed at destroy), runs the backend's call on the scratch, and
 * copies the results back.
 *
 * Ordering: copies are cudaMemcpy on the legacy default stream, which orders them after
 * the caller's earlier work on that stream (callers on other streams synchronise them
 * first). A host->device copy is followed by a synchronisation of that stream: a pageable
 * host->device cudaMemcpy may return before the data has landed, and NCCL runs on its own
 * non-blocking stream, which does not wait for the legacy one. The backends drain their
 * streams before they return, so calls are synchronous like every backend's: on return
 * the caller's buffers are final.
 *
 * Bits: the collective runs on exactly the values given (a copy is exact), so results
 * are those of the same call in the backend's own memory. */
#include "backends/comm_internal.h"

#ifdef REPRO_HAVE_CUDA

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

typedef struct stage_impl {
    rp_comm *inner;       /* owned; its memory is the other one */
    int device;           /* the CUDA device of the device side */
    int caller_on_device; /* 1: callers pass CUDA buffers (inner: host); 0: host buffers (inner: nccl) */
    void *scratch;        /* in the inner's memory */
    size_t cap;           /* bytes of scratch */
} stage_impl;

#define ALIGN_UP(n) (((n) + 255u) & ~(size_t)255u)

static stage_impl *impl_of(rp_comm *c) { return (stage_impl *)c->impl; }
static rp_comm *inner_of(rp_comm *c) { return impl_of(c)->inner; }

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

static void scratch_free(stage_impl *s) {
    if (!s->scratch) return;
    if (s->caller_on_device) free(s->scratch);
    else if (cudaSetDevice(s->device) == cudaSuccess) cudaFree(s->scratch); /* the backend drained its stream */
    s->scratch = NULL;
    s->cap = 0;
}

/* Makes the device current and the scratch at least bytes large. */
static rp_status scratch(rp_comm *c, const char *op, size_t bytes, char **out, rp_error *err) {
    stage_impl *s = impl_of(c);
    cudaError_t e = cudaSetDevice(s->device);
    if (e != cudaSuccess)
        return RP_FAIL(err, RP_ERR_COMM, "%s %s (staged): rank %d of %d: cudaSetDevice(%d): %s",
                       inner_of(c)->ops->name, op, c->rank, c->world, s->device, cudaGetErrorString(e));
    if (bytes == 0) bytes = 1;
    if (bytes > s->cap) {
        scratch_free(s);
        size_t want = ALIGN_UP(bytes);
        if (want < ((size_t)1 << 20)) want = (size_t)1 << 20; /* small calls share one 1 MiB block */
        if (s->caller_on_device) {
            s->scratch = malloc(want);
            e = s->scratch ? cudaSuccess : cudaErrorMemoryAllocation;
        } else if ((e = cudaMalloc(&s->scratch, want)) != cudaSuccess) {
            cudaGetLastError();
            s->scratch = NULL;
        }
        if (e != cudaSuccess)
            return RP_FAIL(err, RP_ERR_NOMEM, "%s %s (staged): rank %d of %d: %zu bytes of %s scratch: %s",
                           inner_of(c)->ops->name, op, c->rank, c->world, want,
                           s->caller_on_device ? "host" : "device", cudaGetErrorString(e));
        s->cap = want;
    }
    *out = s->scratch;
    return RP_OK;
}

/* One staging copy, complete on return: into the scratch (in) or back to the caller. */
static rp_status copy(rp_comm *c, const char *op, void *dst, const void *src, size_t bytes, int in, rp_error *err) {
    if (bytes == 0) return RP_OK;
    const int to_device = impl_of(c)->caller_on_device ? !in : in;
    cudaError_t e = cudaMemcpy(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
    if (e == cudaSuccess && to_device) e = cudaStreamSynchronize(0);
    if (e != cudaSuccess)
        return RP_FAIL(err, RP_ERR_IO, "%s %s (staged): rank %d of %d: staging copy %s of %zu bytes failed: %s",
                       inner_of(c)->ops->name, op, c->rank, c->world, to_device ? "host->device" : "device->host",
                       bytes, cudaGetErrorString(e));
    return RP_OK;
}
#define PUT(op, dst, src, bytes) copy(c, op, dst, src, bytes, 1, err)
#define GET(op, dst, src, bytes) copy(c, op, dst, src, bytes, 0, err)

/* a + b without overflow (sizes of two scratch pieces) */
static rp_status add_size(rp_comm *c, const char *op, size_t a, size_t b, size_t *out, rp_error *err) {
    if (a > SIZE_MAX - 256 || b > SIZE_MAX - 256 - ALIGN_UP(a))
        return RP_FAIL(err, RP_ERR_INVALID, "%s %s (staged): rank %d of %d: %zu + %zu bytes overflows",
                       inner_of(c)->ops->name, op, c->rank, c->world, a, b);
    *out = ALIGN_UP(a) + b;
    return RP_OK;
}

static rp_status st_allreduce(rp_comm *c, float *buf, size_t count, rp_reduce_op op, rp_error *err) {
    size_t bytes;
    char *d = NULL;
    RP_TRY(rp_comm_check_mul(c, "allreduce", count, sizeof(float), &bytes, err));
    RP_TRY(scratch(c, "allreduce", bytes, &d, err));
    RP_TRY(PUT("allreduce", d, buf, bytes));
    RP_TRY(inner_of(c)->ops->allreduce(inner_of(c), (float *)d, count, op, err));
    return GET("allreduce", buf, d, bytes);
}

static rp_status st_allgather(rp_comm *c, const float *send, size_t count, float *recv, rp_error *err) {
    size_t sb, total, rb, all = 0;
    char *d = NULL;
    RP_TRY(rp_comm_check_mul(c, "allgather", count, sizeof(float), &sb, err));
    RP_TRY(rp_comm_check_mul(c, "allgather", count, (size_t)c->world, &total, err));
    RP_TRY(rp_comm_check_mul(c, "allgather", total, sizeof(float), &rb, err));
    RP_TRY(add_size(c, "allgather", sb, rb, &all, err));
    RP_TRY(scratch(c, "allgather", all, &d, err));
    float *ds = (float *)d, *dr = (float *)(d + ALIGN_UP(sb));
    RP_TRY(PUT("allgather", ds, send, sb));
    RP_TRY(inner_of(c)->ops->allgather(inner_of(c), ds, count, dr, err));
    return GET("allgather", recv, dr, rb);
}

static rp_status st_alltoall(rp_comm *c, const float *send, float *recv, size_t count, rp_error *err) {
    size_t total, bytes, all = 0;
    char *d = NULL;
    RP_TRY(rp_comm_check_mul(c, "alltoall", count, (size_t)c->world, &total, err));
    RP_TRY(rp_comm_check_mul(c, "alltoall", total, sizeof(float), &bytes, err));
    RP_TRY(add_size(c, "alltoall", bytes, bytes, &all, err));
    RP_TRY(scratch(c, "alltoall", all, &d, err));
    float *ds = (float *)d, *dr = (float *)(d + ALIGN_UP(bytes));
    RP_TRY(PUT("alltoall", ds, send, bytes));
    RP_TRY(inner_of(c)->ops->alltoall(inner_of(c), ds, dr, count, err));
    return GET("alltoall", recv, dr, bytes);
}

/* Only the received pieces are copied back: the gaps between them belong to the
 * caller and keep their contents. */
static rp_status st_alltoallv(rp_comm *c, const float *send, const size_t *send_counts, const size_t *send_displs,
                              float *recv, const size_t *recv_counts, const size_t *recv_displs, rp_error *err) {
    size_t se, re, all = 0;
    char *d = NULL;
    RP_TRY(rp_comm_check_alltoallv(c, send_counts, send_displs, recv_counts, recv_displs, &se, &re, err));
    RP_TRY(add_size(c, "alltoallv", se * sizeof(float), re * sizeof(float), &all, err));
    RP_TRY(scratch(c, "alltoallv", all, &d, err));
    float *ds = (float *)d, *dr = (float *)(d + ALIGN_UP(se * sizeof(float)));
    RP_TRY(PUT("alltoallv", ds, send, se * sizeof(float)));
    RP_TRY(inner_of(c)->ops->alltoallv(inner_of(c), ds, send_counts, send_displs, dr, recv_counts, recv_displs,
                                       err));
    for (int p = 0; p < c->world; p++)
        RP_TRY(GET("alltoallv", recv + recv_displs[p], dr + recv_displs[p], recv_counts[p] * sizeof(float)));
    return RP_OK;
}

static rp_status st_broadcast(rp_comm *c, void *buf, size_t bytes, int root, rp_error *err) {
    char *d = NULL;
    RP_TRY(rp_comm_check_root(c, "broadcast", root, err));
    RP_TRY(scratch(c, "broadcast", bytes, &d, err));
    if (c->rank == root) RP_TRY(PUT("broadcast", d, buf, bytes));
    RP_TRY(inner_of(c)->ops->broadcast(inner_of(c), d, bytes, root, err));
    return c->rank == root ? RP_OK : GET("broadcast", buf, d, bytes);
}

static rp_status st_send(rp_comm *c, const void *buf, size_t bytes, int peer, int tag, rp_error *err) {
    char *d = NULL;
    RP_TRY(rp_comm_check_tag(c, "send", tag, err));
    RP_TRY(rp_comm_check_peer(c, "send", peer, err));
    RP_TRY(scratch(c, "send", bytes, &d, err));
    RP_TRY(PUT("send", d, buf, bytes));
    return inner_of(c)->ops->send(inner_of(c), d, bytes, peer, tag, err);
}

static rp_status st_recv(rp_comm *c, void *buf, size_t bytes, int peer, int tag, rp_error *err) {
    char *d = NULL;
    RP_TRY(rp_comm_check_tag(c, "recv", tag, err));
    RP_TRY(rp_comm_check_peer(c, "recv", peer, err));
    RP_TRY(scratch(c, "recv", bytes, &d, err));
    RP_TRY(inner_of(c)->ops->recv(inner_of(c), d, bytes, peer, tag, err));
    return GET("recv", buf, d, bytes);
}

static rp_status st_sendrecv(rp_comm *c, const void *send, size_t send_bytes, int dst, void *recv,
                             size_t recv_bytes, int src, int tag, rp_error *err) {
    int local;
    RP_TRY(rp_comm_check_sendrecv(c, dst, send_bytes, src, recv_bytes, tag, &local, err));
    if (local) { /* to itself: a copy within the caller's memory */
        if (!send_bytes || send == recv) return RP_OK;
        if (!impl_of(c)->caller_on_device) {
            memmove(recv, send, send_bytes);
            return RP_OK;
        }
        cudaError_t e = cudaMemcpy(recv, send, send_bytes, cudaMemcpyDeviceToDevice);
        return e == cudaSuccess ? RP_OK
                                : RP_FAIL(err, RP_ERR_IO, "sendrecv: rank %d: local copy failed: %s", c->rank,
                                          cudaGetErrorString(e));
    }
    const int do_send = dst != RP_COMM_NO_PEER, do_recv = src != RP_COMM_NO_PEER;
    const size_t sb = do_send ? send_bytes : 0, rb = do_recv ? recv_bytes : 0;
    size_t all = 0;
    char *d = NULL;
    RP_TRY(add_size(c, "sendrecv", sb, rb, &all, err));
    RP_TRY(scratch(c, "sendrecv", all, &d, err));
    char *ds = d, *dr = d + ALIGN_UP(sb);
    if (do_send) RP_TRY(PUT("sendrecv", ds, send, sb));
    RP_TRY(inner_of(c)->ops->sendrecv(inner_of(c), do_send ? ds : NULL, sb, dst, do_recv ? dr : NULL, rb, src, tag,
                                      err));
    return do_recv ? GET("sendrecv", recv, dr, rb) : RP_OK;
}

static rp_status st_barrier(rp_comm *c, rp_error *err) { return inner_of(c)->ops->barrier(inner_of(c), err); }

static rp_status wrap(rp_comm *inner, int cuda_device, int caller_on_device, rp_comm **out, rp_error *err);

static rp_status st_split(rp_comm *c, int color, int key, rp_comm **out, rp_error *err) {
    rp_comm *child = NULL;
    *out = NULL;
    RP_TRY(inner_of(c)->ops->split(inner_of(c), color, key, &child, err));
    if (!child) return RP_OK;
    return wrap(child, impl_of(c)->device, impl_of(c)->caller_on_device, out, err);
}

static void st_destroy(rp_comm *c) {
    stage_impl *s = c->impl;
    rp_comm_destroy(s->inner);
    scratch_free(s);
    free(s);
    free(c);
}

#define STAGE_OPS(ops_name)                                                                                    \
    {                                                                                                          \
        .name = ops_name, .allreduce = st_allreduce, .allgather = st_allgather, .alltoall = st_alltoall,       \
        .alltoallv = st_alltoallv, .broadcast = st_broadcast, .send = st_send, .recv = st_recv,                \
        .sendrecv = st_sendrecv, .barrier = st_barrier, .split = st_split, .destroy = st_destroy,              \
    }
static const rp_comm_ops device_over_host_ops = STAGE_OPS("cuda-staged");
static const rp_comm_ops host_over_device_ops = STAGE_OPS("nccl-host-staged");

static rp_status wrap(rp_comm *inner, int cuda_device, int caller_on_device, rp_comm **out, rp_error *err) {
    assert(inner && inner->mem == (caller_on_device ? RP_MEM_HOST : RP_MEM_CUDA));
    rp_comm *c = calloc(1, sizeof *c);
    stage_impl *s = calloc(1, sizeof *s);
    if (!c || !s) {
        free(c);
        free(s);
        rp_comm_destroy(inner);
        return RP_FAIL(err, RP_ERR_NOMEM, "staged comm: out of memory");
    }
    s->inner = inner;
    s->device = cuda_device;
    s->caller_on_device = caller_on_device;
    c->ops = caller_on_device ? &device_over_host_ops : &host_over_device_ops;
    c->kind = inner->kind;
    c->rank = inner->rank;
    c->world = inner->world;
    c->timeout_s = inner->timeout_s;
    c->mem = caller_on_device ? RP_MEM_CUDA : RP_MEM_HOST;
    c->impl = s;
    *out = c;
    return RP_OK;
}

rp_status rp_comm_stage_wrap(rp_comm *inner, int cuda_device, rp_comm **out, rp_error *err) {
    return wrap(inner, cuda_device, 1, out, err);
}

rp_status rp_comm_host_stage_wrap(rp_comm *inner, int cuda_device, rp_comm **out, rp_error *err) {
    return wrap(inner, cuda_device, 0, out, err);
}

#else
typedef int rp_comm_stage_unavailable;
#endif
