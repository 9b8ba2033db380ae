/* test_own_check.c — the own checks of the default numerics: the attention variants'
 * (engine/parallel/attn_own.c) and rp_gemm's (engine/gemm_check.c). Each recomputation
 * gives a correct kernel's bits exactly — every attention variant and tile shape, masks
 * (all-masked rows and tiles included), every GEMM shape, transpose, alpha / beta and
 * leading dimension; fp32 and bf16, reduce_split, 3 GEMM threads — and tells a result that
 * is anything else, down to one ulp of one value, a softmax scale one ulp off (the fault
 * attn-scale-ulp-rank) or a GEMM alpha 2^-20 off. Exact equality is the contract (the same
 * IEEE operations in the same order), so there is no tolerance to choose. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention/attention.h"
#include "engine/ctx.h"
#include "engine/ops.h"
#include "engine/parallel/parallel.h"
#include "tests/common/test_rng.h"

/* One rank with the own check on: world 1, nothing else set. */
static rp_parallel one_rank(void) {
    rp_parallel p;
    memset(&p, 0, sizeof p);
    p.world = 1;
    p.check_own = 1;
    return p;
}

/* q (B, H, Tq, D), k, v (B, H, Tk, D) in [-2, 2) (scores of a few units: the exps span
 * a wide range, so every rescale path runs), and a key mask (B, Tk) with batch 1's keys
 * all masked (rows of zeros) and batch 0's every third key masked. */
typedef struct inputs {
    float *q, *k, *v;
    uint8_t *mask;
} inputs;

static inputs make_inputs(int B, int H, int Tq, int Tk, int D, uint64_t seed) {
    inputs in = {malloc(sizeof(float) * B * H * Tq * D), malloc(sizeof(float) * B * H * Tk * D),
                 malloc(sizeof(float) * B * H * Tk * D), malloc((size_t)B * Tk)};
    for (int i = 0; i < B * H * Tq * D; i++) in.q[i] = 2.0f * rng_unif(&seed);
    for (int i = 0; i < B * H * Tk * D; i++) in.k[i] = 2.0f * rng_unif(&seed), in.v[i] = rng_unif(&seed);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < Tk; j++) in.mask[b * Tk + j] = b == 1 ? 0 : j % 3 != 1;
    return in;
}

static void free_inputs(inputs *in) {
    free(in->q); free(in->k); free(in->v); free(in->mask);
}

/* Runs ctx's attention, then its own check (scale_kernel: the scale the kernel gets;
 * scale: the one the check is given; flip >= 0: that output value moved one ulp up before
 * the check), and returns the report of the pair. */
static rp_par_replica_report run_pair_at(rp_ctx *ctx, const inputs *in, int masked, int B, int H, int Tq, int Tk,
                                         int D, float scale_kernel, float scale, long flip, int eval) {
    rp_parallel p = one_rank();
    p.fwd_eval = eval;
    p.own_at[1] = 9, p.own_at[2] = 5; /* whole at evaluations 0, 5 and 9; a slice elsewhere */
    ctx->par = &p;
    rp_error err;
    float *out = malloc(sizeof(float) * B * H * Tq * D + 1);
    const uint8_t *m = masked ? in->mask : NULL;
    ck_assert_int_eq(rp_attention(ctx, out, in->q, in->k, in->v, m, B, H, Tq, Tk, D, scale_kernel, &err), RP_OK);
    if (flip >= 0) out[flip] = nextafterf(out[flip], INFINITY);
    ck_assert_int_eq(rp_par_attn_own_check(ctx, out, in->q, in->k, in->v, m, B, H, Tq, Tk, D, scale, &err), RP_OK);
    rp_par_own_flush(ctx, "blocks.0.attn");
    rp_par_replica_report rep;
    ck_assert_int_eq(rp_par_replica_collect(&p, "test/cpu", &rep, &err), RP_OK);
    rp_par_replica_free(&p);
    ctx->par = NULL;
    free(out);
    return rep;
}

/* run_pair_at at the first evaluation, where the check runs whole. */
static rp_par_replica_report run_pair(rp_ctx *ctx, const inputs *in, int masked, int B, int H, int Tq, int Tk, int D,
                                      float scale_kernel, float scale, long flip) {
    return run_pair_at(ctx, in, masked, B, H, Tq, Tk, D, scale_kernel, scale, flip, 0);
}

