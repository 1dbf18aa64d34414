/* gostats.c: the execution statistics of Go's trace Summarizer, record by record as Go keeps them.
 *
 * Go keys its pending times by "not zero" (a time of 0 reads as unset) and adds durations with
 * wrapping int64 arithmetic; both are copied, so that odd traces give Go's numbers too. Where Go
 * would dereference a goroutine record it never made (a transition or range of a goroutine it did
 * not see created, possible only in traces its parser rejects), the event is skipped; where it
 * would write to the range map its finalize dropped (a range begun on a goroutine after it blocked
 * forever, which Go's runtime does not do), the range is counted as any other. */
#include "index/analysis/gostats.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/hmap.h"
#include "core/spec.h"
#include "core/varint.h"
#include "index/common/extsort.h"
#include "index/analysis/goprof.h"
#include "index/analysis/regstats.h"
#include "index/common/viewgen_ser.h"
#include "index/views/viewgen_store.h"

typedef tdx_gostat_kvvec kvvec;

/* One of Go's small maps of a record (reasons, range names): searched in place while short, with
 * a hash index once long (a crafted trace may give one goroutine very many keys). */
typedef struct kvmap {
    kvvec v;
    tdx_hmap idx; /* key -> position (empty while the map is short) */
} kvmap;

#define KV_INDEX_AT 16

typedef struct grec {
    tdx_gostat st; /* (its block and range fields are set only when a record is read back) */
    /* the Summarizer's pending state (goroutineSummary) */
    int64_t last_start, last_runnable, last_block, last_syscall, last_syscall_block;
    uint32_t last_reason;
    bool used; /* a goroutine's (else a free slot: see `free`) */
    kvmap block, range, last_range;
    tdx_goprof_g prof;               /* its waits the profiles measure */
    TDX_VEC(struct aregion) regions; /* its active regions, innermost last */
} grec;

/* GoroutineExecStats at one time (Go's snapshotStat): what a region's statistics are the
 * difference of. */
typedef struct snapshot {
    int64_t exec, sched, syscall, syscall_block, total;
    kvmap block, range;
} snapshot;

/* A region not ended yet (Go's UserRegionSummary in activeRegions). */
typedef struct aregion {
    tdx_rgkey key; /* its type ("" for the one a goroutine inherits) and the frame it began at */
    int64_t start;
    bool has_start;
    uint64_t task;
    snapshot *at_start; /* a region the detail query reports: the statistics at its begin */
} aregion;

/* A map from a pair of 64-bit keys to an int64 (Go's syscallingP/G and rangesP maps). */
typedef struct pmap {
    uint64_t *a, *b;
    int64_t *v;
    uint8_t *used;
    size_t mask, n;
} pmap;

struct tdx_gostats {
    tdx_vgstore store; /* names, reasons and range names, by content */
    tdx_hmap strs;     /* this generation's string id -> the store's + 1 (cleared at a Sync) */
    TDX_VEC(grec) gs;  /* the goroutines alive (ended ones leave at once, their slot reused) */
    tdx_hmap g_idx;    /* goroutine id -> index in gs */
    TDX_VEC(uint32_t) free;
    pmap sys_p;    /* proc -> goroutine in a syscall on it */
    pmap sys_g;    /* goroutine -> the proc it entered its syscall on */
    pmap ranges_p; /* (proc, range name) -> the goroutine it began on */
    int64_t t0, last_ts, sync_ts;
    bool started;
    bool profiling; /* also the pprof-style profiles and the region table */
    tdx_goprof prof;
    tdx_regstats regs;
    tdx_vgstore rstore; /* the region table's strings (types, functions, files): kept out of
                         * `store`, whose strings GSTATS writes */
    tdx_hmap rstrs;     /* this generation's string id -> rstore's + 1 (cleared at a Sync) */
    bool regioning;     /* regions followed (the region table, or the detail query) */
    struct {            /* the detail query (tdx_gostats_region_detail) */
        tdx_gostats_region_fn fn;
        void *ctx;
        tdx_str type;
        bool has_type, has_pc;
        uint64_t pc;
        int failed;
        tdx_err err;
    } detail;
    uint64_t nev;           /* events so far: the profiles' order of waits */
    TDX_VEC(uint8_t) rbits; /* store string id -> its reason bits | 0x80 (0: not known yet) */
    tdx_xsort *spill; /* ended goroutines' records, by (id, when spilled): the last one counts */
    uint64_t seq;
    tdx_buf tmp;
    /* reading */
    int have;          /* 0: nothing fetched yet, 1: `next` holds a record, 2: the end */
    tdx_xrec next;     /* the record after the one being merged */
    tdx_buf cur, nbuf; /* payloads of the record returned and of `next` */
    kvvec out_kv;      /* the maps of the record read back */
    int oom;
};

/* ---- pair maps ---- */

static size_t pm_hash(uint64_t a, uint64_t b) {
    return (size_t)tdx_hash64(a * 0x9e3779b97f4a7c15ULL ^ tdx_hash64(b));
}

static void pm_free(pmap *m) {
    free(m->a);
    free(m->b);
    free(m->v);
    free(m->used);
    memset(m, 0, sizeof *m);
}

/* The slot of (a, b), or the free slot it would take (m->used must be allocated). */
static size_t pm_find(const pmap *m, uint64_t a, uint64_t b, bool *found) {
    size_t i = pm_hash(a, b) & m->mask;
    // NOLINTNEXTLINE(clang-analyzer-core.NullDereference): callers allocate used first
    while (m->used[i]) {
        if (m->a[i] == a && m->b[i] == b) {
            *found = true;
            return i;
        }
        i = (i + 1) & m->mask;
    }
    *found = false;
    return i;
}

static int pm_get(const pmap *m, uint64_t a, uint64_t b, int64_t *v) {
    if (!m->n) return 0;
    bool found;
    size_t i = pm_find(m, a, b, &found);
    if (found) *v = m->v[i];
    return found;
}

