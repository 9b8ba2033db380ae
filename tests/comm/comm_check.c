/* comm_check.c — exact-output checks of every collective of backends/comm.h,
 * and of how the backends fail.
 *
 *   comm_check --backend B --rank R --world W --store-dir D [options]   one rank
 *   comm_check --backend B --spawn N --store-dir D [options]            N ranks, forked here
 *
 * With --spawn the ranks are forked from this process (before any backend is
 * touched) and each gets a fresh store directory D/run-XXXXXX, so reruns never
 * see old keys. Exit: 0 all ranks passed, 77 skipped (no backend / no CUDA
 * device), 1 anything else. Buffers: host memory, or with --mem cuda device
 * memory (nccl always; gloo/self then stage through the host), or with
 * --mem host-staged host memory on nccl (staged through a device scratch).
 *
 * Inputs are built so the exact output is known, as nccl-tests does: small
 * integers in fp32 (rank r, element i of an allreduce is (r+1)*(i%7+1), so
 * every partial sum is an exact integer below 2^24 and any summation order
 * gives the same bits), per-(sender, receiver, index) codes for the exchanges,
 * non-power-of-two counts, zero-length pieces, gaps between alltoallv pieces
 * that must stay untouched. One check uses non-integer data on purpose: the
 * allreduce result must be bitwise identical on every rank and on a rerun.
 *
 * Scenarios (--scenario):
 *   collectives  (default) everything above, on the comm and on split sub-comms
 *   kill         rank W-1 is SIGKILLed by the spawner mid-allreduce; the others
 *                must return RP_ERR_COMM/RP_ERR_TIMEOUT naming "allreduce"
 *                within timeout + slack, then fail fast on the next call
 *   stop         rank W-1 stops itself (SIGSTOP) mid-run; the others must time
 *                out (or see the closed connections) within timeout + slack
 *   nojoin       only ranks 0..W-2 are started; each must get RP_ERR_TIMEOUT
 *                from create naming rank W-1 as "never joined", in time
 *   stale        a second job on the same store and prefix must be refused
 *                (RP_ERR_INVALID "previous run") instead of connecting
 *   noredis      create against a Redis port where nothing listens must fail
 *                with a message naming the RedisStore
 *   dupgpu       (nccl) every rank on cuda device 0: must be refused with a
 *                message naming both ranks and the GPU */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/comm.h"

#ifdef REPRO_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define SKIP 77
#define SLACK_S 2.0  /* allowed beyond the timeout: scheduling on a loaded 2-core CI box */

typedef struct cfg {
    rp_comm_kind kind;
    int rank, world, spawn;
    const char *store_dir, *redis_host, *prefix, *hostname, *iface, *scenario;
    int redis_port;
    double timeout_s;
    int mem_cuda, verbose;
    int host_staged;    /* --mem host-staged: nccl over host buffers (backends/comm.h) */
    int cuda_device;    /* -1: the rank */
} cfg;

/* One rank's test state. */
typedef struct T {
    rp_comm *c;
    int cuda;            /* buffers are device memory */
    int checks, fails;
    char who[96];
} T;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* ---- buffers: host or device, moved through host arrays ------------------ */

static void *dalloc(T *t, size_t bytes) {
    if (bytes == 0) bytes = 4;
#ifdef REPRO_HAVE_CUDA
    if (t->cuda) {
        void *p = NULL;
        if (cudaMalloc(&p, bytes) != cudaSuccess) {
            fprintf(stderr, "%s cudaMalloc(%zu) failed\n", t->who, bytes);
            exit(1);
        }
        return p;
    }
#endif
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "%s out of memory\n", t->who);
        exit(1);
    }
    return p;
}

static void dfree(T *t, void *p) {
#ifdef REPRO_HAVE_CUDA
    if (t->cuda) {
        cudaFree(p);
        return;
    }
#endif
    free(p);
}

static void dput(T *t, void *d, const void *h, size_t bytes) {
    if (!bytes) return;
#ifdef REPRO_HAVE_CUDA
    if (t->cuda) {
        cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
        return;
    }
#endif
    memcpy(d, h, bytes);
}

static void dget(T *t, void *h, const void *d, size_t bytes) {
    if (!bytes) return;
#ifdef REPRO_HAVE_CUDA
    if (t->cuda) {
        cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
        return;
    }
#endif
    memcpy(h, d, bytes);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 4);
    if (!p) {
        perror("malloc");
        exit(1);
    }
    return p;
}

/* ---- checking ----------------------------------------------------------- */

static int ok_status(T *t, rp_status s, const rp_error *e, const char *what) {
    t->checks++;
    if (s == RP_OK) return 1;
    t->fails++;
    printf("%s FAIL %s: %s at %s: %s\n", t->who, what, rp_status_name(s), e->where, e->msg);
    return 0;
}

static void expect_status(T *t, rp_status got, rp_status want, const rp_error *e, const char *what) {
    t->checks++;
    if (got == want) {
        if (t->c && t->c->rank == 0 && got != RP_OK && getenv("COMM_CHECK_SHOW"))
            printf("%s   (%s) %s\n", t->who, what, e->msg);
        return;
    }
    t->fails++;
    printf("%s FAIL %s: expected %s, got %s (%s)\n", t->who, what, rp_status_name(want),
           rp_status_name(got), got == RP_OK ? "" : e->msg);
}

static void check_true(T *t, int cond, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check_true(T *t, int cond, const char *fmt, ...) {
    t->checks++;
    if (cond) return;
    t->fails++;
    va_list ap;
    va_start(ap, fmt);
    printf("%s FAIL ", t->who);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

/* Counts elements whose bits differ from want (exact comparison: every
 * expected value here is exactly representable); prints the first three. */
static void check_floats(T *t, const char *what, const float *got, const float *want, size_t n) {
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&got[i], &want[i], sizeof(float)) == 0) continue;
        if (wrong < 3)
            printf("%s   %s: element %zu is %.9g, expected %.9g\n", t->who, what, i, got[i], want[i]);
        wrong++;
    }
    t->checks++;
    if (wrong) {
        t->fails++;
        printf("%s FAIL %s: %zu of %zu elements wrong\n", t->who, what, wrong, n);
    } else if (t->c && t->c->rank == 0 && getenv("COMM_CHECK_VERBOSE")) {
        printf("%s ok %s\n", t->who, what);
    }
}