typedef struct variant {
    rp_attn_kind kind;
    int qc, kc;
    const char *name;
} variant;

static const variant VARIANTS[] = {
    {RP_ATTN_MATH, 0, 0, "math attention"},
    {RP_ATTN_SPLIT, 0, 0, "split attention"},      /* one slice (default 1024 rows) */
    {RP_ATTN_SPLIT, 5, 0, "split attention"},      /* slices of 5, the last shorter */
    {RP_ATTN_SUBQUAD, 0, 0, "subquad attention"},  /* kv sqrt(Tk) */
    {RP_ATTN_SUBQUAD, 8, 7, "subquad attention"},
    {RP_ATTN_SUBQUAD, 6, 1000, "subquad attention"}, /* one key chunk: the split path */
    {RP_ATTN_FLASH, 0, 0, "flash attention"},      /* one tile each way */
    {RP_ATTN_FLASH, 13, 9, "flash attention"},
    {RP_ATTN_FLASH, 1, 1, "flash attention"},      /* a rescale at every key */
};
#define NV ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

/* The default context running variant v's kernel and tiles. */
static rp_ctx variant_ctx(const variant *v) {
    rp_ctx ctx = rp_ctx_default();
    ctx.attn.kind = v->kind;
    ctx.attn.q_chunk = v->qc;
    ctx.attn.kv_chunk = v->kc;
    return ctx;
}

/* Every variant, shape and setting: the recomputation equals the kernel's bits. */
START_TEST(test_own_equals_kernel) {
    static const int SHAPES[][5] = {{2, 3, 37, 41, 16}, {2, 2, 20, 11, 8}, {3, 1, 1, 64, 24}, {2, 2, 9, 1, 4}};
    for (int s = 0; s < 4; s++) {
        const int B = SHAPES[s][0], H = SHAPES[s][1], Tq = SHAPES[s][2], Tk = SHAPES[s][3], D = SHAPES[s][4];
        inputs in = make_inputs(B, H, Tq, Tk, D, 0x5eed0000u + (uint64_t)s);
        const float scale = 1.0f / sqrtf((float)D);
        for (int v = 0; v < NV; v++)
            for (int setting = 0; setting < 4; setting++)   /* fp32, bf16, reduce_split, 3 threads */
                for (int masked = 0; masked < 2; masked++) {
                    rp_ctx ctx = variant_ctx(&VARIANTS[v]);
                    if (setting == 1) ctx.precision = RP_PREC_BF16;
                    if (setting == 2) ctx.reduce_split = 1;
                    if (setting == 3) ctx.threads = 3;
                    rp_ctx_apply(&ctx);
                    const rp_par_replica_report rep = run_pair(&ctx, &in, masked, B, H, Tq, Tk, D, scale, scale, -1);
                    if (rep.checked != 1 || rep.first.eval != -1 || rep.unchecked[0])
                        ck_abort_msg("shape %d, %s q %d kv %d, setting %d, masked %d: checked %ld, first eval %d (%s)",
                                     s, VARIANTS[v].name, VARIANTS[v].qc, VARIANTS[v].kc, setting, masked, rep.checked,
                                     rep.first.eval, rep.unchecked);
                }
        free_inputs(&in);
    }
    rp_ctx def = rp_ctx_default();
    rp_ctx_apply(&def);
}
END_TEST

/* Any other result is a difference, named by the layer and the variant: one ulp of one
 * output value, or the whole call with its scale one ulp low (attn-scale-ulp-rank). */
