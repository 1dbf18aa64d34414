/* batch.c: batch header parsing and the generation framing scan (Go's readBatch and
 * readGeneration/readGenerationWithSpill, without the per-batch processing). */
#include "batch.h"

#include <inttypes.h>
#include <string.h>

#include "source.h"
#include "spec.h"
#include "varint.h"

static int read_hdr_uv(const uint8_t *data, size_t size, size_t *pos, uint64_t *v, const char *what,
                       tdx_err *err) {
    int k = tdx_uvarint(data + *pos, data + size, v);
    if (k < 0)
        return tdx_errf(err, TDX_EFORMAT, *pos, "error reading batch %s: %s", what,
                        tdx_varint_strerror(k));
    *pos += (size_t)k;
    return 0;
}

static uint8_t classify(const tdx_batch *b, uint8_t first, int version) {
    if (b->exp != 0) return TDX_BATCH_EXPERIMENTAL;
    if (b->size == 0) return TDX_BATCH_EVENTS;
    switch (first) {
    case TDX_EV_STRINGS:
        return TDX_BATCH_STRINGS;
    case TDX_EV_STACKS:
        return TDX_BATCH_STACKS;
    case TDX_EV_CPU_SAMPLES:
        return TDX_BATCH_CPU;
    case TDX_EV_FREQUENCY:
        return version < 25 ? TDX_BATCH_SYNC : TDX_BATCH_EVENTS;
    case TDX_EV_SYNC:
        return version >= 25 ? TDX_BATCH_SYNC : TDX_BATCH_EVENTS;
    }
    return TDX_BATCH_EVENTS;
}

int tdx_read_batch(const uint8_t *data, size_t size, size_t *pos, int version, tdx_batch *b,
                   tdx_err *err) {
    size_t p = *pos;
    if (p >= size) return 0;
    memset(b, 0, sizeof *b);
    b->hdr_off = p;
    uint8_t t = data[p++];
    if (t == TDX_EV_END_OF_GENERATION) {
        *pos = p;
        return 2;
    }
    if (t != TDX_EV_EVENT_BATCH && t != TDX_EV_EXPERIMENTAL_BATCH)
        return tdx_errf(err, TDX_EFORMAT, p - 1, "expected batch event, got event %u", t);
    if (t == TDX_EV_EXPERIMENTAL_BATCH) {
        /* Go treats end of input at the experiment byte as the clean end of the trace. */
        if (p >= size) return 0;
        b->exp = data[p++];
    }
    uint64_t sz;
    if (read_hdr_uv(data, size, &p, &b->gen, "gen", err) ||
        read_hdr_uv(data, size, &p, &b->m, "M ID", err) ||
        read_hdr_uv(data, size, &p, &b->time, "timestamp", err) ||
        read_hdr_uv(data, size, &p, &sz, "size", err))
        return -1;
    if (sz > TDX_MAX_BATCH_SIZE)
        return tdx_errf(err, TDX_EFORMAT, b->hdr_off,
                        "invalid batch size %" PRIu64 ", maximum is %d", sz, TDX_MAX_BATCH_SIZE);
    if (sz > size - p)
        return tdx_errf(err, TDX_EFORMAT, p,
                        "failed to read full batch: read %zu but wanted %" PRIu64, size - p, sz);
    b->data_off = p;
    b->size = (uint32_t)sz;
    b->kind = classify(b, sz ? data[p] : 0, version);
    *pos = p + (size_t)sz;
    return 1;
}

void tdx_framer_init(tdx_framer *f, const uint8_t *data, size_t size, int version) {
    memset(f, 0, sizeof *f);
    f->data = data;
    f->size = size;
    f->version = version;
    f->pos = TDX_HEADER_SIZE;
}

void tdx_genframe_free(tdx_genframe *g) {
    tdx_vec_free(&g->batches);
}

static void gen_reset(tdx_genframe *g, uint64_t seq, size_t off) {
    g->gen = 0;
    g->seq = seq;
    g->min_ts = 0;
    g->batches.n = 0;
    g->has_event_batches = false;
    g->start_off = g->end_off = off;
    g->err_kind = TDX_GENERR_NONE;
    tdx_err_clear(&g->err);
}

/* A non-experimental batch whose payload starts with EndOfGeneration is taken as the marker. */
static bool is_eog_payload(const tdx_framer *f, const tdx_batch *b) {
    return b->exp == 0 && b->size > 0 && f->data[b->data_off] == TDX_EV_END_OF_GENERATION;
}