static void check_bytes(T *t, const char *what, const unsigned char *got,
                        const unsigned char *want, size_t n) {
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && wrong++ == 0) first = i;
    t->checks++;
    if (wrong) {
        t->fails++;
        printf("%s FAIL %s: %zu of %zu bytes wrong (first at %zu: %d, expected %d)\n", t->who,
               what, wrong, n, first, got[first], want[first]);
    }
}

/* ---- the collectives ------------------------------------------------------- */

static const size_t k_counts[] = {0, 1, 7, 1000, 1023, 4099, 65537, 262147};
#define NCOUNTS (sizeof k_counts / sizeof k_counts[0])

static void test_allreduce(T *t) {
    rp_comm *c = t->c;
    const int n = c->world, r = c->rank;
    char what[96];
    for (size_t k = 0; k < NCOUNTS; k++) {
        size_t cnt = k_counts[k];
        float *h = xmalloc(cnt * 4), *want = xmalloc(cnt * 4), *d = dalloc(t, cnt * 4);
        /* sum: (r+1)*(i%7+1), exact: (i%7+1) * n(n+1)/2 */
        for (size_t i = 0; i < cnt; i++) {
            h[i] = (float)((r + 1) * (int)(i % 7 + 1));
            want[i] = (float)((int)(i % 7 + 1) * n * (n + 1) / 2);
        }
        dput(t, d, h, cnt * 4);
        rp_error e = {0};
        snprintf(what, sizeof what, "allreduce sum count %zu", cnt);
        if (ok_status(t, c->ops->allreduce(c, d, cnt, RP_REDUCE_SUM, &e), &e, what)) {
            dget(t, h, d, cnt * 4);
            check_floats(t, what, h, want, cnt);
        }
        /* max: a rank-dependent pattern with negatives; the max is known */
        for (size_t i = 0; i < cnt; i++) {
            h[i] = (float)((int)((i * 31 + (size_t)r * 17) % 101) - 50);
            int m = -1000;
            for (int q = 0; q < n; q++) {
                int v = (int)((i * 31 + (size_t)q * 17) % 101) - 50;
                if (v > m) m = v;
            }
            want[i] = (float)m;
        }
        dput(t, d, h, cnt * 4);
        snprintf(what, sizeof what, "allreduce max count %zu", cnt);
        if (ok_status(t, c->ops->allreduce(c, d, cnt, RP_REDUCE_MAX, &e), &e, what)) {
            dget(t, h, d, cnt * 4);
            check_floats(t, what, h, want, cnt);
        }
        free(h);
        free(want);
        dfree(t, d);
    }
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Non-integer data: the order of additions matters here, so this checks what
 * comm.h promises instead of exact values — every rank gets the same bits, a
 * rerun gets the same bits, and the result is within the fp32 bound of the
 * exact sum (n-1 roundings of partial sums no larger than sum|x|). */
static void test_allreduce_bits(T *t) {
    rp_comm *c = t->c;
    const int n = c->world, r = c->rank;
    const size_t cnt = 4099;
    float *x = xmalloc(cnt * 4), *a = xmalloc(cnt * 4), *b = xmalloc(cnt * 4);
    float *all = xmalloc(cnt * 4 * (size_t)n);
    float *d = dalloc(t, cnt * 4), *dall = dalloc(t, cnt * 4 * (size_t)n);
    uint64_t s = 12345 + (uint64_t)r;
    for (size_t i = 0; i < cnt; i++) x[i] = (float)((double)(splitmix(&s) >> 11) * 0x1p-53 * 2 - 1);
    rp_error e = {0};
    dput(t, d, x, cnt * 4);
    int ok = ok_status(t, c->ops->allreduce(c, d, cnt, RP_REDUCE_SUM, &e), &e, "allreduce random run 1");
    dget(t, a, d, cnt * 4);
    dput(t, d, x, cnt * 4);
    ok = ok && ok_status(t, c->ops->allreduce(c, d, cnt, RP_REDUCE_SUM, &e), &e, "allreduce random run 2");
    dget(t, b, d, cnt * 4);
    if (ok) {
        check_true(t, memcmp(a, b, cnt * 4) == 0, "allreduce random: rerun gave different bits");
        dput(t, d, a, cnt * 4);
        if (ok_status(t, c->ops->allgather(c, d, cnt, dall, &e), &e, "allgather of allreduce results")) {
            dget(t, all, dall, cnt * 4 * (size_t)n);
            for (int q = 0; q < n; q++)
                check_true(t, memcmp(all + (size_t)q * cnt, a, cnt * 4) == 0,
                           "allreduce random: rank %d's result differs in bits from rank %d's", q, r);
        }
        /* bound against the exact sum, recomputed from every rank's seed */
        size_t bad = 0;
        float **xs = xmalloc(sizeof(float *) * (size_t)n);
        for (int q = 0; q < n; q++) {
            xs[q] = xmalloc(cnt * 4);
            uint64_t sq = 12345 + (uint64_t)q;
            for (size_t i = 0; i < cnt; i++)
                xs[q][i] = (float)((double)(splitmix(&sq) >> 11) * 0x1p-53 * 2 - 1);
        }
        for (size_t i = 0; i < cnt; i++) {
            double exact = 0, mag = 0;
            for (int q = 0; q < n; q++) {
                exact += xs[q][i];
                mag += fabs(xs[q][i]);
            }
            if (fabs(a[i] - exact) > (n - 1) * 0x1p-24 * mag * 1.0001 + 1e-30) bad++;
        }
        check_true(t, bad == 0, "allreduce random: %zu elements outside the fp32 error bound", bad);
        for (int q = 0; q < n; q++) free(xs[q]);
        free(xs);
    }
    free(x);
    free(a);
    free(b);
    free(all);
    dfree(t, d);
    dfree(t, dall);
}

static float ag_code(int r, size_t i) { return (float)((r + 1) * 65536 + (int)(i % 65536)); }

static void test_allgather(T *t) {
    rp_comm *c = t->c;
    const int n = c->world, r = c->rank;
    char what[64];
    for (size_t k = 0; k < NCOUNTS; k++) {
        size_t cnt = k_counts[k], tot = cnt * (size_t)n;
        float *h = xmalloc(cnt * 4), *got = xmalloc(tot * 4), *want = xmalloc(tot * 4);
        float *ds = dalloc(t, cnt * 4), *dr = dalloc(t, tot * 4);
        for (size_t i = 0; i < cnt; i++) h[i] = ag_code(r, i);
        for (int q = 0; q < n; q++)
            for (size_t i = 0; i < cnt; i++) want[(size_t)q * cnt + i] = ag_code(q, i);
        dput(t, ds, h, cnt * 4);
        rp_error e = {0};
        snprintf(what, sizeof what, "allgather count %zu", cnt);
        if (ok_status(t, c->ops->allgather(c, ds, cnt, dr, &e), &e, what)) {
            dget(t, got, dr, tot * 4);
            check_floats(t, what, got, want, tot);
        }
        free(h);
        free(got);
        free(want);
        dfree(t, ds);
        dfree(t, dr);
    }
}

/* what sender s puts at index j of its piece for receiver d */
static float xcode(int s, int d, size_t j) { return (float)(s * 1000 + d * 100 + (int)(j % 97)); }

static void test_alltoall(T *t) {
    rp_comm *c = t->c;
    const int n = c->world, r = c->rank;
    static const size_t counts[] = {0, 1, 3, 1000, 65537};
    char what[64];
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        size_t cnt = counts[k], tot = cnt * (size_t)n;
        float *h = xmalloc(tot * 4), *got = xmalloc(tot * 4), *want = xmalloc(tot * 4);
        float *ds = dalloc(t, tot * 4), *dr = dalloc(t, tot * 4);
        for (int p = 0; p < n; p++)
            for (size_t j = 0; j < cnt; j++) {
                h[(size_t)p * cnt + j] = xcode(r, p, j);
                want[(size_t)p * cnt + j] = xcode(p, r, j);
            }
        dput(t, ds, h, tot * 4);
        rp_error e = {0};
        snprintf(what, sizeof what, "alltoall count %zu", cnt);
        if (ok_status(t, c->ops->alltoall(c, ds, dr, cnt, &e), &e, what)) {
            dget(t, got, dr, tot * 4);
            check_floats(t, what, got, want, tot);
        }
        free(h);
        free(got);
        free(want);
        dfree(t, ds);
        dfree(t, dr);
    }
}