START_TEST(test_own_tells_a_difference) {
    const int B = 2, H = 2, Tq = 19, Tk = 23, D = 8;
    inputs in = make_inputs(B, H, Tq, Tk, D, 0xd1ffu);
    const float scale = 1.0f / sqrtf((float)D);
    for (int v = 0; v < NV; v++)
        for (int bf16 = 0; bf16 < 2; bf16++) {
            rp_ctx ctx = variant_ctx(&VARIANTS[v]);
            if (bf16) ctx.precision = RP_PREC_BF16;
            rp_par_replica_report rep = run_pair(&ctx, &in, 0, B, H, Tq, Tk, D, scale, scale, B * H * Tq * D - 5);
            ck_assert_int_eq(rep.first.eval, 0);
            ck_assert_int_eq(rep.first.group, RP_PAR_RG_OWN);
            ck_assert_str_eq(rep.first.name, "blocks.0.attn");
            ck_assert_str_eq(rep.first.other, VARIANTS[v].name);
            /* the scale one ulp low: seen exactly when it changed the kernel's output (in bf16
             * the rounded GEMM inputs may absorb it; in fp32 it must show) */
            const size_t n = (size_t)B * H * Tq * D;
            float *good = malloc(sizeof(float) * n), *bad = malloc(sizeof(float) * n);
            rp_error err;
            ck_assert_int_eq(rp_attention(&ctx, good, in.q, in.k, in.v, NULL, B, H, Tq, Tk, D, scale, &err), RP_OK);
            ck_assert_int_eq(rp_attention(&ctx, bad, in.q, in.k, in.v, NULL, B, H, Tq, Tk, D, nextafterf(scale, 0.0f),
                                          &err), RP_OK);
            const int changed = memcmp(good, bad, sizeof(float) * n) != 0;
            if (!bf16) ck_assert_msg(changed, "%s: a scale one ulp low changed nothing", VARIANTS[v].name);
            rep = run_pair(&ctx, &in, 0, B, H, Tq, Tk, D, nextafterf(scale, 0.0f), scale, -1);
            if ((rep.first.eval == 0) != changed)
                ck_abort_msg("%s bf16 %d: output changed %d, own check differs %d", VARIANTS[v].name, bf16, changed,
                             rep.first.eval == 0);
            free(good);
            free(bad);
        }
    free_inputs(&in);
}
END_TEST

/* Between the whole checks, evaluation e recomputes the (b, h) slice e mod B H alone: its
 * bits are the whole check's (every variant, masked or not), one ulp of that slice is
 * seen, and, at the evaluation after, the scale one ulp low (a fault on every head) is
 * seen through the next slice. One ulp in another slice is not: a slice is all it checks. */
START_TEST(test_own_slice_between) {
    const int B = 2, H = 3, Tq = 17, Tk = 21, D = 8, BH = B * H;
    inputs in = make_inputs(B, H, Tq, Tk, D, 0x511ceu);
    const float scale = 1.0f / sqrtf((float)D);
    const long per = (long)Tq * D;
    for (int v = 0; v < NV; v++)
        for (int masked = 0; masked < 2; masked++) {
            rp_ctx ctx = variant_ctx(&VARIANTS[v]);
            for (int e = 1; e < 9; e++) {
                if (e == 5) continue; /* whole there */
                const int sl = e % BH;
                rp_par_replica_report rep = run_pair_at(&ctx, &in, masked, B, H, Tq, Tk, D, scale, scale, -1, e);
                if (rep.checked != 1 || rep.first.eval != -1)
                    ck_abort_msg("%s masked %d eval %d: checked %ld, first eval %d", VARIANTS[v].name, masked, e,
                                 rep.checked, rep.first.eval);
                rep = run_pair_at(&ctx, &in, masked, B, H, Tq, Tk, D, scale, scale, sl * per + 3, e);
                ck_assert_msg(rep.first.eval == e && rep.first.group == RP_PAR_RG_OWN,
                              "%s eval %d: one ulp in slice %d unseen", VARIANTS[v].name, e, sl);
                ck_assert_str_eq(rep.first.other, VARIANTS[v].name);
                rep = run_pair_at(&ctx, &in, masked, B, H, Tq, Tk, D, scale, scale, ((sl + 1) % BH) * per + 3, e);
                ck_assert_int_eq(rep.first.eval, -1);
            }
            if (!masked) { /* evaluations 10..15: every slice once; seen exactly where it changed */
                const size_t n = (size_t)BH * per;
                float *good = malloc(sizeof(float) * n), *bad = malloc(sizeof(float) * n);
                rp_error err;
                ck_assert_int_eq(rp_attention(&ctx, good, in.q, in.k, in.v, NULL, B, H, Tq, Tk, D, scale, &err), RP_OK);
                ck_assert_int_eq(rp_attention(&ctx, bad, in.q, in.k, in.v, NULL, B, H, Tq, Tk, D,
                                              nextafterf(scale, 0.0f), &err), RP_OK);
                int any = 0;
                for (int e = 10; e < 10 + BH; e++) {
                    const size_t at = (size_t)(e % BH) * per;
                    const int changed = memcmp(good + at, bad + at, sizeof(float) * per) != 0;
                    const rp_par_replica_report rep =
                        run_pair_at(&ctx, &in, 0, B, H, Tq, Tk, D, nextafterf(scale, 0.0f), scale, -1, e);
                    if ((rep.first.eval == e) != changed)
                        ck_abort_msg("%s eval %d: slice changed %d, own check differs %d", VARIANTS[v].name, e,
                                     changed, rep.first.eval == e);
                    any |= changed;
                }
                ck_assert_msg(any, "%s: a scale one ulp low changed no slice", VARIANTS[v].name);
                free(good);
                free(bad);
            }
        }
    free_inputs(&in);
}
END_TEST