static int pm_put(pmap *m, uint64_t a, uint64_t b, int64_t v) {
    if (!m->used || (m->n + 1) * 2 > m->mask + 1) {
        pmap g;
        size_t cap = m->used ? (m->mask + 1) * 2 : 16;
        g.a = malloc(cap * sizeof *g.a);
        g.b = malloc(cap * sizeof *g.b);
        g.v = malloc(cap * sizeof *g.v);
        g.used = calloc(cap, 1);
        g.mask = cap - 1;
        g.n = 0;
        if (!g.a || !g.b || !g.v || !g.used) {
            pm_free(&g);
            return -1;
        }
        for (size_t i = 0; m->used && i <= m->mask; i++) {
            if (!m->used[i]) continue;
            bool found;
            size_t j = pm_find(&g, m->a[i], m->b[i], &found);
            g.a[j] = m->a[i], g.b[j] = m->b[i], g.v[j] = m->v[i], g.used[j] = 1;
            g.n++;
        }
        pm_free(m);
        *m = g;
    }
    bool found;
    size_t i = pm_find(m, a, b, &found); /* m->used is set: grown above */
    m->a[i] = a, m->b[i] = b, m->v[i] = v;
    if (!found) m->used[i] = 1, m->n++;
    return 0;
}

static void pm_del(pmap *m, uint64_t a, uint64_t b) {
    if (!m->n) return;
    bool found;
    size_t i = pm_find(m, a, b, &found);
    if (!found) return;
    /* backward-shift deletion keeps every other key's probe chain whole */
    for (size_t j = (i + 1) & m->mask; m->used[j]; j = (j + 1) & m->mask) {
        size_t home = pm_hash(m->a[j], m->b[j]) & m->mask;
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->a[i] = m->a[j], m->b[i] = m->b[j], m->v[i] = m->v[j];
            i = j;
        }
    }
    m->used[i] = 0;
    m->n--;
}

/* ---- small maps of a record (a few reasons and range names) ---- */

static long kv_find(const kvmap *m, uint32_t key) {
    if (m->idx.n) {
        uint32_t i = tdx_hmap_get(&m->idx, key);
        return i == TDX_HMAP_EMPTY ? -1 : (long)i;
    }
    for (size_t i = 0; i < m->v.n; i++)
        if (m->v.v[i].key == key) return (long)i;
    return -1;
}

static tdx_gostat_kv *kv_slot(tdx_gostats *s, kvmap *m, uint32_t key) {
    long i = kv_find(m, key);
    if (i >= 0) return &m->v.v[i];
    if (tdx_vec_push(&m->v, ((tdx_gostat_kv){key, 0}))) goto oom;
    if (m->idx.n || m->v.n > KV_INDEX_AT) {
        for (size_t k = m->idx.n ? m->v.n - 1 : 0; k < m->v.n; k++)
            if (tdx_hmap_put(&m->idx, m->v.v[k].key, (uint32_t)k)) goto oom;
    }
    return &m->v.v[m->v.n - 1];
oom:
    s->oom = 1;
    return NULL;
}

/* Go's m[key] += d (the key is added even when d is 0). */
static void kv_add(tdx_gostats *s, kvmap *m, uint32_t key, int64_t d) {
    tdx_gostat_kv *k = kv_slot(s, m, key);
    if (k) k->ns = tdx_wadd(k->ns, d);
}

/* Go's m[key] for a missing key: 0. */
static int64_t kv_get(const kvmap *m, uint32_t key) {
    long i = kv_find(m, key);
    return i < 0 ? 0 : m->v.v[i].ns;
}

/* delete(m, key): the last entry takes its place. */
static void kv_del(tdx_gostats *s, kvmap *m, uint32_t key) {
    long i = kv_find(m, key);
    if (i < 0) return;
    m->v.v[i] = m->v.v[--m->v.n];
    if (!m->idx.n) return;
    tdx_hmap_del(&m->idx, key);
    if ((size_t)i < m->v.n && tdx_hmap_put(&m->idx, m->v.v[i].key, (uint32_t)i)) s->oom = 1;
}

static void kv_clear(kvmap *m) {
    m->v.n = 0;
    tdx_hmap_clear(&m->idx);
}

static void kv_free(kvmap *m) {
    tdx_vec_free(&m->v);
    tdx_hmap_free(&m->idx);
}

static void snap_free(snapshot *o) {
    if (!o) return;
    kv_free(&o->block);
    kv_free(&o->range);
    free(o);
}

static void grec_free(grec *r) {
    kv_free(&r->block);
    kv_free(&r->range);
    kv_free(&r->last_range);
    tdx_goprof_g_free(&r->prof);
    for (size_t i = 0; i < r->regions.n; i++) snap_free(r->regions.v[i].at_start);
    tdx_vec_free(&r->regions);
}

/* ---- life cycle ---- */

tdx_gostats *tdx_gostats_new(const char *beside, size_t budget) {
    tdx_gostats *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (tdx_vgstore_init(&s->store)) {
        free(s);
        return NULL;
    }
    if (tdx_vgstore_init(&s->rstore)) {
        tdx_vgstore_free(&s->store);
        free(s);
        return NULL;
    }
    if (!(s->spill = tdx_xsort_new(beside, budget))) {
        tdx_gostats_free(s);
        return NULL;
    }
    return s;
}

void tdx_gostats_free(tdx_gostats *s) {
    if (!s) return;
    for (size_t i = 0; i < s->gs.n; i++) grec_free(&s->gs.v[i]);
    tdx_vec_free(&s->gs);
    tdx_hmap_free(&s->g_idx);
    pm_free(&s->sys_p);
    pm_free(&s->sys_g);
    pm_free(&s->ranges_p);
    tdx_xsort_free(s->spill);
    tdx_vec_free(&s->tmp);
    tdx_vec_free(&s->cur);
    tdx_vec_free(&s->nbuf);
    tdx_vec_free(&s->out_kv);
    tdx_hmap_free(&s->strs);
    tdx_vec_free(&s->free);
    tdx_goprof_free(&s->prof);
    tdx_regstats_free(&s->regs);
    tdx_vgstore_free(&s->rstore);
    tdx_hmap_free(&s->rstrs);
    tdx_vec_free(&s->rbits);
    tdx_vgstore_free(&s->store);
    free(s);
}

