/* test_cuda_grid.c — engine/cuda/launch_grid.h on the host (no GPU, no CUDA headers):
 * every launch shape the CUDA ops compute is within CUDA's limits at the FLUX-dev
 * 1024 px, DiT-XL/2-512 and 1024 px VAE-decoder sizes, and the kernels' stride loops
 * (the same RP_GRID_*_FOR macros the .cu files expand) visit every element exactly once:
 * enumerated block by block, thread by thread for small shapes (with the production grid
 * and with grids shrunk so the strides wrap), by the loop's arithmetic for the big ones.
 * The two rows the issue saw fail (16777216 and 56623104 columns) are among the shapes. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/cuda/launch_grid.h"

/* The FLUX-dev transformer at 1024 px: 4096 image + 512 text tokens, hidden 3072, 24 heads
 * of 128, MLP 12288, 16 latent channels at 128 x 128; batch 1 or 2. */
enum { FX_T = 4608, FX_C = 3072, FX_H = 24, FX_D = 128, FX_M = 12288, FX_LAT = 128 };
/* DiT-XL/2 at 512 px: 1024 tokens (64 x 64 latent, patch 2), hidden 1152, 16 heads of 72,
 * MLP 4608; batch up to 4 (CFG doubles 2). */
enum { DT_T = 1024, DT_C = 1152, DT_H = 16, DT_D = 72, DT_M = 4608, DT_LAT = 64 };

typedef struct {
    const char *what;
    long long rows, cols;
} shape2;

/* (rows, cols) of every rows-grid launch at those sizes, as the ops compute them
 * (engine/cuda/ops_*.cu; device.c's act_flat sends a contiguous tensor as rows of up to
 * 2^30 columns), plus the extremes the ops accept. */
static const shape2 kRowShapes[] = {
    {"issue: act_flat DiT-XL/2 row (rp_cuda_activation_2d)", 1, 16777216},
    {"issue: act_flat FLUX-dev GELU, batch 1", 1, (long long)FX_T * FX_M},
    {"act_flat FLUX-dev GELU, batch 2", 1, 2LL * FX_T * FX_M},
    {"act_flat VAE silu 512 ch at 1024^2 (2^29)", 1, 512LL * 1024 * 1024},
    {"act_flat largest row (2^30)", 1, 1LL << 30},
    {"FLUX act_2d MLP (B*T, M)", 2LL * FX_T, FX_M},
    {"FLUX fill_rows single-block linear1 (B*T, 3C + M)", 2LL * FX_T, 3LL * FX_C + FX_M},
    {"FLUX fill_rows adaLN (B, 6C)", 2, 6LL * FX_C},
    {"FLUX modulate / gated_add (B*T, C)", 2LL * FX_T, FX_C},
    {"FLUX rope (B*H*T, D/2)", 2LL * FX_H * FX_T, FX_D / 2},
    {"FLUX split_qkv (B*T*3*H, D)", 2LL * FX_T * 3 * FX_H, FX_D},
    {"FLUX to_heads / from_heads (B*T*H, D)", 2LL * FX_T * FX_H, FX_D},
    {"FLUX flux_unpack (B*C*H, W)", 2LL * 16 * FX_LAT, FX_LAT},
    {"FLUX timestep embedding (B, 128)", 2, 128},
    {"DiT act_2d (B*T, M)", 4LL * DT_T, DT_M},
    {"DiT modulate (B*T, C)", 4LL * DT_T, DT_C},
    {"DiT split_qkv (B*T*3*H, D)", 4LL * DT_T * 3 * DT_H, DT_D},
    {"DiT patchify (B*C*H, W)", 4LL * 4 * DT_LAT, DT_LAT},
    {"DiT unpatchify (B*2C*H, W)", 4LL * 8 * DT_LAT, DT_LAT},
    {"VAE conv bias_fill (N*OC, HWo) 128 ch at 1024^2", 128, 1LL << 20},
    {"VAE im2col (IC*9, HWo) 512 ch at 512^2", 512LL * 9, 1LL << 18},
    {"VAE im2col (IC*9, HWo) 256 ch at 1024^2", 256LL * 9, 1LL << 20},
    {"VAE upsample2x 512 ch 512 -> 1024 (N*C*2H, 2W)", 512LL * 1024, 1024},
    {"int extremes (INT_MAX, INT_MAX)", RP_GRID_INT_MAX, RP_GRID_INT_MAX},
    {"int extremes (INT_MAX, 1)", RP_GRID_INT_MAX, 1},
    {"row cap + 1", RP_GRID_YZ_MAX + 1, 1},
};