static int add_batch(tdx_genframe *g, const tdx_batch *b, tdx_err *err) {
    if (g->min_ts == 0 || b->time < g->min_ts) g->min_ts = b->time;
    if (b->kind == TDX_BATCH_EVENTS) g->has_event_batches = true;
    if (tdx_vec_push(&g->batches, *b))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return 0;
}

static void hard(tdx_framer *f, tdx_genframe *g, const tdx_err *e) {
    g->err_kind = TDX_GENERR_HARD;
    g->err = *e;
    f->stop = true;
}

/* Versions 22-25: a generation ends where the next generation number first appears. */
static int next_spill(tdx_framer *f, tdx_genframe *g, tdx_err *err) {
    if (f->nreturned > 0 && !f->have_spill) return 0;
    gen_reset(g, f->nreturned, f->pos);
    f->nreturned++;
    if (f->have_spill) {
        f->have_spill = false;
        g->gen = f->spill.gen;
        g->start_off = f->spill.hdr_off;
        if (is_eog_payload(f, &f->spill)) {
            tdx_err e;
            tdx_errf(&e, TDX_EFORMAT, f->spill.hdr_off,
                     "internal error: unexpectedly processing EndOfGeneration; broken trace?");
            hard(f, g, &e);
            return 1;
        }
        if (add_batch(g, &f->spill, err)) return -1;
    }
    for (;;) {
        tdx_batch b;
        tdx_err e;
        size_t at = f->pos;
        int r = tdx_read_batch(f->data, f->size, &f->pos, f->version, &b, &e);
        if (r == 0) break;
        if (r < 0) {
            if (g->gen != 0) {
                g->err_kind = TDX_GENERR_DEFERRED;
                g->err = e;
                f->stop = true;
                break;
            }
            hard(f, g, &e);
            return 1;
        }
        uint64_t bgen = r == 2 ? 0 : b.gen;
        if (bgen == 0) {
            tdx_errf(&e, TDX_EFORMAT, at, "invalid generation number 0");
            hard(f, g, &e);
            return 1;
        }
        if (g->gen == 0) g->gen = bgen;
        if (bgen == g->gen + 1) {
            f->spill = b;
            f->have_spill = true;
            break;
        }
        if (bgen != g->gen) {
            tdx_errf(&e, TDX_EFORMAT, at, "generations out of order");
            hard(f, g, &e);
            return 1;
        }
        if (is_eog_payload(f, &b)) {
            tdx_errf(&e, TDX_EFORMAT, at,
                     "internal error: unexpectedly processing EndOfGeneration; broken trace?");
            hard(f, g, &e);
            return 1;
        }
        if (add_batch(g, &b, err)) return -1;
        g->end_off = f->pos;
    }
    if (g->batches.n)
        g->end_off = g->batches.v[g->batches.n - 1].data_off + g->batches.v[g->batches.n - 1].size;
    return 1;
}

/* Version 26: an explicit EndOfGeneration byte ends every generation. */
static int next_eog(tdx_framer *f, tdx_genframe *g, tdx_err *err) {
    gen_reset(g, f->nreturned, f->pos);
    for (;;) {
        tdx_batch b;
        tdx_err e;
        size_t at = f->pos;
        int r = tdx_read_batch(f->data, f->size, &f->pos, f->version, &b, &e);
        if (r == 0) {
            if (g->has_event_batches) {
                tdx_errf(&e, TDX_EFORMAT, at,
                         "incomplete generation found; trace likely truncated");
                f->nreturned++;
                hard(f, g, &e);
                return 1;
            }
            return 0; /* clean end; a structural-only tail is dropped as Go does */
        }
        if (r < 0) {
            f->nreturned++;
            hard(f, g, &e);
            return 1;
        }
        uint64_t bgen = r == 2 ? 0 : b.gen;
        if (g->gen == 0) g->gen = bgen;
        if (r == 2 || is_eog_payload(f, &b)) break;
        if (bgen == 0) {
            tdx_errf(&e, TDX_EFORMAT, at, "invalid generation number 0");
            f->nreturned++;
            hard(f, g, &e);
            return 1;
        }
        if (bgen != g->gen) {
            tdx_errf(
                &e, TDX_EFORMAT, at,
                "broken trace: missing end-of-generation event, or generations are interleaved");
            f->nreturned++;
            hard(f, g, &e);
            return 1;
        }
        if (add_batch(g, &b, err)) return -1;
    }
    f->nreturned++;
    g->end_off = f->pos;
    return 1;
}

int tdx_framer_next(tdx_framer *f, tdx_genframe *g, tdx_err *err) {
    if (f->stop) return 0;
    return f->version >= 26 ? next_eog(f, g, err) : next_spill(f, g, err);
}
