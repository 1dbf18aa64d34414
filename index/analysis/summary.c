/* summary.c: the parts of Go's internal/trace Summarizer the viewer needs (goroutine lifetimes and
 * names, user tasks and regions), and RelatedGoroutinesV2.
 *
 * Where Go would dereference a missing goroutine record (a region or transition for a goroutine
 * the summarizer never saw created), Go panics; here the event is recorded without the goroutine
 * part, so damaged or converted traces never crash. */
#include "index/analysis/summary.h"

#include <stdlib.h>
#include <string.h>

#include "core/spec.h"

/* ---- pair maps ---- */

static size_t pair_hash(uint64_t a, uint64_t b) {
    return (size_t)tdx_hash64(a * 0x9e3779b97f4a7c15ULL ^ tdx_hash64(b));
}

static void pairmap_free(tdx_pairmap *m) {
    free(m->a);
    free(m->b);
    free(m->v);
    memset(m, 0, sizeof *m);
}

static int pairmap_grow(tdx_pairmap *m) {
    size_t cap = m->mask ? (m->mask + 1) * 2 : 64;
    uint64_t *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b);
    uint32_t *v = calloc(cap, sizeof *v);
    if (!a || !b || !v) {
        free(a);
        free(b);
        free(v);
        return -1;
    }
    if (m->v) {
        for (size_t i = 0; i <= m->mask; i++) {
            if (!m->v[i]) continue;
            size_t j = pair_hash(m->a[i], m->b[i]) & (cap - 1);
            while (v[j]) j = (j + 1) & (cap - 1);
            a[j] = m->a[i];
            b[j] = m->b[i];
            v[j] = m->v[i];
        }
    }
    free(m->a);
    free(m->b);
    free(m->v);
    m->a = a;
    m->b = b;
    m->v = v;
    m->mask = cap - 1;
    return 0;
}

/* Inserts (a, b) -> val unless present; *added tells which. -1 on OOM. */
static int pairmap_add(tdx_pairmap *m, uint64_t a, uint64_t b, uint32_t val, int *added) {
    *added = 0;
    if ((m->n + 1) * 2 > (m->mask ? m->mask + 1 : 0) && pairmap_grow(m)) return -1;
    size_t i = pair_hash(a, b) & m->mask;
    for (; m->v[i]; i = (i + 1) & m->mask)
        if (m->a[i] == a && m->b[i] == b) return 0;
    m->a[i] = a;
    m->b[i] = b;
    m->v[i] = val + 1;
    m->n++;
    *added = 1;
    return 0;
}

/* ---- records ---- */

int tdx_summary_init(tdx_summary *s, tdx_vgstore *store) {
    memset(s, 0, sizeof *s);
    s->store = store;
    tdx_vgcache_init(&s->cache);
    return 0;
}

void tdx_summary_free(tdx_summary *s) {
    for (size_t i = 0; i < s->gs.n; i++) tdx_vec_free(&s->gs.v[i].active);
    for (size_t i = 0; i < s->tasks.n; i++) {
        tdx_vec_free(&s->tasks.v[i].children);
        tdx_vec_free(&s->tasks.v[i].regions);
        tdx_vec_free(&s->tasks.v[i].goroutines);
    }
    tdx_vec_free(&s->gs);
    tdx_hmap_free(&s->g_idx);
    tdx_vec_free(&s->regions);
    tdx_vec_free(&s->tasks);
    tdx_hmap_free(&s->t_idx);
    tdx_vec_free(&s->edge_a);
    tdx_vec_free(&s->edge_b);
    tdx_vec_free(&s->edge_ev);
    pairmap_free(&s->edges);
    pairmap_free(&s->task_gs);
    tdx_vgcache_free(&s->cache);
}

static tdx_sumg *g_lookup(tdx_summary *s, int64_t id) {
    uint32_t i = tdx_hmap_get(&s->g_idx, (uint64_t)id);
    return i == TDX_HMAP_EMPTY ? NULL : &s->gs.v[i];
}