/* alltoallv piece sizes from sender s to receiver d, per variant */
static size_t vcount(int variant, int s, int d) {
    switch (variant) {
    case 0: return (size_t)((s * 3 + d * 5 + 1) % 4);               /* small, some zero */
    case 1: return 0;                                               /* all empty */
    case 2: return 1000 + (size_t)((s * 7 + d * 11) % 13) * 37;     /* large, all different */
    case 3: return (s == 0 || d == 0) ? (size_t)(5 + s + d) : 0;    /* only via rank 0 */
    default: return (size_t)(s == d ? 0 : 2 + s);                   /* nothing to oneself */
    }
}

static void test_alltoallv(T *t) {
    rp_comm *c = t->c;
    const int n = c->world, r = c->rank;
    const float sentinel = -7777.0f;
    char what[64];
    for (int v = 0; v < 5; v++) {
        size_t *sc = xmalloc(sizeof(size_t) * (size_t)n * 4);
        size_t *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n;
        /* send pieces in reverse peer order with 3-element gaps; receive
         * pieces in order from offset 1 with 2-element gaps that must stay */
        size_t pos = 0;
        for (int p = n - 1; p >= 0; p--) {
            sc[p] = vcount(v, r, p);
            sd[p] = pos;
            pos += sc[p] + 3;
        }
        size_t sext = pos;
        pos = 1;
        for (int p = 0; p < n; p++) {
            rc[p] = vcount(v, p, r);
            rd[p] = pos;
            pos += rc[p] + 2;
        }
        size_t rext = pos;
        float *h = xmalloc(sext * 4), *got = xmalloc(rext * 4), *want = xmalloc(rext * 4);
        for (size_t i = 0; i < sext; i++) h[i] = -1.0f;
        for (int p = 0; p < n; p++)
            for (size_t j = 0; j < sc[p]; j++) h[sd[p] + j] = xcode(r, p, j);
        for (size_t i = 0; i < rext; i++) want[i] = sentinel;
        for (int p = 0; p < n; p++)
            for (size_t j = 0; j < rc[p]; j++) want[rd[p] + j] = xcode(p, r, j);
        float *ds = dalloc(t, sext * 4), *dr = dalloc(t, rext * 4);
        dput(t, ds, h, sext * 4);
        dput(t, dr, want, rext * 4);  /* gaps start as sentinels; pieces get overwritten */
        for (int p = 0; p < n; p++) /* poison the pieces so a missing one shows */
            for (size_t j = 0; j < rc[p]; j++) got[rd[p] + j] = NAN;
        for (int p = 0; p < n; p++) dput(t, dr + rd[p], got + rd[p], rc[p] * 4);
        rp_error e = {0};
        snprintf(what, sizeof what, "alltoallv variant %d", v);
        if (ok_status(t, c->ops->alltoallv(c, ds, sc, sd, dr, rc, rd, &e), &e, what)) {
            dget(t, got, dr, rext * 4);
            check_floats(t, what, got, want, rext);
        }
        free(sc);
        free(h);
        free(got);
        free(want);
        dfree(t, ds);
        dfree(t, dr);
    }
}

