/* tracegen_emit.c: tracegen's output side: batch framing as the Go runtime writes it (10-byte
 * padded sizes, per-thread batches flushed when full), generation ends (statuses of resources the
 * generation never mentioned, CPU samples, stack and string tables, sync batches). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tracegen.h"

/* Output goes through a writer thread so that the kernel's side of the write runs on the second
 * core while the simulation goes on: full buffers queue up in order, the writer writes and
 * recycles them. The file is written with O_DIRECT where the file system allows it: copying
 * gigabytes into the page cache costs more than generating them when the kernel must take fresh
 * pages (measured on this VM: 1 GiB in 2.0 s through the cache, 0.8 s direct), and the bench
 * evicts the traces anyway. Buffers are page-aligned and written whole; the last one is padded to
 * a page and the file truncated to its length. */
#define TG_NOUT 4
#define TG_ALIGN 4096

typedef struct tg_writer {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint8_t *buf[TG_NOUT];
    size_t len[TG_NOUT];
    unsigned head, tail; /* queued buffers: [head, tail) modulo TG_NOUT */
    uint8_t *free_bufs[TG_NOUT];
    unsigned nfree;
    bool done;
    int err;
    int fd;
} tg_writer;

static void *writer_main(void *arg) {
    tg_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->head == w->tail && !w->done) pthread_cond_wait(&w->cv, &w->mu);
        if (w->head == w->tail) break;
        uint8_t *b = w->buf[w->head % TG_NOUT];
        size_t n = w->len[w->head % TG_NOUT];
        pthread_mutex_unlock(&w->mu);
        size_t off = 0;
        int err = 0;
        while (off < n) {
            ssize_t k = write(w->fd, b + off, n - off);
            if (k < 0) {
                if (errno == EINTR) continue;
                /* Direct I/O refused after all (alignment rules differ by file system): go on
                 * through the page cache. */
                if (errno == EINVAL && (fcntl(w->fd, F_GETFL) & O_DIRECT) &&
                    fcntl(w->fd, F_SETFL, fcntl(w->fd, F_GETFL) & ~O_DIRECT) == 0)
                    continue;
                err = errno;
                break;
            }
            off += (size_t)k;
        }
        pthread_mutex_lock(&w->mu);
        if (err && !w->err) w->err = err;
        w->head++;
        w->free_bufs[w->nfree++] = b;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

