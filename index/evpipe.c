/* evpipe.c: two block buffers handed back and forth between a reader thread and the consumer.
 * The reader decodes block k into slot k % 2 once the consumer has released it; the consumer
 * takes slots strictly in order, so the events it sees are those of tdx_index_read_block called
 * block by block, whatever the timing. */
#include "evpipe.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "index/evcodec.h"

#define SLOTS 2

typedef struct slot {
    tdx_event *ev;
    size_t n;
    int rc; /* 0 or -1 (err) */
    tdx_err err;
} slot;

struct tdx_evpipe {
    const tdx_index *ix;
    tdx_evdec *dec; /* the decoding side's (one side decodes at a time) */
    size_t first, last;
    slot s[SLOTS];
    bool threaded;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t produced; /* blocks decoded (slots filled), from first */
    size_t consumed; /* blocks handed to the consumer */
    bool held;       /* the consumer still holds block consumed - 1 */
    bool stop;
    bool failed; /* consumer side: a damaged block was handed out, nothing follows */
};

/* A slot is ~1.8 MB written once per block: on transparent huge pages (where the kernel allows
 * them on request) its first touch costs one fault instead of ~450. */
#define HUGE (2u << 20)
static tdx_event *slot_alloc(void) {
    size_t n = TDX_EVBLOCK_EVENTS * sizeof(tdx_event);
    n = (n + HUGE - 1) / HUGE * HUGE;
    void *v = aligned_alloc(HUGE, n);
#ifdef MADV_HUGEPAGE
    if (v) (void)madvise(v, n, MADV_HUGEPAGE);
#endif
    return v;
}

static void decode(tdx_evpipe *p, size_t k) {
    slot *s = &p->s[k % SLOTS];
    s->rc = tdx_index_read_block(p->ix, p->dec, p->first + k, s->ev, &s->n, &s->err);
}

static void *reader(void *arg) {
    tdx_evpipe *p = arg;
    size_t total = p->last - p->first;
    pthread_mutex_lock(&p->mu);
    for (size_t k = 0; k < total; k++) {
        /* slot k % SLOTS is free once the consumer has released block k - SLOTS */
        while (!p->stop && k >= p->consumed - (p->held ? 1 : 0) + SLOTS)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop) break;
        pthread_mutex_unlock(&p->mu);
        decode(p, k);
        pthread_mutex_lock(&p->mu);
        p->produced = k + 1;
        pthread_cond_broadcast(&p->cv);
        if (p->s[k % SLOTS].rc) break; /* nothing after a damaged block */
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

tdx_evpipe *tdx_evpipe_start(const tdx_index *ix, size_t first, size_t last) {
    tdx_evpipe *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->ix = ix;
    p->first = first;
    p->last = last > first ? last : first;
    size_t total = p->last - p->first, nslots = total < SLOTS ? total : SLOTS;
    if (total && !(p->dec = tdx_evdec_new())) {
        free(p);
        return NULL;
    }
    for (size_t i = 0; i < nslots; i++)
        if (!(p->s[i].ev = slot_alloc())) {
            tdx_evpipe_stop(p);
            return NULL;
        }
    if (nslots && pthread_mutex_init(&p->mu, NULL) == 0) {
        if (pthread_cond_init(&p->cv, NULL) == 0) {
            p->threaded = pthread_create(&p->th, NULL, reader, p) == 0;
            if (!p->threaded) pthread_cond_destroy(&p->cv);
        }
        if (!p->threaded) pthread_mutex_destroy(&p->mu);
    }
    return p;
}

int tdx_evpipe_next(tdx_evpipe *p, const tdx_event **evs, size_t *n, tdx_err *err) {
    size_t k = p->consumed;
    if (p->failed || k >= p->last - p->first) return 0;
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        p->held = false; /* releases block k - 1 */
        pthread_cond_broadcast(&p->cv);
        while (p->produced <= k) pthread_cond_wait(&p->cv, &p->mu);
        p->consumed = k + 1;
        p->held = true;
        pthread_mutex_unlock(&p->mu);
    } else {
        decode(p, k);
        p->consumed = k + 1;
    }
    slot *s = &p->s[k % SLOTS];
    if (s->rc) {
        *err = s->err;
        p->failed = true;
        return -1;
    }
    *evs = s->ev;
    *n = s->n;
    return 1;
}

void tdx_evpipe_stop(tdx_evpipe *p) {
    if (!p) return;
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
    }
    for (int i = 0; i < SLOTS; i++) free(p->s[i].ev);
    tdx_evdec_free(p->dec);
    free(p);
}
