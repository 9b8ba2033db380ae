/* gemm_invariant.c — rp_gemm_invariant: a GEMM whose every output element is one
 * fixed sequence of IEEE operations (contract in ops.h), for numerics: invariant.
 *
 * Why our own kernel: OpenBLAS's bits for a row depend on how many rows share the
 * call, on the row's position inside it (Haswell/Zen kernels) and on the thread
 * split, so a dp=2 shard of a batch cannot equal the serial run. Here element
 * (i, j) is
 *     acc = 0; for k = 0 .. K-1: acc = fmaf(op(A)[i][k], op(B)[k][j], acc);
 *     C[i][j] = alpha * acc                      (beta == 0: C not read)
 *             | alpha * acc + beta * C[i][j]     (otherwise)
 * fmaf is correctly rounded on every x86-64 (vfmadd on v3/v4, glibc's software
 * fmaf on the baseline), and the lanes of a vector FMA are independent fmafs, so
 * the bits are the same on every machine, for every blocking and thread split.
 *
 * How it is fast anyway (none of this can change a value):
 *  - Orientation. The product is computed either as C = op(A) op(B), vectorised
 *    over j, or as C^T = op(B)^T op(A)^T, vectorised over i (fmaf(a, b, c) ==
 *    fmaf(b, a, c): the exact product commutes). The "vector" operand Y (K, NV) is
 *    packed once per call into panels (K, NR) so the inner loop over its NR lanes
 *    is unit stride; the "broadcast" operand X (R, K) is read in place when its
 *    rows are contiguous in k, else packed per block into (kc, MR) micro-panels.
 *    The orientation with the cheaper packing wins (job_orient): for nn.Linear
 *    (x W^T) with few rows that is vectorising over the rows of x, so the weight
 *    is streamed in place and only x is transposed.
 *  - Register blocking. The micro-kernel keeps an MR x NR accumulator block in
 *    registers (8 x 32 floats = 16 zmm with AVX-512, 3 x 32 = 12 ymm otherwise)
 *    and runs its k loop as broadcast-FMA; it is compiled with RP_SIMD_CLONES so
 *    the v4/v3 clones use vfmadd231ps (the baseline clone calls fmaf).
 *  - Cache blocking. K is cut into blocks of <= KC_MAX; between blocks the
 *    accumulators are stored to a per-thread buffer and reloaded, which does not
 *    change an fp32 value, so each element's fmaf chain stays k = 0 .. K-1 in
 *    order. Tiles of MC_MAX x NC_MAX outputs are the unit of work; a tile's
 *    alpha/beta epilogue runs once, after its last K block.
 *  - Threads. Tiles are handed out by an atomic counter: which thread computes a
 *    tile only changes who runs its fixed chains.
 * Scratch (the packed Y, per-thread accumulators and X blocks) is allocated per
 * call: no global state. */
#include "ops.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastmath.h"

#define NR 32         /* accumulator lanes: 2 zmm (AVX-512) or 4 ymm (AVX2) */
#define MR_WIDE 8     /* accumulator rows with AVX-512: 16 zmm of 32 */
#define MR_NARROW 3   /* accumulator rows otherwise: 12 ymm of 16 (AVX2 has 16 registers) */
#define MR_MAX 8
/* Block sizes, tuned on a 2-core Sapphire-Rapids-class VM (48 KiB L1d, 2 MiB L2
 * per core) at the DiT-XL/2 and FLUX-dev Linear shapes; they change speed only. */
#define KC_MAX 256    /* k per block: a (KC, NR) Y micro-panel fits L1 (32 KiB) */
#define MC_MAX 144    /* broadcast rows per tile (multiple of both MRs) */
#define NC_MAX 512    /* vector lanes per tile (multiple of NR) */

/* ---- micro-kernels ---------------------------------------------------------------
 * acc (MR, NR) [+]= X (MR, kc) Y (kc, NR), one fmaf chain per element over k in
 * order: X row r at x[r][k * xs]; yp the packed micro-panel (kc, NR), unit stride;
 * load 0: the chains start from 0 (acc not read). MR and NR are compile-time
 * constants so GCC keeps the accumulators in registers. Checked with objdump (GCC
 * 12): the v4 clone of 8 x 32 runs the k loop as 2 loads, 8 vbroadcastss and 16
 * vfmadd231ps on zmm, the v3 clone of 3 x 32 as 4 loads, 3 broadcasts and 12
 * vfmadd231ps on ymm, no spills; 6 x 16 on v3, the textbook AVX2 shape, GCC
 * vectorises across rows and spills, and 12 x 32 on v4 measured slower than 8 x 32. */