tdx_str tdx_gostats_str(const tdx_gostats *s, uint32_t id) {
    if (id == 0 || id >= s->store.strs.n) return (tdx_str){(const uint8_t *)"", 0};
    return tdx_vgstore_str(&s->store, id);
}

size_t tdx_gostats_nstrings(const tdx_gostats *s) {
    return s->store.strs.n ? s->store.strs.n - 1 : 0;
}

void tdx_gostats_profile(tdx_gostats *s) {
    s->profiling = s->regioning = true;
}

void tdx_gostats_region_detail(tdx_gostats *s, const uint8_t *type, size_t ntype, bool has_type,
                               uint64_t pc, bool has_pc, tdx_gostats_region_fn fn, void *ctx) {
    s->regioning = true;
    s->detail.fn = fn;
    s->detail.ctx = ctx;
    s->detail.type = (tdx_str){type ? type : (const uint8_t *)"", (uint32_t)ntype};
    s->detail.has_type = has_type;
    s->detail.pc = pc;
    s->detail.has_pc = has_pc;
}

static tdx_str str_of(const void *s, uint32_t id) {
    return tdx_gostats_str(s, id);
}

int tdx_gostats_profiles_encode(const tdx_gostats *s, tdx_buf *out) {
    return tdx_goprof_encode(&s->prof, str_of, s, out);
}

static tdx_str rstr(const void *ctx, uint32_t id);

int tdx_gostats_regions_encode(const tdx_gostats *s, tdx_buf *out) {
    return tdx_regstats_encode(&s->regs, rstr, s, out);
}

tdx_str tdx_gostats_region_str(const tdx_gostats *s, uint32_t id) {
    return rstr(s, id);
}

int64_t tdx_gostats_first_time(const tdx_gostats *s) {
    return s->t0;
}

int64_t tdx_gostats_last_time(const tdx_gostats *s) {
    return s->last_ts;
}

int tdx_gostats_group_cmp(const tdx_gostats *s, uint32_t name_a, int64_t exec_a, uint32_t name_b,
                          int64_t exec_b) {
    if (exec_a != exec_b) return exec_a > exec_b ? -1 : 1;
    return tdx_str_cmp(tdx_gostats_str(s, name_a), tdx_gostats_str(s, name_b));
}

int64_t tdx_gostat_unknown(const tdx_gostat *g) {
    int64_t sum = tdx_wadd(tdx_wadd(g->exec, g->sched), tdx_wadd(g->syscall, g->syscall_block));
    for (size_t i = 0; i < g->nblock; i++) sum = tdx_wadd(sum, g->block[i].ns);
    return sum < g->total ? tdx_wsub(g->total, sum) : 0;
}

static grec *g_lookup(tdx_gostats *s, int64_t id) {
    uint32_t i = tdx_hmap_get(&s->g_idx, (uint64_t)id);
    return i == TDX_HMAP_EMPTY ? NULL : &s->gs.v[i];
}

/* ---- the Summarizer's statistics ---- */

/* GoroutineSummary.finalize's statistics (snapshotStat at t, kept; the pending state cleared). */
static void finalize(tdx_gostats *s, grec *r, int64_t t) {
    tdx_gostat *st = &r->st;
    if (st->total == 0) st->total = tdx_wsub(t, st->creation);
    if (r->last_start) st->exec = tdx_wadd(st->exec, tdx_wsub(t, r->last_start));
    if (r->last_runnable) st->sched = tdx_wadd(st->sched, tdx_wsub(t, r->last_runnable));
    if (r->last_block) kv_add(s, &r->block, r->last_reason, tdx_wsub(t, r->last_block));
    if (r->last_syscall) st->syscall = tdx_wadd(st->syscall, tdx_wsub(t, r->last_syscall));
    /* Go adds a syscall still blocked at the end to scheduler wait (its own quirk). */
    if (r->last_syscall_block) st->sched = tdx_wadd(st->sched, tdx_wsub(t, r->last_syscall_block));
    for (size_t i = 0; i < r->last_range.v.n; i++)
        kv_add(s, &r->range, r->last_range.v.v[i].key, tdx_wsub(t, r->last_range.v.v[i].ns));
    r->last_start = r->last_runnable = r->last_block = r->last_syscall = r->last_syscall_block = 0;
    r->last_reason = 0;
    kv_clear(&r->last_range);
}

/* The id in `st` of string `str` of g, through this generation's cache (a few distinct ones are
 * looked up, often). */
static uint32_t intern_in(tdx_gostats *s, tdx_vgstore *st, tdx_hmap *cache, const tdx_gen *g,
                          uint32_t str) {
    if (!g || str == 0 || str >= g->strings.n) return 0;
    uint32_t v = tdx_hmap_get(cache, str);
    if (v != TDX_HMAP_EMPTY) return v - 1;
    tdx_str t = tdx_gen_str(g, str);
    uint32_t id = tdx_vgstore_intern(st, t.p, t.n);
    if (st->oom || tdx_hmap_put(cache, str, id + 1)) s->oom = 1;
    return id;
}

/* The store's id of string `str` of g. */
static uint32_t own_string(tdx_gostats *s, const tdx_gen *g, uint32_t str) {
    return intern_in(s, &s->store, &s->strs, g, str);
}

/* Go's transition reason: GoStop's and GoBlock's string, else empty. */
static uint32_t reason_of(tdx_gostats *s, const tdx_event *e, const tdx_gen *g) {
    if (e->type != TDX_EV_GO_STOP && e->type != TDX_EV_GO_BLOCK) return 0;
    return own_string(s, g, e->str[0]);
}

