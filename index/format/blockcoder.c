/* blockcoder.c: chunks of values flow from the producer to the coder through a FIFO; spent chunks
 * come back through a free list. Without a thread, a chunk is coded as it is handed over. */
#include "index/format/blockcoder.h"

#include <pthread.h>
#include <stdlib.h>

#include "core/cputime.h"
#include "core/varint.h"
#include "index/format/rans.h"

/* Every stream may hold an open chunk; the rest let the producer run ahead of the coder. */
#define NCHUNKS (TDX_BCODER_STREAMS + 8)

struct tdx_bcchunk {
    uint64_t v[TDX_BCODER_CHUNK_VALS];
    uint8_t ctx[TDX_BCODER_CHUNK_VALS];
    uint32_t n;
    int s;
    bool close;
    uint64_t key, nrec;
    tdx_bcchunk *next;
};

/* The coder's side of a stream: the open block's symbols. */
typedef struct cstream {
    tdx_rans_enc enc;
    bool open;
    uint64_t nvals;
    tdx_buf *out;
} cstream;

struct tdx_bcoder {
    tdx_bcopen open[TDX_BCODER_STREAMS];
    cstream cs[TDX_BCODER_STREAMS];
    int nstreams;
    uint32_t nctx;
    tdx_bcoder_sink sink;
    void *sink_ctx;
    tdx_bcoder_map map;
    void *map_ctx;
    tdx_bcchunk *pool;
    tdx_bcchunk *free;        /* spent chunks */
    tdx_bcchunk *head, *tail; /* handed over, not yet coded */
    bool thread, ending, ended;
    bool busy; /* the coder is coding a chunk it took */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work, room;
    int code; /* the first failure: later chunks are dropped */
    tdx_err err;
    int64_t code_ns, thread_ns; /* tdx_bcoder_cpu */
};

static void code_chunk_(tdx_bcoder *c, const tdx_bcchunk *k) {
    if (c->code) return;
    cstream *cs = &c->cs[k->s];
    tdx_rans_enc *e = &cs->enc;
    if (!cs->open) {
        if (tdx_rans_enc_reset(e, c->nctx)) goto oom;
        cs->open = true;
        cs->nvals = 0;
    }
    if (k->n && tdx_rans_enc_reserve(e, k->n, (size_t)k->n * 64)) goto oom;
    uint64_t nv = 0;
    for (uint32_t i = 0; i < k->n; i++, nv++) {
        unsigned cx = k->ctx[i];
        uint64_t v = k->v[i];
        if (cx & 0x80) { /* a deferred pair: its second word follows */
            cx &= 0x7f;
            if ((c->code = c->map(c->map_ctx, cx, v, k->v[++i], &v))) return;
        }
        tdx_rans_put_uint(e, cx & (TDX_RANS_LANES - 1), cx, v);
    }
    cs->nvals += nv;
    if (!k->close) return;
    cs->open = false;
    tdx_buf *out = cs->out;
    size_t start = out->n;
    if (tdx_buf_uvarint(out, k->nrec) || tdx_buf_uvarint(out, cs->nvals) ||
        tdx_rans_enc_finish(e, out))
        goto oom;
    c->code = c->sink(c->sink_ctx, k->s, k->key, start, &c->err);
    return;
oom:
    c->code = -1;
}

static void code_chunk(tdx_bcoder *c, const tdx_bcchunk *k) {
    int64_t t0 = tdx_thread_cpu_ns();
    code_chunk_(c, k);
    c->code_ns += tdx_thread_cpu_ns() - t0;
}

static void *coder_main(void *arg) {
    tdx_bcoder *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->head && !c->ending) pthread_cond_wait(&c->work, &c->mu);
        tdx_bcchunk *k = c->head;
        if (!k) break;
        c->head = k->next;
        if (!c->head) c->tail = NULL;
        c->busy = true;
        pthread_mutex_unlock(&c->mu);
        code_chunk(c, k);
        pthread_mutex_lock(&c->mu);
        c->busy = false;
        k->next = c->free;
        c->free = k;
        pthread_cond_broadcast(&c->room); /* a producer waiting for a chunk, or in sync */
    }
    pthread_mutex_unlock(&c->mu);
    c->thread_ns = tdx_thread_cpu_ns();
    return NULL;
}