#define RP_DEF_MICRO(NAME, MR)                                                            \
    RP_SIMD_CLONES                                                                        \
    static void NAME(int kc, const float *const *x, ptrdiff_t xs, const float *yp,        \
                     float *acc, int load) {                                              \
        float c[MR][NR];                                                                  \
        for (int r = 0; r < MR; r++)                                                      \
            for (int v = 0; v < NR; v++) c[r][v] = load ? acc[r * NR + v] : 0.0f;         \
        const float *xr[MR];                                                              \
        for (int r = 0; r < MR; r++) xr[r] = x[r];                                        \
        for (int k = 0; k < kc; k++) {                                                    \
            const float *y = yp + (size_t)k * NR;                                         \
            for (int r = 0; r < MR; r++) {                                                \
                float a = xr[r][k * xs];                                                  \
                for (int v = 0; v < NR; v++) c[r][v] = fmaf(a, y[v], c[r][v]);            \
            }                                                                             \
        }                                                                                 \
        for (int r = 0; r < MR; r++)                                                      \
            for (int v = 0; v < NR; v++) acc[r * NR + v] = c[r][v];                       \
    }

RP_DEF_MICRO(micro_wide, MR_WIDE)
RP_DEF_MICRO(micro_narrow, MR_NARROW)

/* The accumulator rows for this machine: only speed depends on it (both kernels
 * compute the same chains). */
static int pick_mr(void) {
#if defined(__AVX512F__)
    return MR_WIDE;
#elif defined(__GNUC__) && defined(__x86_64__) && !defined(REPRO_NO_CLONES)
    return __builtin_cpu_supports("avx512f") ? MR_WIDE : MR_NARROW;
#else
    return MR_NARROW;
#endif
}

/* ---- the job -------------------------------------------------------------------- */

/* The product in its chosen orientation: C element (r, v) = sum over k of
 * X[r][k] Y[k][v], with X[r][k] = x[r * xs_r + k * xs_k], Y[k][v] = y[k * ys_k +
 * v * ys_v] and the output at C[r * cs_r + v * cs_v]. */
typedef struct gemm_job {
    int R, NV, K;
    const float *x; ptrdiff_t xs_r, xs_k;
    const float *y; ptrdiff_t ys_k, ys_v;
    float *C; ptrdiff_t cs_r, cs_v;
    float alpha, beta;
    int mr, kc, mc, nc;      /* rows per micro-kernel, k per block, tile rows, tile lanes */
    int tiles_r, tiles_v;    /* tile grid: ceil(R / mc) x ceil(NV / nc) */
    float *yp;               /* packed Y: panel p, k at yp[(p * K + k) * NR], (K, NR) each */
    int npanels;
    int nthreads;
    atomic_int next_tile;
    pthread_barrier_t bar;
} gemm_job;

/* Y's panels [p0, p1) into job->yp; lanes past NV are zero. */
static void pack_y(const gemm_job *jb, int p0, int p1) {
    const int K = jb->K;
    for (int p = p0; p < p1; p++) {
        float *dst = jb->yp + (size_t)p * K * NR;  /* (K, NR) */
        int v0 = p * NR, nv = jb->NV - v0 < NR ? jb->NV - v0 : NR;
        if (jb->ys_v == 1) {                       /* rows of Y contiguous: copy strips */
            for (int k = 0; k < K; k++) {
                const float *s = jb->y + (size_t)k * jb->ys_k + v0;
                float *d = dst + (size_t)k * NR;
                for (int v = 0; v < nv; v++) d[v] = s[v];
                for (int v = nv; v < NR; v++) d[v] = 0.0f;
            }
        } else {                                   /* transpose, 8 k at a time per lane */
            int k = 0;
            for (; k + 8 <= K; k += 8) {
                for (int v = 0; v < nv; v++) {
                    const float *s = jb->y + (size_t)(v0 + v) * jb->ys_v + (size_t)k * jb->ys_k;
                    for (int q = 0; q < 8; q++) dst[(size_t)(k + q) * NR + v] = s[q * jb->ys_k];
                }
                for (int v = nv; v < NR; v++)
                    for (int q = 0; q < 8; q++) dst[(size_t)(k + q) * NR + v] = 0.0f;
            }
            for (; k < K; k++) {
                for (int v = 0; v < nv; v++)
                    dst[(size_t)k * NR + v] = jb->y[(size_t)(v0 + v) * jb->ys_v + (size_t)k * jb->ys_k];
                for (int v = nv; v < NR; v++) dst[(size_t)k * NR + v] = 0.0f;
            }
        }
    }
}

