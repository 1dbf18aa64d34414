/* event.h: Go's high-level event model (the parser's Event): kinds, resources, states, and the
 * ordered event record the ordering stage emits; plus Go's debug text form (-d=parsed). */
#ifndef TDX_EVENT_H
#define TDX_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "gen.h"
#include "mem.h"

enum tdx_kind {
    TDX_KIND_BAD = 0,
    TDX_KIND_SYNC,
    TDX_KIND_METRIC,
    TDX_KIND_LABEL,
    TDX_KIND_STACK_SAMPLE,
    TDX_KIND_RANGE_BEGIN,
    TDX_KIND_RANGE_ACTIVE,
    TDX_KIND_RANGE_END,
    TDX_KIND_TASK_BEGIN,
    TDX_KIND_TASK_END,
    TDX_KIND_REGION_BEGIN,
    TDX_KIND_REGION_END,
    TDX_KIND_LOG,
    TDX_KIND_STATE_TRANSITION,
    TDX_KIND_EXPERIMENTAL,
    TDX_KIND_COUNT
};

/* API goroutine states (Go's GoState). */
enum {
    TDX_GO_UNDETERMINED = 0,
    TDX_GO_NOTEXIST,
    TDX_GO_RUNNABLE,
    TDX_GO_RUNNING,
    TDX_GO_WAITING,
    TDX_GO_SYSCALL
};
/* API proc states (Go's ProcState). */
enum { TDX_PROC_UNDETERMINED = 0, TDX_PROC_NOTEXIST, TDX_PROC_RUNNING, TDX_PROC_IDLE };
/* Resource kinds. */
enum { TDX_RES_NONE = 0, TDX_RES_GOROUTINE, TDX_RES_PROC, TDX_RES_THREAD };

#define TDX_NO_ID (-1)         /* NoGoroutine, NoProc, NoThread */
#define TDX_NO_TASK UINT64_MAX /* NoTask */
#define TDX_EV_CPU_TYPE TDX_EV_CPU_SAMPLE

/* Event type code of a Sync event (wire type 50 is the Sync marker; no timed event uses it). */
#define TDX_TYPE_SYNC 50

/* One ordered event. Strings and stacks are dense indexes into the tables of the generation the
 * event belongs to (tdx_gen); index 0 is the empty string / no stack. */
typedef struct tdx_event {
    int64_t time;       /* ns, strictly increasing once the stream-wide fix-up is applied */
    int64_t m, p, g;    /* execution context (TDX_NO_ID = none); for transitions: before it */
    uint64_t args[4];   /* wire arguments after dt, after Go's rewrites (see order.c) */
    uint32_t stack;     /* the event's own stack */
    uint32_t tstack;    /* a state transition's stack */
    uint32_t str[2];    /* the strings the details need (reason, label, name, category/message) */
    uint8_t type;       /* wire type; TDX_TYPE_SYNC for Sync; TDX_EV_CPU_SAMPLE for samples */
    uint8_t kind;       /* enum tdx_kind */
    uint8_t res_kind;   /* transitions: TDX_RES_GOROUTINE or TDX_RES_PROC */
    uint8_t from, to;   /* transitions: API states */
    uint8_t has_clock;  /* Sync: a clock snapshot follows in args (trace ns, mono, sec, nsec) */
    uint8_t has_tstack; /* transitions: Go attaches a stack handle even when tstack is 0 */
    int64_t res;        /* transitions: the goroutine or proc */
    uint64_t sync_nsec; /* Sync with clock: nanoseconds of the wall clock */
    uint64_t off;       /* file offset of the wire event (0 for synthesized ones) */
} tdx_event;

/* The kind Go reports for an event of wire type `type` (TDX_TYPE_SYNC: Sync). */
extern const uint8_t tdx_type_kind_tab_[];
static inline uint8_t tdx_type_kind(uint8_t type) {
    return type < 137 ? tdx_type_kind_tab_[type] : TDX_KIND_BAD;
}

/* Names as Go prints them. */
const char *tdx_kind_name(int kind);
const char *tdx_gostate_name(int s);
const char *tdx_procstate_name(int s);
/* Range name of a range event ("GC concurrent mark phase", "stop-the-world (<kind>)", ...) into
 * buf (at least 1100 bytes); returns its length. */
int tdx_range_name(const tdx_event *e, const tdx_gen *g, char *buf, size_t cap);

/* Appends Go's Event.String() of e to out (no trailing newline; events with a stack end with one,
 * as in Go). g is the event's generation (NULL for Sync events without a table). */
int tdx_event_format(tdx_buf *out, const tdx_event *e, const tdx_gen *g);

#endif
