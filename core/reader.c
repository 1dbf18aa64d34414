/* reader.c: the trace-level read loop (Go's Reader.ReadEvent around generations): Sync events,
 * error surfacing, the stream-wide time fix-up, and the worker pipeline.
 *
 * Pipeline: the calling thread frames generations and hands them to workers. A worker loads its
 * generation and orders it, exactly when the state after the previous generation is already known,
 * otherwise speculatively. The calling thread then takes generations in order, proves or redoes
 * speculative runs, folds each into the carried state and delivers its events. */
#include "reader.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "evbuf.h"
#include "prefetch.h"
#include "spec.h"
#include "v1.h"

int tdx_ncpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ---- delivery with the stream-wide fix-up ---- */

typedef struct deliver_ctx {
    const tdx_read_opts *opts;
    tdx_read_stats *st;
    int64_t floor;  /* last delivered time */
    uint64_t index; /* event index within the current generation */
    /* Input bytes [0, done) have been delivered: hashed and (optionally) released. */
    const uint8_t *data;
    size_t size, done;
    XXH3_state_t *hash, *sample;
    int window; /* the next sample window to hash */
} deliver_ctx;

#define SAMPLE_WINDOWS 64
#define SAMPLE_WINDOW 4096

/* Sample window i of a trace of `size` bytes: its offset, and its length in *n. */
static size_t sample_window(size_t size, int i, size_t *n) {
    size_t off = size > SAMPLE_WINDOW ? (size_t)((unsigned __int128)(size - SAMPLE_WINDOW) *
                                                 (unsigned)i / (SAMPLE_WINDOWS - 1))
                                      : 0;
    *n = size - off < SAMPLE_WINDOW ? size - off : SAMPLE_WINDOW;
    return off;
}

uint64_t tdx_trace_sample_hash(const uint8_t *data, size_t size) {
    XXH3_state_t *st = XXH3_createState();
    if (!st) return 0;
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, &size, sizeof size);
    for (int i = 0; i < SAMPLE_WINDOWS; i++) {
        size_t n, off = sample_window(size, i, &n);
        XXH3_64bits_update(st, data + off, n);
    }
    uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
}

/* Hashes delivered input in order and gives the pages back: the mapping would otherwise keep a
 * whole multi-GB trace resident. */
static void input_done(deliver_ctx *d, size_t upto) {
    if (upto > d->size) upto = d->size;
    /* The sample windows now wholly delivered, before their pages go: hashing them afterwards
     * would map each one's 2 MiB folio again (64 of them: up to 128 MiB of RSS at once). */
    for (size_t n; d->sample && d->window < SAMPLE_WINDOWS; d->window++) {
        size_t off = sample_window(d->size, d->window, &n);
        if (off + n > upto) break;
        XXH3_64bits_update(d->sample, d->data + off, n);
    }
    if (upto <= d->done) return;
    if (d->hash) XXH3_64bits_update(d->hash, d->data + d->done, upto - d->done);
    if (d->opts->release_input) {
        /* Everything behind `upto`, not just the new part: pages already given back fault in
         * again (file data is mapped in 2 MiB folios, and a touch near a release boundary maps
         * the whole folio), and 4 GiB of trace kept 240 MiB that way. Empty page tables cost
         * next to nothing to walk. */
        uintptr_t pg = 4096, a = ((uintptr_t)d->data + pg - 1) & ~(pg - 1);
        uintptr_t b = (uintptr_t)(d->data + upto) & ~(pg - 1);
        /* NOLINTNEXTLINE(performance-no-int-to-ptr): the page rounding needs integers */
        if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
    }
    d->done = upto;
}

static int deliver_ctx_init(deliver_ctx *d, const tdx_read_opts *o, tdx_read_stats *st,
                            const uint8_t *data, size_t size) {
    memset(d, 0, sizeof *d);
    d->opts = o;
    d->st = st;
    d->data = data;
    d->size = size;
    if (o->hash_input) {
        d->hash = XXH3_createState();
        d->sample = XXH3_createState();
        if (!d->hash || !d->sample) {
            XXH3_freeState(d->hash);
            XXH3_freeState(d->sample);
            d->hash = d->sample = NULL;
            return -1;
        }
        XXH3_64bits_reset(d->hash);
        XXH3_64bits_reset(d->sample);
        XXH3_64bits_update(d->sample, &size, sizeof size);
    }
    return 0;
}

