/* hmap.c: linear-probing hash map with backward-shift deletion. */
#include "hmap.h"

#include "mem.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void tdx_hmap_free(tdx_hmap *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

void tdx_hmap_clear(tdx_hmap *m) {
    if (m->vals) memset(m->vals, 0xff, (m->mask + 1) * sizeof *m->vals);
    m->n = 0;
}

static int rehash(tdx_hmap *m, size_t cap, bool huge) {
    uint64_t *keys = malloc(cap * sizeof *keys);
    uint32_t *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    if (huge) {
        tdx_mem_huge(keys, cap * sizeof *keys);
        tdx_mem_huge(vals, cap * sizeof *vals);
    }
    memset(vals, 0xff, cap * sizeof *vals);
    size_t mask = cap - 1;
    if (m->vals) {
        for (size_t i = 0; i <= m->mask; i++) {
            if (m->vals[i] == TDX_HMAP_EMPTY) continue;
            size_t j = (size_t)tdx_hash64(m->keys[i]) & mask;
            while (vals[j] != TDX_HMAP_EMPTY) j = (j + 1) & mask;
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->mask = mask;
    return 0;
}

uint32_t *tdx_hmap_upsert(tdx_hmap *m, uint64_t key, uint32_t init, int *inserted) {
    if (!m->vals || (m->n + 1) * 4 > (m->mask + 1) * 3) {
        size_t cap = m->vals ? (m->mask + 1) * 2 : 16;
        if (rehash(m, cap, false)) return NULL;
    }
    size_t i = (size_t)tdx_hash64(key) & m->mask;
    for (;;) {
        if (m->vals[i] == TDX_HMAP_EMPTY) {
            m->keys[i] = key;
            m->vals[i] = init;
            m->n++;
            if (inserted) *inserted = 1;
            return &m->vals[i];
        }
        if (m->keys[i] == key) {
            if (inserted) *inserted = 0;
            return &m->vals[i];
        }
        i = (i + 1) & m->mask;
    }
}

int tdx_hmap_reserve(tdx_hmap *m, size_t n) {
    size_t cap = m->vals ? m->mask + 1 : 16;
    while (n * 4 > cap * 3) cap *= 2; /* the load upsert keeps */
    return m->vals && cap == m->mask + 1 ? 0 : rehash(m, cap, true);
}

int tdx_hmap_put(tdx_hmap *m, uint64_t key, uint32_t val) {
    uint32_t *slot = tdx_hmap_upsert(m, key, val, NULL);
    if (!slot) return -1;
    *slot = val;
    return 0;
}

void tdx_hmap_del(tdx_hmap *m, uint64_t key) {
    if (!m->n) return;
    size_t i = (size_t)tdx_hash64(key) & m->mask;
    for (;;) {
        if (m->vals[i] == TDX_HMAP_EMPTY) return;
        if (m->keys[i] == key) break;
        i = (i + 1) & m->mask;
    }
    /* Shift later members of the probe run back so lookups never stop early. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (m->vals[j] == TDX_HMAP_EMPTY) break;
        size_t home = (size_t)tdx_hash64(m->keys[j]) & m->mask;
        /* j's entry may move to i only if its home is not in the cyclic range (i, j]. */
        int in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (in_range) continue;
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        i = j;
    }
    m->vals[i] = TDX_HMAP_EMPTY;
    m->n--;
}
