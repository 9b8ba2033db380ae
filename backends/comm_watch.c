/* comm_watch.c — the communicator wrapper that publishes each call's state for the
 * launcher's deadlock watch (comm_watch.h), and the launcher's reader of it. */
#include "backends/comm_watch.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backends/comm_internal.h"

#define MAX_MEMBERS_TEXT 96

/* The mapped file, shared by a root communicator and every child split from it. */
typedef struct watch_file {
    int refs;
    int next_id;     /* the id the next split child gets (the root is 0) */
    uint64_t *calls; /* the mapping's first 8 bytes */
    int32_t *fields; /* then comm id, send_to, recv_from, 0 */
    char *what;      /* the rest */
} watch_file;

#define WHAT_OFFSET 24
_Static_assert(sizeof(((rp_comm_state *)0)->what) == RP_COMM_STATE_BYTES - WHAT_OFFSET, "state layout");

typedef struct watch_impl {
    rp_comm *inner;      /* owned */
    watch_file *file;    /* shared, refcounted */
    int id;              /* 0: the launch's world; k: the k-th split made through the watch */
    int *world_rank;     /* (world): each member's rank in the launch's world */
    char members[MAX_MEMBERS_TEXT]; /* "ranks 0, 2" for a child; "" for the world */
} watch_impl;

void rp_comm_state_path(const char *dir, int rank, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/rank%d.comm", dir, rank);
}

static watch_impl *impl_of(rp_comm *c) { return (watch_impl *)c->impl; }
static rp_comm *inner_of(rp_comm *c) { return impl_of(c)->inner; }

/* Peer p of c as a rank of the launch's world. */
static int wr(rp_comm *c, int p) { return p >= 0 && p < c->world ? impl_of(c)->world_rank[p] : p; }

/* Publishes "inside <call>" with its point-to-point peers (this communicator's ranks, or
 * RP_COMM_NO_PEER): the fields and text first, then the counter (odd). */