/* At the clean end of the trace: the rest of the input, and the hash. */
static void deliver_ctx_end(deliver_ctx *d, bool ok) {
    if (ok) input_done(d, d->size);
    if (d->hash && ok) {
        d->st->input_hash = XXH3_64bits_digest(d->hash);
        d->st->input_sample = XXH3_64bits_digest(d->sample);
    }
    XXH3_freeState(d->hash);
    XXH3_freeState(d->sample);
    d->hash = d->sample = NULL;
}

static int deliver(deliver_ctx *d, tdx_event *e, const tdx_gen *g) {
    e->time = tdx_time_floor(e->time, d->floor, d->index);
    d->index++;
    if (d->st->events == 0) d->st->first_time = e->time;
    d->st->events++;
    d->st->last_time = e->time;
    if (e->kind == TDX_KIND_SYNC) d->st->syncs++;
    if (d->opts->emit && d->opts->emit(d->opts->emit_ctx, e, g)) return -1;
    return 0;
}

/* The statistics of n delivered events of a generation whose first and last generation-local
 * times were first and last (tdx_order_span), then the new floor. Only the first event of an
 * ordering run is a Sync, and the fix-up of the last event gives the generation's last time, so
 * no per-event work is needed (tdx_time_floor). */
static void account(deliver_ctx *d, uint64_t n, int64_t first, int64_t last) {
    if (n == 0) return;
    tdx_read_stats *st = d->st;
    if (st->events == 0) st->first_time = tdx_time_floor(first, d->floor, 0);
    st->events += n;
    st->syncs++;
    st->last_time = tdx_time_floor(last, d->floor, n - 1);
    d->floor = st->last_time;
}

static void account_run(deliver_ctx *d, const tdx_order *o) {
    int64_t first, last;
    tdx_order_span(o, &first, &last);
    account(d, tdx_order_nevents(o), first, last);
}

static int deliver_sync(deliver_ctx *d, tdx_err *err) {
    tdx_event s;
    memset(&s, 0, sizeof s);
    s.type = TDX_TYPE_SYNC;
    s.kind = TDX_KIND_SYNC;
    s.m = s.p = s.g = TDX_NO_ID;
    s.time = d->floor; /* the fix-up turns it into floor + 1 */
    s.args[0] = d->st->syncs + 1;
    d->index = 0;
    if (deliver(d, &s, NULL)) return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "event consumer failed");
    d->floor = s.time;
    return 0;
}

static bool has_events(const tdx_gen *g) {
    for (size_t i = 0; i < g->frame.batches.n; i++)
        if (g->frame.batches.v[i].kind == TDX_BATCH_EVENTS && g->frame.batches.v[i].size > 0)
            return true;
    return false;
}

static bool frame_has_events(const tdx_genframe *f) {
    for (size_t i = 0; i < f->batches.n; i++)
        if (f->batches.v[i].kind == TDX_BATCH_EVENTS && f->batches.v[i].size > 0) return true;
    return false;
}

/* After a generation's events: progress, callbacks, and a deferred framing error. */
static int gen_delivered(deliver_ctx *d, const tdx_gen *g, uint64_t nev, size_t size,
                         tdx_err *err) {
    d->st->generations++;
    d->st->bytes = g->frame.end_off;
    const tdx_read_opts *o = d->opts;
    if (o->gen_done && o->gen_done(o->gen_done_ctx, g, d->st->generations - 1, nev))
        return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "event consumer failed");
    /* Only now: gen_done reads the generation's strings and stacks where they lie in the input
     * (released before, their pages came straight back). */
    input_done(d, g->frame.end_off);
    if (o->progress) o->progress(o->progress_ctx, g->frame.end_off, size, d->st->events);
    if (g->frame.err_kind == TDX_GENERR_DEFERRED) {
        tdx_err e = g->frame.err;
        if (deliver_sync(d, err)) return -1;
        *err = e;
        return -1;
    }
    return 0;
}

/* Orders g exactly against the true state, handing events with final times straight to the
 * consumer (no buffering), and accounts for them. */
static int order_in_place(deliver_ctx *d, tdx_order *ord, tdx_gen *g, const tdx_carry *carry,
                          bool initial, uint64_t sync_n, tdx_err *err) {
    tdx_order_params prm = {.carry = carry,
                            .initial = initial,
                            .sync_n = sync_n,
                            .emit = d->opts->emit,
                            .emit_ctx = d->opts->emit_ctx,
                            .final_times = true,
                            .floor = d->floor};
    int orc = tdx_order_generation(ord, g, &prm, err);
    account_run(d, ord);
    return orc;
}

