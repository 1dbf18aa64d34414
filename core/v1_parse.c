/* v1_parse.c: Go's tracev1 parser: record decoding, the batch index, the merge of the per-P streams
 * by goroutine sequence numbers, the syscall-exit and tick fix-ups, and the validation pass.
 * The merge follows Go's loop step by step (frontier heap, proc list order), because the order of
 * events with equal timestamps depends on it. */
#include "v1.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "pdqsort.h"
#include "source.h"
#include "varint.h"

#define OOM(err) tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory")
#define MALFORMED "malformatted base-128 varint"

/* ---- the event descriptor table (Go's EventDescriptions) ---- */

typedef struct v1desc {
    const char *name;
    uint8_t nargs;  /* named arguments */
    uint8_t stack;  /* a trailing stack id follows them */
    uint8_t minver; /* first format version with the type */
    const char *args[3];
} v1desc;

static const v1desc descs[TDX_V1_NTYPES] = {
    [TDX_V1_NONE] = {"None", 0, 0, 5, {0}},
    [TDX_V1_BATCH] = {"Batch", 2, 0, 5, {"p", "ticks"}},
    [TDX_V1_FREQUENCY] = {"Frequency", 1, 0, 5, {"freq"}},
    [TDX_V1_STACK] = {"Stack", 2, 0, 5, {"id", "siz"}},
    [TDX_V1_GOMAXPROCS] = {"Gomaxprocs", 1, 1, 5, {"procs"}},
    [TDX_V1_PROC_START] = {"ProcStart", 1, 0, 5, {"thread"}},
    [TDX_V1_PROC_STOP] = {"ProcStop", 0, 0, 5, {0}},
    [TDX_V1_GC_START] = {"GCStart", 1, 1, 5, {"seq"}},
    [TDX_V1_GC_DONE] = {"GCDone", 0, 0, 5, {0}},
    [TDX_V1_STW_START] = {"GCSTWStart", 1, 0, 5, {"kindid"}},
    [TDX_V1_STW_DONE] = {"GCSTWDone", 0, 0, 5, {0}},
    [TDX_V1_GC_SWEEP_START] = {"GCSweepStart", 0, 1, 5, {0}},
    [TDX_V1_GC_SWEEP_DONE] = {"GCSweepDone", 2, 0, 5, {"swept", "reclaimed"}},
    [TDX_V1_GO_CREATE] = {"GoCreate", 2, 1, 5, {"g", "stack"}},
    [TDX_V1_GO_START] = {"GoStart", 2, 0, 5, {"g", "seq"}},
    [TDX_V1_GO_END] = {"GoEnd", 0, 0, 5, {0}},
    [TDX_V1_GO_STOP] = {"GoStop", 0, 1, 5, {0}},
    [TDX_V1_GO_SCHED] = {"GoSched", 0, 1, 5, {0}},
    [TDX_V1_GO_PREEMPT] = {"GoPreempt", 0, 1, 5, {0}},
    [TDX_V1_GO_SLEEP] = {"GoSleep", 0, 1, 5, {0}},
    [TDX_V1_GO_BLOCK] = {"GoBlock", 0, 1, 5, {0}},
    [TDX_V1_GO_UNBLOCK] = {"GoUnblock", 2, 1, 5, {"g", "seq"}},
    [TDX_V1_GO_BLOCK_SEND] = {"GoBlockSend", 0, 1, 5, {0}},
    [TDX_V1_GO_BLOCK_RECV] = {"GoBlockRecv", 0, 1, 5, {0}},
    [TDX_V1_GO_BLOCK_SELECT] = {"GoBlockSelect", 0, 1, 5, {0}},
    [TDX_V1_GO_BLOCK_SYNC] = {"GoBlockSync", 0, 1, 5, {0}},
    [TDX_V1_GO_BLOCK_COND] = {"GoBlockCond", 0, 1, 5, {0}},
    [TDX_V1_GO_BLOCK_NET] = {"GoBlockNet", 0, 1, 5, {0}},
    [TDX_V1_GO_SYSCALL] = {"GoSysCall", 0, 1, 5, {0}},
    [TDX_V1_GO_SYSEXIT] = {"GoSysExit", 3, 0, 5, {"g", "seq", "ts"}},
    [TDX_V1_GO_SYSBLOCK] = {"GoSysBlock", 0, 0, 5, {0}},
    [TDX_V1_GO_WAITING] = {"GoWaiting", 1, 0, 5, {"g"}},
    [TDX_V1_GO_INSYSCALL] = {"GoInSyscall", 1, 0, 5, {"g"}},
    [TDX_V1_HEAP_ALLOC] = {"HeapAlloc", 1, 0, 5, {"mem"}},
    [TDX_V1_HEAP_GOAL] = {"HeapGoal", 1, 0, 5, {"mem"}},
    [TDX_V1_TIMER_GOROUTINE] = {"TimerGoroutine", 1, 0, 5, {"g"}},
    [TDX_V1_FUTILE_WAKEUP] = {"FutileWakeup", 0, 0, 5, {0}},
    [TDX_V1_STRING] = {"String", 0, 0, 7, {0}},
    [TDX_V1_GO_START_LOCAL] = {"GoStartLocal", 1, 0, 7, {"g"}},
    [TDX_V1_GO_UNBLOCK_LOCAL] = {"GoUnblockLocal", 1, 1, 7, {"g"}},
    [TDX_V1_GO_SYSEXIT_LOCAL] = {"GoSysExitLocal", 2, 0, 7, {"g", "ts"}},
    [TDX_V1_GO_START_LABEL] = {"GoStartLabel", 3, 0, 8, {"g", "seq", "labelid"}},
    [TDX_V1_GO_BLOCK_GC] = {"GoBlockGC", 0, 1, 8, {0}},
    [TDX_V1_GC_MARK_ASSIST_START] = {"GCMarkAssistStart", 0, 1, 9, {0}},
    [TDX_V1_GC_MARK_ASSIST_DONE] = {"GCMarkAssistDone", 0, 0, 9, {0}},
    [TDX_V1_USER_TASK_CREATE] = {"UserTaskCreate", 3, 1, 11, {"taskid", "pid", "typeid"}},
    [TDX_V1_USER_TASK_END] = {"UserTaskEnd", 1, 1, 11, {"taskid"}},
    [TDX_V1_USER_REGION] = {"UserRegion", 3, 1, 11, {"taskid", "mode", "typeid"}},
    [TDX_V1_USER_LOG] = {"UserLog", 2, 1, 11, {"id", "keyid"}},
    [TDX_V1_CPU_SAMPLE] = {"CPUSample", 3, 1, 19, {"ts", "p", "g"}},
};

const char *tdx_v1_type_name(unsigned t) {
    return t < TDX_V1_NTYPES ? descs[t].name : NULL;
}

int tdx_v1_want_args(unsigned t) {
    if (t >= TDX_V1_NTYPES || t == TDX_V1_STACK) return -1;
    int n = descs[t].nargs + descs[t].stack;
    if (t == TDX_V1_BATCH || t == TDX_V1_FREQUENCY || t == TDX_V1_TIMER_GOROUTINE) return n;
    return n + 1; /* the timestamp delta */
}

/* ---- record decoding (Go's readRawEvent) ---- */

void tdx_v1_decoder_init(tdx_v1_decoder *d, const uint8_t *data, size_t size, size_t off,
                         int version, tdx_v1_strtab *strings) {
    d->data = data;
    d->size = size;
    d->off = off;
    d->version = version;
    d->strings = strings;
}

static int read_val(tdx_v1_decoder *d, uint64_t *v) {
    int k = tdx_uvarint(d->data + d->off, d->data + d->size, v);
    if (k < 0) return -1;
    d->off += (size_t)k;
    return 0;
}

/* Go's readFull: fails when nothing is left, even for n == 0. */
static const uint8_t *read_full(tdx_v1_decoder *d, uint64_t n) {
    if (d->off >= d->size || n > d->size - d->off) return NULL;
    const uint8_t *p = d->data + d->off;
    d->off += (size_t)n;
    return p;
}

static bool discard(tdx_v1_decoder *d, uint64_t n) {
    if (n > d->size - d->off) return false;
    d->off += (size_t)n;
    return true;
}

