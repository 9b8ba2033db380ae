/* test_cuda_gemm.c — rp_cuda_gemm (cuBLASLt) against the CPU's rp_gemm, ggml
 * test-backend-ops style: every precision x mode x (transA, transB) over odd and
 * real shapes, leading dimensions larger than needed, beta 0 and not; plus the
 * conversion kernel bit for bit, K = 0 / M = 0, argument validation, the algorithm
 * cache and its records, and the constant-operand cache (rp_cuda_gemm_const: bitwise
 * rp_cuda_gemm's result, one copy per key, forgetting, the cap). Exits 77 ("SKIP: ...") without a CUDA build or device,
 * 1 on any failure.
 *
 * Checks per case: no NaN/Inf in C; C's padding never written; beta == 0 never
 * reads C (it starts as NaN); NMSE = sum (gpu - ref)^2 / sum ref^2 under the bound
 * below; DETERMINISTIC: 3 repeats bitwise identical with the same algorithm
 * record, and a second ctx (a second cuBLASLt handle) picks the same algorithm
 * and gives the same bits; FAST: its difference to DETERMINISTIC and whether its
 * own repeat was bitwise identical are printed, not asserted.
 *
 * NMSE bound. Data are uniform in [-1, 1), so the products p_k = a_k b_k are iid,
 * zero-mean, E p^2 = 1/9. Let e be the error of one computed element against the
 * exact value. Whatever the summation order (blocked, split-K, tensor-core
 * chunks), the dot product performs K - 1 additions, each rounding a partial sum
 * s made of m <= K terms, plus a rounding of alpha*sum, beta*c and the final add;
 * so |e| <= u_acc * sum_adds |s| + u_p * sum_k |p_k| + 3u |result|-ish terms.
 * Taking L2 norms over the elements (Minkowski) with E s^2 = m/9 and the
 * worst order (a chain, m = 2..K: sum sqrt(m) <= (2/3) K^1.5) and E ref^2 >= K/9:
 *   sqrt(NMSE_side) <= u_acc (2/3) K + u_p sqrt(K) (E|p|/sqrt(E p^2) = 3/4 <= 1) + 4u
 *                   <= u_side ((2/3) K + sqrt(K) + 4)            =: e_side(u_side, K)
 * This assumes every rounding error is as large as allowed and of the same sign
 * (truncating accumulators), not that they cancel, so c = 2/3 is the worst-order
 * constant of a (c K u)^2 bound, not a fitted one. The GPU and CPU errors add in
 * the L2 norm, and rounding the inputs adds |p| ((1+u_in)^2 - 1) per product:
 *   sqrt(NMSE) <= s * (e_in + e_side(u_gpu, K) + e_side(2^-24, K))
 * with the safety factor s = 2 for the gap between the sample ratio and the ratio
 * of expectations (small cases: 1x1x1 and K = 1 satisfy the bound pointwise).
 *   fp32 (deterministic): u_gpu = 2^-24 (SIMT FMA, round to nearest), e_in = 0.
 *   tf32 (and fp32 in fast mode, which allows TF32): inputs lose 13 mantissa bits;
 *        we do not assume the hardware rounds (it may truncate), so one TF32 ulp,
 *        2^-10, per input: e_in = 2*2^-10 + 2^-20; tensor-core accumulation is
 *        fp32 but truncating (Fasi et al., "Numerical behavior of NVIDIA tensor
 *        cores", 2021): u_gpu = 2^-23 (one ulp per addition).
 *   bf16: compared with the CPU's bf16 mode, whose inputs are rounded bit for bit
 *        the same (checked separately below), so e_in = 0 and only the fp32
 *        accumulation differs: u_gpu = 2^-23 (tensor core), CPU 2^-24.
 *   fp16: the CPU has no fp16 mode: compared with the CPU's fp32 product, with
 *        e_in = 2*2^-11 + 2^-22 (round to nearest half, 11 significant bits) and
 *        u_gpu = 2^-23.
 * For scale: K = 3072 gives sqrt-bounds of 5e-4 (fp32), 4.6e-3 (tf32), 7.5e-4
 * (bf16), 2.9e-3 (fp16); a transposition or layout bug gives NMSE ~ 1, bf16 inputs
 * not rounded (or rounded differently) give ~ 1e-5 (above the small-K bf16 bounds),
 * and TF32 used in fp32 deterministic mode ~ 1e-7 (above the fp32 bounds up to
 * K ~ 3000). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ctx.h"
#include "engine/ops.h"

#ifndef REPRO_HAVE_CUDA
int main(void) {
    printf("SKIP: this build has no CUDA (nvcc was not found at configure time)\n");
    return 77;
}
#else
#include <cuda_runtime.h>

#include "engine/cuda/cuda_gemm.h"
#include "tests/common/cuda_check.h"
#include "tests/common/test_rng.h"

static const float C_SENTINEL = 12345.0f;

/* ---- bounds (derivation at the top) ------------------------------------------ */

static double e_side(double u, int K) { return u * (2.0 / 3.0 * K + sqrt((double)K) + 4.0); }

static int uses_tf32(rp_cuda_prec p, rp_cuda_gemm_mode m) {
    return p == RP_CUDA_PREC_TF32 || (p == RP_CUDA_PREC_FP32 && m == RP_CUDA_GEMM_FAST);
}

static double nmse_bound(rp_cuda_prec p, rp_cuda_gemm_mode m, int K) {
    const double u32 = 0x1p-24, u_tc = 0x1p-23;
    double e_in = 0, u_gpu = u_tc;
    if (uses_tf32(p, m)) e_in = 2 * 0x1p-10 + 0x1p-20;
    else if (p == RP_CUDA_PREC_FP32) u_gpu = u32;
    else if (p == RP_CUDA_PREC_FP16) e_in = 2 * 0x1p-11 + 0x1p-22;
    /* BF16: e_in = 0 against the CPU's identically rounded inputs */
    double s = 2.0 * (e_in + e_side(u_gpu, K) + e_side(u32, K));
    return s * s;
}

