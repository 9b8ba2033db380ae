/* test_rng.h — the tests' input generator: splitmix64, deterministic, no global state
 * (the caller owns the seed). Header-only; one copy for every test that builds inputs. */
#ifndef REPRO_TESTS_TEST_RNG_H
#define REPRO_TESTS_TEST_RNG_H

#include <stdint.h>

static inline uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [-1, 1), 24 random bits */
static inline float rng_unif(uint64_t *s) { return (float)((rng_next(s) >> 40) * 0x1p-23 - 1.0); }

#endif
