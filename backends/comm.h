/* comm.h — the communication interface every parallel strategy talks through.
 *
 * One struct of function pointers per backend (nccl-tests / ggml-backend
 * style): "self" (world 1, no library), "gloo" (CPU, TCP, through the C++ shim
 * backends/gloo_shim.cpp — the only C++ in the project) and "nccl" (CUDA
 * buffers, one GPU per rank).
 *
 * Every call
 *   - is bounded by rp_comm.timeout_s and returns RP_ERR_TIMEOUT (the wait ran
 *     out) or RP_ERR_COMM (a peer's connection broke, e.g. it was killed)
 *     instead of hanging when a peer died or never came. The bound applies to
 *     each wait inside the call, so a dead peer is noticed within about one
 *     timeout, whatever the message size;
 *   - returns an rp_status with a message naming the collective, this rank and
 *     the peer where known; nothing here calls exit().
 *
 * Failure is sticky: after any error other than RP_ERR_INVALID (which is
 * raised before anything is sent) the communicator is broken — gloo closes
 * every connection so that peers fail fast too — and every later call on it
 * returns RP_ERR_COMM at once. Destroy it; there is no recovery in place.
 *
 * Collectives are collective: every rank of the communicator makes the same
 * calls in the same order with matching counts/roots. A mismatch is a
 * timeout, an RP_ERR_COMM, or on gloo — when a rank receives fewer bytes than
 * its peer sends — an abort of the receiving process inside gloo; not a clean
 * RP_ERR_INVALID, because no rank sees the others' arguments (gloo's
 * alltoallv is the exception: it compares counts first). A communicator is
 * used by one thread at a time.
 *
 * Memory: buffers are host memory unless the comm was created with
 * mem = RP_MEM_CUDA. "nccl" requires RP_MEM_CUDA and uses device pointers
 * directly; "gloo" and "self" with RP_MEM_CUDA stage every buffer through host
 * memory (cudaMemcpy), which is correct but slow — it exists so CPU-transport
 * layouts can be compared with NCCL ones on the same GPU code path. The
 * inverse: "nccl" with mem = RP_MEM_HOST and host_staged = 1 takes HOST
 * buffers and stages each call through one device scratch buffer per
 * communicator on cuda_device (grown as needed; copied in before and out after
 * the collective), for callers whose data lives on the host between device
 * computations (the pipeline's CFG, dp and sequence exchanges). The bits that
 * arrive are the same as with device buffers: only where they wait differs.
 * Counts are in elements of float unless the name says bytes.
 *
 * Reduction order (why results may differ between layouts): allreduce is
 * deterministic for a given (backend, world, count) — reruns give identical
 * bits and every rank receives identical bits — but the order in which rank
 * contributions are added depends on the element's position and the world
 * size. gloo: ring reduce-scatter, each chunk of the buffer summed around the
 * ring in an order fixed by which chunk it is, independent of timing. nccl:
 * ring or tree and protocol chosen by NCCL per message size and topology, so
 * fixed only for the same GPUs, NCCL version and NCCL_ALGO/NCCL_PROTO. So the same
 * logical sum can differ in the last bits between world 2 and world 4, or
 * between gloo and nccl. MAX is exact in every order.
 *
 * Process-wide effect: creating a gloo communicator sets SIGPIPE to SIG_IGN if
 * it is still SIG_DFL, because gloo writes to sockets with writev(2) and a peer
 * that died would otherwise kill this rank with SIGPIPE instead of letting the
 * call return RP_ERR_COMM. A handler the caller installed is left alone. */
#ifndef REPRO_COMM_H
#define REPRO_COMM_H

#include <stddef.h>

#include "engine/error.h"

typedef enum rp_comm_kind { RP_COMM_SELF = 0, RP_COMM_GLOO, RP_COMM_NCCL } rp_comm_kind;
typedef enum rp_reduce_op { RP_REDUCE_SUM = 0, RP_REDUCE_MAX } rp_reduce_op;
typedef enum rp_mem_kind { RP_MEM_HOST = 0, RP_MEM_CUDA } rp_mem_kind;