/* ---- one shape x transposition ------------------------------------------------- */

typedef struct shape {
    int M, N, K, pad;
    float alpha, beta;
    const char *what;
} shape;

typedef struct gemm_case {
    int tA, tB, M, N, K, lda, ldb, ldc;
    float alpha, beta;
    const float *dA, *dB;
    float *dC;
    const float *C0; /* host initial C (M, ldc) */
} gemm_case;

/* Runs one GEMM from C0 and downloads C (M, ldc) into out; the algorithm record in
 * algo. Returns 0 on success (a failure is counted and printed). */
static int run(rp_cuda_gemm_ctx *g, const gemm_case *c, float *out, char *algo, size_t cap) {
    size_t bytes = sizeof(float) * (size_t)c->M * c->ldc;
    CU(cudaMemcpy(c->dC, c->C0, bytes, cudaMemcpyHostToDevice));
    CU(cudaDeviceSynchronize());
    rp_error err = {0};
    rp_status s = rp_cuda_gemm(g, c->tA, c->tB, c->M, c->N, c->K, c->alpha, c->dA, c->lda, c->dB, c->ldb,
                               c->beta, c->dC, c->ldc, &err);
    if (s == RP_OK) s = rp_cuda_gemm_sync(g, &err);
    if (s != RP_OK) {
        CHECK(0, "rp_cuda_gemm %s %s tA=%d tB=%d %dx%dx%d: %s (%s)", rp_cuda_prec_name(rp_cuda_gemm_precision(g)),
              rp_cuda_gemm_mode_name(rp_cuda_gemm_get_mode(g)), c->tA, c->tB, c->M, c->N, c->K, err.msg, err.where);
        return 1;
    }
    CU(cudaMemcpy(out, c->dC, bytes, cudaMemcpyDeviceToHost));
    rp_cuda_gemm_last_algo(g, algo, cap);
    return 0;
}

/* Padding untouched, logical region finite. Returns 0 when fine. */
static int check_output(const gemm_case *c, const float *out, const char *label) {
    int bad_pad = 0, bad_val = 0;
    for (int i = 0; i < c->M; i++)
        for (int j = 0; j < c->ldc; j++) {
            float v = out[(size_t)i * c->ldc + j];
            if (j >= c->N) bad_pad += v != C_SENTINEL;
            else bad_val += !isfinite(v);
        }
    CHECK(bad_pad == 0, "%s: %d padding elements of C written", label, bad_pad);
    CHECK(bad_val == 0, "%s: %d NaN/Inf elements in C", label, bad_val);
    return bad_pad || bad_val;
}

/* NMSE of x against ref over the logical (M, N) region; max-abs difference in *maxabs. */
static double nmse(const gemm_case *c, const float *x, const float *ref, double *maxabs) {
    double num = 0, den = 0, mx = 0;
    for (int i = 0; i < c->M; i++)
        for (int j = 0; j < c->N; j++) {
            double r = ref[(size_t)i * c->ldc + j], d = (double)x[(size_t)i * c->ldc + j] - r;
            num += d * d;
            den += r * r;
            if (fabs(d) > mx) mx = fabs(d);
        }
    if (maxabs) *maxabs = mx;
    return den > 0 ? num / den : num;
}

static int same_bits(const gemm_case *c, const float *x, const float *y) {
    return memcmp(x, y, sizeof(float) * (size_t)c->M * c->ldc) == 0;
}

typedef struct ctxs {
    rp_cuda_gemm_ctx *det[RP_CUDA_PREC_COUNT], *det2[RP_CUDA_PREC_COUNT], *fast[RP_CUDA_PREC_COUNT];
} ctxs;

static int fast_differs = 0, fast_cases = 0, fast_nondet = 0;