static int read_sequential(const uint8_t *data, size_t size, int version, const tdx_read_opts *opts,
                           tdx_read_stats *st, tdx_err *err) {
    tdx_framer fr;
    tdx_framer_init(&fr, data, size, version);
    tdx_carry carry;
    tdx_carry_init(&carry);
    tdx_gen g;
    tdx_gen_init(&g, data, version);
    tdx_order *ord = tdx_order_new();
    deliver_ctx d;
    bool seen_events = false;
    int rc = -1;
    if (deliver_ctx_init(&d, opts, st, data, size) || !ord) {
        tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        goto out;
    }
    for (;;) {
        int r = tdx_framer_next(&fr, &g.frame, err);
        if (r < 0) goto out;
        tdx_prefetch_advance(opts->prefetch, fr.pos);
        if (r == 0) {
            rc = deliver_sync(&d, err);
            goto out;
        }
        if (tdx_gen_load(&g, err)) {
            tdx_err e = *err;
            if (deliver_sync(&d, err) == 0) *err = e;
            goto out;
        }
        bool initial = !seen_events && has_events(&g);
        seen_events |= initial;
        if (order_in_place(&d, ord, &g, &carry, initial, st->syncs + 1, err) != TDX_ORDER_OK)
            goto out;
        if (tdx_order_merge(ord, &carry, err)) goto out;
        if (gen_delivered(&d, &g, tdx_order_nevents(ord), size, err)) goto out;
    }
out:
    deliver_ctx_end(&d, rc == 0);
    tdx_order_free(ord);
    tdx_gen_free(&g);
    tdx_carry_free(&carry);
    return rc;
}

/* ---- the parallel pipeline ---- */

enum { JOB_FREE, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

/* One generation in flight. Jobs are allocated once and reused: a generation's tables, ordering
 * state and event buffer are tens of MB, and fresh allocations for each one cost a page fault
 * per 4 KiB touched (most of -j2's system time) and keep the allocator's peak high. */
typedef struct job {
    uint64_t seq;
    tdx_gen gen;
    tdx_order *ord;
    tdx_evbuf out; /* the run's events, when there is a consumer */
    bool initial;
    bool speculative;
    int load_rc; /* tdx_gen_load result */
    int order_rc;
    tdx_err err;
    int state;
} job;

typedef struct wpipe {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    job **ring; /* in-flight jobs, oldest first */
    size_t cap, head, count;
    size_t next_queued; /* ring offset (from head) of the first job no worker took yet */
    bool quit;
    const tdx_carry *carry;
    uint64_t merged; /* generations folded into carry */
    tdx_carry empty;
    bool buffer; /* workers keep their events (there is a consumer) */
} wpipe;

static int emit_buf(void *ctx, const tdx_event *e, const tdx_gen *g) {
    (void)g;
    return tdx_evbuf_append(ctx, e);
}

static void run_job(wpipe *pp, job *j, const tdx_carry *carry) {
    tdx_evbuf_reset(&j->out, j->gen.frame.start_off);
    j->speculative = carry == NULL;
    /* Without a consumer only the count and the first and last times matter (tdx_order_span). */
    tdx_order_params prm = {.carry = carry,
                            .initial = j->initial,
                            .sync_n = j->seq + 1,
                            .emit = pp->buffer ? emit_buf : NULL,
                            .emit_ctx = &j->out};
    j->order_rc = tdx_order_generation(j->ord, &j->gen, &prm, &j->err);
}

static void *worker(void *arg) {
    wpipe *pp = arg;
    pthread_mutex_lock(&pp->mu);
    for (;;) {
        while (!pp->quit && pp->next_queued >= pp->count) pthread_cond_wait(&pp->work, &pp->mu);
        if (pp->quit) break;
        job *j = pp->ring[(pp->head + pp->next_queued) % pp->cap];
        pp->next_queued++;
        j->state = JOB_RUNNING;
        pthread_mutex_unlock(&pp->mu);

        j->load_rc = tdx_gen_load(&j->gen, &j->err);
        if (j->load_rc == 0) {
            pthread_mutex_lock(&pp->mu);
            /* Exact when every earlier generation is folded in (nothing will change carry while
             * we run, since the next merge waits for this generation). The initial generation
             * follows only generations without events, so its true prior state is empty. */
            bool exact = pp->merged == j->seq;
            const tdx_carry *c = exact ? pp->carry : (j->initial ? &pp->empty : NULL);
            pthread_mutex_unlock(&pp->mu);
            run_job(pp, j, c);
        }

        pthread_mutex_lock(&pp->mu);
        j->state = JOB_DONE;
        pthread_cond_broadcast(&pp->done);
    }
    pthread_mutex_unlock(&pp->mu);
    return NULL;
}

static void job_free(job *j) {
    if (!j) return;
    tdx_gen_free(&j->gen);
    tdx_order_free(j->ord);
    tdx_evbuf_free(&j->out);
    free(j);
}

static job *job_new(const uint8_t *data, int version) {
    job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    if (!(j->ord = tdx_order_new())) {
        free(j);
        return NULL;
    }
    tdx_gen_init(&j->gen, data, version);
    return j;
}

/* Hands a buffered run's events to the consumer with final times, filling in the details that
 * came from the true state (speculative TaskEnd / STWEnd). */
static int deliver_buffered(deliver_ctx *d, job *j, const tdx_carry *carry, tdx_err *err) {
    const tdx_read_opts *o = d->opts;
    tdx_evbuf_iter it;
    tdx_evbuf_iter_init(&it, &j->out);
    tdx_event e;
    size_t nfix, fi = 0;
    const tdx_task_fixup *fix = tdx_order_fixups(j->ord, &nfix);
    uint64_t next_fix = nfix ? fix[0].index : UINT64_MAX;
    int64_t floor = d->floor, first = 0, last = 0;
    uint64_t k = 0;
    int rc = 0;
    for (; tdx_evbuf_next(&it, &e); k++) {
        if (k == 0) first = e.time;
        last = e.time;
        if (k == next_fix) {
            if (tdx_task_fixup_apply(carry, &fix[fi], &j->gen, &e)) {
                rc = tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
                break;
            }
            fi++;
            next_fix = fi < nfix ? fix[fi].index : UINT64_MAX;
        }
        e.time = tdx_time_floor(e.time, floor, k);
        if (o->emit(o->emit_ctx, &e, &j->gen)) {
            k++; /* counted as delivered, as the sequential reader does */
            rc = tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "event consumer failed");
            break;
        }
    }
    account(d, k, first, last);
    return rc;
}