/* The rotation between the whole checks: the first call of a forward (slice: the
 * evaluation's index modulo B H) and the call the index modulo the previous forward's calls
 * names (slice: the index over the calls, modulo B H); none without check_own. */
START_TEST(test_own_slice_rotates) {
    rp_parallel p = one_rank();
    p.fwd_eval = 7;
    p.own_calls_last = 3;                    /* calls 0, 1, 2: call 0 slice 7 mod 4 = 3; call 7 mod 3 = 1, slice 7 / 3 mod 4 = 2 */
    ck_assert_int_eq(rp_par_own_slice(&p, 4), 3);
    ck_assert_int_eq(rp_par_own_slice(&p, 4), 2);
    ck_assert_int_eq(rp_par_own_slice(&p, 4), -1);
    p.own_call = 0;
    p.own_calls_last = 0;                    /* the first forward: its first call */
    ck_assert_int_eq(rp_par_own_slice(&p, 5), 7 % 5);
    ck_assert_int_eq(rp_par_own_slice(&p, 5), -1);
    p.own_call = 0;
    p.check_own = 0;
    ck_assert_int_eq(rp_par_own_slice(&p, 5), -1);
}
END_TEST

/* Off: without check_own, under numerics invariant (the canonical attention has its own
 * exact comparison, the invariant shadow), and for a call with no query rows. */
START_TEST(test_own_off) {
    const int B = 1, H = 1, Tq = 4, Tk = 4, D = 4;
    inputs in = make_inputs(2, H, Tq, Tk, D, 7u);
    float out[16] = {0};
    rp_error err;
    rp_ctx ctx = rp_ctx_default();
    rp_parallel p = one_rank();
    ctx.par = &p;
    p.check_own = 0;
    ck_assert_int_eq(rp_par_attn_own_check(&ctx, out, in.q, in.k, in.v, NULL, B, H, Tq, Tk, D, 0.5f, &err), RP_OK);
    ck_assert_int_eq(p.own_held, 0);
    p.check_own = 1;
    ctx.numerics = RP_NUMERICS_INVARIANT;
    ck_assert_int_eq(rp_par_attn_own_check(&ctx, out, in.q, in.k, in.v, NULL, B, H, Tq, Tk, D, 0.5f, &err), RP_OK);
    ck_assert_int_eq(p.own_held, 0);
    ctx.numerics = RP_NUMERICS_DEFAULT;
    ck_assert_int_eq(rp_par_attn_own_check(&ctx, out, in.q, in.k, in.v, NULL, B, H, 0, Tk, D, 0.5f, &err), RP_OK);
    ck_assert_int_eq(p.own_held, 0);
    rp_par_replica_free(&p);
    free_inputs(&in);
}
END_TEST

/* ---- rp_gemm's own check ----------------------------------------------------------- */

/* A sink that counts the pairs and the ones that differ. */
typedef struct tally {
    int pairs, differ;
} tally;

static void tally_pair(void *user, const float *c, const float *again, size_t n) {
    tally *t = user;
    t->pairs++;
    t->differ += memcmp(c, again, sizeof(float) * n) != 0;
}

/* A (M, K) or (K, M), B (K, N) or (N, K), C (M, ldc) with ld padding filled, random. */
static float *rand_mat(size_t n, uint64_t *seed) {
    float *x = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) x[i] = rng_unif(seed);
    return x;
}

