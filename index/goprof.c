/* goprof.c: the four pprof-style profiles as cmd/trace computes them (see goprof.h), and PPROF.
 *
 * Go measures every wait once the whole trace is read, against each goroutine's summary record,
 * the last one of its id. Here a wait is measured when it ends, against the record the goroutine
 * has then; the two agree unless an id is used again after its goroutine ended, or a goroutine
 * moves on after blocking "forever", neither of which Go's runtime does. */
#include "goprof.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/event.h"
#include "core/varint.h"
#include "index/reader.h"
#include "index/viewgen_ser.h"

#define MAX_PCS 128 /* Go's pprofMaxStack: stacks are one when these many PCs are */

static const char *const names[TDX_PROF_COUNT] = {"net", "sync", "syscall", "sched"};

const char *tdx_goprof_name(int which) {
    return which >= 0 && which < TDX_PROF_COUNT ? names[which] : "";
}

int tdx_goprof_parse(const char *name) {
    for (int i = 0; i < TDX_PROF_COUNT; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

static bool contains(const uint8_t *s, size_t n, const char *lit) {
    size_t k = strlen(lit);
    return n >= k && memmem(s, n, lit, k) != NULL;
}

unsigned tdx_goprof_reason_bits(const uint8_t *r, size_t n) {
    unsigned b = 0;
    if (n == 7 && !memcmp(r, "network", 7)) b |= 1u << TDX_PROF_NET;
    if (contains(r, n, "chan") || contains(r, n, "sync") || contains(r, n, "select"))
        b |= 1u << TDX_PROF_SYNC;
    return b;
}

/* The state each profile measures. */
static const uint8_t measured[TDX_PROF_COUNT] = {TDX_GO_WAITING, TDX_GO_WAITING, TDX_GO_SYSCALL,
                                                 TDX_GO_RUNNABLE};

void tdx_goprof_free(tdx_goprof *p) {
    tdx_hmap_free(&p->idx);
    tdx_vec_free(&p->sums);
    memset(p, 0, sizeof *p);
}

void tdx_goprof_g_free(tdx_goprof_g *g) {
    tdx_vec_free(&g->pending);
    memset(g, 0, sizeof *g);
}

/* Go's interval overlap of the goroutine's life [a, b] and the wait [c, d]. */
static int64_t overlap(int64_t a, int64_t b, int64_t c, int64_t d) {
    if (b < c || d < a) return 0;
    return tdx_wsub(b < d ? b : d, a > c ? a : c);
}

static void add(tdx_goprof *p, int which, uint32_t stack, int64_t ns, uint64_t seq) {
    if (ns <= 0) return;
    uint64_t key = (uint64_t)stack << 2 | (uint64_t)which;
    int inserted;
    uint32_t *slot = tdx_hmap_upsert(&p->idx, key, (uint32_t)p->sums.n, &inserted);
    if (!slot) {
        p->oom = 1;
        return;
    }
    if (inserted) {
        tdx_goprof_sum z = {stack, (uint8_t)which, 0, 0, 0};
        if (p->sums.n >= UINT32_MAX - 1 || tdx_vec_push(&p->sums, z)) {
            p->oom = 1;
            return;
        }
    }
    tdx_goprof_sum *s = &p->sums.v[*slot];
    s->count++;
    s->ns = tdx_wadd(s->ns, ns);
    if (seq > s->seq) s->seq = seq;
}

void tdx_goprof_step(tdx_goprof *p, tdx_goprof_g *g, int64_t t, uint64_t seq, uint8_t to,
                     unsigned reason_bits, uint32_t stack, int64_t start, int64_t end) {
    /* Waits that ended before the first run count nothing once it has come. */
    if (start && g->pending.n) g->pending.n = 0;
    for (int k = 0; k < TDX_PROF_COUNT; k++) {
        unsigned bit = 1u << k;
        if (!(g->on & bit)) {
            bool why = k > TDX_PROF_SYNC || (reason_bits & bit);
            if (to == measured[k] && why) {
                g->on |= (uint8_t)bit;
                g->at[k] = t;
                g->stack[k] = stack;
            }
            continue;
        }
        if (to == measured[k]) continue;
        g->on &= (uint8_t)~bit;
        if (start) {
            add(p, k, g->stack[k], overlap(start, end ? end : INT64_MAX, g->at[k], t), seq);
            continue;
        }
        tdx_goprof_wait w = {g->at[k], t, seq, g->stack[k], (uint8_t)k};
        if (tdx_vec_push(&g->pending, w)) p->oom = 1;
    }
}

void tdx_goprof_settle(tdx_goprof *p, tdx_goprof_g *g, int64_t end) {
    for (size_t i = 0; i < g->pending.n; i++) {
        const tdx_goprof_wait *w = &g->pending.v[i];
        add(p, w->which, w->stack, overlap(0, end, w->from, w->to), w->seq);
    }
    g->pending.n = 0;
}

/* ---- the section ---- */

#define MAGIC "TDXPPF01"

/* A sum with its stack's first PCs, for finding the stacks Go takes as one. */
typedef struct keyed {
    uint64_t hash;
    const uint64_t *pcs; /* into a shared array */
    uint32_t npcs;
    uint32_t sum;
} keyed;

static int cmp_keyed(const void *a, const void *b, void *ctx) {
    const keyed *x = a, *y = b;
    const tdx_goprof *p = ctx;
    uint8_t wx = p->sums.v[x->sum].which, wy = p->sums.v[y->sum].which;
    if (wx != wy) return wx < wy ? -1 : 1;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    if (x->npcs != y->npcs) return x->npcs < y->npcs ? -1 : 1;
    int c = memcmp(x->pcs, y->pcs, x->npcs * sizeof *x->pcs);
    if (c) return c;
    return x->sum < y->sum ? -1 : x->sum > y->sum;
}

typedef struct outrec {
    uint8_t which;
    tdx_goprof_rec r;
} outrec;

static int cmp_out(const void *a, const void *b) {
    const outrec *x = a, *y = b;
    if (x->which != y->which) return x->which < y->which ? -1 : 1;
    return x->r.stack < y->r.stack ? -1 : x->r.stack > y->r.stack;
}

int tdx_goprof_encode(const tdx_goprof *p, const tdx_gen *tabs, tdx_buf *out) {
    size_t n = p->sums.n;
    keyed *k = calloc(n ? n : 1, sizeof *k);
    uint64_t *pcs = calloc(n ? n * MAX_PCS : 1, sizeof *pcs);
    outrec *o = calloc(n ? n : 1, sizeof *o);
    int rc = -1;
    if (!k || !pcs || !o) goto done;
    for (size_t i = 0; i < n; i++) {
        uint32_t s = p->sums.v[i].stack, m = 0;
        uint64_t *v = pcs + i * MAX_PCS;
        if (s < tabs->stacks.n) {
            const tdx_stack *st = &tabs->stacks.v[s];
            for (; m < st->nframes && m < MAX_PCS; m++)
                v[m] = tabs->frames.v[tabs->stack_frames.v[st->first + m]].pc;
        }
        while (m && v[m - 1] == 0) m--; /* Go compares the PCs padded with zeros */
        k[i] = (keyed){XXH3_64bits(v, m * sizeof *v), v, m, (uint32_t)i};
    }
    if (n > 1) qsort_r(k, n, sizeof *k, cmp_keyed, (void *)p);
    size_t no = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && p->sums.v[k[i].sum].which == p->sums.v[k[j].sum].which &&
               k[i].hash == k[j].hash && k[i].npcs == k[j].npcs &&
               !memcmp(k[i].pcs, k[j].pcs, k[i].npcs * sizeof *pcs))
            j++;
        const tdx_goprof_sum *rep = &p->sums.v[k[i].sum];
        outrec r = {rep->which, {rep->stack, 0, 0}};
        for (size_t m = i; m < j; m++) {
            const tdx_goprof_sum *s = &p->sums.v[k[m].sum];
            r.r.count += s->count;
            r.r.ns = tdx_wadd(r.r.ns, s->ns);
            if (s->seq > rep->seq) rep = s, r.r.stack = s->stack;
        }
        o[no++] = r;
        i = j;
    }
    if (no > 1) qsort(o, no, sizeof *o, cmp_out);
    rc = tdx_buf_append(out, MAGIC, 8);
    size_t at = 0;
    for (int w = 0; w < TDX_PROF_COUNT && !rc; w++) {
        size_t e = at;
        while (e < no && o[e].which == w) e++;
        rc = tdx_buf_uvarint(out, e - at);
        uint32_t prev = 0;
        for (size_t i = at; i < e && !rc; i++) {
            rc = tdx_buf_uvarint(out, o[i].r.stack - prev) | tdx_buf_uvarint(out, o[i].r.count) |
                 tdx_ser_i(out, o[i].r.ns);
            prev = o[i].r.stack;
        }
        at = e;
    }
done:
    free(k);
    free(pcs);
    free(o);
    return rc ? -1 : 0;
}