static void enter(rp_comm *c, int send_to, int recv_from, const char *fmt, ...) {
    watch_impl *w = impl_of(c);
    watch_file *f = w->file;
    char call[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(call, sizeof call, fmt, ap);
    va_end(ap);
    uint64_t n = __atomic_load_n(f->calls, __ATOMIC_RELAXED);
    assert(n % 2 == 0); /* one thread at a time per process: comm.h */
    f->fields[0] = w->id;
    f->fields[1] = send_to >= 0 && send_to < c->world ? w->world_rank[send_to] : -1;
    f->fields[2] = recv_from >= 0 && recv_from < c->world ? w->world_rank[recv_from] : -1;
    f->fields[3] = 0;
    const size_t cap = RP_COMM_STATE_BYTES - WHAT_OFFSET;
    if (w->id == 0)
        snprintf(f->what, cap, "%s, call %llu, on the world (%d ranks)", call, (unsigned long long)(n / 2 + 1),
                 c->world);
    else
        snprintf(f->what, cap, "%s, call %llu, on sub-communicator %d (%s)", call, (unsigned long long)(n / 2 + 1),
                 w->id, w->members);
    __atomic_store_n(f->calls, n + 1, __ATOMIC_RELEASE);
}

#define NONE RP_COMM_NO_PEER

/* Publishes "returned" (the counter even again) and passes s through. */
static rp_status leave(rp_comm *c, rp_status s) {
    watch_file *f = impl_of(c)->file;
    __atomic_store_n(f->calls, __atomic_load_n(f->calls, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
    return s;
}

static rp_status w_allreduce(rp_comm *c, float *buf, size_t count, rp_reduce_op op, rp_error *err) {
    enter(c, NONE, NONE, "allreduce (%s) of %zu floats", op == RP_REDUCE_MAX ? "max" : "sum", count);
    return leave(c, inner_of(c)->ops->allreduce(inner_of(c), buf, count, op, err));
}

static rp_status w_allgather(rp_comm *c, const float *send, size_t count, float *recv, rp_error *err) {
    enter(c, NONE, NONE, "allgather of %zu floats a rank", count);
    return leave(c, inner_of(c)->ops->allgather(inner_of(c), send, count, recv, err));
}

static rp_status w_alltoall(rp_comm *c, const float *send, float *recv, size_t count, rp_error *err) {
    enter(c, NONE, NONE, "alltoall of %zu floats a peer", count);
    return leave(c, inner_of(c)->ops->alltoall(inner_of(c), send, recv, count, err));
}

static rp_status w_alltoallv(rp_comm *c, const float *send, const size_t *send_counts, const size_t *send_displs,
                             float *recv, const size_t *recv_counts, const size_t *recv_displs, rp_error *err) {
    size_t out = 0, in = 0;
    for (int p = 0; p < c->world; p++) out += send_counts[p], in += recv_counts[p];
    enter(c, NONE, NONE, "alltoallv sending %zu floats, receiving %zu", out, in);
    return leave(c, inner_of(c)->ops->alltoallv(inner_of(c), send, send_counts, send_displs, recv, recv_counts,
                                                recv_displs, err));
}

static rp_status w_broadcast(rp_comm *c, void *buf, size_t bytes, int root, rp_error *err) {
    enter(c, NONE, NONE, "broadcast of %zu bytes from rank %d", bytes, wr(c, root));
    return leave(c, inner_of(c)->ops->broadcast(inner_of(c), buf, bytes, root, err));
}

static rp_status w_send(rp_comm *c, const void *buf, size_t bytes, int peer, int tag, rp_error *err) {
    enter(c, peer, NONE, "send of %zu bytes to rank %d, tag %d", bytes, wr(c, peer), tag);
    return leave(c, inner_of(c)->ops->send(inner_of(c), buf, bytes, peer, tag, err));
}

static rp_status w_recv(rp_comm *c, void *buf, size_t bytes, int peer, int tag, rp_error *err) {
    enter(c, NONE, peer, "recv of %zu bytes from rank %d, tag %d", bytes, wr(c, peer), tag);
    return leave(c, inner_of(c)->ops->recv(inner_of(c), buf, bytes, peer, tag, err));
}

static rp_status w_sendrecv(rp_comm *c, const void *send, size_t send_bytes, int dst, void *recv, size_t recv_bytes,
                            int src, int tag, rp_error *err) {
    enter(c, dst, src, "sendrecv: %zu bytes to rank %d, %zu bytes from rank %d, tag %d", send_bytes, wr(c, dst), recv_bytes,
          wr(c, src), tag);
    return leave(c, inner_of(c)->ops->sendrecv(inner_of(c), send, send_bytes, dst, recv, recv_bytes, src, tag, err));
}

static rp_status w_barrier(rp_comm *c, rp_error *err) {
    enter(c, NONE, NONE, "barrier");
    return leave(c, inner_of(c)->ops->barrier(inner_of(c), err));
}

static void file_release(watch_file *f) {
    if (--f->refs > 0) return;
    munmap(f->calls, RP_COMM_STATE_BYTES);
    free(f);
}

static void w_destroy(rp_comm *c) {
    watch_impl *w = impl_of(c);
    rp_comm_destroy(w->inner);
    file_release(w->file);
    free(w->world_rank);
    free(w);
    free(c);
}

static const rp_comm_ops watch_ops;

/* A wrapper around inner sharing f (a reference is taken). Takes ownership of inner and
 * world_rank, also on failure. */
static rp_status wrap(rp_comm *inner, watch_file *f, int id, int *world_rank, rp_comm **out, rp_error *err) {
    rp_comm *c = calloc(1, sizeof *c);
    watch_impl *w = calloc(1, sizeof *w);
    if (!c || !w) {
        free(c);
        free(w);
        free(world_rank);
        rp_comm_destroy(inner);
        return RP_FAIL(err, RP_ERR_NOMEM, "watched comm: out of memory");
    }
    w->inner = inner;
    w->file = f;
    f->refs++;
    w->id = id;
    w->world_rank = world_rank;
    if (id) {
        int n = snprintf(w->members, sizeof w->members, "world ranks ");
        for (int p = 0; p < inner->world && n < (int)sizeof w->members; p++)
            n += snprintf(w->members + n, sizeof w->members - (size_t)n, "%s%d", p ? ", " : "", world_rank[p]);
    }
    c->ops = &watch_ops;
    c->kind = inner->kind;
    c->rank = inner->rank;
    c->world = inner->world;
    c->timeout_s = inner->timeout_s;
    c->mem = inner->mem;
    c->impl = w;
    *out = c;
    return RP_OK;
}

/* The child learns its members' world ranks with one allgather over itself: the split
 * ordered them by (key, rank), which only the backend knows. */
static rp_status w_split(rp_comm *c, int color, int key, rp_comm **out, rp_error *err) {
    watch_impl *w = impl_of(c);
    rp_comm *child = NULL;
    *out = NULL;
    enter(c, NONE, NONE, "split (color %d, key %d)", color, key);
    rp_status s = leave(c, inner_of(c)->ops->split(inner_of(c), color, key, &child, err));
    if (s != RP_OK || !child) return s;
    int *ranks = malloc((size_t)child->world * sizeof *ranks);
    float *got = malloc((size_t)child->world * sizeof *got);
    if (!ranks || !got) {
        free(ranks);
        free(got);
        rp_comm_destroy(child);
        return RP_FAIL(err, RP_ERR_NOMEM, "watched comm: out of memory");
    }
    const float mine = (float)w->world_rank[c->rank]; /* exact: ranks < 2^24 */
    s = child->ops->allgather(child, &mine, 1, got, err);
    for (int p = 0; s == RP_OK && p < child->world; p++) ranks[p] = (int)got[p];
    free(got);
    if (s != RP_OK) {
        free(ranks);
        rp_comm_destroy(child);
        return s;
    }
    return wrap(child, w->file, ++w->file->next_id, ranks, out, err);
}

static const rp_comm_ops watch_ops = {
    .name = "watched", .allreduce = w_allreduce, .allgather = w_allgather, .alltoall = w_alltoall,
    .alltoallv = w_alltoallv, .broadcast = w_broadcast, .send = w_send, .recv = w_recv,
    .sendrecv = w_sendrecv, .barrier = w_barrier, .split = w_split, .destroy = w_destroy,
};

rp_status rp_comm_watch_wrap(rp_comm *inner, const char *dir, rp_comm **out, rp_error *err) {
    assert(inner && dir && out);
    char path[4096];
    rp_comm_state_path(dir, inner->rank, path, sizeof path);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ftruncate(fd, RP_COMM_STATE_BYTES) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        rp_comm_destroy(inner);
        return RP_FAIL(err, RP_ERR_IO, "comm state file %s: %s", path, strerror(e));
    }
    void *map = mmap(NULL, RP_COMM_STATE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    watch_file *f = map == MAP_FAILED ? NULL : calloc(1, sizeof *f);
    int *ranks = f ? malloc((size_t)inner->world * sizeof *ranks) : NULL;
    if (!ranks) {
        if (map != MAP_FAILED) munmap(map, RP_COMM_STATE_BYTES);
        free(f);
        rp_comm_destroy(inner);
        return map == MAP_FAILED ? RP_FAIL(err, RP_ERR_IO, "comm state file %s: mmap: %s", path, strerror(e))
                                 : RP_FAIL(err, RP_ERR_NOMEM, "watched comm: out of memory");
    }
    for (int p = 0; p < inner->world; p++) ranks[p] = p;
    f->calls = map;
    f->fields = (int32_t *)((char *)map + sizeof(uint64_t));
    f->what = (char *)map + WHAT_OFFSET;
    rp_status s = wrap(inner, f, 0, ranks, out, err);
    if (s != RP_OK) { /* wrap took no reference */
        munmap(map, RP_COMM_STATE_BYTES);
        free(f);
    }
    return s;
}

int rp_comm_state_read(const char *path, rp_comm_state *st) {
    assert(st);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    unsigned char buf[RP_COMM_STATE_BYTES];
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    close(fd);
    if (n != (ssize_t)sizeof buf) return 0;
    int32_t fields[3];
    memcpy(&st->calls, buf, sizeof st->calls);
    memcpy(fields, buf + sizeof(uint64_t), sizeof fields);
    st->comm_id = fields[0];
    st->send_to = fields[1];
    st->recv_from = fields[2];
    memcpy(st->what, buf + WHAT_OFFSET, sizeof st->what);
    st->what[sizeof st->what - 1] = '\0';
    return 1;
}

/* The call's name: the text up to its first space, comma or colon. */
static void op_of(const rp_comm_state *st, char *buf, size_t cap) {
    size_t k = strcspn(st->what, " ,:");
    snprintf(buf, cap, "%.*s", (int)(k < cap ? k : cap - 1), st->what);
}

int rp_comm_state_explain(const rp_comm_state *st, const int *have, int n, char *buf, size_t cap, int *common) {
    assert(n <= RP_COMM_EXPLAIN_MAX_RANKS);
    int clauses = 0, in[RP_COMM_EXPLAIN_MAX_RANKS] = {0};
    size_t len = strlen(buf);
    /* one clause between ranks x and y (counted for both) */
#define CLAUSE(x, y, ...)                                                                           \
    do {                                                                                            \
        in[x]++, in[y]++;                                                                           \
        if (len < cap) len += (size_t)snprintf(buf + len, cap - len, "%s", clauses++ ? "; " : "");  \
        if (len < cap) len += (size_t)snprintf(buf + len, cap - len, __VA_ARGS__);                  \
    } while (0)
    char a[32], b[32];
    for (int r = 0; r < n; r++) {
        if (!have[r]) continue;
        const int d = st[r].send_to, s = st[r].recv_from;
        if (d >= 0 && d < n && have[d] && st[d].recv_from != r) {
            op_of(&st[d], a, sizeof a);
            if (st[d].recv_from >= 0) CLAUSE(r, d, "rank %d sends to rank %d, which receives from rank %d", r, d, st[d].recv_from);
            else CLAUSE(r, d, "rank %d sends to rank %d, which waits in %s", r, d, a);
        }
        if (s >= 0 && s < n && have[s] && st[s].send_to != r) {
            op_of(&st[s], a, sizeof a);
            if (st[s].send_to >= 0) CLAUSE(r, s, "rank %d receives from rank %d, which sends to rank %d", r, s, st[s].send_to);
            else CLAUSE(r, s, "rank %d receives from rank %d, which waits in %s", r, s, a);
        }
    }
    /* collectives: the ranks waiting on one communicator should be inside the same call */
    for (int r = 0; r < n; r++) {
        if (!have[r] || st[r].send_to >= 0 || st[r].recv_from >= 0) continue;
        op_of(&st[r], a, sizeof a);
        for (int q = r + 1; q < n; q++) {
            if (!have[q] || st[q].comm_id != st[r].comm_id || st[q].send_to >= 0 || st[q].recv_from >= 0) continue;
            op_of(&st[q], b, sizeof b);
            if (strcmp(a, b)) CLAUSE(r, q, "on communicator %d rank %d waits in %s, rank %d in %s", st[r].comm_id, r, a, q, b);
        }
    }
#undef CLAUSE
    *common = -1;
    for (int r = 0; r < n && clauses >= 2; r++)
        if (in[r] == clauses) *common = r; /* at most one rank is in every one of >= 2 clauses */
    return clauses;
}
