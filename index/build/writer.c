/* writer.c: the index writer (file layout in format.h and docs/index-format.md). */
#include "index/build/writer.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <unistd.h>

#include "index/common/atomic_file.h"
#include "core/cputime.h"
#include "core/hmap.h"
#include "core/reader.h"
#include "core/spec.h"
#include "core/varint.h"
#include "index/format/evcodec.h"
#include "index/common/evstore.h"
#include "index/common/extsort.h"
#include "index/format/format.h"
#include "index/format/strpack.h"
#include "index/format/tables.h"
#include "index/views/viewgen.h"

typedef struct res_rec {
    uint64_t id;
    uint64_t events;
    int64_t first, last;
} res_rec;

#define RES_CACHE 64
typedef struct resmap {
    tdx_hmap idx;
    TDX_VEC(res_rec) v;
    /* Recent ids and their record + 1 (0: none), by id % RES_CACHE: events of one thread,
     * proc or goroutine come in runs and interleave among a few (one goroutine per proc), so
     * most lookups stop here instead of probing the map (a cache miss each, ~50 ns an event
     * over the three maps). */
    uint64_t cache_id[RES_CACHE];
    uint32_t cache_rec[RES_CACHE];
    /* Goroutines: at a generation's end the records move to an external sort (by id, then
     * generation) and are folded at the end, so memory holds one generation's goroutines. */
    tdx_xsort *spill;
    uint64_t spills;
} resmap;

/* Records a generation may leave in a map before they move to its sort, and the sort's memory. */
#define RES_SPILL_MIN 4096
#define RES_SORT_BUDGET ((size_t)4 << 20)
typedef struct {
    tdx_buf tab; /* section table records */
    uint32_t count;
} sectab;

/* Full blocks queued for the encoder thread (tdx_iwriter_async): job j sits in slot
 * j % ENC_SLOTS; the in-order thread fills the next block meanwhile. Coding a block costs more
 * than ordering and filling it (about 135 against 85 ns an event), so when the queue is full the
 * in-order thread codes its newest job itself instead of waiting: both cores stay busy, and the
 * encoder thread still writes every block, in order. A block's code depends on its events
 * only, so the file is the same whoever codes it. */
#define ENC_SLOTS 3
enum { JOB_QUEUED, JOB_CODING, JOB_CODED };
typedef struct encq {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    TDX_VEC(tdx_event) slot[ENC_SLOTS];
    uint64_t first[ENC_SLOTS]; /* index of each queued block's first event */
    bool gen_end[ENC_SLOTS];   /* and whether it ends a generation */
    uint8_t state[ENC_SLOTS];  /* JOB_*: coded by either thread, written by the encoder's */
    int rc[ENC_SLOTS];         /* the coding's result (-1: out of memory) */
    tdx_buf code[ENC_SLOTS];   /* the coded block */
    tdx_evenc helper;          /* the in-order thread's coder */
    unsigned every;            /* tdx_iwriter_async's */
    uint64_t head, tail;       /* queued jobs: [head, tail) */
    bool done;                 /* no more jobs: the thread exits once the queue is empty */
    bool failed;               /* the thread failed: err says why */
    tdx_err err;
    int64_t code_ns, thread_ns; /* the thread's CPU coding, and all of it (read after join) */
} encq;

struct tdx_iwriter {
    tdx_afile f;
    sectab st;
    tdx_gen tabgen; /* the global tables shaped as generation tables (second phase) */
    bool tabgen_built;
    int64_t max_proc; /* the largest proc of any proc transition (the proc view's maxProc) */
    tdx_err err;
    int failed;
    int version;
    const uint8_t *trace;
    size_t trace_size;
    uint64_t trace_hash, trace_sample; /* with have_hash: from the reader (tdx_read_stats) */
    bool have_hash;
    tdx_tables tab;
    tdx_evenc enc;
    TDX_VEC(tdx_event) block; /* events of the block being filled (global ids) */
    tdx_buf blockbuf;
    tdx_buf evdir;
    tdx_buf gens;
    uint64_t events_off; /* file offset of the EVENTS section */
    uint64_t events_end; /* and of its end (later sections follow it) */
    uint64_t nevents, nblocks;
    uint64_t valid_events; /* events up to and including the last Sync */
    uint64_t gens_end;     /* end offset of the last generation's batches in the trace */
    bool partial;          /* tdx_iwriter_set_partial: a damaged trace's valid part */
    uint64_t damage_off;
    uint64_t gen_first_event, gen_first_block;
    int64_t first_time, last_time, gen_first_time;
    uint64_t kinds[15];
    resmap gs, ps, ms;
    /* After the events (tdx_iwriter_end_events): the goroutine, proc and thread sections encoded,
     * their maps and the tables' lookup maps freed before the views' phase. */
    bool sealed;
    tdx_buf resbody[3];
    uint64_t rescount[3];
    TDX_VEC(uint32_t) stw; /* string ids of stop-the-world kinds, first-seen order */
    tdx_hmap stw_set;
    encq *q;         /* NULL: blocks are encoded on the calling thread */
    uint64_t shared; /* blocks the delivering thread coded while there was an encoder thread */
    tdx_iwriter_cpu cpu;
    /* the section being streamed (tdx_iwriter_stream_*) */
    uint32_t stream_kind;
    uint64_t stream_off;
    bool streaming;
};

#define FAIL_OOM(w) fail(w, TDX_ENOMEM, "out of memory")

