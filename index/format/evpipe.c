/* evpipe.c: small buffers of decoded events handed back and forth between a reader thread and
 * the consumer. The reader decodes the blocks a piece at a time (tdx_index_block_next) into slot
 * k % nslots once the consumer has released piece k - nslots; the consumer takes pieces strictly
 * in order, so it sees the events of tdx_index_read_block called block by block, whatever the
 * timing. A query's pipe has pieces rather than whole blocks: four pieces stay in the caches,
 * where two 1.8 MB blocks were fresh memory every query (the kernel zeroing 4 MiB on the
 * reader's first touch), and the consumer starts after PIECE events instead of a whole block.
 * A pass over every event has whole blocks (tdx_evpipe_start_blocks), two slots of them. */
#include "index/format/evpipe.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "index/format/evcodec.h"

#define SLOTS 4    /* at most */
#define PIECE 1024 /* events: 112 KiB a slot (a query's pipe) */

typedef struct slot {
    tdx_event *ev;
    size_t n;
    uint64_t first; /* index of ev[0] in the trace */
    int rc;         /* 1 (a piece), 0 (the end) or -1 (err) */
    tdx_err err;
} slot;

struct tdx_evpipe {
    tdx_index *ix;
    int64_t tmin, tmax; /* the events whose strings are unpacked ahead */
    tdx_evdec *dec;     /* the decoding side's (one side decodes at a time) */
    /* the decoding side: the block being read (blocks [block, last) are left), whether it has
     * begun and how many of its events were given */
    size_t block, last;
    size_t released; /* blocks before this one were given back (tdx_index_release_blocks) */
    bool begun;
    uint32_t given;
    size_t piece;   /* events a piece holds at most */
    size_t nslots;  /* slots in use (at most SLOTS) */
    tdx_event *mem; /* nslots * piece events */
    slot s[SLOTS];
    bool threaded;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t produced; /* pieces decoded (slots filled, the end and an error included) */
    size_t consumed; /* pieces handed to the consumer */
    bool held;       /* the consumer still holds piece consumed - 1 */
    bool stop;
    bool done; /* consumer side: the end or an error was handed out, nothing follows */
};

/* Decodes the next piece into s: rc 1, or 0 at the end, or -1 with s->err. */
static void produce(tdx_evpipe *p, slot *s) {
    s->n = 0;
    for (;;) {
        if (p->block >= p->last) {
            s->rc = 0;
            return;
        }
        size_t b = p->block;
        uint32_t ne = tdx_index_block_nevents(p->ix, b);
        if (!p->begun) {
            if (tdx_index_block_begin(p->ix, p->dec, b, &s->err)) {
                s->rc = -1;
                return;
            }
            p->begun = true;
            p->given = 0;
        }
        size_t n = 0;
        /* The call that gives a block's last events also checks its end (an empty block: one
         * call with nothing to give). */
        if (tdx_index_block_next(p->ix, p->dec, b, s->ev, p->piece, &n, &s->err)) {
            s->rc = -1;
            return;
        }
        s->first = tdx_index_block_first_event(p->ix, b) + p->given;
        p->given += (uint32_t)n;
        if (p->given >= ne) {
            p->block++;
            p->begun = false;
            if (p->block - p->released >= TDX_RELEASE_EVERY) {
                tdx_index_release_blocks(p->ix, p->block);
                p->released = p->block;
            }
        }
        if (n) {
            s->n = n;
            s->rc = 1;
            return;
        }
    }
}

