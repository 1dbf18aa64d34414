/* muinput.h: the inputs of go tool trace's mutator utilization (its MMU page): the few events that
 * can change it, recorded in order by the build into section MUTIL, and read back by
 * index/analysis/mmu.c.
 *
 * Go computes utilization from every event; all but these leave it as it is, except that an event
 * after two changes at one time stamp starts the value the second change set (Go keeps the lowest
 * at one time stamp). A TICK record stands for that next event (only old traces repeat times). */
#ifndef TDX_MUINPUT_H
#define TDX_MUINPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/event.h"
#include "core/gen.h"
#include "core/hmap.h"
#include "index/format/rans.h"
#include "index/common/scratch.h"

enum {
    TDX_MU_PROCS = 1,       /* the GOMAXPROCS metric: n */
    TDX_MU_STW_BEGIN,       /* a stop-the-world range whose name contains "GC" */
    TDX_MU_STW_END,         /* */
    TDX_MU_SWEEP_BEGIN,     /* "GC incremental sweep" on proc p */
    TDX_MU_SWEEP_END,       /* */
    TDX_MU_ASSIST_BEGIN,    /* "GC mark assist" on proc p */
    TDX_MU_ASSIST_END,      /* */
    TDX_MU_RUN,             /* a goroutine starts executing on p: why it may count */
    TDX_MU_STOP,            /* a goroutine stops executing on p: why it may count */
    TDX_MU_LABEL,           /* a goroutine on p labelled "GC (...)" (not "GC (idle)") */
    TDX_MU_LABEL_DEDICATED, /* a goroutine on p labelled "GC (dedicated)" */
    TDX_MU_TICK,            /* any other event */
    TDX_MU_NKINDS
};

/* Why a goroutine's start or stop may count (Go counts it when the goroutine is in its inGC or
 * bgMark set): bits of what the goroutine is then, as Go's sets would hold it for any flags. */
enum {
    TDX_MU_WHY_ASSIST = 1, /* in a mark assist (Go's inGC, with the assist flag) */
    TDX_MU_WHY_LABEL = 2,  /* ever labelled a worker (bgMark, with background workers) */
    TDX_MU_WHY_SHARED = 4, /* ... not "GC (dedicated)" (bgMark per P, which leaves those out) */
    TDX_MU_WHY_ALL = 7
};

typedef struct tdx_murec {
    int64_t time;
    uint8_t kind;
    uint8_t why; /* TDX_MU_RUN and TDX_MU_STOP: TDX_MU_WHY_* bits, not 0 */
    int64_t p;   /* TDX_NO_ID when none */
    uint64_t n;  /* TDX_MU_PROCS */
} tdx_murec;

/* ---- recording (the build) ---- */

typedef struct tdx_muin {
    tdx_scratch file; /* the coded blocks, beside the index being written */
    const char *beside;
    TDX_VEC(tdx_murec) blk; /* the block being filled */
    tdx_rans_enc enc;
    tdx_buf coded, rec; /* a block's coded bytes, and its head */
    uint64_t nvals;
    int64_t coded_t; /* the last coded record's time */
    int64_t origin;  /* the time the first record steps from: 0, or its own when below 0 */
    bool coded_any;
    uint64_t n;      /* records */
    int64_t prev;    /* the last record's time */
    int64_t last;    /* the last event's time */
    bool tick;       /* two records at one time wait for the next event at a later time */
    uint64_t procs;  /* the last GOMAXPROCS (0: none yet) */
    tdx_hmap assist; /* goroutines in a mark assist */
    tdx_hmap worker; /* goroutines ever labelled as GC workers: TDX_MU_WHY_LABEL (| SHARED) */
} tdx_muin;

void tdx_muin_init(tdx_muin *w, const char *beside);
void tdx_muin_free(tdx_muin *w);
/* Feeds every event, in order; g holds its strings. 0, or -1 with err set. */
int tdx_muin_event(tdx_muin *w, const tdx_event *e, const tdx_gen *g, tdx_err *err);
/* Writes section MUTIL (layout in docs/index-format.md) through put. 0 or -1. */
int tdx_muin_write(tdx_muin *w, int (*put)(void *ctx, const void *p, size_t n, tdx_err *err),
                   void *ctx, tdx_err *err);

/* ---- reading ---- */

typedef struct tdx_muread {
    const uint8_t *base, *p, *end, *block;
    uint64_t off;  /* the section's file offset */
    uint64_t left; /* records not read yet */
    int64_t t;     /* the last record's time */
    int64_t last;  /* the trace's last event time */
    /* the block being read */
    tdx_rans_dec dec;
    uint64_t bleft, vleft, unit;
    uint32_t prev_kind;
    bool bad;
    int64_t lastp[TDX_MU_NKINDS];
} tdx_muread;

/* Starts reading section bytes p[0..n) at file offset off: 0, or -1 with err set. Free it with
 * tdx_muread_free either way. */
int tdx_muread_init(tdx_muread *r, const uint8_t *p, size_t n, uint64_t off, tdx_err *err);
void tdx_muread_free(tdx_muread *r);
/* The next record: 1, 0 after the last, -1 with err set when malformed. */
int tdx_muread_next(tdx_muread *r, tdx_murec *out, tdx_err *err);

#endif