static int fail(tdx_iwriter *w, int kind, const char *msg) {
    if (!w->failed) tdx_errf(&w->err, kind, TDX_NO_OFFSET, "%s", msg);
    w->failed = 1;
    return -1;
}

tdx_iwriter *tdx_iwriter_new(const char *out_path, int version, const uint8_t *trace,
                             size_t trace_size, size_t string_budget, tdx_err *err) {
    tdx_iwriter *w = calloc(1, sizeof *w);
    if (!w) {
        tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        return NULL;
    }
    tdx_evenc_init(&w->enc);
    w->version = version;
    w->trace = trace;
    w->trace_size = trace_size;
    if (tdx_afile_open(&w->f, out_path, err)) {
        free(w);
        return NULL;
    }
    if (tdx_tables_init(&w->tab, w->f.tmp, trace_size, string_budget, err)) {
        tdx_afile_abort(&w->f);
        free(w);
        return NULL;
    }
    /* The header is written last; reserve its space. */
    uint8_t zero[TDX_IDX_HEADER_SIZE] = {0};
    if (tdx_afile_write(&w->f, zero, sizeof zero, err)) {
        tdx_iwriter_abort(w);
        return NULL;
    }
    w->events_off = w->events_end = TDX_IDX_HEADER_SIZE;
    w->max_proc = 0;
    tdx_gen_init(&w->tabgen, NULL, 0);
    return w;
}

static int enc_end(tdx_iwriter *w, bool drain);
static int res_spill(const char *beside, resmap *m, tdx_err *err);
static int seal(tdx_iwriter *w);

static void free_all(tdx_iwriter *w) {
    enc_end(w, false);
    tdx_tables_free(&w->tab);
    tdx_gen_free(&w->tabgen);
    tdx_vec_free(&w->st.tab);
    tdx_vec_free(&w->stw);
    tdx_hmap_free(&w->stw_set);
    tdx_evenc_free(&w->enc);
    tdx_vec_free(&w->block);
    tdx_vec_free(&w->blockbuf);
    tdx_vec_free(&w->evdir);
    tdx_vec_free(&w->gens);
    resmap *maps[3] = {&w->gs, &w->ps, &w->ms};
    for (int i = 0; i < 3; i++) {
        tdx_hmap_free(&maps[i]->idx);
        tdx_vec_free(&maps[i]->v);
        tdx_xsort_free(maps[i]->spill);
        tdx_vec_free(&w->resbody[i]);
    }
    free(w);
}

void tdx_iwriter_abort(tdx_iwriter *w) {
    if (!w) return;
    enc_end(w, false); /* the encoder thread writes through the file being removed */
    tdx_afile_abort(&w->f);
    free_all(w);
}

const tdx_err *tdx_iwriter_error(const tdx_iwriter *w) {
    return &w->err;
}

void tdx_iwriter_set_trace_hash(tdx_iwriter *w, uint64_t h, uint64_t sample) {
    w->trace_hash = h;
    w->trace_sample = sample;
    w->have_hash = true;
}
uint64_t tdx_iwriter_size(const tdx_iwriter *w) {
    return w->f.written;
}

/* A table call failed: its own error (a scratch file's I/O), else memory. */
static int tables_failed(tdx_iwriter *w) {
    if (w->tab.err.kind == TDX_OK) return FAIL_OOM(w);
    if (!w->failed) w->err = w->tab.err;
    w->failed = 1;
    return -1;
}

static int see(resmap *m, int64_t id, int64_t t) {
    if (id < 0) return 0;
    size_t c = (size_t)id % RES_CACHE;
    uint32_t rec = m->cache_rec[c];
    if (!rec || m->cache_id[c] != (uint64_t)id) {
        int ins;
        uint32_t *slot = tdx_hmap_upsert(&m->idx, (uint64_t)id, (uint32_t)m->v.n, &ins);
        if (!slot) return -1;
        if (ins) {
            res_rec r = {(uint64_t)id, 0, t, t};
            if (tdx_vec_push(&m->v, r)) return -1;
        }
        rec = *slot + 1;
        m->cache_id[c] = (uint64_t)id;
        m->cache_rec[c] = rec;
    }
    res_rec *r = &m->v.v[rec - 1];
    r->events++;
    r->last = t;
    return 0;
}

/* Counts a block's events per goroutine and notes the stop-the-world kinds; at a generation's end
 * its goroutine records may move to their sort. Done where the block is encoded, on the encoder
 * thread when there is one (account_mp below does the rest on the ordering thread). */
