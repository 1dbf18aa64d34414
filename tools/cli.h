/* cli.h: what the traceidx subcommands share: error reporting, option helpers, progress.
 * Only tools/ prints and exits; the library reports through tdx_err. */
#ifndef TDX_CLI_H
#define TDX_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "core/reader.h"
#include "core/source.h"
#include "index/format/reader.h"
#include "index/analysis/timehist.h"

#define TDX_EXIT_OK 0
#define TDX_EXIT_FAIL 1  /* bad input, or the requested check failed */
#define TDX_EXIT_USAGE 2 /* bad command line */

/* Prints "traceidx: FILE: offset N: MESSAGE" (offset omitted when unknown) to stderr. */
void cli_report(const char *file, const tdx_err *err);
/* The same for an error in a trace: a text trace's offsets, which are into its converted bytes,
 * become the line they came from; a fuzz file's name its []byte value. */
void cli_report_trace(const char *file, const tdx_source *src, const tdx_err *err);
/* Prints a usage error and returns TDX_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether argv[i] asks for help. */
bool cli_is_help(const char *arg);
/* Parses a -j value (>= 1); 0 on success. */
int cli_parse_jobs(const char *s, int *jobs);
/* Parses a whole decimal argument (no sign for u64); 0 on success, -1 if malformed or out of
 * range. */
int cli_parse_u64(const char *s, uint64_t *v);
int cli_parse_i64(const char *s, int64_t *v);
/* Parses a hexadecimal argument, 0x optional; 0 on success, -1 if malformed or past 2^64 - 1. */
int cli_parse_hex(const char *s, uint64_t *v);
/* Parses a byte count: digits with an optional suffix k, M or G (powers of 1024; also KiB, MiB,
 * GiB, kB, MB, GB) or B; 0 on success, -1 if malformed or past 2^64 - 1. */
int cli_parse_bytes(const char *s, uint64_t *v);
/* Parses a duration as Go's time.ParseDuration does (1.5s, 10ms, 2m3s, 500us or 500µs), or a
 * bare integer of ns; 0 on success, -1 if malformed, negative or past 2^63 ns. */
int cli_parse_duration(const char *s, int64_t *out);

/* The bytes of section `kind` that a command needs (checked as tdx_index_section checks them),
 * or NULL after saying why on stderr: an index built before traceidx had the section (`what`
 * names it) is to be rebuilt; a damaged one is reported. */
const uint8_t *cli_index_section(tdx_index *ix, uint32_t kind, const char *what, uint64_t *len);
/* Opens PATH as an index; when PATH is a trace instead, opens PATH.tidx and checks that it was
 * built from this trace (stale indexes are refused): size, header and a sampled hash, or the hash
 * of every byte with full_check. Reports errors itself. */
int cli_open_index(const char *path, tdx_index *ix, bool full_check);
/* For a command that can read trace PATH itself: opens PATH.tidx when it is there and was built
 * from this trace (checked as above, sampled) and returns 1; else 0, saying on stderr why an
 * index that is there is not used (stale, damaged). */
int cli_index_beside(const char *path, tdx_index *ix);

/* Parses "-j N" or "-jN" at argv[*i]; returns 1 if it was one (advancing *i), -1 if malformed. */
int cli_jobs_arg(int argc, char **argv, int *i, int *jobs);

/* Whether PATH is a regular file that starts with the index magic. */
bool cli_is_index_file(const char *path);
/* Reports a failure to open PATH as a trace; when PATH is an index, says so and which commands
 * read one (its bytes are no Go trace header). */
void cli_report_trace_open(const char *path, const tdx_err *err);
/* " at byte offset N" for an index of a damaged trace (build --partial), or "" when the offset is
 * unknown: BUF of N bytes (48 is enough). */
void cli_damage_where(const tdx_index *ix, char *buf, size_t n);
/* Refuses (printing why, returning -1) an output path that names the same file as input IN:
 * the rename would replace what the command reads. 0 otherwise, or when OUT does not exist. */
int cli_refuse_own_input(const char *out, const char *in);
/* Opens a trace (binary, text or fuzz file) and checks its header is a version we read. */
int cli_open_trace(const char *path, tdx_source *src);

