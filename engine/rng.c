/* rng.c — Philox4x32-10 (Salmon et al., SC'11, as Random123) and Gaussian noise.
 *
 * Every draw is a pure function of (seed, index, stream, element), so noise
 * never depends on how a batch is split across ranks, devices or threads.
 * Box-Muller runs in double and is rounded to float once at the end, so the
 * float result is bitwise the same wherever libm's double log/sin/cos agree
 * (same glibc: always; different libms: all but astronomically rare cases where
 * a sub-ulp double difference straddles a float rounding boundary). */
#include "rng.h"

#include <assert.h>
#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* golden ratio */
#define PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

void rp_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r > 0) { k0 += PHILOX_W0; k1 += PHILOX_W1; } /* key bump between rounds */
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* Box-Muller of one pair of words -> two normals (see rng.h for the exact recipe). */
static void box_muller(uint32_t w0, uint32_t w1, float *z0, float *z1) {
    const double two_m32 = 1.0 / 4294967296.0;
    const double two_pi = 6.283185307179586476925286766559;
    double u1 = ((double)w0 + 1.0) * two_m32; /* (0, 1]: log never sees 0 */
    double u2 = (double)w1 * two_m32;         /* [0, 1) */
    double r = sqrt(-2.0 * log(u1));
    *z0 = (float)(r * cos(two_pi * u2));
    *z1 = (float)(r * sin(two_pi * u2));
}

void rp_randn_at(float *out, size_t first, size_t n, uint64_t seed, uint64_t index, uint32_t stream) {
    assert(out || n == 0);
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    size_t j = first, end = first + n;
    assert(end >= first);
    while (j < end) {
        /* counter word 0 is 32 bits: 2^34 elements per (index, stream) is the limit */
        assert(j / 4 <= UINT32_MAX);
        const uint32_t ctr[4] = {(uint32_t)(j / 4), stream, (uint32_t)index, (uint32_t)(index >> 32)};
        uint32_t w[4];
        float z[4];
        rp_philox4x32_10(ctr, key, w);
        box_muller(w[0], w[1], &z[0], &z[1]);
        box_muller(w[2], w[3], &z[2], &z[3]);
        size_t blk = j - j % 4;
        for (size_t k = j % 4; k < 4 && blk + k < end; k++) out[blk + k - first] = z[k];
        j = blk + 4;
    }
}

void rp_randn(float *out, size_t n, uint64_t seed, uint64_t index, uint32_t stream) {
    rp_randn_at(out, 0, n, seed, index, stream);
}

uint64_t rp_fnv1a64(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV offset basis */
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull; /* FNV prime */
    }
    return h;
}
