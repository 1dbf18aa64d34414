/* goprof.c: the four pprof-style profiles as cmd/trace computes them (see goprof.h), and PPROF.
 *
 * Go measures every wait once the whole trace is read, against each goroutine's summary record,
 * the last one of its id. Here a wait is measured when it ends, against the record the goroutine
 * has then; the two agree unless an id is used again after its goroutine ended, or a goroutine
 * moves on after blocking "forever", neither of which Go's runtime does. */
#include "index/analysis/goprof.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/event.h"
#include "core/varint.h"
#include "index/format/reader.h"
#include "index/common/viewgen_ser.h"

#define MAX_PCS 128 /* Go's pprofMaxStack: stacks are one when these many PCs are */

static const char *const profile_names[TDX_PROF_COUNT] = {"net", "sync", "syscall", "sched"};

const char *tdx_goprof_name(int which) {
    return which >= 0 && which < TDX_PROF_COUNT ? profile_names[which] : "";
}

int tdx_goprof_parse(const char *name) {
    for (int i = 0; i < TDX_PROF_COUNT; i++)
        if (!strcmp(name, profile_names[i])) return i;
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

uint8_t tdx_goprof_state(int which) {
    return measured[which];
}

void tdx_goprof_free(tdx_goprof *p) {
    tdx_hmap_free(&p->idx);
    tdx_vec_free(&p->sums);
    memset(p, 0, sizeof *p);
}

void tdx_goprof_g_free(tdx_goprof_g *g) {
    tdx_vec_free(&g->pending);
    tdx_vec_free(&g->unnamed);
    memset(g, 0, sizeof *g);
}

int64_t tdx_goprof_overlap(int64_t a, int64_t b, int64_t c, int64_t d) {
    if (b < c || d < a) return 0;
    return tdx_wsub(b < d ? b : d, a > c ? a : c);
}

/* The sums' map key: one-to-one while stack ids stay below 2^30 (the map hashes it). */
static uint64_t sum_key(uint32_t stack, uint32_t name, int which) {
    return ((uint64_t)stack << 32 | name) ^ (uint64_t)which << 62;
}

/* Adds n waits of ns in all (each longer than 0; their sum may wrap, as Go's does). */
static void add_n(tdx_goprof *p, int which, uint32_t name, uint32_t stack, uint64_t n, int64_t ns,
                  uint64_t seq) {
    uint64_t h = sum_key(stack, name, which);
    uint32_t at;
    for (;; h++) { /* a hash two keys share: the next */
        at = tdx_hmap_get(&p->idx, h);
        if (at == TDX_HMAP_EMPTY) break;
        const tdx_goprof_sum *s = &p->sums.v[at];
        if (s->stack == stack && s->name == name && s->which == which) break;
    }
    if (at == TDX_HMAP_EMPTY) {
        tdx_goprof_sum z = {stack, name, (uint8_t)which, 0, 0, 0};
        if (p->sums.n >= UINT32_MAX - 1 || tdx_vec_push(&p->sums, z) ||
            tdx_hmap_put(&p->idx, h, (uint32_t)(p->sums.n - 1))) {
            p->oom = 1;
            return;
        }
        at = (uint32_t)(p->sums.n - 1);
    }
    tdx_goprof_sum *s = &p->sums.v[at];
    s->count += n;
    s->ns = tdx_wadd(s->ns, ns);
    if (seq > s->seq) s->seq = seq;
}

static void add(tdx_goprof *p, int which, uint32_t name, uint32_t stack, int64_t ns, uint64_t seq) {
    if (ns > 0) add_n(p, which, name, stack, 1, ns, seq);
}

void tdx_goprof_add(tdx_goprof *p, int which, uint32_t name, uint32_t stack, int64_t ns,
                    uint64_t seq) {
    add(p, which, name, stack, ns, seq);
}

/* A counted wait: filed under the goroutine's name, or kept until it has one. */
static void count(tdx_goprof *p, tdx_goprof_g *g, int which, uint32_t name, uint32_t stack,
                  int64_t ns, uint64_t seq) {
    if (ns <= 0) return;
    if (name) {
        add(p, which, name, stack, ns, seq);
        return;
    }
    for (size_t i = 0; i < g->unnamed.n; i++) {
        tdx_goprof_done *d = &g->unnamed.v[i];
        if (d->stack != stack || d->which != which) continue;
        d->count++;
        d->ns = tdx_wadd(d->ns, ns);
        d->seq = seq; /* (they come in order) */
        return;
    }
    tdx_goprof_done d = {1, ns, seq, stack, (uint8_t)which};
    if (tdx_vec_push(&g->unnamed, d)) p->oom = 1;
}

static void file_unnamed(tdx_goprof *p, tdx_goprof_g *g, uint32_t name) {
    for (size_t i = 0; i < g->unnamed.n; i++) {
        const tdx_goprof_done *d = &g->unnamed.v[i];
        add_n(p, d->which, name, d->stack, d->count, d->ns, d->seq);
    }
    g->unnamed.n = 0;
}

void tdx_goprof_step(tdx_goprof *p, tdx_goprof_g *g, int64_t t, uint64_t seq, uint8_t to,
                     unsigned reason_bits, uint32_t stack, int64_t start, int64_t end,
                     uint32_t name) {
    /* Waits that ended before the first run count nothing once it has come. */
    if (start && g->pending.n) g->pending.n = 0;
    if (name && g->unnamed.n) file_unnamed(p, g, name);
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
            count(p, g, k, name, g->stack[k],
                  tdx_goprof_overlap(start, end ? end : INT64_MAX, g->at[k], t), seq);
            continue;
        }
        tdx_goprof_wait w = {g->at[k], t, seq, g->stack[k], (uint8_t)k};
        if (tdx_vec_push(&g->pending, w)) p->oom = 1;
    }
}