void tg_out_start(tg_sim *s) {
    tg_writer *w = tg_xcalloc(1, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->fd = s->fd;
    for (int i = 0; i < TG_NOUT; i++) {
        void *b = NULL;
        /* outcap is a multiple of TG_ALIGN; the slack lets the last buffer be padded */
        if (posix_memalign(&b, TG_ALIGN, s->outcap + TG_ALIGN)) tg_die("out of memory");
        w->free_bufs[w->nfree++] = b;
    }
    s->out = w->free_bufs[--w->nfree];
    s->outn = 0;
    s->writer = w;
    if (pthread_create(&w->th, NULL, writer_main, w)) tg_die("cannot start the writer thread");
}

/* Hands the current buffer to the writer and takes a free one (waiting if all are queued). */
static void out_submit(tg_sim *s) {
    tg_writer *w = s->writer;
    pthread_mutex_lock(&w->mu);
    if (w->err) tg_die("write: %s", strerror(w->err));
    w->buf[w->tail % TG_NOUT] = s->out;
    w->len[w->tail % TG_NOUT] = s->outn;
    w->tail++;
    pthread_cond_broadcast(&w->cv);
    while (!w->nfree) pthread_cond_wait(&w->cv, &w->mu);
    s->out = w->free_bufs[--w->nfree];
    s->outn = 0;
    pthread_mutex_unlock(&w->mu);
}

void tg_out_finish(tg_sim *s) {
    tg_writer *w = s->writer;
    if (s->outn) {
        size_t pad = (TG_ALIGN - s->outn % TG_ALIGN) % TG_ALIGN;
        memset(s->out + s->outn, 0, pad);
        s->outn += pad;
        out_submit(s);
    }
    pthread_mutex_lock(&w->mu);
    w->done = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    if (w->err) tg_die("write: %s", strerror(w->err));
    if (ftruncate(w->fd, (off_t)s->written)) tg_die("truncate: %s", strerror(errno));
    for (unsigned i = 0; i < w->nfree; i++) free(w->free_bufs[i]);
    free(s->out);
    s->out = NULL;
    free(w);
    s->writer = NULL;
}

void tg_out_write(tg_sim *s, const void *p, size_t n) {
    const uint8_t *q = p;
    s->written += n;
    while (n) {
        if (s->outn == s->outcap) out_submit(s);
        size_t k = s->outcap - s->outn < n ? s->outcap - s->outn : n;
        memcpy(s->out + s->outn, q, k);
        s->outn += k;
        q += k;
        n -= k;
    }
}

/* Encodes a batch header: the size is a 10-byte uvarint, as the runtime reserves it before it
 * knows the length. Returns the header length. */
static size_t batch_header(uint8_t *h, uint64_t gen, uint64_t m, uint64_t t, uint32_t size) {
    uint8_t *p = h;
    *p++ = TDX_EV_EVENT_BATCH;
    p = tg_uv(p, gen);
    p = tg_uv(p, m);
    p = tg_uv(p, t);
    uint64_t v = size;
    for (int i = 0; i < 9; i++) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return (size_t)(p - h);
}

/* Writes one batch (header, optional marker byte, payload) to the file, or holds it back when it
 * belongs to the generation after the one being written. */
static void put_batch(tg_sim *s, uint64_t gen, uint64_t m, uint64_t t, int marker,
                      const uint8_t *pay, size_t n) {
    uint8_t h[48];
    size_t size = n + (marker >= 0);
    size_t hn = batch_header(h, gen, m, t, (uint32_t)size);
    if (marker >= 0) h[hn++] = (uint8_t)marker;
    if (gen == s->gen) {
        tg_out_write(s, h, hn);
        tg_out_write(s, pay, n);
    } else {
        tg_bytes *pd = &s->tab[gen & 1].pend;
        tg_bytes_reserve(pd, hn + n);
        memcpy(pd->v + pd->n, h, hn);
        memcpy(pd->v + pd->n + hn, pay, n);
        pd->n += hn + n;
    }
}

void tg_buf_flush(tg_sim *s, tg_m *m, tg_buf *b) {
    if (b->len) put_batch(s, b->gen, m->tid, b->batch_t, -1, b->data, b->len);
    b->len = 0;
    /* The next batch of this thread starts where this one ended (dt stays >= 1). */
    b->batch_t = b->last_t;
}

void tg_late_add(tg_sim *s, uint64_t gen, const tg_late *l) {
    tg_gentab *tb = &s->tab[gen & 1];
    if (tb->nlate == tb->caplate) {
        tb->caplate = tb->caplate ? tb->caplate * 2 : 1024;
        tb->late = tg_xrealloc(tb->late, tb->caplate * sizeof *tb->late);
    }
    tb->late[tb->nlate++] = *l;
}

uint64_t tg_pending_bytes(const tg_sim *s) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < s->nms; i++) n += s->ms[i]->b[0].len + s->ms[i]->b[1].len;
    for (int k = 0; k < 2; k++)
        n += s->tab[k].strings.n + s->tab[k].stacks.n + s->tab[k].cpu.n + s->tab[k].pend.n;
    return n;
}

/* Writes a table as batches cut at the recorded entry offsets. */
static void put_table(tg_sim *s, uint64_t gen, uint64_t t, int marker, const tg_bytes *tbl,
                      const size_t *cut, size_t ncut) {
    size_t start = 0;
    for (size_t i = 0; i <= ncut; i++) {
        size_t end = i < ncut ? cut[i] : tbl->n;
        if (end > start || (i == ncut && start == 0))
            put_batch(s, gen, TG_NONE, t, marker, tbl->v + start, end - start);
        start = end;
    }
}

/* The registry strings generation tb used, in ID order, as string batches. */
static void put_used_strings(tg_sim *s, tg_gentab *tb, uint64_t t) {
    const tg_code *c = &s->code;
    uint8_t *buf = tg_xmalloc(TG_MAXPAY);
    size_t n = 0;
    uint32_t words = (c->nstrs + 63) / 64;
    for (uint32_t w = 0; w < words; w++) {
        uint64_t bits = tb->strused[w];
        while (bits) {
            uint32_t si = w * 64 + (uint32_t)__builtin_ctzll(bits);
            bits &= bits - 1;
            size_t len = c->stroff[si + 1] - c->stroff[si];
            if (n + len > TG_MAXPAY - 1) {
                put_batch(s, tb->gen, TG_NONE, t, TDX_EV_STRINGS, buf, n);
                n = 0;
            }
            memcpy(buf + n, c->strblob.v + c->stroff[si], len);
            n += len;
        }
    }
    if (n || !tb->strings.n) put_batch(s, tb->gen, TG_NONE, t, TDX_EV_STRINGS, buf, n);
    free(buf);
}

