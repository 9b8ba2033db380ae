/* rng.h — counter-based random numbers (Philox4x32-10) and Gaussian noise.
 *
 * Counter-based so any element can be computed independently of layout: the
 * noise of sample i is keyed by (seed, global sample index, stream) and is the
 * same whatever the batch split, rank count or device. */
#ifndef REPRO_RNG_H
#define REPRO_RNG_H

#include <stddef.h>
#include <stdint.h>

/* One Philox4x32-10 block: ctr (4 words), key (2 words) -> out (4 words).
 * Matches Random123's philox4x32 with 10 rounds (known-answer tests in tests/). */
void rp_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Streams: which use of randomness a draw serves. */
enum {
    RP_STREAM_INIT_NOISE = 0,      /* initial latent noise */
    RP_STREAM_STEP_NOISE_BASE = 16 /* ancestral noise of step s uses BASE + s */
};

/* out (n): standard normal floats for (seed, index, stream). Element j comes from
 * Philox block counter {j/4, stream, index_lo, index_hi}, key {seed_lo, seed_hi};
 * each block's 4 words give 2 Box-Muller pairs computed in double:
 * u1 = (w0 + 1) * 2^-32 in (0, 1], u2 = w1 * 2^-32, z0 = r cos(2 pi u2),
 * z1 = r sin(2 pi u2), r = sqrt(-2 ln u1). */
void rp_randn(float *out, size_t n, uint64_t seed, uint64_t index, uint32_t stream);

/* Elements [first, first + n) of the same sequence rp_randn draws: out[k] equals
 * element first + k of rp_randn(.., first + n, ..). Lets a rank or device fill
 * only its own slice of a tensor's noise. */
void rp_randn_at(float *out, size_t first, size_t n, uint64_t seed, uint64_t index, uint32_t stream);

/* 64-bit FNV-1a of a string (used to give each weight tensor its own stream). */
uint64_t rp_fnv1a64(const char *s);

#endif