/* The epilogue of one tile: C (r, v) = alpha * acc [+ beta * C] for rows
 * [r0, r0 + mr_t) and lanes [v0, v0 + nv_t), acc in the tile's block layout
 * (run_tile). Walks C along its rows (v when cs_v == 1, else r): in the C^T
 * orientation a block's lanes are 32 different rows of C, and writing them block by
 * block misses a cache line per element. */
static void store_tile(const gemm_job *jb, const float *acc, int r0, int v0, int mr_t, int nv_t) {
    const int mr = jb->mr, nbr = (mr_t + mr - 1) / mr;
    const float alpha = jb->alpha, beta = jb->beta;
    if (jb->cs_v == 1) {   /* C = op(A) op(B) orientation */
        for (int r = 0; r < mr_t; r++) {
            float *c = jb->C + (size_t)(r0 + r) * jb->cs_r + v0;
            for (int bv = 0; bv * NR < nv_t; bv++) {
                const float *a = acc + (((size_t)bv * nbr + r / mr) * mr + r % mr) * NR;
                float *cb = c + bv * NR;
                int n = nv_t - bv * NR < NR ? nv_t - bv * NR : NR;
                if (beta == 0.0f) for (int v = 0; v < n; v++) cb[v] = alpha * a[v];
                else for (int v = 0; v < n; v++) cb[v] = alpha * a[v] + beta * cb[v];
            }
        }
    } else { /* C^T orientation: cs_r == 1 */
        assert(jb->cs_r == 1);
        for (int v = 0; v < nv_t; v++) {
            float *c = jb->C + (size_t)(v0 + v) * jb->cs_v + r0;
            for (int br = 0; br < nbr; br++) {
                const float *a = acc + ((size_t)(v / NR) * nbr + br) * mr * NR + v % NR;
                float *cb = c + (size_t)br * mr;
                int n = mr_t - br * mr < mr ? mr_t - br * mr : mr;
                if (beta == 0.0f) for (int r = 0; r < n; r++) cb[r] = alpha * a[r * NR];
                else for (int r = 0; r < n; r++) cb[r] = alpha * a[r * NR] + beta * cb[r];
            }
        }
    }
}

/* One tile: broadcast rows [r0, r0 + mr_t), lanes [v0, v0 + nv_t), all of K.
 * acc: (mc / mr, nc / NR) accumulator blocks of (mr, NR); xp: (mc / mr) X micro-
 * panels of (kc, mr) when X's rows are not contiguous in k. */
