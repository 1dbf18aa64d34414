/* checksum.c: the index's checksum comparisons. */
#include "checksum.h"

#include <xxhash.h>

bool tdx_checksum_ok(const void *p, size_t n, uint64_t want) {
    return XXH3_64bits(p, n) == want;
}

bool tdx_check_equal(uint64_t computed, uint64_t stored) {
    return computed == stored;
}