/* Visits of a stride loop, RP_GRID_STRIDE_FOR(i, first, n, step): checks the indices run
 * first, first + step, ... ascending, all < n, and returns their number. */
static long long stride_visits(long long first, long long n, long long step) {
    long long cnt = 0, expect = first;
    RP_GRID_STRIDE_FOR(i, first, n, step) {
        ck_assert_int_eq(i, expect);
        ck_assert_int_lt(i, n);
        expect += step;
        cnt++;
        ck_assert_int_le(cnt, n); /* terminates */
    }
    return cnt;
}

/* One dimension of the loop covers [0, n) exactly once with S = threads launched along
 * it: thread t takes t, t + S, ..., so element e belongs to thread e mod S alone, and
 * thread t visits floor((n - 1 - t) / S) + 1 elements when t < n. Checked by running the
 * loop for the threads where the count changes (first, last, and either side of n mod S)
 * and summing the two counts over their classes. */
static void check_dim_arithmetic(const char *what, long long n, long long S) {
    ck_assert_msg(S >= 1 && S <= RP_GRID_COL_SPAN, "%s: stride %lld outside 1..2^30", what, S);
    const long long q = n / S, rem = n % S;
    const long long probes[] = {0, rem > 0 ? rem - 1 : 0, rem < S ? rem : S - 1, S - 1};
    for (int i = 0; i < 4; i++) {
        const long long t = probes[i];
        const long long want = t < n ? (n - 1 - t) / S + 1 : 0;
        ck_assert_msg(want == q + (t < rem), "%s: thread %lld of %lld", what, t, S);
        ck_assert_msg(stride_visits(t, n, S) == want, "%s: thread %lld visits", what, t);
    }
    ck_assert_msg(rem * (q + 1) + (S - rem) * q == n, "%s: %lld elements not covered once by %lld threads", what,
                  n, S);
}

START_TEST(row_grids_legal_at_model_shapes) {
    for (size_t i = 0; i < sizeof kRowShapes / sizeof kRowShapes[0]; i++) {
        const shape2 *s = &kRowShapes[i];
        rp_grid g;
        ck_assert_msg(rp_grid_rows(s->rows, s->cols, &g) == 0, "%s: no grid", s->what);
        ck_assert_msg(rp_grid_legal(&g), "%s: grid (%u, %u, %u) x %u threads is not a legal launch", s->what, g.x,
                      g.y, g.z, g.tx * g.ty);
        ck_assert_uint_eq(g.ty, 1);
        ck_assert_uint_eq(g.z, 1);
        /* columns: grid.x * tx threads; rows: grid.y blocks */
        check_dim_arithmetic(s->what, s->cols, (long long)g.x * g.tx);
        check_dim_arithmetic(s->what, s->rows, g.y);
        /* no thread idles when one pass suffices: the launch is not larger than the shape */
        ck_assert_msg((long long)(g.x - 1) * g.tx < s->cols && (long long)g.y <= s->rows, "%s: idle blocks",
                      s->what);
    }
}
END_TEST

/* Enumerates every block and thread of grid g over (rows, cols) with the kernels' loops;
 * every element must be visited exactly once. */
static void enumerate_rows_grid(const rp_grid *g, int rows, int cols) {
    unsigned char *hit = calloc((size_t)rows * cols, 1);
    ck_assert_ptr_nonnull(hit);
    for (unsigned by = 0; by < g->y; by++)
        for (unsigned bx = 0; bx < g->x; bx++)
            for (unsigned tx = 0; tx < g->tx; tx++) RP_GRID_COLS_FOR(c, cols, bx, tx, g->x, g->tx) {
                    RP_GRID_ROWS_FOR(r, rows, by, g->y) {
                        ck_assert_int_ge(r, 0);
                        ck_assert_int_ge(c, 0);
                        ck_assert_msg(hit[(size_t)r * cols + c] == 0, "(%d, %d) of %d x %d visited twice", r, c,
                                      rows, cols);
                        hit[(size_t)r * cols + c] = 1;
                    }
                }
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        ck_assert_msg(hit[i] == 1, "element %zu of %d x %d never visited (grid %u x %u, %u threads)", i, rows, cols,
                      g->x, g->y, g->tx);
    free(hit);
}