static void test_case(const ctxs *G, const shape *sh, int tA, int tB, uint64_t seed) {
    const int M = sh->M, N = sh->N, K = sh->K;
    const int ar = tA ? K : M, ac = tA ? M : K, lda = ac + sh->pad;
    const int br = tB ? N : K, bc = tB ? K : N, ldb = bc + sh->pad;
    const int ldc = N + sh->pad;
    const size_t na = (size_t)ar * lda, nb = (size_t)br * ldb, nc = (size_t)M * ldc;
    float *A = xmalloc(sizeof(float) * na), *B = xmalloc(sizeof(float) * nb);
    float *C0 = xmalloc(sizeof(float) * nc), *ref32 = xmalloc(sizeof(float) * nc),
          *refbf = xmalloc(sizeof(float) * nc);
    float *out[4], *fo[2];
    for (int i = 0; i < 4; i++) out[i] = xmalloc(sizeof(float) * nc);
    for (int i = 0; i < 2; i++) fo[i] = xmalloc(sizeof(float) * nc);
    uint64_t s = seed;
    /* Padding of A and B is NaN (must never be read); C's padding a sentinel (must
     * never be written); with beta == 0, C starts as NaN (must not be read). */
    for (int i = 0; i < ar; i++)
        for (int j = 0; j < lda; j++) A[(size_t)i * lda + j] = j < ac ? rng_unif(&s) : NAN;
    for (int i = 0; i < br; i++)
        for (int j = 0; j < ldb; j++) B[(size_t)i * ldb + j] = j < bc ? rng_unif(&s) : NAN;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++)
            C0[(size_t)i * ldc + j] = j < N ? (sh->beta == 0.0f ? NAN : rng_unif(&s)) : C_SENTINEL;

    /* CPU references: fp32, and bf16 (inputs rounded to bf16, fp32 accumulation). */
    rp_ctx cpu = rp_ctx_default();
    memcpy(ref32, C0, sizeof(float) * nc);
    rp_gemm(&cpu, tA, tB, M, N, K, sh->alpha, A, lda, B, ldb, sh->beta, ref32, ldc);
    cpu.precision = RP_PREC_BF16;
    memcpy(refbf, C0, sizeof(float) * nc);
    rp_gemm(&cpu, tA, tB, M, N, K, sh->alpha, A, lda, B, ldb, sh->beta, refbf, ldc);

    float *dA = NULL, *dB = NULL, *dC = NULL;
    CU(cudaMalloc((void **)&dA, sizeof(float) * na));
    CU(cudaMalloc((void **)&dB, sizeof(float) * nb));
    CU(cudaMalloc((void **)&dC, sizeof(float) * nc));
    CU(cudaMemcpy(dA, A, sizeof(float) * na, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dB, B, sizeof(float) * nb, cudaMemcpyHostToDevice));
    gemm_case c = {tA, tB, M, N, K, lda, ldb, ldc, sh->alpha, sh->beta, dA, dB, dC, C0};

    for (int p = 0; p < RP_CUDA_PREC_COUNT; p++) {
        const rp_cuda_prec prec = (rp_cuda_prec)p;
        const float *ref = prec == RP_CUDA_PREC_BF16 ? refbf : ref32;
        char label[160], algo[4][400], falgo[2][400];
        snprintf(label, sizeof label, "%dx%dx%d (%s) tA=%d tB=%d %s", M, N, K, sh->what, tA, tB,
                 rp_cuda_prec_name(prec));

        /* deterministic: 3 repeats + a second ctx */
        int bad = 0;
        for (int r = 0; r < 3 && !bad; r++) bad = run(G->det[p], &c, out[r], algo[r], sizeof algo[r]);
        if (!bad) bad = run(G->det2[p], &c, out[3], algo[3], sizeof algo[3]);
        if (!bad) {
            check_output(&c, out[0], label);
            double mx, e = nmse(&c, out[0], ref, &mx), bound = nmse_bound(prec, RP_CUDA_GEMM_DETERMINISTIC, K);
            printf("%-48s det : nmse %.3e (bound %.3e) maxabs %.3e  %s\n", label, e, bound, mx, algo[0]);
            CHECK(e <= bound, "%s deterministic: NMSE %.3e > bound %.3e", label, e, bound);
            for (int r = 1; r < 3; r++) {
                CHECK(same_bits(&c, out[0], out[r]), "%s deterministic: repeat %d differs bitwise from the first",
                      label, r + 1);
                CHECK(strcmp(algo[0], algo[r]) == 0, "%s deterministic: repeat %d ran \"%s\", first \"%s\"", label,
                      r + 1, algo[r], algo[0]);
            }
            CHECK(same_bits(&c, out[0], out[3]), "%s deterministic: a second ctx gives other bits", label);
            CHECK(strcmp(algo[0], algo[3]) == 0, "%s deterministic: a second ctx chose \"%s\", first \"%s\"", label,
                  algo[3], algo[0]);
            rp_cuda_gemm_algo info = rp_cuda_gemm_last_algo_info(G->det[p]);
            CHECK(info.valid && info.splitk_num <= 1 && info.reduction_scheme == 0,
                  "%s deterministic: split-K %d / reduction %u chosen", label, info.splitk_num,
                  info.reduction_scheme);
        }

        /* fast: accuracy asserted; difference to deterministic and repeatability reported */
        int fbad = 0;
        for (int r = 0; r < 2 && !fbad; r++) fbad = run(G->fast[p], &c, fo[r], falgo[r], sizeof falgo[r]);
        if (!fbad) {
            check_output(&c, fo[0], label);
            double mx, e = nmse(&c, fo[0], ref, &mx), bound = nmse_bound(prec, RP_CUDA_GEMM_FAST, K);
            CHECK(e <= bound, "%s fast: NMSE %.3e > bound %.3e", label, e, bound);
            double dmx = 0, de = bad ? NAN : nmse(&c, fo[0], out[0], &dmx);
            int same = !bad && same_bits(&c, fo[0], out[0]), rep = same_bits(&c, fo[0], fo[1]);
            fast_cases++;
            fast_differs += !same;
            fast_nondet += !rep;
            printf("%-48s fast: nmse %.3e (bound %.3e) vs det: nmse %.3e maxabs %.3e %s, repeat %s  %s\n", label, e,
                   bound, de, dmx, same ? "bitwise equal" : "differs", rep ? "identical" : "DIFFERS", falgo[0]);
        }
    }
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    free(A);
    free(B);
    free(C0);
    free(ref32);
    free(refbf);
    for (int i = 0; i < 4; i++) free(out[i]);
    for (int i = 0; i < 2; i++) free(fo[i]);
}

/* ---- conversion kernel: bit for bit the CPU's rounding ------------------------- */