static int store_string(tdx_v1_strtab *t, uint64_t id, const uint8_t *p, uint64_t n) {
    tdx_str s = {p, (uint32_t)n};
    if (tdx_hmap_put(&t->ids, id, (uint32_t)t->v.n) || tdx_vec_push(&t->v, s) ||
        tdx_vec_push(&t->wire, id))
        return -1;
    return 0;
}

static int decode_string(tdx_v1_decoder *d, unsigned flags, uint64_t start, tdx_err *err) {
    uint64_t id, ln;
    if (flags & TDX_V1_SKIP_STRINGS) {
        if (read_val(d, &id) || read_val(d, &ln))
            return tdx_errf(err, TDX_EFORMAT, start, MALFORMED);
        if (!discard(d, ln)) return tdx_errf(err, TDX_EFORMAT, start, "failed to read trace: EOF");
        return 0;
    }
    if (read_val(d, &id)) return tdx_errf(err, TDX_EFORMAT, start, MALFORMED);
    if (id == 0) return tdx_errf(err, TDX_EFORMAT, start, "string has invalid id 0");
    if (d->strings && tdx_hmap_get(&d->strings->ids, id) != TDX_HMAP_EMPTY)
        return tdx_errf(err, TDX_EFORMAT, start, "string has duplicate id %" PRIu64, id);
    if (read_val(d, &ln)) return tdx_errf(err, TDX_EFORMAT, start, MALFORMED);
    if (ln == 0) return tdx_errf(err, TDX_EFORMAT, start, "string has invalid length 0");
    if (ln > TDX_V1_MAX_STRING)
        return tdx_errf(err, TDX_EFORMAT, start, "string has too large length %" PRIu64, ln);
    const uint8_t *p = read_full(d, ln);
    if (!p) return tdx_errf(err, TDX_EFORMAT, start, "failed to read trace: unexpected EOF");
    if (d->strings && store_string(d->strings, id, p, ln)) return OOM(err);
    return 0;
}

int tdx_v1_next_raw(tdx_v1_decoder *d, unsigned flags, tdx_v1_raw *raw, tdx_err *err) {
    if (d->off >= d->size) return 0;
    uint64_t start = d->off;
    uint8_t b = d->data[d->off++];
    unsigned typ = b & 0x3f, narg = (unsigned)(b >> 6) + 1;
    raw->type = (uint8_t)typ;
    raw->off = start;
    raw->nargs = 0;
    raw->args = d->args;
    raw->batch_p = 0;
    raw->msg = (tdx_str){(const uint8_t *)"", 0};
    if (typ == TDX_V1_NONE || typ >= TDX_V1_NTYPES || descs[typ].minver > d->version)
        return tdx_errf(err, TDX_EFORMAT, start, "unknown event type %u", typ);
    if (typ == TDX_V1_STRING) {
        raw->type = TDX_V1_NONE;
        return decode_string(d, flags, start, err) ? -1 : 1;
    }
    if (typ == TDX_V1_BATCH) {
        if (narg != 2)
            return tdx_errf(err, TDX_EFORMAT, start,
                            "EvBatch has wrong number of arguments: got %u, want 2", narg);
        uint64_t pid, ticks;
        if (read_val(d, &pid)) return tdx_errf(err, TDX_EFORMAT, start, MALFORMED);
        if (pid != UINT64_MAX && pid > INT32_MAX)
            return tdx_errf(err, TDX_EFORMAT, start,
                            "processor ID %" PRIu64 " is larger than maximum of %" PRIu64, pid,
                            UINT64_MAX);
        if (read_val(d, &ticks)) return tdx_errf(err, TDX_EFORMAT, start, MALFORMED);
        raw->batch_p = pid == UINT64_MAX ? -1 : (int32_t)pid;
        d->args[0] = pid;
        d->args[1] = ticks;
        raw->nargs = 2;
        return 1;
    }
    bool skip = (flags & TDX_V1_SKIP_ARGS) != 0;
    if (narg <= 3) {
        for (unsigned i = 0; i < narg; i++) {
            uint64_t v;
            if (read_val(d, &v))
                return tdx_errf(err, TDX_EFORMAT, start,
                                "failed to read event %u argument: " MALFORMED, typ);
            if (!skip) d->args[raw->nargs++] = v;
        }
        return 1;
    }
    uint64_t len;
    if (read_val(d, &len))
        return tdx_errf(err, TDX_EFORMAT, start, "failed to read event %u argument: " MALFORMED,
                        typ);
    if (len > TDX_V1_MAX_PAYLOAD)
        return tdx_errf(
            err, TDX_EFORMAT, start,
            "failed to read event %u argument: length-prefixed argument too big: %" PRIu64
            " bytes, limit is %d",
            typ, len, TDX_V1_MAX_PAYLOAD);
    if (!skip || typ == TDX_V1_CPU_SAMPLE) {
        const uint8_t *p = read_full(d, len);
        if (!p) return tdx_errf(err, TDX_EFORMAT, start, "failed to read trace: unexpected EOF");
        const uint8_t *end = p + len;
        while (p < end) {
            uint64_t v;
            int k = tdx_uvarint(p, end, &v);
            if (k < 0) return tdx_errf(err, TDX_EFORMAT, start, MALFORMED);
            p += k;
            d->args[raw->nargs++] = v;
        }
    } else if (!discard(d, len)) {
        return tdx_errf(err, TDX_EFORMAT, start, "failed to read trace: EOF");
    }
    if (typ == TDX_V1_USER_LOG) {
        uint64_t sz;
        if (read_val(d, &sz)) return tdx_errf(err, TDX_EFORMAT, start, MALFORMED);
        if (skip) {
            /* Go's indexing pass takes a cut message for the end of the file. */
            if (!discard(d, sz)) return 0;
        } else if (sz > 0) {
            if (sz > TDX_V1_MAX_STRING)
                return tdx_errf(err, TDX_EFORMAT, start, "string is too large (len=%" PRIu64 ")",
                                sz);
            const uint8_t *p = read_full(d, sz);
            if (!p)
                return tdx_errf(err, TDX_EFORMAT, start, "failed to read trace: unexpected EOF");
            raw->msg = (tdx_str){p, (uint32_t)sz};
        }
    }
    return 1;
}

/* ---- parser state ---- */

typedef struct blist { /* the batches of one P, in file order */
    int32_t pid;
    uint64_t last_g; /* the goroutine running on the P when its last loaded batch ended */
    size_t pos;
    TDX_VEC(uint64_t) offs;
} blist;

typedef struct proc { /* one stream of the merge */
    int32_t pid;
    bool done;
    bool cand;          /* its head may have become ready since it was last looked at */
    uint32_t pos;       /* index in the available list, or NOT_AVAIL */
    uint32_t next_wait; /* next stream waiting on the same goroutine, or NOT_AVAIL */
    size_t head;
    TDX_VEC(tdx_v1_event) evs; /* the loaded batch (or all CPU samples for the profile stream) */
} proc;

#define NOT_AVAIL UINT32_MAX

typedef struct fentry { /* a frontier entry */
    tdx_v1_event ev;
    uint32_t proc;
} fentry;

typedef struct gseq { /* merge state of a goroutine */
    uint64_t seq;
    uint8_t status;
} gseq;

enum { GS_DEAD = 0, GS_RUNNABLE, GS_RUNNING, GS_WAITING };

#define SEQ_ANY UINT64_MAX       /* Go's noseq: any sequence number / keep it */
#define SEQ_INC (UINT64_MAX - 1) /* Go's seqinc: one more than the current */
#define G_UNORDERED UINT64_MAX
#define G_GC (UINT64_MAX - 1) /* the pseudo-goroutine ordering GCStart events */

typedef struct parser {
    const uint8_t *data;
    size_t size;
    int version;
    tdx_v1_trace *t;
    tdx_v1_decoder dec;
    /* batch index */
    TDX_VEC(blist) lists;
    tdx_hmap list_of;  /* (uint32)pid -> index into lists */
    uint64_t nrecords; /* records counted by the index: an upper bound for the events */
    TDX_VEC(tdx_v1_event) samples;
    /* per-batch decoding state (Go's lastTs, lastG, lastP) */
    int64_t last_ts;
    uint64_t last_g;
    int32_t last_p;
    tdx_hmap timer_gs;   /* timer goroutines */
    tdx_hmap inline_ids; /* hash of a UserLog message -> its index */
    /* merge */
    TDX_VEC(proc) procs;
    TDX_VEC(uint32_t) avail;
    TDX_VEC(fentry) heap;
    TDX_VEC(gseq) gs;
    tdx_hmap gs_of;
    TDX_VEC(uint64_t) cands; /* min-heap of (position << 32 | stream) to look at */
    tdx_hmap waiting;        /* awaited state (wait_key) -> first stream whose head waits for it */
} parser;

