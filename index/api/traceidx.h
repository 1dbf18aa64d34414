/* traceidx.h: libtraceidx's public API, for programs that read traceidx indexes of Go execution
 * traces: open one, list its split ranges, write viewer JSON through a callback, read goroutine
 * statistics. (docs/api.md has an example; `traceidx build TRACE` makes the index.)
 *
 * Conventions. Handles are opaque. A function that can fail returns 0 on success and -1 on
 * failure; when its `err` argument is not NULL, a failure also stores in *err a new error,
 * which the caller frees with traceidx_error_free (on success *err is left as it was).
 * Iterators return 1 (an item), 0 (no more) or -1 (an error). Strings the library gives out
 * belong to the handle they came from and stay valid as each function says. A handle may be
 * used by one thread at a time; separate handles are independent. Nothing here prints, exits or
 * keeps global state. */
#ifndef TRACEIDX_H
#define TRACEIDX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header (the library's is traceidx_version()). */
#define TRACEIDX_VERSION_MAJOR 0
#define TRACEIDX_VERSION_MINOR 1
#define TRACEIDX_VERSION_PATCH 0
#define TRACEIDX_VERSION_STRING "0.1.0"
/* One number that grows with each release: 10000 * major + 100 * minor + patch. */
#define TRACEIDX_VERSION                                                                           \
    (TRACEIDX_VERSION_MAJOR * 10000 + TRACEIDX_VERSION_MINOR * 100 + TRACEIDX_VERSION_PATCH)

/* The version of the library linked, as "MAJOR.MINOR.PATCH" (static storage). */
const char *traceidx_version(void);

/* ---- errors ---- */

typedef enum traceidx_errcode {
    TRACEIDX_OK = 0,
    TRACEIDX_ERR_IO,          /* the system refused to open, read or map a file */
    TRACEIDX_ERR_NOMEM,       /* out of memory */
    TRACEIDX_ERR_USAGE,       /* a bad argument (a NULL handle, a query that contradicts itself) */
    TRACEIDX_ERR_NOT_FOUND,   /* no such goroutine, task, group or split range in the trace */
    TRACEIDX_ERR_NO_INDEX,    /* a trace path whose index (TRACE.tidx) does not exist */
    TRACEIDX_ERR_STALE,       /* TRACE.tidx was not built from the trace as it is now */
    TRACEIDX_ERR_INDEX,       /* a damaged index, or one an earlier traceidx built: rebuild it */
    TRACEIDX_ERR_FORMAT,      /* neither an index nor a Go trace, or a malformed trace */
    TRACEIDX_ERR_UNSUPPORTED, /* a trace or index version this library does not read */
    TRACEIDX_ERR_WRITE        /* the write callback returned non-zero */
} traceidx_errcode;

/* What went wrong: a code, a message and, where known, a byte offset in the file. */
typedef struct traceidx_error traceidx_error;

/* The message, naming the file and the offset when known, and what to do where there is
 * something to do ("... rebuild it with `traceidx build TRACE`"). Valid until the error is
 * freed. e may be NULL ("" then). */
const char *traceidx_error_text(const traceidx_error *e);
/* The code (TRACEIDX_OK for NULL). */
traceidx_errcode traceidx_error_code(const traceidx_error *e);
/* The byte offset in the file the error is about, or TRACEIDX_NO_OFFSET. */
#define TRACEIDX_NO_OFFSET UINT64_MAX
uint64_t traceidx_error_offset(const traceidx_error *e);
/* A code's name, such as "TRACEIDX_ERR_STALE" (static storage; "?" for an unknown code). */
const char *traceidx_errcode_name(traceidx_errcode code);
/* Frees an error (NULL is fine). */
void traceidx_error_free(traceidx_error *e);

/* ---- an index ---- */

typedef struct traceidx_index traceidx_index;

/* traceidx_open's flags: when path is a trace, check its index against every byte of it (as
 * `traceidx info` does) instead of its size, header and a sample (as `traceidx query` does). */
#define TRACEIDX_OPEN_FULL_CHECK 1u

/* Opens `path`: an index (`traceidx build` wrote it), or a Go trace whose index TRACE.tidx
 * is beside it and was built from it as it is now. The index is mapped, not read: opening
 * costs little whatever its size. On success *out is a handle the caller closes with
 * traceidx_close. Errors: TRACEIDX_ERR_IO, _NO_INDEX (a trace without TRACE.tidx), _STALE (the
 * trace changed since TRACE.tidx was built), _INDEX (damaged or too old), _FORMAT (neither an
 * index nor a trace), _UNSUPPORTED, _NOMEM, _USAGE (path or out NULL). */
