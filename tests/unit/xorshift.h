/* xorshift.h: the unit tests' pseudo-random numbers: xorshift64 from a fixed seed, so every run
 * draws the same sequence and a failure repeats. */
#ifndef TDX_TEST_XORSHIFT_H
#define TDX_TEST_XORSHIFT_H

#include <stdint.h>

static inline uint64_t xorshift64(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#endif