/* sendrecv: pass as dst or src to skip that half. */
#define RP_COMM_NO_PEER (-1)

/* Defaults that a zero-initialised rp_comm_opts gets. */
#define RP_COMM_DEFAULT_TIMEOUT_S 60.0
#define RP_COMM_DEFAULT_REDIS_PORT 6379
#define RP_COMM_DEFAULT_PREFIX "repro"

/* How ranks find each other. A zero-initialised struct plus kind, rank, world
 * and one store is a valid request.
 *
 * gloo and nccl need exactly one store: a directory (gloo FileStore: local
 * runs, shared file systems; created if missing) or a Redis server (gloo
 * RedisStore: multi-node). "self" needs none and ignores them. Keys are never
 * deleted, so two runs must not share (store, prefix): a rank that finds its
 * own key already present refuses with RP_ERR_INVALID instead of connecting to
 * a previous run's dead addresses. `repro launch` gives every launch a fresh
 * store directory. */
typedef struct rp_comm_opts {
    rp_comm_kind kind;
    int rank, world;         /* 0 <= rank < world */
    const char *store_dir;   /* FileStore directory, or NULL */
    const char *redis_host;  /* RedisStore host, or NULL */
    int redis_port;          /* <= 0: 6379 */
    const char *prefix;      /* namespace inside the store (case id + attempt), so
                                reruns never read a previous run's keys; NULL: "repro" */
    const char *iface;       /* network interface for the TCP transport, or NULL */
    const char *hostname;    /* address to bind/advertise instead of iface, or NULL.
                                Both NULL: gloo resolves this machine's hostname.
                                Single-machine launches should pass "127.0.0.1". */
    double timeout_s;        /* per wait, for collectives and rendezvous; <= 0: 60 */
    rp_mem_kind mem;         /* nccl: RP_MEM_CUDA, or RP_MEM_HOST with host_staged */
    int cuda_device;         /* nccl / mem = RP_MEM_CUDA: device ordinal of this rank */
    int host_staged;         /* nccl with mem = RP_MEM_HOST: buffers are host memory, staged
                                through a device scratch on cuda_device (above). Ignored by
                                self and gloo, whose host buffers need no staging */
    const char *state_dir;   /* non-NULL: every call publishes this rank's state in
                                <state_dir>/rank<rank>.comm for the launcher's deadlock watch
                                (backends/comm_watch.h); the local launcher passes it as
                                REPRO_COMM_STATE_DIR */
} rp_comm_opts;

typedef struct rp_comm rp_comm;