static int account(tdx_iwriter *w, const tdx_event *ev, size_t n, bool gen_end, tdx_err *err) {
    for (size_t i = 0; i < n; i++) {
        const tdx_event *e = &ev[i];
        if (see(&w->gs, e->g, e->time)) goto oom;
        if (e->kind == TDX_KIND_STATE_TRANSITION && e->res_kind == TDX_RES_GOROUTINE &&
            e->res != e->g && see(&w->gs, e->res, e->time))
            goto oom;
        if ((e->type == TDX_EV_STW_BEGIN || e->type == TDX_EV_STW_END) &&
            tdx_hmap_get(&w->stw_set, e->str[0]) == TDX_HMAP_EMPTY &&
            (tdx_hmap_put(&w->stw_set, e->str[0], 1) || tdx_vec_push(&w->stw, e->str[0])))
            goto oom;
    }
    if (gen_end && w->gs.v.n >= RES_SPILL_MIN) return res_spill(w->f.tmp, &w->gs, err);
    return 0;
oom:
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

/* The ordering thread's share of the accounting (the two threads' loads balance with it): kinds,
 * threads, procs and the largest proc, per event. 0, -1 (memory) or -2 (a proc id above what the
 * proc view lays out). */
static int account_mp(tdx_iwriter *w, const tdx_event *e) {
    if (e->kind < 15) w->kinds[e->kind]++;
    if (see(&w->ms, e->m, e->time) || see(&w->ps, e->p, e->time)) return -1;
    if (e->kind == TDX_KIND_STATE_TRANSITION && e->res_kind == TDX_RES_PROC) {
        if (e->res > TDX_VIEW_MAX_PROC) return -2;
        if (e->res > w->max_proc) w->max_proc = e->res;
        if (e->res != e->p && see(&w->ps, e->res, e->time)) return -1;
    }
    return 0;
}

/* Appends one coded block whose first event is event `first`, and accounts for it (on the
 * calling thread, or on the encoder thread: only one of them writes event blocks, and it
 * reports into err). gen_end: the block ends a generation (it may then be empty). */
static int put_block(tdx_iwriter *w, const tdx_event *ev, size_t n, uint64_t first, bool gen_end,
                     const tdx_buf *code, tdx_err *err) {
    if (!n) return account(w, ev, n, gen_end, err);
    uint8_t d[D_SIZE];
    tdx_le64(d + D_OFFSET, w->f.written - w->events_off);
    tdx_le32(d + D_LENGTH, (uint32_t)code->n);
    tdx_le32(d + D_NEVENTS, (uint32_t)n);
    tdx_le64(d + D_FIRST_EVENT, first);
    tdx_le64(d + D_FIRST_TIME, (uint64_t)ev[0].time);
    tdx_le64(d + D_LAST_TIME, (uint64_t)ev[n - 1].time);
    tdx_le64(d + D_HASH, XXH3_64bits(code->v, code->n));
    if (tdx_buf_append(&w->evdir, d, sizeof d))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    if (tdx_afile_write(&w->f, code->v, code->n, err)) return -1;
    w->events_end = w->f.written;
    return account(w, ev, n, gen_end, err);
}

/* Codes and appends one block (put_block). */
static int write_block(tdx_iwriter *w, const tdx_event *ev, size_t n, uint64_t first, bool gen_end,
                       tdx_err *err) {
    w->blockbuf.n = 0;
    int64_t t0 = tdx_thread_cpu_ns();
    if (n && tdx_evenc_block(&w->enc, ev, n, &w->blockbuf))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    int64_t t1 = tdx_thread_cpu_ns();
    int rc = put_block(w, ev, n, first, gen_end, &w->blockbuf, err);
    w->cpu.code_ns += t1 - t0;
    w->cpu.put_ns += tdx_thread_cpu_ns() - t1;
    return rc;
}

/* Codes queued job j (its slot's state is JOB_CODING, set by the caller under the lock). */
static int64_t code_job(encq *q, tdx_evenc *enc, uint64_t j) {
    int s = (int)(j % ENC_SLOTS);
    int64_t t0 = tdx_thread_cpu_ns();
    q->code[s].n = 0;
    q->rc[s] = q->slot[s].n ? tdx_evenc_block(enc, q->slot[s].v, q->slot[s].n, &q->code[s]) : 0;
    return tdx_thread_cpu_ns() - t0;
}

static void *enc_main(void *arg) {
    tdx_iwriter *w = arg;
    encq *q = w->q;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (q->head == q->tail && !q->done) pthread_cond_wait(&q->cv, &q->mu);
        if (q->head == q->tail) break;
        int s = (int)(q->head % ENC_SLOTS);
        if (q->state[s] == JOB_QUEUED && !q->failed) {
            q->state[s] = JOB_CODING;
            pthread_mutex_unlock(&q->mu);
            q->code_ns += code_job(q, &w->enc, q->head);
            pthread_mutex_lock(&q->mu);
            q->state[s] = JOB_CODED;
        }
        while (q->state[s] != JOB_CODED && !q->failed) pthread_cond_wait(&q->cv, &q->mu);
        bool skip = q->failed || q->state[s] != JOB_CODED;
        pthread_mutex_unlock(&q->mu);
        int rc = -1;
        if (!skip && q->rc[s])
            tdx_errf(&q->err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        else if (!skip)
            rc = put_block(w, q->slot[s].v, q->slot[s].n, q->first[s], q->gen_end[s], &q->code[s],
                           &q->err);
        pthread_mutex_lock(&q->mu);
        if (rc) q->failed = true;
        q->head++;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    q->thread_ns = tdx_thread_cpu_ns();
    return NULL;
}

/* Ends the encoder thread. drain: after it has written every queued block (-1 if it failed);
 * else (abort) the queued blocks are dropped. */
static int enc_end(tdx_iwriter *w, bool drain) {
    encq *q = w->q;
    if (!q) return 0;
    pthread_mutex_lock(&q->mu);
    while (drain && q->head != q->tail) pthread_cond_wait(&q->cv, &q->mu);
    bool failed = drain && q->failed;
    if (failed && !w->failed) w->err = q->err;
    q->done = true;
    q->failed = true; /* anything still queued is skipped */
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->th, NULL);
    w->cpu.enc_thread_ns += q->thread_ns;
    w->cpu.enc_code_ns += q->code_ns;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    for (int i = 0; i < ENC_SLOTS; i++) {
        tdx_vec_free(&q->slot[i]);
        tdx_vec_free(&q->code[i]);
    }
    tdx_evenc_free(&q->helper);
    free(q);
    w->q = NULL;
    if (failed) w->failed = 1;
    return failed ? -1 : 0;
}

int tdx_iwriter_async(tdx_iwriter *w, unsigned every) {
    encq *q = calloc(1, sizeof *q);
    if (!q) return -1;
    q->every = every;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    tdx_evenc_init(&q->helper);
    w->q = q;
    if (pthread_create(&q->th, NULL, enc_main, w)) {
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
        tdx_evenc_free(&q->helper);
        free(q);
        w->q = NULL;
        return -1;
    }
    return 0;
}

/* Codes queued job j on the delivering thread (called and returning with the lock held). */
static void share_job(tdx_iwriter *w, encq *q, uint64_t j) {
    int s = (int)(j % ENC_SLOTS);
    q->state[s] = JOB_CODING;
    pthread_mutex_unlock(&q->mu);
    w->cpu.code_ns += code_job(q, &q->helper, j);
    pthread_mutex_lock(&q->mu);
    q->state[s] = JOB_CODED;
    w->shared++;
    pthread_cond_broadcast(&q->cv);
}

static int flush_block(tdx_iwriter *w, bool gen_end) {
    if (!w->block.n && !gen_end) return 0;
    tdx_evstore_fence(); /* the block's streaming stores before the encoder reads it */
    uint64_t first = w->nevents - w->block.n;
    encq *q = w->q;
    if (!q) {
        tdx_err err;
        if (write_block(w, w->block.v, w->block.n, first, gen_end, &err)) {
            if (!w->failed) w->err = err;
            w->failed = 1;
            return -1;
        }
    } else {
        /* Hand the block over and take the slot's old storage to fill next. */
        pthread_mutex_lock(&q->mu);
        while (q->tail - q->head == ENC_SLOTS && !q->failed) {
            /* Full: code the newest job not yet taken, never the oldest (the encoder's). */
            uint64_t j = q->tail - 1;
            while (j > q->head && q->state[j % ENC_SLOTS] != JOB_QUEUED) j--;
            if (j > q->head)
                share_job(w, q, j);
            else
                pthread_cond_wait(&q->cv, &q->mu);
        }
        bool failed = q->failed;
        if (!failed) {
            int s = (int)(q->tail % ENC_SLOTS);
            tdx_event *v = q->slot[s].v;
            size_t cap = q->slot[s].cap;
            q->slot[s].v = w->block.v;
            q->slot[s].n = w->block.n;
            q->slot[s].cap = w->block.cap;
            q->first[s] = first;
            q->gen_end[s] = gen_end;
            q->state[s] = JOB_QUEUED;
            w->block.v = v;
            w->block.cap = cap;
            q->tail++;
            pthread_cond_broadcast(&q->cv);
            if (q->every && (q->tail - 1) % q->every == 0) share_job(w, q, q->tail - 1);
        } else if (!w->failed) {
            w->err = q->err;
        }
        pthread_mutex_unlock(&q->mu);
        if (failed) {
            w->failed = 1;
            return -1;
        }
    }
    if (w->block.n) w->nblocks++;
    w->block.n = 0;
    return 0;
}

int tdx_iwriter_event(void *arg, const tdx_event *ev, const tdx_gen *g) {
    tdx_iwriter *w = arg;
    if (w->failed) return -1;
    if (w->sealed) return fail(w, TDX_EUSAGE, "internal error: an event after the last one");
    if (tdx_vec_reserve(&w->block, w->block.n + 1)) return FAIL_OOM(w);
    tdx_event e = *ev;
    /* Generation ids become global ids. */
    if (g) {
        uint32_t *ids[4] = {&e.stack, &e.tstack, &e.str[0], &e.str[1]};
        for (int i = 0; i < 4; i++) {
            if (!*ids[i]) continue;
            *ids[i] = i < 2 ? tdx_tables_gen_stack(&w->tab, g, *ids[i])
                            : tdx_tables_gen_string(&w->tab, g, *ids[i]);
            if (*ids[i] == UINT32_MAX) return tables_failed(w);
        }
    }
    /* With an encoder thread, the block's lines were last read on its core (evstore.h); without,
     * the block is encoded at once from this thread's cache. perf had the ordinary stores at 40%
     * of the ordering thread's time. */
    tdx_evstore(&w->block.v[w->block.n], &e, w->q != NULL);
    int rc = account_mp(w, &e);
    if (rc == -2) {
        tdx_errf(&w->err, TDX_EUNSUPPORTED, TDX_NO_OFFSET,
                 "proc %lld: the proc view has a lane for every proc id up to the largest, and "
                 "ids above %d are the viewer's own (Go's FakeP): not indexed",
                 (long long)e.res, TDX_VIEW_MAX_PROC);
        w->failed = 1;
        return -1;
    }
    if (rc) return FAIL_OOM(w);
    if (w->nevents == 0) w->first_time = e.time;
    if (w->block.n == 0 && w->nevents == w->gen_first_event) w->gen_first_time = e.time;
    w->last_time = e.time;
    w->nevents++;
    if (e.kind == TDX_KIND_SYNC) w->valid_events = w->nevents;
    if (++w->block.n == TDX_EVBLOCK_EVENTS) return flush_block(w, false);
    return 0;
}

/* Moves m's records to its sort (created on first use) and empties m. */
static int res_spill(const char *beside, resmap *m, tdx_err *err) {
    if (!m->spill && !(m->spill = tdx_xsort_new(beside, RES_SORT_BUDGET)))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    for (size_t i = 0; i < m->v.n; i++) {
        const res_rec *r = &m->v.v[i];
        uint8_t p[24];
        tdx_le64(p, r->events);
        tdx_le64(p + 8, (uint64_t)r->first);
        tdx_le64(p + 16, (uint64_t)r->last);
        if (tdx_xsort_add(m->spill, r->id ^ TDX_XSORT_SIGN, m->spills, p, sizeof p, err)) return -1;
    }
    m->spills++;
    m->v.n = 0;
    tdx_hmap_clear(&m->idx);
    memset(m->cache_rec, 0, sizeof m->cache_rec);
    return 0;
}

int tdx_iwriter_gen_done(void *arg, const tdx_gen *g, uint64_t index, uint64_t nevents) {
    tdx_iwriter *w = arg;
    (void)index;
    (void)nevents;
    if (w->failed || flush_block(w, true)) return -1;
    uint8_t r[G_SIZE] = {0};
    tdx_le64(r + G_GEN, g->frame.gen);
    tdx_le64(r + G_FIRST_EVENT, w->gen_first_event);
    tdx_le64(r + G_NEVENTS, w->nevents - w->gen_first_event);
    tdx_le64(r + G_FIRST_TIME, (uint64_t)w->gen_first_time);
    tdx_le64(r + G_LAST_TIME, (uint64_t)w->last_time);
    tdx_le32(r + G_FIRST_BLOCK, (uint32_t)w->gen_first_block);
    tdx_le32(r + G_NBLOCKS, (uint32_t)(w->nblocks - w->gen_first_block));
    if (tdx_buf_append(&w->gens, r, sizeof r)) return FAIL_OOM(w);
    w->gen_first_event = w->nevents;
    w->gen_first_block = w->nblocks;
    if (g->frame.end_off > w->gens_end) w->gens_end = g->frame.end_off;
    return 0;
}

/* ---- the second phase: reading the blocks back ---- */

int tdx_iwriter_end_events(tdx_iwriter *w, tdx_err *err) {
    int rc = w->failed || flush_block(w, false) ? -1 : 0;
    if (enc_end(w, true)) rc = -1;
    /* The encoder's models and the block buffers are done (~11 MB the views' pass would keep). */
    tdx_evenc_free(&w->enc);
    tdx_evenc_init(&w->enc);
    tdx_vec_free(&w->block);
    tdx_vec_free(&w->blockbuf);
    if (!rc) rc = seal(w);
    if (rc) *err = w->err;
    return rc;
}

void tdx_iwriter_cpu_stats(const tdx_iwriter *w, tdx_iwriter_cpu *c) {
    *c = w->cpu;
}

uint64_t tdx_iwriter_blocks_shared(const tdx_iwriter *w) {
    return w->shared;
}

int64_t tdx_iwriter_max_proc(const tdx_iwriter *w) {
    return w->max_proc;
}

void tdx_iwriter_stw_strings(const tdx_iwriter *w, const uint32_t **ids, size_t *n) {
    *ids = w->stw.v;
    *n = w->stw.n;
}

const char *tdx_iwriter_temp_path(const tdx_iwriter *w) {
    return w->f.tmp;
}
uint64_t tdx_iwriter_nevents(const tdx_iwriter *w) {
    return w->nevents;
}
void tdx_iwriter_set_partial(tdx_iwriter *w, uint64_t damage_off) {
    w->partial = true;
    w->damage_off = damage_off;
}

uint64_t tdx_iwriter_valid_events(const tdx_iwriter *w) {
    return w->valid_events;
}

uint64_t tdx_iwriter_gens_end(const tdx_iwriter *w) {
    return w->gens_end;
}

size_t tdx_iwriter_nblocks(const tdx_iwriter *w) {
    return (size_t)w->nblocks;
}

const tdx_gen *tdx_iwriter_tables(tdx_iwriter *w) {
    if (w->tabgen_built) return &w->tabgen;
    if (!w->sealed) {
        fail(w, TDX_EUSAGE, "internal error: the tables are read before the events ended");
        return NULL;
    }
    tdx_tables *t = &w->tab;
    tdx_gen *g = &w->tabgen;
    uint32_t nk = tdx_tables_nstacks(t);
    if (tdx_vec_reserve(&g->frames, t->frames.n) || tdx_vec_reserve(&g->stacks, nk) ||
        tdx_vec_reserve(&g->stack_frames, t->stack_frames.n)) {
        fail(w, TDX_ENOMEM, "out of memory");
        return NULL;
    }
    /* The strings are read where the sealed table keeps them (a copy grows with the trace). */
    g->str_base = tdx_tables_str_bytes(t);
    g->str_offs = tdx_tables_str_offs(t);
    g->strings.n = tdx_tables_nstrings(t);
    for (size_t i = 0; i < t->frames.n; i++) {
        const tdx_gframe *f = &t->frames.v[i];
        g->frames.v[i] =
            (tdx_frame){.pc = f->pc, .line = f->line, .func = f->func, .file = f->file};
    }
    g->frames.n = t->frames.n;
    if (t->stack_frames.n) /* both may be NULL when no stack has frames */
        memcpy(g->stack_frames.v, t->stack_frames.v, t->stack_frames.n * sizeof *t->stack_frames.v);
    g->stack_frames.n = t->stack_frames.n;
    for (uint32_t i = 0; i < nk; i++)
        g->stacks.v[i] = (tdx_stack){i, (uint32_t)t->stack_off.v[i],
                                     (uint32_t)(t->stack_off.v[i + 1] - t->stack_off.v[i])};
    g->stacks.n = nk;
    w->tabgen_built = true;
    return g;
}

void tdx_iwriter_release_tables(const tdx_iwriter *w) {
    tdx_tables_release(&w->tab);
}

size_t tdx_iwriter_trace_size(const tdx_iwriter *w) {
    return w->trace_size;
}

int tdx_iwriter_read_block(const tdx_iwriter *w, tdx_evdec *dec, size_t b, tdx_buf *buf,
                           tdx_event *out, size_t *n, tdx_err *err) {
    if (b >= w->nblocks) return tdx_errf(err, TDX_EUSAGE, TDX_NO_OFFSET, "no block %zu", b);
    const uint8_t *d = w->evdir.v + b * D_SIZE;
    uint64_t off = w->events_off + tdx_rd64(d + D_OFFSET);
    uint32_t len = tdx_rd32(d + D_LENGTH), ne = tdx_rd32(d + D_NEVENTS);
    buf->n = 0;
    if (tdx_vec_reserve(buf, len)) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    size_t got = 0;
    while (got < len) {
        ssize_t k = pread(w->f.fd, buf->v + got, len - got, (off_t)(off + got));
        if (k <= 0)
            return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "cannot read back the index being built");
        got += (size_t)k;
    }
    if (tdx_evdec_block(dec, buf->v, len, ne, out))
        return tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET,
                        "internal error: an event block does not decode");
    *n = ne;
    return 0;
}

