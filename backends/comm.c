/* comm.c — backend dispatch, option checks and helpers shared by the backends. */
#include "backends/comm.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/comm_internal.h"
#include "backends/comm_watch.h"

double rp_comm_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *rp_comm_kind_name(rp_comm_kind k) {
    switch (k) {
    case RP_COMM_SELF: return "self";
    case RP_COMM_GLOO: return "gloo";
    case RP_COMM_NCCL: return "nccl";
    }
    return "unknown";
}

rp_status rp_comm_kind_parse(const char *s, rp_comm_kind *out, rp_error *err) {
    static const rp_comm_kind all[] = {RP_COMM_SELF, RP_COMM_GLOO, RP_COMM_NCCL};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(s, rp_comm_kind_name(all[i])) == 0) {
            *out = all[i];
            return RP_OK;
        }
    }
    return RP_FAIL(err, RP_ERR_INVALID,
                   "unknown communication backend '%s': expected self, gloo or nccl",
                   s ? s : "(null)");
}

int rp_comm_available(rp_comm_kind k) {
    switch (k) {
    case RP_COMM_SELF: return 1;
    case RP_COMM_GLOO:
#ifdef REPRO_HAVE_GLOO
        return 1;
#else
        return 0;
#endif
    case RP_COMM_NCCL:
#ifdef REPRO_HAVE_NCCL
        return 1;
#else
        return 0;
#endif
    }
    return 0;
}

static int nonempty(const char *s) { return s && s[0]; }

/* Validates o and fills the defaults into *d (a copy; o is untouched). Every
 * rule here is checked before any store or peer is contacted, so a bad
 * config never leaves half a rendezvous behind. */
static rp_status check_opts(const rp_comm_opts *o, rp_comm_opts *d, rp_error *err) {
    *d = *o;
    const char *kn = rp_comm_kind_name(o->kind);
    if (o->kind != RP_COMM_SELF && o->kind != RP_COMM_GLOO && o->kind != RP_COMM_NCCL)
        return RP_FAIL(err, RP_ERR_INVALID, "comm: unknown backend kind %d", (int)o->kind);
    if (o->world < 1 || o->rank < 0 || o->rank >= o->world)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "%s comm: rank %d of world %d is out of range (need 0 <= rank < world)",
                       kn, o->rank, o->world);
    if (o->mem != RP_MEM_HOST && o->mem != RP_MEM_CUDA)
        return RP_FAIL(err, RP_ERR_INVALID, "%s comm: unknown memory kind %d", kn, (int)o->mem);
    if (o->kind == RP_COMM_SELF && o->world != 1)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "self comm: world must be 1 (got %d); use gloo or nccl for several ranks",
                       o->world);
    if (o->kind != RP_COMM_SELF) {
        int n = nonempty(o->store_dir) + nonempty(o->redis_host);
        if (n != 1)
            return RP_FAIL(err, RP_ERR_INVALID,
                           "%s comm: rank %d needs exactly one rendezvous store, a directory "
                           "(store_dir) or a Redis server (redis_host); got %s",
                           kn, o->rank, n == 0 ? "none" : "both");
        if (o->redis_port < 0 || o->redis_port > 65535)
            return RP_FAIL(err, RP_ERR_INVALID, "%s comm: redis port %d out of range", kn,
                           o->redis_port);
    }
    if (o->kind == RP_COMM_NCCL && o->mem != RP_MEM_CUDA && !o->host_staged)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "nccl comm: buffers must be CUDA device memory (mem = cuda), or host "
                       "memory staged through the GPU (host_staged); use gloo for plain host "
                       "buffers");
    if (o->kind == RP_COMM_NCCL && o->host_staged && o->mem != RP_MEM_HOST)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "nccl comm: host_staged stages host buffers; it needs mem = host");
    if ((o->mem == RP_MEM_CUDA || (o->kind == RP_COMM_NCCL && o->host_staged)) && o->cuda_device < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "%s comm: cuda device %d is negative", kn,
                       o->cuda_device);
    if (!(o->timeout_s > 0)) d->timeout_s = RP_COMM_DEFAULT_TIMEOUT_S;
    if (o->redis_port <= 0) d->redis_port = RP_COMM_DEFAULT_REDIS_PORT;
    if (!nonempty(o->prefix)) d->prefix = RP_COMM_DEFAULT_PREFIX;
    if (!nonempty(o->store_dir)) d->store_dir = NULL;
    if (!nonempty(o->redis_host)) d->redis_host = NULL;
    if (!nonempty(o->iface)) d->iface = NULL;
    if (!nonempty(o->hostname)) d->hostname = NULL;
    if (!nonempty(o->state_dir)) d->state_dir = NULL;
    return RP_OK;
}

