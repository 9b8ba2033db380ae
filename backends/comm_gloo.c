/* comm_gloo.c — the gloo backend's C side: argument checks, the trivial cases
 * gloo itself rejects (zero sizes, world 1), messages that name the
 * collective, and the rendezvous that can say which ranks never came. The
 * transport work is in gloo_shim.cpp. Host memory only; comm.c wraps it for
 * CUDA buffers. */
#include "backends/comm_internal.h"

#ifdef REPRO_HAVE_GLOO

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct gloo_impl {
    rp_gloo_store *store;  /* owned; this comm's prefix scope */
    rp_gloo_ctx *ctx;      /* owned */
    unsigned split_seq;    /* splits made so far: same on every rank, since split is collective */
} gloo_impl;

#define MSG_CAP 768

static gloo_impl *impl_of(rp_comm *c) { return (gloo_impl *)c->impl; }

static long timeout_ms(const rp_comm *c) {
    double ms = c->timeout_s * 1000.0 + 0.5;
    return ms < 1 ? 1 : ms > (double)LONG_MAX / 2 ? LONG_MAX / 2 : (long)ms;
}

rp_status rp_comm_gloo_status(int rc) {
    switch (rc) {
    case RP_GLOO_OK: return RP_OK;
    case RP_GLOO_TIMEOUT: return RP_ERR_TIMEOUT;
    case RP_GLOO_IO: return RP_ERR_IO;
    case RP_GLOO_INVALID: return RP_ERR_INVALID;
    case RP_GLOO_NOMEM: return RP_ERR_NOMEM;
    default: return RP_ERR_COMM;
    }
}

rp_status rp_comm_mkdirs(const char *path, rp_error *err) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return RP_FAIL(err, RP_ERR_INVALID, "store directory path too long: %s", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return RP_FAIL(err, RP_ERR_IO, "cannot create store directory %s: %s", buf,
                           strerror(errno));
        *p = saved;
        if (saved == '\0') break;
    }
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return RP_FAIL(err, RP_ERR_IO, "store path %s is not a directory", buf);
    return RP_OK;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

rp_status rp_comm_store_join(rp_gloo_store *st, const char *backend, int rank, int world,
                             double timeout_s, rp_error *err) {
    char key[64], msg[MSG_CAP], val[128], host[64] = "?";
    int present = 0, rc;
    snprintf(key, sizeof key, "join/%d", rank);
    if ((rc = rp_gloo_store_has(st, key, &present, msg, sizeof msg)) != RP_GLOO_OK)
        return RP_FAIL(err, rp_comm_gloo_status(rc), "%s rendezvous: rank %d of %d: %s", backend,
                       rank, world, msg);
    if (present)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "%s rendezvous: rank %d of %d: %s already holds this rank's key, so a "
                       "previous run used the same store and prefix; give every run a fresh "
                       "prefix (case id + attempt) or an empty store directory",
                       backend, rank, world, rp_gloo_store_where(st));
    gethostname(host, sizeof host - 1);
    int n = snprintf(val, sizeof val, "%s pid %ld", host, (long)getpid());
    if ((rc = rp_gloo_store_set(st, key, val, (size_t)n, msg, sizeof msg)) != RP_GLOO_OK)
        return RP_FAIL(err, rp_comm_gloo_status(rc), "%s rendezvous: rank %d of %d: %s", backend,
                       rank, world, msg);

    unsigned char *seen = calloc((size_t)world, 1);
    int *missing = malloc(sizeof(int) * (size_t)world);
    if (!seen || !missing) {
        free(seen);
        free(missing);
        return RP_FAIL(err, RP_ERR_NOMEM, "%s rendezvous: out of memory", backend);
    }
    seen[rank] = 1;
    const double t0 = rp_comm_now();
    rp_status s = RP_OK;
    for (;;) {
        int nmissing = 0;
        for (int r = 0; r < world; r++) {
            if (seen[r]) continue;
            snprintf(key, sizeof key, "join/%d", r);
            if ((rc = rp_gloo_store_has(st, key, &present, msg, sizeof msg)) != RP_GLOO_OK) {
                s = RP_FAIL(err, rp_comm_gloo_status(rc), "%s rendezvous: rank %d of %d: %s",
                            backend, rank, world, msg);
                goto done;
            }
            if (present) seen[r] = 1;
            else missing[nmissing++] = r;
        }
        if (nmissing == 0) break;
        double waited = rp_comm_now() - t0;
        if (waited > timeout_s) {
            char list[256];
            rp_comm_format_ranks(missing, nmissing, list, sizeof list);
            s = RP_FAIL(err, RP_ERR_TIMEOUT,
                        "%s rendezvous: rank %d of %d waited %.1f s in %s for rank%s %s (never "
                        "joined); check that every rank was started with the same store and "
                        "prefix, or raise the timeout",
                        backend, rank, world, waited, rp_gloo_store_where(st),
                        nmissing > 1 ? "s" : "", list);
            goto done;
        }
        sleep_ms(10);
    }