static bool str_is(const tdx_gostats *s, uint32_t id, const char *lit) {
    tdx_str t = tdx_gostats_str(s, id);
    size_t n = strlen(lit);
    return t.n == n && memcmp(t.p, lit, n) == 0;
}

static grec *new_record(tdx_gostats *s, int64_t id, int64_t creation) {
    grec nr;
    memset(&nr, 0, sizeof nr);
    nr.st.id = id;
    nr.st.creation = creation;
    nr.used = true;
    uint32_t old = tdx_hmap_get(&s->g_idx, (uint64_t)id);
    if (old != TDX_HMAP_EMPTY) { /* a fresh record replaces the old one, as in Go's map */
        /* the profiles follow the id, not the record (and its pending waits the last record) */
        // NOLINTNEXTLINE(clang-analyzer-core.NullDereference): gs.v is set while g_idx has keys
        nr.prof = s->gs.v[old].prof;
        memset(&s->gs.v[old].prof, 0, sizeof nr.prof);
        grec_free(&s->gs.v[old]);
        s->gs.v[old] = nr;
        return &s->gs.v[old];
    }
    uint32_t at;
    if (s->free.n) {
        at = s->free.v[--s->free.n];
        // NOLINTNEXTLINE(clang-analyzer-core.NullDereference): free slots are slots of gs.v
        s->gs.v[at] = nr;
    } else {
        // NOLINTNEXTLINE(clang-analyzer-core.NullDereference): the push sets gs.v or fails
        if (s->gs.n >= UINT32_MAX - 1 || tdx_vec_push(&s->gs, nr)) {
            s->oom = 1;
            return NULL;
        }
        at = (uint32_t)(s->gs.n - 1);
    }
    if (tdx_hmap_put(&s->g_idx, (uint64_t)id, at)) {
        s->oom = 1;
        return NULL;
    }
    return &s->gs.v[at];
}

static int spill_one(tdx_gostats *s, grec *r, tdx_err *err);

/* An ended goroutine (NotExist): its statistics are final (Go's Finalize changes nothing more),
 * so its record leaves memory now; a later record of the same id is sorted after it. */
static int retire(tdx_gostats *s, grec *r, tdx_err *err) {
    if (spill_one(s, r, err)) return -1;
    tdx_goprof_settle(&s->prof, &r->prof, r->st.end, r->st.name);
    uint32_t at = (uint32_t)(r - s->gs.v);
    tdx_hmap_del(&s->g_idx, (uint64_t)r->st.id);
    grec_free(r);
    r->used = false;
    if (tdx_vec_push(&s->free, at))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return 0;
}

/* The profiles' reason bits of a store string id. */
static unsigned reason_bits(tdx_gostats *s, uint32_t why) {
    if (why >= s->rbits.n) {
        size_t n = s->rbits.n;
        if (tdx_vec_reserve(&s->rbits, (size_t)why + 1)) {
            s->oom = 1;
            return 0;
        }
        memset(s->rbits.v + n, 0, (size_t)why + 1 - n);
        s->rbits.n = (size_t)why + 1;
    }
    if (!s->rbits.v[why]) {
        tdx_str t = tdx_gostats_str(s, why);
        s->rbits.v[why] = (uint8_t)(0x80 | tdx_goprof_reason_bits(t.p, t.n));
    }
    return s->rbits.v[why] & 0x7f;
}

/* The profiles see every transition of a goroutine with a record (also those to the state it is
 * in, which start a wait when one is not being measured, as in Go), with its times after it. */
static void profile_step(tdx_gostats *s, grec *r, const tdx_event *e, uint32_t why, int64_t start,
                         int64_t end) {
    unsigned bits = e->to == TDX_GO_WAITING ? reason_bits(s, why) : 0;
    tdx_goprof_step(&s->prof, &r->prof, e->time, s->nev, e->to, bits, e->stack, start, end,
                    r->st.name);
    if (s->prof.oom) s->oom = 1;
}

/* ---- user regions (Go's per-goroutine region lists, as /userregions reads them) ---- */

/* A region-table string's text ("" for 0). */
static tdx_str rstr(const void *ctx, uint32_t id) {
    const tdx_gostats *s = ctx;
    if (id == 0 || id >= s->rstore.strs.n) return (tdx_str){(const uint8_t *)"", 0};
    return tdx_vgstore_str(&s->rstore, id);
}

/* A region-table string id, with every empty text as 0 (keys compare ids). */
static uint32_t key_string(tdx_gostats *s, const tdx_gen *g, uint32_t str) {
    uint32_t id = intern_in(s, &s->rstore, &s->rstrs, g, str);
    return rstr(s, id).n ? id : 0;
}

/* Go's IsSystemGoroutine of a goroutine's name. */
static bool is_system(const tdx_gostats *s, uint32_t name) {
    tdx_str t = tdx_gostats_str(s, name);
    if (t.n == 0) return true;
    if (t.n == 12 && !memcmp(t.p, "runtime.main", 12)) return false;
    return t.n >= 8 && !memcmp(t.p, "runtime.", 8);
}

/* A region that begins with event e: its type, and the outermost frame of e's stack. */
static aregion region_at(tdx_gostats *s, const tdx_event *e, const tdx_gen *g, uint32_t type) {
    aregion a;
    memset(&a, 0, sizeof a);
    a.key.type = type;
    a.start = e->time;
    a.has_start = true;
    if (g && e->stack && e->stack < g->stacks.n && g->stacks.v[e->stack].nframes) {
        const tdx_stack *st = &g->stacks.v[e->stack];
        const tdx_frame *f = &g->frames.v[g->stack_frames.v[st->first + st->nframes - 1]];
        a.key.pc = f->pc;
        a.key.line = f->line;
        a.key.func = key_string(s, g, f->func);
        a.key.file = key_string(s, g, f->file);
    }
    return a;
}