rp_status rp_comm_create(const rp_comm_opts *o, rp_comm **out, rp_error *err) {
    assert(o && out);
    rp_comm_opts d;
    RP_TRY(check_opts(o, &d, err));
    if (!rp_comm_available(d.kind))
        return RP_FAIL(err, RP_ERR_UNSUPPORTED,
                       "%s comm: this build has no %s backend (%s)", rp_comm_kind_name(d.kind),
                       rp_comm_kind_name(d.kind),
                       d.kind == RP_COMM_GLOO ? "install libgloo-dev and libhiredis-dev, then reconfigure"
                                              : "needs the CUDA toolkit with NCCL, and gloo for the store");
    /* Host-transport backends see host buffers; CUDA buffers are staged by a
     * wrapper around them, so the backends themselves stay CUDA-free. */
    rp_comm_opts host = d;
    if (d.kind != RP_COMM_NCCL) host.mem = RP_MEM_HOST;
    if (d.kind != RP_COMM_NCCL && d.mem == RP_MEM_CUDA) {
#ifndef REPRO_HAVE_CUDA
        return RP_FAIL(err, RP_ERR_UNSUPPORTED,
                       "%s comm: CUDA buffers requested but this build has no CUDA",
                       rp_comm_kind_name(d.kind));
#else
        RP_TRY(rp_comm_cuda_check_device(rp_comm_kind_name(d.kind), d.rank, d.cuda_device, err));
#endif
    }
    rp_comm *c = NULL;
    rp_status s = RP_ERR_UNSUPPORTED;
    switch (d.kind) {
    case RP_COMM_SELF: s = rp_comm_self_create(&host, &c, err); break;
    case RP_COMM_GLOO:
#ifdef REPRO_HAVE_GLOO
        s = rp_comm_gloo_create(&host, &c, err);
#endif
        break;
    case RP_COMM_NCCL: {
#ifdef REPRO_HAVE_NCCL
        /* host_staged: NCCL itself always moves device buffers; the wrapper stages */
        rp_comm_opts dev = d;
        dev.mem = RP_MEM_CUDA;
        dev.host_staged = 0;
        s = rp_comm_nccl_create(&dev, &c, err);
#endif
        break;
    }
    }
    if (s != RP_OK) return s;
    assert(c && c->ops && c->rank == d.rank && c->world == d.world);
#ifdef REPRO_HAVE_CUDA
    if (d.kind != RP_COMM_NCCL && d.mem == RP_MEM_CUDA) s = rp_comm_stage_wrap(c, d.cuda_device, &c, err);
    if (d.kind == RP_COMM_NCCL && d.mem == RP_MEM_HOST) s = rp_comm_host_stage_wrap(c, d.cuda_device, &c, err);
    if (s != RP_OK) return s;
#endif
    /* outermost, so each published call is the caller's (world 1 cannot deadlock) */
    if (d.state_dir && d.world > 1) return rp_comm_watch_wrap(c, d.state_dir, out, err);
    *out = c;
    return RP_OK;
}

void rp_comm_destroy(rp_comm *c) {
    if (c) c->ops->destroy(c);
}

/* ---- shared argument checks ----------------------------------------------- */

rp_status rp_comm_check_peer(const rp_comm *c, const char *op, int peer, rp_error *err) {
    if (peer < 0 || peer >= c->world)
        return RP_FAIL(err, RP_ERR_INVALID, "%s %s: rank %d of %d: peer %d out of range",
                       c->ops->name, op, c->rank, c->world, peer);
    if (peer == c->rank)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "%s %s: rank %d of %d: peer is this rank (a blocking %s to oneself "
                       "would deadlock; use sendrecv for a local copy)",
                       c->ops->name, op, c->rank, c->world, op);
    return RP_OK;
}

rp_status rp_comm_check_root(const rp_comm *c, const char *op, int root, rp_error *err) {
    if (root < 0 || root >= c->world)
        return RP_FAIL(err, RP_ERR_INVALID, "%s %s: rank %d of %d: root %d out of range",
                       c->ops->name, op, c->rank, c->world, root);
    return RP_OK;
}

rp_status rp_comm_check_tag(const rp_comm *c, const char *op, int tag, rp_error *err) {
    if (tag < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "%s %s: rank %d of %d: tag %d is negative",
                       c->ops->name, op, c->rank, c->world, tag);
    return RP_OK;
}

