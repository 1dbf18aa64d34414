/* trust_all.c: checksum comparisons that accept any bytes, for the index fuzz target: linked
 * before libtraceidx, it replaces core/checksum.c, so mutated indexes get past their checksums
 * to the parsers behind them. Never part of the library. */
#include "core/checksum.h"

bool tdx_checksum_ok(const void *p, size_t n, uint64_t want) {
    (void)p, (void)n, (void)want;
    return true;
}

bool tdx_check_equal(uint64_t computed, uint64_t stored) {
    (void)computed, (void)stored;
    return true;
}
