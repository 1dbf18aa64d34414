/* tables.h: the index's global string, frame and stack tables, deduplicated by content across
 * generations, and the per-generation maps from a generation's ids to global ids. */
#ifndef TDX_TABLES_H
#define TDX_TABLES_H

#include <stdint.h>

#include "core/error.h"
#include "core/gen.h"
#include "core/hmap.h"
#include "core/mem.h"
#include "index/common/filevec.h"
#include "index/format/strmap.h"

typedef struct tdx_gframe {
    uint64_t pc;
    uint32_t func, file; /* global string ids */
    uint64_t line;
} tdx_gframe;

typedef struct tdx_tables {
    /* strings: id 0 is "". A trace's strings can grow with it (log messages), so their bytes and
     * offsets (u64, native order: string i is bytes [off[i], off[i+1])) live in scratch files. */
    tdx_fvec str_bytes, str_off;
    /* A string is known by 96 bits of its XXH3-128 (strmap.h), so lookups never read the table
     * back (~0.7 M lookups of earlier strings on a 64 MiB trace); distinct strings agreeing on
     * 96 bits are not a practical concern (~1e-15 at 24 M strings, a GiB of log messages). */
    tdx_strmap str_map;
    tdx_err err; /* why tdx_tables_string failed (other calls fail only for memory) */
    /* frames */
    TDX_VEC(tdx_gframe) frames;
    tdx_hmap frame_ids;
    /* stacks: id 0 is the empty stack */
    TDX_VEC(uint32_t) stack_frames;
    TDX_VEC(uint64_t) stack_off;
    tdx_hmap stack_ids;
    /* per-generation maps (reset for each generation) */
    TDX_VEC(uint32_t) gen_str;   /* generation string index -> global id, UINT32_MAX unknown */
    TDX_VEC(uint32_t) gen_stack; /* generation stack index -> global id */
    const tdx_gen *gen;
    uint64_t gen_key;
} tdx_tables;

/* The scratch files go beside `beside`; `trace_size` sizes the string lookup's budget.
 * str_budget: memory for the string lookup (strmap.h; 0: tdx_fvec_budget
 * of trace_size). 0, or -1 with err set. */
int tdx_tables_init(tdx_tables *t, const char *beside, uint64_t trace_size, size_t str_budget,
                    tdx_err *err);
void tdx_tables_free(tdx_tables *t);
/* Once no string or stack will be added: frees the lookup maps and writes out the strings, so
 * that tdx_tables_str_bytes/_offs read them in place until tdx_tables_free. 0, or -1 with t->err
 * set. */
int tdx_tables_seal(tdx_tables *t);
/* Gives the string table's resident pages back (they are read again from the page cache). */
void tdx_tables_release(const tdx_tables *t);
/* Once sealed: the strings' bytes and their nstrings + 1 offsets, in place. */
static inline const uint8_t *tdx_tables_str_bytes(const tdx_tables *t) {
    return t->str_bytes.map;
}
static inline const uint64_t *tdx_tables_str_offs(const tdx_tables *t) {
    return (const uint64_t *)(const void *)t->str_off.map;
}

uint32_t tdx_tables_nstrings(const tdx_tables *t);
uint32_t tdx_tables_nstacks(const tdx_tables *t);

/* Global id of a string by content; UINT32_MAX when memory or a scratch file failed (t->err). */
uint32_t tdx_tables_string(tdx_tables *t, const uint8_t *p, uint32_t n);

/* Global ids of a generation's string / stack (dense indexes of g); g may change between calls
 * (the maps restart for a new generation). UINT32_MAX on OOM. */
uint32_t tdx_tables_gen_string(tdx_tables *t, const tdx_gen *g, uint32_t idx);
uint32_t tdx_tables_gen_stack(tdx_tables *t, const tdx_gen *g, uint32_t idx);

#endif