const tdx_sumg *tdx_summary_goroutine(const tdx_summary *s, int64_t id) {
    uint32_t i = tdx_hmap_get(&s->g_idx, (uint64_t)id);
    return i == TDX_HMAP_EMPTY ? NULL : &s->gs.v[i];
}

uint32_t tdx_summary_task(const tdx_summary *s, uint64_t id) {
    uint32_t i = tdx_hmap_get(&s->t_idx, id);
    return i == TDX_HMAP_EMPTY ? TDX_SUM_NONE : i;
}

bool tdx_summary_is_system(const tdx_summary *s, uint32_t name) {
    tdx_str n = tdx_vgstore_str(s->store, name);
    if (n.n == 0) return true;
    if (n.n == 12 && memcmp(n.p, "runtime.main", 12) == 0) return false;
    return n.n >= 8 && memcmp(n.p, "runtime.", 8) == 0;
}

uint32_t tdx_summary_task_add(tdx_summary *s, uint64_t id) {
    uint32_t i = tdx_hmap_get(&s->t_idx, id);
    if (i != TDX_HMAP_EMPTY) return i;
    tdx_sumtask t;
    memset(&t, 0, sizeof t);
    t.id = id;
    t.parent = TDX_SUM_NONE;
    if (s->tasks.n >= UINT32_MAX - 1 || tdx_vec_push(&s->tasks, t) ||
        tdx_hmap_put(&s->t_idx, id, (uint32_t)(s->tasks.n - 1))) {
        s->oom = 1;
        return TDX_SUM_NONE;
    }
    return (uint32_t)(s->tasks.n - 1);
}

static void task_add_g(tdx_summary *s, uint32_t ti, int64_t g) {
    int added;
    if (pairmap_add(&s->task_gs, ti, (uint64_t)g, 0, &added)) {
        s->oom = 1;
        return;
    }
    if (added && tdx_vec_push(&s->tasks.v[ti].goroutines, g)) s->oom = 1;
}

static uint32_t region_add(tdx_summary *s, uint64_t task, uint32_t name) {
    tdx_sumregion r;
    memset(&r, 0, sizeof r);
    r.seq = s->nevents - 1;
    r.task = task;
    r.name = name;
    if (s->regions.n >= UINT32_MAX - 1 || tdx_vec_push(&s->regions, r)) {
        s->oom = 1;
        return TDX_SUM_NONE;
    }
    return (uint32_t)(s->regions.n - 1);
}

static tdx_sumev ev_ref(tdx_summary *s, const tdx_event *e, const tdx_gen *g) {
    tdx_sumev r = {e->time, e->g, tdx_vgstore_gen_stack(s->store, &s->cache, g, e->stack), true};
    return r;
}

/* GoroutineSummary.finalize with a trigger event. */
static void g_finalize(tdx_summary *s, tdx_sumg *gr, const tdx_sumev *trigger) {
    gr->end = trigger->time;
    if (!tdx_summary_is_system(s, gr->name)) {
        for (size_t i = 0; i < gr->active.n; i++)
            if (gr->active.v[i] != TDX_SUM_SYNTH) s->regions.v[gr->active.v[i]].end = *trigger;
    }
    gr->active.n = 0;
}

static bool gen_str_is(const tdx_gen *g, uint32_t str, const char *lit) {
    if (!g || str >= g->strings.n) return lit[0] == 0;
    tdx_str t = tdx_gen_str(g, str);
    size_t n = strlen(lit);
    return t.n == n && memcmp(t.p, lit, n) == 0;
}