static void test_broadcast(T *t) {
    rp_comm *c = t->c;
    const int n = c->world, r = c->rank;
    static const size_t sizes[] = {0, 1, 13, 4097, (1u << 20) + 7};
    char what[64];
    for (int root = 0; root < n; root++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t b = sizes[k];
            unsigned char *h = xmalloc(b), *want = xmalloc(b);
            for (size_t i = 0; i < b; i++) {
                want[i] = (unsigned char)((size_t)root * 31 + i * 7 + b);
                h[i] = r == root ? want[i] : 0xAA;
            }
            unsigned char *d = dalloc(t, b);
            dput(t, d, h, b);
            rp_error e = {0};
            snprintf(what, sizeof what, "broadcast %zu bytes from root %d", b, root);
            if (ok_status(t, c->ops->broadcast(c, d, b, root, &e), &e, what)) {
                dget(t, h, d, b);
                check_bytes(t, what, h, want, b);
            }
            free(h);
            free(want);
            dfree(t, d);
        }
}

static void fill_msg(unsigned char *p, size_t b, int src, int tag) {
    for (size_t i = 0; i < b; i++) p[i] = (unsigned char)(src * 13 + i * 7 + b + (size_t)tag * 5);
}

/* Blocking send/recv around the ring: rank 0 sends first, everyone else
 * receives from r-1 before sending to r+1, so nothing deadlocks. */
static void test_send_recv(T *t) {
    rp_comm *c = t->c;
    const int n = c->world, r = c->rank;
    rp_error e = {0};
    if (n == 1) {
        char x = 0;
        expect_status(t, c->ops->send(c, &x, 1, 0, 0, &e), RP_ERR_INVALID, &e, "send to oneself");
        return;
    }
    static const size_t sizes[] = {1, 1000, (1u << 20) + 1};
    char what[96];
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t b = sizes[k];
        int next = (r + 1) % n, prev = (r + n - 1) % n, tag = (int)k + 1;
        unsigned char *out = xmalloc(b), *in = xmalloc(b), *want = xmalloc(b);
        unsigned char *dout = dalloc(t, b), *din = dalloc(t, b);
        fill_msg(out, b, r, tag);
        fill_msg(want, b, prev, tag);
        dput(t, dout, out, b);
        snprintf(what, sizeof what, "ring send/recv %zu bytes tag %d", b, tag);
        int ok;
        if (r == 0) {
            ok = ok_status(t, c->ops->send(c, dout, b, next, tag, &e), &e, what) &&
                 ok_status(t, c->ops->recv(c, din, b, prev, tag, &e), &e, what);
        } else {
            ok = ok_status(t, c->ops->recv(c, din, b, prev, tag, &e), &e, what) &&
                 ok_status(t, c->ops->send(c, dout, b, next, tag, &e), &e, what);
        }
        if (ok) {
            dget(t, in, din, b);
            check_bytes(t, what, in, want, b);
        }
        free(out);
        free(in);
        free(want);
        dfree(t, dout);
        dfree(t, din);
    }
}

/* Every rank sends to r+1 and receives from r-1 at once: deadlock-free only
 * because sendrecv posts both halves before waiting. Also the half-empty
 * forms (send only / receive only) and the world-1 local copy. */
static void test_sendrecv(T *t) {
    rp_comm *c = t->c;
    const int n = c->world, r = c->rank;
    static const size_t sizes[] = {0, 5, 100003, (1u << 22) + 3};
    char what[96];
    rp_error e = {0};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int tag = 0; tag < 8; tag += 3) {
            size_t b = sizes[k];
            int next = (r + 1) % n, prev = (r + n - 1) % n;
            unsigned char *out = xmalloc(b), *in = xmalloc(b), *want = xmalloc(b);
            unsigned char *dout = dalloc(t, b), *din = dalloc(t, b);
            fill_msg(out, b, r, tag);
            fill_msg(want, b, prev, tag);
            dput(t, dout, out, b);
            snprintf(what, sizeof what, "sendrecv ring shift %zu bytes tag %d", b, tag);
            if (ok_status(t, c->ops->sendrecv(c, dout, b, next, din, b, prev, tag, &e), &e, what)) {
                dget(t, in, din, b);
                check_bytes(t, what, in, want, b);
            }
            free(out);
            free(in);
            free(want);
            dfree(t, dout);
            dfree(t, din);
        }
    if (n >= 2) {
        /* rank 0 -> rank n-1 as one-sided halves; the ranks between take no part */
        size_t b = 777;
        unsigned char *buf = xmalloc(b), *want = xmalloc(b), *d = dalloc(t, b);
        fill_msg(want, b, 0, 9);
        if (r == 0) {
            dput(t, d, want, b);
            ok_status(t, c->ops->sendrecv(c, d, b, n - 1, NULL, 0, RP_COMM_NO_PEER, 9, &e), &e,
                      "sendrecv send half");
        } else if (r == n - 1) {
            if (ok_status(t, c->ops->sendrecv(c, NULL, 0, RP_COMM_NO_PEER, d, b, 0, 9, &e), &e,
                          "sendrecv receive half")) {
                dget(t, buf, d, b);
                check_bytes(t, "sendrecv receive half", buf, want, b);
            }
        } else {
            ok_status(t, c->ops->sendrecv(c, NULL, 0, RP_COMM_NO_PEER, NULL, 0, RP_COMM_NO_PEER, 9, &e),
                      &e, "sendrecv with no peers");
        }
        free(buf);
        free(want);
        dfree(t, d);
    }
}

/* Arguments that are wrong on this rank alone are refused before anything is
 * sent, and leave the communicator usable (the barrier after them passes). */