static blist *list_for(parser *ps, int32_t pid) {
    uint32_t i = tdx_hmap_get(&ps->list_of, (uint32_t)pid);
    return i == TDX_HMAP_EMPTY ? NULL : &ps->lists.v[i];
}

static void parser_free(parser *ps) {
    for (size_t i = 0; i < ps->lists.n; i++) tdx_vec_free(&ps->lists.v[i].offs);
    tdx_vec_free(&ps->lists);
    tdx_hmap_free(&ps->list_of);
    tdx_vec_free(&ps->samples);
    tdx_hmap_free(&ps->timer_gs);
    tdx_hmap_free(&ps->inline_ids);
    for (size_t i = 0; i < ps->procs.n; i++) tdx_vec_free(&ps->procs.v[i].evs);
    tdx_vec_free(&ps->procs);
    tdx_vec_free(&ps->avail);
    tdx_vec_free(&ps->heap);
    tdx_vec_free(&ps->gs);
    tdx_hmap_free(&ps->gs_of);
    tdx_vec_free(&ps->cands);
    tdx_hmap_free(&ps->waiting);
}

static void set_off(tdx_v1_event *e, uint64_t off) {
    e->off_lo = (uint32_t)off;
    e->off_hi = (uint8_t)(off >> 32);
}

/* ---- pass 1: the batch index and the CPU samples ---- */

static int index_batches(parser *ps, tdx_err *err) {
    tdx_v1_decoder *d = &ps->dec;
    tdx_v1_decoder_init(d, ps->data, ps->size, TDX_HEADER_SIZE, ps->version, NULL);
    int32_t cur = 0;
    tdx_v1_raw raw;
    for (;;) {
        int r = tdx_v1_next_raw(d, TDX_V1_SKIP_ARGS | TDX_V1_SKIP_STRINGS, &raw, err);
        if (r < 0) return -1;
        if (r == 0) break;
        if (raw.type == TDX_V1_NONE) continue;
        if (raw.type == TDX_V1_BATCH) {
            int ins;
            uint32_t *slot =
                tdx_hmap_upsert(&ps->list_of, (uint32_t)raw.batch_p, (uint32_t)ps->lists.n, &ins);
            if (!slot) return OOM(err);
            if (ins) {
                blist l;
                memset(&l, 0, sizeof l);
                l.pid = raw.batch_p;
                if (tdx_vec_push(&ps->lists, l)) return OOM(err);
            }
            if (tdx_vec_push(&ps->lists.v[*slot].offs, raw.off)) return OOM(err);
            cur = raw.batch_p;
        }
        blist *l = list_for(ps, cur);
        if (!l || l->offs.n == 0)
            return tdx_errf(err, TDX_EFORMAT, raw.off,
                            "read event %u with current P of %" PRId32 ", but P has no batches yet",
                            raw.type, cur);
        ps->nrecords++;
        if (raw.type == TDX_V1_CPU_SAMPLE) {
            if (raw.nargs != 5)
                return tdx_errf(err, TDX_EFORMAT, raw.off,
                                "CPU sample has wrong number of arguments: want 5, got %" PRIu32,
                                raw.nargs);
            tdx_v1_event e;
            memset(&e, 0, sizeof e);
            e.type = TDX_V1_CPU_SAMPLE;
            /* The sample's own delta is ignored: its time is the absolute one it carries. */
            e.ts = (int64_t)raw.args[1];
            e.p = (int32_t)raw.args[2];
            e.g = raw.args[3];
            e.args[1] = raw.args[2];
            e.args[2] = raw.args[3];
            e.stk = (uint32_t)raw.args[4];
            set_off(&e, raw.off);
            if (tdx_vec_push(&ps->samples, e)) return OOM(err);
        }
    }
    return 0;
}

/* ---- pass 2: decoding a batch (Go's loadBatch and parseEvent) ---- */

static int add_stack(parser *ps, const tdx_v1_raw *raw, tdx_err *err) {
    if (raw->nargs < 2)
        return tdx_errf(err, TDX_EFORMAT, raw->off,
                        "EvStack has wrong number of arguments: want at least 2, got %" PRIu32,
                        raw->nargs);
    uint64_t n = raw->args[1];
    if (n > 1000)
        return tdx_errf(err, TDX_EFORMAT, raw->off, "EvStack has bad number of frames: %" PRIu64,
                        n);
    if (raw->nargs != 2 + 4 * n)
        return tdx_errf(err, TDX_EFORMAT, raw->off,
                        "EvStack has wrong number of arguments: want %" PRIu64 ", got %" PRIu32,
                        2 + 4 * n, raw->nargs);
    uint32_t id = (uint32_t)raw->args[0];
    if (id == 0 || n == 0) return 0;
    tdx_gen *g = &ps->t->gen;
    uint32_t first = (uint32_t)g->stack_frames.n;
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t *f = raw->args + 2 + 4 * i;
        int ins;
        uint32_t *slot = tdx_hmap_upsert(&g->frame_pcs, f[0], (uint32_t)g->frames.n, &ins);
        if (!slot) return OOM(err);
        uint32_t fi = *slot;
        if (ins) {
            /* The first definition of a pc wins; string ids are resolved once the file is read. */
            tdx_frame fr = {.pc = f[0], .line = f[3], .func_id = f[1], .file_id = f[2]};
            if (tdx_vec_push(&g->frames, fr)) return OOM(err);
        }
        if (tdx_vec_push(&g->stack_frames, fi)) return OOM(err);
    }
    tdx_stack st = {id, first, (uint32_t)n};
    int ins;
    uint32_t *slot = tdx_hmap_upsert(&g->stack_ids, id, (uint32_t)g->stacks.n, &ins);
    if (!slot) return OOM(err);
    if (ins) {
        if (tdx_vec_push(&g->stacks, st)) return OOM(err);
    } else {
        g->stacks.v[*slot] = st; /* a later definition of an id replaces the earlier one */
    }
    return 0;
}

static int inline_string(parser *ps, tdx_str s, uint32_t *idx) {
    uint64_t h = XXH3_64bits(s.p, s.n);
    for (;;) {
        uint32_t i = tdx_hmap_get(&ps->inline_ids, h);
        if (i == TDX_HMAP_EMPTY) break;
        const tdx_str *o = &ps->t->inline_strings.v[i];
        if (o->n == s.n && memcmp(o->p, s.p, s.n) == 0) {
            *idx = i;
            return 0;
        }
        h++; /* a hash collision: probe the next key */
    }
    *idx = (uint32_t)ps->t->inline_strings.n;
    if (tdx_hmap_put(&ps->inline_ids, h, *idx) || tdx_vec_push(&ps->t->inline_strings, s))
        return -1;
    return 0;
}