done:
    free(seen);
    free(missing);
    return s;
}

/* ---- collectives ------------------------------------------------------------ */

/* Turns a shim failure into the user-facing error: collective, rank, what was
 * being moved, how long it ran, and gloo's own words. */
static rp_status op_fail(rp_comm *c, int rc, const char *op, const char *what, double t0,
                         const char *msg, rp_error *err) {
    return RP_FAIL(err, rp_comm_gloo_status(rc), "gloo %s: rank %d of %d (%s) failed after %.2f s "
                   "(timeout %.1f s): %s", op, c->rank, c->world, what, rp_comm_now() - t0,
                   c->timeout_s, msg);
}

static rp_status gloo_allreduce(rp_comm *c, float *buf, size_t count, rp_reduce_op op,
                                rp_error *err) {
    if (op != RP_REDUCE_SUM && op != RP_REDUCE_MAX)
        return RP_FAIL(err, RP_ERR_INVALID, "gloo allreduce: rank %d of %d: unknown reduce op %d",
                       c->rank, c->world, (int)op);
    size_t bytes;
    RP_TRY(rp_comm_check_mul(c, "allreduce", count, sizeof(float), &bytes, err));
    if (count == 0 || c->world == 1) return RP_OK;
    if (!buf) return RP_FAIL(err, RP_ERR_INVALID, "gloo allreduce: rank %d: NULL buffer", c->rank);
    char msg[MSG_CAP], what[96];
    double t0 = rp_comm_now();
    int rc = rp_gloo_allreduce_f32(impl_of(c)->ctx, buf, count, op == RP_REDUCE_MAX,
                                   timeout_ms(c), msg, sizeof msg);
    if (rc == RP_GLOO_OK) return RP_OK;
    snprintf(what, sizeof what, "%zu floats, %s", count, op == RP_REDUCE_MAX ? "max" : "sum");
    return op_fail(c, rc, "allreduce", what, t0, msg, err);
}

/* allgather and alltoall, count floats per rank: the size checks (count x world floats, in
 * bytes), nothing for count 0, a copy for a world of one, else the shim's collective. They
 * differ only in which shim call moves the data and what a peer's share is called. */
static rp_status gloo_exchange(rp_comm *c, int all_to_all, const float *send, float *recv, size_t count,
                               rp_error *err) {
    const char *op = all_to_all ? "alltoall" : "allgather";
    size_t total, bytes;
    RP_TRY(rp_comm_check_mul(c, op, count, (size_t)c->world, &total, err));
    RP_TRY(rp_comm_check_mul(c, op, total, sizeof(float), &bytes, err));
    if (count == 0) return RP_OK;
    if (!send || !recv) return RP_FAIL(err, RP_ERR_INVALID, "gloo %s: rank %d: NULL buffer", op, c->rank);
    if (c->world == 1) {
        memmove(recv, send, bytes);
        return RP_OK;
    }
    char msg[MSG_CAP], what[64];
    double t0 = rp_comm_now();
    int rc = all_to_all
                 ? rp_gloo_alltoall_f32(impl_of(c)->ctx, send, recv, count, timeout_ms(c), msg, sizeof msg)
                 : rp_gloo_allgather_f32(impl_of(c)->ctx, send, count, recv, timeout_ms(c), msg, sizeof msg);
    if (rc == RP_GLOO_OK) return RP_OK;
    snprintf(what, sizeof what, "%zu floats per %s", count, all_to_all ? "peer" : "rank");
    return op_fail(c, rc, op, what, t0, msg, err);
}