START_TEST(rows_loops_cover_once_small) {
    static const int sizes[][2] = {{1, 1},   {1, 31},   {1, 33},  {3, 64},     {5, 65},   {2, 257},
                                   {7, 300}, {64, 72},  {33, 129}, {1, 5000}, {65540, 3}, {2, 1}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const int rows = sizes[i][0], cols = sizes[i][1];
        rp_grid g;
        ck_assert_int_eq(rp_grid_rows(rows, cols, &g), 0);
        ck_assert(rp_grid_legal(&g));
        enumerate_rows_grid(&g, rows, cols); /* the production grid */
        /* shrunken grids: the column and row strides wrap, as past the caps */
        static const unsigned gx[] = {1, 2, 3}, gy[] = {1, 2, 5};
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                if (rows > 1000 && gy[b] < 5) continue; /* keep the enumeration short */
                rp_grid s = g;
                if (s.x > gx[a]) s.x = gx[a];
                if (s.y > gy[b]) s.y = gy[b];
                enumerate_rows_grid(&s, rows, cols);
            }
    }
}
END_TEST

/* The loop never steps past INT_MAX: the last index before n = INT_MAX is reached and the
 * loop stops there (a plain i += step would overflow). */
START_TEST(stride_loop_at_int_max) {
    const long long n = RP_GRID_INT_MAX, S = RP_GRID_COL_SPAN;
    ck_assert_int_eq(stride_visits(n - 1, n, S), 1);
    ck_assert_int_eq(stride_visits(S - 1, n, S), 1); /* the next, 2^31 - 1, is n itself */
    ck_assert_int_eq(stride_visits(1, n, S), 2);
    ck_assert_int_eq(stride_visits(0, n, S), 2);
    ck_assert_int_eq(stride_visits(n - 1, n, RP_GRID_YZ_MAX), 1);
    ck_assert_int_eq(stride_visits(5, 5, 1), 0);
}
END_TEST

START_TEST(rows_grid_rejects_out_of_range) {
    rp_grid g = {7, 7, 7, 7, 7};
    ck_assert_int_eq(rp_grid_rows(0, 5, &g), -1);
    ck_assert_int_eq(rp_grid_rows(5, 0, &g), -1);
    ck_assert_int_eq(rp_grid_rows(RP_GRID_INT_MAX + 1, 5, &g), -1);
    ck_assert_int_eq(rp_grid_rows(5, RP_GRID_INT_MAX + 1, &g), -1);
    ck_assert_uint_eq(g.x, 7); /* untouched */
    ck_assert_int_eq(rp_grid_tiles(0, 5, 32, &g), -1);
    ck_assert_int_eq(rp_grid_tiles(5, 5, 128, &g), -1); /* 128 x 32 threads > 1024 */
    ck_assert_int_eq(rp_grid_flat(0, 256, 8192, &g), -1);
    ck_assert_int_eq(rp_grid_flat(10, 2048, 8192, &g), -1);
    ck_assert_int_eq(rp_grid_blocks(RP_GRID_X_MAX + 1, 256, &g), -1);
    ck_assert_int_eq(rp_grid_blocks(0, 256, &g), -1);
    /* a legal grid has no zero dimension and no dimension past its limit */
    rp_grid z = {1, 1, 1, 256, 1};
    ck_assert(rp_grid_legal(&z));
    z.y = RP_GRID_YZ_MAX + 1;
    ck_assert(!rp_grid_legal(&z));
    z.y = 1;
    z.tx = 2048;
    ck_assert(!rp_grid_legal(&z));
    z.tx = 256;
    z.x = 0;
    ck_assert(!rp_grid_legal(&z));
}
END_TEST

/* The transpose's tiles: legal at the model shapes; row tiles strided past 65535, each
 * visited once (enumerated), column tiles one block each. */
