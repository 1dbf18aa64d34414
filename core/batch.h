/* batch.h: the framing scan: walks batch headers of a v2 trace and groups batches into
 * generations (offset, size, thread, generation, kind) without decoding any event. */
#ifndef TDX_BATCH_H
#define TDX_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "mem.h"

#define TDX_MAX_BATCH_SIZE 65536
#define TDX_NONE64 UINT64_MAX

enum tdx_batch_kind {
    TDX_BATCH_EVENTS = 0, /* ordinary per-thread event batch (also empty ones) */
    TDX_BATCH_STRINGS,
    TDX_BATCH_STACKS,
    TDX_BATCH_CPU,
    TDX_BATCH_SYNC,
    TDX_BATCH_EXPERIMENTAL,
};

typedef struct tdx_batch {
    uint64_t hdr_off;  /* file offset of the batch's header byte */
    uint64_t data_off; /* file offset of the payload */
    uint32_t size;     /* payload bytes */
    uint8_t kind;      /* enum tdx_batch_kind */
    uint8_t exp;       /* experiment byte (0 for EventBatch) */
    uint64_t gen;
    uint64_t m;    /* thread id as on the wire (TDX_NONE64 = no thread) */
    uint64_t time; /* base timestamp, ticks */
} tdx_batch;

enum tdx_generr {
    TDX_GENERR_NONE = 0,
    TDX_GENERR_HARD,     /* the generation is unusable: Sync, then the error */
    TDX_GENERR_DEFERRED, /* the generation is delivered, then Sync, then the error */
};

typedef struct tdx_genframe {
    uint64_t gen;               /* generation number (0 if no batch was read) */
    uint64_t seq;               /* 0-based position among the generations returned */
    uint64_t min_ts;            /* minimum batch time with Go's "0 means unset" rule */
    TDX_VEC(tdx_batch) batches; /* in file order; EndOfGeneration markers are not listed */
    bool has_event_batches;
    uint64_t start_off, end_off; /* byte range the generation's batches occupy */
    int err_kind;                /* enum tdx_generr */
    tdx_err err;                 /* set when err_kind != NONE */
} tdx_genframe;

typedef struct tdx_framer {
    const uint8_t *data;
    size_t size;
    int version;
    size_t pos;
    bool have_spill; /* versions < 26: first batch of the next generation, already read */
    tdx_batch spill;
    uint64_t nreturned;
    bool stop; /* a hard or deferred error ended the scan */
} tdx_framer;

void tdx_framer_init(tdx_framer *f, const uint8_t *data, size_t size, int version);

/* Reads the next generation into *g (whose batch vector is reused). Returns 1 when *g holds a
 * generation (possibly with an error, see err_kind), 0 at the clean end of the trace, -1 when
 * memory is exhausted (err filled). */
int tdx_framer_next(tdx_framer *f, tdx_genframe *g, tdx_err *err);

void tdx_genframe_free(tdx_genframe *g);

/* Parses one batch header at pos. Returns 1 (batch read, *pos advanced past its payload),
 * 2 (EndOfGeneration byte), 0 (clean end of input), or -1 (framing error, err filled with Go's
 * message and the offset). Exposed for the unit tests and the raw scanners. */
int tdx_read_batch(const uint8_t *data, size_t size, size_t *pos, int version, tdx_batch *b,
                   tdx_err *err);

#endif
