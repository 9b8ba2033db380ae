/* bench/comm — allreduce, allgather and alltoall over gloo on loopback, in
 * nccl-tests' table style.
 *
 *   build/bench/comm [--ranks 2,4] [--min-bytes 1K] [--max-bytes 64M] [--factor 4]
 *                    [--ops allreduce,allgather,alltoall] [--iters N] [--warmup W]
 *                    [--backend gloo|self] [--store-dir DIR]
 *
 * Each world size forks its ranks (127.0.0.1, fresh FileStore under
 * --store-dir or $TMPDIR). Columns as nccl-tests defines them:
 *   size   bytes of the whole buffer: allreduce's in-place buffer; allgather's
 *          output (every rank's piece); alltoall's send (= receive) buffer
 *   count  elements (float) in that buffer
 *   time   per call, mean over iterations, then averaged over ranks
 *   algbw  size / time
 *   busbw  algbw * 2(n-1)/n for allreduce, algbw * (n-1)/n for allgather and
 *          alltoall: the traffic per rank link a perfect ring algorithm needs,
 *          so it is comparable across world sizes and with link bandwidth
 *   #wrong elements differing from the exact expected output after the timed
 *          loop, summed over ranks.
 * Allreduce runs in place with no re-initialisation between iterations: every
 * rank holds identical integers after the first call, so each later call
 * multiplies by n exactly (n a power of two), and the expected output is known
 * in closed form; for other n the check is skipped (#wrong shows "n/a").
 * Iterations per size: --iters, or enough to move ~256 MiB (2..40), after
 * --warmup (default 1) untimed calls. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/comm.h"

typedef struct bench_cfg {
    int ranks[8], nworlds;
    size_t min_bytes, max_bytes;
    int factor, iters, warmup;
    int do_ar, do_ag, do_a2a;
    rp_comm_kind kind;
    const char *store_root;
} bench_cfg;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "64M", "1K", "4096" -> bytes; 0 on a malformed value. */
static size_t parse_size(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0) return 0;
    switch (*end) {
    case 'K': case 'k': v *= 1024; end++; break;
    case 'M': case 'm': v *= 1024 * 1024; end++; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    return *end ? 0 : (size_t)v;
}

static int iters_for(const bench_cfg *b, size_t bytes) {
    if (b->iters > 0) return b->iters;
    size_t it = ((size_t)256 << 20) / bytes;
    return it < 2 ? 2 : it > 40 ? 40 : (int)it;
}

static int is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

/* Averages t over ranks (allreduce sum / n) and sums wrong; prints the row on
 * rank 0. wrong < 0 on any rank: not checked. */
static int report(rp_comm *c, const char *redop, size_t bytes, double t_us, double wrong,
                  double busfac) {
    float v[3] = {(float)t_us, (float)(wrong < 0 ? 0 : wrong), wrong < 0 ? 1.0f : 0.0f};
    rp_error e = {0};
    if (c->ops->allreduce(c, v, 3, RP_REDUCE_SUM, &e) != RP_OK) {
        fprintf(stderr, "rank %d: %s\n", c->rank, e.msg);
        return 1;
    }
    if (c->rank == 0) {
        double t = v[0] / c->world, algbw = (double)bytes / (t * 1e-6) / 1e9;
        char w[32];
        if (v[2] > 0) snprintf(w, sizeof w, "n/a");
        else snprintf(w, sizeof w, "%.0f", v[1]);
        printf("%12zu  %12zu  %8s  %6s  %10.1f  %7.3f  %7.3f  %6s\n", bytes, bytes / 4, "float",
               redop, t, algbw, algbw * busfac, w);
        fflush(stdout);
    }
    return 0;
}