static void test_invalid(T *t) {
    rp_comm *c = t->c;
    const int n = c->world, r = c->rank;
    rp_error e = {0};
    float *d = dalloc(t, 64 * 4);
    expect_status(t, c->ops->broadcast(c, d, 4, n, &e), RP_ERR_INVALID, &e, "broadcast root = world");
    expect_status(t, c->ops->broadcast(c, d, 4, -1, &e), RP_ERR_INVALID, &e, "broadcast root -1");
    expect_status(t, c->ops->allreduce(c, d, 4, (rp_reduce_op)99, &e), RP_ERR_INVALID, &e,
                  "allreduce unknown op");
    expect_status(t, c->ops->send(c, d, 4, r, 0, &e), RP_ERR_INVALID, &e, "send to oneself");
    expect_status(t, c->ops->recv(c, d, 4, n + 3, 0, &e), RP_ERR_INVALID, &e, "recv from rank > world");
    expect_status(t, c->ops->send(c, d, 4, (r + 1) % n, -2, &e), RP_ERR_INVALID, &e, "negative tag");
    expect_status(t, c->ops->sendrecv(c, d, 4, r, d, 4, (r + 1) % n == r ? RP_COMM_NO_PEER : (r + 1) % n, 0, &e),
                  RP_ERR_INVALID, &e, "sendrecv to oneself from another");
    size_t *cnt = xmalloc(sizeof(size_t) * (size_t)n * 4);
    for (int p = 0; p < 4 * n; p++) cnt[p] = 0;
    cnt[r] = 2; /* sends itself 2, expects 0 */
    expect_status(t, c->ops->alltoallv(c, d, cnt, cnt + n, d + 16, cnt + 2 * n, cnt + 3 * n, &e),
                  RP_ERR_INVALID, &e, "alltoallv self count mismatch");
    if (n >= 2 && c->kind == RP_COMM_GLOO) {
        /* counts that disagree between ranks: rank 0 expects one float more
         * from rank 1 than rank 1 sends; every rank must refuse, none crash */
        for (int p = 0; p < 4 * n; p++) cnt[p] = 0;
        size_t *sc = cnt, *sd = cnt + n, *rc = cnt + 2 * n, *rd = cnt + 3 * n;
        for (int p = 0; p < n; p++) {
            sc[p] = 1;
            sd[p] = (size_t)p;
            rc[p] = 1 + (r == 0 && p == 1);
            rd[p] = (size_t)p * 2;
        }
        float *dr = dalloc(t, (size_t)n * 2 * 4);
        expect_status(t, c->ops->alltoallv(c, d, sc, sd, dr, rc, rd, &e), RP_ERR_INVALID, &e,
                      "alltoallv counts that disagree between ranks");
        dfree(t, dr);
    }
    free(cnt);
    ok_status(t, c->ops->barrier(c, &e), &e, "barrier after refused calls");
    dfree(t, d);
}

static void run_all(T *t);

/* Split by parity with keys reversing the order, and a split that leaves the
 * last rank out; each child runs an allreduce and an allgather whose exact
 * results follow from its member list. */
static void test_split(T *t, int depth) {
    rp_comm *c = t->c;
    const int n = c->world, r = c->rank;
    rp_error e = {0};
    for (int mode = 0; mode < 2; mode++) {
        int color = mode == 0 ? r % 2 : (r == n - 1 ? -1 : 7);
        int key = mode == 0 ? -r : 0;
        rp_comm *sub = NULL;
        char what[64];
        snprintf(what, sizeof what, "split mode %d", mode);
        if (!ok_status(t, c->ops->split(c, color, key, &sub, &e), &e, what)) continue;
        int members[64], m = 0;
        if (mode == 0)
            for (int q = n - 1; q >= 0; q--) {
                if (q % 2 == r % 2) members[m++] = q;
            }
        else
            for (int q = 0; q < n - 1; q++) members[m++] = q;
        if (color < 0) {
            check_true(t, sub == NULL, "%s: a rank with color < 0 got a communicator", what);
            rp_comm_destroy(sub);
            continue;
        }
        if (!sub) {
            check_true(t, 0, "%s: no communicator returned", what);
            continue;
        }
        int me = -1;
        for (int i = 0; i < m; i++)
            if (members[i] == r) me = i;
        check_true(t, sub->world == m && sub->rank == me && sub->kind == c->kind && sub->mem == c->mem,
                   "%s: got rank %d of %d, expected %d of %d", what, sub->rank, sub->world, me, m);
        if (sub->world == m && sub->rank == me) {
            float h[3] = {(float)(r + 1), (float)(r * r), 1}, want[3] = {0, 0, (float)m};
            for (int i = 0; i < m; i++) {
                want[0] += (float)(members[i] + 1);
                want[1] += (float)(members[i] * members[i]);
            }
            float *d = dalloc(t, sizeof h), *dall = dalloc(t, sizeof(float) * (size_t)m);
            dput(t, d, h, sizeof h);
            snprintf(what, sizeof what, "split mode %d allreduce", mode);
            if (ok_status(t, sub->ops->allreduce(sub, d, 3, RP_REDUCE_SUM, &e), &e, what)) {
                dget(t, h, d, sizeof h);
                check_floats(t, what, h, want, 3);
            }
            float mine = (float)r, all[64], wall[64];
            for (int i = 0; i < m; i++) wall[i] = (float)members[i];
            dput(t, d, &mine, sizeof mine);
            snprintf(what, sizeof what, "split mode %d allgather of parent ranks", mode);
            if (ok_status(t, sub->ops->allgather(sub, d, 1, dall, &e), &e, what)) {
                dget(t, all, dall, sizeof(float) * (size_t)m);
                check_floats(t, what, all, wall, (size_t)m);
            }
            dfree(t, d);
            dfree(t, dall);
            if (depth == 0 && mode == 0) {
                /* the whole suite again inside the sub-communicator */
                T ts = *t;
                ts.c = sub;
                snprintf(ts.who, sizeof ts.who, "%.60s[sub %d/%d]", t->who, sub->rank, sub->world);
                ts.checks = ts.fails = 0;
                run_all(&ts);
                test_split(&ts, depth + 1);
                t->checks += ts.checks;
                t->fails += ts.fails;
            }
        }
        rp_comm_destroy(sub);
    }
}

static void run_all(T *t) {
    rp_error e = {0};
    ok_status(t, t->c->ops->barrier(t->c, &e), &e, "barrier");
    test_allreduce(t);
    test_allreduce_bits(t);
    test_allgather(t);
    test_alltoall(t);
    test_alltoallv(t);
    test_broadcast(t);
    test_send_recv(t);
    test_sendrecv(t);
    test_invalid(t);
    ok_status(t, t->c->ops->barrier(t->c, &e), &e, "barrier");
}