static void go_transition(tdx_summary *s, const tdx_event *e, const tdx_gen *g, uint64_t idx) {
    uint8_t from = e->from, to = e->to;
    if (from == to) return;
    if (from == TDX_GO_WAITING && e->g != TDX_NO_ID) {
        int added;
        uint32_t ei = (uint32_t)s->edge_a.n;
        if (pairmap_add(&s->edges, (uint64_t)e->g, (uint64_t)e->res, ei, &added) ||
            (added && (tdx_vec_push(&s->edge_a, e->g) || tdx_vec_push(&s->edge_b, e->res) ||
                       tdx_vec_push(&s->edge_ev, idx))))
            s->oom = 1;
    }
    tdx_sumg *gr;
    if (from == TDX_GO_UNDETERMINED || from == TDX_GO_NOTEXIST) {
        const tdx_sumg *creator = g_lookup(s, e->g);
        bool inherit = creator && creator->active.n > 0;
        tdx_sumg ng;
        memset(&ng, 0, sizeof ng);
        ng.id = e->res;
        ng.creation = from == TDX_GO_UNDETERMINED ? s->sync_ts : e->time;
        if (inherit && tdx_vec_push(&ng.active, TDX_SUM_SYNTH)) {
            s->oom = 1;
            return;
        }
        uint32_t old = tdx_hmap_get(&s->g_idx, (uint64_t)e->res);
        if (old != TDX_HMAP_EMPTY) { /* a fresh record replaces the old one */
            /* gs.v is set while g_idx has keys */
            // NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
            tdx_vec_free(&s->gs.v[old].active);
            s->gs.v[old] = ng;
            gr = &s->gs.v[old];
        } else {
            /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): gs.v is set while gs.cap > 0 */
            if (s->gs.n >= UINT32_MAX - 1 || tdx_vec_push(&s->gs, ng) ||
                tdx_hmap_put(&s->g_idx, (uint64_t)e->res, (uint32_t)(s->gs.n - 1))) {
                tdx_vec_free(&ng.active);
                s->oom = 1;
                return;
            }
            gr = &s->gs.v[s->gs.n - 1];
        }
    } else {
        gr = g_lookup(s, e->res);
        if (!gr) return; /* Go: nil record (never happens for a consistent trace) */
    }
    /* Name from the outermost frame of the transition stack. */
    if (gr->name == 0 && g && e->tstack && e->tstack < g->stacks.n) {
        const tdx_stack *st = &g->stacks.v[e->tstack];
        if (st->nframes) {
            const tdx_frame *f = &g->frames.v[g->stack_frames.v[st->first + st->nframes - 1]];
            gr->name = tdx_vgstore_gen_string(s->store, &s->cache, g, f->func);
            gr->pc = f->pc;
        }
    }
    if (to == TDX_GO_RUNNING && gr->start == 0) gr->start = e->time;
    /* Blocked "forever" is like goroutine death. */
    bool dies = to == TDX_GO_NOTEXIST || (to == TDX_GO_WAITING && e->type == TDX_EV_GO_BLOCK &&
                                          gen_str_is(g, e->str[0], "forever"));
    if (dies) {
        tdx_sumev t = ev_ref(s, e, g);
        g_finalize(s, gr, &t);
        gr->gone = to == TDX_GO_NOTEXIST;
    }
}