static int bench_rank(const bench_cfg *b, int rank, int world, const char *store) {
    rp_comm_opts o = {.kind = b->kind, .rank = rank, .world = world, .store_dir = store,
                      .hostname = "127.0.0.1", .timeout_s = 120, .prefix = "bench"};
    rp_comm *c = NULL;
    rp_error e = {0};
    if (rp_comm_create(&o, &c, &e) != RP_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, e.msg);
        return 1;
    }
    const size_t maxc = b->max_bytes / 4;
    float *x = malloc(maxc * 4), *y = malloc(maxc * 4);
    if (!x || !y) {
        fprintf(stderr, "rank %d: cannot allocate 2 x %zu bytes\n", rank, b->max_bytes);
        return 1;
    }
    const int n = world;
    int rc = 0;
    for (int op = 0; op < 3 && rc == 0; op++) {
        if ((op == 0 && !b->do_ar) || (op == 1 && !b->do_ag) || (op == 2 && !b->do_a2a)) continue;
        if (rank == 0) {
            static const char *names[] = {"allreduce (in place)", "allgather", "alltoall"};
            static const char *fac[] = {"2(n-1)/n", "(n-1)/n", "(n-1)/n"};
            printf("#\n# %s, %d ranks, busbw = algbw * %s\n", names[op], n, fac[op]);
            printf("# %10s  %12s  %8s  %6s  %10s  %7s  %7s  %6s\n", "size", "count", "type",
                   "redop", "time", "algbw", "busbw", "#wrong");
            printf("# %10s  %12s  %8s  %6s  %10s  %7s  %7s  %6s\n", "(B)", "(elements)", "", "",
                   "(us)", "(GB/s)", "(GB/s)", "");
        }
        for (size_t bytes = b->min_bytes; bytes <= b->max_bytes && rc == 0;
             bytes *= (size_t)b->factor) {
            size_t cnt = bytes / 4;
            if (op > 0 && cnt % (size_t)n) continue; /* pieces must be whole */
            size_t piece = op == 0 ? cnt : cnt / (size_t)n;
            int iters = iters_for(b, bytes), total = iters + b->warmup;
            /* inputs: allreduce (r+1)*(i%7+1); allgather/alltoall codes per (src, dst, i) */
            if (op == 0)
                for (size_t i = 0; i < cnt; i++) x[i] = (float)((rank + 1) * (int)(i % 7 + 1));
            else if (op == 1)
                for (size_t i = 0; i < piece; i++) x[i] = (float)(rank * 65536 + (int)(i % 65536));
            else
                for (size_t i = 0; i < cnt; i++)
                    x[i] = (float)(rank * 1000 + (int)(i / piece) * 100 + (int)(i % piece % 97));
            rp_status s = RP_OK;
            double t0 = 0;
            for (int it = 0; it < total && s == RP_OK; it++) {
                if (it == b->warmup) {
                    s = c->ops->barrier(c, &e);
                    t0 = now();
                }
                if (s != RP_OK) break;
                if (op == 0) s = c->ops->allreduce(c, x, cnt, RP_REDUCE_SUM, &e);
                else if (op == 1) s = c->ops->allgather(c, x, piece, y, &e);
                else s = c->ops->alltoall(c, x, y, piece, &e);
            }
            double t_us = (now() - t0) / iters * 1e6;
            if (s != RP_OK) {
                fprintf(stderr, "rank %d: %s\n", rank, e.msg);
                rc = 1;
                break;
            }
            double wrong = 0;
            if (op == 0) {
                if (!is_pow2(n)) wrong = -1;
                else {
                    /* after `total` calls: (i%7+1) * n(n+1)/2 * n^(total-1), exact */
                    int shift = (total - 1) * (int)log2((double)n);
                    for (size_t i = 0; i < cnt; i++) {
                        float want = ldexpf((float)((int)(i % 7 + 1) * n * (n + 1) / 2), shift);
                        wrong += x[i] != want;
                    }
                }
            } else if (op == 1) {
                for (int q = 0; q < n; q++)
                    for (size_t i = 0; i < piece; i++)
                        wrong += y[(size_t)q * piece + i] != (float)(q * 65536 + (int)(i % 65536));
            } else {
                for (int q = 0; q < n; q++)
                    for (size_t i = 0; i < piece; i++)
                        wrong += y[(size_t)q * piece + i] !=
                                 (float)(q * 1000 + rank * 100 + (int)(i % 97));
            }
            static const double busfac_num[] = {2, 1, 1};
            rc = report(c, op == 0 ? "sum" : "none", bytes, t_us, wrong,
                        busfac_num[op] * (n - 1) / n);
        }
    }
    free(x);
    free(y);
    rp_comm_destroy(c);
    return rc;
}