/* Go's parseEvent: updates the per-P state; *out is filled for timed events (returns 1). */
static int parse_event(parser *ps, const tdx_v1_raw *raw, tdx_v1_event *out, tdx_err *err) {
    const v1desc *ds = &descs[raw->type];
    int want = raw->type == TDX_V1_STACK ? (int)raw->nargs : tdx_v1_want_args(raw->type);
    if ((int)raw->nargs != want)
        return tdx_errf(err, TDX_EFORMAT, raw->off,
                        "%s has wrong number of arguments: want %d, got %" PRIu32, ds->name, want,
                        raw->nargs);
    switch (raw->type) {
    case TDX_V1_BATCH: {
        blist *l = list_for(ps, ps->last_p);
        if (l) l->last_g = ps->last_g;
        ps->last_p = raw->batch_p;
        l = list_for(ps, ps->last_p);
        ps->last_g = l ? l->last_g : 0;
        ps->last_ts = (int64_t)raw->args[1];
        return 0;
    }
    case TDX_V1_FREQUENCY:
        ps->t->ticks_per_sec = (int64_t)raw->args[0];
        if (ps->t->ticks_per_sec <= 0)
            return tdx_errf(err, TDX_EVALIDATE, raw->off, "time stamps out of order");
        return 0;
    case TDX_V1_TIMER_GOROUTINE:
        if (tdx_hmap_put(&ps->timer_gs, raw->args[0], 1)) return OOM(err);
        return 0;
    case TDX_V1_STACK:
        return add_stack(ps, raw, err);
    case TDX_V1_CPU_SAMPLE:
        return 0;
    default:
        break;
    }
    tdx_v1_event *e = out;
    memset(e, 0, sizeof *e);
    e->type = raw->type;
    e->p = ps->last_p;
    e->g = ps->last_g;
    e->ts = (int64_t)((uint64_t)ps->last_ts + raw->args[0]);
    ps->last_ts = e->ts;
    set_off(e, raw->off);
    for (int i = 1; i < want; i++) {
        if (i == want - 1 && ds->stack)
            e->stk = (uint32_t)raw->args[i];
        else
            e->args[i - 1] = raw->args[i];
    }
    switch (raw->type) {
    case TDX_V1_GO_START:
    case TDX_V1_GO_START_LOCAL:
    case TDX_V1_GO_START_LABEL:
        ps->last_g = e->args[0];
        e->g = ps->last_g;
        break;
    case TDX_V1_GO_END:
    case TDX_V1_GO_STOP:
    case TDX_V1_GO_SCHED:
    case TDX_V1_GO_PREEMPT:
    case TDX_V1_GO_SLEEP:
    case TDX_V1_GO_BLOCK:
    case TDX_V1_GO_BLOCK_SEND:
    case TDX_V1_GO_BLOCK_RECV:
    case TDX_V1_GO_BLOCK_SELECT:
    case TDX_V1_GO_BLOCK_SYNC:
    case TDX_V1_GO_BLOCK_COND:
    case TDX_V1_GO_BLOCK_NET:
    case TDX_V1_GO_SYSBLOCK:
    case TDX_V1_GO_BLOCK_GC:
        ps->last_g = 0;
        break;
    case TDX_V1_GO_SYSEXIT:
    case TDX_V1_GO_WAITING:
    case TDX_V1_GO_INSYSCALL:
        e->g = e->args[0];
        break;
    case TDX_V1_USER_LOG: {
        uint32_t idx;
        if (inline_string(ps, raw->msg, &idx)) return OOM(err);
        e->args[2] = idx;
        break;
    }
    default:
        break;
    }
    return 1;
}

/* Loads the next batch of pid into pr. Returns 1, 0 when pid has no batch left, or -1. */
static int load_batch(parser *ps, int32_t pid, proc *pr, tdx_err *err) {
    pr->evs.n = 0;
    pr->head = 0;
    blist *l = list_for(ps, pid);
    if (!l || l->pos >= l->offs.n) return 0;
    tdx_v1_decoder *d = &ps->dec;
    d->off = (size_t)l->offs.v[l->pos++];
    bool got_header = false;
    tdx_v1_raw raw;
    for (;;) {
        int r = tdx_v1_next_raw(d, 0, &raw, err);
        if (r < 0) return -1;
        if (r == 0) break;
        if (raw.type == TDX_V1_NONE || raw.type == TDX_V1_CPU_SAMPLE) continue;
        if (raw.type == TDX_V1_BATCH) {
            if (got_header) break;
            got_header = true;
        }
        tdx_v1_event e;
        int k = parse_event(ps, &raw, &e, err);
        if (k < 0) return -1;
        if (k > 0 && tdx_vec_push(&pr->evs, e)) return OOM(err);
    }
    return 1;
}

/* ---- pass 2: the merge (Go's parseEventBatches and order.go) ---- */

/* The goroutine an event orders, the state it needs, and the state after it. */
static uint64_t transition_of(const tdx_v1_event *e, gseq *init, gseq *next) {
    switch (e->type) {
    case TDX_V1_GO_CREATE:
        *init = (gseq){0, GS_DEAD};
        *next = (gseq){1, GS_RUNNABLE};
        return e->args[0];
    case TDX_V1_GO_WAITING:
    case TDX_V1_GO_INSYSCALL:
        *init = (gseq){1, GS_RUNNABLE};
        *next = (gseq){2, GS_WAITING};
        return e->g;
    case TDX_V1_GO_START:
    case TDX_V1_GO_START_LABEL:
        *init = (gseq){e->args[1], GS_RUNNABLE};
        *next = (gseq){e->args[1] + 1, GS_RUNNING};
        return e->g;
    case TDX_V1_GO_START_LOCAL:
        *init = (gseq){SEQ_ANY, GS_RUNNABLE};
        *next = (gseq){SEQ_INC, GS_RUNNING};
        return e->g;
    case TDX_V1_GO_BLOCK:
    case TDX_V1_GO_BLOCK_SEND:
    case TDX_V1_GO_BLOCK_RECV:
    case TDX_V1_GO_BLOCK_SELECT:
    case TDX_V1_GO_BLOCK_SYNC:
    case TDX_V1_GO_BLOCK_COND:
    case TDX_V1_GO_BLOCK_NET:
    case TDX_V1_GO_SLEEP:
    case TDX_V1_GO_SYSBLOCK:
    case TDX_V1_GO_BLOCK_GC:
        *init = (gseq){SEQ_ANY, GS_RUNNING};
        *next = (gseq){SEQ_ANY, GS_WAITING};
        return e->g;
    case TDX_V1_GO_SCHED:
    case TDX_V1_GO_PREEMPT:
        *init = (gseq){SEQ_ANY, GS_RUNNING};
        *next = (gseq){SEQ_ANY, GS_RUNNABLE};
        return e->g;
    case TDX_V1_GO_UNBLOCK:
    case TDX_V1_GO_SYSEXIT:
        *init = (gseq){e->args[1], GS_WAITING};
        *next = (gseq){e->args[1] + 1, GS_RUNNABLE};
        return e->args[0];
    case TDX_V1_GO_UNBLOCK_LOCAL:
    case TDX_V1_GO_SYSEXIT_LOCAL:
        *init = (gseq){SEQ_ANY, GS_WAITING};
        *next = (gseq){SEQ_INC, GS_RUNNABLE};
        return e->args[0];
    case TDX_V1_GC_START:
        *init = (gseq){e->args[0], GS_DEAD};
        *next = (gseq){e->args[0] + 1, GS_DEAD};
        return G_GC;
    default:
        return G_UNORDERED;
    }
}

static gseq gs_get(const parser *ps, uint64_t g) {
    uint32_t i = tdx_hmap_get(&ps->gs_of, g);
    return i == TDX_HMAP_EMPTY ? (gseq){0, GS_DEAD} : ps->gs.v[i];
}

static bool ready(uint64_t g, gseq cur, gseq init) {
    return g == G_UNORDERED ||
           ((init.seq == SEQ_ANY || init.seq == cur.seq) && init.status == cur.status);
}

/* ---- which streams to look at ----
 *
 * Go's loop looks at every available stream, in list order, after each merged event; a stream
 * whose head was not ready stays where it is. Looking at such a stream again changes nothing
 * until the goroutine its head waits for changes state, so only "candidates" are looked at: all
 * streams at first, a stream put back into the list, and the streams waiting for a goroutine whose
 * state just changed. Candidates are visited by list position, with Go's swap-removal, so the
 * order (which decides between equal timestamps) is exactly Go's. */

static void cand_up(uint64_t *h, size_t j) {
    while (j > 0) {
        size_t i = (j - 1) / 2;
        if (h[i] <= h[j]) break;
        uint64_t t = h[i];
        h[i] = h[j];
        h[j] = t;
        j = i;
    }
}

static void cand_down(uint64_t *h, size_t n) {
    size_t i = 0;
    for (;;) {
        size_t j = 2 * i + 1;
        if (j >= n) break;
        if (j + 1 < n && h[j + 1] < h[j]) j++;
        if (h[i] <= h[j]) break;
        uint64_t t = h[i];
        h[i] = h[j];
        h[j] = t;
        i = j;
    }
}

static int mark_cand(parser *ps, uint32_t pi) {
    proc *pr = &ps->procs.v[pi];
    pr->cand = true;
    if (tdx_vec_push(&ps->cands, ((uint64_t)pr->pos << 32) | pi)) return -1;
    cand_up(ps->cands.v, ps->cands.n - 1);
    return 0;
}

