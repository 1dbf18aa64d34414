/* goprof.h: go tool trace's four pprof-style profiles (network blocking, synchronization blocking,
 * syscalls, scheduler latency: cmd/trace's /io, /block, /syscall, /sched and -pprof=TYPE), summed
 * per stack over the ordered goroutine transitions, and their section PPROF.
 *
 * Go measures each wait, from the transition into the state to the one out of it, against the
 * goroutine's life in the summary, from its first run to its end: a wait that ends in the
 * goroutine's first run counts nothing, and one of a goroutine that never runs counts whole.
 * A wait is keyed by the stack of the event that began it (for scheduler latency, the stack of
 * whatever made the goroutine runnable), and stacks whose first 128 PCs are equal are one. */
#ifndef TDX_GOPROF_H
#define TDX_GOPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/gen.h"
#include "core/hmap.h"
#include "core/mem.h"

enum { TDX_PROF_NET, TDX_PROF_SYNC, TDX_PROF_SYSCALL, TDX_PROF_SCHED, TDX_PROF_COUNT };

/* Go's -pprof names ("net", "sync", "syscall", "sched"), and the profile of one (-1: none). */
const char *tdx_goprof_name(int which);
int tdx_goprof_parse(const char *name);

/* What a block reason qualifies for: TDX_PROF_NET's and TDX_PROF_SYNC's bits (1 << profile). */
unsigned tdx_goprof_reason_bits(const uint8_t *reason, size_t n);
/* The goroutine state profile `which` (TDX_PROF_*) measures the time in. */
uint8_t tdx_goprof_state(int which);
/* Go's interval overlap of [a, b] and [c, d]: 0 when they are apart, else the later start to the
 * earlier end (a wait against a goroutine's life, or against a region). */
int64_t tdx_goprof_overlap(int64_t a, int64_t b, int64_t c, int64_t d);

/* A wait that ended before its goroutine first ran: it counts only if the goroutine never does. */
typedef struct tdx_goprof_wait {
    int64_t from, to;
    uint64_t seq;
    uint32_t stack;
    uint8_t which;
} tdx_goprof_wait;

/* Waits counted before their goroutine had a name (Go files them under the final one), summed
 * per profile and stack, so that a goroutine that never gets a name holds one per stack. */
typedef struct tdx_goprof_done {
    uint64_t count;
    int64_t ns;
    uint64_t seq;
    uint32_t stack;
    uint8_t which;
} tdx_goprof_done;

/* One goroutine's waits being measured. */
typedef struct tdx_goprof_g {
    int64_t at[TDX_PROF_COUNT];
    uint32_t stack[TDX_PROF_COUNT];
    uint8_t on; /* bit per profile */
    TDX_VEC(tdx_goprof_wait) pending;
    TDX_VEC(tdx_goprof_done) unnamed;
} tdx_goprof_g;

typedef struct tdx_goprof_sum {
    uint32_t stack, name; /* name: the goroutines' (the caller's string id; 0 is "") */
    uint8_t which;
    uint64_t count;
    int64_t ns;   /* Go's time.Duration sum (wrapping) */
    uint64_t seq; /* the event of its latest wait: of stacks that are one, the latest names it */
} tdx_goprof_sum;

typedef struct tdx_goprof {
    tdx_hmap idx; /* (stack, name, profile) as one key (+ probe) -> sums index */
    TDX_VEC(tdx_goprof_sum) sums;
    int oom;
} tdx_goprof;

void tdx_goprof_free(tdx_goprof *p);
void tdx_goprof_g_free(tdx_goprof_g *g);

/* A transition of the goroutine to state `to` at time t (event number seq), with the event's
 * stack and its reason's bits; start and end: the goroutine's summary times after it (0: not
 * yet), name its name so far (0: none yet). Sets p->oom when memory runs out. */
void tdx_goprof_step(tdx_goprof *p, tdx_goprof_g *g, int64_t t, uint64_t seq, uint8_t to,
                     unsigned reason_bits, uint32_t stack, int64_t start, int64_t end,
                     uint32_t name);
/* Adds one wait of ns (counted only when above 0) to the sum of (profile, name, stack); seq, the
 * event that ended it, names the stack among those Go takes as one. Sets p->oom. */
void tdx_goprof_add(tdx_goprof *p, int which, uint32_t name, uint32_t stack, int64_t ns,
                    uint64_t seq);

/* The goroutine's summary record ends (it ended at `end`, or the trace did), named `name`: its
 * waits pending since before a first run that never came count, and those counted before it had
 * a name are filed under it. */
void tdx_goprof_settle(tdx_goprof *p, tdx_goprof_g *g, int64_t end, uint32_t name);

/* ---- the section ---- */

/* The text of a string id of the sums' names. */
typedef tdx_str (*tdx_goprof_str_fn)(const void *ctx, uint32_t id);

/* PPROF's bytes. 0 or -1 (memory). */
int tdx_goprof_encode(const tdx_goprof *p, tdx_goprof_str_fn str, const void *ctx, tdx_buf *out);

/* One stack's total in a profile. */
typedef struct tdx_goprof_rec {
    uint32_t stack; /* a stack of the tables (0: no stack) */
    uint64_t count;
    int64_t ns;
    uint64_t seq;
} tdx_goprof_rec;
typedef TDX_VEC(tdx_goprof_rec) tdx_goprof_recs;

/* Merges the records whose stacks' first 128 PCs are equal (padded with zeros), in place, each
 * group named by the stack of its latest wait (highest seq), as Go's profile does. 0, or -1 on
 * memory exhaustion. */
int tdx_goprof_merge(tdx_goprof_recs *r, const tdx_gen *tabs);

/* Profile `which` (-1: none, only the checks) of section bytes p[0..n) (at file offset off), of
 * the goroutines named `name`
 * (NULL or "": all of them, as in Go), as Go gives it: stacks with equal first 128 PCs (in tabs)
 * merged, each named by the stack of its latest wait; into out by stack. *named is false when
 * no goroutine of that name has a wait in any profile. Checks the whole section. 0, or -1 with
 * err set. */
int tdx_goprof_read(const uint8_t *p, size_t n, uint64_t off, const tdx_gen *tabs, int which,
                    const tdx_str *name, tdx_goprof_recs *out, bool *named, tdx_err *err);

#endif