static int run_world(const bench_cfg *b, int n) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/repro-bench-comm-XXXXXX", b->store_root);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    pid_t pids[64];
    fflush(stdout);
    for (int r = 0; r < n; r++) {
        pid_t p = fork();
        if (p < 0) {
            perror("fork");
            return 1;
        }
        if (p == 0) {
            int rc = bench_rank(b, r, n, dir);
            fflush(stdout);
            _exit(rc);
        }
        pids[r] = p;
    }
    int failed = 0;
    for (int r = 0; r < n; r++) {
        int st;
        if (waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
    }
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return failed;
}

int main(int argc, char **argv) {
    bench_cfg b = {.ranks = {2, 4}, .nworlds = 2, .min_bytes = 1024, .max_bytes = 64u << 20,
                   .factor = 4, .warmup = 1, .do_ar = 1, .do_ag = 1, .do_a2a = 1,
                   .kind = RP_COMM_GLOO};
    b.store_root = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        int used = 1;
        if (!strcmp(a, "--ranks")) {
            b.nworlds = 0;
            for (const char *p = v; *p && b.nworlds < 8;) {
                b.ranks[b.nworlds++] = atoi(p);
                p = strchr(p, ',');
                if (!p) break;
                p++;
            }
        } else if (!strcmp(a, "--min-bytes")) b.min_bytes = parse_size(v);
        else if (!strcmp(a, "--max-bytes")) b.max_bytes = parse_size(v);
        else if (!strcmp(a, "--factor")) b.factor = atoi(v);
        else if (!strcmp(a, "--iters")) b.iters = atoi(v);
        else if (!strcmp(a, "--warmup")) b.warmup = atoi(v);
        else if (!strcmp(a, "--store-dir")) b.store_root = v;
        else if (!strcmp(a, "--ops")) {
            b.do_ar = strstr(v, "allreduce") != NULL;
            b.do_ag = strstr(v, "allgather") != NULL;
            b.do_a2a = strstr(v, "alltoall") != NULL;
        } else if (!strcmp(a, "--backend")) {
            rp_error e = {0};
            if (rp_comm_kind_parse(v, &b.kind, &e) != RP_OK) {
                fprintf(stderr, "%s\n", e.msg);
                return 2;
            }
        } else {
            used = 0;
        }
        if (!used || i + 1 >= argc) {
            fprintf(stderr,
                    "usage: comm [--ranks 2,4] [--min-bytes 1K] [--max-bytes 64M] [--factor 4]\n"
                    "            [--ops allreduce,allgather,alltoall] [--iters N] [--warmup W]\n"
                    "            [--backend gloo|self] [--store-dir DIR]\n");
            return 2;
        }
        i++;
    }
    if (b.min_bytes < 4 || b.max_bytes < b.min_bytes || b.factor < 2 || b.warmup < 0 ||
        b.nworlds == 0) {
        fprintf(stderr, "comm: bad sizes, factor, warmup or ranks\n");
        return 2;
    }
    if (!rp_comm_available(b.kind)) {
        fprintf(stderr, "comm: this build has no %s backend\n", rp_comm_kind_name(b.kind));
        return 77;
    }
    mkdir(b.store_root, 0777);
    printf("# bench/comm: %s over loopback (127.0.0.1), ranks forked on this machine (%ld cores)\n",
           rp_comm_kind_name(b.kind), sysconf(_SC_NPROCESSORS_ONLN));
    printf("# time: per call, mean over iterations (%s), averaged over ranks\n",
           b.iters > 0 ? "fixed" : "~256 MiB moved per size, 2..40");
    int rc = 0;
    double t0 = now();
    for (int w = 0; w < b.nworlds; w++) {
        if (b.ranks[w] < 1 || b.ranks[w] > 64 || (b.kind == RP_COMM_SELF && b.ranks[w] != 1)) {
            fprintf(stderr, "comm: world %d not possible for %s\n", b.ranks[w],
                    rp_comm_kind_name(b.kind));
            return 2;
        }
        rc |= run_world(&b, b.ranks[w]);
    }
    printf("#\n# total %.1f s%s\n", now() - t0, rc ? ", FAILED" : "");
    return rc;
}