/* Go's swap-removal from the available list: the last stream takes position i. */
static int avail_remove(parser *ps, uint32_t i) {
    uint32_t gone = ps->avail.v[i], last = ps->avail.v[ps->avail.n - 1];
    ps->avail.v[i] = last;
    ps->avail.n--;
    ps->procs.v[gone].pos = NOT_AVAIL;
    if (last != gone) {
        ps->procs.v[last].pos = i;
        if (ps->procs.v[last].cand) return mark_cand(ps, last);
    }
    return 0;
}

static int avail_append(parser *ps, uint32_t pi) {
    ps->procs.v[pi].pos = (uint32_t)ps->avail.n;
    ps->avail.v[ps->avail.n++] = pi;
    return mark_cand(ps, pi);
}

/* The key of "goroutine g in state (seq, status)". Different states may share a key: that only
 * wakes a stream needlessly, never misses one. */
static uint64_t wait_key(uint64_t g, uint64_t seq, uint8_t status) {
    return tdx_hash64(g) ^ tdx_hash64(seq * 4 + status + 0x9e3779b97f4a7c15ULL);
}

static int wait_for(parser *ps, uint64_t key, uint32_t pi) {
    int ins;
    uint32_t *slot = tdx_hmap_upsert(&ps->waiting, key, pi, &ins);
    if (!slot) return -1;
    ps->procs.v[pi].next_wait = ins ? NOT_AVAIL : *slot;
    *slot = pi;
    return 0;
}

static int wake_waiters(parser *ps, uint64_t key) {
    uint32_t pi = tdx_hmap_get(&ps->waiting, key);
    if (pi == TDX_HMAP_EMPTY) return 0;
    tdx_hmap_del(&ps->waiting, key);
    while (pi != NOT_AVAIL) {
        proc *pr = &ps->procs.v[pi];
        uint32_t next = pr->next_wait;
        if (pr->pos != NOT_AVAIL && !pr->cand && mark_cand(ps, pi)) return -1;
        pi = next;
    }
    return 0;
}

static int apply_transition(parser *ps, uint64_t g, gseq init, gseq next, uint64_t off,
                            tdx_err *err) {
    if (g == G_UNORDERED) return 0;
    gseq cur = gs_get(ps, g);
    if (!ready(g, cur, init))
        return tdx_errf(err, TDX_EVALIDATE, off,
                        "encountered impossible goroutine state transition");
    if (next.seq == SEQ_ANY)
        next.seq = cur.seq;
    else if (next.seq == SEQ_INC)
        next.seq = cur.seq + 1;
    int ins;
    uint32_t *slot = tdx_hmap_upsert(&ps->gs_of, g, (uint32_t)ps->gs.n, &ins);
    if (!slot) return OOM(err);
    if (ins) {
        if (tdx_vec_push(&ps->gs, next)) return OOM(err);
    } else {
        ps->gs.v[*slot] = next;
    }
    /* Streams waiting for exactly this state, or for this status with any sequence number. */
    if (wake_waiters(ps, wait_key(g, next.seq, next.status)) ||
        wake_waiters(ps, wait_key(g, SEQ_ANY, next.status)))
        return OOM(err);
    return 0;
}

/* The frontier: Go's hand-written binary heap keyed by timestamp only, so that equal timestamps
 * come out in exactly Go's order. */
static void heap_up(fentry *h, size_t j) {
    while (j > 0) {
        size_t i = (j - 1) / 2;
        if (!(h[j].ev.ts < h[i].ev.ts)) break;
        fentry t = h[i];
        h[i] = h[j];
        h[j] = t;
        j = i;
    }
}

static void heap_down(fentry *h, size_t i, size_t n) {
    for (;;) {
        size_t j1 = 2 * i + 1;
        if (j1 >= n) break;
        size_t j = j1;
        if (j1 + 1 < n && h[j1 + 1].ev.ts < h[j1].ev.ts) j = j1 + 1;
        if (!(h[j].ev.ts < h[i].ev.ts)) break;
        fentry t = h[i];
        h[i] = h[j];
        h[j] = t;
        i = j;
    }
}

/* Orders the CPU samples by their own time with Go's unstable sort (slices.SortFunc), so samples
 * with equal times end up in the order a Go binary gives them. */
static int sort_samples(parser *ps) {
    size_t n = ps->samples.n;
    if (n < 2) return 0;
    if (n >= UINT32_MAX) return -1;
    int64_t *keys = malloc(n * sizeof *keys);
    uint32_t *idx = malloc(n * sizeof *idx);
    tdx_v1_event *out = malloc(n * sizeof *out);
    int rc = -1;
    if (keys && idx && out) {
        for (size_t i = 0; i < n; i++) {
            keys[i] = ps->samples.v[i].ts;
            idx[i] = (uint32_t)i;
        }
        tdx_pdqsort(keys, idx, n);
        for (size_t i = 0; i < n; i++) out[i] = ps->samples.v[idx[i]];
        memcpy(ps->samples.v, out, n * sizeof *out);
        rc = 0;
    }
    free(keys);
    free(idx);
    free(out);
    return rc;
}

static int merge(parser *ps, tdx_err *err) {
    tdx_v1_trace *t = ps->t;
    if (sort_samples(ps)) return OOM(err);
    /* Streams: one per P with batches, then the CPU samples. Go lists the Ps in map order; we use
     * the order of their first batch in the file. */
    size_t np = ps->lists.n + 1;
    if (np >= NOT_AVAIL) return tdx_errf(err, TDX_EFORMAT, TDX_NO_OFFSET, "too many processors");
    if (tdx_vec_reserve(&ps->procs, np) || tdx_vec_reserve(&ps->avail, np) ||
        tdx_vec_reserve(&ps->heap, np) || tdx_vec_reserve(&t->events, ps->nrecords + ps->samples.n))
        return OOM(err);
    for (size_t i = 0; i < ps->lists.n; i++) {
        proc pr;
        memset(&pr, 0, sizeof pr);
        pr.pid = ps->lists.v[i].pid;
        ps->procs.v[ps->procs.n++] = pr;
    }
    proc prof;
    memset(&prof, 0, sizeof prof);
    prof.pid = TDX_V1_PROFILE_P;
    prof.evs.v = ps->samples.v;
    prof.evs.n = ps->samples.n;
    prof.evs.cap = ps->samples.cap;
    ps->samples.v = NULL;
    ps->samples.n = ps->samples.cap = 0;
    ps->procs.v[ps->procs.n++] = prof;
    for (size_t i = 0; i < np; i++) {
        ps->procs.v[i].next_wait = NOT_AVAIL;
        if (avail_append(ps, (uint32_t)i)) return OOM(err);
    }
    ps->last_p = 0;
    ps->last_g = 0;
    ps->last_ts = 0;
    tdx_v1_decoder_init(&ps->dec, ps->data, ps->size, TDX_HEADER_SIZE, ps->version, &t->strings);

    for (;;) {
        /* Go's pass over the available streams (see "which streams to look at"). */
        while (ps->cands.n > 0) {
            uint64_t c = ps->cands.v[0];
            ps->cands.v[0] = ps->cands.v[--ps->cands.n];
            cand_down(ps->cands.v, ps->cands.n);
            uint32_t pi = (uint32_t)c, pos = (uint32_t)(c >> 32);
            proc *pr = &ps->procs.v[pi];
            if (!pr->cand || pr->pos != pos) continue; /* a stale entry */
            pr->cand = false;
            bool dropped = false;
            while (pr->head >= pr->evs.n) {
                int r = load_batch(ps, pr->pid, pr, err);
                if (r < 0) return -1;
                if (r == 0) {
                    pr->done = true;
                    if (avail_remove(ps, pos)) return OOM(err);
                    dropped = true;
                    break;
                }
            }
            if (dropped) continue;
            const tdx_v1_event *e = &pr->evs.v[pr->head];
            gseq init, next;
            uint64_t g = transition_of(e, &init, &next);
            if (!ready(g, g == G_UNORDERED ? (gseq){0, 0} : gs_get(ps, g), init)) {
                if (wait_for(ps, wait_key(g, init.seq, init.status), pi)) return OOM(err);
                continue;
            }
            fentry f = {*e, pi};
            pr->head++;
            ps->heap.v[ps->heap.n++] = f;
            heap_up(ps->heap.v, ps->heap.n - 1);
            if (avail_remove(ps, pos)) return OOM(err);
        }
        if (ps->heap.n == 0) {
            /* Stuck if a proc has events left: the offset is the earliest that waits (Go names
             * none). */
            bool stuck = false;
            uint64_t at = TDX_NO_OFFSET;
            for (size_t i = 0; i < ps->procs.n; i++) {
                const proc *pr = &ps->procs.v[i];
                if (pr->done) continue;
                stuck = true;
                if (pr->head < pr->evs.n && tdx_v1_event_off(&pr->evs.v[pr->head]) < at)
                    at = tdx_v1_event_off(&pr->evs.v[pr->head]);
            }
            if (stuck)
                return tdx_errf(err, TDX_EVALIDATE, at,
                                "no consistent ordering of events possible");
            break;
        }
        size_t n = ps->heap.n - 1;
        fentry t0 = ps->heap.v[0];
        ps->heap.v[0] = ps->heap.v[n];
        ps->heap.v[n] = t0;
        heap_down(ps->heap.v, 0, n);
        fentry f = ps->heap.v[n];
        ps->heap.n = n;
        gseq init, next;
        uint64_t g = transition_of(&f.ev, &init, &next);
        switch (f.ev.type) {
        case TDX_V1_GO_START_LOCAL:
            f.ev.type = TDX_V1_GO_START;
            break;
        case TDX_V1_GO_UNBLOCK_LOCAL:
            f.ev.type = TDX_V1_GO_UNBLOCK;
            break;
        case TDX_V1_GO_SYSEXIT_LOCAL:
            f.ev.type = TDX_V1_GO_SYSEXIT;
            break;
        default:
            break;
        }
        if (tdx_vec_push(&t->events, f.ev)) return OOM(err);
        if (apply_transition(ps, g, init, next, tdx_v1_event_off(&f.ev), err)) return -1;
        if (avail_append(ps, f.proc)) return OOM(err);
    }
    return 0;
}

