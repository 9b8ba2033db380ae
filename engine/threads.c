/* threads.c — rp_threads_for (threads.h). */
#include "threads.h"

#include <assert.h>
#include <pthread.h>

typedef struct part {
    rp_threads_part_fn fn;
    void *user;
    int part, i0, i1, rc;
} part;

static void *part_main(void *p) {
    part *w = p;
    w->rc = w->fn(w->user, w->part, w->i0, w->i1);
    return NULL;
}

int rp_threads_for(int nt, int n, rp_threads_part_fn fn, void *user) {
    assert(fn);
    if (n <= 0) return 0;
    if (nt > n) nt = n;
    if (nt > RP_THREADS_MAX) nt = RP_THREADS_MAX;
    if (nt < 1) nt = 1;
    part w[RP_THREADS_MAX];
    pthread_t tid[RP_THREADS_MAX];
    for (int t = 0; t < nt; t++)
        w[t] = (part){.fn = fn, .user = user, .part = t, .i0 = (int)((long long)n * t / nt),
                      .i1 = (int)((long long)n * (t + 1) / nt)};
    int started = 1;
    for (int t = 1; t < nt; t++, started++)
        if (pthread_create(&tid[t], NULL, part_main, &w[t]) != 0) break;
    part_main(&w[0]);
    for (int t = 1; t < started; t++) pthread_join(tid[t], NULL);
    for (int t = started; t < nt; t++) part_main(&w[t]); /* a thread that could not start: here */
    for (int t = 0; t < nt; t++)
        if (w[t].rc) return w[t].rc;
    return 0;
}
