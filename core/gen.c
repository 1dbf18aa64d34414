/* gen.c: per-generation table building (Go's processBatch and the checks after it). */
#include "gen.h"

#include <inttypes.h>
#include <string.h>
#include <xxhash.h>

#include "pdqsort.h"
#include "spec.h"
#include "varint.h"

void tdx_gen_init(tdx_gen *g, const uint8_t *data, int version) {
    memset(g, 0, sizeof *g);
    g->data = data;
    g->version = version;
    tdx_arena_init(&g->arena);
}

void tdx_gen_free(tdx_gen *g) {
    tdx_genframe_free(&g->frame);
    tdx_vec_free(&g->strings);
    tdx_hmap_free(&g->string_ids);
    tdx_hmap_free(&g->extra_ids);
    tdx_vec_free(&g->stacks);
    tdx_hmap_free(&g->stack_ids);
    tdx_vec_free(&g->stack_frames);
    tdx_vec_free(&g->frames);
    tdx_hmap_free(&g->frame_pcs);
    tdx_vec_free(&g->samples);
    tdx_vec_free(&g->exp);
    tdx_vec_free(&g->threads);
    tdx_vec_free(&g->next_batch);
    tdx_vec_free(&g->string_direct);
    tdx_vec_free(&g->stack_direct);
    tdx_arena_free(&g->arena);
}

static void reset(tdx_gen *g) {
    g->freq = 0;
    g->ns_per_tick = 0;
    g->has_clock = false;
    g->strings.n = 0;
    tdx_hmap_clear(&g->string_ids);
    tdx_hmap_clear(&g->extra_ids);
    g->stacks.n = 0;
    tdx_hmap_clear(&g->stack_ids);
    g->stack_frames.n = 0;
    g->frames.n = 0;
    tdx_hmap_clear(&g->frame_pcs);
    g->samples.n = 0;
    g->exp.n = 0;
    g->threads.n = 0;
    g->next_batch.n = 0;
    g->string_direct.n = 0;
    g->stack_direct.n = 0;
    tdx_arena_reset(&g->arena);
}

#define OOM(err) tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory")

/* A reader over one batch payload; offsets in errors are file offsets. */
typedef struct {
    const uint8_t *p, *end, *base;
    uint64_t base_off;
} rd;

static inline uint64_t rd_off(const rd *r) {
    return r->base_off + (uint64_t)(r->p - r->base);
}

/* Reads a uvarint; on failure fills err with the bare cause, as bytes.Reader + ReadUvarint. */
static int rd_uv(rd *r, uint64_t *v, tdx_err *err) {
    int k = tdx_uvarint(r->p, r->end, v);
    if (k < 0) return tdx_errf(err, TDX_EFORMAT, rd_off(r), "%s", tdx_varint_strerror(k));
    r->p += k;
    return 0;
}

static rd batch_reader(const tdx_gen *g, const tdx_batch *b) {
    const uint8_t *p = g->data + b->data_off;
    return (rd){p, p + b->size, p, b->data_off};
}

static int add_strings(tdx_gen *g, const tdx_batch *b, tdx_err *err) {
    rd r = batch_reader(g, b);
    r.p++; /* the Strings marker */
    while (r.p < r.end) {
        uint64_t at = rd_off(&r);
        uint8_t t = *r.p++;
        if (t != TDX_EV_STRING)
            return tdx_errf(err, TDX_EFORMAT, at, "expected string event, got %u", t);
        uint64_t id, len;
        if (rd_uv(&r, &id, err) || rd_uv(&r, &len, err)) return -1;
        if (len > 1024)
            return tdx_errf(err, TDX_EFORMAT, at,
                            "invalid string size %" PRIu64 ", maximum is 1024", len);
        size_t avail = (size_t)(r.end - r.p);
        if (len > avail)
            return tdx_errf(err, TDX_EFORMAT, rd_off(&r),
                            "failed to read full string: read %zu but wanted %" PRIu64, avail, len);
        tdx_str s = {r.p, (uint32_t)len};
        r.p += len;
        uint32_t existing = tdx_gen_string(g, id);
        if (existing != UINT32_MAX) {
            tdx_str e = g->strings.v[existing];
            return tdx_errf(err, TDX_EFORMAT, at,
                            "multiple strings with the same ID: id=%" PRIu64
                            ", new=%.*s, existing=%.*s",
                            id, (int)s.n, (const char *)s.p, (int)e.n, (const char *)e.p);
        }
        if (tdx_hmap_put(&g->string_ids, id, (uint32_t)g->strings.n) ||
            tdx_vec_push(&g->strings, s))
            return OOM(err);
    }
    return 0;
}