static void run_tile(const gemm_job *jb, int tile, float *acc, float *xp) {
    const int K = jb->K, mr = jb->mr;
    int tr = tile % jb->tiles_r, tv = tile / jb->tiles_r;
    int r0 = tr * jb->mc, v0 = tv * jb->nc;
    int mr_t = jb->R - r0 < jb->mc ? jb->R - r0 : jb->mc;
    int nv_t = jb->NV - v0 < jb->nc ? jb->NV - v0 : jb->nc;
    int nbr = (mr_t + mr - 1) / mr, nbv = (nv_t + NR - 1) / NR;
    const int direct = jb->xs_k == 1;
    for (int p0 = 0; p0 < K; p0 += jb->kc) {
        int kc = K - p0 < jb->kc ? K - p0 : jb->kc;
        if (!direct) { /* X block (mr_t, kc) -> micro-panels (kc, mr); rows past R repeat the last */
            for (int br = 0; br < nbr; br++) {
                float *d = xp + (size_t)br * kc * mr;
                for (int k = 0; k < kc; k++)
                    for (int r = 0; r < mr; r++) {
                        int row = r0 + br * mr + r;
                        if (row >= jb->R) row = jb->R - 1;
                        d[(size_t)k * mr + r] = jb->x[(size_t)row * jb->xs_r + (size_t)(p0 + k) * jb->xs_k];
                    }
            }
        }
        for (int bv = 0; bv < nbv; bv++) {
            int p = (v0 / NR) + bv;
            const float *yp = jb->yp + ((size_t)p * K + p0) * NR;   /* (kc, NR) */
            for (int br = 0; br < nbr; br++) {
                float *a = acc + ((size_t)bv * nbr + br) * mr * NR;  /* (mr, NR) */
                const float *xr[MR_MAX];
                ptrdiff_t xs;
                if (direct) {
                    for (int r = 0; r < mr; r++) {
                        int row = r0 + br * mr + r;
                        if (row >= jb->R) row = jb->R - 1;   /* padding rows: computed, not stored */
                        xr[r] = jb->x + (size_t)row * jb->xs_r + p0;
                    }
                    xs = 1;
                    /* First pass over this X block: its rows come from memory in
                     * short pieces (kc floats of rows K apart), which the hardware
                     * prefetcher barely ramps up on; fetch the next micro-rows'
                     * pieces into L2 while this kernel runs. */
                    if (bv == 0 && br + 1 < nbr)
                        for (int r = 0; r < mr; r++) {
                            int row = r0 + (br + 1) * mr + r;
                            if (row >= jb->R) break;
                            const float *q = jb->x + (size_t)row * jb->xs_r + p0;
                            for (int k = 0; k < kc; k += 16) __builtin_prefetch(q + k, 0, 2);
                        }
                } else {
                    for (int r = 0; r < mr; r++) xr[r] = xp + (size_t)br * kc * mr + r;
                    xs = mr;
                }
                if (mr == MR_WIDE) micro_wide(kc, xr, xs, yp, a, p0 > 0);
                else micro_narrow(kc, xr, xs, yp, a, p0 > 0);
            }
        }
    }
    store_tile(jb, acc, r0, v0, mr_t, nv_t);
}

/* Worker `t` of the job: packs its share of Y's panels, waits for the others,
 * then takes tiles until none are left. */
static void work(gemm_job *jb, int t) {
    int per = (jb->npanels + jb->nthreads - 1) / jb->nthreads;
    int p0 = t * per, p1 = p0 + per < jb->npanels ? p0 + per : jb->npanels;
    if (p0 < p1) pack_y(jb, p0, p1);
    if (jb->nthreads > 1) pthread_barrier_wait(&jb->bar);

    /* a tile is at most (rows, lanes), rounded up to whole micro-kernel blocks */
    size_t rows = (size_t)((jb->R < jb->mc ? jb->R : jb->mc) + jb->mr - 1) / jb->mr * jb->mr;
    size_t lanes = (size_t)((jb->NV < jb->nc ? jb->NV : jb->nc) + NR - 1) / NR * NR;
    float *acc = rp_gemm_scratch(rows * lanes);                                 /* (rows, lanes) */
    float *xp = jb->xs_k == 1 ? NULL : rp_gemm_scratch(rows * (size_t)jb->kc); /* (rows, kc) */
    int ntiles = jb->tiles_r * jb->tiles_v;
    for (;;) {
        int tile = atomic_fetch_add(&jb->next_tile, 1);
        if (tile >= ntiles) break;
        run_tile(jb, tile, acc, xp);
    }
    free(acc);
    free(xp);
}

typedef struct worker_arg { gemm_job *jb; int t; } worker_arg;

static void *worker_main(void *p) {
    worker_arg *w = p;
    work(w->jb, w->t);
    return NULL;
}

/* Picks the orientation: vectorise over j (Y = op(B), X = op(A)) or over i
 * (Y = op(A)^T, X = op(B)^T), by a rough cost in cycles of the padded FMAs (the
 * vector dimension is rounded up to NR) plus the packing: Y once (a transposing
 * pack costs ~4x a copy), X per tile column when its rows are not contiguous in k. */