/* The batch of statuses, on no thread, for resources the generation did not otherwise mention
 * (goroutines blocked all along, idle procs), as the runtime writes when it advances. */
static void put_late(tg_sim *s, tg_gentab *tb, uint64_t t) {
    if (!tb->nlate) return;
    uint8_t *buf = tg_xmalloc(TG_BUFCAP);
    size_t n = 0;
    uint64_t bt = t, last = t;
    for (size_t i = 0; i < tb->nlate; i++) {
        const tg_late *l = &tb->late[i];
        if (n >= TG_FLUSH_AT) {
            put_batch(s, tb->gen, TG_NONE, bt, -1, buf, n);
            n = 0;
            bt = last;
        }
        uint8_t *p = buf + n;
        last++;
        if (l->kind == 1) {
            *p++ = TDX_EV_PROC_STATUS;
            p = tg_uv(p, 1);
            p = tg_uv(p, l->id);
            p = tg_uv(p, l->status);
            if (l->active) {
                *p++ = TDX_EV_GC_SWEEP_ACTIVE;
                p = tg_uv(p, 1);
                p = tg_uv(p, l->id);
                last++;
            }
        } else {
            *p++ = l->stack ? TDX_EV_GO_STATUS_STACK : TDX_EV_GO_STATUS;
            p = tg_uv(p, 1);
            p = tg_uv(p, l->id);
            p = tg_uv(p, l->m);
            p = tg_uv(p, l->status);
            if (l->stack) p = tg_uv(p, tg_vstk(s, tb->gen, l->stack - 1));
            if (l->active) {
                *p++ = TDX_EV_GC_MARK_ASSIST_ACTIVE;
                p = tg_uv(p, 1);
                p = tg_uv(p, l->id);
                last++;
            }
        }
        n = (size_t)(p - buf);
        s->events += 1u + l->active;
    }
    put_batch(s, tb->gen, TG_NONE, bt, -1, buf, n);
    free(buf);
}

/* Statuses of goroutines and procs that generation gen never mentioned. */
static void collect_late(tg_sim *s, uint64_t gen) {
    for (uint32_t i = 0; i < s->ngs; i++) {
        tg_g *g = &s->gs[i];
        if (g->status == GS_DEAD || g->seen_gen >= gen) continue;
        tg_late l = {.kind = 0,
                     .status = g->status,
                     .active = g->in_assist,
                     .id = g->goid,
                     .m = g->status == GS_SYSCALL ? s->ms[g->m]->tid : TG_NONE,
                     .stack = tg_late_stack(s, g, gen)};
        tg_late_add(s, gen, &l);
        g->seen_gen = gen;
        g->seq = 0;
    }
    for (int i = 0; i < s->procs; i++) {
        tg_p *p = &s->ps[i];
        if (p->seen_gen >= gen) continue;
        tg_late l = {.kind = 1, .status = p->status, .active = p->in_sweep, .id = (uint64_t)i};
        tg_late_add(s, gen, &l);
        p->seen_gen = gen;
        p->seq = 0;
    }
}

static void put_sync(tg_sim *s, uint64_t gen, uint64_t t) {
    uint8_t pay[64], *p = pay;
    if (s->version >= 25) {
        *p++ = TDX_EV_SYNC;
        *p++ = TDX_EV_FREQUENCY;
        p = tg_uv(p, TG_FREQ);
        uint64_t dt = 1 + (gen % 3);
        uint64_t mono = (t + dt) * 64 + (gen * 37) % 64;
        uint64_t wall = s->wall0 + (mono - s->mono0);
        *p++ = TDX_EV_CLOCK_SNAPSHOT;
        p = tg_uv(p, dt);
        p = tg_uv(p, mono);
        p = tg_uv(p, wall / 1000000000u);
        p = tg_uv(p, wall % 1000000000u);
    } else {
        *p++ = TDX_EV_FREQUENCY;
        p = tg_uv(p, TG_FREQ);
    }
    put_batch(s, gen, TG_NONE, t, -1, pay, (size_t)(p - pay));
}

