/* test_cuda_attention_canonical.c — rp_cuda_attention_canonical (engine/cuda/attention_canonical.cu)
 * against the CPU's rp_attention_canonical, bit for bit: both run the same sequence of fp32
 * operations per value (fma chains, the 8-lane max and sum, rp_expf, the fold's products and
 * sums, one division), each correctly rounded on both sides, so there is no tolerance to
 * choose — any differing bit fails (a NaN matches any NaN: the GPU's arithmetic returns the
 * canonical NaN where x86 keeps the payload, and no layout can move a NaN's place).
 *
 * Cases: every block size the segments give (Bk 1 for an odd split segment, 2 .. 64, a whole
 * segment's 64-key blocks with a shorter last one), the models' segment lists (DiT and the
 * VAE: one; FLUX: text then image; SD3: image then whole text; empty segments), head dims of
 * the models (64, 72, 128), 30 (not a multiple of 4) and the VAE's 512 and 200 (keys and
 * values read from global memory), key masks with a
 * fully masked row, Tk = 0, a NaN key, fp32 and bf16, each with every tiling the kernel can take
 * (32, 16 or 8 query rows a block, keys staged or read from global memory); then the invariance
 * on the device itself:
 * query rows computed alone are the whole call's bits. Exits 77 ("SKIP: ...") without a CUDA
 * build or device, 1 on any failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention/attention.h"
#include "engine/ctx.h"

#ifndef REPRO_HAVE_CUDA
int main(void) {
    printf("SKIP: this build has no CUDA (nvcc was not found at configure time)\n");
    return 77;
}
#else
#include <cuda_runtime.h>

#include "engine/cuda/cuda_attention.h"
#include "tests/common/cuda_check.h"
#include "tests/common/test_rng.h"

static int same(float a, float b) { return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof a); }

typedef struct tcase {
    const char *what;
    int B, H, Tq, Tk, D;
    int nseg, nsplit, seg[3]; /* nseg 0: seg NULL (one split segment) */
    int mask;                 /* 1: keys masked in a pattern, batch item 1 fully masked */
    int nan_key;              /* 1: one k value is NaN */
} tcase;

/* One case in fp32 or bf16: the device's out against the CPU's, bitwise; then rows
 * [r0, r0 + n) of q alone on the device against the whole call. */