static rp_status gloo_allgather(rp_comm *c, const float *send, size_t count, float *recv,
                                rp_error *err) {
    return gloo_exchange(c, 0, send, recv, count, err);
}

static rp_status gloo_alltoall(rp_comm *c, const float *send, float *recv, size_t count,
                               rp_error *err) {
    return gloo_exchange(c, 1, send, recv, count, err);
}

/* gloo aborts the whole process (an enforce in its event-loop thread, which
 * nothing can catch) when a peer sends more bytes than the receive posted for
 * it. So before moving data every rank learns what each peer will send it
 * (an alltoall of the counts) and one allreduce(max) of the verdicts makes
 * every rank refuse together with RP_ERR_INVALID, the communicator intact.
 * Cost: two tiny collectives per alltoallv, small next to the exchange. */
static rp_status alltoallv_agree(rp_comm *c, const size_t *send_counts, const size_t *recv_counts,
                                 rp_error *err) {
    const size_t n = (size_t)c->world;
    _Static_assert(sizeof(size_t) % sizeof(float) == 0, "counts travel as float-sized words");
    const size_t words = sizeof(size_t) / sizeof(float);
    size_t *incoming = malloc(n * sizeof(size_t));
    float *sendw = malloc(n * sizeof(size_t)), verdict = 0;
    if (!incoming || !sendw) {
        free(incoming);
        free(sendw);
        return RP_FAIL(err, RP_ERR_NOMEM, "gloo alltoallv: out of memory");
    }
    memcpy(sendw, send_counts, n * sizeof(size_t)); /* bytes only: never used as floats */
    char msg[MSG_CAP];
    double t0 = rp_comm_now();
    rp_gloo_ctx *ctx = impl_of(c)->ctx;
    int rc = rp_gloo_alltoall_f32(ctx, sendw, (float *)(void *)incoming, words, timeout_ms(c), msg,
                                  sizeof msg);
    int bad = -1;
    for (size_t p = 0; rc == RP_GLOO_OK && p < n && bad < 0; p++)
        if (incoming[p] != recv_counts[p]) bad = (int)p;
    verdict = bad >= 0 ? 1.0f : 0.0f;
    if (rc == RP_GLOO_OK)
        rc = rp_gloo_allreduce_f32(ctx, &verdict, 1, 1, timeout_ms(c), msg, sizeof msg);
    rp_status s = RP_OK;
    if (rc != RP_GLOO_OK)
        s = op_fail(c, rc, "alltoallv", "exchanging piece sizes", t0, msg, err);
    else if (bad >= 0)
        s = RP_FAIL(err, RP_ERR_INVALID,
                    "gloo alltoallv: rank %d of %d expects %zu floats from rank %d, which sends "
                    "%zu; nothing was exchanged", c->rank, c->world, recv_counts[bad], bad,
                    incoming[bad]);
    else if (verdict > 0)
        s = RP_FAIL(err, RP_ERR_INVALID,
                    "gloo alltoallv: rank %d of %d: another rank's receive counts disagree with "
                    "what is sent to it (its own error names the pair); nothing was exchanged",
                    c->rank, c->world);
    free(incoming);
    free(sendw);
    return s;
}