int tdx_goprof_decode(const uint8_t *p, size_t n, uint64_t off, uint32_t nstacks, int which,
                      tdx_goprof_recs *out, tdx_err *err) {
    out->n = 0;
    if (n < 8 || memcmp(p, MAGIC, 8) != 0) return tdx_index_corrupt(err, off, "section PPROF");
    tdx_deser d = {p + 8, p + n, 0};
    for (int w = 0; w < TDX_PROF_COUNT && !d.bad; w++) {
        uint64_t cnt = tdx_deser_u(&d);
        if (cnt > (uint64_t)(d.end - d.p) / 3) { /* a record takes 3 bytes at least */
            d.bad = 1;
            break;
        }
        uint64_t stack = 0;
        for (uint64_t i = 0; i < cnt && !d.bad; i++) {
            uint64_t delta = tdx_deser_u(&d);
            tdx_goprof_rec r;
            r.count = tdx_deser_u(&d);
            r.ns = tdx_deser_i(&d);
            /* ids rise strictly; every total is of one wait or more, each longer than 0 */
            if ((i && delta == 0) || delta >= nstacks || stack + delta >= nstacks || r.count == 0) {
                d.bad = 1;
                break;
            }
            stack += delta;
            r.stack = (uint32_t)stack;
            if (w == which && tdx_vec_push(out, r))
                return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        }
    }
    if (d.bad || d.p != d.end)
        return tdx_index_corrupt(err, off + (uint64_t)(d.p - p), "section PPROF");
    return 0;
}