/* Whether the detail query reports a region with this key. */
static bool detail_wants(const tdx_gostats *s, const tdx_rgkey *k) {
    if (!s->detail.fn) return false;
    if (s->detail.has_pc && k->pc != s->detail.pc) return false;
    return !s->detail.has_type || !tdx_str_cmp(rstr(s, k->type), s->detail.type);
}

/* Go's snapshotStat of r at t (its statistics so far, the pending state counted up to t), into
 * o (emptied first). */
static void snap_take(tdx_gostats *s, const grec *r, int64_t t, snapshot *o) {
    const tdx_gostat *st = &r->st;
    kv_clear(&o->block);
    kv_clear(&o->range);
    o->exec = st->exec, o->sched = st->sched, o->syscall = st->syscall;
    o->syscall_block = st->syscall_block;
    o->total = st->total ? st->total : tdx_wsub(t, st->creation);
    for (size_t i = 0; i < r->block.v.n; i++)
        kv_add(s, &o->block, r->block.v.v[i].key, r->block.v.v[i].ns);
    for (size_t i = 0; i < r->range.v.n; i++)
        kv_add(s, &o->range, r->range.v.v[i].key, r->range.v.v[i].ns);
    if (r->last_start) o->exec = tdx_wadd(o->exec, tdx_wsub(t, r->last_start));
    if (r->last_runnable) o->sched = tdx_wadd(o->sched, tdx_wsub(t, r->last_runnable));
    if (r->last_block) kv_add(s, &o->block, r->last_reason, tdx_wsub(t, r->last_block));
    if (r->last_syscall) o->syscall = tdx_wadd(o->syscall, tdx_wsub(t, r->last_syscall));
    if (r->last_syscall_block) o->sched = tdx_wadd(o->sched, tdx_wsub(t, r->last_syscall_block));
    for (size_t i = 0; i < r->last_range.v.n; i++)
        kv_add(s, &o->range, r->last_range.v.v[i].key, tdx_wsub(t, r->last_range.v.v[i].ns));
}

/* The statistics at a region's begin, when the detail query will report it (NULL otherwise, or
 * when memory ran out: s->oom says so). A region a goroutine inherits begins from nothing. */
static snapshot *snap_begin(tdx_gostats *s, const grec *r, const aregion *a, int64_t t) {
    if (!detail_wants(s, &a->key)) return NULL;
    snapshot *o = calloc(1, sizeof *o);
    if (!o) {
        s->oom = 1;
        return NULL;
    }
    if (r) snap_take(s, r, t, o);
    return o;
}

/* Reports a region of the detail query that ends at `end` (its interval's end) with the
 * goroutine's statistics at `at` (Go's: the end event's time, or the finalize time). */
static void detail_report(tdx_gostats *s, const grec *r, const aregion *a, int64_t end,
                          int64_t at) {
    if (s->detail.failed || !detail_wants(s, &a->key)) return;
    snapshot now;
    memset(&now, 0, sizeof now);
    snap_take(s, r, at, &now);
    /* Go's sub: the later snapshot's keys, less the earlier one's values */
    tdx_gostat_kvvec kv = {0};
    const snapshot *b = a->at_start;
    tdx_gostat_region out;
    memset(&out, 0, sizeof out);
    /* (kv.v is set once reserved: said for the analyzer, which supposes the sum wraps) */
    if (tdx_vec_reserve(&kv, now.block.v.n + now.range.v.n + 1) || !kv.v) {
        s->oom = 1;
        goto done;
    }
    for (size_t i = 0; i < now.block.v.n; i++) {
        tdx_gostat_kv k = now.block.v.v[i];
        if (b) k.ns = tdx_wsub(k.ns, kv_get(&b->block, k.key));
        kv.v[kv.n++] = k;
    }
    for (size_t i = 0; i < now.range.v.n; i++) {
        tdx_gostat_kv k = now.range.v.v[i];
        if (b) k.ns = tdx_wsub(k.ns, kv_get(&b->range, k.key));
        kv.v[kv.n++] = k;
    }
    out.goroutine = r->st.id;
    out.task = a->task;
    out.type = a->key.type;
    out.pc = a->key.pc;
    out.has_start = a->has_start;
    out.start = a->has_start ? a->start : s->t0;
    out.end = end;
    tdx_gostat *st = &out.st;
    st->id = r->st.id;
    st->exec = tdx_wsub(now.exec, b ? b->exec : 0);
    st->sched = tdx_wsub(now.sched, b ? b->sched : 0);
    st->syscall = tdx_wsub(now.syscall, b ? b->syscall : 0);
    st->syscall_block = tdx_wsub(now.syscall_block, b ? b->syscall_block : 0);
    st->total = tdx_wsub(now.total, b ? b->total : 0);
    st->block = kv.v;
    st->nblock = now.block.v.n;
    st->range = kv.v + now.block.v.n;
    st->nrange = now.range.v.n;
    if (s->detail.fn(s->detail.ctx, &out, &s->detail.err)) s->detail.failed = 1;
done:
    tdx_vec_free(&kv);
    kv_free(&now.block);
    kv_free(&now.range);
}

/* A region ends (at `end`: its end event, the goroutine's, or the trace's end; its statistics
 * are the goroutine's at `at`). */
static void region_done(tdx_gostats *s, const grec *r, aregion *a, int64_t end, int64_t at) {
    if (s->profiling) {
        tdx_regstats_add(&s->regs, &a->key, tdx_wsub(end, a->has_start ? a->start : s->t0));
        if (s->regs.oom) s->oom = 1;
    }
    detail_report(s, r, a, end, at);
    snap_free(a->at_start);
    a->at_start = NULL;
}

/* Go's finalize: a goroutine that is not a system one ends its active regions at `end`, with
 * its statistics as finalized. */