/* ---- after the merge: time order, real syscall-exit times, ticks to ns ---- */

typedef struct moved {
    tdx_v1_event ev;
    size_t rank; /* events that stayed in place and preceded it */
} moved;

/* Sorts the moved events by time, keeping their order for equal times. */
static int sort_moved(moved *v, size_t n) {
    if (n < 2) return 0;
    moved *tmp = malloc(n * sizeof *tmp);
    if (!tmp) return -1;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) tmp[o++] = v[b].ev.ts < v[a].ev.ts ? v[b++] : v[a++];
            while (a < mid) tmp[o++] = v[a++];
            while (b < hi) tmp[o++] = v[b++];
        }
        memcpy(v, tmp, n * sizeof *v);
    }
    free(tmp);
    return 0;
}

enum { MOVED_FLAG = 0x80 };

/* Go's stable sort of the whole list, done as: take out the events whose time changed, sort them,
 * and merge them back into the (still ordered) rest. The result is identical. */
static int restore_order(tdx_v1_trace *t, size_t nmoved, tdx_err *err) {
    if (nmoved == 0) return 0;
    size_t n = t->events.n;
    moved *mv = malloc(nmoved * sizeof *mv);
    if (!mv) return OOM(err);
    size_t j = 0, k = 0;
    for (size_t i = 0; i < n; i++) {
        tdx_v1_event *e = &t->events.v[i];
        if (e->flags & MOVED_FLAG) {
            e->flags &= (uint8_t)~MOVED_FLAG;
            mv[k].ev = *e;
            mv[k++].rank = j;
        } else {
            t->events.v[j++] = *e;
        }
    }
    if (sort_moved(mv, k)) {
        free(mv);
        return OOM(err);
    }
    /* Merge from the back. A moved event X and a stayed event R at position a: R comes later when
     * it is later in time, or equal in time and later in the original list (X.rank <= a). */
    ptrdiff_t a = (ptrdiff_t)j - 1, b = (ptrdiff_t)k - 1, o = (ptrdiff_t)n - 1;
    while (b >= 0) {
        const tdx_v1_event *r = a >= 0 ? &t->events.v[a] : NULL;
        if (r && (r->ts > mv[b].ev.ts || (r->ts == mv[b].ev.ts && mv[b].rank <= (size_t)a)))
            t->events.v[o--] = t->events.v[a--];
        else
            t->events.v[o--] = mv[b--].ev;
    }
    free(mv);
    return 0;
}

static int fix_times(parser *ps, tdx_err *err) {
    tdx_v1_trace *t = ps->t;
    tdx_v1_event *ev = t->events.v;
    size_t n = t->events.n;
    for (size_t i = 1; i < n; i++)
        if (ev[i].ts < ev[i - 1].ts)
            return tdx_errf(err, TDX_EVALIDATE, tdx_v1_event_off(&ev[i]),
                            "time stamps out of order");
    /* A syscall exit is written when the goroutine gets a P again; its real exit time came
     * earlier and rides along in args[2]. */
    tdx_hmap last_block = {0};
    TDX_VEC(int64_t) block_ts = {0};
    size_t nmoved = 0;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        tdx_v1_event *e = &ev[i];
        if (e->type == TDX_V1_GO_SYSBLOCK || e->type == TDX_V1_GO_INSYSCALL) {
            int ins;
            uint32_t *slot = tdx_hmap_upsert(&last_block, e->g, (uint32_t)block_ts.n, &ins);
            if (!slot || (ins && tdx_vec_push(&block_ts, e->ts))) {
                rc = OOM(err);
                break;
            }
            /* a key in the map has its entry */
            // NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
            block_ts.v[*slot] = e->ts;
        } else if (e->type == TDX_V1_GO_SYSEXIT) {
            int64_t ts = (int64_t)e->args[2];
            if (ts == 0) continue;
            uint32_t bi = tdx_hmap_get(&last_block, e->g);
            /* a key in the map has its entry */
            // NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
            int64_t block = bi == TDX_HMAP_EMPTY ? 0 : block_ts.v[bi];
            if (block == 0) {
                rc = tdx_errf(err, TDX_EVALIDATE, tdx_v1_event_off(e), "stray syscall exit");
            } else if (ts < block) {
                rc = tdx_errf(err, TDX_EVALIDATE, tdx_v1_event_off(e), "time stamps out of order");
            } else if (ts != e->ts) {
                e->ts = ts;
                e->flags |= MOVED_FLAG;
                nmoved++;
            }
        }
    }
    tdx_hmap_free(&last_block);
    tdx_vec_free(&block_ts);
    if (rc) return rc;
    return restore_order(t, nmoved, err);
}

/* Go's Timestamp(float64(ts-minTs) * (1e9/freq)), with amd64's result for values out of range. */
static int64_t ticks_ns(int64_t d, double ns_per_tick) {
    double v = (double)d * ns_per_tick;
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)v;
}

static void to_ns(parser *ps) {
    tdx_v1_trace *t = ps->t;
    if (t->events.n == 0) return;
    int64_t min = t->events.v[0].ts;
    double f = 1e9 / (double)t->ticks_per_sec;
    for (size_t i = 0; i < t->events.n; i++) {
        tdx_v1_event *e = &t->events.v[i];
        e->ts = ticks_ns((int64_t)((uint64_t)e->ts - (uint64_t)min), f);
        if (e->type == TDX_V1_GO_UNBLOCK && tdx_hmap_get(&ps->timer_gs, e->g) != TDX_HMAP_EMPTY)
            e->p = TDX_V1_TIMER_P;
        if (e->type == TDX_V1_GO_SYSEXIT) e->p = TDX_V1_SYSCALL_P;
    }
}

/* ---- the validation pass (Go's postProcessTrace) ---- */

typedef struct vg { /* an entry of Go's goroutine map */
    uint8_t state;
    uint8_t assist;   /* a mark assist is active */
    uint8_t last_net; /* the last event recorded as the goroutine's g.ev was a GoBlockNet */
} vg;

typedef struct vp {
    bool running, sweep;
    uint64_t g;
} vp;

typedef TDX_VEC(uint32_t) u32vec;

typedef struct vstate {
    TDX_VEC(vg) gs;
    tdx_hmap g_of;
    TDX_VEC(vp) ps;
    tdx_hmap p_of;
    tdx_hmap tasks;     /* task id -> index of its UserTaskCreate */
    tdx_hmap region_of; /* goroutine -> index into regions (its stack of active regions) */
    TDX_VEC(u32vec) regions;
} vstate;

