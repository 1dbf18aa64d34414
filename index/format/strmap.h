/* strmap.h: the string table's lookup, from a string's hash to its id, in bounded memory: recent
 * strings in a hash table, the rest spilled to a sorted scratch file behind a Bloom filter. */
#ifndef TDX_STRMAP_H
#define TDX_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/mem.h"
#include "index/common/scratch.h"

/* A string is known by 96 bits of its hash: lo (64) and hi (32). A trace's distinct strings
 * grow with it (a log message each, say), so the table in memory holds at most the budget; when
 * it is full its entries are merged into the sorted run in the scratch file and it starts empty.
 * A lookup the table misses asks the filter, then reads one 4 KiB block of the run; a string
 * found there comes back into the table. Function names, categories and other strings that
 * recur therefore stay in memory, and a new string costs a filter probe. */
typedef struct tdx_strmap_ent {
    uint64_t lo;
    uint32_t hi, id; /* id 0: a free slot */
} tdx_strmap_ent;

typedef TDX_VEC(tdx_strmap_ent) tdx_strmap_ents;

typedef struct tdx_strmap {
    tdx_strmap_ent *tab; /* open addressing, at most three quarters full */
    size_t cap, n, max_cap;
    /* the run: entries sorted by (lo, hi), in blocks of 256; the first key of each block */
    tdx_scratch run;
    uint64_t run_n;
    tdx_strmap_ents first;
    /* a blocked Bloom filter over the run: 64-byte blocks, 7 bits set in one */
    uint64_t *bloom;
    size_t bloom_blocks;
    char *beside;               /* where the scratch files go (a copy) */
    uint64_t spills, run_reads; /* for tests and measurements */
} tdx_strmap;

/* budget: bytes the table in memory may take, growing included (at least 64 KiB are used; the
 * Bloom filter, 10 bits per string in the run, comes on top); the scratch file goes beside
 * `beside` when it is first needed. 0, or -1 with err set. */
int tdx_strmap_init(tdx_strmap *m, const char *beside, size_t budget, tdx_err *err);
void tdx_strmap_free(tdx_strmap *m);

/* The id stored for (lo, hi), 0 when there is none, or UINT32_MAX with err set (the run could
 * not be read back, or memory). */
uint32_t tdx_strmap_get(tdx_strmap *m, uint64_t lo, uint32_t hi, tdx_err *err);

/* Stores id (1 .. UINT32_MAX - 1) for a key tdx_strmap_get did not find. 0, or -1 with err set
 * (memory, or the run could not be written: a full disk or a file-size limit). */
int tdx_strmap_add(tdx_strmap *m, uint64_t lo, uint32_t hi, uint32_t id, tdx_err *err);

#endif