/* ---- sections ---- */

static int put_record(tdx_iwriter *w, sectab *st, uint32_t kind, uint32_t flags, uint64_t off,
                      uint64_t n, uint64_t hash) {
    uint8_t rec[TDX_IDX_SECTION_SIZE];
    tdx_le32(rec, kind);
    tdx_le32(rec + 4, flags);
    tdx_le64(rec + 8, off);
    tdx_le64(rec + 16, n);
    tdx_le64(rec + 24, hash);
    if (tdx_buf_append(&st->tab, rec, sizeof rec)) return FAIL_OOM(w);
    st->count++;
    return 0;
}

static int put_section(tdx_iwriter *w, sectab *st, uint32_t kind, uint32_t flags, const void *p,
                       size_t n) {
    uint64_t hash = (flags & TDX_SECF_BLOCKED) ? 0 : XXH3_64bits(p, n);
    if (put_record(w, st, kind, flags, w->f.written, n, hash)) return -1;
    if (n && tdx_afile_write(&w->f, p, n, &w->err)) {
        w->failed = 1;
        return -1;
    }
    return 0;
}

static int file_put(void *ctx, const void *p, size_t n, tdx_err *err) {
    tdx_iwriter *w = ctx;
    return tdx_afile_write(&w->f, p, n, err);
}