rp_status rp_comm_check_mul(const rp_comm *c, const char *op, size_t n, size_t size,
                            size_t *out, rp_error *err) {
    if (size && n > SIZE_MAX / size)
        return RP_FAIL(err, RP_ERR_INVALID, "%s %s: rank %d of %d: %zu x %zu bytes overflows",
                       c->ops->name, op, c->rank, c->world, n, size);
    *out = n * size;
    return RP_OK;
}

rp_status rp_comm_check_alltoallv(const rp_comm *c, const size_t *send_counts,
                                  const size_t *send_displs, const size_t *recv_counts,
                                  const size_t *recv_displs, size_t *send_extent,
                                  size_t *recv_extent, rp_error *err) {
    if (!send_counts || !send_displs || !recv_counts || !recv_displs)
        return RP_FAIL(err, RP_ERR_INVALID, "%s alltoallv: rank %d of %d: NULL count/displ array",
                       c->ops->name, c->rank, c->world);
    size_t se = 0, re = 0;
    for (int p = 0; p < c->world; p++) {
        if (send_displs[p] > SIZE_MAX / sizeof(float) - send_counts[p] ||
            recv_displs[p] > SIZE_MAX / sizeof(float) - recv_counts[p])
            return RP_FAIL(err, RP_ERR_INVALID,
                           "%s alltoallv: rank %d of %d: piece for peer %d overflows size_t",
                           c->ops->name, c->rank, c->world, p);
        if (send_counts[p] && send_displs[p] + send_counts[p] > se) se = send_displs[p] + send_counts[p];
        if (recv_counts[p] && recv_displs[p] + recv_counts[p] > re) re = recv_displs[p] + recv_counts[p];
    }
    if (send_counts[c->rank] != recv_counts[c->rank])
        return RP_FAIL(err, RP_ERR_INVALID,
                       "%s alltoallv: rank %d of %d: sends itself %zu elements but expects %zu",
                       c->ops->name, c->rank, c->world, send_counts[c->rank], recv_counts[c->rank]);
    *send_extent = se;
    *recv_extent = re;
    return RP_OK;
}

rp_status rp_comm_check_sendrecv(const rp_comm *c, int dst, size_t send_bytes, int src,
                                 size_t recv_bytes, int tag, int *local_copy, rp_error *err) {
    RP_TRY(rp_comm_check_tag(c, "sendrecv", tag, err));
    *local_copy = 0;
    if (dst == c->rank || src == c->rank) {
        if (dst != src || send_bytes != recv_bytes)
            return RP_FAIL(err, RP_ERR_INVALID,
                           "%s sendrecv: rank %d of %d: sending to or receiving from oneself needs "
                           "dst == src == own rank and equal sizes (dst %d, %zu bytes; src %d, %zu "
                           "bytes)", c->ops->name, c->rank, c->world, dst, send_bytes, src,
                           recv_bytes);
        *local_copy = 1;
        return RP_OK;
    }
    if (dst != RP_COMM_NO_PEER) RP_TRY(rp_comm_check_peer(c, "sendrecv", dst, err));
    if (src != RP_COMM_NO_PEER) RP_TRY(rp_comm_check_peer(c, "sendrecv", src, err));
    return RP_OK;
}

void rp_comm_format_ranks(const int *ranks, int n, char *buf, size_t cap) {
    assert(cap > 0);
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len + 1 < cap;) {
        int j = i;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1) j++;
        int w = j > i ? snprintf(buf + len, cap - len, "%s%d-%d", i ? ", " : "", ranks[i], ranks[j])
                      : snprintf(buf + len, cap - len, "%s%d", i ? ", " : "", ranks[i]);
        if (w < 0 || (size_t)w >= cap - len) break;
        len += (size_t)w;
        i = j + 1;
    }
}

void rp_comm_split_members(int world, int my_rank, const int *colors, const int *keys,
                           int *members, int *n, int *new_rank) {
    int color = colors[my_rank];
    assert(color >= 0);
    int m = 0;
    for (int r = 0; r < world; r++)
        if (colors[r] == color) members[m++] = r;
    /* insertion sort by (key, rank): stable and world is small */
    for (int i = 1; i < m; i++) {
        int v = members[i], j = i - 1;
        while (j >= 0 && (keys[members[j]] > keys[v] ||
                          (keys[members[j]] == keys[v] && members[j] > v))) {
            members[j + 1] = members[j];
            j--;
        }
        members[j + 1] = v;
    }
    *n = m;
    *new_rank = -1;
    for (int i = 0; i < m; i++)
        if (members[i] == my_rank) *new_rank = i;
    assert(*new_rank >= 0);
}
