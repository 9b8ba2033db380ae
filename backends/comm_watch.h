/* comm_watch.h — each rank's communication state, published in a small file that its
 * launcher reads, so that a launch in which every rank waits in a call no other rank
 * will complete ends within seconds, naming what each rank waits in, instead of at the
 * job's deadline.
 *
 * Why: a deadlock (a ring rotated the wrong way on one rank, a collective one rank
 * skips, two ranks that both send first) never fails a wait on its own: every wait is
 * bounded only by the communicator's timeout, which a sweep sets to the whole case's
 * time because a rank may legitimately wait that long for a slow peer (rank 0 decoding
 * while the others wait at the gather). A rank that computes, though, is never inside a
 * call. So "every rank still running has been inside the same call for W seconds" can
 * only be a deadlock: nobody is left to make progress. (W only has to exceed the time
 * a matched call spends moving its bytes.)
 *
 * The file, <dir>/rank<r>.comm (r: the rank in the launch's world), is RP_COMM_STATE_BYTES
 * long, in host byte order: a 64-bit call counter at offset 0 — odd while the rank is
 * inside a call, incremented on entry and on return — then three 32-bit fields (the
 * communicator's id, the world rank a point-to-point call sends to and the one it
 * receives from, -1 for none), a 32-bit zero, and a NUL-terminated line saying which
 * call, on which communicator, with which peers (world ranks) and sizes. The rank writes
 * it through a shared mapping (no system call per collective); the launcher reads it
 * with pread. Everything else is written before the counter moves, so once the counter
 * has stood still for W seconds the rest is that call's. */
#ifndef REPRO_COMM_WATCH_H
#define REPRO_COMM_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "backends/comm.h"

#define RP_COMM_STATE_BYTES 512

/* <dir>/rank<rank>.comm into buf (cap bytes). */
void rp_comm_state_path(const char *dir, int rank, char *buf, size_t cap);

/* Wraps inner (a fully connected communicator of the launch's world; its rank is the
 * file's) so that every call publishes its state in <dir>/rank<inner->rank>.comm
 * (created or truncated). Split children are wrapped too and share the file; their
 * calls name peers by their rank in the world (one allgather of the members' world
 * ranks at each split). Takes ownership of inner, also on failure. */
rp_status rp_comm_watch_wrap(rp_comm *inner, const char *dir, rp_comm **out, rp_error *err);

/* One rank's published state. */
typedef struct rp_comm_state {
    uint64_t calls;          /* odd: inside call (calls + 1) / 2 */
    int comm_id;             /* 0: the launch's world; k: the k-th split */
    int send_to, recv_from;  /* point-to-point peers (world ranks); -1: none or a collective */
    char what[RP_COMM_STATE_BYTES - 24];
} rp_comm_state;

/* Launcher side: reads the state file at path into *st. Returns 1, or 0 when the file is
 * missing or shorter than a state (the rank has made no communicator yet). */
int rp_comm_state_read(const char *path, rp_comm_state *st);

#define RP_COMM_EXPLAIN_MAX_RANKS 1024

/* Launcher side, once every rank waits: appends to buf (cap bytes, NUL-terminated) what
 * the waits say about each other, as "; "-separated clauses — a rank that sends to a
 * peer which receives from someone else, a rank that receives from a peer which sends
 * elsewhere, ranks of one communicator inside different calls of it. st[r] is rank r's
 * state, have[r] whether it was read; n <= RP_COMM_EXPLAIN_MAX_RANKS. Returns the number
 * of clauses (0: the waits are consistent, e.g. a collective nobody else entered), and in
 * *common the one rank that is in every clause when there are two or more, else -1
 * (a ring one rank turns the other way: that rank). */
int rp_comm_state_explain(const rp_comm_state *st, const int *have, int n, char *buf, size_t cap, int *common);

#endif