static void release_strings(void *ctx) {
    tdx_tables_release(ctx);
}

static int res_cmp(const void *a, const void *b) {
    const res_rec *x = a, *y = b;
    return (int64_t)x->id < (int64_t)y->id ? -1 : (int64_t)x->id > (int64_t)y->id;
}

/* Appends one record to the section body: each field a varint delta from the previous record
 * (*pid, *pfirst). */
static int res_put(tdx_buf *b, const res_rec *r, uint64_t *pid, int64_t *pfirst) {
    uint8_t x[4 * TDX_VARINT_MAX], *q = x;
    q += tdx_put_uvarint(q, tdx_zigzag((int64_t)(r->id - *pid)));
    q += tdx_put_uvarint(q, r->events);
    q += tdx_put_uvarint(q, tdx_zigzag(tdx_wsub(r->first, *pfirst)));
    q += tdx_put_uvarint(q, tdx_zigzag(tdx_wsub(r->last, r->first)));
    *pid = r->id;
    *pfirst = r->first;
    return tdx_buf_append(b, x, (size_t)(q - x));
}

/* The records of a map whose generations went to its sort: read back by id, each id's records
 * (in generation order) folded into one. */
static int res_fold(tdx_iwriter *w, resmap *m, tdx_buf *b, uint64_t *count) {
    tdx_err e;
    int rc = res_spill(w->f.tmp, m, &e);
    if (!rc && tdx_xsort_rewind(m->spill, &e)) rc = -1;
    uint64_t pid = 0;
    int64_t pfirst = 0;
    res_rec cur = {0};
    bool have = false;
    tdx_xrec x;
    int k = 0;
    while (!rc && (k = tdx_xsort_next(m->spill, &x, &e)) == 1) {
        uint64_t id = x.k1 ^ TDX_XSORT_SIGN;
        if (x.n != 24) return fail(w, TDX_EINDEX, "internal error: a spilled record is damaged");
        res_rec r = {id, tdx_rd64(x.p), (int64_t)tdx_rd64(x.p + 8), (int64_t)tdx_rd64(x.p + 16)};
        if (have && cur.id == id) {
            cur.events += r.events;
            cur.last = r.last;
            continue;
        }
        if (have) {
            rc = res_put(b, &cur, &pid, &pfirst) ? FAIL_OOM(w) : 0;
            ++*count;
        }
        cur = r;
        have = true;
    }
    if (!rc && k < 0) rc = -1;
    if (!rc && have) {
        rc = res_put(b, &cur, &pid, &pfirst) ? FAIL_OOM(w) : 0;
        ++*count;
    }
    if (rc && !w->failed) {
        w->err = e;
        w->failed = 1;
    }
    return rc;
}