static void print_stack_pcs(const tdx_gen *g, const tdx_stack *st, tdx_buf *out) {
    for (uint32_t i = 0; i < st->nframes; i++)
        tdx_buf_printf(out, "\t0x%" PRIx64 "\n", g->frames.v[g->stack_frames.v[st->first + i]].pc);
}

/* A direct-mapped cache in front of frame_pcs: stacks repeat the same frames (the runtime's and the
 * program's outer functions) and hashing every frame's PC dominated loading a generation. */
enum { PC_CACHE = 1024 };
typedef struct pc_cache {
    uint64_t pc[PC_CACHE];
    uint32_t idx1[PC_CACHE]; /* frame index + 1, 0 = empty */
} pc_cache;

static int add_stacks(tdx_gen *g, const tdx_batch *b, pc_cache *pcc, tdx_err *err) {
    static const char *const field[4] = {"PC", "funcID", "fileID", "line"};
    rd r = batch_reader(g, b);
    r.p++; /* the Stacks marker */
    while (r.p < r.end) {
        uint64_t at = rd_off(&r);
        uint8_t t = *r.p++;
        if (t != TDX_EV_STACK)
            return tdx_errf(err, TDX_EFORMAT, at, "expected stack event, got %u", t);
        uint64_t id, nframes;
        if (rd_uv(&r, &id, err) || rd_uv(&r, &nframes, err)) return -1;
        if (nframes > 128)
            return tdx_errf(err, TDX_EFORMAT, at, "invalid stack size %" PRIu64 ", maximum is 128",
                            nframes);
        tdx_stack st = {id, (uint32_t)g->stack_frames.n, (uint32_t)nframes};
        for (uint64_t i = 0; i < nframes; i++) {
            uint64_t v[4];
            const uint8_t *q = r.p;
            /* Far from the end of the batch the four values need no bounds checks; the checked
             * loop below also produces the exact error when one is malformed. */
            if (r.end - q >= (ptrdiff_t)(4 * TDX_VARINT_MAX) && (q = tdx_uvarint_fast(q, &v[0])) &&
                (q = tdx_uvarint_fast(q, &v[1])) && (q = tdx_uvarint_fast(q, &v[2])) &&
                (q = tdx_uvarint_fast(q, &v[3]))) {
                r.p = q;
            } else {
                for (int k = 0; k < 4; k++) {
                    int n = tdx_uvarint(r.p, r.end, &v[k]);
                    if (n < 0)
                        return tdx_errf(err, TDX_EFORMAT, rd_off(&r),
                                        "reading frame %" PRIu64 "'s %s for stack %" PRIu64 ": %s",
                                        i + 1, field[k], id, tdx_varint_strerror(n));
                    r.p += n;
                }
            }
            size_t ci = (size_t)(v[0] ^ (v[0] >> 10) ^ (v[0] >> 20)) & (PC_CACHE - 1);
            uint32_t fi;
            if (pcc->idx1[ci] && pcc->pc[ci] == v[0]) {
                fi = pcc->idx1[ci] - 1;
            } else {
                int ins;
                uint32_t *slot = tdx_hmap_upsert(&g->frame_pcs, v[0], (uint32_t)g->frames.n, &ins);
                if (!slot) return OOM(err);
                fi = *slot;
                if (ins) {
                    tdx_frame f = {.pc = v[0], .line = v[3], .func_id = v[1], .file_id = v[2]};
                    if (tdx_vec_push(&g->frames, f)) return OOM(err);
                }
                pcc->pc[ci] = v[0];
                pcc->idx1[ci] = fi + 1;
            }
            if (tdx_vec_push(&g->stack_frames, fi)) return OOM(err);
        }
        uint32_t existing = tdx_gen_stack(g, id);
        if (existing != UINT32_MAX) {
            tdx_buf a = {0}, e = {0};
            print_stack_pcs(g, &st, &a);
            if (existing) print_stack_pcs(g, &g->stacks.v[existing], &e);
            tdx_errf(
                err, TDX_EFORMAT, at,
                "multiple trace.stacks with the same ID: id=%" PRIu64 ", new=%.*s, existing=%.*s",
                id, (int)a.n, a.v ? (const char *)a.v : "", (int)e.n, e.v ? (const char *)e.v : "");
            tdx_vec_free(&a);
            tdx_vec_free(&e);
            return -1;
        }
        if (tdx_hmap_put(&g->stack_ids, id, (uint32_t)g->stacks.n) || tdx_vec_push(&g->stacks, st))
            return OOM(err);
    }
    return 0;
}