void tdx_goprof_settle(tdx_goprof *p, tdx_goprof_g *g, int64_t end, uint32_t name) {
    for (size_t i = 0; i < g->pending.n; i++) {
        const tdx_goprof_wait *w = &g->pending.v[i];
        add(p, w->which, name, w->stack, tdx_goprof_overlap(0, end, w->from, w->to), w->seq);
    }
    g->pending.n = 0;
    file_unnamed(p, g, name);
}

/* ---- the section ---- */

#define MAGIC "TDXPPF02"

typedef struct encctx {
    const tdx_goprof *p;
    tdx_goprof_str_fn str;
    const void *ctx;
    uint32_t *rank; /* name id -> its place in the name table (by bytes) */
} encctx;

static int cmp_name(const void *a, const void *b, void *pc) {
    const encctx *c = pc;
    return tdx_str_cmp(c->str(c->ctx, *(const uint32_t *)a), c->str(c->ctx, *(const uint32_t *)b));
}

static int cmp_sum(const void *a, const void *b, void *pc) {
    const encctx *c = pc;
    const tdx_goprof_sum *x = &c->p->sums.v[*(const uint32_t *)a],
                         *y = &c->p->sums.v[*(const uint32_t *)b];
    if (x->which != y->which) return x->which < y->which ? -1 : 1;
    uint32_t rx = c->rank[x->name], ry = c->rank[y->name];
    if (rx != ry) return rx < ry ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

int tdx_goprof_encode(const tdx_goprof *p, tdx_goprof_str_fn str, const void *ctx, tdx_buf *out) {
    size_t n = p->sums.n;
    uint32_t maxname = 0;
    for (size_t i = 0; i < n; i++)
        if (p->sums.v[i].name > maxname) maxname = p->sums.v[i].name;
    uint32_t *rank = calloc((size_t)maxname + 1, sizeof *rank);
    uint32_t *names = malloc(((size_t)maxname + 1) * sizeof *names);
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    int rc = -1;
    if (!rank || !names || !order) goto done;
    /* the names that have waits, by bytes; rank holds place + 1 while collecting */
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t nm = p->sums.v[i].name;
        if (!rank[nm]) rank[nm] = 1, names[nn++] = nm;
    }
    encctx c = {p, str, ctx, rank};
    if (nn > 1) qsort_r(names, nn, sizeof *names, cmp_name, &c);
    for (size_t i = 0; i < nn; i++) rank[names[i]] = (uint32_t)i;
    for (size_t i = 0; i < n; i++) order[i] = (uint32_t)i;
    if (n > 1) qsort_r(order, n, sizeof *order, cmp_sum, &c);
    rc = tdx_buf_append(out, MAGIC, 8) | tdx_buf_uvarint(out, nn);
    for (size_t i = 0; i < nn && !rc; i++) {
        tdx_str t = str(ctx, names[i]);
        rc = tdx_ser_bytes(out, t.p, t.n);
    }
    size_t at = 0;
    for (int w = 0; w < TDX_PROF_COUNT && !rc; w++) {
        size_t e = at;
        while (e < n && p->sums.v[order[e]].which == w) e++;
        rc = tdx_buf_uvarint(out, e - at);
        uint32_t pname = 0, pstack = 0;
        for (size_t i = at; i < e && !rc; i++) {
            const tdx_goprof_sum *s = &p->sums.v[order[i]];
            uint32_t r = rank[s->name];
            /* the name's place from the previous record's; the stack from the previous
             * record's when the name is the same */
            uint32_t sd = i > at && r == pname ? s->stack - pstack : s->stack;
            rc = tdx_buf_uvarint(out, i > at ? r - pname : r) | tdx_buf_uvarint(out, sd) |
                 tdx_buf_uvarint(out, s->count) | tdx_ser_i(out, s->ns) |
                 tdx_buf_uvarint(out, s->seq);
            pname = r;
            pstack = s->stack;
        }
        at = e;
    }
done:
    free(rank);
    free(names);
    free(order);
    return rc ? -1 : 0;
}