static void test_convert(void) {
    enum { ROWS = 3, COLS = 700, LDS = 703, LDD = 704 };
    float *h = xmalloc(sizeof(float) * ROWS * LDS);
    const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, -NAN,
                             0x1.02p0f,       /* bf16 tie (2^-8 above 1), even below: down */
                             0x1.06p0f,       /* bf16 tie, odd below: up */
                             0x1.002p0f,      /* fp16 tie (2^-11 above 1), even below: down */
                             0x1.006p0f,      /* fp16 tie, odd below: up */
                             0x1.fep127f,     /* largest finite bf16 */
                             0x1.ffp127f,     /* bf16 tie above it, odd below: Inf */
                             65504.0f, 65519.0f, 65520.0f, /* fp16 max, below / at overflow */
                             0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, /* fp16 subnormals */
                             0x1p-126f, 0x1p-149f, 0x1.fffffcp-127f, /* fp32 denormals */
                             3.14159265f, -2.71828183f, 1e-3f, -1e-8f, 1e10f};
    const int ns = (int)(sizeof special / sizeof special[0]);
    uint64_t s = 99;
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < LDS; j++) {
            size_t i = (size_t)r * LDS + j;
            if (j >= COLS) h[i] = NAN;
            else if (r == 0 && j < ns) h[i] = special[j];
            else if (r == 1) { /* random bit patterns: every exponent, NaNs included */
                uint32_t u = (uint32_t)rng_next(&s);
                memcpy(&h[i], &u, 4);
            } else h[i] = rng_unif(&s) * 100.0f;
        }
    float *dsrc = NULL;
    uint16_t *ddst = NULL;
    uint16_t *got = xmalloc(sizeof(uint16_t) * ROWS * LDD);
    CU(cudaMalloc((void **)&dsrc, sizeof(float) * ROWS * LDS));
    CU(cudaMalloc((void **)&ddst, sizeof(uint16_t) * ROWS * LDD));
    CU(cudaMemcpy(dsrc, h, sizeof(float) * ROWS * LDS, cudaMemcpyHostToDevice));
    for (int t = 0; t < 2; t++) {
        rp_cuda_prec to = t ? RP_CUDA_PREC_FP16 : RP_CUDA_PREC_BF16;
        rp_error err = {0};
        CU(cudaMemset(ddst, 0xff, sizeof(uint16_t) * ROWS * LDD));
        rp_status st = rp_cuda_convert_f32(ddst, LDD, to, dsrc, ROWS, COLS, LDS, 0, &err);
        CHECK(st == RP_OK, "rp_cuda_convert_f32 %s: %s", rp_cuda_prec_name(to), err.msg);
        if (st != RP_OK) continue;
        CU(cudaDeviceSynchronize());
        CU(cudaMemcpy(got, ddst, sizeof(uint16_t) * ROWS * LDD, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int r = 0; r < ROWS; r++)
            for (int j = 0; j < LDD; j++) {
                uint16_t g = got[(size_t)r * LDD + j];
                if (j >= COLS) {
                    if (g != 0 && bad++ < 5) printf("  convert %s: padding (%d,%d) = 0x%04x, not 0\n",
                                                    rp_cuda_prec_name(to), r, j, g);
                    continue;
                }
                float x = h[(size_t)r * LDS + j];
                int ok;
                if (t == 0) ok = g == rp_f32_to_bf16(x); /* NaN included: canonical 0x7FC0 both */
                else if (isnan(x)) ok = isnan(rp_f16_to_f32(g));
                else ok = g == rp_f32_to_f16(x);
                if (!ok && bad++ < 5)
                    printf("  convert %s: %a -> 0x%04x, CPU 0x%04x\n", rp_cuda_prec_name(to), (double)x, g,
                           t ? rp_f32_to_f16(x) : rp_f32_to_bf16(x));
            }
        CHECK(bad == 0, "rp_cuda_convert_f32 %s: %d elements differ from the CPU's rounding", rp_cuda_prec_name(to),
              bad);
        printf("convert %s: %d x %d (ld %d -> %d) %s\n", rp_cuda_prec_name(to), ROWS, COLS, LDS, LDD,
               bad ? "MISMATCH" : "bit for bit the CPU's");
    }
    rp_error err = {0};
    CHECK(rp_cuda_convert_f32(ddst, LDD, RP_CUDA_PREC_FP32, dsrc, ROWS, COLS, LDS, 0, &err) == RP_ERR_INVALID &&
              strstr(err.msg, "fp32"),
          "convert to fp32 accepted or message without the value: %s", err.msg);
    cudaFree(dsrc);
    cudaFree(ddst);
    free(h);
    free(got);
}

/* ---- edge cases, validation, cache --------------------------------------------- */

static void test_edges(rp_cuda_gemm_ctx *g) {
    rp_error err = {0};
    /* K == 0: C = beta * C; beta == 0 writes zeros over NaN. */
    enum { M = 3, N = 4, LDC = 6 };
    float h[M * LDC], got[M * LDC];
    float *dC = NULL, *dA = NULL;
    CU(cudaMalloc((void **)&dC, sizeof h));
    CU(cudaMalloc((void **)&dA, 64 * sizeof(float)));
    for (int pass = 0; pass < 2; pass++) {
        float beta = pass ? 0.5f : 0.0f;
        for (int i = 0; i < M * LDC; i++) h[i] = (i % LDC) >= N ? C_SENTINEL : (pass ? (float)i : NAN);
        CU(cudaMemcpy(dC, h, sizeof h, cudaMemcpyHostToDevice));
        CU(cudaDeviceSynchronize());
        rp_status s = rp_cuda_gemm(g, 0, 0, M, N, 0, 1.0f, dA, 1, dA, N, beta, dC, LDC, &err);
        if (s == RP_OK) s = rp_cuda_gemm_sync(g, &err);
        CHECK(s == RP_OK, "K=0: %s", err.msg);
        CU(cudaMemcpy(got, dC, sizeof got, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int i = 0; i < M * LDC; i++) {
            float want = (i % LDC) >= N ? C_SENTINEL : beta * (pass ? (float)i : 0.0f);
            bad += memcmp(&got[i], &want, 4) != 0;
        }
        CHECK(bad == 0, "K=0 beta=%g: %d elements wrong (want beta*C, zeros for beta 0)", (double)beta, bad);
    }
    /* M == 0 / N == 0: nothing, even with NULL pointers */
    CHECK(rp_cuda_gemm(g, 0, 0, 0, 5, 7, 1.0f, NULL, 7, NULL, 5, 0.0f, NULL, 5, &err) == RP_OK, "M=0: %s", err.msg);
    CHECK(rp_cuda_gemm(g, 1, 1, 5, 0, 7, 1.0f, NULL, 5, NULL, 7, 0.0f, NULL, 1, &err) == RP_OK, "N=0: %s", err.msg);

    /* validation: RP_ERR_INVALID, message naming the value */
    struct {
        int tA, tB, M, N, K, lda, ldb, ldc, nullA, hostB;
        const char *needle;
    } bad[] = {
        {0, 0, -1, 4, 4, 4, 4, 4, 0, 0, "M=-1"},
        {0, 0, 4, 4, -3, 4, 4, 4, 0, 0, "K=-3"},
        {0, 0, 4, 4, 5, 4, 4, 4, 0, 0, "lda=4"},
        {1, 0, 6, 4, 2, 5, 4, 4, 0, 0, "lda=5"},
        {0, 1, 4, 4, 5, 5, 3, 4, 0, 0, "ldb=3"},
        {0, 0, 4, 7, 2, 2, 7, 6, 0, 0, "ldc=6"},
        {0, 0, 2, 2, 2, 2, 2, 2, 1, 0, "A is NULL"},
        {0, 0, 2, 2, 2, 2, 2, 2, 0, 1, "B="},
    };
    float host[16] = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rp_error_clear(&err);
        rp_status s = rp_cuda_gemm(g, bad[i].tA, bad[i].tB, bad[i].M, bad[i].N, bad[i].K, 1.0f,
                                   bad[i].nullA ? NULL : dA, bad[i].lda, bad[i].hostB ? host : dA, bad[i].ldb, 0.0f, dC,
                                   bad[i].ldc, &err);
        CHECK(s == RP_ERR_INVALID && strstr(err.msg, bad[i].needle),
              "invalid call %zu: status %s, message \"%s\" (want invalid, naming \"%s\")", i, rp_status_name(s),
              err.msg, bad[i].needle);
    }
    rp_cuda_prec p;
    rp_cuda_gemm_mode m;
    CHECK(rp_cuda_prec_parse("bf16", &p, &err) == RP_OK && p == RP_CUDA_PREC_BF16, "parse bf16");
    CHECK(rp_cuda_prec_parse("fp64", &p, &err) == RP_ERR_INVALID && strstr(err.msg, "fp64"), "parse fp64: %s",
          err.msg);
    CHECK(rp_cuda_gemm_mode_parse("fast", &m, &err) == RP_OK && m == RP_CUDA_GEMM_FAST, "parse fast");
    CHECK(rp_cuda_gemm_mode_parse("quick", &m, &err) == RP_ERR_INVALID && strstr(err.msg, "quick"),
          "parse quick: %s", err.msg);
    CU(cudaGetLastError()); /* the validation must not leave a sticky CUDA error */
    cudaFree(dC);
    cudaFree(dA);
}