typedef struct rp_comm_ops {
    const char *name;
    /* in place: buf (count) on every rank becomes the elementwise reduction */
    rp_status (*allreduce)(rp_comm *c, float *buf, size_t count, rp_reduce_op op, rp_error *err);
    /* send (count) from every rank -> recv (world * count), rank r's at r * count.
     * send and recv must not overlap. */
    rp_status (*allgather)(rp_comm *c, const float *send, size_t count, float *recv, rp_error *err);
    /* send (world * count): block p goes to rank p -> recv (world * count): block p
     * came from rank p. send and recv must not overlap. */
    rp_status (*alltoall)(rp_comm *c, const float *send, float *recv, size_t count, rp_error *err);
    /* variable splits: send_counts[p] elements at send_displs[p] go to rank p; recv_counts[p]
     * from rank p land at recv_displs[p] (all arrays have world entries, displacements in
     * elements). recv_counts[p] on this rank must equal send_counts[rank] on rank p: gloo
     * exchanges the counts first and every rank returns RP_ERR_INVALID naming the pair when
     * they disagree (nccl does not check). Zero counts allowed; pieces need not be contiguous
     * or ordered; recv pieces must not overlap each other or the send buffer. */
    rp_status (*alltoallv)(rp_comm *c, const float *send, const size_t *send_counts,
                           const size_t *send_displs, float *recv, const size_t *recv_counts,
                           const size_t *recv_displs, rp_error *err);
    /* bytes from root to everyone, in place */
    rp_status (*broadcast)(rp_comm *c, void *buf, size_t bytes, int root, rp_error *err);
    /* Point to point, blocking: send returns once the peer has taken the bytes (gloo waits
     * for the matching recv), so two ranks that both send first deadlock until the timeout —
     * use sendrecv for exchanges and ring shifts. peer != own rank. The byte counts of a
     * send and its recv must match: on gloo a send larger than the posted recv aborts the
     * receiving process (an assertion inside gloo's event thread that no caller can catch;
     * alltoallv checks its counts first for that reason). tag (>= 0) separates concurrent
     * streams between the same pair on gloo; nccl ignores it and matches a pair's messages
     * in call order. Zero-byte messages are not sent at all, on both sides. */
    rp_status (*send)(rp_comm *c, const void *buf, size_t bytes, int peer, int tag, rp_error *err);
    rp_status (*recv)(rp_comm *c, void *buf, size_t bytes, int peer, int tag, rp_error *err);
    /* Sends send_bytes to dst and receives recv_bytes from src at the same time (both are
     * posted before either is waited for), so a ring shift where every rank calls
     * sendrecv(next, prev) cannot deadlock. Either peer may be RP_COMM_NO_PEER.
     * dst == own rank requires src == own rank and equal sizes: a local copy. */
    rp_status (*sendrecv)(rp_comm *c, const void *send, size_t send_bytes, int dst, void *recv,
                          size_t recv_bytes, int src, int tag, rp_error *err);
    rp_status (*barrier)(rp_comm *c, rp_error *err);
    /* A sub-communicator of the ranks with the same color, ordered by key, ties broken by
     * rank (MPI_Comm_split semantics); collective over c. color < 0: this rank joins none
     * and *out is NULL. The child has the parent's kind, mem, timeout and device, its own
     * connections, and is destroyed on its own (before or after the parent). */
    rp_status (*split)(rp_comm *c, int color, int key, rp_comm **out, rp_error *err);
    void (*destroy)(rp_comm *c);
} rp_comm_ops;

struct rp_comm {
    const rp_comm_ops *ops;
    rp_comm_kind kind;
    int rank, world;
    double timeout_s;    /* the effective value (defaults applied) */
    rp_mem_kind mem;
    void *impl;          /* backend state, owned */
};

/* Creates the communicator (rendezvous included) and returns it in *out (owned
 * by the caller; rp_comm_destroy). Errors say which store, which rank and how
 * long it waited, e.g. "gloo rendezvous: rank 2 of 4 waited 30.0 s in
 * FileStore /tmp/x (prefix 'case7') for rank 3 (never joined)".
 * RP_ERR_INVALID: bad opts (checked before anything is contacted);
 * RP_ERR_UNSUPPORTED: backend not compiled in, or no CUDA device for nccl;
 * RP_ERR_TIMEOUT: a rank never joined; RP_ERR_COMM / RP_ERR_IO: store or
 * transport failure (e.g. Redis unreachable). */
rp_status rp_comm_create(const rp_comm_opts *o, rp_comm **out, rp_error *err);
/* Frees c and its connections; NULL is allowed. */
void rp_comm_destroy(rp_comm *c);

/* "self" | "gloo" | "nccl" */
rp_status rp_comm_kind_parse(const char *s, rp_comm_kind *out, rp_error *err);
const char *rp_comm_kind_name(rp_comm_kind k);

/* Is this backend compiled in? (gloo needs libgloo-dev; nccl needs CUDA + NCCL.)
 * Says nothing about devices: nccl without a visible GPU still fails in create. */
int rp_comm_available(rp_comm_kind k);

#endif
