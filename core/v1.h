/* v1.h: the old trace format of Go 1.11-1.21 (headers go 1.11, 1.19, 1.21): record decoding, the
 * merge of per-P batches, validation, and the conversion into the v2 event model that Go does. */
#ifndef TDX_V1_H
#define TDX_V1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "gen.h"
#include "hmap.h"
#include "mem.h"
#include "reader.h"

/* ---- v1 event types (the runtime's traceEv* numbers) ---- */

enum tdx_v1_type {
    TDX_V1_NONE = 0,
    TDX_V1_BATCH = 1,
    TDX_V1_FREQUENCY = 2,
    TDX_V1_STACK = 3,
    TDX_V1_GOMAXPROCS = 4,
    TDX_V1_PROC_START = 5,
    TDX_V1_PROC_STOP = 6,
    TDX_V1_GC_START = 7,
    TDX_V1_GC_DONE = 8,
    TDX_V1_STW_START = 9,
    TDX_V1_STW_DONE = 10,
    TDX_V1_GC_SWEEP_START = 11,
    TDX_V1_GC_SWEEP_DONE = 12,
    TDX_V1_GO_CREATE = 13,
    TDX_V1_GO_START = 14,
    TDX_V1_GO_END = 15,
    TDX_V1_GO_STOP = 16,
    TDX_V1_GO_SCHED = 17,
    TDX_V1_GO_PREEMPT = 18,
    TDX_V1_GO_SLEEP = 19,
    TDX_V1_GO_BLOCK = 20,
    TDX_V1_GO_UNBLOCK = 21,
    TDX_V1_GO_BLOCK_SEND = 22,
    TDX_V1_GO_BLOCK_RECV = 23,
    TDX_V1_GO_BLOCK_SELECT = 24,
    TDX_V1_GO_BLOCK_SYNC = 25,
    TDX_V1_GO_BLOCK_COND = 26,
    TDX_V1_GO_BLOCK_NET = 27,
    TDX_V1_GO_SYSCALL = 28,
    TDX_V1_GO_SYSEXIT = 29,
    TDX_V1_GO_SYSBLOCK = 30,
    TDX_V1_GO_WAITING = 31,
    TDX_V1_GO_INSYSCALL = 32,
    TDX_V1_HEAP_ALLOC = 33,
    TDX_V1_HEAP_GOAL = 34,
    TDX_V1_TIMER_GOROUTINE = 35,
    TDX_V1_FUTILE_WAKEUP = 36,
    TDX_V1_STRING = 37,
    TDX_V1_GO_START_LOCAL = 38,
    TDX_V1_GO_UNBLOCK_LOCAL = 39,
    TDX_V1_GO_SYSEXIT_LOCAL = 40,
    TDX_V1_GO_START_LABEL = 41,
    TDX_V1_GO_BLOCK_GC = 42,
    TDX_V1_GC_MARK_ASSIST_START = 43,
    TDX_V1_GC_MARK_ASSIST_DONE = 44,
    TDX_V1_USER_TASK_CREATE = 45,
    TDX_V1_USER_TASK_END = 46,
    TDX_V1_USER_REGION = 47,
    TDX_V1_USER_LOG = 48,
    TDX_V1_CPU_SAMPLE = 49,
    TDX_V1_NTYPES = 50,
};

/* Fake P ids the reader gives events that no real P owns. */
#define TDX_V1_TIMER_P 1000001
#define TDX_V1_NETPOLL_P 1000002
#define TDX_V1_SYSCALL_P 1000003
#define TDX_V1_GC_P 1000004
#define TDX_V1_PROFILE_P 1000005

/* Go's name of a v1 type ("GoStart"), or NULL for an unassigned number. */
const char *tdx_v1_type_name(unsigned t);

/* ---- record decoding ---- */

/* Limit of a length-prefixed payload; every value takes at least one byte, so this also bounds the
 * values of one record. */
#define TDX_V1_MAX_PAYLOAD 2048
#define TDX_V1_MAX_STRING 1000000

/* File-wide string table: wire id -> bytes (pointing into the trace). */
typedef struct tdx_v1_strtab {
    tdx_hmap ids; /* wire id -> index into v */
    TDX_VEC(tdx_str) v;
    TDX_VEC(uint64_t) wire; /* wire id of v[i] */
} tdx_v1_strtab;