static void check_case(const tcase *t, int bf16, uint64_t seed) {
    const size_t nq = (size_t)t->B * t->H * t->Tq * t->D, nk = (size_t)t->B * t->H * t->Tk * t->D;
    float *q = xmalloc(sizeof(float) * nq), *k = xmalloc(sizeof(float) * (nk + 1)),
          *v = xmalloc(sizeof(float) * (nk + 1));
    float *ref = xmalloc(sizeof(float) * nq), *got = xmalloc(sizeof(float) * nq);
    uint8_t *mask = t->mask ? xmalloc((size_t)t->B * t->Tk) : NULL;
    uint64_t s = seed;
    for (size_t i = 0; i < nq; i++) q[i] = 2.0f * rng_unif(&s);
    for (size_t i = 0; i < nk; i++) k[i] = 2.0f * rng_unif(&s);
    for (size_t i = 0; i < nk; i++) v[i] = rng_unif(&s);
    if (t->nan_key && nk) k[nk / 3] = NAN;
    if (mask)
        for (int b = 0; b < t->B; b++)
            for (int j = 0; j < t->Tk; j++) mask[(size_t)b * t->Tk + j] = b == 1 ? 0 : (j % 7 != 3);
    const int *seg = t->nseg ? t->seg : NULL;
    const float scale = 1.0f / sqrtf((float)t->D);
    rp_ctx ctx = rp_ctx_default();
    ctx.numerics = RP_NUMERICS_INVARIANT;
    ctx.precision = bf16 ? RP_PREC_BF16 : RP_PREC_FP32;
    rp_error err = {0};
    CHECK(rp_attention_canonical(&ctx, ref, q, k, v, mask, t->B, t->H, t->Tq, t->Tk, t->D, scale, seg, t->nseg,
                                 t->nsplit, &err) == RP_OK,
          "%s: CPU: %s", t->what, err.msg);
    float *dq = to_device(q, sizeof(float) * nq), *dk = to_device(k, sizeof(float) * nk),
          *dv = to_device(v, sizeof(float) * nk), *dout = to_device(NULL, sizeof(float) * nq);
    unsigned char *dm = mask ? to_device(mask, (size_t)t->B * t->Tk) : NULL;
    const rp_status st = rp_cuda_attention_canonical(dout, dq, dk, dv, dm, t->B, t->H, t->Tq, t->Tk, t->D, scale, seg,
                                                     t->nseg, t->nsplit, bf16, 0, &err);
    CHECK(st == RP_OK, "%s: %s", t->what, err.msg);
    CU(cudaDeviceSynchronize());
    CU(cudaMemcpy(got, dout, sizeof(float) * nq, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (size_t e = 0; e < nq; e++)
        if (!same(got[e], ref[e]) && bad++ < 3)
            printf("  %s %s: out[%zu] gpu %a cpu %a\n", t->what, bf16 ? "bf16" : "fp32", e, (double)got[e],
                   (double)ref[e]);
    CHECK(!bad, "%s %s: %d of %zu values not bitwise the CPU's rp_attention_canonical", t->what,
          bf16 ? "bf16" : "fp32", bad, nq);
    if (!bad) printf("ok   %-44s %s (B %d H %d Tq %d Tk %d D %d)\n", t->what, bf16 ? "bf16" : "fp32", t->B, t->H,
                     t->Tq, t->Tk, t->D);
    /* every tiling the kernel can take (the device picks by its shared memory: smaller GPUs
     * take 16 or 8 rows a block, or keys read from global memory): the same bits */
    static const int TILINGS[][2] = {{32, 1}, {16, 1}, {8, 1}, {32, 0}, {8, 0}};
    for (size_t ti = 0; ti < sizeof TILINGS / sizeof TILINGS[0]; ti++) {
        const int rows = TILINGS[ti][0], staged = TILINGS[ti][1];
        if (staged && t->D > 128) continue;
        CU(cudaMemset(dout, 0xff, sizeof(float) * nq)); /* NaN: a value not written shows */
        CHECK(rp_cuda_attention_canonical_tiled(dout, dq, dk, dv, dm, t->B, t->H, t->Tq, t->Tk, t->D, scale, seg,
                                                t->nseg, t->nsplit, bf16, rows, staged, 0, &err) == RP_OK,
              "%s, %d rows%s: %s", t->what, rows, staged ? " staged" : "", err.msg);
        CU(cudaMemcpy(got, dout, sizeof(float) * nq, cudaMemcpyDeviceToHost));
        int diff = 0;
        for (size_t e = 0; e < nq; e++) diff += !same(got[e], ref[e]);
        CHECK(!diff, "%s %s, %d rows a block%s: %d values not the CPU's bits", t->what, bf16 ? "bf16" : "fp32", rows,
              staged ? ", keys staged" : ", keys from global memory", diff);
    }
    /* rows [r0, r0 + n) of every (b, h) alone: the sharded query rows of a dp / sp rank */
    const int r0 = t->Tq / 3, n = t->Tq - r0 < 5 ? t->Tq - r0 : 5;
    if (n > 0 && t->B * t->H == 1 && !t->mask) {
        CHECK(rp_cuda_attention_canonical(dout, dq + (size_t)r0 * t->D, dk, dv, NULL, 1, 1, n, t->Tk, t->D, scale,
                                          seg, t->nseg, t->nsplit, bf16, 0, &err) == RP_OK,
              "%s rows alone: %s", t->what, err.msg);
        CU(cudaMemcpy(got, dout, sizeof(float) * (size_t)n * t->D, cudaMemcpyDeviceToHost));
        int diff = 0;
        for (size_t e = 0; e < (size_t)n * t->D; e++) diff += !same(got[e], ref[(size_t)r0 * t->D + e]);
        CHECK(!diff, "%s: query rows [%d, %d) alone are not the whole call's bits", t->what, r0, r0 + n);
    }
    CU(cudaFree(dq));
    CU(cudaFree(dk));
    CU(cudaFree(dv));
    CU(cudaFree(dout));
    if (dm) CU(cudaFree(dm));
    free(q); free(k); free(v); free(ref); free(got); free(mask);
}

int main(void) {
    require_device();
    struct cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, 0));
    printf("device 0: %s, %d SMs, cc %d.%d\n", prop.name, prop.multiProcessorCount, prop.major, prop.minor);
    static const tcase CASES[] = {
        {"one segment, Bk 32 (256 keys)", 2, 3, 37, 256, 64, 0, 0, {0}, 0, 0},
        {"one odd segment, Bk 1 (45 keys)", 1, 2, 19, 45, 72, 0, 0, {0}, 0, 0},
        {"Bk 2, 4, 8 keys a block (48 = 16 x 3)", 1, 1, 33, 48, 72, 0, 0, {0}, 0, 0},
        {"DiT-tiny-like: 64 tokens, D 72", 1, 1, 64, 64, 72, 0, 0, {0}, 0, 0},
        {"FLUX: text 32 | image 256, D 128", 1, 2, 288, 288, 128, 3, 2, {32, 256, 0}, 0, 0},
        {"SD3: image 256 | whole text 77 (64 + 13)", 1, 2, 333, 333, 64, 3, 2, {0, 256, 77}, 0, 0},
        {"whole segment only (150 keys: 64 64 22)", 1, 1, 40, 150, 64, 3, 2, {0, 0, 150}, 0, 0},
        {"key mask, item 1 fully masked", 2, 2, 21, 96, 64, 0, 0, {0}, 1, 0},
        {"VAE mid-block: one head, D 512", 1, 1, 64, 64, 512, 0, 0, {0}, 0, 0},
        {"head dim 30 (not a multiple of 4)", 1, 2, 21, 80, 30, 0, 0, {0}, 0, 0},
        {"head dim 200 (keys read from global)", 1, 1, 17, 96, 200, 3, 2, {16, 80, 0}, 0, 0},
        {"no keys (Tk 0): zeros", 1, 2, 7, 0, 64, 0, 0, {0}, 0, 0},
        {"a NaN key", 1, 1, 9, 64, 64, 0, 0, {0}, 0, 1},
        {"Tq 1, Tk 1", 1, 1, 1, 1, 64, 0, 0, {0}, 0, 0},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        for (int bf16 = 0; bf16 < 2; bf16++) check_case(&CASES[i], bf16, 500 + 7 * i + bf16);
    rp_error err = {0};
    const int bad_seg[2] = {10, 5};
    CHECK(rp_cuda_attention_canonical(NULL, NULL, NULL, NULL, NULL, 1, 1, 1, 16, 64, 1.0f, bad_seg, 2, 1, 0, 0, &err) ==
                  RP_ERR_INVALID && strstr(err.msg, "sum to 15"),
          "segments summing to 15 for Tk 16 not refused (%s)", err.msg);
    return finish("OK: every case bitwise the CPU's canonical attention");
}
#endif
