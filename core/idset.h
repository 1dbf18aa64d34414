/* idset.h: a set of integer ids (goroutines): a bitmap over a window of ids from the first one
 * added, since ids are handed out in sequence, and a hash for the ids outside it. */
#ifndef TDX_IDSET_H
#define TDX_IDSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hmap.h"

#define TDX_IDSET_DENSE (1ull << 26) /* ids the bitmap covers (8 MiB of bits at most) */

typedef struct tdx_idset {
    uint64_t *bits;
    size_t nwords;
    uint64_t base; /* the bitmap's first id (a multiple of 64) */
    bool based;
    tdx_hmap big; /* the ids outside the window */
} tdx_idset;

/* Adds id; *added (if not NULL) tells whether it was absent. 0, or -1 on memory exhaustion. */
int tdx_idset_add(tdx_idset *s, int64_t id, int *added);
bool tdx_idset_has(const tdx_idset *s, int64_t id);
void tdx_idset_del(tdx_idset *s, int64_t id);
void tdx_idset_free(tdx_idset *s);

#endif