static void vstate_free(vstate *v) {
    tdx_vec_free(&v->gs);
    tdx_hmap_free(&v->g_of);
    tdx_vec_free(&v->ps);
    tdx_hmap_free(&v->p_of);
    tdx_hmap_free(&v->tasks);
    tdx_hmap_free(&v->region_of);
    for (size_t i = 0; i < v->regions.n; i++) tdx_vec_free(&v->regions.v[i]);
    tdx_vec_free(&v->regions);
}

/* The map entry of goroutine g (NULL when Go's map has none and create is false). Whether an
 * entry exists matters: GoCreate rejects any goroutine id the map already holds. */
static vg *v_g(vstate *v, uint64_t g, bool create) {
    uint32_t i = tdx_hmap_get(&v->g_of, g);
    if (i != TDX_HMAP_EMPTY) return &v->gs.v[i];
    if (!create) return NULL;
    vg x = {GS_DEAD, 0, 0};
    if (tdx_hmap_put(&v->g_of, g, (uint32_t)v->gs.n) || tdx_vec_push(&v->gs, x)) return NULL;
    return &v->gs.v[v->gs.n - 1];
}

static vp *v_p(vstate *v, int32_t p) {
    int ins;
    uint32_t *slot = tdx_hmap_upsert(&v->p_of, (uint32_t)p, (uint32_t)v->ps.n, &ins);
    if (!slot) return NULL;
    if (ins) {
        vp x = {false, false, 0};
        if (tdx_vec_push(&v->ps, x)) return NULL;
    }
    return &v->ps.v[*slot];
}

/* Go's Event.String() of a v1 event, used inside a few messages. */
static void ev_string(char *buf, size_t cap, const tdx_v1_event *e) {
    const v1desc *ds = &descs[e->type];
    int n = snprintf(buf, cap, "%" PRId64 " %s p=%" PRId32 " g=%" PRIu64 " stk=%" PRIu32, e->ts,
                     ds->name, e->p, e->g, e->stk);
    for (int i = 0; i < ds->nargs && n > 0 && (size_t)n < cap; i++)
        n += snprintf(buf + n, cap - (size_t)n, " %s=%" PRIu64, ds->args[i], e->args[i]);
}

#define VERR(e, ...) tdx_errf(err, TDX_EVALIDATE, tdx_v1_event_off(e), __VA_ARGS__)

static int check_running(const vp *p, const vg *g, const tdx_v1_event *e, bool allow_g0,
                         tdx_err *err) {
    const char *name = descs[e->type].name;
    if (!g || g->state != GS_RUNNING)
        return VERR(e, "g %" PRIu64 " is not running while %s (time %" PRId64 ")", e->g, name,
                    e->ts);
    if (p->g != e->g)
        return VERR(e, "p %" PRId32 " is not running g %" PRIu64 " while %s (time %" PRId64 ")",
                    e->p, e->g, name, e->ts);
    if (!allow_g0 && e->g == 0) return VERR(e, "g 0 did %s (time %" PRId64 ")", name, e->ts);
    return 0;
}

static int validate_one(vstate *v, tdx_v1_trace *t, size_t idx, tdx_err *err) {
    tdx_v1_event *e = &t->events.v[idx];
    char a[256], b[256];
    switch (e->type) {
    case TDX_V1_PROC_START: {
        vp *p = v_p(v, e->p);
        if (!p) return OOM(err);
        if (p->running)
            return VERR(e, "p %" PRId32 " is running before start (time %" PRId64 ")", e->p, e->ts);
        p->running = true;
        break;
    }
    case TDX_V1_PROC_STOP: {
        vp *p = v_p(v, e->p);
        if (!p) return OOM(err);
        if (!p->running)
            return VERR(e, "p %" PRId32 " is not running before stop (time %" PRId64 ")", e->p,
                        e->ts);
        if (p->g != 0)
            return VERR(e,
                        "p %" PRId32 " is running a goroutine %" PRIu64
                        " during stop (time %" PRId64 ")",
                        e->p, p->g, e->ts);
        p->running = false;
        break;
    }
    case TDX_V1_GC_SWEEP_START: {
        vp *p = v_p(v, e->p);
        if (!p) return OOM(err);
        if (p->sweep)
            return VERR(e, "previous sweeping is not ended before a new one (time %" PRId64 ")",
                        e->ts);
        p->sweep = true;
        break;
    }
    case TDX_V1_GC_SWEEP_DONE: {
        vp *p = v_p(v, e->p);
        if (!p) return OOM(err);
        if (!p->sweep) return VERR(e, "bogus sweeping end (time %" PRId64 ")", e->ts);
        p->sweep = false;
        break;
    }
    case TDX_V1_GC_MARK_ASSIST_START: {
        vg *g = v_g(v, e->g, true);
        if (!g) return OOM(err);
        if (g->assist)
            return VERR(e, "previous mark assist is not ended before a new one (time %" PRId64 ")",
                        e->ts);
        g->assist = 1;
        break;
    }
    case TDX_V1_GC_MARK_ASSIST_DONE: {
        /* An assist may have begun before the trace did. */
        vg *g = v_g(v, e->g, true);
        if (!g) return OOM(err);
        g->assist = 0;
        break;
    }
    case TDX_V1_GO_WAITING:
    case TDX_V1_GO_INSYSCALL: {
        vg *g = v_g(v, e->g, false);
        if (!g || g->state != GS_RUNNABLE)
            return VERR(e, "g %" PRIu64 " is not runnable before %s (time %" PRId64 ")", e->g,
                        e->type == TDX_V1_GO_WAITING ? "EvGoWaiting" : "EvGoInSyscall", e->ts);
        g->state = GS_WAITING;
        g->last_net = 0;
        break;
    }
    case TDX_V1_GO_CREATE: {
        vp *p = v_p(v, e->p);
        if (!p) return OOM(err);
        if (check_running(p, v_g(v, e->g, false), e, true, err)) return -1;
        if (v_g(v, e->args[0], false))
            return VERR(e, "g %" PRIu64 " already exists (time %" PRId64 ")", e->args[0], e->ts);
        vg *g = v_g(v, e->args[0], true);
        if (!g) return OOM(err);
        g->state = GS_RUNNABLE;
        g->last_net = 0;
        break;
    }
    case TDX_V1_GO_START:
    case TDX_V1_GO_START_LABEL: {
        vp *p = v_p(v, e->p);
        if (!p) return OOM(err);
        vg *g = v_g(v, e->g, false);
        if (!g || g->state != GS_RUNNABLE)
            return VERR(e, "g %" PRIu64 " is not runnable before start (time %" PRId64 ")", e->g,
                        e->ts);
        if (p->g != 0)
            return VERR(e,
                        "p %" PRId32 " is already running g %" PRIu64 " while start g %" PRIu64
                        " (time %" PRId64 ")",
                        e->p, p->g, e->g, e->ts);
        g->state = GS_RUNNING;
        g->last_net = 0;
        p->g = e->g;
        /* Go also gives the first start of a goroutine its creation stack; no converted event
         * reads a GoStart's stack, so that is left out. */
        break;
    }
    case TDX_V1_GO_END:
    case TDX_V1_GO_STOP: {
        vp *p = v_p(v, e->p);
        if (!p) return OOM(err);
        vg *g = v_g(v, e->g, false);
        if (check_running(p, g, e, false, err)) return -1;
        g->state = GS_DEAD;
        p->g = 0;
        if (e->type == TDX_V1_GO_END) { /* its active regions are flushed */
            uint32_t ri = tdx_hmap_get(&v->region_of, e->g);
            if (ri != TDX_HMAP_EMPTY) v->regions.v[ri].n = 0;
        }
        break;
    }
    case TDX_V1_GO_SCHED:
    case TDX_V1_GO_PREEMPT: {
        vp *p = v_p(v, e->p);
        if (!p) return OOM(err);
        vg *g = v_g(v, e->g, false);
        if (check_running(p, g, e, false, err)) return -1;
        g->state = GS_RUNNABLE;
        g->last_net = 0;
        p->g = 0;
        break;
    }
    case TDX_V1_GO_UNBLOCK: {
        vg *g = v_g(v, e->g, false);
        if (!g || g->state != GS_RUNNING)
            return VERR(e, "g %" PRIu64 " is not running while unpark (time %" PRId64 ")", e->g,
                        e->ts);
        vp *p = v_p(v, e->p);
        if (!p) return OOM(err);
        if (e->p != TDX_V1_TIMER_P && p->g != e->g)
            return VERR(
                e, "p %" PRId32 " is not running g %" PRIu64 " while unpark (time %" PRId64 ")",
                e->p, e->g, e->ts);
        vg *g1 = v_g(v, e->args[0], false);
        if (!g1 || g1->state != GS_WAITING)
            return VERR(e, "g %" PRIu64 " is not waiting before unpark (time %" PRId64 ")",
                        e->args[0], e->ts);
        if (g1->last_net) e->p = TDX_V1_NETPOLL_P;
        g1->state = GS_RUNNABLE;
        g1->last_net = 0;
        break;
    }
    case TDX_V1_GO_SYSCALL: {
        vp *p = v_p(v, e->p);
        if (!p) return OOM(err);
        vg *g = v_g(v, e->g, false);
        if (check_running(p, g, e, false, err)) return -1;
        g->last_net = 0;
        break;
    }
    case TDX_V1_GO_SYSBLOCK: {
        vp *p = v_p(v, e->p);
        if (!p) return OOM(err);
        vg *g = v_g(v, e->g, false);
        if (check_running(p, g, e, false, err)) return -1;
        g->state = GS_WAITING;
        p->g = 0;
        break;
    }
    case TDX_V1_GO_SYSEXIT: {
        vg *g = v_g(v, e->g, false);
        if (!g || g->state != GS_WAITING)
            return VERR(e, "g %" PRIu64 " is not waiting during syscall exit (time %" PRId64 ")",
                        e->g, e->ts);
        g->state = GS_RUNNABLE;
        g->last_net = 0;
        break;
    }
    case TDX_V1_GO_SLEEP:
    case TDX_V1_GO_BLOCK:
    case TDX_V1_GO_BLOCK_SEND:
    case TDX_V1_GO_BLOCK_RECV:
    case TDX_V1_GO_BLOCK_SELECT:
    case TDX_V1_GO_BLOCK_SYNC:
    case TDX_V1_GO_BLOCK_COND:
    case TDX_V1_GO_BLOCK_NET:
    case TDX_V1_GO_BLOCK_GC: {
        vp *p = v_p(v, e->p);
        if (!p) return OOM(err);
        vg *g = v_g(v, e->g, false);
        if (check_running(p, g, e, false, err)) return -1;
        g->state = GS_WAITING;
        g->last_net = e->type == TDX_V1_GO_BLOCK_NET;
        p->g = 0;
        break;
    }
    case TDX_V1_USER_TASK_CREATE: {
        uint32_t prev = tdx_hmap_get(&v->tasks, e->args[0]);
        if (prev != TDX_HMAP_EMPTY) {
            ev_string(a, sizeof a, e);
            ev_string(b, sizeof b, &t->events.v[prev]);
            return VERR(e, "task id conflicts (id:%" PRIu64 "), \"%s\" vs \"%s\"", e->args[0], a,
                        b);
        }
        if (tdx_hmap_put(&v->tasks, e->args[0], (uint32_t)idx)) return OOM(err);
        break;
    }
    case TDX_V1_USER_TASK_END:
        tdx_hmap_del(&v->tasks, e->args[0]);
        break;
    case TDX_V1_USER_REGION: {
        uint64_t mode = e->args[1];
        if (mode > 1) {
            ev_string(a, sizeof a, e);
            return VERR(e, "invalid user region mode: \"%s\"", a);
        }
        /* Go drops a goroutine's region stack when it becomes empty; an empty stack that is kept
         * behaves the same. */
        uint32_t ri = tdx_hmap_get(&v->region_of, e->g);
        if (mode == 0) {
            if (ri == TDX_HMAP_EMPTY) {
                u32vec nv = {0};
                ri = (uint32_t)v->regions.n;
                if (tdx_vec_push(&v->regions, nv) || tdx_hmap_put(&v->region_of, e->g, ri))
                    return OOM(err);
            }
            if (tdx_vec_push(&v->regions.v[ri], (uint32_t)idx)) return OOM(err);
        } else if (ri != TDX_HMAP_EMPTY && v->regions.v[ri].n > 0) {
            u32vec *st = &v->regions.v[ri];
            const tdx_v1_event *s = &t->events.v[st->v[st->n - 1]];
            if (s->args[0] != e->args[0] || s->args[2] != e->args[2]) {
                ev_string(a, sizeof a, e);
                ev_string(b, sizeof b, s);
                return VERR(
                    e,
                    "misuse of region in goroutine %" PRIu64
                    ": span end \"%s\" when the inner-most active span start event is \"%s\"",
                    e->g, a, b);
            }
            st->n--;
        }
        break;
    }
    default:
        break;
    }
    return 0;
}