int tdx_summary_event(tdx_summary *s, const tdx_event *e, const tdx_gen *g) {
    if (e->kind == TDX_KIND_SYNC) tdx_vgcache_reset(&s->cache);
    uint64_t idx = s->nevents++;
    if (idx == 0) s->t0 = e->time;
    if (s->sync_ts == 0) s->sync_ts = e->time;
    s->last_ts = e->time;
    switch (e->kind) {
    case TDX_KIND_SYNC:
        s->sync_ts = e->time;
        s->valid_events = s->nevents;
        s->valid_end = e->time;
        s->valid_max_proc = s->max_proc;
        break;
    case TDX_KIND_STATE_TRANSITION:
        if (e->res_kind == TDX_RES_GOROUTINE)
            go_transition(s, e, g, idx);
        else if (e->res_kind == TDX_RES_PROC && e->res > s->max_proc)
            s->max_proc = e->res;
        break;
    case TDX_KIND_REGION_BEGIN: {
        uint32_t name = tdx_vgstore_gen_string(s->store, &s->cache, g, e->str[0]);
        uint32_t ri = region_add(s, e->args[0], name);
        if (ri == TDX_SUM_NONE) break;
        s->regions.v[ri].start = ev_ref(s, e, g);
        tdx_sumg *gr = g_lookup(s, e->g);
        if (gr && tdx_vec_push(&gr->active, ri)) s->oom = 1;
        uint32_t ti = tdx_summary_task_add(s, e->args[0]);
        if (ti == TDX_SUM_NONE) break;
        if (tdx_vec_push(&s->tasks.v[ti].regions, ri)) s->oom = 1;
        task_add_g(s, ti, gr ? gr->id : e->g);
        break;
    }
    case TDX_KIND_REGION_END: {
        tdx_sumg *gr = g_lookup(s, e->g);
        if (gr && gr->active.n > 0) {
            uint32_t ri = gr->active.v[--gr->active.n];
            if (ri != TDX_SUM_SYNTH) s->regions.v[ri].end = ev_ref(s, e, g);
            break;
        }
        /* An end without a start: fabricate the region now. */
        uint32_t name = tdx_vgstore_gen_string(s->store, &s->cache, g, e->str[0]);
        uint32_t ri = region_add(s, e->args[0], name);
        if (ri == TDX_SUM_NONE) break;
        s->regions.v[ri].end = ev_ref(s, e, g);
        uint32_t ti = tdx_summary_task_add(s, e->args[0]);
        if (ti == TDX_SUM_NONE) break;
        task_add_g(s, ti, gr ? gr->id : e->g);
        if (tdx_vec_push(&s->tasks.v[ti].regions, ri)) s->oom = 1;
        break;
    }
    case TDX_KIND_TASK_BEGIN:
    case TDX_KIND_TASK_END: {
        bool begin = e->kind == TDX_KIND_TASK_BEGIN;
        uint64_t parent = begin ? e->args[1] : e->args[2];
        uint32_t ti = tdx_summary_task_add(s, e->args[0]);
        if (ti == TDX_SUM_NONE) break;
        s->tasks.v[ti].name = tdx_vgstore_gen_string(s->store, &s->cache, g, e->str[0]);
        task_add_g(s, ti, e->g);
        tdx_sumev r = ev_ref(s, e, g);
        if (begin)
            s->tasks.v[ti].start = r;
        else
            s->tasks.v[ti].end = r;
        if (parent != TDX_NO_TASK && s->tasks.v[ti].parent == TDX_SUM_NONE) {
            uint32_t pi = tdx_summary_task_add(s, parent);
            if (pi == TDX_SUM_NONE) break;
            s->tasks.v[ti].parent = pi;
            s->tasks.v[ti].parent_ev = s->nevents - 1;
            if (tdx_vec_push(&s->tasks.v[pi].children, ti)) s->oom = 1;
        }
        break;
    }
    case TDX_KIND_LOG: {
        uint32_t ti = tdx_summary_task_add(s, e->args[0]);
        if (ti == TDX_SUM_NONE) break;
        task_add_g(s, ti, e->g);
        tdx_sumtask *t = &s->tasks.v[ti];
        t->nlogs++;
        if (!t->first_log.present || e->time < t->first_log.time) t->first_log = ev_ref(s, e, g);
        break;
    }
    default:
        break;
    }
    return s->oom || s->store->oom ? -1 : 0;
}