static void job_orient(gemm_job *jb, int transA, int transB, int M, int N, int K,
                       const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    const int mr = jb->mr;
    double cost[2];
    for (int swap = 0; swap < 2; swap++) {
        int R = swap ? N : M, NV = swap ? M : N;
        int y_rows_contig = swap ? transA : !transB;      /* Y[k][.] contiguous in v */
        int x_rows_contig = swap ? transB : !transA;      /* X[r][.] contiguous in k */
        double fma = (double)((R + mr - 1) / mr * mr) * ((NV + NR - 1) / NR * NR) * K / 32.0;
        double packy = (double)K * ((NV + NR - 1) / NR * NR) * (y_rows_contig ? 0.25 : 1.0);
        double packx = x_rows_contig ? 0.0 : (double)R * K * ((NV + NC_MAX - 1) / NC_MAX) * 0.25;
        cost[swap] = fma + packy + packx;
    }
    int swap = cost[1] < cost[0];
    jb->K = K;
    if (!swap) { /* C (i, j): r = i, v = j */
        jb->R = M; jb->NV = N;
        jb->x = A; jb->xs_r = transA ? 1 : lda; jb->xs_k = transA ? lda : 1;
        jb->y = B; jb->ys_k = transB ? 1 : ldb; jb->ys_v = transB ? ldb : 1;
        jb->cs_r = ldc; jb->cs_v = 1;
    } else {     /* C^T (j, i): r = j, v = i */
        jb->R = N; jb->NV = M;
        jb->x = B; jb->xs_r = transB ? ldb : 1; jb->xs_k = transB ? 1 : ldb;
        jb->y = A; jb->ys_k = transA ? lda : 1; jb->ys_v = transA ? 1 : lda;
        jb->cs_r = 1; jb->cs_v = ldc;
    }
    jb->C = C;
}

void rp_gemm_invariant(int transA, int transB, int M, int N, int K, float alpha,
                       const float *A, int lda, const float *B, int ldb, float beta,
                       float *C, int ldc, int threads) {
    assert(M >= 0 && N >= 0 && K >= 0 && C);
    assert(ldc >= N);
    assert(transA ? lda >= M : lda >= K);
    assert(transB ? ldb >= K : ldb >= N);
    if (M == 0 || N == 0) return;
    if (K == 0) { /* empty chain: acc = 0 */
        for (int i = 0; i < M; i++) {
            float *c = C + (size_t)i * ldc;
            for (int j = 0; j < N; j++) c[j] = beta == 0.0f ? alpha * 0.0f : alpha * 0.0f + beta * c[j];
        }
        return;
    }
    assert(A && B);

    gemm_job jb;
    memset(&jb, 0, sizeof jb);
    jb.mr = pick_mr();
    job_orient(&jb, transA, transB, M, N, K, A, lda, B, ldb, C, ldc);
    jb.alpha = alpha;
    jb.beta = beta;
    int nkb = (K + KC_MAX - 1) / KC_MAX;               /* k blocks of equal size */
    jb.kc = (K + nkb - 1) / nkb;
    jb.mc = MC_MAX;
    jb.nc = NC_MAX;
    jb.tiles_r = (jb.R + jb.mc - 1) / jb.mc;
    jb.tiles_v = (jb.NV + jb.nc - 1) / jb.nc;
    jb.npanels = (jb.NV + NR - 1) / NR;
    jb.yp = rp_gemm_scratch((size_t)jb.npanels * K * NR);  /* npanels x (K, NR) */
    atomic_init(&jb.next_tile, 0);

    /* Threads only where there is work to share (a spawn costs ~tens of us). */
    int nt = threads < 1 ? 1 : threads;
    int ntiles = jb.tiles_r * jb.tiles_v;
    if (nt > ntiles) nt = ntiles;
    if ((double)M * N * K < (double)(1 << 21)) nt = 1;
    jb.nthreads = nt;
    if (nt == 1) {
        work(&jb, 0);
    } else {
        pthread_t *tid = malloc(sizeof(pthread_t) * (size_t)nt);
        worker_arg *args = malloc(sizeof(worker_arg) * (size_t)nt);
        if (!tid || !args) {
            fprintf(stderr, "repro: out of memory starting %d GEMM threads\n", nt);
            abort();
        }
        pthread_barrier_init(&jb.bar, NULL, (unsigned)nt);
        for (int t = 1; t < nt; t++) {
            args[t] = (worker_arg){&jb, t};
            if (pthread_create(&tid[t], NULL, worker_main, &args[t]) != 0) {
                /* the barrier counts nt parties, so the job cannot go on with fewer;
                 * a void op has no error path (ops.h): fatal, as running out of memory */
                fprintf(stderr, "repro: cannot start GEMM thread %d of %d\n", t + 1, nt);
                abort();
            }
        }
        work(&jb, 0);
        for (int t = 1; t < nt; t++) pthread_join(tid[t], NULL);
        pthread_barrier_destroy(&jb.bar);
        free(tid);
        free(args);
    }
    free(jb.yp);
}
