/* fastmath.h — a float exp that is the same on every machine and vectorises.
 *
 * Why our own: libm's expf differs between glibc versions and is an opaque
 * call the compiler cannot vectorise; the transformer's GELU and the attention
 * softmax call it billions of times. This one is plain IEEE float arithmetic
 * (the project builds with -ffp-contract=off, so no FMA changes the bits):
 *   n = round(x / ln2) (magic-number rounding), r = x - n ln2 (Cody-Waite,
 *   ln2 split in a 16-bit head, so n * LN2_HI is exact for |n| <= 2^8),
 *   exp(r) by its degree-7 Taylor polynomial on |r| <= ln2/2 (truncation
 *   (ln2/2)^8 / 8! = 5.3e-9 < u/11), scaled by 2^n in two exact steps.
 * Accuracy: <= 2 ulp for normal results (tests/unit/test_ops.c checks it over a
 * dense sweep). Results below FLT_MIN (x < -87.33655) flush to +0, x > 88.72284
 * gives +Inf, NaN gives NaN. */
#ifndef REPRO_FASTMATH_H
#define REPRO_FASTMATH_H

#include <stdint.h>
#include <string.h>

/* RP_SIMD_CLONES on an elementwise kernel compiles it for AVX-512, AVX2 and
 * baseline x86-64 and picks one at load time (GCC ifunc). The bits do not
 * depend on the pick: each element sees the same IEEE operations in the same
 * order (no FMA contraction: -ffp-contract=off; no vectorised float reduction:
 * no -ffast-math), only more lanes at once. tests/isa checks this. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(REPRO_NO_CLONES)
#define RP_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RP_SIMD_CLONES
#endif

static inline float rp_f32_from_bits(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }

static inline float rp_expf(float x) {
    const float LOG2E = 1.44269504088896341f;
    const float LN2_HI = 0.693145751953125f;      /* 16 significant bits */
    const float LN2_LO = 1.42860682030941723e-6f; /* ln2 - LN2_HI */
    const float MAGIC = 12582912.0f;              /* 1.5 * 2^23: float add rounds to integer */
    float xc = x < -87.5f ? -87.5f : (x > 88.75f ? 88.75f : x); /* keeps n in [-127, 129] */
    float t = xc * LOG2E + MAGIC;
    float nf = t - MAGIC;
    int32_t n = (int32_t)nf;
    float r = (xc - nf * LN2_HI) - nf * LN2_LO;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t n1 = n / 2, n2 = n - n1;              /* 2^n in two steps: no overflow in between */
    float y = p * rp_f32_from_bits((uint32_t)(n1 + 127) << 23) * rp_f32_from_bits((uint32_t)(n2 + 127) << 23);
    y = x < -87.33654f ? 0.0f : y;
    y = x > 88.72283f ? __builtin_inff() : y;
    return x != x ? x : y;
}

#endif