static int validate(tdx_v1_trace *t, tdx_err *err) {
    if (t->events.n >= UINT32_MAX) /* events are referred to by 32-bit indexes below */
        return tdx_errf(err, TDX_EFORMAT, TDX_NO_OFFSET, "too many events");
    vstate v;
    memset(&v, 0, sizeof v);
    int rc = 0;
    vg *g0 = v_g(&v, 0, true);
    if (!g0) return OOM(err);
    g0->state = GS_RUNNING;
    bool gc = false, stw = false;
    for (size_t i = 0; i < t->events.n && !rc; i++) {
        tdx_v1_event *e = &t->events.v[i];
        switch (e->type) {
        case TDX_V1_GC_START:
            if (gc)
                rc = VERR(e, "previous GC is not ended before a new one (time %" PRId64 ")", e->ts);
            gc = true;
            e->p = TDX_V1_GC_P; /* attributed to the global GC state */
            break;
        case TDX_V1_GC_DONE:
            if (!gc) rc = VERR(e, "bogus GC end (time %" PRId64 ")", e->ts);
            gc = false;
            break;
        case TDX_V1_STW_START:
            if (stw)
                rc =
                    VERR(e, "previous STW is not ended before a new one (time %" PRId64 ")", e->ts);
            stw = true;
            break;
        case TDX_V1_STW_DONE:
            if (!stw) rc = VERR(e, "bogus STW end (time %" PRId64 ")", e->ts);
            stw = false;
            break;
        default:
            rc = validate_one(&v, t, i, err);
            break;
        }
        /* Events must not point at unknown or empty stacks. */
        if (e->stk != 0 && tdx_hmap_get(&t->gen.stack_ids, e->stk) == TDX_HMAP_EMPTY) e->stk = 0;
    }
    vstate_free(&v);
    return rc;
}

/* ---- entry points ---- */

void tdx_v1_trace_init(tdx_v1_trace *t, const uint8_t *data, int version) {
    memset(t, 0, sizeof *t);
    t->version = version;
    tdx_gen_init(&t->gen, data, version);
}

void tdx_v1_trace_free(tdx_v1_trace *t) {
    tdx_vec_free(&t->events);
    tdx_hmap_free(&t->strings.ids);
    tdx_vec_free(&t->strings.v);
    tdx_vec_free(&t->strings.wire);
    tdx_vec_free(&t->inline_strings);
    tdx_gen_free(&t->gen);
}

int tdx_v1_parse(const uint8_t *data, size_t size, int version, tdx_v1_trace *t, tdx_err *err) {
    tdx_err_clear(err);
    if (size < TDX_HEADER_SIZE)
        return tdx_errf(err, TDX_EFORMAT, 0, "bad file format: not a Go execution trace?");
    tdx_gen *g = &t->gen;
    tdx_str empty = {(const uint8_t *)"", 0};
    tdx_stack none = {0, 0, 0};
    if (g->strings.n == 0 && tdx_vec_push(&g->strings, empty)) return OOM(err);
    if (g->stacks.n == 0 && tdx_vec_push(&g->stacks, none)) return OOM(err);
    parser *ps = calloc(1, sizeof *ps);
    if (!ps) return OOM(err);
    ps->data = data;
    ps->size = size;
    ps->version = version;
    ps->t = t;
    int rc = index_batches(ps, err);
    if (!rc) rc = merge(ps, err);
    if (!rc) rc = fix_times(ps, err);
    if (!rc && t->ticks_per_sec == 0)
        rc = tdx_errf(err, TDX_EFORMAT, size, "no EvFrequency event"); /* absent: the end */
    if (!rc) to_ns(ps);
    if (!rc) rc = validate(t, err);
    parser_free(ps);
    free(ps);
    return rc;
}
