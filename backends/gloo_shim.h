/* gloo_shim.h — the C face of gloo_shim.cpp, the project's only C++.
 *
 * Everything gloo can throw is caught inside the shim and returned as an
 * RP_GLOO_* code plus a message written into (msg, cap); no exception ever
 * crosses into C. Messages are gloo's own text with the shim's context
 * (store, key, timeout); the C side (comm_gloo.c) prefixes the collective, the
 * rank and the counts. Timeouts are milliseconds and bound every wait inside
 * a call (gloo's per-operation timeout option). */
#ifndef REPRO_GLOO_SHIM_H
#define REPRO_GLOO_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    RP_GLOO_OK = 0,
    RP_GLOO_TIMEOUT,  /* a wait ran out (peer silent, key never set) */
    RP_GLOO_COMM,     /* a connection broke, or the context is broken from before */
    RP_GLOO_IO,       /* the store could not be used (directory, Redis server) */
    RP_GLOO_INVALID,  /* gloo rejected an argument */
    RP_GLOO_NOMEM
};

/* ---- store: a prefix-scoped view of a FileStore or RedisStore --------------
 * Also used by the nccl backend to exchange its unique id and GPU identities. */
typedef struct rp_gloo_store rp_gloo_store;

/* Opens a FileStore on dir (must exist) or, when dir is NULL, a RedisStore on
 * redis_host:redis_port (connects now). Keys are "<prefix>/<key>". */
int rp_gloo_store_open(const char *dir, const char *redis_host, int redis_port,
                       const char *prefix, rp_gloo_store **out, char *msg, size_t cap);
/* A view of the same backing store with prefix "<parent prefix>/<sub>".
 * Views share the backing store; each is closed on its own. */
int rp_gloo_store_scope(const rp_gloo_store *parent, const char *sub, rp_gloo_store **out,
                        char *msg, size_t cap);
void rp_gloo_store_close(rp_gloo_store *s);
/* "FileStore /dir (prefix 'p')" or "RedisStore host:port (prefix 'p')"; owned by s. */
const char *rp_gloo_store_where(const rp_gloo_store *s);
/* Sets key (must not exist yet: both stores refuse to overwrite). */
int rp_gloo_store_set(rp_gloo_store *s, const char *key, const void *data, size_t len,
                      char *msg, size_t cap);
/* *present = whether key exists now; never waits. */
int rp_gloo_store_has(rp_gloo_store *s, const char *key, int *present, char *msg, size_t cap);
/* Reads an existing key into buf (cap_bytes); *len = its full size (may exceed
 * cap_bytes: then only cap_bytes are copied). */
int rp_gloo_store_get(rp_gloo_store *s, const char *key, void *buf, size_t cap_bytes,
                      size_t *len, char *msg, size_t cap);

/* ---- context: a connected full mesh of TCP pairs ---------------------------- */
typedef struct rp_gloo_ctx rp_gloo_ctx;

/* Creates the TCP device (bound to hostname or iface, or gloo's default: this
 * machine's hostname) — or reuses share_device's when not NULL — and connects
 * every pair through the store (gloo's connectFullMesh; keys "<rank>").
 * Every rank must have set its key before timeout_ms runs out. */
int rp_gloo_connect(rp_gloo_store *s, int rank, int world, const char *iface,
                    const char *hostname, const rp_gloo_ctx *share_device, long timeout_ms,
                    rp_gloo_ctx **out, char *msg, size_t cap);
void rp_gloo_ctx_free(rp_gloo_ctx *c);

/* Collectives; world >= 2 and nonzero sizes (the C side short-circuits the
 * trivial cases, which gloo itself rejects). op: 0 sum, 1 max. */
int rp_gloo_allreduce_f32(rp_gloo_ctx *c, float *buf, size_t count, int op, long timeout_ms,
                          char *msg, size_t cap);
int rp_gloo_allgather_f32(rp_gloo_ctx *c, const float *send, size_t count, float *recv,
                          long timeout_ms, char *msg, size_t cap);
int rp_gloo_alltoall_f32(rp_gloo_ctx *c, const float *send, float *recv, size_t count,
                         long timeout_ms, char *msg, size_t cap);
/* Byte offsets/lengths per peer (world entries each); extents are the buffer
 * sizes in bytes. Zero-length pieces are not sent at all. */
int rp_gloo_alltoallv(rp_gloo_ctx *c, const void *send, size_t send_extent,
                      const size_t *send_off, const size_t *send_len, void *recv,
                      size_t recv_extent, const size_t *recv_off, const size_t *recv_len,
                      long timeout_ms, char *msg, size_t cap);
int rp_gloo_broadcast(rp_gloo_ctx *c, void *buf, size_t bytes, int root, long timeout_ms,
                      char *msg, size_t cap);
/* Posts the send to dst (if dst >= 0 and send_bytes > 0) and the recv from
 * src (if src >= 0 and recv_bytes > 0), then waits for both. */
int rp_gloo_sendrecv(rp_gloo_ctx *c, const void *send, size_t send_bytes, int dst, void *recv,
                     size_t recv_bytes, int src, uint32_t tag, long timeout_ms, char *msg,
                     size_t cap);
int rp_gloo_barrier(rp_gloo_ctx *c, long timeout_ms, char *msg, size_t cap);

/* Whether an earlier call failed and closed the connections (every later call
 * then returns RP_GLOO_COMM without touching the network). */
int rp_gloo_ctx_broken(const rp_gloo_ctx *c);

#ifdef __cplusplus
}
#endif

#endif