/* A spent chunk, waiting for the coder to give one back when none is. */
static tdx_bcchunk *take_free(tdx_bcoder *c) {
    if (c->thread) pthread_mutex_lock(&c->mu);
    while (!c->free) pthread_cond_wait(&c->room, &c->mu); /* only with a thread: see NCHUNKS */
    tdx_bcchunk *k = c->free;
    c->free = k->next;
    if (c->thread) pthread_mutex_unlock(&c->mu);
    return k;
}

static void hand_over(tdx_bcoder *c, tdx_bcchunk *k) {
    if (!c->thread) {
        code_chunk(c, k);
        k->next = c->free;
        c->free = k;
        return;
    }
    k->next = NULL;
    pthread_mutex_lock(&c->mu);
    if (c->tail)
        c->tail->next = k;
    else
        c->head = k;
    c->tail = k;
    pthread_cond_signal(&c->work);
    pthread_mutex_unlock(&c->mu);
}

void tdx_bcoder_submit_(tdx_bcoder *c, tdx_bcopen *o, bool close, uint64_t key, uint64_t nrec) {
    tdx_bcchunk *k = o->c;
    if (!k && close) k = take_free(c); /* an empty chunk carries the close */
    if (k) {
        k->n = o->n;
        k->s = o->s;
        k->close = close;
        k->key = key;
        k->nrec = nrec;
        hand_over(c, k);
    }
    o->c = NULL;
    o->n = o->cap = 0;
    if (close) return;
    o->c = take_free(c);
    o->v = o->c->v;
    o->ctx = o->c->ctx;
    o->cap = TDX_BCODER_CHUNK_VALS;
}

tdx_bcoder *tdx_bcoder_new(int nstreams, uint32_t nctx, tdx_buf *const *out, tdx_bcoder_sink sink,
                           void *sink_ctx, bool thread) {
    if (nstreams < 1 || nstreams > TDX_BCODER_STREAMS || nctx > 128) return NULL;
    tdx_bcoder *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->pool = malloc(NCHUNKS * sizeof *c->pool);
    if (!c->pool) {
        free(c);
        return NULL;
    }
    for (int i = 0; i < NCHUNKS; i++) {
        c->pool[i].next = c->free;
        c->free = &c->pool[i];
    }
    c->nstreams = nstreams;
    c->nctx = nctx;
    c->sink = sink;
    c->sink_ctx = sink_ctx;
    for (int s = 0; s < nstreams; s++) {
        c->open[s].s = s;
        tdx_rans_enc_init(&c->cs[s].enc);
        c->cs[s].out = out[s];
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->work, NULL);
    pthread_cond_init(&c->room, NULL);
    c->thread = thread && pthread_create(&c->th, NULL, coder_main, c) == 0;
    return c;
}

void tdx_bcoder_set_map(tdx_bcoder *c, tdx_bcoder_map map, void *map_ctx) {
    c->map = map;
    c->map_ctx = map_ctx;
}

int tdx_bcoder_sync(tdx_bcoder *c) {
    if (!c->thread) return c->code;
    pthread_mutex_lock(&c->mu);
    while (c->head || c->busy) pthread_cond_wait(&c->room, &c->mu);
    int code = c->code;
    pthread_mutex_unlock(&c->mu);
    return code;
}

tdx_bcopen *tdx_bcoder_stream(tdx_bcoder *c, int s) {
    return &c->open[s];
}

int tdx_bcoder_end(tdx_bcoder *c, tdx_err *err) {
    if (c->ended) return c->code;
    c->ended = true;
    if (c->thread) {
        pthread_mutex_lock(&c->mu);
        c->ending = true;
        pthread_cond_signal(&c->work);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->th, NULL);
    }
    if (c->code && err) *err = c->err;
    return c->code;
}

void tdx_bcoder_cpu(const tdx_bcoder *c, int64_t *code_ns, int64_t *thread_ns) {
    *code_ns = c->code_ns;
    *thread_ns = c->thread ? c->thread_ns : 0;
}

void tdx_bcoder_free(tdx_bcoder *c) {
    if (!c) return;
    tdx_bcoder_end(c, NULL);
    for (int s = 0; s < c->nstreams; s++) tdx_rans_enc_free(&c->cs[s].enc);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->room);
    free(c->pool);
    free(c);
}