/* Sorted by id, each field a varint delta: most ids are consecutive and first-seen times follow
 * them, so a record is a few bytes instead of 32. The map is freed. */
static int res_encode(tdx_iwriter *w, resmap *m, tdx_buf *b, uint64_t *count) {
    uint8_t cnt[8] = {0};
    int rc = tdx_buf_append(b, cnt, 8) ? FAIL_OOM(w) : 0;
    *count = 0;
    if (!rc && m->spill) {
        rc = res_fold(w, m, b, count);
    } else if (!rc) {
        if (m->v.n > 1) qsort(m->v.v, m->v.n, sizeof *m->v.v, res_cmp);
        uint64_t pid = 0;
        int64_t pfirst = 0;
        for (size_t i = 0; i < m->v.n && !rc; i++) rc = res_put(b, &m->v.v[i], &pid, &pfirst);
        if (rc) FAIL_OOM(w);
        *count = m->v.n;
    }
    if (!rc) tdx_le64(b->v, *count);
    tdx_hmap_free(&m->idx);
    tdx_vec_free(&m->v);
    tdx_xsort_free(m->spill);
    m->spill = NULL;
    return rc;
}

/* Ends the events: what only they needed is encoded or freed, so the views' phase starts with
 * the tables' contents and little else (1 GiB trace: ~810 k goroutine records and the string
 * table's lookup map). Once only. */
