/* comm_internal.h — what the backends share with comm.c; not for callers
 * (they include backends/comm.h only). */
#ifndef REPRO_COMM_INTERNAL_H
#define REPRO_COMM_INTERNAL_H

#include <stddef.h>

#include "backends/comm.h"

/* Backend constructors. comm.c has validated o (rank/world range, one store
 * where needed) and applied the defaults into *o before calling; each returns
 * a fully connected comm in *out or an error with *out untouched. */
rp_status rp_comm_self_create(const rp_comm_opts *o, rp_comm **out, rp_error *err);
#ifdef REPRO_HAVE_GLOO
rp_status rp_comm_gloo_create(const rp_comm_opts *o, rp_comm **out, rp_error *err);
#endif
#ifdef REPRO_HAVE_NCCL
rp_status rp_comm_nccl_create(const rp_comm_opts *o, rp_comm **out, rp_error *err);
#endif
#ifdef REPRO_HAVE_CUDA
/* RP_OK when CUDA device `device` exists and can be made current on this
 * thread; RP_ERR_UNSUPPORTED "no CUDA device visible" (or naming the bad
 * ordinal) otherwise. Checked before any rendezvous, so a rank without its GPU
 * fails alone and at once instead of making its peers time out. */
rp_status rp_comm_cuda_check_device(const char *backend, int rank, int device, rp_error *err);
/* Wraps a host-memory comm so that every buffer is a CUDA device pointer,
 * staged through host memory (comm_stage.c). Takes ownership of inner, also
 * on failure. */
rp_status rp_comm_stage_wrap(rp_comm *inner, int cuda_device, rp_comm **out, rp_error *err);
/* The inverse (comm_stage.c too): wraps a device-memory comm (nccl) so that every
 * buffer is HOST memory, staged through one device scratch buffer (grown as
 * needed) on cuda_device. Takes ownership of inner, also on failure. */
rp_status rp_comm_host_stage_wrap(rp_comm *inner, int cuda_device, rp_comm **out, rp_error *err);
#endif

#ifdef REPRO_HAVE_GLOO
#include "backends/gloo_shim.h"
/* The rendezvous every store-based backend starts with: sets "join/<rank>"
 * under st (refusing with RP_ERR_INVALID if it is already there: a previous
 * run used this store and prefix), then waits until every rank's key exists.
 * A rank missing at the deadline gives RP_ERR_TIMEOUT "<backend> rendezvous:
 * rank r of w waited T s in <store> for rank(s) L (never joined)". */
rp_status rp_comm_store_join(rp_gloo_store *st, const char *backend, int rank, int world,
                             double timeout_s, rp_error *err);
/* RP_GLOO_* code -> rp_status. */
rp_status rp_comm_gloo_status(int rc);
/* mkdir -p; RP_ERR_IO naming the component that failed. */
rp_status rp_comm_mkdirs(const char *path, rp_error *err);
#endif

/* Monotonic seconds, for deadlines and the "waited N s" in messages. */
double rp_comm_now(void);

/* Argument checks shared by every backend. Each returns RP_OK or
 * RP_ERR_INVALID with a message "<backend> <op>: rank r of w: ...". */
rp_status rp_comm_check_peer(const rp_comm *c, const char *op, int peer, rp_error *err);
rp_status rp_comm_check_root(const rp_comm *c, const char *op, int root, rp_error *err);
rp_status rp_comm_check_tag(const rp_comm *c, const char *op, int tag, rp_error *err);
/* Checks the alltoallv arrays and returns the element extents of the send and
 * recv buffers (max displ + count over peers), so callers can size buffers and
 * reject sizes whose byte count overflows size_t. */
rp_status rp_comm_check_alltoallv(const rp_comm *c, const size_t *send_counts,
                                  const size_t *send_displs, const size_t *recv_counts,
                                  const size_t *recv_displs, size_t *send_extent,
                                  size_t *recv_extent, rp_error *err);
/* n * size without overflow: RP_ERR_INVALID naming op when it would wrap. */
rp_status rp_comm_check_mul(const rp_comm *c, const char *op, size_t n, size_t size,
                            size_t *out, rp_error *err);

/* Formats a rank set as "3" or "1, 4-6" into buf (for "never joined" lists). */
void rp_comm_format_ranks(const int *ranks, int n, char *buf, size_t cap);

/* sendrecv's world-independent rules: dst == own rank requires src == own rank
 * and send_bytes == recv_bytes (then *local_copy = 1); otherwise each of dst,
 * src is RP_COMM_NO_PEER or a valid other rank. */
rp_status rp_comm_check_sendrecv(const rp_comm *c, int dst, size_t send_bytes, int src,
                                 size_t recv_bytes, int tag, int *local_copy, rp_error *err);

/* MPI_Comm_split's arithmetic: given every rank's (color, key) (arrays of
 * c->world), the members of my color ordered by (key, rank) are written to
 * members[0..*n) and my index among them to *new_rank. my color must be >= 0. */
void rp_comm_split_members(int world, int my_rank, const int *colors, const int *keys,
                           int *members, int *n, int *new_rank);

#endif