/* Starts generation s->gen in the file: its sync batch (Go 1.25+ writes it first), then the
 * batches that filled up while the previous generation was still open. */
void tg_gen_begin(tg_sim *s) {
    tg_gentab *tb = &s->tab[s->gen & 1];
    if (s->version >= 25) put_sync(s, s->gen, s->gen_start);
    if (tb->pend.n) {
        tg_out_write(s, tb->pend.v, tb->pend.n);
        tb->pend.n = 0;
    }
}

static void tab_reset(tg_sim *s, tg_gentab *tb, uint64_t gen) {
    /* Stack slots remember their ID with 12 bits of the generation: forget them all before the
     * tag comes around again. */
    if ((gen & 0xfff) < 2)
        for (uint32_t i = 0; i < s->code.nvars; i++) s->code.var[i].tag[gen & 1] = 0;
    tb->gen = gen;
    tb->strings.n = tb->stacks.n = tb->cpu.n = tb->pend.n = 0;
    tb->nstr_cut = tb->nstk_cut = tb->ncpu_cut = 0;
    tb->str_last = tb->stk_last = tb->cpu_last = 0;
    tb->next_str = tb->next_stk = 0;
    tb->nlate = 0;
    tb->first_t = tb->last_t = 0;
    memset(tb->strused, 0, ((size_t)s->code.nstrs + 63) / 64 * sizeof(uint64_t));
}

static bool gen_has_events(const tg_sim *s, uint64_t gen) {
    const tg_gentab *tb = &s->tab[gen & 1];
    if (tb->pend.n) return true;
    for (uint32_t i = 0; i < s->nms; i++) {
        const tg_buf *b = &s->ms[i]->b[gen & 1];
        if (b->gen == gen && b->len) return true;
    }
    return false;
}

/* Writes the rest of generation s->gen and moves on to the next one. With `last`, also writes
 * the next generation if events already reached it, and ends the trace. */
void tg_gen_write(tg_sim *s, bool last) {
    for (;;) {
        uint64_t gen = s->gen;
        tg_gentab *tb = &s->tab[gen & 1];
        /* Partial batches, thread by thread, as the runtime flushes them when it advances. */
        for (uint32_t i = 0; i < s->nms; i++) {
            tg_m *m = s->ms[i];
            tg_buf *b = &m->b[gen & 1];
            if (b->gen == gen) {
                if (b->last_t > tb->last_t) tb->last_t = b->last_t;
                tg_buf_flush(s, m, b);
                b->gen = 0;
            }
        }
        collect_late(s, gen);
        if (tb->last_t > s->end_t) s->end_t = tb->last_t;
        uint64_t end_t =
            last ? (tb->last_t > s->gen_start ? tb->last_t : s->gen_start) + 1 : s->gen_next - 1;
        uint64_t late_t = end_t - 2 * tb->nlate - 4;
        if (late_t < s->gen_start) late_t = s->gen_start;
        if (last) late_t = end_t;
        put_late(s, tb, late_t);
        uint64_t tt = last ? late_t + 2 * tb->nlate + 2 : end_t;
        if (s->version < 25) put_sync(s, gen, tt);
        if (tb->cpu.n)
            put_table(s, gen, tt, TDX_EV_CPU_SAMPLES, &tb->cpu, tb->cpu_cut, tb->ncpu_cut);
        put_table(s, gen, tt, TDX_EV_STACKS, &tb->stacks, tb->stk_cut, tb->nstk_cut);
        put_used_strings(s, tb, tt);
        if (tb->strings.n)
            put_table(s, gen, tt, TDX_EV_STRINGS, &tb->strings, tb->str_cut, tb->nstr_cut);
        if (s->version >= 26) {
            uint8_t eog = TDX_EV_END_OF_GENERATION;
            tg_out_write(s, &eog, 1);
        }
        s->gens_written++;
        tab_reset(s, tb, gen + 2);
        bool more = last && gen_has_events(s, gen + 1);
        s->gen = gen + 1;
        s->gen_start = s->gen_next;
        s->gen_next = s->gen_next2;
        s->gen_next2 =
            s->gen_next + s->gen_len + tg_below(&s->rng, (uint32_t)(s->gen_len / 200 + 1));
        s->tab[s->gen & 1].first_t = s->gen_start;
        if (last && !more) return;
        tg_gen_begin(s);
        if (!last) return;
    }
}