/* Every shape, transpose, alpha / beta, padding and setting: one pair, equal. */
START_TEST(test_gemm_check_equals) {
    static const int SHAPES[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {64, 48, 129}, {3, 200, 2}};
    static const float AB[][2] = {{1.0f, 0.0f}, {0.37f, 1.0f}, {-2.0f, 0.5f}};
    uint64_t seed = 0x6e33u;
    for (int s = 0; s < 5; s++)
        for (int t = 0; t < 4; t++)
            for (int ab = 0; ab < 3; ab++)
                for (int setting = 0; setting < 4; setting++) {
                    const int M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2], tA = t & 1, tB = t >> 1;
                    const int lda = (tA ? M : K) + 3, ldb = (tB ? K : N) + 1, ldc = N + 2 * (t & 1);
                    float *A = rand_mat((size_t)(tA ? K : M) * lda, &seed), *B = rand_mat((size_t)(tB ? N : K) * ldb, &seed);
                    float *C = rand_mat((size_t)M * ldc, &seed);
                    tally tl = {0, 0};
                    const rp_gemm_check chk = {.pair = tally_pair, .user = &tl};
                    rp_ctx ctx = rp_ctx_default();
                    ctx.gemm_check = &chk;
                    if (setting == 1) ctx.precision = RP_PREC_BF16;
                    if (setting == 2) ctx.reduce_split = 1;
                    if (setting == 3) ctx.threads = 3, ctx.precision = RP_PREC_BF16, ctx.reduce_split = 1;
                    rp_ctx_apply(&ctx);
                    rp_gemm(&ctx, tA, tB, M, N, K, AB[ab][0], A, lda, B, ldb, AB[ab][1], C, ldc);
                    if (tl.pairs != 1 || tl.differ)
                        ck_abort_msg("M %d N %d K %d tA %d tB %d alpha %g beta %g setting %d: %d pairs, %d differ", M,
                                     N, K, tA, tB, AB[ab][0], AB[ab][1], setting, tl.pairs, tl.differ);
                    free(A); free(B); free(C);
                }
    rp_ctx def = rp_ctx_default();
    rp_ctx_apply(&def);
}
END_TEST

/* A result computed otherwise differs: alpha 2^-20 off (audit 2's planted wrapper fault),
 * bf16 operands truncated instead of rounded, one ulp of one value; and the invariant
 * product (checked by the invariant shadow) makes no pair. */
