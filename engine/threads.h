/* threads.h — a loop's index range shared out over threads, in contiguous parts.
 *
 * For work whose parts are independent and whose results must not depend on which thread
 * computes a part (the canonical attention's (batch, head) pairs: each is the same code over
 * the same inputs wherever it runs). No pool: the threads start and join per call, so a
 * caller keeps small calls on one thread (a start costs tens of microseconds). */
#ifndef REPRO_THREADS_H
#define REPRO_THREADS_H

/* At most this many parts (threads) a call. */
enum { RP_THREADS_MAX = 64 };

/* One part: [i0, i1) of the range, part `part` of nt. Returns 0, or nonzero to report
 * (e.g. its scratch could not be allocated); the other parts still run. */
typedef int (*rp_threads_part_fn)(void *user, int part, int i0, int i1);

/* Calls fn for nt parts (clamped to 1 .. min(n, RP_THREADS_MAX)) covering [0, n) in
 * contiguous ranges of near-equal size: part 0 on the calling thread, each other on a
 * thread of its own; a part whose thread cannot start runs on the caller afterwards.
 * Returns the first nonzero result in part order, else 0. n <= 0: no call, 0. */
int rp_threads_for(int nt, int n, rp_threads_part_fn fn, void *user);

#endif