static int read_parallel(const uint8_t *data, size_t size, int version, const tdx_read_opts *opts,
                         tdx_read_stats *st, tdx_err *err) {
    int nw = opts->jobs;
    wpipe pp;
    memset(&pp, 0, sizeof pp);
    pthread_mutex_init(&pp.mu, NULL);
    pthread_cond_init(&pp.work, NULL);
    pthread_cond_init(&pp.done, NULL);
    tdx_carry carry;
    tdx_carry_init(&carry);
    tdx_carry_init(&pp.empty);
    pp.carry = &carry;
    pp.buffer = opts->emit != NULL;
    pp.cap = (size_t)nw + 1; /* generations in flight: bounds memory */
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): the elements are pointers */
    pp.ring = calloc(pp.cap, sizeof *pp.ring);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): the elements are pointers */
    job **spare = calloc(pp.cap, sizeof *spare); /* jobs not in the ring, for reuse */
    size_t nspare = 0;
    pthread_t *th = calloc((size_t)nw, sizeof *th);
    int started = 0, rc = -1;
    deliver_ctx d;
    bool dinit = deliver_ctx_init(&d, opts, st, data, size) == 0;
    tdx_framer fr;
    tdx_framer_init(&fr, data, size, version);
    bool framer_done = false, seen_events = false;
    uint64_t seq = 0;
    if (!pp.ring || !spare || !th || !dinit) {
        tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        goto out;
    }
    for (; started < nw; started++)
        if (pthread_create(&th[started], NULL, worker, &pp)) break;
    if (!started) {
        tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "cannot start worker threads");
        goto out;
    }
    for (;;) {
        /* Keep the window full. Only this thread adds to the ring, so count cannot grow behind
         * our back; reading it under the lock is enough. */
        while (!framer_done) {
            pthread_mutex_lock(&pp.mu);
            bool room = pp.count < pp.cap;
            pthread_mutex_unlock(&pp.mu);
            if (!room) break;
            job *j = nspare ? spare[--nspare] : job_new(data, version);
            if (!j) {
                tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
                goto out;
            }
            int r = tdx_framer_next(&fr, &j->gen.frame, err);
            tdx_prefetch_advance(opts->prefetch, fr.pos);
            if (r <= 0) {
                spare[nspare++] = j;
                if (r < 0) goto out;
                framer_done = true;
                break;
            }
            j->seq = seq++;
            j->initial = !seen_events && frame_has_events(&j->gen.frame);
            j->state = JOB_QUEUED;
            seen_events |= j->initial;
            pthread_mutex_lock(&pp.mu);
            pp.ring[(pp.head + pp.count) % pp.cap] = j;
            pp.count++;
            pthread_cond_signal(&pp.work);
            pthread_mutex_unlock(&pp.mu);
        }
        pthread_mutex_lock(&pp.mu);
        if (pp.count == 0) {
            pthread_mutex_unlock(&pp.mu);
            rc = deliver_sync(&d, err);
            goto out;
        }
        job *j = pp.ring[pp.head];
        while (j->state != JOB_DONE) pthread_cond_wait(&pp.done, &pp.mu);
        pthread_mutex_unlock(&pp.mu);

        if (j->load_rc) {
            *err = j->err;
            tdx_err e = *err;
            if (deliver_sync(&d, err) == 0) *err = e;
            goto out;
        }
        bool buffered = true;
        if (j->speculative) {
            st->speculated++;
            /* An error found while guessing is re-derived exactly so its message is the true one.
             */
            if (j->order_rc != TDX_ORDER_OK || !tdx_order_check(j->ord, &carry)) {
                st->reruns++;
                if (!st->rerun_why)
                    st->rerun_why = j->order_rc == TDX_ORDER_ERROR ? "an error while guessing"
                                                                   : tdx_order_why(j->ord);
                /* The true state is at hand: order again straight to the consumer. */
                j->order_rc =
                    order_in_place(&d, j->ord, &j->gen, &carry, j->initial, j->seq + 1, &j->err);
                buffered = false;
            }
        }
        if (buffered) {
            /* Deliver what the run produced (up to its error, if any). */
            if (opts->emit) {
                if (deliver_buffered(&d, j, &carry, err)) goto out;
            } else {
                account_run(&d, j->ord);
            }
        }
        if (j->order_rc != TDX_ORDER_OK) {
            *err = j->err;
            goto out;
        }
        if (tdx_order_merge(j->ord, &carry, err)) goto out;
        if (gen_delivered(&d, &j->gen, tdx_order_nevents(j->ord), size, err)) goto out;
        pthread_mutex_lock(&pp.mu);
        pp.merged++;
        pp.ring[pp.head] = NULL;
        pp.head = (pp.head + 1) % pp.cap;
        pp.count--;
        if (pp.next_queued > 0) pp.next_queued--;
        pthread_mutex_unlock(&pp.mu);
        j->state = JOB_FREE;
        spare[nspare++] = j;
    }