/* ---- one rank ------------------------------------------------------------ */

static rp_comm_opts make_opts(const cfg *g) {
    rp_comm_opts o = {0};
    o.kind = g->kind;
    o.rank = g->rank;
    o.world = g->world;
    o.store_dir = g->redis_host ? NULL : g->store_dir;
    o.redis_host = g->redis_host;
    o.redis_port = g->redis_port;
    o.prefix = g->prefix;
    o.hostname = g->iface ? NULL : g->hostname;
    o.iface = g->iface;
    o.timeout_s = g->timeout_s;
    o.mem = ((g->kind == RP_COMM_NCCL && !g->host_staged) || g->mem_cuda) ? RP_MEM_CUDA : RP_MEM_HOST;
    o.host_staged = g->host_staged;
    o.cuda_device = g->cuda_device >= 0 ? g->cuda_device : g->rank;
    return o;
}

static int skip_or_fail(const char *who, rp_status s, const rp_error *e) {
    if (s == RP_ERR_UNSUPPORTED) {
        printf("%s SKIP: %s\n", who, e->msg);
        return SKIP;
    }
    printf("%s FAIL create: %s at %s: %s\n", who, rp_status_name(s), e->where, e->msg);
    return 1;
}

static int rank_collectives(const cfg *g, const char *who) {
    rp_comm_opts o = make_opts(g);
    rp_comm *c = NULL;
    rp_error e = {0};
    double t0 = now_s();
    rp_status s = rp_comm_create(&o, &c, &e);
    if (s != RP_OK) return skip_or_fail(who, s, &e);
    T t = {.c = c, .cuda = o.mem == RP_MEM_CUDA};
    snprintf(t.who, sizeof t.who, "%s", who);
    double t1 = now_s();
    run_all(&t);
    test_split(&t, 0);
    rp_comm_destroy(c);
    printf("%s %s: %d checks, %d failed (create %.2f s, checks %.2f s)\n", who,
           t.fails ? "FAILED" : "passed", t.checks, t.fails, t1 - t0, now_s() - t1);
    return t.fails ? 1 : 0;
}

/* kill / stop: loop allreduces until one fails; the failure must be
 * RP_ERR_COMM or RP_ERR_TIMEOUT, name the collective, come within
 * timeout + slack of the call's start, and the next call must fail at once. */
static int rank_failure(const cfg *g, const char *who, const char *ready_path, int stop_self) {
    rp_comm_opts o = make_opts(g);
    rp_comm *c = NULL;
    rp_error e = {0};
    rp_status s = rp_comm_create(&o, &c, &e);
    if (s != RP_OK) return skip_or_fail(who, s, &e);
    T t = {.c = c, .cuda = o.mem == RP_MEM_CUDA};
    const size_t cnt = (size_t)4 << 20; /* 16 MiB: each allreduce takes a while on loopback */
    float *h = xmalloc(cnt * 4), *d = dalloc(&t, cnt * 4);
    for (size_t i = 0; i < cnt; i++) h[i] = 1.0f;
    const int victim = g->world - 1;
    double start = now_s();
    int iter = 0, rc = 1;
    for (;;) {
        if (iter == 2) { /* tell the spawner we are inside the loop */
            int fd = open(ready_path, O_CREAT | O_WRONLY, 0644);
            if (fd >= 0) close(fd);
        }
        if (stop_self && g->rank == victim && iter == 3) {
            printf("%s stopping itself (SIGSTOP) before allreduce %d\n", who, iter);
            fflush(stdout);
            raise(SIGSTOP);
        }
        dput(&t, d, h, cnt * 4);
        double t0 = now_s();
        s = c->ops->allreduce(c, d, cnt, RP_REDUCE_SUM, &e);
        double dt = now_s() - t0;
        if (s == RP_OK) {
            if (++iter > 0 && now_s() - start > 60) {
                printf("%s FAIL: still no failure after 60 s (%d allreduces)\n", who, iter);
                break;
            }
            continue;
        }
        printf("%s allreduce %d failed after %.2f s: %s: %s\n", who, iter, dt, rp_status_name(s), e.msg);
        int good = 1;
        if (s != RP_ERR_COMM && s != RP_ERR_TIMEOUT) {
            printf("%s FAIL: expected comm or timeout\n", who);
            good = 0;
        }
        if (!strstr(e.msg, "allreduce")) {
            printf("%s FAIL: message does not name the collective\n", who);
            good = 0;
        }
        if (dt > g->timeout_s + SLACK_S) {
            printf("%s FAIL: took %.2f s, bound is timeout %.1f + %.1f s\n", who, dt, g->timeout_s, SLACK_S);
            good = 0;
        }
        if (stop_self && iter < 3) {
            printf("%s FAIL: failed before the victim stopped\n", who);
            good = 0;
        }
        double t2 = now_s();
        rp_status s2 = c->ops->barrier(c, &e);
        if (s2 != RP_ERR_COMM || now_s() - t2 > 0.5) {
            printf("%s FAIL: the call after the failure gave %s after %.2f s, expected comm at once\n",
                   who, rp_status_name(s2), now_s() - t2);
            good = 0;
        }
        rc = good ? 0 : 1;
        break;
    }
    free(h);
    dfree(&t, d);
    double t3 = now_s();
    rp_comm_destroy(c);
    if (now_s() - t3 > g->timeout_s + SLACK_S) {
        printf("%s FAIL: destroying the broken communicator took %.2f s\n", who, now_s() - t3);
        rc = 1;
    }
    printf("%s %s\n", who, rc ? "FAILED" : "passed: failure reported in time");
    return rc;
}

