/* regstats.h: go tool trace's user region table (/userregions): every region of Go's summary,
 * grouped by its type and the outermost frame of the stack it began with, each group with its
 * count and Go's histogram of the regions' durations; and its section REGIONS. */
#ifndef TDX_REGSTATS_H
#define TDX_REGSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/gen.h"
#include "core/hmap.h"
#include "core/mem.h"
#include "index/analysis/timehist.h"

/* A group's key: strings are the caller's ids (0 is ""), so equal ids are equal text. */
typedef struct tdx_rgkey {
    uint32_t type, func, file;
    uint64_t pc, line;
} tdx_rgkey;

typedef struct tdx_rgroup {
    tdx_rgkey key;
    tdx_timehist h;
} tdx_rgroup;

typedef struct tdx_regstats {
    TDX_VEC(tdx_rgroup) groups;
    tdx_hmap idx; /* hash of the key (+ probe) -> group */
    int oom;
} tdx_regstats;

void tdx_regstats_free(tdx_regstats *r);
/* One region of duration ns (end or the trace's end, minus start or its first event). */
void tdx_regstats_add(tdx_regstats *r, const tdx_rgkey *k, int64_t ns);

/* The text of a string id. */
typedef tdx_str (*tdx_rgstr_fn)(const void *ctx, uint32_t id);

/* REGIONS' bytes: the groups sorted by type (bytes), then PC, function, file and line. 0, or -1
 * when memory runs out. */
int tdx_regstats_encode(const tdx_regstats *r, tdx_rgstr_fn str, const void *ctx, tdx_buf *out);

/* A group as the section holds it: strings point into the section. */
typedef struct tdx_rgrow {
    tdx_str type, func, file;
    uint64_t pc, line;
    tdx_timehist h; /* buckets outside min..max are 0 (Go does not show them) */
} tdx_rgrow;

/* Reads section bytes p[0..n) (at file offset off), calling fn for each group in order: 0, fn's
 * non-zero result, or -1 with err set when malformed. */
int tdx_regstats_decode(const uint8_t *p, size_t n, uint64_t off,
                        int (*fn)(void *ctx, const tdx_rgrow *row), void *ctx, tdx_err *err);

#endif
