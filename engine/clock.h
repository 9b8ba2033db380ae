/* clock.h — the monotonic clock every timing in repro reads (wall seconds, for
 * durations only: never a date). */
#ifndef REPRO_CLOCK_H
#define REPRO_CLOCK_H

#include <time.h>

static inline double rp_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