START_TEST(tile_grids) {
    static const long long shapes[][2] = {{2LL * FX_T, FX_C},        {FX_C, 2LL * FX_T}, {512, 128LL * 128},
                                          {128LL * 128, 512},        {RP_GRID_INT_MAX, 1}, {1, RP_GRID_INT_MAX},
                                          {RP_GRID_INT_MAX, RP_GRID_INT_MAX}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const long long rows = shapes[i][0], cols = shapes[i][1];
        rp_grid g;
        ck_assert_int_eq(rp_grid_tiles(rows, cols, 32, &g), 0);
        ck_assert(rp_grid_legal(&g));
        ck_assert_uint_eq(g.tx * g.ty, 256);
        ck_assert((long long)g.x * 32 >= cols && (long long)(g.x - 1) * 32 < cols);
        /* row tiles r0 = by*32, by*32 + gy*32, ...: every multiple of 32 below rows once */
        const long long ntiles = (rows + 31) / 32;
        check_dim_arithmetic("tile rows", ntiles, g.y);
        ck_assert_int_eq(stride_visits((long long)(g.y - 1) * 32, rows, (long long)g.y * 32),
                         (ntiles - g.y) / g.y + 1);
    }
    /* enumerated: 70000 row tiles on 65535 grid rows */
    const long long rows = 70000LL * 32;
    rp_grid g;
    ck_assert_int_eq(rp_grid_tiles(rows, 1, 32, &g), 0);
    ck_assert_uint_eq(g.y, RP_GRID_YZ_MAX);
    unsigned char *hit = calloc(70000, 1);
    ck_assert_ptr_nonnull(hit);
    for (unsigned by = 0; by < g.y; by++) RP_GRID_STRIDE_FOR(r0, by * 32, rows, g.y * 32) {
            ck_assert_int_eq(r0 % 32, 0);
            ck_assert_int_eq(hit[r0 / 32], 0);
            hit[r0 / 32] = 1;
        }
    for (int i = 0; i < 70000; i++) ck_assert_int_eq(hit[i], 1);
    free(hit);
}
END_TEST

/* Flat grid-stride launches (samplers, adds, conversions): legal at the largest tensors
 * (2^31 floats and the FLUX GEMM operands), capped, and at least one block per element
 * group below the cap. */
START_TEST(flat_and_block_grids) {
    static const size_t ns[] = {1, 255, 256, 257, (size_t)2 * FX_T * (3 * FX_C + FX_M), (size_t)1 << 29,
                                (size_t)1 << 31, (size_t)1 << 34};
    static const long long caps[] = {8192, 1 << 20, 65536, RP_GRID_X_MAX};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
            rp_grid g;
            ck_assert_int_eq(rp_grid_flat(ns[i], 256, caps[c], &g), 0);
            ck_assert(rp_grid_legal(&g));
            ck_assert((long long)g.x <= caps[c]);
            const size_t need = (ns[i] + 255) / 256;
            ck_assert_msg(g.x == (need < (size_t)caps[c] ? need : (size_t)caps[c]), "n = %zu cap %lld: %u blocks",
                          ns[i], caps[c], g.x);
        }
    /* one block per item: norm rows (FLUX q/k RMSNorm B*H*T), attention score rows, the
     * flash tiles (B*H*ceil(Tq/64)), the VAE's 32 groups of 2^24 elements */
    static const long long items[] = {2LL * FX_H * FX_T, 2LL * FX_H * ((FX_T + 63) / 64), 32, 128LL * 128,
                                      RP_GRID_X_MAX};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        rp_grid g;
        ck_assert_int_eq(rp_grid_blocks(items[i], 1024, &g), 0);
        ck_assert(rp_grid_legal(&g));
        ck_assert_int_eq((long long)g.x, items[i]);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("cuda_grid");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, row_grids_legal_at_model_shapes);
    tcase_add_test(tc, rows_loops_cover_once_small);
    tcase_add_test(tc, stride_loop_at_int_max);
    tcase_add_test(tc, rows_grid_rejects_out_of_range);
    tcase_add_test(tc, tile_grids);
    tcase_add_test(tc, flat_and_block_grids);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