/* The same key twice: one cache entry, same record; a new ld: a new entry. */
static void test_cache(rp_cuda_gemm_ctx *g) {
    float *d = NULL;
    CU(cudaMalloc((void **)&d, 3 * 64 * 64 * sizeof(float)));
    CU(cudaMemset(d, 0, 3 * 64 * 64 * sizeof(float)));
    rp_error err = {0};
    char a1[400], a2[400];
    int n0 = rp_cuda_gemm_cache_size(g);
    rp_status s = rp_cuda_gemm(g, 0, 1, 40, 24, 56, 1.0f, d, 64, d + 4096, 64, 0.0f, d + 8192, 64, &err);
    rp_cuda_gemm_last_algo(g, a1, sizeof a1);
    int n1 = rp_cuda_gemm_cache_size(g);
    if (s == RP_OK) s = rp_cuda_gemm(g, 0, 1, 40, 24, 56, 1.0f, d, 64, d + 4096, 64, 0.0f, d + 8192, 64, &err);
    rp_cuda_gemm_last_algo(g, a2, sizeof a2);
    int n2 = rp_cuda_gemm_cache_size(g);
    if (s == RP_OK) s = rp_cuda_gemm(g, 0, 1, 40, 24, 56, 1.0f, d, 60, d + 4096, 64, 0.0f, d + 8192, 64, &err);
    int n3 = rp_cuda_gemm_cache_size(g);
    if (s == RP_OK) s = rp_cuda_gemm_sync(g, &err);
    CHECK(s == RP_OK, "cache test GEMM: %s", err.msg);
    CHECK(n1 == n0 + 1 && n2 == n1 && n3 == n2 + 1, "cache sizes %d -> %d -> %d -> %d (want +1, +0, +1)", n0, n1,
          n2, n3);
    CHECK(strcmp(a1, a2) == 0 && strncmp(a1, "algo=", 5) == 0, "cache: records \"%s\" then \"%s\"", a1, a2);
    char line[700];
    rp_cuda_gemm_cache_entry(g, n3 - 1, line, sizeof line);
    CHECK(strstr(line, "M=40 N=24 K=56 lda=60") != NULL, "cache entry text: \"%s\"", line);
    printf("cache entry: %s\n", line);
    cudaFree(d);
}

static rp_cuda_gemm_ctx *make_ctx(rp_cuda_prec p, rp_cuda_gemm_mode m);

/* Runs C = A op(B) (beta 0, C from NaN) with rp_cuda_gemm_const (cnst) or rp_cuda_gemm
 * and downloads C into out. 0 on success. */
static int run_c(rp_cuda_gemm_ctx *g, int cnst, int tB, int M, int N, int K, const float *dA, int lda,
                 const float *dB, int ldb, float *dC, int ldc, float *out) {
    rp_error err = {0};
    const size_t bytes = sizeof(float) * (size_t)M * ldc;
    CU(cudaMemset(dC, 0xff, bytes)); /* NaN: beta 0 must not read it */
    CU(cudaDeviceSynchronize());
    rp_status s = (cnst ? rp_cuda_gemm_const : rp_cuda_gemm)(g, 0, tB, M, N, K, 1.0f, dA, lda, dB, ldb, 0.0f, dC,
                                                             ldc, &err);
    if (s == RP_OK) s = rp_cuda_gemm_sync(g, &err);
    CHECK(s == RP_OK, "%s %s tB=%d %dx%dx%d: %s (%s)", cnst ? "rp_cuda_gemm_const" : "rp_cuda_gemm",
          rp_cuda_prec_name(rp_cuda_gemm_precision(g)), tB, M, N, K, err.msg, err.where);
    if (s != RP_OK) return 1;
    CU(cudaMemcpy(out, dC, bytes, cudaMemcpyDeviceToHost));
    return 0;
}