static int add_samples(tdx_gen *g, const tdx_batch *b, tdx_err *err) {
    rd r = batch_reader(g, b);
    r.p++; /* the CPUSamples marker */
    while (r.p < r.end) {
        uint64_t at = rd_off(&r);
        uint8_t t = *r.p++;
        if (t != TDX_EV_CPU_SAMPLE)
            return tdx_errf(err, TDX_EFORMAT, at, "expected CPU sample event, got %u", t);
        tdx_cpusample s = {.off = at};
        uint64_t ts;
        if (rd_uv(&r, &ts, err) || rd_uv(&r, &s.m, err) || rd_uv(&r, &s.p, err) ||
            rd_uv(&r, &s.g, err) || rd_uv(&r, &s.stack, err))
            return -1;
        s.time = (int64_t)ts; /* raw ticks until the frequency is known */
        if (tdx_vec_push(&g->samples, s)) return OOM(err);
    }
    return 0;
}

static int set_sync(tdx_gen *g, const tdx_batch *b, bool *have_freq, tdx_err *err) {
    rd r = batch_reader(g, b);
    if (g->version >= 25) r.p++; /* the Sync marker */
    uint64_t last = b->time;
    while (r.p < r.end) {
        uint64_t at = rd_off(&r);
        uint8_t t = *r.p++;
        if (t == TDX_EV_FREQUENCY) {
            if (*have_freq)
                return tdx_errf(err, TDX_EFORMAT, at, "found multiple frequency events");
            uint64_t f;
            if (rd_uv(&r, &f, err)) return -1;
            *have_freq = true;
            g->freq = f;
            g->ns_per_tick = 1.0 / ((double)f / 1e9);
        } else if (t == TDX_EV_CLOCK_SNAPSHOT && g->version >= 25) {
            if (g->has_clock)
                return tdx_errf(err, TDX_EFORMAT, at, "found multiple clock snapshot events");
            g->has_clock = true;
            uint64_t dt;
            if (rd_uv(&r, &dt, err)) return -1;
            last += dt;
            g->snap_ticks = last;
            if (rd_uv(&r, &g->snap_mono, err) || rd_uv(&r, &g->snap_sec, err) ||
                rd_uv(&r, &g->snap_nsec, err))
                return -1;
        } else {
            return tdx_errf(err, TDX_EFORMAT, at,
                            "expected frequency or clock snapshot event, got %u", t);
        }
    }
    return 0;
}

