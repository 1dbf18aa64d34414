/* reader.h: opens an index file (mmap), checks its header, version, checksums and bounds, and
 * gives access to its tables and event blocks; every defect becomes an error saying what to do. */
#ifndef TDX_IREADER_H
#define TDX_IREADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/event.h"
#include "core/gen.h"
#include "index/format/evcodec.h"
#include "index/format/strpack.h"
#include "index/format/format.h"

typedef struct tdx_isection {
    uint32_t kind, flags;
    uint64_t off, len, hash;
    bool present;
} tdx_isection;

typedef struct tdx_index {
    const char *path;
    char *path_owned; /* freed by tdx_index_close: who opened it may point path at its own copy */
    const uint8_t *data;
    size_t size;
    uint32_t version;
    tdx_isection sec[TDX_SEC_COUNT_];
    uint64_t meta[M_COUNT_];
    /* Global tables in the shape of a generation's tables (printing and viewing reuse them). */
    tdx_gen tabs;
    /* Event blocks. */
    const uint8_t *evdir;
    size_t nblocks;
    const uint8_t *gens;
    size_t ngens;
    /* Source trace identity. */
    uint64_t trace_size, trace_hash, trace_sample;
    uint8_t trace_header[16];
    /* Built from a damaged trace's valid part (build --partial), the damage at damage_off. */
    bool partial;
    uint64_t damage_off;
    void *map_;
    /* The string table unpacks a chunk at a time, on first use (tdx_gen_str on tabs), or ahead
     * on a query's second thread (tdx_index_strings_ahead): a chunk is unpacked by whichever
     * thread claims it first (str_claim_), published by str_ready_ (atomic, acquire/release). */
    tdx_strpack strpack_;
    uint8_t *str_ready_, *str_claim_;
    tdx_arena ahead_arena_;    /* the chunks unpacked ahead (tabs.arena: the calling thread's) */
    bool stack_frames_mapped_; /* tabs.stack_frames.v points into the mapping (not freed) */
    int strings_bad; /* a chunk failed to unpack: its strings read as "" (see tdx_index_strings_ok)
                      */
} tdx_index;

/* For one second thread at a time (a query's event pipe), beside the thread using the index:
 * unpacks the chunk of string id unless it is unpacked or being unpacked already. Never waits. */
void tdx_index_strings_ahead(tdx_index *ix, uint32_t id);

/* 0 when every string used so far unpacked; else -1 with err set (a damaged STRINGS section
 * whose checksum still matched). Callers check it after producing output from the tables. */
int tdx_index_strings_ok(const tdx_index *ix, tdx_err *err);

/* Unpacks every string not unpacked yet (verify, tools that walk the whole table). 0 or -1. */
int tdx_index_strings_all(tdx_index *ix, tdx_err *err);

/* Opens and checks the file's structure (header, section table, table sections). */
int tdx_index_open(tdx_index *ix, const char *path, tdx_err *err);
void tdx_index_close(tdx_index *ix);

/* Whether the first bytes of a file look like an index. */
bool tdx_is_index(const uint8_t *p, size_t n);

/* A section's bytes (after checking its checksum once); NULL with err set when absent/corrupt. */
const uint8_t *tdx_index_section(tdx_index *ix, uint32_t kind, uint64_t *len, tdx_err *err);

/* Block b's directory fields. */
uint64_t tdx_index_block_first_event(const tdx_index *ix, size_t b);
uint32_t tdx_index_block_nevents(const tdx_index *ix, size_t b);
int64_t tdx_index_block_first_time(const tdx_index *ix, size_t b);
int64_t tdx_index_block_last_time(const tdx_index *ix, size_t b);

/* Decodes block b (checking its checksum and every id it holds) into out, which must hold
 * TDX_EVBLOCK_EVENTS events; *n gets the count. */
int tdx_index_read_block(const tdx_index *ix, tdx_evdec *dec, size_t b, tdx_event *out, size_t *n,
                         tdx_err *err);
/* The same a piece at a time: begin checks block b's checksum and starts decoding it with dec;
 * each next decodes up to max more of its events into out (*n of them; 0 after the last). */
int tdx_index_block_begin(const tdx_index *ix, tdx_evdec *dec, size_t b, tdx_err *err);
int tdx_index_block_next(const tdx_index *ix, tdx_evdec *dec, size_t b, tdx_event *out, size_t max,
                         size_t *n, tdx_err *err);

/* Gives back the mapped pages of the event blocks before block b, for a long replay that has
 * read them (file pages, but counted in the process's RSS: a whole-trace query held every block
 * it read). Reading them again maps them again. */
void tdx_index_release_blocks(const tdx_index *ix, size_t b);
/* How often a long read calls it: every this many blocks (about 1 MiB of them). */
#define TDX_RELEASE_EVERY ((size_t)32)

/* The first block whose last event is at or after time t (nblocks if none). */
size_t tdx_index_block_at_time(const tdx_index *ix, int64_t t);
/* The block holding event index i (nblocks if none). */
size_t tdx_index_block_of_event(const tdx_index *ix, uint64_t i);

/* Sets err to "index WHAT is corrupt ...: rebuild it" at file offset off; returns -1. */
int tdx_index_corrupt(tdx_err *err, uint64_t off, const char *what);

/* Checks that the index was built from this trace: size, header and sampled hash (full=true:
 * the hash of all its bytes). */
int tdx_index_check_trace(const tdx_index *ix, const char *trace_path, const uint8_t *data,
                          size_t size, bool full, tdx_err *err);

/* How tdx_index_open_beside failed. */
enum { TDX_BESIDE_ERROR = 1, TDX_BESIDE_MISSING, TDX_BESIDE_STALE };

/* Opens TRACE.tidx, the index beside trace `trace_path`, and checks that it was built from the
 * trace as it is now (tdx_index_check_trace; full_check: the hash of every byte). 0, and ix->path
 * is then the index's path (ix owns it); or TDX_BESIDE_MISSING (no such file), TDX_BESIDE_STALE
 * or TDX_BESIDE_ERROR (the trace or the index could not be read) with err set and *ipath, when
 * not NULL, the index's path for messages, which the caller frees. */
int tdx_index_open_beside(tdx_index *ix, const char *trace_path, bool full_check, char **ipath,
                          tdx_err *err);

#endif
