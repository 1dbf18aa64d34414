/* format.h: the index file's on-disk layout, TDX_IDX_VERSION (documented in docs/index-format.md):
 * header, section table, section kinds and fixed-size records, all little-endian. */
#ifndef TDX_FORMAT_H
#define TDX_FORMAT_H

#include <stdint.h>
#include <string.h>

#define TDX_IDX_MAGIC "TRACEIDX"
#define TDX_IDX_VERSION 10
#define TDX_IDX_HEADER_SIZE 128
#define TDX_IDX_SECTION_SIZE 32

/* Header field offsets. */
enum {
    H_MAGIC = 0,
    H_VERSION = 8,
    H_HEADER_SIZE = 12,
    H_FILE_SIZE = 16,
    H_SECTAB_OFF = 24,
    H_SECTAB_COUNT = 32,
    H_FLAGS = 36,
    H_TRACE_SIZE = 40,
    H_TRACE_HEADER = 48,
    H_TRACE_HASH = 64,
    H_TRACE_SAMPLE = 72,
    H_SECTAB_HASH = 80,
    H_DAMAGE_OFF = 88, /* with TDX_IDX_PARTIAL: where the trace's damage was found */
    H_HEADER_HASH = 120,
};

/* Header flags. PARTIAL: built (build --partial) from a damaged trace: the views and split
 * ranges end at its last Sync, as cmd/trace shows such a trace. */
#define TDX_IDX_PARTIAL 1u

enum tdx_section_kind {
    TDX_SEC_META = 1,
    TDX_SEC_STRINGS = 2,
    TDX_SEC_FRAMES = 3,
    TDX_SEC_STACKS = 4,
    TDX_SEC_GENS = 5,
    TDX_SEC_EVDIR = 6,
    TDX_SEC_EVENTS = 7, /* checked block by block through EVDIR */
    TDX_SEC_GOROUTINES = 8,
    TDX_SEC_PROCS = 9,
    TDX_SEC_THREADS = 10,
    TDX_SEC_VGSTORE = 11,   /* the viewer's strings and stack prefix tree (viewgen_store) */
    TDX_SEC_RANGES = 12,    /* cmd/trace's split ranges of the proc view */
    TDX_SEC_SUMMARY = 13,   /* Go's trace summary (goroutines, tasks, regions, unblock edges) */
    TDX_SEC_VIEW_PROC = 14, /* + view (TDX_VIEW_*): a view's directory (viewsec.h) */
    TDX_SEC_VIEW_THREAD = 15,
    TDX_SEC_VIEW_GOROUTINE = 16,
    TDX_SEC_VIEWDATA = 17, /* checkpoints, long items, names (blocked: hashes in the directories) */
    TDX_SEC_VGNODES = 18,  /* VGSTORE's stack nodes (read only to number new frames) */
    TDX_SEC_FNAMES = 19,   /* frame names as JSON text (viewgen_store: tdx_fnames) */
    TDX_SEC_GSTATS1 = 20,  /* retired: GSTATS' first layout (fb455cb..), which readers skip */
    TDX_SEC_GSTATS = 21,   /* Go's goroutine analysis (gsindex.h; blocked: its own checksums) */
    TDX_SEC_PPROF = 22,    /* go tool trace's pprof-style profiles, per stack (goprof.h) */
    TDX_SEC_REGIONS = 23,  /* go tool trace's user region table (regstats.h) */
    TDX_SEC_MUTIL = 24,    /* the inputs of go tool trace's mutator utilization (muinput.h) */
    TDX_SEC_COUNT_
};

#define TDX_SECF_BLOCKED 1u /* the section's hash field is 0; its blocks carry their own hashes */

/* META: a fixed record of little-endian u64 fields. */
enum {
    M_TRACE_VERSION,
    M_GENERATIONS,
    M_EVENTS,
    M_FIRST_TIME,
    M_LAST_TIME,
    M_GOROUTINES,
    M_PROCS,
    M_THREADS,
    M_STRINGS,
    M_FRAMES,
    M_STACKS,
    M_BLOCKS,
    M_KIND0, /* M_KIND0 + kind: events of each tdx_kind */
    M_COUNT_ = M_KIND0 + 15,
};

/* EVDIR record: one per event block. */
enum {
    D_OFFSET = 0,
    D_LENGTH = 8,
    D_NEVENTS = 12,
    D_FIRST_EVENT = 16,
    D_FIRST_TIME = 24,
    D_LAST_TIME = 32,
    D_HASH = 40,
    D_SIZE = 48
};

/* GENS record: one per generation. */
enum {
    G_GEN = 0,
    G_FIRST_EVENT = 8,
    G_NEVENTS = 16,
    G_FIRST_TIME = 24,
    G_LAST_TIME = 32,
    G_FIRST_BLOCK = 40,
    G_NBLOCKS = 44,
    G_SIZE = 48
};

/* FRAMES record. */
enum { F_PC = 0, F_FUNC = 8, F_FILE = 12, F_LINE = 16, F_SIZE = 24 };

/* Little-endian fields. On little-endian hosts these compile to plain loads and stores. */
static inline void tdx_le64(uint8_t *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 8);
#else
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
#endif
}
static inline void tdx_le32(uint8_t *p, uint32_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 4);
#else
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
#endif
}
static inline uint64_t tdx_rd64(const uint8_t *p) {
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(&v, p, 8);
#else
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
#endif
    return v;
}
static inline uint32_t tdx_rd32(const uint8_t *p) {
    uint32_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(&v, p, 4);
#else
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
#endif
    return v;
}

const char *tdx_section_name(uint32_t kind);

#endif