static int add_event_batch(tdx_gen *g, uint32_t bi, tdx_hmap *thread_of, tdx_hmap *last_of,
                           tdx_err *err) {
    const tdx_batch *b = &g->frame.batches.v[bi];
    int ins;
    uint32_t *slot = tdx_hmap_upsert(thread_of, b->m, (uint32_t)g->threads.n, &ins);
    if (!slot) return OOM(err);
    if (ins) {
        tdx_thread_batches t = {b->m, bi};
        if (tdx_vec_push(&g->threads, t)) return OOM(err);
    } else {
        uint32_t prev = tdx_hmap_get(last_of, b->m);
        g->next_batch.v[prev] = bi;
    }
    return tdx_hmap_put(last_of, b->m, bi) ? OOM(err) : 0;
}

uint32_t tdx_gen_extra_string(tdx_gen *g, const uint8_t *p, uint32_t n) {
    if (n == 0) return 0;
    uint64_t h = XXH3_64bits(p, n);
    for (;;) {
        uint32_t i = tdx_hmap_get(&g->extra_ids, h);
        if (i == TDX_HMAP_EMPTY) break;
        if (g->strings.v[i].n == n && memcmp(g->strings.v[i].p, p, n) == 0) return i;
        h++; /* a hash collision: probe the next key */
    }
    uint8_t *copy = tdx_arena_memdup(&g->arena, p, n);
    if (!copy) return UINT32_MAX;
    tdx_str s = {copy, n};
    if (tdx_hmap_put(&g->extra_ids, h, (uint32_t)g->strings.n) || tdx_vec_push(&g->strings, s))
        return UINT32_MAX;
    return (uint32_t)g->strings.n - 1;
}

/* Builds the direct map of an id -> index map when its largest id is small (at most twice the
 * entries plus a little), so the array stays about the size of the table itself. Id 0 maps to
 * index 0 (the empty string / stack); absent ids to UINT32_MAX. */
static int build_direct(const tdx_hmap *m, tdx_u32vec *d) {
    d->n = 0;
    if (!m->n) return 0;
    uint64_t max = 0;
    for (size_t i = 0; i <= m->mask; i++)
        if (m->vals[i] != TDX_HMAP_EMPTY && m->keys[i] > max) max = m->keys[i];
    if (max > 2 * (uint64_t)m->n + 1024) return 0;
    size_t n = (size_t)max + 1;
    if (tdx_vec_reserve(d, n)) return -1;
    memset(d->v, 0xff, n * sizeof *d->v);
    d->v[0] = 0;
    for (size_t i = 0; i <= m->mask; i++)
        if (m->vals[i] != TDX_HMAP_EMPTY) d->v[m->keys[i]] = m->vals[i];
    d->n = n;
    return 0;
}

