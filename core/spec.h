/* spec.h: the table of v2 wire event types (names, arguments, stack/string slots, versions).
 * Every decoder, the text format and the error messages read their facts from this one table. */
#ifndef TDX_SPEC_H
#define TDX_SPEC_H

#include <stdbool.h>
#include <stdint.h>

enum tdx_evtype {
    TDX_EV_NONE = 0,
    TDX_EV_EVENT_BATCH = 1,
    TDX_EV_STACKS = 2,
    TDX_EV_STACK = 3,
    TDX_EV_STRINGS = 4,
    TDX_EV_STRING = 5,
    TDX_EV_CPU_SAMPLES = 6,
    TDX_EV_CPU_SAMPLE = 7,
    TDX_EV_FREQUENCY = 8,
    TDX_EV_PROCS_CHANGE = 9,
    TDX_EV_PROC_START = 10,
    TDX_EV_PROC_STOP = 11,
    TDX_EV_PROC_STEAL = 12,
    TDX_EV_PROC_STATUS = 13,
    TDX_EV_GO_CREATE = 14,
    TDX_EV_GO_CREATE_SYSCALL = 15,
    TDX_EV_GO_START = 16,
    TDX_EV_GO_DESTROY = 17,
    TDX_EV_GO_DESTROY_SYSCALL = 18,
    TDX_EV_GO_STOP = 19,
    TDX_EV_GO_BLOCK = 20,
    TDX_EV_GO_UNBLOCK = 21,
    TDX_EV_GO_SYSCALL_BEGIN = 22,
    TDX_EV_GO_SYSCALL_END = 23,
    TDX_EV_GO_SYSCALL_END_BLOCKED = 24,
    TDX_EV_GO_STATUS = 25,
    TDX_EV_STW_BEGIN = 26,
    TDX_EV_STW_END = 27,
    TDX_EV_GC_ACTIVE = 28,
    TDX_EV_GC_BEGIN = 29,
    TDX_EV_GC_END = 30,
    TDX_EV_GC_SWEEP_ACTIVE = 31,
    TDX_EV_GC_SWEEP_BEGIN = 32,
    TDX_EV_GC_SWEEP_END = 33,
    TDX_EV_GC_MARK_ASSIST_ACTIVE = 34,
    TDX_EV_GC_MARK_ASSIST_BEGIN = 35,
    TDX_EV_GC_MARK_ASSIST_END = 36,
    TDX_EV_HEAP_ALLOC = 37,
    TDX_EV_HEAP_GOAL = 38,
    TDX_EV_GO_LABEL = 39,
    TDX_EV_USER_TASK_BEGIN = 40,
    TDX_EV_USER_TASK_END = 41,
    TDX_EV_USER_REGION_BEGIN = 42,
    TDX_EV_USER_REGION_END = 43,
    TDX_EV_USER_LOG = 44,
    TDX_EV_GO_SWITCH = 45,
    TDX_EV_GO_SWITCH_DESTROY = 46,
    TDX_EV_GO_CREATE_BLOCKED = 47,
    TDX_EV_GO_STATUS_STACK = 48,
    TDX_EV_EXPERIMENTAL_BATCH = 49,
    TDX_EV_SYNC = 50,
    TDX_EV_CLOCK_SNAPSHOT = 51,
    TDX_EV_END_OF_GENERATION = 52,
    TDX_EV_SPAN = 128,
    TDX_EV_SPAN_ALLOC = 129,
    TDX_EV_SPAN_FREE = 130,
    TDX_EV_HEAP_OBJECT = 131,
    TDX_EV_HEAP_OBJECT_ALLOC = 132,
    TDX_EV_HEAP_OBJECT_FREE = 133,
    TDX_EV_GOROUTINE_STACK = 134,
    TDX_EV_GOROUTINE_STACK_ALLOC = 135,
    TDX_EV_GOROUTINE_STACK_FREE = 136,
    TDX_EV_NTYPES = 137,
};

#define TDX_MAX_ARGS 5 /* wire arguments of any event, dt included */

typedef struct tdx_evspec {
    const char *name;               /* NULL for unassigned types */
    uint8_t nargs;                  /* wire arguments (dt included for timed events) */
    bool timed;                     /* first argument is a tick delta */
    bool is_stack;                  /* followed by nframes x 4 frame values */
    bool has_data;                  /* followed by a length-prefixed byte string */
    uint8_t experiment;             /* 0, or the experiment id (1 = AllocFree) */
    int8_t stack_args[2];           /* indexes (into args after dt) of stack ids, -1 if none */
    int8_t string_args[2];          /* indexes (into args after dt) of string ids, -1 if none */
    const char *args[TDX_MAX_ARGS]; /* wire argument names, in order */
} tdx_evspec;

extern const tdx_evspec tdx_specs[TDX_EV_NTYPES];

/* Whether a header version is a v2 version this reader implements (22, 23, 25, 26). */
bool tdx_version_is_v2(int version);
/* Whether a header version is an old-format (v1) version (11, 19, 21). */
bool tdx_version_is_v1(int version);

/* Whether the raw/text tooling of `version` knows type t (Go's per-version spec prefix). */
bool tdx_spec_in_version(int version, unsigned t);

/* The length of Go's table of `version`'s types (Version.Specs()): its known types are below
 * it, those of its later ranges unnamed. 0 for a version without a table (v1). */
unsigned tdx_spec_count(int version);

/* The name Go's parser uses for type t in messages of trace `version`: the spec name when the
 * version's table has it, otherwise "Invalid(<t>)". buf must hold 24 bytes. */
const char *tdx_spec_version_name(int version, unsigned t, char *buf);

/* Looks a name up among the types known to `version`; returns the type or -1. */
int tdx_spec_lookup(int version, const char *name, unsigned len);

#endif