static rp_status gloo_alltoallv(rp_comm *c, const float *send, const size_t *send_counts,
                                const size_t *send_displs, float *recv, const size_t *recv_counts,
                                const size_t *recv_displs, rp_error *err) {
    size_t se, re;
    RP_TRY(rp_comm_check_alltoallv(c, send_counts, send_displs, recv_counts, recv_displs, &se, &re,
                                   err));
    if ((se && !send) || (re && !recv))
        return RP_FAIL(err, RP_ERR_INVALID, "gloo alltoallv: rank %d: NULL buffer", c->rank);
    if (c->world == 1) {
        if (send_counts[0])
            memmove(recv + recv_displs[0], send + send_displs[0], send_counts[0] * sizeof(float));
        return RP_OK;
    }
    const size_t n = (size_t)c->world;
    RP_TRY(alltoallv_agree(c, send_counts, recv_counts, err));
    size_t *b = malloc(4 * n * sizeof(size_t));
    if (!b) return RP_FAIL(err, RP_ERR_NOMEM, "gloo alltoallv: out of memory");
    size_t sent = 0, got = 0;
    for (size_t p = 0; p < n; p++) {
        b[p] = send_displs[p] * sizeof(float);
        b[n + p] = send_counts[p] * sizeof(float);
        b[2 * n + p] = recv_displs[p] * sizeof(float);
        b[3 * n + p] = recv_counts[p] * sizeof(float);
        sent += send_counts[p];
        got += recv_counts[p];
    }
    char msg[MSG_CAP], what[96];
    double t0 = rp_comm_now();
    int rc = rp_gloo_alltoallv(impl_of(c)->ctx, send, se * sizeof(float), b, b + n, recv,
                               re * sizeof(float), b + 2 * n, b + 3 * n, timeout_ms(c), msg,
                               sizeof msg);
    free(b);
    if (rc == RP_GLOO_OK) return RP_OK;
    snprintf(what, sizeof what, "sending %zu, receiving %zu floats", sent, got);
    return op_fail(c, rc, "alltoallv", what, t0, msg, err);
}

static rp_status gloo_broadcast(rp_comm *c, void *buf, size_t bytes, int root, rp_error *err) {
    RP_TRY(rp_comm_check_root(c, "broadcast", root, err));
    if (bytes == 0 || c->world == 1) return RP_OK;
    if (!buf) return RP_FAIL(err, RP_ERR_INVALID, "gloo broadcast: rank %d: NULL buffer", c->rank);
    char msg[MSG_CAP], what[64];
    double t0 = rp_comm_now();
    int rc = rp_gloo_broadcast(impl_of(c)->ctx, buf, bytes, root, timeout_ms(c), msg, sizeof msg);
    if (rc == RP_GLOO_OK) return RP_OK;
    snprintf(what, sizeof what, "%zu bytes from root %d", bytes, root);
    return op_fail(c, rc, "broadcast", what, t0, msg, err);
}

static rp_status p2p(rp_comm *c, const char *op, const void *send, size_t send_bytes, int dst,
                     void *recv, size_t recv_bytes, int src, int tag, rp_error *err) {
    if ((send_bytes && dst != RP_COMM_NO_PEER && !send) ||
        (recv_bytes && src != RP_COMM_NO_PEER && !recv))
        return RP_FAIL(err, RP_ERR_INVALID, "gloo %s: rank %d: NULL buffer", op, c->rank);
    char msg[MSG_CAP], what[128];
    double t0 = rp_comm_now();
    int rc = rp_gloo_sendrecv(impl_of(c)->ctx, send, send_bytes, dst, recv, recv_bytes, src,
                              (uint32_t)tag, timeout_ms(c), msg, sizeof msg);
    if (rc == RP_GLOO_OK) return RP_OK;
    if (dst != RP_COMM_NO_PEER && src != RP_COMM_NO_PEER)
        snprintf(what, sizeof what, "%zu bytes to rank %d, %zu bytes from rank %d, tag %d",
                 send_bytes, dst, recv_bytes, src, tag);
    else if (dst != RP_COMM_NO_PEER)
        snprintf(what, sizeof what, "%zu bytes to rank %d, tag %d", send_bytes, dst, tag);
    else
        snprintf(what, sizeof what, "%zu bytes from rank %d, tag %d", recv_bytes, src, tag);
    return op_fail(c, rc, op, what, t0, msg, err);
}

static rp_status gloo_send(rp_comm *c, const void *buf, size_t bytes, int peer, int tag,
                           rp_error *err) {
    RP_TRY(rp_comm_check_tag(c, "send", tag, err));
    RP_TRY(rp_comm_check_peer(c, "send", peer, err));
    return p2p(c, "send", buf, bytes, peer, NULL, 0, RP_COMM_NO_PEER, tag, err);
}