int traceidx_open(const char *path, unsigned flags, traceidx_index **out, traceidx_error **err);
/* Closes the index and frees everything given out from it (NULL is fine). */
void traceidx_close(traceidx_index *ix);
/* The path of the index file read (TRACE.tidx when a trace was opened); valid until closed. */
const char *traceidx_path(const traceidx_index *ix);

/* What `traceidx info` says of an index. Times are the trace's clock, in ns. */
typedef struct traceidx_info {
    uint32_t format_version; /* of the index file */
    uint32_t go_version;     /* of the trace's format: 22 for Go 1.22, 11 for Go 1.11, ... */
    uint64_t trace_bytes, index_bytes;
    int64_t first_time_ns, last_time_ns, span_ns; /* span = last - first */
    uint64_t generations, events, goroutines, procs, threads;
    int partial; /* built from a damaged trace's valid part (`build --partial`) */
} traceidx_info;

/* Fills *out; cannot fail. */
void traceidx_get_info(const traceidx_index *ix, traceidx_info *out);

/* ---- split ranges and queries ---- */

/* A range go tool trace splits the proc view into (about 100 MiB of JSON each). */
typedef struct traceidx_range {
    const char *name;   /* as go tool trace names it, NUL-terminated */
    int64_t start, end; /* output-event indexes, both inclusive */
    int64_t start_time_ns, end_time_ns;
    uint64_t bytes; /* the JSON size estimate that closed the range */
} traceidx_range;

/* The split ranges, as `traceidx ranges` lists them: *out gets an array of *n ranges (NULL
 * and 0 when the trace is too small to split), which the caller frees, names and all, with
 * traceidx_ranges_free. Errors: TRACEIDX_ERR_INDEX, _NOMEM, _USAGE. */
int traceidx_ranges(traceidx_index *ix, traceidx_range **out, size_t *n, traceidx_error **err);
void traceidx_ranges_free(traceidx_range *ranges);

/* Which view a query draws. */
typedef enum traceidx_focus {
    TRACEIDX_FOCUS_NONE = 0,       /* the proc (or thread) view of every goroutine */
    TRACEIDX_FOCUS_GOROUTINE,      /* the goroutine view of goroutine `id` and the goroutines
                                    * that unblocked it, over its life (goid=ID) */
    TRACEIDX_FOCUS_TASK,           /* task `id` and its subtasks over the proc (or thread) view
                                    * (focustask=ID) */
    TRACEIDX_FOCUS_TASK_GOROUTINES /* the goroutine view of task `id`'s goroutines, with its
                                    * regions (taskid=ID) */
} traceidx_focus;

/* Which part of the view a query writes. */
typedef enum traceidx_part {
    TRACEIDX_PART_ALL = 0,     /* all of it */
    TRACEIDX_PART_SPLIT_RANGE, /* split range number `from` (traceidx_ranges), as go tool trace
                                * serves it */
    TRACEIDX_PART_EVENTS,      /* output events `from` to `to`, both inclusive (/jsontrace's
                                * start and end) */
    TRACEIDX_PART_WINDOW       /* the time window [from, to], in ns since the trace's first
                                * event: every slice, arrow and instant overlapping it, and
                                * the counters' values as of `from` */
} traceidx_part;

/* A query; all zeros is the whole proc view. `traceidx query`'s options map onto it: --view
 * threads is `threads`, --goroutine/--task/--taskid are `focus` and `id`, --range '#N' and
 * --start/--end and --range START:END are `part`, `from` and `to`. */
typedef struct traceidx_query {
    int threads; /* non-zero: the OS-thread view instead of the proc view (FOCUS_NONE, _TASK) */
    traceidx_focus focus;
    uint64_t id; /* the goroutine or task of focus */
    traceidx_part part;
    int64_t from, to;
} traceidx_query;

/* Receives the document's bytes in order; non-zero stops the query (TRACEIDX_ERR_WRITE). */
typedef int (*traceidx_write_fn)(void *ctx, const void *bytes, size_t n);