/* ---- queries ---- */

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int tdx_summary_related(const tdx_summary *s, int64_t goid, uint64_t nevents, int64_t **out,
                        size_t *n) {
    *out = NULL;
    *n = 0;
    tdx_hmap set = {0}, next = {0};
    TDX_VEC(int64_t) list = {0}, nlist = {0};
    int rc = -1;
    if (tdx_hmap_put(&set, (uint64_t)goid, 1) || tdx_vec_push(&list, goid)) goto out;
    for (int round = 0; round < 2; round++) {
        tdx_hmap_clear(&next);
        nlist.n = 0;
        for (size_t i = 0; i < list.n; i++)
            if (tdx_hmap_put(&next, (uint64_t)list.v[i], 1) || tdx_vec_push(&nlist, list.v[i]))
                goto out;
        for (size_t k = 0; k < s->edge_a.n; k++) {
            if (s->edge_ev.v[k] >= nevents) continue;
            if (tdx_hmap_get(&set, (uint64_t)s->edge_b.v[k]) == TDX_HMAP_EMPTY) continue;
            if (tdx_hmap_get(&next, (uint64_t)s->edge_a.v[k]) != TDX_HMAP_EMPTY) continue;
            if (tdx_hmap_put(&next, (uint64_t)s->edge_a.v[k], 1) ||
                tdx_vec_push(&nlist, s->edge_a.v[k]))
                goto out;
        }
        tdx_hmap tmp = set;
        set = next;
        next = tmp;
        TDX_VEC(int64_t) tl = {list.v, list.n, list.cap};
        list.v = nlist.v;
        list.n = nlist.n;
        list.cap = nlist.cap;
        nlist.v = tl.v;
        nlist.n = tl.n;
        nlist.cap = tl.cap;
    }
    if (list.n > 1) qsort(list.v, list.n, sizeof *list.v, cmp_i64);
    *out = list.v;
    *n = list.n;
    list.v = NULL;
    rc = 0;
out:
    tdx_hmap_free(&set);
    tdx_hmap_free(&next);
    tdx_vec_free(&list);
    tdx_vec_free(&nlist);
    return rc;
}

typedef struct sort_ctx {
    const tdx_summary *s;
    int64_t t0, tend;
} sort_ctx;

/* cmd/trace's comparison of two tasks: by start time (T0 for a missing start) unless both lack a
 * start event, then by end time (Tend for a missing end). */
static int task_cmp(const sort_ctx *c, uint32_t x, uint32_t y) {
    const tdx_sumtask *a = &c->s->tasks.v[x], *b = &c->s->tasks.v[y];
    if (a->start.present || b->start.present) {
        int64_t as = a->start.present ? a->start.time : c->t0;
        int64_t bs = b->start.present ? b->start.time : c->t0;
        return as < bs ? -1 : as > bs;
    }
    int64_t ae = a->end.present ? a->end.time : c->tend;
    int64_t be = b->end.present ? b->end.time : c->tend;
    return ae < be ? -1 : ae > be;
}

static void merge_sort(const sort_ctx *c, uint32_t *v, uint32_t *tmp, size_t n) {
    if (n < 2) return;
    size_t h = n / 2;
    merge_sort(c, v, tmp, h);
    merge_sort(c, v + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = task_cmp(c, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

int tdx_summary_task_list(const tdx_summary *s, uint32_t task, int64_t t0, int64_t tend,
                          uint32_t **out, size_t *n) {
    *out = NULL;
    *n = 0;
    TDX_VEC(uint32_t) list = {0};
    TDX_VEC(uint32_t) stack = {0};
    uint8_t *seen = calloc(s->tasks.n ? s->tasks.n : 1, 1);
    uint32_t *tmp = NULL;
    int rc = -1;
    if (!seen || task >= s->tasks.n || tdx_vec_push(&stack, task)) goto out;
    /* Pre-order: a task, then each child's list in attach order (a cycle is cut). */
    while (stack.n) {
        uint32_t t = stack.v[--stack.n];
        if (seen[t]) continue;
        seen[t] = 1;
        if (tdx_vec_push(&list, t)) goto out;
        const tdx_sumtask *ts = &s->tasks.v[t];
        for (size_t i = ts->children.n; i-- > 0;)
            if (!seen[ts->children.v[i]] && tdx_vec_push(&stack, ts->children.v[i])) goto out;
    }
    tmp = malloc((list.n ? list.n : 1) * sizeof *tmp); /* malloc(0) may return NULL */
    if (!tmp) goto out;
    sort_ctx c = {s, t0, tend};
    merge_sort(&c, list.v, tmp, list.n);
    *out = list.v;
    *n = list.n;
    list.v = NULL;
    rc = 0;
out:
    free(seen);
    free(tmp);
    tdx_vec_free(&list);
    tdx_vec_free(&stack);
    return rc;
}