static rp_status gloo_recv(rp_comm *c, void *buf, size_t bytes, int peer, int tag,
                           rp_error *err) {
    RP_TRY(rp_comm_check_tag(c, "recv", tag, err));
    RP_TRY(rp_comm_check_peer(c, "recv", peer, err));
    return p2p(c, "recv", NULL, 0, RP_COMM_NO_PEER, buf, bytes, peer, tag, err);
}

static rp_status gloo_sendrecv(rp_comm *c, const void *send, size_t send_bytes, int dst,
                               void *recv, size_t recv_bytes, int src, int tag, rp_error *err) {
    int local;
    RP_TRY(rp_comm_check_sendrecv(c, dst, send_bytes, src, recv_bytes, tag, &local, err));
    if (local) {
        if (send_bytes && send != recv) memmove(recv, send, send_bytes);
        return RP_OK;
    }
    if (dst == RP_COMM_NO_PEER && src == RP_COMM_NO_PEER) return RP_OK;
    return p2p(c, "sendrecv", send, send_bytes, dst, recv, recv_bytes, src, tag, err);
}

static rp_status gloo_barrier(rp_comm *c, rp_error *err) {
    if (c->world == 1) return RP_OK;
    char msg[MSG_CAP];
    double t0 = rp_comm_now();
    int rc = rp_gloo_barrier(impl_of(c)->ctx, timeout_ms(c), msg, sizeof msg);
    if (rc == RP_GLOO_OK) return RP_OK;
    return op_fail(c, rc, "barrier", "all ranks", t0, msg, err);
}

static const rp_comm_ops gloo_ops;

/* Joins and connects a communicator on an open store scope; takes ownership
 * of st (closed on failure). share: the parent context whose TCP device (and
 * so address and event loop) the new one reuses, or NULL. */
static rp_status connect_comm(rp_gloo_store *st, int rank, int world, double timeout_s,
                              const char *iface, const char *hostname, const rp_gloo_ctx *share,
                              rp_comm **out, rp_error *err) {
    rp_comm tmp = {.ops = &gloo_ops, .rank = rank, .world = world, .timeout_s = timeout_s};
    rp_status s = rp_comm_store_join(st, "gloo", rank, world, timeout_s, err);
    if (s != RP_OK) {
        rp_gloo_store_close(st);
        return s;
    }
    char msg[MSG_CAP];
    rp_gloo_ctx *ctx = NULL;
    double t0 = rp_comm_now();
    int rc = rp_gloo_connect(st, rank, world, iface, hostname, share, timeout_ms(&tmp), &ctx, msg,
                             sizeof msg);
    if (rc != RP_GLOO_OK) {
        s = RP_FAIL(err, rp_comm_gloo_status(rc),
                    "gloo rendezvous: rank %d of %d: connecting the TCP mesh through %s (%s%s) "
                    "failed after %.1f s: %s", rank, world, rp_gloo_store_where(st),
                    share ? "parent's device" : hostname ? "address " : iface ? "interface " : "default address",
                    share ? "" : hostname ? hostname : iface ? iface : "", rp_comm_now() - t0, msg);
        rp_gloo_store_close(st);
        return s;
    }
    rp_comm *c = calloc(1, sizeof *c);
    gloo_impl *g = calloc(1, sizeof *g);
    if (!c || !g) {
        free(c);
        free(g);
        rp_gloo_ctx_free(ctx);
        rp_gloo_store_close(st);
        return RP_FAIL(err, RP_ERR_NOMEM, "gloo comm: out of memory");
    }
    g->store = st;
    g->ctx = ctx;
    *c = tmp;
    c->kind = RP_COMM_GLOO;
    c->mem = RP_MEM_HOST;
    c->impl = g;
    *out = c;
    return RP_OK;
}