static void regions_close(tdx_gostats *s, grec *r, int64_t end) {
    bool keep = !is_system(s, r->st.name);
    for (size_t i = 0; i < r->regions.n; i++) {
        aregion *a = &r->regions.v[i];
        if (keep) {
            region_done(s, r, a, end, end);
        } else {
            snap_free(a->at_start);
            a->at_start = NULL;
        }
    }
    r->regions.n = 0;
}

static void region_event(tdx_gostats *s, const tdx_event *e, const tdx_gen *g) {
    grec *r = g_lookup(s, e->g); /* (Go would crash without one) */
    if (!r) return;
    if (e->kind == TDX_KIND_REGION_BEGIN) {
        aregion a = region_at(s, e, g, key_string(s, g, e->str[0]));
        a.task = e->args[0];
        a.at_start = snap_begin(s, r, &a, e->time);
        if (tdx_vec_push(&r->regions, a)) {
            snap_free(a.at_start);
            s->oom = 1;
        }
        return;
    }
    if (r->regions.n) {
        region_done(s, r, &r->regions.v[--r->regions.n], e->time, e->time);
        return;
    }
    /* an end without a begin: a region from the trace's first event, its statistics the
     * goroutine's whole (Go's fabricated summary starts from none) */
    aregion a;
    memset(&a, 0, sizeof a);
    a.key.type = key_string(s, g, e->str[0]);
    a.task = e->args[0];
    region_done(s, r, &a, e->time, e->time);
}

static int go_transition(tdx_gostats *s, const tdx_event *e, const tdx_gen *g, tdx_err *err) {
    uint8_t from = e->from, to = e->to;
    int64_t id = e->res, t = e->time;
    if (from == to) {
        grec *r = s->profiling ? g_lookup(s, id) : NULL;
        if (r) profile_step(s, r, e, reason_of(s, e, g), r->st.start, r->st.end);
        return 0;
    }
    grec *r;
    if (from == TDX_GO_UNDETERMINED || from == TDX_GO_NOTEXIST) {
        /* created within a region: it inherits one, unnamed, begun by its creation */
        const grec *creator = s->regioning ? g_lookup(s, e->g) : NULL;
        bool inherit = creator && creator->regions.n;
        aregion synth = inherit ? region_at(s, e, g, 0) : (aregion){0};
        if (inherit) synth.task = creator->regions.v[creator->regions.n - 1].task;
        r = new_record(s, id, from == TDX_GO_UNDETERMINED ? s->sync_ts : t);
        if (!r) return 0; /* (s->oom reports it) */
        if (inherit) {
            synth.at_start = snap_begin(s, NULL, &synth, t);
            if (tdx_vec_push(&r->regions, synth)) {
                snap_free(synth.at_start);
                s->oom = 1;
            }
        }
    } else {
        if (!(r = g_lookup(s, id))) return 0;
        switch (from) {
        case TDX_GO_RUNNING:
            r->st.exec = tdx_wadd(r->st.exec, tdx_wsub(t, r->last_start));
            r->last_start = 0;
            break;
        case TDX_GO_WAITING:
            if (r->last_block) {
                kv_add(s, &r->block, r->last_reason, tdx_wsub(t, r->last_block));
                r->last_block = 0;
            }
            break;
        case TDX_GO_RUNNABLE:
            if (r->last_runnable) {
                r->st.sched = tdx_wadd(r->st.sched, tdx_wsub(t, r->last_runnable));
                r->last_runnable = 0;
            }
            break;
        case TDX_GO_SYSCALL:
            if (r->last_syscall) {
                if (r->last_syscall_block) {
                    r->st.syscall_block =
                        tdx_wadd(r->st.syscall_block, tdx_wsub(t, r->last_syscall_block));
                    r->st.syscall =
                        tdx_wadd(r->st.syscall, tdx_wsub(r->last_syscall_block, r->last_syscall));
                } else {
                    r->st.syscall = tdx_wadd(r->st.syscall, tdx_wsub(t, r->last_syscall));
                }
                r->last_syscall = r->last_syscall_block = 0;
                /* Go deletes the proc its map gives (0 when it has none) */
                int64_t p = 0;
                pm_get(&s->sys_g, (uint64_t)id, 0, &p);
                pm_del(&s->sys_p, (uint64_t)p, 0);
                pm_del(&s->sys_g, (uint64_t)id, 0);
            }
            break;
        default:
            break;
        }
    }
    /* Named after the outermost frame of the first transition stack that has one. */
    if (r->st.name == 0 && g && e->tstack && e->tstack < g->stacks.n) {
        const tdx_stack *st = &g->stacks.v[e->tstack];
        if (st->nframes) {
            const tdx_frame *f = &g->frames.v[g->stack_frames.v[st->first + st->nframes - 1]];
            r->st.name = own_string(s, g, f->func);
            r->st.pc = f->pc;
        }
    }
    uint32_t why = to == TDX_GO_WAITING ? reason_of(s, e, g) : 0;
    bool forever = to == TDX_GO_WAITING && str_is(s, why, "forever");
    if (s->profiling)
        profile_step(s, r, e, why,
                     r->st.start            ? r->st.start
                     : to == TDX_GO_RUNNING ? t
                                            : 0,
                     to == TDX_GO_NOTEXIST || forever ? t : r->st.end);
    switch (to) {
    case TDX_GO_RUNNING:
        r->last_start = t;
        if (r->st.start == 0) r->st.start = t;
        break;
    case TDX_GO_RUNNABLE:
        r->last_runnable = t;
        break;
    case TDX_GO_WAITING: {
        if (!forever) {
            r->last_block = t;
            r->last_reason = why;
            break;
        }
        /* Blocked forever is like goroutine death. */
        r->st.end = t;
        finalize(s, r, t);
        regions_close(s, r, t);
        break;
    }
    case TDX_GO_NOTEXIST:
        r->st.end = t;
        finalize(s, r, t);
        regions_close(s, r, t);
        return retire(s, r, err);
    case TDX_GO_SYSCALL:
        if (pm_put(&s->sys_p, (uint64_t)e->p, 0, id) || pm_put(&s->sys_g, (uint64_t)id, 0, e->p))
            s->oom = 1;
        r->last_syscall = t;
        break;
    default:
        break;
    }
    return 0;
}