static int bits_equal(const float *x, const float *y, size_t n) { return memcmp(x, y, sizeof(float) * n) == 0; }

static size_t packed16(int rows, int cols) { return (size_t)rows * (size_t)((cols + 7) / 8 * 8) * 2; }

/* rp_cuda_gemm_const in one precision on fresh deterministic ctxs. B (the weight) is
 * (N, K) with transB = 1 (nn.Linear) and a second B2 (K, N2) with transB = 0, both at
 * addresses that are not 256-byte aligned and with ldb > cols, so the cached copy's
 * layout and alignment class must match the per-call scratch for the bits to agree. */
static void test_const(rp_cuda_prec prec) {
    enum { M = 37, N = 72, K = 53, LDA = K + 1, LDB = K + 3, N2 = 29, LDB2 = N2 + 2, LDC = 80 };
    const int half = prec == RP_CUDA_PREC_BF16 || prec == RP_CUDA_PREC_FP16;
    const size_t na = (size_t)M * LDA, nb = (size_t)N * LDB, nb2 = (size_t)K * LDB2, nc = (size_t)M * LDC;
    float *A = xmalloc(sizeof(float) * na), *B = xmalloc(sizeof(float) * nb), *B2 = xmalloc(sizeof(float) * nb2);
    float *o[6];
    for (int i = 0; i < 6; i++) o[i] = xmalloc(sizeof(float) * nc);
    uint64_t s = 4242 + (uint64_t)prec;
    for (size_t i = 0; i < na; i++) A[i] = rng_unif(&s);
    for (size_t i = 0; i < nb; i++) B[i] = rng_unif(&s);
    for (size_t i = 0; i < nb2; i++) B2[i] = rng_unif(&s);
    float *dA = NULL, *dW = NULL, *dC = NULL;
    CU(cudaMalloc((void **)&dA, sizeof(float) * na));
    CU(cudaMalloc((void **)&dW, sizeof(float) * (nb + nb2 + 8)));
    CU(cudaMalloc((void **)&dC, sizeof(float) * nc));
    /* 4- and 16-byte aligned; B's last element is 3 floats before B2's first */
    float *dB = dW + 1, *dB2 = dW + 1 + nb + 3;
    CU(cudaMemcpy(dA, A, sizeof(float) * na, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dB, B, sizeof(float) * nb, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dB2, B2, sizeof(float) * nb2, cudaMemcpyHostToDevice));
    const char *pn = rp_cuda_prec_name(prec);
    rp_cuda_gemm_ctx *g = make_ctx(prec, RP_CUDA_GEMM_DETERMINISTIC);
    rp_cuda_gemm_ctx *g2 = make_ctx(prec, RP_CUDA_GEMM_DETERMINISTIC); /* rp_cuda_gemm only */
    const size_t want1 = half ? packed16(N, K) : 0, want2 = half ? packed16(K, N2) : 0;
    int bad = 0;

    /* plain, const (makes the copy), const (uses it), plain on another ctx: same bits */
    char a_plain[400], a_const[400];
    CHECK(rp_cuda_gemm_const_bytes(g) == 0 && rp_cuda_gemm_const_count(g) == 0, "%s const: fresh ctx holds %zu", pn,
          rp_cuda_gemm_const_bytes(g));
    bad |= run_c(g, 0, 1, M, N, K, dA, LDA, dB, LDB, dC, LDC, o[0]);
    rp_cuda_gemm_last_algo(g, a_plain, sizeof a_plain);
    const int n_algo = rp_cuda_gemm_cache_size(g);
    CHECK(rp_cuda_gemm_const_bytes(g) == 0, "%s const: rp_cuda_gemm cached %zu bytes", pn,
          rp_cuda_gemm_const_bytes(g));
    bad |= run_c(g, 1, 1, M, N, K, dA, LDA, dB, LDB, dC, LDC, o[1]);
    rp_cuda_gemm_last_algo(g, a_const, sizeof a_const);
    CHECK(rp_cuda_gemm_const_bytes(g) == want1 && rp_cuda_gemm_const_count(g) == (half ? 1 : 0),
          "%s const: after the first call %zu bytes in %d copies, want %zu in %d", pn, rp_cuda_gemm_const_bytes(g),
          rp_cuda_gemm_const_count(g), want1, half ? 1 : 0);
    bad |= run_c(g, 1, 1, M, N, K, dA, LDA, dB, LDB, dC, LDC, o[2]);
    CHECK(rp_cuda_gemm_const_bytes(g) == want1, "%s const: the second call changed the bytes to %zu", pn,
          rp_cuda_gemm_const_bytes(g));
    CHECK(rp_cuda_gemm_cache_size(g) == n_algo, "%s const: algorithm cache %d -> %d entries (want the same key)",
          pn, n_algo, rp_cuda_gemm_cache_size(g));
    CHECK(strcmp(a_plain, a_const) == 0, "%s const: ran \"%s\", rp_cuda_gemm \"%s\"", pn, a_const, a_plain);
    bad |= run_c(g2, 0, 1, M, N, K, dA, LDA, dB, LDB, dC, LDC, o[3]);
    if (!bad) {
        CHECK(bits_equal(o[0], o[1], nc), "%s const: first rp_cuda_gemm_const differs bitwise from rp_cuda_gemm", pn);
        CHECK(bits_equal(o[0], o[2], nc), "%s const: second rp_cuda_gemm_const differs bitwise from rp_cuda_gemm",
              pn);
        CHECK(bits_equal(o[0], o[3], nc), "%s const: rp_cuda_gemm on a second ctx differs bitwise", pn);
    }

    /* transB = 0 operand: a second copy; bitwise rp_cuda_gemm */
    bad |= run_c(g, 1, 0, M, N2, K, dA, LDA, dB2, LDB2, dC, LDC, o[4]);
    bad |= run_c(g2, 0, 0, M, N2, K, dA, LDA, dB2, LDB2, dC, LDC, o[5]);
    CHECK(rp_cuda_gemm_const_bytes(g) == want1 + want2 && rp_cuda_gemm_const_count(g) == (half ? 2 : 0),
          "%s const: two operands hold %zu bytes in %d copies, want %zu", pn, rp_cuda_gemm_const_bytes(g),
          rp_cuda_gemm_const_count(g), want1 + want2);
    if (!bad) CHECK(bits_equal(o[4], o[5], nc), "%s const: transB=0 differs bitwise from rp_cuda_gemm", pn);

    /* B changes without forget: the promise is broken, and the stale copy shows the
     * cache is really used (16-bit precisions only) */
    for (size_t i = 0; i < nb; i++) B[i] = -0.5f * B[i] + 0.25f;
    CU(cudaMemcpy(dB, B, sizeof(float) * nb, cudaMemcpyHostToDevice));
    bad |= run_c(g, 1, 1, M, N, K, dA, LDA, dB, LDB, dC, LDC, o[1]);
    if (!bad)
        CHECK(half ? bits_equal(o[1], o[0], nc) : !bits_equal(o[1], o[0], nc),
              "%s const: B changed without forget: %s", pn,
              half ? "the result changed (B was not cached)" : "the result did not follow B (fp32 caches nothing)");

    /* forget a range that does not touch B: nothing dropped; then one covering only
     * B's last byte: B's copy dropped, B2's kept */
    rp_cuda_gemm_forget_const(g, dB + nb, sizeof(float) * 3);
    CHECK(rp_cuda_gemm_const_bytes(g) == want1 + want2, "%s const: forgetting the gap after B dropped a copy", pn);
    rp_cuda_gemm_forget_const(g, (const char *)(dB + (size_t)(N - 1) * LDB + K) - 1, 1);
    CHECK(rp_cuda_gemm_const_bytes(g) == want2 && rp_cuda_gemm_const_count(g) == (half ? 1 : 0),
          "%s const: forgetting B's last byte left %zu bytes, want %zu", pn, rp_cuda_gemm_const_bytes(g), want2);

    /* after forget the result follows the new B, bitwise rp_cuda_gemm's */
    bad |= run_c(g, 1, 1, M, N, K, dA, LDA, dB, LDB, dC, LDC, o[1]);
    bad |= run_c(g2, 0, 1, M, N, K, dA, LDA, dB, LDB, dC, LDC, o[2]);
    if (!bad) {
        CHECK(bits_equal(o[1], o[2], nc), "%s const: after forget, differs bitwise from rp_cuda_gemm on the new B",
              pn);
        CHECK(!bits_equal(o[1], o[0], nc), "%s const: after forget, still the old B's result", pn);
    }
    CHECK(rp_cuda_gemm_const_bytes(g) == want1 + want2, "%s const: re-made copy: %zu bytes, want %zu", pn,
          rp_cuda_gemm_const_bytes(g), want1 + want2);

    /* the whole allocation forgotten at once, then forget_all */
    rp_cuda_gemm_forget_const(g, dW, sizeof(float) * (nb + nb2 + 8));
    CHECK(rp_cuda_gemm_const_bytes(g) == 0 && rp_cuda_gemm_const_count(g) == 0,
          "%s const: forgetting the allocation left %zu bytes", pn, rp_cuda_gemm_const_bytes(g));
    bad |= run_c(g, 1, 1, M, N, K, dA, LDA, dB, LDB, dC, LDC, o[3]);
    rp_cuda_gemm_forget_all_const(g);
    CHECK(rp_cuda_gemm_const_bytes(g) == 0 && rp_cuda_gemm_const_count(g) == 0, "%s const: forget_all left %zu bytes",
          pn, rp_cuda_gemm_const_bytes(g));
    if (!bad) CHECK(bits_equal(o[3], o[2], nc), "%s const: re-made copy differs bitwise", pn);

    /* cap: a copy that does not fit is not made (same bits); lowering the cap keeps the
     * oldest copies that fit */
    if (half) {
        rp_cuda_gemm_set_const_cap(g, want1 - 1);
        CHECK(rp_cuda_gemm_const_cap(g) == want1 - 1, "%s const: cap reads %zu", pn, rp_cuda_gemm_const_cap(g));
        bad |= run_c(g, 1, 1, M, N, K, dA, LDA, dB, LDB, dC, LDC, o[3]);
        CHECK(rp_cuda_gemm_const_bytes(g) == 0, "%s const: a %zu-byte copy made under a cap of %zu", pn,
              rp_cuda_gemm_const_bytes(g), want1 - 1);
        if (!bad) CHECK(bits_equal(o[3], o[2], nc), "%s const: over the cap, differs bitwise from rp_cuda_gemm", pn);
        rp_cuda_gemm_set_const_cap(g, 0);
        bad |= run_c(g, 1, 1, M, N, K, dA, LDA, dB, LDB, dC, LDC, o[3]);   /* B: first */
        bad |= run_c(g, 1, 0, M, N2, K, dA, LDA, dB2, LDB2, dC, LDC, o[4]); /* B2: second */
        CHECK(rp_cuda_gemm_const_bytes(g) == want1 + want2, "%s const: uncapped: %zu bytes, want %zu", pn,
              rp_cuda_gemm_const_bytes(g), want1 + want2);
        rp_cuda_gemm_set_const_cap(g, want1 + want2 - 1);
        CHECK(rp_cuda_gemm_const_bytes(g) == want1 && rp_cuda_gemm_const_count(g) == 1,
              "%s const: lowering the cap left %zu bytes, want the oldest copy's %zu", pn, rp_cuda_gemm_const_bytes(g),
              want1);
        bad |= run_c(g, 1, 1, M, N, K, dA, LDA, dB, LDB, dC, LDC, o[3]);
        if (!bad) CHECK(bits_equal(o[3], o[2], nc), "%s const: kept copy differs bitwise", pn);
        rp_cuda_gemm_set_const_cap(g, 0);
    }

    /* validation as rp_cuda_gemm, naming the entry point and the value */
    rp_error err = {0};
    rp_status st = rp_cuda_gemm_const(g, 0, 1, M, N, K, 1.0f, dA, LDA, dB, K - 1, 0.0f, dC, LDC, &err);
    CHECK(st == RP_ERR_INVALID && strstr(err.msg, "rp_cuda_gemm_const") && strstr(err.msg, "ldb="),
          "%s const: bad ldb: status %s, \"%s\"", pn, rp_status_name(st), err.msg);
    float host[4] = {0};
    st = rp_cuda_gemm_const(g, 0, 1, 1, 1, 1, 1.0f, dA, 1, host, 1, 0.0f, dC, 1, &err);
    CHECK(st == RP_ERR_INVALID && strstr(err.msg, "B="), "%s const: host B: status %s, \"%s\"", pn,
          rp_status_name(st), err.msg);
    CU(cudaGetLastError());

    printf("const %s: rp_cuda_gemm_const x2 / rp_cuda_gemm bitwise %s; %zu + %zu bytes cached; forget, cap %s\n", pn,
           bad ? "NOT RUN" : "checked", want1, want2, bad ? "-" : "checked");
    rp_cuda_gemm_destroy(g); /* frees what it still holds (B's copy) */
    rp_cuda_gemm_destroy(g2);
    cudaFree(dA);
    cudaFree(dW);
    cudaFree(dC);
    free(A);
    free(B);
    free(B2);
    for (int i = 0; i < 6; i++) free(o[i]);
}