static int seal(tdx_iwriter *w) {
    if (w->sealed) return 0;
    w->sealed = true;
    resmap *maps[3] = {&w->gs, &w->ps, &w->ms};
    for (int i = 0; i < 3; i++)
        if (res_encode(w, maps[i], &w->resbody[i], &w->rescount[i])) return -1;
    if (tdx_tables_seal(&w->tab)) {
        if (!w->failed) w->err = w->tab.err;
        w->failed = 1;
        return -1;
    }
    return 0;
}

static int write_sections(tdx_iwriter *w, sectab *st) {
    tdx_tables *t = &w->tab;
    tdx_buf b = {0};
    int rc = 0;
    uint8_t x[8];
    /* EVENTS (already written) */
    if (put_record(w, st, TDX_SEC_EVENTS, TDX_SECF_BLOCKED, w->events_off,
                   w->events_end - w->events_off, 0))
        return -1;
    /* META */
    uint8_t meta[M_COUNT_ * 8] = {0};
    uint64_t mv[M_COUNT_] = {0};
    mv[M_TRACE_VERSION] = (uint64_t)w->version;
    mv[M_GENERATIONS] = w->gens.n / G_SIZE;
    mv[M_EVENTS] = w->nevents;
    mv[M_FIRST_TIME] = (uint64_t)w->first_time;
    mv[M_LAST_TIME] = (uint64_t)w->last_time;
    mv[M_GOROUTINES] = w->rescount[0];
    mv[M_PROCS] = w->rescount[1];
    mv[M_THREADS] = w->rescount[2];
    mv[M_STRINGS] = tdx_tables_nstrings(t);
    mv[M_FRAMES] = t->frames.n;
    mv[M_STACKS] = tdx_tables_nstacks(t);
    mv[M_BLOCKS] = w->nblocks;
    for (int k = 0; k < 15; k++) mv[M_KIND0 + k] = w->kinds[k];
    for (int i = 0; i < M_COUNT_; i++) tdx_le64(meta + 8 * (size_t)i, mv[i]);
    rc = put_section(w, st, TDX_SEC_META, 0, meta, sizeof meta);
    /* STRINGS: count, then the strings packed (strpack.c), streamed: a trace's strings grow
     * with it. BLOCKED: the packed table checks its directory and each chunk itself. */
    if (!rc) {
        uint64_t at = w->f.written;
        uint32_t n = tdx_tables_nstrings(t);
        tdx_le64(x, n);
        tdx_strpack_out o = {file_put, w, w->f.tmp, release_strings, t};
        if (file_put(w, x, 8, &w->err) ||
            tdx_strpack_write(tdx_tables_str_bytes(t), tdx_tables_str_offs(t), n, &o, &w->err)) {
            w->failed = 1;
            rc = -1;
        } else {
            rc = put_record(w, st, TDX_SEC_STRINGS, TDX_SECF_BLOCKED, at, w->f.written - at, 0);
        }
        tdx_tables_release(t);
    }
    /* FRAMES */
    if (!rc) {
        b.n = 0;
        tdx_le64(x, t->frames.n);
        rc |= tdx_buf_append(&b, x, 8);
        for (size_t i = 0; i < t->frames.n && !rc; i++) {
            uint8_t r[F_SIZE];
            tdx_le64(r + F_PC, t->frames.v[i].pc);
            tdx_le32(r + F_FUNC, t->frames.v[i].func);
            tdx_le32(r + F_FILE, t->frames.v[i].file);
            tdx_le64(r + F_LINE, t->frames.v[i].line);
            rc |= tdx_buf_append(&b, r, sizeof r);
        }
        rc = rc ? FAIL_OOM(w) : put_section(w, st, TDX_SEC_FRAMES, 0, b.v, b.n);
    }
    /* STACKS: count, offsets[count+1] into the frame list, frame ids (u32) */
    if (!rc) {
        b.n = 0;
        uint32_t n = tdx_tables_nstacks(t);
        tdx_le64(x, n);
        rc |= tdx_buf_append(&b, x, 8);
        for (uint32_t i = 0; i <= n && !rc; i++) {
            tdx_le64(x, t->stack_off.v[i]);
            rc |= tdx_buf_append(&b, x, 8);
        }
        for (size_t i = 0; i < t->stack_frames.n && !rc; i++) {
            tdx_le32(x, t->stack_frames.v[i]);
            rc |= tdx_buf_append(&b, x, 4);
        }
        rc = rc ? FAIL_OOM(w) : put_section(w, st, TDX_SEC_STACKS, 0, b.v, b.n);
    }
    if (!rc) rc = put_section(w, st, TDX_SEC_GENS, 0, w->gens.v, w->gens.n);
    if (!rc) rc = put_section(w, st, TDX_SEC_EVDIR, 0, w->evdir.v, w->evdir.n);
    static const uint32_t res_kinds[3] = {TDX_SEC_GOROUTINES, TDX_SEC_PROCS, TDX_SEC_THREADS};
    for (int i = 0; i < 3 && !rc; i++)
        rc = put_section(w, st, res_kinds[i], 0, w->resbody[i].v, w->resbody[i].n);
    tdx_vec_free(&b);
    return rc;
}