out:
    pthread_mutex_lock(&pp.mu);
    pp.quit = true;
    pthread_cond_broadcast(&pp.work);
    /* Wait for running jobs before freeing them. */
    for (size_t k = 0; k < pp.count; k++) {
        job *j = pp.ring[(pp.head + k) % pp.cap];
        while (j->state == JOB_RUNNING) pthread_cond_wait(&pp.done, &pp.mu);
    }
    pthread_mutex_unlock(&pp.mu);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    for (size_t k = 0; k < pp.count; k++) job_free(pp.ring[(pp.head + k) % pp.cap]);
    for (size_t k = 0; k < nspare; k++) job_free(spare[k]);
    free(pp.ring);
    free(spare);
    free(th);
    if (dinit) deliver_ctx_end(&d, rc == 0);
    tdx_carry_free(&carry);
    tdx_carry_free(&pp.empty);
    pthread_mutex_destroy(&pp.mu);
    pthread_cond_destroy(&pp.work);
    pthread_cond_destroy(&pp.done);
    return rc;
}

int tdx_read_trace(const uint8_t *data, size_t size, int version, const tdx_read_opts *opts,
                   tdx_read_stats *stats, tdx_err *err) {
    /* Old-format traces (Go 1.11-1.21) are read whole and converted to the same events. */
    if (tdx_version_is_v1(version)) return tdx_read_v1(data, size, version, opts, stats, err);
    memset(stats, 0, sizeof *stats);
    stats->version = version;
    tdx_err_clear(err);
    if (opts->jobs <= 1) return read_sequential(data, size, version, opts, stats, err);
    return read_parallel(data, size, version, opts, stats, err);
}