/* A proc going idle while a goroutine that entered a syscall on it is still in it: the syscall
 * blocks from now on. */
static void proc_transition(tdx_gostats *s, const tdx_event *e) {
    if (e->from == e->to || e->to != TDX_PROC_IDLE) return;
    int64_t goid;
    if (!pm_get(&s->sys_p, (uint64_t)e->res, 0, &goid)) return;
    grec *r = g_lookup(s, goid);
    if (r) r->last_syscall_block = e->time;
    pm_del(&s->sys_p, (uint64_t)e->res, 0);
}

/* A range's scope as Go's Event.Range() gives it: 1 a goroutine, 2 a proc, 0 neither. */
static int range_scope(const tdx_event *e, int64_t *id) {
    switch (e->type) {
    case TDX_EV_GC_BEGIN:
    case TDX_EV_GC_ACTIVE:
    case TDX_EV_GC_END:
        return 0;
    case TDX_EV_GC_SWEEP_ACTIVE:
        *id = (int64_t)e->args[0];
        return 2;
    case TDX_EV_GC_SWEEP_BEGIN:
    case TDX_EV_GC_SWEEP_END:
        *id = e->p;
        return 2;
    case TDX_EV_GC_MARK_ASSIST_ACTIVE:
        *id = (int64_t)e->args[0];
        return 1;
    default:
        *id = e->g;
        return 1;
    }
}

static void range_event(tdx_gostats *s, const tdx_event *e, const tdx_gen *g) {
    char buf[1200];
    int n = tdx_range_name(e, g, buf, sizeof buf);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof buf) n = (int)sizeof buf - 1;
    uint32_t name = tdx_vgstore_intern(&s->store, buf, (size_t)n);
    int64_t sid = 0;
    int scope = range_scope(e, &sid);
    grec *r = NULL;
    if (e->kind == TDX_KIND_RANGE_END) {
        if (scope == 1) {
            r = g_lookup(s, sid);
        } else if (scope == 2) {
            int64_t goid;
            if (pm_get(&s->ranges_p, (uint64_t)sid, name, &goid)) {
                /* only when it ends on the goroutine it began on */
                if (goid == e->g) r = g_lookup(s, goid);
                pm_del(&s->ranges_p, (uint64_t)sid, name);
            }
        }
        if (!r) return;
        int64_t ts = kv_get(&r->last_range, name);
        if (ts == 0) return;
        kv_add(s, &r->range, name, tdx_wsub(e->time, ts));
        kv_del(s, &r->last_range, name);
        return;
    }
    if (scope == 1) {
        r = g_lookup(s, sid);
    } else if (scope == 2) {
        /* a proc's range is credited to the goroutine it began on */
        r = g_lookup(s, e->g);
        if (r && pm_put(&s->ranges_p, (uint64_t)sid, name, e->g)) s->oom = 1;
    }
    if (!r) return;
    tdx_gostat_kv *k = kv_slot(s, &r->last_range, name);
    if (!k) return;
    if (e->kind == TDX_KIND_RANGE_ACTIVE) {
        if (k->ns) kv_add(s, &r->range, name, tdx_wsub(s->sync_ts, k->ns));
        /* (kv_add may have moved nothing: last_range and range are separate vectors) */
        k->ns = s->sync_ts;
    } else {
        k->ns = e->time;
    }
}

/* ---- a record's bytes (the spilled records, and gsindex.c's regrouping sort) ---- */

enum { F_START = 1, F_END = 2 };

static int put_z(tdx_buf *b, int64_t v) {
    return tdx_buf_uvarint(b, tdx_zigzag(v));
}

static int put_kvs(tdx_buf *b, const tdx_gostat_kv *kv, size_t n) {
    int rc = tdx_buf_uvarint(b, n);
    for (size_t i = 0; i < n; i++) rc |= tdx_buf_uvarint(b, kv[i].key) | put_z(b, kv[i].ns);
    return rc;
}

int tdx_gostat_encode(tdx_buf *b, const tdx_gostat *g) {
    unsigned flags = (g->start ? F_START : 0) | (g->end ? F_END : 0);
    int rc = put_z(b, g->id) | tdx_buf_uvarint(b, flags) | put_z(b, g->creation);
    if (g->start) rc |= put_z(b, tdx_wsub(g->start, g->creation));
    if (g->end) rc |= put_z(b, tdx_wsub(g->end, g->creation));
    rc |= put_z(b, g->total) | put_z(b, g->exec) | put_z(b, g->sched) | put_z(b, g->syscall) |
          put_z(b, g->syscall_block) | tdx_buf_uvarint(b, g->pc) | put_kvs(b, g->block, g->nblock) |
          put_kvs(b, g->range, g->nrange);
    return rc ? -1 : 0;
}