static rp_status gloo_split(rp_comm *c, int color, int key, rp_comm **out, rp_error *err) {
    *out = NULL;
    gloo_impl *g = impl_of(c);
    const int n = c->world;
    /* Every rank's (color, key): an allgather of int pairs. The pairs travel as
     * raw bytes in the float-typed allgather (copied, never computed on). */
    int32_t mine[2] = {color < 0 ? -1 : color, key};
    float *fbuf = calloc((size_t)n * 2 + 2, sizeof(float));
    int *colors = malloc(sizeof(int) * (size_t)n * 3);
    if (!fbuf || !colors) {
        free(fbuf);
        free(colors);
        return RP_FAIL(err, RP_ERR_NOMEM, "gloo split: out of memory");
    }
    int *keys = colors + n, *members = colors + 2 * n;
    memcpy(fbuf, mine, sizeof mine);
    rp_status s = gloo_allgather(c, fbuf, 2, fbuf + 2, err);
    const unsigned seq = g->split_seq++;
    if (s == RP_OK) {
        for (int r = 0; r < n; r++) {
            int32_t pair[2];
            memcpy(pair, fbuf + 2 + 2 * r, sizeof pair);
            colors[r] = pair[0];
            keys[r] = pair[1];
        }
    }
    free(fbuf);
    if (s != RP_OK || color < 0) {
        free(colors);
        return s;
    }
    int m, new_rank;
    rp_comm_split_members(n, c->rank, colors, keys, members, &m, &new_rank);
    free(colors);
    char sub[64], msg[MSG_CAP];
    snprintf(sub, sizeof sub, "split%u.color%d", seq, color);
    rp_gloo_store *st = NULL;
    int rc = rp_gloo_store_scope(g->store, sub, &st, msg, sizeof msg);
    if (rc != RP_GLOO_OK)
        return RP_FAIL(err, rp_comm_gloo_status(rc), "gloo split: rank %d of %d: %s", c->rank,
                       c->world, msg);
    return connect_comm(st, new_rank, m, c->timeout_s, NULL, NULL, g->ctx, out, err);
}

static void gloo_destroy(rp_comm *c) {
    gloo_impl *g = impl_of(c);
    if (g) {
        rp_gloo_ctx_free(g->ctx);
        rp_gloo_store_close(g->store);
        free(g);
    }
    free(c);
}

static const rp_comm_ops gloo_ops = {
    .name = "gloo",
    .allreduce = gloo_allreduce,
    .allgather = gloo_allgather,
    .alltoall = gloo_alltoall,
    .alltoallv = gloo_alltoallv,
    .broadcast = gloo_broadcast,
    .send = gloo_send,
    .recv = gloo_recv,
    .sendrecv = gloo_sendrecv,
    .barrier = gloo_barrier,
    .split = gloo_split,
    .destroy = gloo_destroy,
};

/* gloo writes to sockets with writev(2); a peer that died turns the next write
 * into SIGPIPE, whose default action would kill this rank silently. Ignoring
 * it makes the write fail with EPIPE, which gloo reports as an exception and
 * we as RP_ERR_COMM. Only the default disposition is replaced (see comm.h). */
static void ignore_default_sigpipe(void) {
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO) &&
        sa.sa_handler == SIG_DFL) {
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        sigaction(SIGPIPE, &ign, NULL);
    }
}

rp_status rp_comm_gloo_create(const rp_comm_opts *o, rp_comm **out, rp_error *err) {
    assert(o->mem == RP_MEM_HOST && (o->store_dir != NULL) != (o->redis_host != NULL));
    ignore_default_sigpipe();
    if (o->store_dir) {
        rp_status s = rp_comm_mkdirs(o->store_dir, err);
        if (s != RP_OK) return s;
    }
    char msg[MSG_CAP];
    rp_gloo_store *st = NULL;
    int rc = rp_gloo_store_open(o->store_dir, o->redis_host, o->redis_port, o->prefix, &st, msg,
                                sizeof msg);
    if (rc != RP_GLOO_OK)
        return RP_FAIL(err, rp_comm_gloo_status(rc), "gloo rendezvous: rank %d of %d: %s", o->rank,
                       o->world, msg);
    return connect_comm(st, o->rank, o->world, o->timeout_s, o->iface, o->hostname, NULL, out, err);
}

#else
/* Built without gloo: comm.c reports the backend as unavailable. ISO C wants
 * at least one declaration per translation unit. */
typedef int rp_comm_gloo_unavailable;
#endif
