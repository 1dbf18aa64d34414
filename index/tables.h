/* tables.h: the index's global string, frame and stack tables, deduplicated by content across
 * generations, and the per-generation maps from a generation's ids to global ids. */
#ifndef TDX_TABLES_H
#define TDX_TABLES_H

#include <stdint.h>

#include "core/gen.h"
#include "core/hmap.h"
#include "core/mem.h"

typedef struct tdx_gframe {
    uint64_t pc;
    uint32_t func, file; /* global string ids */
    uint64_t line;
} tdx_gframe;

typedef struct tdx_tables {
    /* strings: id 0 is "" */
    tdx_buf str_bytes;
    TDX_VEC(uint64_t) str_off; /* str_off[i]..str_off[i+1] */
    tdx_hmap str_ids;          /* content hash -> id (collisions probe hash+1, hash+2, ...) */
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

int tdx_tables_init(tdx_tables *t);
void tdx_tables_free(tdx_tables *t);
/* Frees the lookup maps once no string or stack will be added (the contents stay). */
void tdx_tables_seal(tdx_tables *t);

uint32_t tdx_tables_nstrings(const tdx_tables *t);
uint32_t tdx_tables_nstacks(const tdx_tables *t);

/* Global id of a string by content; UINT32_MAX on OOM. */
uint32_t tdx_tables_string(tdx_tables *t, const uint8_t *p, uint32_t n);

/* Global ids of a generation's string / stack (dense indexes of g); g may change between calls
 * (the maps restart for a new generation). UINT32_MAX on OOM. */
uint32_t tdx_tables_gen_string(tdx_tables *t, const tdx_gen *g, uint32_t idx);
uint32_t tdx_tables_gen_stack(tdx_tables *t, const tdx_gen *g, uint32_t idx);

#endif
