/* gen.h: loading one generation: string/stack/frame tables, frequency and clock snapshot,
 * CPU samples, experimental batches, and the per-thread lists of event batches. */
#ifndef TDX_GEN_H
#define TDX_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "batch.h"
#include "error.h"
#include "hmap.h"
#include "mem.h"

typedef struct tdx_str {
    const uint8_t *p;
    uint32_t n;
} tdx_str;

/* Byte order of two strings (a shorter prefix first): <0, 0, >0. */
static inline int tdx_str_cmp(tdx_str a, tdx_str b) {
    size_t n = a.n < b.n ? a.n : b.n;
    int c = n ? memcmp(a.p, b.p, n) : 0;
    return c ? c : (a.n > b.n) - (a.n < b.n);
}

typedef struct tdx_frame {
    uint64_t pc;
    uint64_t line;
    uint32_t func;             /* dense string index */
    uint32_t file;             /* dense string index */
    uint64_t func_id, file_id; /* wire string ids, checked once the generation is loaded */
} tdx_frame;

typedef struct tdx_stack {
    uint64_t id;    /* wire stack id */
    uint32_t first; /* index into gen.stack_frames */
    uint32_t nframes;
} tdx_stack;

typedef struct tdx_cpusample {
    int64_t time;     /* ns */
    uint64_t m, p, g; /* wire values; g 0 means none */
    uint64_t stack;   /* wire stack id */
    uint64_t off;     /* file offset of the sample */
} tdx_cpusample;

typedef struct tdx_expbatch {
    uint8_t exp;
    uint64_t m;
    uint64_t data_off;
    uint32_t size;
} tdx_expbatch;

typedef struct tdx_thread_batches {
    uint64_t m;     /* thread id as on the wire */
    uint32_t first; /* first event batch (index into frame.batches); others via next_batch */
} tdx_thread_batches;

typedef TDX_VEC(uint32_t) tdx_u32vec;

typedef struct tdx_gen {
    const uint8_t *data; /* the whole trace */
    int version;
    tdx_genframe frame; /* batches and framing errors (owned) */
    /* time base */
    uint64_t freq; /* ticks per second */
    double ns_per_tick;
    bool has_clock;
    uint64_t snap_ticks, snap_mono, snap_sec, snap_nsec;
    /* tables: dense index 0 is the empty string / the empty stack */
    TDX_VEC(tdx_str) strings;
    tdx_hmap string_ids; /* wire id -> dense index */
    uint32_t
        nwire_strings;  /* strings[0..nwire_strings) come from the trace, later ones are extra */
    tdx_hmap extra_ids; /* content hash -> dense index of extra strings */
    TDX_VEC(tdx_stack) stacks;
    tdx_hmap stack_ids;
    TDX_VEC(uint32_t) stack_frames; /* frame indexes */
    TDX_VEC(tdx_frame) frames;
    tdx_hmap frame_pcs;
    TDX_VEC(tdx_cpusample) samples;
    TDX_VEC(tdx_expbatch) exp;
    TDX_VEC(tdx_thread_batches) threads;
    TDX_VEC(uint32_t)
    next_batch; /* per batch: next event batch of the same thread, or UINT32_MAX */
    tdx_arena arena;
    /* Direct maps wire id -> dense index, built once a generation is loaded when its ids are
     * compact (Go numbers them from 1): every event resolves a stack or string id, and an array
     * read is several times cheaper than hashing. n is 0 when not built (the hash maps answer). */
    tdx_u32vec string_direct;
    tdx_u32vec stack_direct;
    /* Strings filled on demand (an index's global table, unpacked per chunk of TDX_STR_CHUNK):
     * when str_fill is set, strings[i] is valid once str_ready[i >> TDX_STR_CHUNK_SHIFT] is;
     * read them with tdx_gen_str. NULL for a generation's own tables. */
    void (*str_fill)(void *ctx, uint32_t id);
    void *str_ctx;
    const uint8_t *str_ready;
    /* Strings read in place from a table of offsets (a table too large to copy): when str_offs
     * is set, string i is str_base[str_offs[i], str_offs[i + 1]), strings.n counts them and
     * strings.v is not used. */
    const uint8_t *str_base;
    const uint64_t *str_offs;
} tdx_gen;

/* 64 strings a chunk: a query's strings lie scattered over the table (a log message first seen
 * long before), one chunk each; at 256 a 10 ms window of the 4 GiB bench trace unpacked 30-85
 * chunks for 1.6-4.4 ms, 20% of its time. The packed table grows by a third. */
#define TDX_STR_CHUNK_SHIFT 6
#define TDX_STR_CHUNK (1u << TDX_STR_CHUNK_SHIFT)

/* String id (dense index) of g; id < g->strings.n. */
static inline tdx_str tdx_gen_str(const tdx_gen *g, uint32_t id) {
    if (g->str_offs)
        return (tdx_str){g->str_base + g->str_offs[id],
                         (uint32_t)(g->str_offs[id + 1] - g->str_offs[id])};
    /* Acquire: another thread may have unpacked the chunk (index/format/reader.c). */
    if (g->str_fill && !__atomic_load_n(&g->str_ready[id >> TDX_STR_CHUNK_SHIFT], __ATOMIC_ACQUIRE))
        g->str_fill(g->str_ctx, id);
    return g->strings.v[id];
}

void tdx_gen_init(tdx_gen *g, const uint8_t *data, int version);
void tdx_gen_free(tdx_gen *g);

/* Processes the batches of g->frame (which the caller filled with tdx_framer_next) in file
 * order, exactly as Go's parser does, then checks the generation. Returns 0, or -1 with the first
 * error in file order (a table error, or the framing error that ended the generation when that
 * error is a hard one). */
int tdx_gen_load(tdx_gen *g, tdx_err *err);

/* Nanoseconds for a tick count: Go's (int64)(float64(t) * nsPerTick), with amd64's result for
 * values out of range. */
static inline int64_t tdx_ticks_to_ns(const tdx_gen *g, uint64_t t) {
    double v = (double)t * g->ns_per_tick;
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)v;
}

/* Dense index of a wire string/stack id, or UINT32_MAX when the generation lacks it. */
static inline uint32_t tdx_gen_string(const tdx_gen *g, uint64_t id) {
    if (id < g->string_direct.n) return g->string_direct.v[id];
    if (id == 0) return 0;
    if (g->string_direct.n) return UINT32_MAX; /* the direct map covers every id of the table */
    return tdx_hmap_get(&g->string_ids, id);
}
static inline uint32_t tdx_gen_stack(const tdx_gen *g, uint64_t id) {
    if (id < g->stack_direct.n) return g->stack_direct.v[id];
    if (id == 0) return 0;
    if (g->stack_direct.n) return UINT32_MAX;
    return tdx_hmap_get(&g->stack_ids, id);
}

/* Adds a string that did not come from this generation's table (e.g. the name of a task begun
 * in an earlier generation); identical contents share an index. Returns UINT32_MAX on OOM. */
uint32_t tdx_gen_extra_string(tdx_gen *g, const uint8_t *p, uint32_t n);

#endif