/* A record with its stack's first PCs, for finding the stacks Go takes as one. */
typedef struct keyed {
    uint64_t hash;
    const uint64_t *pcs; /* into a shared array */
    uint32_t npcs;
    uint32_t rec;
} keyed;

static int cmp_keyed(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    if (x->npcs != y->npcs) return x->npcs < y->npcs ? -1 : 1;
    int c = memcmp(x->pcs, y->pcs, x->npcs * sizeof *x->pcs);
    if (c) return c;
    return x->rec < y->rec ? -1 : x->rec > y->rec;
}

static int cmp_rec(const void *a, const void *b) {
    const tdx_goprof_rec *x = a, *y = b;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

int tdx_goprof_merge(tdx_goprof_recs *r, const tdx_gen *tabs) {
    size_t n = r->n;
    if (n < 2) return 0;
    size_t total = 0; /* the PCs compared: up to 128 a stack */
    for (size_t i = 0; i < n; i++) {
        uint32_t s = r->v[i].stack;
        if (s < tabs->stacks.n)
            total += tabs->stacks.v[s].nframes < MAX_PCS ? tabs->stacks.v[s].nframes : MAX_PCS;
    }
    keyed *k = malloc(n * sizeof *k);
    uint64_t *pcs = malloc((total ? total : 1) * sizeof *pcs);
    tdx_goprof_rec *o = malloc(n * sizeof *o);
    if (!k || !pcs || !o) {
        free(k);
        free(pcs);
        free(o);
        return -1;
    }
    uint64_t *v = pcs;
    for (size_t i = 0; i < n; i++) {
        uint32_t s = r->v[i].stack, m = 0;
        if (s < tabs->stacks.n) {
            const tdx_stack *st = &tabs->stacks.v[s];
            for (; m < st->nframes && m < MAX_PCS; m++)
                v[m] = tabs->frames.v[tabs->stack_frames.v[st->first + m]].pc;
        }
        uint32_t used = m;
        while (m && v[m - 1] == 0) m--; /* Go compares the PCs padded with zeros */
        k[i] = (keyed){XXH3_64bits(v, m * sizeof *v), v, m, (uint32_t)i};
        v += used;
    }
    qsort(k, n, sizeof *k, cmp_keyed);
    size_t no = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && k[j].hash == k[i].hash && k[j].npcs == k[i].npcs &&
               !memcmp(k[j].pcs, k[i].pcs, k[i].npcs * sizeof *pcs))
            j++;
        tdx_goprof_rec m = r->v[k[i].rec];
        for (size_t x = i + 1; x < j; x++) {
            const tdx_goprof_rec *y = &r->v[k[x].rec];
            m.count += y->count;
            m.ns = tdx_wadd(m.ns, y->ns);
            if (y->seq > m.seq) m.seq = y->seq, m.stack = y->stack;
        }
        o[no++] = m;
        i = j;
    }
    memcpy(r->v, o, no * sizeof *o);
    r->n = no;
    free(k);
    free(pcs);
    free(o);
    return 0;
}