static int rank_nojoin(const cfg *g, const char *who) {
    rp_comm_opts o = make_opts(g);
    rp_comm *c = NULL;
    rp_error e = {0};
    double t0 = now_s();
    rp_status s = rp_comm_create(&o, &c, &e);
    double dt = now_s() - t0;
    if (s == RP_ERR_UNSUPPORTED) return skip_or_fail(who, s, &e);
    char want[32];
    snprintf(want, sizeof want, "rank %d (never joined)", g->world - 1);
    int good = s == RP_ERR_TIMEOUT && strstr(e.msg, want) && dt < g->timeout_s + SLACK_S &&
               dt >= g->timeout_s - 0.05;
    printf("%s create gave %s after %.2f s: %s\n", who, rp_status_name(s), dt, s ? e.msg : "");
    if (!good)
        printf("%s FAIL: expected timeout naming '%s' within %.1f..%.1f s\n", who, want,
               g->timeout_s, g->timeout_s + SLACK_S);
    rp_comm_destroy(c);
    return good ? 0 : 1;
}

/* The first job runs a barrier on (store, prefix); the second, started on the
 * same pair, must be refused before it connects to anything. */
static int rank_stale(const cfg *g, const char *who, int second) {
    rp_comm_opts o = make_opts(g);
    rp_comm *c = NULL;
    rp_error e = {0};
    rp_status s = rp_comm_create(&o, &c, &e);
    if (s == RP_ERR_UNSUPPORTED) return skip_or_fail(who, s, &e);
    if (!second) {
        if (s != RP_OK) return skip_or_fail(who, s, &e);
        s = c->ops->barrier(c, &e);
        rp_comm_destroy(c);
        if (s != RP_OK) printf("%s FAIL first job barrier: %s\n", who, e.msg);
        return s == RP_OK ? 0 : 1;
    }
    rp_comm_destroy(c);
    int good = s == RP_ERR_INVALID && strstr(e.msg, "previous run");
    printf("%s second job on the same store/prefix: %s: %s\n", who, rp_status_name(s), s ? e.msg : "");
    if (!good) printf("%s FAIL: expected invalid naming the previous run\n", who);
    return good ? 0 : 1;
}

static int rank_expect_create_fail(const cfg *g, const char *who, rp_status want_status,
                                   const char *want1, const char *want2) {
    rp_comm_opts o = make_opts(g);
    rp_comm *c = NULL;
    rp_error e = {0};
    double t0 = now_s();
    rp_status s = rp_comm_create(&o, &c, &e);
    double dt = now_s() - t0;
    if (s == RP_ERR_UNSUPPORTED) return skip_or_fail(who, s, &e);
    rp_comm_destroy(c);
    int good = (s == want_status || (want_status == RP_ERR_IO && s == RP_ERR_COMM)) &&
               strstr(e.msg, want1) && (!want2 || strstr(e.msg, want2)) && dt < g->timeout_s + SLACK_S;
    printf("%s create gave %s after %.2f s: %s\n", who, rp_status_name(s), dt, s ? e.msg : "");
    if (!good) printf("%s FAIL: expected %s naming '%s'%s%s\n", who, rp_status_name(want_status),
                      want1, want2 ? " and " : "", want2 ? want2 : "");
    return good ? 0 : 1;
}

static int run_rank(const cfg *g, const char *ready_path, int phase) {
    char who[96];
    snprintf(who, sizeof who, "[%s %d/%d]", rp_comm_kind_name(g->kind), g->rank, g->world);
    const char *sc = g->scenario;
    if (!strcmp(sc, "collectives")) return rank_collectives(g, who);
    if (!strcmp(sc, "kill")) return rank_failure(g, who, ready_path, 0);
    if (!strcmp(sc, "stop")) return rank_failure(g, who, ready_path, 1);
    if (!strcmp(sc, "nojoin")) return rank_nojoin(g, who);
    if (!strcmp(sc, "stale")) return rank_stale(g, who, phase);
    if (!strcmp(sc, "noredis"))
        return rank_expect_create_fail(g, who, RP_ERR_IO, "RedisStore", NULL);
    if (!strcmp(sc, "dupgpu"))
        return rank_expect_create_fail(g, who, RP_ERR_INVALID, "would both use GPU", "ranks 0 and 1");
    printf("%s unknown scenario '%s'\n", who, sc);
    return 2;
}

/* ---- spawning ------------------------------------------------------------ */

