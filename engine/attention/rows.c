/* rows.c — the per-row float kernels of the tiled attention variants
 * (contracts in internal.h). Built per ISA with RP_SIMD_CLONES; fixed lanes,
 * no FMA contraction (-ffp-contract=off), so the bits do not depend on the ISA. */
#include <math.h>

#include "../fastmath.h"
#include "internal.h"

RP_SIMD_CLONES
float rp_attn_rowmax(const float *x, int n) {
    /* 8 independent lanes: one running max is a 4-cycle dependency per element.
     * max is exact, so the lane split cannot change the result. */
    float m8[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                   -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int j = 0;
    for (; j + 8 <= n; j += 8)
        for (int q = 0; q < 8; q++) m8[q] = x[j + q] > m8[q] ? x[j + q] : m8[q];
    for (; j < n; j++) m8[0] = x[j] > m8[0] ? x[j] : m8[0];
    float mx = m8[0];
    for (int q = 1; q < 8; q++) mx = m8[q] > mx ? m8[q] : mx;
    return mx;
}

RP_SIMD_CLONES
float rp_attn_exp_sum(float *x, int n, float mx) {
    if (mx == -INFINITY) { /* nothing to attend to yet: weights 0, not exp(NaN) */
        for (int j = 0; j < n; j++) x[j] = 0.0f;
        return 0.0f;
    }
    for (int j = 0; j < n; j++) x[j] = rp_expf(x[j] - mx);
    float s8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int j = 0;
    for (; j + 8 <= n; j += 8)
        for (int q = 0; q < 8; q++) s8[q] += x[j + q];
    for (; j < n; j++) s8[j & 7] += x[j];
    return ((s8[0] + s8[1]) + (s8[2] + s8[3])) + ((s8[4] + s8[5]) + (s8[6] + s8[7]));
}

RP_SIMD_CLONES
void rp_attn_scale(float *x, int n, float a) {
    for (int j = 0; j < n; j++) x[j] = x[j] * a;
}

RP_SIMD_CLONES
void rp_attn_axpy(float *acc, const float *x, int n, float f) {
    for (int j = 0; j < n; j++) {
        float t = x[j] * f;
        acc[j] = acc[j] + t;
    }
}
