/* hmap.h: an open-addressing hash map from 64-bit keys to 32-bit values.
 * Used for every sparse id (strings, stacks, goroutines, threads): ids may be huge, never index by
 * them. */
#ifndef TDX_HMAP_H
#define TDX_HMAP_H

#include <stddef.h>
#include <stdint.h>

#define TDX_HMAP_EMPTY UINT32_MAX /* a value that is never stored; marks free slots */

typedef struct tdx_hmap {
    uint64_t *keys;
    uint32_t *vals;
    size_t mask; /* capacity - 1 (capacity is a power of two), or 0 when unallocated */
    size_t n;
} tdx_hmap;

static inline uint64_t tdx_hash64(uint64_t x) {
    /* splitmix64 finalizer: cheap and good enough to spread sequential ids */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

void tdx_hmap_free(tdx_hmap *m);
void tdx_hmap_clear(tdx_hmap *m);

/* Returns the value of key, or TDX_HMAP_EMPTY. */
static inline uint32_t tdx_hmap_get(const tdx_hmap *m, uint64_t key) {
    if (!m->n) return TDX_HMAP_EMPTY;
    size_t i = (size_t)tdx_hash64(key) & m->mask;
    for (;;) {
        uint32_t v = m->vals[i];
        if (v == TDX_HMAP_EMPTY) return TDX_HMAP_EMPTY;
        if (m->keys[i] == key) return v;
        i = (i + 1) & m->mask;
    }
}

/* Starts loading key's slot, for a lookup or insert a few keys later (a hint: the map is
 * unchanged, and an unallocated map is fine). */
static inline void tdx_hmap_prefetch(const tdx_hmap *m, uint64_t key) {
    if (!m->vals) return;
    size_t i = (size_t)tdx_hash64(key) & m->mask;
    __builtin_prefetch(&m->vals[i], 1);
    __builtin_prefetch(&m->keys[i], 1);
}

/* Inserts or overwrites; val must not be TDX_HMAP_EMPTY. Returns 0, or -1 on allocation failure. */
int tdx_hmap_put(tdx_hmap *m, uint64_t key, uint32_t val);

/* Returns a pointer to the value slot of key, inserting `init` first when absent (NULL on
 * allocation failure). *inserted tells which happened. The pointer is valid until the next put. */
uint32_t *tdx_hmap_upsert(tdx_hmap *m, uint64_t key, uint32_t init, int *inserted);

/* Makes room for n keys in all (no rehash until there are more). Returns 0, or -1 on allocation
 * failure (the map is unchanged). A table made here is filled at once (a restored checkpoint),
 * so a large one is asked for huge pages (tdx_mem_huge); a map that grows by upserts is not:
 * the build's maps grow slowly, and there huge pages cost RSS and time. */
int tdx_hmap_reserve(tdx_hmap *m, size_t n);

/* Removes key if present (backward-shift deletion keeps probe chains intact). */
void tdx_hmap_del(tdx_hmap *m, uint64_t key);

#endif