int tdx_gen_load(tdx_gen *g, tdx_err *err) {
    reset(g);
    tdx_str empty = {(const uint8_t *)"", 0};
    tdx_stack none = {0, 0, 0};
    if (tdx_vec_push(&g->strings, empty) || tdx_vec_push(&g->stacks, none)) return OOM(err);
    tdx_genframe *fr = &g->frame;
    if (tdx_vec_reserve(&g->next_batch, fr->batches.n)) return OOM(err);
    g->next_batch.n = fr->batches.n;
    if (fr->batches.n) memset(g->next_batch.v, 0xff, fr->batches.n * sizeof *g->next_batch.v);
    tdx_hmap thread_of = {0}, last_of = {0};
    pc_cache *pcc = NULL;
    bool have_freq = false;
    int rc = 0;
    for (uint32_t i = 0; i < fr->batches.n && !rc; i++) {
        const tdx_batch *b = &fr->batches.v[i];
        switch (b->kind) {
        case TDX_BATCH_STRINGS:
            rc = add_strings(g, b, err);
            break;
        case TDX_BATCH_STACKS:
            if (!pcc && !(pcc = calloc(1, sizeof *pcc))) {
                rc = OOM(err);
                break;
            }
            rc = add_stacks(g, b, pcc, err);
            break;
        case TDX_BATCH_CPU:
            rc = add_samples(g, b, err);
            break;
        case TDX_BATCH_SYNC:
            rc = set_sync(g, b, &have_freq, err);
            break;
        case TDX_BATCH_EXPERIMENTAL: {
            tdx_expbatch e = {b->exp, b->m, b->data_off, b->size};
            if (tdx_vec_push(&g->exp, e)) rc = OOM(err);
            break;
        }
        default:
            rc = add_event_batch(g, i, &thread_of, &last_of, err);
            break;
        }
    }
    tdx_hmap_free(&thread_of);
    tdx_hmap_free(&last_of);
    free(pcc);
    if (rc) return -1;
    /* A framing error that makes the generation unusable comes after every batch before it. */
    if (fr->err_kind == TDX_GENERR_HARD) {
        *err = fr->err;
        return -1;
    }
    g->nwire_strings = (uint32_t)g->strings.n;
    if (!have_freq) return tdx_errf(err, TDX_EFORMAT, fr->end_off, "no frequency event found");
    if (g->freq == 0)
        return tdx_errf(err, TDX_EFORMAT, fr->end_off, "invalid frequency: 0 ticks per second");
    if (g->version >= 25 && !g->has_clock)
        return tdx_errf(err, TDX_EFORMAT, fr->end_off, "no clock snapshot event found");
    if (build_direct(&g->string_ids, &g->string_direct) ||
        build_direct(&g->stack_ids, &g->stack_direct))
        return OOM(err);
    /* Every frame's names must resolve. Stacks share most frames, so resolve each distinct frame
     * once; only when one fails, look for the first failure in stack order (Go's message). */
    bool names_ok = true;
    for (size_t i = 0; i < g->frames.n; i++) {
        tdx_frame *f = &g->frames.v[i];
        f->func = tdx_gen_string(g, f->func_id);
        f->file = tdx_gen_string(g, f->file_id);
        names_ok &= f->func != UINT32_MAX && f->file != UINT32_MAX;
    }
    for (size_t s = names_ok ? g->stacks.n : 1; s < g->stacks.n; s++) {
        const tdx_stack *st = &g->stacks.v[s];
        for (uint32_t k = 0; k < st->nframes; k++) {
            tdx_frame *f = &g->frames.v[g->stack_frames.v[st->first + k]];
            uint32_t fi = tdx_gen_string(g, f->func_id), li = tdx_gen_string(g, f->file_id);
            if (fi == UINT32_MAX)
                return tdx_errf(err, TDX_EFORMAT, fr->end_off,
                                "found invalid func string ID %" PRIu64 " for stack %" PRIu64,
                                f->func_id, st->id);
            if (li == UINT32_MAX)
                return tdx_errf(err, TDX_EFORMAT, fr->end_off,
                                "found invalid file string ID %" PRIu64 " for stack %" PRIu64,
                                f->file_id, st->id);
            f->func = fi;
            f->file = li;
        }
    }
    /* CPU samples: convert to ns, then sort with Go's unstable sort (ties as Go breaks them). */
    size_t ns = g->samples.n;
    if (ns) {
        int64_t *keys = malloc(ns * sizeof *keys);
        uint32_t *idx = malloc(ns * sizeof *idx);
        tdx_cpusample *sorted = malloc(ns * sizeof *sorted);
        if (!keys || !idx || !sorted) {
            free(keys);
            free(idx);
            free(sorted);
            return OOM(err);
        }
        for (size_t i = 0; i < ns; i++) {
            g->samples.v[i].time = tdx_ticks_to_ns(g, (uint64_t)g->samples.v[i].time);
            keys[i] = g->samples.v[i].time;
            idx[i] = (uint32_t)i;
        }
        tdx_pdqsort(keys, idx, ns);
        for (size_t i = 0; i < ns; i++) sorted[i] = g->samples.v[idx[i]];
        memcpy(g->samples.v, sorted, ns * sizeof *sorted);
        free(keys);
        free(idx);
        free(sorted);
    }
    return 0;
}