static rp_cuda_gemm_ctx *make_ctx(rp_cuda_prec p, rp_cuda_gemm_mode m) {
    rp_cuda_gemm_opts o = rp_cuda_gemm_opts_default();
    o.precision = p;
    o.mode = m;
    rp_cuda_gemm_ctx *g = NULL;
    rp_error err = {0};
    if (rp_cuda_gemm_create(&o, &g, &err) != RP_OK) {
        printf("FAIL: rp_cuda_gemm_create(%s, %s): %s (%s)\n", rp_cuda_prec_name(p), rp_cuda_gemm_mode_name(m),
               err.msg, err.where);
        exit(1);
    }
    return g;
}

int main(void) {
    require_device();
    /* Before any cuBLAS handle of this process exists. */
    rp_error err = {0};
    if (rp_cuda_gemm_workspace_config(&err) != RP_OK) {
        printf("FAIL: %s\n", err.msg);
        return 1;
    }
    struct cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, 0));
    printf("device 0: %s, %d SMs, cc %d.%d\n", prop.name, prop.multiProcessorCount, prop.major, prop.minor);
    printf("%s\n", rp_cuda_gemm_workspace_config_note());
    CHECK(getenv("CUBLAS_WORKSPACE_CONFIG") != NULL, "CUBLAS_WORKSPACE_CONFIG not in the environment");

    ctxs G;
    for (int p = 0; p < RP_CUDA_PREC_COUNT; p++) {
        G.det[p] = make_ctx((rp_cuda_prec)p, RP_CUDA_GEMM_DETERMINISTIC);
        G.det2[p] = make_ctx((rp_cuda_prec)p, RP_CUDA_GEMM_DETERMINISTIC);
        G.fast[p] = make_ctx((rp_cuda_prec)p, RP_CUDA_GEMM_FAST);
    }
    char desc[512];
    rp_cuda_gemm_describe(G.det[0], desc, sizeof desc);
    printf("%s\n", desc);

    test_convert();
    test_edges(G.det[RP_CUDA_PREC_BF16]);
    test_edges(G.fast[RP_CUDA_PREC_FP32]);
    test_cache(G.det[RP_CUDA_PREC_FP32]);
    for (int p = 0; p < RP_CUDA_PREC_COUNT; p++) test_const((rp_cuda_prec)p);

    static const shape shapes[] = {
        {1, 1, 1, 0, 1.0f, 0.0f, "1x1x1"},
        {7, 13, 5, 0, 1.0f, 0.0f, "odd"},
        {7, 13, 5, 3, 0.5f, 0.25f, "ld+3, beta"},
        {129, 65, 257, 0, 1.0f, 0.0f, "odd, multi-tile"},
        {129, 65, 257, 5, 1.0f, 1.0f, "ld+5, beta=1"},
        {64, 48, 1, 0, 1.0f, 0.0f, "K=1"},
        {33, 17, 1, 2, 2.0f, -0.5f, "K=1, ld+2, beta"},
        {1, 300, 77, 1, 1.0f, 0.0f, "M=1"},
        {300, 1, 77, 0, 1.0f, 0.0f, "N=1"},
        {256, 1152, 1152, 8, 1.0f, 1.0f, "DiT hidden, ld+8, beta=1"},
        {512, 3072, 3072, 0, 1.0f, 0.0f, "FLUX hidden"},
    };
    uint64_t seed = 1;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = 0; t < 4; t++) test_case(&G, &shapes[i], t >> 1, t & 1, seed++);

    printf("fast vs deterministic: %d of %d cases differ bitwise; fast repeats differed in %d (reported, not "
           "asserted)\n", fast_differs, fast_cases, fast_nondet);
    int n = rp_cuda_gemm_cache_size(G.det[RP_CUDA_PREC_BF16]);
    printf("bf16 deterministic ctx: %d cached algorithms, e.g.\n", n);
    for (int i = 0; i < n && i < 4; i++) {
        char line[700];
        rp_cuda_gemm_cache_entry(G.det[RP_CUDA_PREC_BF16], i, line, sizeof line);
        printf("  %s\n", line);
    }
    for (int p = 0; p < RP_CUDA_PREC_COUNT; p++) {
        rp_cuda_gemm_destroy(G.det[p]);
        rp_cuda_gemm_destroy(G.det2[p]);
        rp_cuda_gemm_destroy(G.fast[p]);
    }
    return finish("all GPU GEMM checks passed");
}
#endif