int tdx_goprof_read(const uint8_t *p, size_t n, uint64_t off, const tdx_gen *tabs, int which,
                    const tdx_str *name, tdx_goprof_recs *out, bool *named, tdx_err *err) {
    out->n = 0;
    *named = false; /* (until the names are read) */
    if (n < 8 || memcmp(p, MAGIC, 8) != 0) return tdx_index_corrupt(err, off, "section PPROF");
    tdx_deser d = {p + 8, p + n, 0};
    uint64_t nn = tdx_deser_u(&d);
    if (nn > (uint64_t)(d.end - d.p)) d.bad = 1; /* a name takes a byte at least */
    uint64_t want = UINT64_MAX;                  /* the wanted name's place (UINT64_MAX: all) */
    tdx_str prev = {(const uint8_t *)"", 0};
    for (uint64_t i = 0; i < nn && !d.bad; i++) {
        size_t len;
        const uint8_t *q = tdx_deser_bytes(&d, &len);
        if (d.bad) break;
        tdx_str t = {q, (uint32_t)len};
        if (i && tdx_str_cmp(prev, t) >= 0) d.bad = 1; /* by bytes, each once */
        prev = t;
        if (name && name->n && !tdx_str_cmp(t, *name)) want = i;
    }
    if (name && name->n && want == UINT64_MAX) want = UINT64_MAX - 1; /* none matches */
    *named = want != UINT64_MAX - 1;
    uint32_t nstacks = (uint32_t)tabs->stacks.n;
    for (int w = 0; w < TDX_PROF_COUNT && !d.bad; w++) {
        uint64_t cnt = tdx_deser_u(&d);
        if (cnt > (uint64_t)(d.end - d.p) / 5) { /* a record takes 5 bytes at least */
            d.bad = 1;
            break;
        }
        uint64_t nm = 0, stack = 0;
        for (uint64_t i = 0; i < cnt && !d.bad; i++) {
            uint64_t dn = tdx_deser_u(&d), ds = tdx_deser_u(&d);
            tdx_goprof_rec r;
            r.count = tdx_deser_u(&d);
            r.ns = tdx_deser_i(&d);
            r.seq = tdx_deser_u(&d);
            /* (name, stack) rise strictly; every total is of one wait or more */
            bool same = i && dn == 0;
            uint64_t s = same ? stack + ds : ds;
            if (d.bad || dn >= nn || nm + dn >= nn || ds >= nstacks || s >= nstacks ||
                (same && ds == 0) || r.count == 0) {
                d.bad = 1;
                break;
            }
            nm += dn;
            stack = s;
            r.stack = (uint32_t)s;
            if (w != which || (want < UINT64_MAX && nm != want)) continue;
            if (tdx_vec_push(out, r))
                return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        }
    }
    if (d.bad || d.p != d.end)
        return tdx_index_corrupt(err, off + (uint64_t)(d.p - p), "section PPROF");
    if (tdx_goprof_merge(out, tabs))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    if (out->n > 1) qsort(out->v, out->n, sizeof *out->v, cmp_rec);
    return 0;
}