START_TEST(test_gemm_check_tells) {
    const int M = 9, N = 11, K = 13;
    uint64_t seed = 0xa1fau;
    float *A = rand_mat((size_t)M * K, &seed), *B = rand_mat((size_t)K * N, &seed), *C = malloc(sizeof(float) * M * N);
    float *At = malloc(sizeof(float) * M * K), *Bt = malloc(sizeof(float) * K * N);
    tally tl = {0, 0};
    const rp_gemm_check chk = {.pair = tally_pair, .user = &tl};
    for (int bf16 = 0; bf16 < 2; bf16++) {
        rp_ctx ctx = rp_ctx_default();
        if (bf16) ctx.precision = RP_PREC_BF16;
        rp_gemm(&ctx, 0, 0, M, N, K, 1.0f + 0x1p-20f, A, K, B, N, 0.0f, C, N);
        rp_gemm_check_call(&ctx, &chk, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, NULL, C, N);
        ck_assert_int_eq(tl.differ, 2 * bf16 + 1);
        rp_gemm(&ctx, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
        C[40] = nextafterf(C[40], INFINITY);
        rp_gemm_check_call(&ctx, &chk, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, NULL, C, N);
        ck_assert_int_eq(tl.differ, 2 * bf16 + 2);
    }
    /* bf16 by truncation: the operands' low 16 bits dropped, then the fp32 product */
    for (int i = 0; i < M * K; i++) {
        uint32_t u;
        memcpy(&u, &A[i], 4);
        u &= 0xffff0000u;
        memcpy(&At[i], &u, 4);
    }
    for (int i = 0; i < K * N; i++) {
        uint32_t u;
        memcpy(&u, &B[i], 4);
        u &= 0xffff0000u;
        memcpy(&Bt[i], &u, 4);
    }
    rp_ctx f32 = rp_ctx_default(), b16 = rp_ctx_default();
    b16.precision = RP_PREC_BF16;
    rp_gemm(&f32, 0, 0, M, N, K, 1.0f, At, K, Bt, N, 0.0f, C, N);
    rp_gemm_check_call(&b16, &chk, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, NULL, C, N);
    ck_assert_int_eq(tl.differ, 5);
    ck_assert_int_eq(tl.pairs, 5);
    rp_ctx inv = rp_ctx_default();
    inv.numerics = RP_NUMERICS_INVARIANT;
    inv.gemm_check = &chk;
    rp_gemm(&inv, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    ck_assert_int_eq(tl.pairs, 5);
    free(A); free(B); free(C); free(At); free(Bt);
}
END_TEST

/* rp_par_forward turns the GEMM check on under check_own and the default numerics: every
 * call at the evaluations the own checks run whole (the run's first here), the forward's
 * first call and a rotating one at the others; the model's GEMMs then land in the own check. */
static rp_status probe_forward(void *user, const rp_ctx *ctx, float *out, rp_error *err) {
    (void)err;
    *(int *)user = ctx->gemm_check != NULL;
    static const float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {0.5f, -1, 2, 0.25f, 3, -0.125f};
    rp_gemm(ctx, 0, 0, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, out, 2);
    return RP_OK;
}

/* The rotation between the whole checks: of a forward's calls the first (turn 0) and the
 * one at eval modulo the previous forward's count (turn 1), the others unchecked. */
START_TEST(test_own_turn) {
    int call = 0, turns[5];
    for (int i = 0; i < 5; i++) turns[i] = rp_par_own_turn(&call, 5, 7);
    ck_assert(turns[0] == 0 && turns[1] == -1 && turns[2] == 1 && turns[3] == -1 && turns[4] == -1);
    ck_assert_int_eq(call, 5);
    call = 0;
    for (int i = 0; i < 5; i++) turns[i] = rp_par_own_turn(&call, 5, 10); /* 10 mod 5 = 0: the first only */
    ck_assert(turns[0] == 0 && turns[1] == -1 && turns[2] == -1 && turns[3] == -1 && turns[4] == -1);
    call = 0;
    ck_assert(rp_par_own_turn(&call, 0, 3) == 0 && rp_par_own_turn(&call, 0, 3) == -1); /* no count yet */
    /* a run of evaluations reaches every call of a forward of 4: e mod 4 = 1, 2, 3 */
    int seen[4] = {0};
    for (int e = 0; e < 8; e++) {
        call = 0;
        for (int i = 0; i < 4; i++) seen[i] += rp_par_own_turn(&call, 4, e) >= 0;
    }
    ck_assert(seen[0] == 8 && seen[1] == 2 && seen[2] == 2 && seen[3] == 2);
}
END_TEST

START_TEST(test_gemm_check_forward) {
    rp_parallel p = one_rank();
    rp_ctx ctx = rp_ctx_default();
    ctx.par = &p;
    rp_error err;
    float out[4];
    int on = -1;
    ck_assert_int_eq(rp_par_forward(&ctx, 0, probe_forward, &on, out, 4, &err), RP_OK);
    ck_assert_int_eq(on, 1);
    ck_assert_int_eq(p.own_held, 1);
    rp_par_own_flush(&ctx, "x_embedder");
    ck_assert_int_eq(rp_par_forward(&ctx, 1, probe_forward, &on, out, 4, &err), RP_OK);
    ck_assert_int_eq(on, 1); /* a later evaluation: its first GEMM (the only one here) */
    ck_assert(p.own_gemm.take != NULL);
    ck_assert_int_eq(p.own_held, 1);
    rp_par_own_flush(&ctx, "x_embedder");
    rp_par_replica_report rep;
    ck_assert_int_eq(rp_par_replica_collect(&p, "test/cpu", &rep, &err), RP_OK);
    ck_assert_int_eq(rep.checked, 2);
    ck_assert_int_eq(rep.first.eval, -1);
    ctx.numerics = RP_NUMERICS_INVARIANT;
    ck_assert_int_eq(rp_par_forward(&ctx, 0, probe_forward, &on, out, 4, &err), RP_OK);
    ck_assert_int_eq(on, 0);
    ctx.numerics = RP_NUMERICS_DEFAULT;
    p.check_own = 0;
    ck_assert_int_eq(rp_par_forward(&ctx, 0, probe_forward, &on, out, 4, &err), RP_OK);
    ck_assert_int_eq(on, 0);
    rp_par_replica_free(&p);
}
END_TEST

int main(void) {
    Suite *s = suite_create("own_check");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_own_equals_kernel);
    tcase_add_test(tc, test_own_tells_a_difference);
    tcase_add_test(tc, test_own_slice_between);
    tcase_add_test(tc, test_own_slice_rotates);
    tcase_add_test(tc, test_own_off);
    tcase_add_test(tc, test_gemm_check_equals);
    tcase_add_test(tc, test_gemm_check_tells);
    tcase_add_test(tc, test_own_turn);
    tcase_add_test(tc, test_gemm_check_forward);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