int tdx_gostat_decode(const uint8_t **p, const uint8_t *end, uint64_t nstr, tdx_gostat *g,
                      tdx_gostat_kvvec *kv) {
    tdx_deser cur = {*p, end, 0}, *c = &cur;
    memset(g, 0, sizeof *g);
    g->id = tdx_deser_i(c);
    uint64_t flags = tdx_deser_u(c);
    g->creation = tdx_deser_i(c);
    if (flags & F_START) g->start = tdx_wadd(g->creation, tdx_deser_i(c));
    if (flags & F_END) g->end = tdx_wadd(g->creation, tdx_deser_i(c));
    g->total = tdx_deser_i(c);
    g->exec = tdx_deser_i(c);
    g->sched = tdx_deser_i(c);
    g->syscall = tdx_deser_i(c);
    g->syscall_block = tdx_deser_i(c);
    g->pc = tdx_deser_u(c);
    kv->n = 0;
    size_t nb = 0;
    for (int m = 0; m < 2 && !c->bad; m++) {
        uint64_t n = tdx_deser_u(c);
        if (n > (uint64_t)(c->end - c->p) || tdx_vec_reserve(kv, kv->n + (size_t)n)) return -1;
        for (uint64_t i = 0; i < n && !c->bad; i++) {
            uint64_t key = tdx_deser_u(c);
            int64_t ns = tdx_deser_i(c);
            if (key > nstr) return -1;
            kv->v[kv->n++] = (tdx_gostat_kv){(uint32_t)key, ns};
        }
        if (m == 0) nb = kv->n;
    }
    if (c->bad || flags > (F_START | F_END) || (!!(flags & F_START) != (g->start != 0)) ||
        (!!(flags & F_END) != (g->end != 0)))
        return -1;
    g->block = kv->v;
    g->nblock = nb;
    g->range = kv->v ? kv->v + nb : NULL; /* (NULL + 0 is undefined) */
    g->nrange = kv->n - nb;
    *p = c->p;
    return 0;
}

/* ---- spilling ended goroutines ---- */

/* A record as tdx_gostat_encode codes it, after its name. */
static int spill_one(tdx_gostats *s, grec *r, tdx_err *err) {
    tdx_gostat *st = &r->st;
    st->block = r->block.v.v, st->nblock = r->block.v.n;
    st->range = r->range.v.v, st->nrange = r->range.v.n;
    tdx_buf *b = &s->tmp;
    b->n = 0;
    if (tdx_buf_uvarint(b, st->name) || tdx_gostat_encode(b, st))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return tdx_xsort_add(s->spill, (uint64_t)st->id ^ TDX_XSORT_SIGN, s->seq++, b->v, b->n, err);
}

int tdx_gostats_event(tdx_gostats *s, const tdx_event *e, const tdx_gen *g, tdx_err *err) {
    if (e->kind == TDX_KIND_SYNC) { /* string ids are per generation */
        tdx_hmap_clear(&s->strs);
        tdx_hmap_clear(&s->rstrs);
    }
    s->nev++;
    if (!s->started) s->t0 = s->sync_ts = e->time, s->started = true;
    s->last_ts = e->time;
    switch (e->kind) {
    case TDX_KIND_SYNC:
        s->sync_ts = e->time;
        break;
    case TDX_KIND_STATE_TRANSITION:
        if (e->res_kind == TDX_RES_GOROUTINE) {
            if (go_transition(s, e, g, err)) return -1;
        } else if (e->res_kind == TDX_RES_PROC) {
            proc_transition(s, e);
        }
        break;
    case TDX_KIND_RANGE_BEGIN:
    case TDX_KIND_RANGE_ACTIVE:
    case TDX_KIND_RANGE_END:
        range_event(s, e, g);
        break;
    case TDX_KIND_REGION_BEGIN:
    case TDX_KIND_REGION_END:
        if (s->regioning) region_event(s, e, g);
        break;
    default:
        break;
    }
    if (s->detail.failed) {
        *err = s->detail.err;
        return -1;
    }
    if (s->oom || s->store.oom) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return 0;
}

int tdx_gostats_finish(tdx_gostats *s, tdx_err *err) {
    /* Finalize: a record already ended is unchanged (its total is set, nothing is pending). */
    for (size_t i = 0; i < s->gs.n; i++) {
        grec *r = &s->gs.v[i];
        if (!r->used) continue;
        finalize(s, r, s->last_ts);
        tdx_goprof_settle(&s->prof, &r->prof, r->st.end ? r->st.end : s->last_ts, r->st.name);
        /* regions still open end with the trace (cmd/trace's end: the last Sync) */
        regions_close(s, r, s->sync_ts);
        if (spill_one(s, r, err)) return -1;
    }
    if (s->oom) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return tdx_gostats_rewind(s, err);
}

int tdx_gostats_rewind(tdx_gostats *s, tdx_err *err) {
    s->have = 0;
    return tdx_xsort_rewind(s->spill, err);
}

/* ---- reading ---- */

static int decode(tdx_gostats *s, const tdx_buf *b, tdx_gostat *o, tdx_err *err) {
    const uint8_t *p = b->v, *end = b->v + b->n;
    uint64_t name;
    int k = tdx_uvarint(p, end, &name);
    if (k >= 0) p += k;
    if (k < 0 || name > UINT32_MAX || tdx_gostat_decode(&p, end, UINT32_MAX, o, &s->out_kv) ||
        p != end)
        return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET,
                        "goroutine statistics: a spilled record is damaged");
    o->name = (uint32_t)name;
    /* Finalize at the end sets a total still 0 (a record spilled before it came) */
    if (o->total == 0) o->total = tdx_wsub(s->last_ts, o->creation);
    return 0;
}

static int fetch(tdx_gostats *s, tdx_err *err) {
    int rc = tdx_xsort_next(s->spill, &s->next, err);
    if (rc < 0) return -1;
    if (rc == 0) {
        s->have = 2;
        return 0;
    }
    s->nbuf.n = 0;
    if (s->next.n && tdx_buf_append(&s->nbuf, s->next.p, s->next.n))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    s->have = 1;
    return 0;
}

int tdx_gostats_next(tdx_gostats *s, tdx_gostat *out, tdx_err *err) {
    if (s->have == 0 && fetch(s, err)) return -1;
    if (s->have == 2) return 0;
    /* The last record of an id is the one Go's map kept. */
    uint64_t key = s->next.k1;
    for (;;) {
        tdx_buf t = s->cur;
        s->cur = s->nbuf;
        s->nbuf = t;
        if (fetch(s, err)) return -1;
        if (s->have == 2 || s->next.k1 != key) break;
    }
    return decode(s, &s->cur, out, err) ? -1 : 1;
}