/* Writes the trace-viewer JSON go tool trace serves at /jsontrace for q, byte for byte what
 * `traceidx query` writes, through write(ctx, ...). Only the part of the index the answer needs
 * is read. Errors: TRACEIDX_ERR_USAGE (threads with a goroutine view, a window that ends before
 * it starts, an unknown focus or part), _NOT_FOUND (no such goroutine, task or split range;
 * then nothing was written), _WRITE, _INDEX, _NOMEM; after an error the bytes written so far
 * are not a whole document. */
int traceidx_query_run(traceidx_index *ix, const traceidx_query *q, traceidx_write_fn write,
                       void *ctx, traceidx_error **err);

/* ---- goroutine statistics ---- */

/* Go's goroutine analysis (go tool trace's /goroutines and /goroutine pages), as `traceidx
 * goroutines` shows it: goroutines grouped by the function each started with. */
typedef struct traceidx_gstats traceidx_gstats;

/* A group: its name (the start function; "" for goroutines with no stack, which go tool trace
 * calls "(Inactive, no stack trace sampled)"), how many goroutines, their execution time. */
typedef struct traceidx_group {
    const char *name; /* NUL-terminated; name_len bytes (a name may hold a NUL byte) */
    size_t name_len;
    uint64_t count;
    int64_t exec_ns;
} traceidx_group;

/* A duration with its label: a block reason ("chan receive", "network", ...) or a special
 * range ("GC mark assist", ...). */
typedef struct traceidx_labeled_ns {
    const char *label; /* NUL-terminated; label_len bytes */
    size_t label_len;
    int64_t ns;
} traceidx_labeled_ns;

/* One goroutine's statistics, as a row of `traceidx goroutines --name` shows them. */
typedef struct traceidx_goroutine {
    int64_t id;
    const char *name; /* its group's name; NUL-terminated, name_len bytes */
    size_t name_len;
    uint64_t pc; /* of its start function */
    /* times since the trace's first event; start and end only when it ran and when it ended
     * within the trace (started, ended) */
    int64_t creation_ns, start_ns, end_ns;
    int started, ended;
    int64_t total_ns;
    int64_t exec_ns, sched_wait_ns, syscall_ns, syscall_block_ns, unknown_ns;
    const traceidx_labeled_ns *block; /* time blocked, by reason */
    size_t nblock;
    const traceidx_labeled_ns *ranges; /* time in special ranges */
    size_t nranges;
} traceidx_goroutine;

/* Opens the index's goroutine statistics (read in place: computed when the index was built).
 * On success *out is a handle the caller closes with traceidx_gstats_close, before closing ix.
 * Errors: TRACEIDX_ERR_INDEX (damaged, or built by a traceidx that did not store them: rebuild
 * it; `traceidx goroutines` can compute them from the events instead), _NOMEM, _USAGE. */
int traceidx_gstats_open(traceidx_index *ix, traceidx_gstats **out, traceidx_error **err);
void traceidx_gstats_close(traceidx_gstats *gs);
/* Every goroutine's count and execution time, and the number of groups. */
uint64_t traceidx_gstats_goroutines(const traceidx_gstats *gs);
int64_t traceidx_gstats_exec_ns(const traceidx_gstats *gs);
uint64_t traceidx_gstats_ngroups(const traceidx_gstats *gs);
/* Group i (0 <= i < ngroups), in the table's order: execution time, the largest first, then
 * name. The strings stay valid until gs is closed. Errors: TRACEIDX_ERR_NOT_FOUND (i out of
 * range). */
int traceidx_gstats_group(const traceidx_gstats *gs, uint64_t i, traceidx_group *out,
                          traceidx_error **err);
/* The number of the group called name (name_len bytes). Errors: TRACEIDX_ERR_NOT_FOUND. */
int traceidx_gstats_find_group(const traceidx_gstats *gs, const char *name, size_t name_len,
                               uint64_t *i, traceidx_error **err);
/* Starts reading group i's goroutines. Errors: TRACEIDX_ERR_NOT_FOUND, _INDEX (damaged). */
int traceidx_gstats_begin(traceidx_gstats *gs, uint64_t i, traceidx_error **err);
/* The group's next goroutine, by id: 1 with *out filled (its arrays valid until the next call
 * on gs), 0 after the last, -1 on an error (TRACEIDX_ERR_INDEX, _NOMEM, or _USAGE before
 * traceidx_gstats_begin). */
int traceidx_gstats_next(traceidx_gstats *gs, traceidx_goroutine *out, traceidx_error **err);

#ifdef __cplusplus
}
#endif

#endif
