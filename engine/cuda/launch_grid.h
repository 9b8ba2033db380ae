/* launch_grid.h — the launch shapes of engine/cuda's kernels, as pure functions of the
 * problem size (C and CUDA; no CUDA header, so a host-only unit test includes it:
 * tests/unit/test_cuda_grid.c).
 *
 * CUDA's limits: grid.x <= 2^31 - 1 blocks, grid.y and grid.z <= 65535, at most 1024
 * threads per block. A grid computed from a tensor size must stay inside them for every
 * size the op accepts (int rows and columns), or the launch fails with "invalid
 * configuration" — as the row grids did at FLUX-dev 1024 px, which had their column
 * tiles in grid.y (at most 65535 * 256 columns; one GELU row there is 56623104).
 *
 * Four shapes cover every launch:
 *   rows   (rows, cols) kernels: grid.x tiles the columns (adjacent threads touch
 *          adjacent floats of a row), grid.y the rows; both capped and walked with the
 *          stride loops RP_GRID_COLS_FOR / RP_GRID_ROWS_FOR, so any int sizes fit;
 *   tiles  32 x 32 tiles (the transpose): grid.x the column tiles, grid.y the row
 *          tiles (capped, strided);
 *   flat   a 1D grid-stride loop over n elements (size_t), blocks capped;
 *   blocks one block per item (a norm row, an attention tile) in grid.x: the item
 *          count must itself fit, which the function checks.
 * Each function returns 0 and fills *g, or -1 (g untouched) when the size has no legal
 * launch (a size <= 0, or beyond what the kernel's int indices take): the caller turns
 * -1 into an RP_ERR_INVALID / RP_ERR_UNSUPPORTED naming the op. */
#ifndef REPRO_CUDA_LAUNCH_GRID_H
#define REPRO_CUDA_LAUNCH_GRID_H

#include <stddef.h>

#define RP_GRID_X_MAX 2147483647LL /* grid.x */
#define RP_GRID_YZ_MAX 65535LL     /* grid.y, grid.z */
#define RP_BLOCK_MAX 1024LL        /* threads per block */
#define RP_GRID_INT_MAX 2147483647LL
/* A column stride (grid.x * threads) is at most 2^30, so an int column index plus one
 * stride never passes 2^31 + 2^30 in the unsigned block arithmetic, and the stride fits
 * an int. */
#define RP_GRID_COL_SPAN (1LL << 30)

typedef struct rp_grid {
    unsigned x, y, z; /* blocks */
    unsigned tx, ty;  /* threads per block: tx * ty */
} rp_grid;

/* 1 when every dimension is within CUDA's limits (and >= 1), else 0. */
static inline int rp_grid_legal(const rp_grid *g) {
    const long long th = (long long)g->tx * g->ty;
    return g->x >= 1 && (long long)g->x <= RP_GRID_X_MAX && g->y >= 1 && g->y <= RP_GRID_YZ_MAX && g->z >= 1 &&
           g->z <= RP_GRID_YZ_MAX && th >= 1 && th <= RP_BLOCK_MAX;
}

/* Threads along a row: the row length rounded up to a warp, at most 256. */
static inline unsigned rp_grid_row_threads(long long cols) {
    return cols <= 32 ? 32u : cols <= 64 ? 64u : cols <= 128 ? 128u : 256u;
}

/* (rows, cols), each in 1..INT_MAX: x = column tiles (at most RP_GRID_COL_SPAN / tx,
 * strided past that), y = rows (at most 65535, strided). */
static inline int rp_grid_rows(long long rows, long long cols, rp_grid *g) {
    if (rows < 1 || cols < 1 || rows > RP_GRID_INT_MAX || cols > RP_GRID_INT_MAX) return -1;
    const unsigned th = rp_grid_row_threads(cols);
    const long long tiles = (cols + th - 1) / th, cap = RP_GRID_COL_SPAN / th;
    g->x = (unsigned)(tiles < cap ? tiles : cap);
    g->y = (unsigned)(rows < RP_GRID_YZ_MAX ? rows : RP_GRID_YZ_MAX);
    g->z = 1;
    g->tx = th;
    g->ty = 1;
    return 0;
}

/* The transpose's tiles of `tile` x `tile` (block tile x (tile / 4)) over (rows, cols),
 * each in 1..INT_MAX: x = column tiles (at most 2^26 for 32), y = row tiles (at most
 * 65535, strided). */
static inline int rp_grid_tiles(long long rows, long long cols, int tile, rp_grid *g) {
    if (rows < 1 || cols < 1 || rows > RP_GRID_INT_MAX || cols > RP_GRID_INT_MAX || tile < 4 || tile % 4 ||
        (long long)tile * (tile / 4) > RP_BLOCK_MAX)
        return -1;
    const long long tx = (cols + tile - 1) / tile, ty = (rows + tile - 1) / tile;
    g->x = (unsigned)tx;
    g->y = (unsigned)(ty < RP_GRID_YZ_MAX ? ty : RP_GRID_YZ_MAX);
    g->z = 1;
    g->tx = (unsigned)tile;
    g->ty = (unsigned)(tile / 4);
    return 0;
}

/* n >= 1 elements, `threads` per block (1..1024), at most `max_blocks` blocks (1..2^31-1;
 * a grid-stride loop covers the rest). */
static inline int rp_grid_flat(size_t n, unsigned threads, long long max_blocks, rp_grid *g) {
    if (n < 1 || threads < 1 || threads > RP_BLOCK_MAX || max_blocks < 1 || max_blocks > RP_GRID_X_MAX) return -1;
    const size_t b = (n - 1) / threads + 1;
    g->x = (unsigned)(b < (size_t)max_blocks ? b : (size_t)max_blocks);
    g->y = g->z = 1;
    g->tx = threads;
    g->ty = 1;
    return 0;
}

/* One block of `threads` per item, n items in grid.x: -1 when n is not in 1..2^31-1. */
static inline int rp_grid_blocks(long long n, unsigned threads, rp_grid *g) {
    if (n < 1 || n > RP_GRID_X_MAX || threads < 1 || threads > RP_BLOCK_MAX) return -1;
    g->x = (unsigned)n;
    g->y = g->z = 1;
    g->tx = threads;
    g->ty = 1;
    return 0;
}

/* i = first, first + step, ... while i < n (int n >= 0, 1 <= step <= INT_MAX,
 * 0 <= first): the increment is taken only when it stays below n, so i never passes
 * INT_MAX whatever n. */
#define RP_GRID_STRIDE_FOR(i, first, n, step) \
    for (int i = (int)(first); i < (n); i = (n) - i > (int)(step) ? i + (int)(step) : (n))

/* The column loop of a rows-grid kernel: block bx of gx, thread tx of bdx. */
#define RP_GRID_COLS_FOR(c, cols, bx, tx, gx, bdx) RP_GRID_STRIDE_FOR(c, (bx) * (bdx) + (tx), cols, (gx) * (bdx))
/* The row loop of a rows-grid kernel: block row by of gy. */
#define RP_GRID_ROWS_FOR(r, rows, by, gy) RP_GRID_STRIDE_FOR(r, by, rows, gy)

#endif