/* Opens PATH as a trace (reporting a failure itself: *open_failed = 1) and reads it on `jobs`
 * threads, passing every event to emit (may be NULL), with progress named `cmd` unless quiet.
 * Returns the reader's result; the caller closes src when it opened. */
int cli_read_trace(const char *cmd, const char *path, int jobs, bool quiet, tdx_emit_fn emit,
                   void *ectx, tdx_source *src, tdx_read_stats *st, tdx_err *err, int *open_failed);

/* Progress on stderr when it is a terminal. */
typedef struct cli_progress cli_progress;
struct cli_progress {
    bool enabled;
    double start;
    double last;
    const char *what;
};
void cli_progress_init(cli_progress *p, const char *what, bool quiet);
/* Passes every event an index holds, in order, to emit with the index's tables, giving back the
 * blocks' pages as it goes; progress on prog (NULL: none). 0; -1 with err set when a block or a
 * string is damaged (or memory runs out); 1 when emit returned non-zero (its own report). */
int cli_index_events(tdx_index *ix, tdx_emit_fn emit, void *ctx, cli_progress *prog, tdx_err *err);
void cli_progress_update(void *ctx, uint64_t done, uint64_t total, uint64_t events);
/* The line for work counted in other units than bytes: done of total as a percentage, and the
 * ETA; then, if `then` is not NULL, what comes after it. */
void cli_progress_fraction(cli_progress *p, uint64_t done, uint64_t total, const char *then);
void cli_progress_end(cli_progress *p);
double cli_now(void);
/* The process's peak resident set so far, in MiB (0 if unknown). */
double cli_peak_rss_mib(void);

/* While an output is being written to a temporary file: removes `path` if the process is
 * interrupted (SIGINT, SIGTERM, SIGHUP) or crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
 * unless something else handles those) and then dies of the signal as it would have. NULL: none
 * (call it after the file is renamed into place or removed). One file at a time. */
void cli_remove_on_signal(const char *path);
/* Holds SIGINT, SIGTERM, SIGHUP and the crash signals until the next cli_remove_on_signal,
 * which delivers what arrived meanwhile. Called before the temporary file is created (while the
 * process has one thread), so that no signal falls between its creation and
 * cli_remove_on_signal. */
void cli_hold_interrupts(void);

/* Formats a nanosecond duration as Go's time.Duration.String() does. */
void cli_duration(char *buf, size_t cap, int64_t ns);
/* The columns text takes on a terminal: its UTF-8 characters ("µs" is two bytes, one column). */
size_t cli_text_width(const char *s, size_t n);
/* For a command's external sorts: a path in TMPDIR (else /tmp) beside which their unnamed
 * scratch files are made. buf must outlive the sorts given it. */
void cli_scratch_beside(char *buf, size_t n);
/* Writes b to stdout and empties it once it holds 64 KiB or more, or with `final` (then also
 * flushing stdout); -1, said on stderr, when stdout refused it. */
int cli_flush_out(tdx_buf *b, bool final);
/* Go's duration histogram (cmd/trace's task and region pages) as text: from the smallest bucket
 * it shows to the largest, each row its lower bound, a bar scaled to the fullest bucket and the
 * count; then the last bucket's upper bound. */
void cli_hist_text(tdx_buf *o, const tdx_timehist *h);
/* The same rows as a JSON array of {"min_ns", "max_ns", "count"} ([] when empty). */
void cli_hist_json(tdx_buf *o, const tdx_timehist *h);
/* Appends s[0..n) padded with spaces to `width` columns, on the left (right-aligned) or right. */
void cli_pad(tdx_buf *o, const char *s, size_t n, size_t width, bool right_align);

/* Subcommands. */
int cmd_text2bin(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_viewjson(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_ranges(int argc, char **argv);
int cmd_goroutines(int argc, char **argv);
int cmd_tasks(int argc, char **argv);
int cmd_pprof(int argc, char **argv);
int cmd_regions(int argc, char **argv);
int cmd_mmu(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* The subcommands by name (commands.c): main's dispatch, and the fuzz harnesses'. */
typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} cli_command;
/* The command called name, or NULL. */
const cli_command *cli_find_command(const char *name);
/* Lists every command with its summary, a line each. */
void cli_list_commands(FILE *f);

#endif
