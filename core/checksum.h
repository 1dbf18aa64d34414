/* checksum.h: whether bytes still match the XXH3-64 an index stored for them (its header, section
 * table, sections, blocks and records). */
#ifndef TDX_CHECKSUM_H
#define TDX_CHECKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every reader-side comparison goes through these two (one object file), so that a fuzzing
 * build can link tests/fuzz/trust_all.c instead and reach the parsers behind the checksums with
 * arbitrary bytes. */

/* XXH3-64 (seed 0) of p[0..n) equals want. */
bool tdx_checksum_ok(const void *p, size_t n, uint64_t want);
/* A check value computed some other way (a seeded or truncated hash) equals the stored one. */
bool tdx_check_equal(uint64_t computed, uint64_t stored);

#endif