static void *reader(void *arg) {
    tdx_evpipe *p = arg;
    pthread_mutex_lock(&p->mu);
    for (size_t k = 0;; k++) {
        /* slot k % nslots is free once the consumer has released piece k - nslots */
        while (!p->stop && k >= p->consumed - (p->held ? 1 : 0) + p->nslots)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop) break;
        pthread_mutex_unlock(&p->mu);
        slot *s = &p->s[k % p->nslots];
        produce(p, s);
        pthread_mutex_lock(&p->mu);
        p->produced = k + 1;
        pthread_cond_broadcast(&p->cv);
        if (s->rc != 1) break; /* the end, or nothing after a damaged block */
        pthread_mutex_unlock(&p->mu);
        /* While the consumer starts on the piece, unpack the string chunks its events name
         * (log messages, task and region names are scattered over the table: a 10 ms window
         * of a 4 GiB trace touches ~80 chunks). The slot is not rewritten before this returns. */
        for (size_t i = 0; p->tmin <= p->tmax && i < s->n; i++) {
            if (i % 64 == 63 && __atomic_load_n(&p->stop, __ATOMIC_RELAXED)) break;
            if (s->ev[i].time < p->tmin || s->ev[i].time > p->tmax) continue;
            if (s->ev[i].str[0]) tdx_index_strings_ahead(p->ix, s->ev[i].str[0]);
            if (s->ev[i].str[1]) tdx_index_strings_ahead(p->ix, s->ev[i].str[1]);
        }
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static tdx_evpipe *start(tdx_index *ix, size_t first, size_t last, int64_t tmin, int64_t tmax,
                         size_t piece, size_t nslots) {
    tdx_evpipe *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->ix = ix;
    p->piece = piece;
    p->nslots = nslots;
    p->tmin = tmin;
    p->tmax = tmax;
    p->block = p->released = first;
    p->last = last > first ? last : first;
    if (p->last > p->block) {
        p->dec = tdx_evdec_new();
        p->mem = malloc(nslots * piece * sizeof *p->mem);
        if (!p->dec || !p->mem) {
            tdx_evpipe_stop(p);
            return NULL;
        }
    }
    for (size_t i = 0; i < nslots; i++) p->s[i].ev = p->mem ? p->mem + i * piece : NULL;
    if (p->last > p->block && pthread_mutex_init(&p->mu, NULL) == 0) {
        if (pthread_cond_init(&p->cv, NULL) == 0) {
            p->threaded = pthread_create(&p->th, NULL, reader, p) == 0;
            if (!p->threaded) pthread_cond_destroy(&p->cv);
        }
        if (!p->threaded) pthread_mutex_destroy(&p->mu);
    }
    return p;
}

tdx_evpipe *tdx_evpipe_start(tdx_index *ix, size_t first, size_t last, int64_t tmin, int64_t tmax) {
    return start(ix, first, last, tmin, tmax, PIECE, SLOTS);
}

/* Whole blocks, two slots: the reader decodes the next block while the consumer works on one.
 * A piece is then a block, whose end is checked before it is handed over. */
tdx_evpipe *tdx_evpipe_start_blocks(tdx_index *ix) {
    return start(ix, 0, ix->nblocks, INT64_MAX, INT64_MIN, TDX_EVBLOCK_EVENTS, 2);
}

int tdx_evpipe_next(tdx_evpipe *p, const tdx_event **evs, size_t *n, uint64_t *first,
                    tdx_err *err) {
    size_t k = p->consumed;
    if (p->done) return 0;
    slot *s = &p->s[k % p->nslots];
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        p->held = false; /* releases piece k - 1 */
        pthread_cond_broadcast(&p->cv);
        while (p->produced <= k) pthread_cond_wait(&p->cv, &p->mu);
        p->consumed = k + 1;
        p->held = true;
        pthread_mutex_unlock(&p->mu);
    } else {
        produce(p, s);
        p->consumed = k + 1;
    }
    if (s->rc != 1) {
        p->done = true;
        if (s->rc == 0) return 0;
        *err = s->err;
        return -1;
    }
    *evs = s->ev;
    *n = s->n;
    *first = s->first;
    return 1;
}

void tdx_evpipe_stop(tdx_evpipe *p) {
    if (!p) return;
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        __atomic_store_n(&p->stop, true, __ATOMIC_RELAXED); /* also read outside the lock */
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
    }
    free(p->mem);
    tdx_evdec_free(p->dec);
    free(p);
}
