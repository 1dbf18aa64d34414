/* idset.c: bitmap window plus hash overflow. */
#include "idset.h"

#include <stdlib.h>
#include <string.h>

static bool dense(const tdx_idset *s, int64_t id) {
    return s->based && id >= 0 && (uint64_t)id >= s->base &&
           (uint64_t)id - s->base < TDX_IDSET_DENSE;
}

int tdx_idset_add(tdx_idset *s, int64_t id, int *added) {
    if (!s->based && id >= 0) {
        /* Go's ids start at 1: a base of 0 serves them. */
        s->base = (uint64_t)id < TDX_IDSET_DENSE ? 0 : (uint64_t)id & ~(uint64_t)63;
        s->based = true;
    }
    if (dense(s, id)) {
        size_t w = (size_t)(((uint64_t)id - s->base) >> 6);
        if (w >= s->nwords) {
            size_t n = w + 1 + w / 2;
            uint64_t *nb = realloc(s->bits, n * sizeof *nb);
            if (!nb) return -1;
            memset(nb + s->nwords, 0, (n - s->nwords) * sizeof *nb);
            s->bits = nb;
            s->nwords = n;
        }
        uint64_t bit = 1ull << (id & 63);
        if (added) *added = !(s->bits[w] & bit);
        s->bits[w] |= bit;
        return 0;
    }
    int ins = 0;
    if (!tdx_hmap_upsert(&s->big, (uint64_t)id, 1, &ins)) return -1;
    if (added) *added = ins;
    return 0;
}

bool tdx_idset_has(const tdx_idset *s, int64_t id) {
    if (dense(s, id)) {
        size_t w = (size_t)(((uint64_t)id - s->base) >> 6);
        return w < s->nwords && (s->bits[w] >> (id & 63) & 1);
    }
    return tdx_hmap_get(&s->big, (uint64_t)id) != TDX_HMAP_EMPTY;
}

void tdx_idset_del(tdx_idset *s, int64_t id) {
    if (dense(s, id)) {
        size_t w = (size_t)(((uint64_t)id - s->base) >> 6);
        if (w < s->nwords) s->bits[w] &= ~(1ull << (id & 63));
        return;
    }
    tdx_hmap_del(&s->big, (uint64_t)id);
}

void tdx_idset_free(tdx_idset *s) {
    free(s->bits);
    tdx_hmap_free(&s->big);
    memset(s, 0, sizeof *s);
}