void tdx_iwriter_string_stats(const tdx_iwriter *w, uint64_t *strings, uint64_t *spills,
                              uint64_t *reads) {
    const tdx_tables *t = &w->tab;
    *strings = tdx_tables_nstrings(t);
    *spills = t->str_map.spills;
    *reads = t->str_map.run_reads;
}

int tdx_iwriter_section(tdx_iwriter *w, uint32_t kind, const void *p, size_t n, tdx_err *err) {
    if (w->failed || put_section(w, &w->st, kind, 0, p, n)) {
        *err = w->err;
        return -1;
    }
    return 0;
}

int tdx_iwriter_stream_begin(tdx_iwriter *w, uint32_t kind, tdx_err *err) {
    if (w->failed || w->streaming) {
        if (!w->failed) fail(w, TDX_EUSAGE, "internal error: nested section streams");
        *err = w->err;
        return -1;
    }
    w->streaming = true;
    w->stream_kind = kind;
    w->stream_off = w->f.written;
    return 0;
}

int tdx_iwriter_stream_put(tdx_iwriter *w, const void *p, size_t n, uint64_t *off, tdx_err *err) {
    *off = w->f.written - w->stream_off;
    if (w->failed || (n && tdx_afile_write(&w->f, p, n, &w->err))) {
        w->failed = 1;
        *err = w->err;
        return -1;
    }
    return 0;
}

int tdx_iwriter_stream_abandon(tdx_iwriter *w, tdx_err *err) {
    if (!w->streaming) return 0;
    w->streaming = false;
    if (w->failed || tdx_afile_truncate(&w->f, w->stream_off, &w->err)) {
        w->failed = 1;
        *err = w->err;
        return -1;
    }
    return 0;
}

int tdx_iwriter_stream_end(tdx_iwriter *w, tdx_err *err) {
    if (w->failed || !w->streaming) {
        *err = w->err;
        return -1;
    }
    w->streaming = false;
    if (put_record(w, &w->st, w->stream_kind, TDX_SECF_BLOCKED, w->stream_off,
                   w->f.written - w->stream_off, 0)) {
        *err = w->err;
        return -1;
    }
    return 0;
}

int tdx_iwriter_finish(tdx_iwriter *w, tdx_err *err) {
    sectab st = w->st;
    memset(&w->st, 0, sizeof w->st);
    int rc = w->failed ? -1 : flush_block(w, false);
    if (enc_end(w, true)) rc = -1;
    if (!rc) rc = seal(w);
    if (!rc) rc = write_sections(w, &st);
    uint64_t tab_off = w->f.written;
    if (!rc && tdx_afile_write(&w->f, st.tab.v, st.tab.n, &w->err)) rc = -1;
    if (!rc) {
        uint8_t h[TDX_IDX_HEADER_SIZE] = {0};
        /* NOLINTNEXTLINE(bugprone-not-null-terminated-result): the magic has no NUL */
        memcpy(h + H_MAGIC, TDX_IDX_MAGIC, 8);
        tdx_le32(h + H_VERSION, TDX_IDX_VERSION);
        tdx_le32(h + H_HEADER_SIZE, TDX_IDX_HEADER_SIZE);
        tdx_le64(h + H_FILE_SIZE, w->f.written);
        tdx_le64(h + H_SECTAB_OFF, tab_off);
        tdx_le32(h + H_SECTAB_COUNT, st.count);
        tdx_le64(h + H_TRACE_SIZE, w->trace_size);
        memcpy(h + H_TRACE_HEADER, w->trace, w->trace_size < 16 ? w->trace_size : 16);
        tdx_le64(h + H_TRACE_HASH,
                 w->have_hash ? w->trace_hash : XXH3_64bits(w->trace, w->trace_size));
        tdx_le64(h + H_TRACE_SAMPLE,
                 w->have_hash ? w->trace_sample : tdx_trace_sample_hash(w->trace, w->trace_size));
        tdx_le64(h + H_SECTAB_HASH, XXH3_64bits(st.tab.v, st.tab.n));
        if (w->partial) {
            tdx_le32(h + H_FLAGS, TDX_IDX_PARTIAL);
            tdx_le64(h + H_DAMAGE_OFF, w->damage_off);
        }
        tdx_le64(h + H_HEADER_HASH, XXH3_64bits(h, H_HEADER_HASH));
        rc = tdx_afile_pwrite(&w->f, h, sizeof h, 0, &w->err);
    }
    tdx_vec_free(&st.tab);
    if (!rc) rc = tdx_afile_commit(&w->f, &w->err);
    if (rc) {
        *err = w->err;
        tdx_afile_abort(&w->f);
    }
    free_all(w);
    return rc;
}