static int mkdirs(const char *path) {
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0777);
            *p = '/';
        }
    return mkdir(buf, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

/* Forks ranks [0, started) of a world of g->world, waits for all, and
 * combines their results. kill_rank >= 0: SIGKILL that rank once every rank
 * has written its ready file (or after 20 s). */
static int spawn_job(const cfg *base, const char *run_dir, int started, int kill_rank, int phase) {
    pid_t pids[64];
    char ready[64][PATH_MAX];
    for (int r = 0; r < started; r++) {
        snprintf(ready[r], sizeof ready[r], "%s/ready.%d.%d", run_dir, phase, r);
        fflush(stdout);
        fflush(stderr);
        pid_t p = fork();
        if (p < 0) {
            perror("fork");
            return 1;
        }
        if (p == 0) {
            cfg g = *base;
            g.rank = r;
            int rc = run_rank(&g, ready[r], phase);
            fflush(stdout);
            _exit(rc);
        }
        pids[r] = p;
    }
    int stopped_victim = !strcmp(base->scenario, "stop") ? base->world - 1 : -1;
    if (kill_rank >= 0 || stopped_victim >= 0) {
        double t0 = now_s();
        int all = 0;
        while (!all && now_s() - t0 < 20) {
            all = 1;
            for (int r = 0; r < started; r++)
                if (access(ready[r], F_OK) != 0) all = 0;
            usleep(20000);
        }
        if (kill_rank >= 0) {
            usleep(150000); /* well inside the allreduce loop */
            printf("comm_check: SIGKILL to rank %d (pid %ld)\n", kill_rank, (long)pids[kill_rank]);
            fflush(stdout);
            kill(pids[kill_rank], SIGKILL);
        }
    }
    int skips = 0, fails = 0;
    int done[64] = {0};
    for (int left = started; left > 0;) {
        int st;
        pid_t p = waitpid(-1, &st, stopped_victim >= 0 ? WNOHANG : 0);
        if (p == 0) {
            /* stop scenario: once every survivor has finished, release the victim */
            int survivors_left = 0;
            for (int r = 0; r < started; r++)
                if (!done[r] && r != stopped_victim) survivors_left++;
            if (survivors_left == 0) kill(pids[stopped_victim], SIGKILL);
            usleep(20000);
            continue;
        }
        if (p < 0) {
            if (errno == EINTR) continue;
            perror("waitpid");
            return 1;
        }
        int r = -1;
        for (int q = 0; q < started; q++)
            if (pids[q] == p) r = q;
        if (r < 0) continue;
        done[r] = 1;
        left--;
        if (r == kill_rank || r == stopped_victim) {
            if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
                printf("comm_check: victim rank %d was expected to die by SIGKILL\n", r);
                fails++;
            }
            continue;
        }
        if (WIFEXITED(st) && WEXITSTATUS(st) == SKIP) skips++;
        else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            printf("comm_check: rank %d %s %d\n", r, WIFEXITED(st) ? "exited" : "killed by signal",
                   WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            fails++;
        }
    }
    int counted = started - (kill_rank >= 0) - (stopped_victim >= 0);
    if (fails) return 1;
    if (skips && skips == counted) return SKIP;
    return skips ? 1 : 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int spawn(cfg *g) {
    if (g->spawn < 1 || g->spawn > 64) {
        fprintf(stderr, "comm_check: --spawn must be 1..64\n");
        return 2;
    }
    g->world = g->spawn;
    if (mkdirs(g->store_dir) != 0) {
        fprintf(stderr, "comm_check: cannot create %s: %s\n", g->store_dir, strerror(errno));
        return 1;
    }
    char run_dir[PATH_MAX];
    snprintf(run_dir, sizeof run_dir, "%s/run-XXXXXX", g->store_dir);
    if (!mkdtemp(run_dir)) {
        fprintf(stderr, "comm_check: mkdtemp in %s: %s\n", g->store_dir, strerror(errno));
        return 1;
    }
    g->store_dir = run_dir;
    char prefix[96];
    if (!g->prefix) { /* Redis keys outlive runs: make them unique per run */
        snprintf(prefix, sizeof prefix, "comm_check-%s", strrchr(run_dir, '-') + 1);
        g->prefix = prefix;
    }
    const char *sc = g->scenario;
    printf("comm_check: %s, world %d, scenario %s, store %s%s, timeout %.1f s\n",
           rp_comm_kind_name(g->kind), g->world, sc,
           g->redis_host ? "redis " : "", g->redis_host ? g->redis_host : run_dir, g->timeout_s);
    int rc;
    if (!strcmp(sc, "kill")) rc = spawn_job(g, run_dir, g->world, g->world - 1, 0);
    else if (!strcmp(sc, "nojoin")) rc = spawn_job(g, run_dir, g->world - 1, -1, 0);
    else if (!strcmp(sc, "stale")) {
        rc = spawn_job(g, run_dir, g->world, -1, 0);
        if (rc == 0) rc = spawn_job(g, run_dir, g->world, -1, 1);
    } else rc = spawn_job(g, run_dir, g->world, -1, 0);
    printf("comm_check: %s\n", rc == 0 ? "PASSED" : rc == SKIP ? "SKIPPED" : "FAILED");
    if (rc != 1) nftw(run_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); /* kept when it failed */
    else printf("comm_check: store kept in %s\n", run_dir);
    return rc;
}

static void usage(void) {
    fprintf(stderr,
            "usage: comm_check --backend self|gloo|nccl (--spawn N | --rank R --world W)\n"
            "                  --store-dir DIR [--redis-host H --redis-port P] [--prefix P]\n"
            "                  [--timeout S] [--hostname ADDR | --iface IF] [--mem cuda|host-staged] [--cuda-device D]\n"
            "                  [--scenario collectives|kill|stop|nojoin|stale|noredis|dupgpu]\n");
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    cfg g = {.kind = RP_COMM_GLOO, .rank = 0, .world = 1, .hostname = "127.0.0.1",
             .scenario = "collectives", .timeout_s = 30, .cuda_device = -1};
    const char *backend = "gloo";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (!strcmp(a, name) && v && (i++, 1))
        if (ARG("--backend")) backend = v;
        else if (ARG("--rank")) g.rank = atoi(v);
        else if (ARG("--world")) g.world = atoi(v);
        else if (ARG("--spawn")) g.spawn = atoi(v);
        else if (ARG("--store-dir")) g.store_dir = v;
        else if (ARG("--redis-host")) g.redis_host = v;
        else if (ARG("--redis-port")) g.redis_port = atoi(v);
        else if (ARG("--prefix")) g.prefix = v;
        else if (ARG("--timeout")) g.timeout_s = atof(v);
        else if (ARG("--hostname")) g.hostname = v;
        else if (ARG("--iface")) g.iface = v;
        else if (ARG("--scenario")) g.scenario = v;
        else if (ARG("--cuda-device")) g.cuda_device = atoi(v);
        else if (ARG("--mem")) {
            g.mem_cuda = !strcmp(v, "cuda");
            g.host_staged = !strcmp(v, "host-staged");
        }
        else {
            usage();
            return 2;
        }
#undef ARG
    }
    rp_error e = {0};
    if (rp_comm_kind_parse(backend, &g.kind, &e) != RP_OK) {
        fprintf(stderr, "comm_check: %s\n", e.msg);
        return 2;
    }
    if (!rp_comm_available(g.kind)) {
        printf("SKIP: this build has no %s backend\n", backend);
        return SKIP;
    }
    if (!g.store_dir && !g.redis_host && g.kind != RP_COMM_SELF) {
        usage();
        return 2;
    }
    if (!g.store_dir) g.store_dir = "/tmp/comm_check";
    if (!strcmp(g.scenario, "dupgpu")) g.cuda_device = 0;
    if (g.spawn) return spawn(&g);
    char ready[PATH_MAX];
    snprintf(ready, sizeof ready, "%s/ready.%d", g.store_dir, g.rank);
    return run_rank(&g, ready, 0);
}