/* One decoded record. */
typedef struct tdx_v1_raw {
    uint8_t type;   /* a tdx_v1_type; TDX_V1_NONE for a String record */
    uint64_t off;   /* file offset of the record's first byte */
    uint32_t nargs; /* values decoded (0 when they were skipped) */
    const uint64_t *args;
    int32_t batch_p; /* Batch: the P (-1 for the runtime's "no P" buffer) */
    tdx_str msg;     /* UserLog: the trailing inline message */
} tdx_v1_raw;

/* Decoding modes: the indexing pass skips what it does not need, exactly as Go's reader does. */
enum { TDX_V1_SKIP_ARGS = 1, TDX_V1_SKIP_STRINGS = 2 };

typedef struct tdx_v1_decoder {
    const uint8_t *data;
    size_t size;
    size_t off; /* next record */
    int version;
    tdx_v1_strtab *strings; /* String records are stored here unless skipped */
    uint64_t args[TDX_V1_MAX_PAYLOAD + 4];
} tdx_v1_decoder;

void tdx_v1_decoder_init(tdx_v1_decoder *d, const uint8_t *data, size_t size, size_t off,
                         int version, tdx_v1_strtab *strings);

/* Decodes the record at d->off. Returns 1 (a record), 0 (end of data: no byte left, or Go's
 * quiet stop at a cut UserLog message in skip mode), or -1 with Go's message and the offset. */
int tdx_v1_next_raw(tdx_v1_decoder *d, unsigned flags, tdx_v1_raw *raw, tdx_err *err);

/* The number of values Go requires a decoded record of type t to have (Stack excepted). */
int tdx_v1_want_args(unsigned t);

/* ---- the parsed trace (Go's tracev1.Trace) ---- */

/* One event after the merge, the time fix-ups and validation. 56 bytes: the whole trace is held. */
typedef struct tdx_v1_event {
    int64_t ts;       /* ns since the first event (ticks before the conversion) */
    uint64_t g;       /* goroutine the event happened on (0 = none) */
    uint64_t args[3]; /* Go's Args[0..2]; a UserLog keeps its message index in args[2] */
    uint32_t stk;     /* stack id, 0 = none */
    int32_t p;        /* P, -1, or one of the fake Ps */
    uint32_t off_lo;  /* file offset of the record (40 bits) */
    uint8_t off_hi;
    uint8_t type;  /* tdx_v1_type; the *Local types are renamed by the merge */
    uint8_t flags; /* TDX_V1F_* */
} tdx_v1_event;

enum { TDX_V1F_SYSCALL_BLOCKED = 1 }; /* GoSysCall whose G's next event is a GoSysBlock */

static inline uint64_t tdx_v1_event_off(const tdx_v1_event *e) {
    return (uint64_t)e->off_lo | ((uint64_t)e->off_hi << 32);
}

typedef struct tdx_v1_trace {
    int version;
    TDX_VEC(tdx_v1_event) events;
    int64_t ticks_per_sec;
    tdx_v1_strtab strings;
    TDX_VEC(tdx_str) inline_strings; /* UserLog messages, numbered in order of first decoding */
    /* Stacks and frames already live in gen (stacks, stack_ids, stack_frames, frames, frame_pcs);
     * frames hold wire string ids until tdx_v1_finish_tables resolves them. */
    tdx_gen gen;
} tdx_v1_trace;

void tdx_v1_trace_init(tdx_v1_trace *t, const uint8_t *data, int version);
void tdx_v1_trace_free(tdx_v1_trace *t);

/* Parses data[0..size) (the whole file, header included) of the given v1 version as Go's tracev1
 * parser does: index, merge, time fix-ups, fake Ps, validation. Returns 0 or -1 with Go's
 * message (and the byte offset of the offending record where one is known). */
int tdx_v1_parse(const uint8_t *data, size_t size, int version, tdx_v1_trace *t, tdx_err *err);

/* ---- conversion ---- */

/* Reads a whole v1 trace and delivers the converted events with the semantics of
 * tdx_read_trace: a Sync, the events, a final Sync; on a parse error nothing is delivered. */
int tdx_read_v1(const uint8_t *data, size_t size, int version, const tdx_read_opts *opts,
                tdx_read_stats *stats, tdx_err *err);

#endif
