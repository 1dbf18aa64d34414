/* tracegen_sched.c: the simulated Go runtime behind tracegen: threads (Ms) with procs (Ps) run
 * goroutines of a busy HTTP service (connection handlers, a worker pool, fan-out children,
 * tickers, log writers, GC workers) under a scheduler modelled on Go's: local and global run
 * queues, work stealing, spinning threads, netpoller, timers, sysmon retaking procs from syscalls,
 * GC cycles with stop-the-world phases, mark assists and sweeping.
 *
 * Threads are stepped in order of their next-step time; one step runs a whole scheduling decision
 * or goroutine time slice and writes its events with that thread's own clock. Whenever a step
 * touches a goroutine or proc that another thread touched last, its event time is pushed past
 * that thread's event, so every cross-thread dependency also goes forward in time, which is what
 * Go's ordering of per-thread batches relies on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tracegen.h"

#define US(x) ((uint64_t)((x) * 15.625)) /* microseconds to ticks */
#define MSEC(x) ((uint64_t)((x) * 15625.0))
#define GP(i) (&s->gs[i])

static double ln_tab[1024];  /* exp(0.9 * z) for z at 1024 normal quantiles */
static double exp_tab[1024]; /* exponential quantiles, mean 1 */

static uint64_t lognorm(tg_sim *s, uint64_t median) {
    return (uint64_t)((double)median * ln_tab[tg_rand(&s->rng) & 1023]) + 1;
}
static uint64_t expo(tg_sim *s, uint64_t mean) {
    return (uint64_t)((double)mean * exp_tab[tg_rand(&s->rng) & 1023]) + 1;
}

/* Inverse of the standard normal CDF (Acklam's rational approximation; plenty for a workload). */
static double norm_inv(double p) {
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00, 2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                               2.445134137142996e+00, 3.754408661907416e+00};
    if (p < 0.02425) {
        double q = sqrt(-2 * log(p));
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    if (p > 1 - 0.02425) return -norm_inv(1 - p);
    double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

/* ---- the step heap: threads ordered by the time of their next step ---- */

static bool m_less(const tg_sim *s, uint32_t a, uint32_t b) {
    const tg_m *x = s->ms[a], *y = s->ms[b];
    return x->clock < y->clock || (x->clock == y->clock && a < b);
}

static void hswap(tg_sim *s, uint32_t i, uint32_t j) {
    uint32_t a = s->step_heap[i], b = s->step_heap[j];
    s->step_heap[i] = b;
    s->step_heap[j] = a;
    s->ms[b]->hidx = i;
    s->ms[a]->hidx = j;
}

static void hup(tg_sim *s, uint32_t i) {
    while (i > 0) {
        uint32_t par = (i - 1) / 2;
        if (!m_less(s, s->step_heap[i], s->step_heap[par])) break;
        hswap(s, i, par);
        i = par;
    }
}

static void hdown(tg_sim *s, uint32_t i) {
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, mn = i;
        if (l < s->nstep && m_less(s, s->step_heap[l], s->step_heap[mn])) mn = l;
        if (r < s->nstep && m_less(s, s->step_heap[r], s->step_heap[mn])) mn = r;
        if (mn == i) break;
        hswap(s, i, mn);
        i = mn;
    }
}

static void m_schedule(tg_sim *s, uint32_t mi) {
    tg_m *m = s->ms[mi];
    if (m->hidx != UINT32_MAX) {
        hup(s, m->hidx);
        hdown(s, m->hidx);
        return;
    }
    m->hidx = s->nstep;
    s->step_heap[s->nstep++] = mi;
    hup(s, m->hidx);
}

static void m_unschedule(tg_sim *s, uint32_t mi) {
    tg_m *m = s->ms[mi];
    uint32_t i = m->hidx;
    if (i == UINT32_MAX) return;
    uint32_t last = --s->nstep;
    if (i != last) {
        s->step_heap[i] = s->step_heap[last];
        s->ms[s->step_heap[i]]->hidx = i;
        hup(s, i);
        hdown(s, i);
    }
    m->hidx = UINT32_MAX;
}

/* ---- (time, goroutine) heaps for timers and network readiness ---- */

static void h2_push(tg_heap2 *h, uint64_t t, int32_t g) {
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 1024;
        h->t = tg_xrealloc(h->t, h->cap * sizeof *h->t);
        h->g = tg_xrealloc(h->g, h->cap * sizeof *h->g);
    }
    uint32_t i = h->n++;
    while (i > 0) {
        uint32_t par = (i - 1) / 2;
        if (h->t[par] <= t) break;
        h->t[i] = h->t[par];
        h->g[i] = h->g[par];
        i = par;
    }
    h->t[i] = t;
    h->g[i] = g;
}

static int32_t h2_pop(tg_heap2 *h) {
    int32_t top = h->g[0];
    uint64_t t = h->t[--h->n];
    int32_t g = h->g[h->n];
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, mn = l;
        if (l >= h->n) break;
        if (r < h->n && h->t[r] < h->t[l]) mn = r;
        if (h->t[mn] >= t) break;
        h->t[i] = h->t[mn];
        h->g[i] = h->g[mn];
        i = mn;
    }
    h->t[i] = t;
    h->g[i] = g;
    return top;
}

static uint64_t h2_top(const tg_heap2 *h) { return h->n ? h->t[0] : UINT64_MAX; }

/* ---- goroutines ---- */

static int32_t g_new(tg_sim *s, uint8_t role, uint8_t path) {
    int32_t gi;
    if (s->ngfree) {
        gi = s->gfree[--s->ngfree];
    } else {
        if (s->ngs == s->capgs) {
            s->capgs *= 2;
            s->gs = tg_xrealloc(s->gs, s->capgs * sizeof *s->gs);
            s->gfree = tg_xrealloc(s->gfree, s->capgs * sizeof *s->gfree);
        }
        gi = (int32_t)s->ngs++;
    }
    tg_g *g = GP(gi);
    memset(g, 0, sizeof *g);
    /* Goroutine IDs advance by one per creation; the runtime hands them out in per-P batches of
     * 16, which shows as small jumps. */
    g->goid = s->next_goid++;
    if (tg_chance(&s->rng, TG_P(0.02))) s->next_goid += tg_range(&s->rng, 1, 15);
    g->role = role;
    g->path = path;
    g->variant = (uint8_t)tg_rand(&s->rng);
    g->m = -1;
    g->peer = -1;
    s->live_gs++;
    return gi;
}

static void g_free(tg_sim *s, int32_t gi) {
    GP(gi)->status = GS_DEAD;
    s->gfree[s->ngfree++] = gi;
    s->live_gs--;
}

/* ---- event timing and the statuses a generation needs before other events ---- */

static inline uint64_t at(tg_sim *s, tg_m *m, uint64_t t) {
    if (t <= m->last_t) t = m->last_t + 1;
    /* An event and the statuses written before it must land in the same generation. */
    if (t < s->gen_next && t + TG_GEN_MARGIN >= s->gen_next) t = s->gen_next;
    if (t >= s->gen_next2)
        tg_die("internal: an event reached two generations ahead (t=%llu)", (unsigned long long)t);
    return t;
}

static void late_g(tg_sim *s, tg_g *g) {
    tg_late l = {.kind = 0, .status = g->status, .active = g->in_assist, .id = g->goid,
                 .m = (g->status == GS_SYSCALL || g->status == GS_RUNNING) ? s->ms[g->m]->tid
                                                                           : TG_NONE};
    tg_late_add(s, s->gen, &l);
}

/* Writes goroutine g's status if generation gen has not announced it yet: the runtime does this
 * before the first event of each generation that mentions a goroutine. */
static uint64_t go_status(tg_sim *s, tg_m *m, tg_g *g, uint64_t t, uint64_t gen) {
    if (g->seen_gen == gen) return t;
    if (gen > s->gen && g->seen_gen < s->gen) late_g(s, g);
    uint64_t mid = (g->status == GS_RUNNING || g->status == GS_SYSCALL) ? s->ms[g->m]->tid
                                                                        : TG_NONE;
    if (s->version >= 23 && gen == 1 && g->status == GS_WAITING && g->block_stack_cat)
        tg_ev(s, m, t, TDX_EV_GO_STATUS_STACK, 4, g->goid, mid, g->status,
              tg_stk(s, gen, g->block_stack_cat - 1));
    else
        tg_ev(s, m, t, TDX_EV_GO_STATUS, 3, g->goid, mid, g->status, 0);
    t++;
    if (g->in_assist) {
        tg_ev(s, m, t, TDX_EV_GC_MARK_ASSIST_ACTIVE, 1, g->goid, 0, 0, 0);
        t++;
    }
    g->seen_gen = gen;
    g->seq = 0;
    return t;
}

static uint64_t proc_status(tg_sim *s, tg_m *m, uint32_t pi, uint64_t t, uint64_t gen,
                            uint8_t wire) {
    tg_p *p = &s->ps[pi];
    if (p->seen_gen == gen) return t;
    if (gen > s->gen && p->seen_gen < s->gen) {
        tg_late l = {.kind = 1, .status = p->status, .active = p->in_sweep, .id = pi};
        tg_late_add(s, s->gen, &l);
    }
    tg_ev(s, m, t, TDX_EV_PROC_STATUS, 2, pi, wire, 0, 0);
    t++;
    if (p->in_sweep) {
        tg_ev(s, m, t, TDX_EV_GC_SWEEP_ACTIVE, 1, pi, 0, 0, 0);
        t++;
    }
    p->seen_gen = gen;
    p->seq = 0;
    return t;
}

static uint64_t own_status(tg_sim *s, tg_m *m, uint64_t t, uint64_t gen) {
    if (m->p >= 0) t = proc_status(s, m, (uint32_t)m->p, t, gen, s->ps[m->p].status);
    if (m->g >= 0) t = go_status(s, m, GP(m->g), t, gen);
    return t;
}

/* The time of m's next event at or after t, after any statuses of m's own proc and goroutine
 * that the event's generation still needs. */
static inline uint64_t evt(tg_sim *s, tg_m *m, uint64_t t) {
    t = at(s, m, t);
    uint64_t gen = tg_gen_of(s, t);
    if ((m->p >= 0 && s->ps[m->p].seen_gen != gen) || (m->g >= 0 && GP(m->g)->seen_gen != gen))
        t = own_status(s, m, t, gen);
    return t;
}

/* Next event of m, dt ticks after its clock; advances the clock to it. */
static inline uint64_t ue(tg_sim *s, tg_m *m, uint64_t dt) {
    uint64_t t = evt(s, m, m->clock + dt);
    m->clock = t;
    return t;
}

static inline uint64_t small_dt(tg_sim *s) { return 2 + (tg_rand(&s->rng) & 31); }

static inline uint32_t stk(tg_sim *s, uint64_t t, int cat, const tg_g *g) {
    return tg_stk(s, tg_gen_of(s, t), tg_pick(s, cat, g ? g->path : PATH_RUNTIME,
                                            g ? g->variant : 0));
}

static inline uint32_t str(tg_sim *s, uint64_t t, uint32_t si) {
    return tg_str(s, tg_gen_of(s, t), si);
}


/* ---- run queues ---- */

static uint32_t grq_len(const tg_sim *s) { return s->grq_tail - s->grq_head; }

static void grq_put(tg_sim *s, int32_t gi) {
    if (grq_len(s) == s->grq_cap) {
        uint32_t nc = s->grq_cap * 2;
        int32_t *n = tg_xmalloc(nc * sizeof *n);
        for (uint32_t i = 0; i < s->grq_cap; i++)
            n[i] = s->grq[(s->grq_head + i) & (s->grq_cap - 1)];
        free(s->grq);
        s->grq = n;
        s->grq_tail = s->grq_cap;
        s->grq_head = 0;
        s->grq_cap = nc;
    }
    s->grq[s->grq_tail++ & (s->grq_cap - 1)] = gi;
}

static int32_t grq_get(tg_sim *s) {
    if (s->grq_head == s->grq_tail) return -1;
    return s->grq[s->grq_head++ & (s->grq_cap - 1)];
}

static uint32_t runq_len(const tg_p *p) { return p->rq_tail - p->rq_head + (p->runnext >= 0); }

/* Go's runqput: `next` puts the goroutine in runnext (it runs next, the previous runnext moves
 * to the tail); a full local queue spills half of itself to the global queue. */
static void runq_put(tg_sim *s, tg_p *p, int32_t gi, bool next) {
    if (next) {
        int32_t old = p->runnext;
        p->runnext = gi;
        if (old < 0) return;
        gi = old;
    }
    if (p->rq_tail - p->rq_head == TG_RUNQ)
        for (int i = 0; i < TG_RUNQ / 2; i++) grq_put(s, p->rq[p->rq_head++ % TG_RUNQ]);
    p->rq[p->rq_tail++ % TG_RUNQ] = gi;
}

static int32_t runq_get(tg_p *p) {
    if (p->runnext >= 0) {
        int32_t gi = p->runnext;
        p->runnext = -1;
        return gi;
    }
    if (p->rq_head == p->rq_tail) return -1;
    return p->rq[p->rq_head++ % TG_RUNQ];
}

static bool any_runnable(const tg_sim *s) {
    if (grq_len(s)) return true;
    for (int i = 0; i < s->procs; i++)
        if (runq_len(&s->ps[i])) return true;
    return false;
}

/* ---- threads ---- */

static uint32_t m_new(tg_sim *s) {
    if (s->nms >= s->maxms) tg_die("internal: too many threads");
    tg_m *m = tg_xcalloc(1, sizeof *m);
    m->idx = s->nms;
    m->tid = s->next_tid;
    /* Linux hands out thread IDs in creation order; later threads see other processes' churn. */
    s->next_tid += s->nms < 6 ? 1 : tg_range(&s->rng, 1, 700);
    m->p = m->g = m->wake_p = -1;
    m->hidx = UINT32_MAX;
    m->state = MS_PARKED;
    for (int k = 0; k < 2; k++) m->b[k].data = tg_xmalloc(TG_BUFCAP);
    s->ms[s->nms++] = m;
    return m->idx;
}

/* An idle proc for a thread to acquire: the most recently idled one, as pidleget does. */
static int32_t idle_p(const tg_sim *s) {
    int32_t best = -1;
    for (int i = 0; i < s->procs; i++) {
        const tg_p *p = &s->ps[i];
        if (p->status == PS_IDLE && !p->reserved &&
            (best < 0 || p->last_t > s->ps[best].last_t))
            best = i;
    }
    return best;
}

static int32_t take_idle_m(tg_sim *s) {
    if (s->nidle_m) {
        uint32_t k = tg_below(&s->rng, s->nidle_m);
        uint32_t mi = s->idle_m[k];
        s->idle_m[k] = s->idle_m[--s->nidle_m];
        return (int32_t)mi;
    }
    if (s->nms < s->maxms) return (int32_t)m_new(s);
    if (s->netpoll_m >= 0) { /* netpollBreak: the thread blocked in netpoll takes the work */
        int32_t mi = s->netpoll_m;
        s->netpoll_m = -1;
        return mi;
    }
    return -1;
}

/* startm: a thread wakes up and will acquire proc pi (ProcStart) a few microseconds later. */
static void startm(tg_sim *s, int32_t pi, uint64_t t, bool spinning) {
    int32_t mi = take_idle_m(s);
    if (mi < 0) return;
    tg_m *m = s->ms[mi];
    s->ps[pi].reserved = 1;
    m->wake_p = pi;
    m->state = MS_WAKE;
    if (spinning) {
        m->spinning = 1;
        s->nspinning++;
    }
    uint64_t w = t + tg_range(&s->rng, US(3), US(40));
    m->clock = w > m->last_t ? w : m->last_t + 1;
    m_schedule(s, (uint32_t)mi);
}

/* wakep: new work and an idle proc, and nobody already looking for work. */
static void wakep(tg_sim *s, uint64_t t) {
    if (s->nspinning) return;
    int32_t pi = idle_p(s);
    if (pi >= 0) startm(s, pi, t, true);
}

/* handoffp: a proc freed from a syscall gets a thread only if there is work for it. */
static void handoff(tg_sim *s, int32_t pi, uint64_t t) {
    if (runq_len(&s->ps[pi]) || grq_len(s) || (s->gc_marking && s->gc_dedicated_run <
                                                                 s->gc_dedicated_want))
        startm(s, pi, t, false);
}

static uint64_t next_io(const tg_sim *s) {
    uint64_t a = h2_top(&s->timers), b = h2_top(&s->netready);
    return a < b ? a : b;
}

/* A timer or network event was added: the thread blocked in netpoll may have to wake earlier. */
static void poke_netpoll(tg_sim *s, uint64_t t) {
    if (s->netpoll_m < 0) return;
    tg_m *m = s->ms[s->netpoll_m];
    if (t < m->clock) {
        m->clock = t > m->last_t ? t : m->last_t + 1;
        m_schedule(s, m->idx);
    }
}

static void park(tg_sim *s, tg_m *m) {
    if (m->spinning) {
        m->spinning = 0;
        s->nspinning--;
    }
    if (s->netpoll_m < 0) {
        /* The last thread to find nothing blocks in netpoll until the next timer or I/O. */
        s->netpoll_m = (int32_t)m->idx;
        m->state = MS_NETPOLL;
        uint64_t w = next_io(s);
        if (w > UINT64_MAX / 4) w = UINT64_MAX / 4;
        m->clock = w > m->clock ? w : m->clock + 1;
        return;
    }
    m->state = MS_PARKED;
    s->idle_m[s->nidle_m++] = m->idx;
}

/* ---- scheduler events ---- */

static inline uint64_t umax(uint64_t a, uint64_t b) { return a > b ? a : b; }

static void e_proc_start(tg_sim *s, tg_m *m, int32_t pi) {
    tg_p *p = &s->ps[pi];
    uint64_t t = at(s, m, umax(m->clock, p->last_t + 1));
    uint64_t gen = tg_gen_of(s, t);
    if (m->g >= 0) t = go_status(s, m, GP(m->g), t, gen); /* a goroutine still in its syscall */
    t = proc_status(s, m, (uint32_t)pi, t, gen, PS_IDLE);
    p->seq++;
    tg_ev(s, m, t, TDX_EV_PROC_START, 2, (uint64_t)pi, p->seq, 0, 0);
    p->status = PS_RUNNING;
    p->m = (int32_t)m->idx;
    p->last_t = t;
    m->p = pi;
    m->clock = t;
}

static void e_proc_stop(tg_sim *s, tg_m *m) {
    tg_p *p = &s->ps[m->p];
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_PROC_STOP, 0, 0, 0, 0, 0);
    p->status = PS_IDLE;
    p->m = -1;
    p->last_t = t;
    m->p = -1;
}

/* ProcSteal by thread m of proc pi, which sits in a syscall on its thread (possibly m itself). */
static void e_proc_steal(tg_sim *s, tg_m *m, int32_t pi) {
    tg_p *p = &s->ps[pi];
    tg_m *v = s->ms[p->m];
    uint64_t t = evt(s, m, umax(m->clock, p->last_t + 1));
    /* First mention of the proc in this generation: the stealer says it was abandoned in a
     * syscall, as the runtime does. */
    t = proc_status(s, m, (uint32_t)pi, t, tg_gen_of(s, t), 4);
    p->seq++;
    tg_ev(s, m, t, TDX_EV_PROC_STEAL, 3, (uint64_t)pi, p->seq, v->tid, 0);
    p->status = PS_IDLE;
    p->m = -1;
    p->last_t = t;
    v->p = -1;
    v->steal_t = t;
    m->clock = t;
}

/* GoUnblock of waiting goroutine gi by thread m (with or without a proc or goroutine). */
static void unblock_raw(tg_sim *s, tg_m *m, int32_t gi, int cat) {
    tg_g *g = GP(gi);
    uint64_t t = evt(s, m, umax(m->clock + small_dt(s), g->last_t + 1));
    t = go_status(s, m, g, t, tg_gen_of(s, t));
    g->seq++;
    uint32_t st = cat >= 0 ? stk(s, t, cat, m->g >= 0 ? GP(m->g) : NULL) : 0;
    tg_ev(s, m, t, TDX_EV_GO_UNBLOCK, 3, g->goid, g->seq, st, 0);
    g->status = GS_RUNNABLE;
    g->wake = W_NONE;
    g->last_t = t;
    m->clock = t;
}

/* Unblocks gi and queues it where Go's ready() would: runnext of the waker's proc. */
static void e_unblock(tg_sim *s, tg_m *m, int32_t gi, int cat) {
    unblock_raw(s, m, gi, cat);
    if (m->p >= 0) runq_put(s, &s->ps[m->p], gi, true);
    else grq_put(s, gi);
    wakep(s, m->clock);
}

static void e_go_start(tg_sim *s, tg_m *m, int32_t gi) {
    tg_g *g = GP(gi);
    uint64_t t = evt(s, m, umax(m->clock + small_dt(s), g->last_t + 1));
    t = go_status(s, m, g, t, tg_gen_of(s, t));
    g->seq++;
    tg_ev(s, m, t, TDX_EV_GO_START, 2, g->goid, g->seq, 0, 0);
    g->status = GS_RUNNING;
    g->m = (int32_t)m->idx;
    g->last_t = t;
    m->g = gi;
    m->clock = t;
}

/* ---- ends of a goroutine's time slice ---- */

static void slice_done(tg_sim *s, tg_m *m, uint64_t t) {
    m->g = -1;
    m->state = MS_SCHED;
    m->clock = t + tg_range(&s->rng, 2, 40);
}

static void g_block(tg_sim *s, tg_m *m, uint32_t reason, int cat, int wake, uint64_t wake_t) {
    int32_t gi = m->g;
    tg_g *g = GP(gi);
    uint64_t t = ue(s, m, small_dt(s));
    uint32_t ki = tg_pick(s, cat, g->path, g->variant);
    tg_ev(s, m, t, TDX_EV_GO_BLOCK, 2, str(s, t, reason), tg_stk(s, tg_gen_of(s, t), ki), 0, 0);
    g->status = GS_WAITING;
    g->bstk = ki + 1;
    g->last_t = t;
    g->m = -1;
    g->wake = (uint8_t)wake;
    switch (wake) {
    case W_TIMER:
        if (wake_t <= t) wake_t = t + 1;
        h2_push(&s->timers, wake_t, gi);
        poke_netpoll(s, wake_t);
        break;
    case W_NET:
        if (wake_t <= t) wake_t = t + 1;
        h2_push(&s->netready, wake_t, gi);
        poke_netpoll(s, wake_t);
        break;
    case W_SIGNAL:
        if (s->nsignal == s->capsignal) {
            s->capsignal = s->capsignal ? s->capsignal * 2 : 256;
            s->signal_pool = tg_xrealloc(s->signal_pool, s->capsignal * sizeof *s->signal_pool);
        }
        s->signal_pool[s->nsignal++] = gi;
        break;
    default: break;
    }
    slice_done(s, m, t);
}

static void g_stop(tg_sim *s, tg_m *m, uint32_t reason, int cat) {
    int32_t gi = m->g;
    tg_g *g = GP(gi);
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_GO_STOP, 2, str(s, t, reason), stk(s, t, cat, g), 0, 0);
    g->status = GS_RUNNABLE;
    g->last_t = t;
    g->m = -1;
    /* Preempted and yielding goroutines go to the global queue. */
    grq_put(s, gi);
    slice_done(s, m, t);
    wakep(s, t);
}

static void g_destroy(tg_sim *s, tg_m *m) {
    int32_t gi = m->g;
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_GO_DESTROY, 0, 0, 0, 0, 0);
    GP(gi)->last_t = t;
    g_free(s, gi);
    slice_done(s, m, t);
}

/* A syscall that blocks: the thread keeps the goroutine; sysmon or the thread itself may take
 * the proc away (mode 1: entersyscallblock hands it off at once; mode 2: self-steal). */
static void g_syscall_block(tg_sim *s, tg_m *m, int cat, uint64_t dur, int mode) {
    tg_g *g = GP(m->g);
    int32_t pi = m->p;
    tg_p *p = &s->ps[pi];
    uint64_t t = ue(s, m, small_dt(s));
    p->seq++;
    tg_ev(s, m, t, TDX_EV_GO_SYSCALL_BEGIN, 2, p->seq, stk(s, t, cat, g), 0, 0);
    p->status = PS_SYSCALL;
    p->syscall_t = t;
    p->last_t = t;
    g->status = GS_SYSCALL;
    g->last_t = t;
    if (mode == 1) {
        t = ue(s, m, small_dt(s));
        tg_ev(s, m, t, TDX_EV_PROC_STOP, 0, 0, 0, 0, 0);
        p->status = PS_IDLE;
        p->m = -1;
        p->last_t = t;
        m->p = -1;
        m->steal_t = t;
        handoff(s, pi, t);
    } else if (mode == 2) {
        m->clock += small_dt(s);
        e_proc_steal(s, m, pi);
        handoff(s, pi, m->clock);
    }
    m->state = MS_SYSCALL;
    m->clock += dur;
}

/* ---- work inside a time slice ---- */

static void cpu_account(tg_sim *s, tg_m *m, uint64_t dur) {
    /* SIGPROF every 10 ms of CPU time per thread, as setitimer profiling delivers it. */
    m->cpu += dur;
    const uint64_t period = MSEC(10);
    while (m->cpu >= period) {
        m->cpu -= period;
        uint64_t t = m->clock > m->cpu ? m->clock - m->cpu : m->clock;
        if (t < s->gen_start) t = s->gen_start;
        const tg_g *g = m->g >= 0 ? GP(m->g) : NULL;
        uint32_t ki = tg_pick(s, SK_CPU, g ? g->path : PATH_RUNTIME, g ? g->variant : 0);
        tg_cpu_sample(s, t, m->tid, m->p >= 0 ? (uint64_t)m->p : TG_NONE, g ? g->goid : 0, ki);
    }
}

static void gc_start(tg_sim *s, tg_m *m);

static void heap_alloc(tg_sim *s, tg_m *m) {
    uint64_t t = ue(s, m, 1);
    s->heap_alloc += lognorm(s, 24 * 1024);
    tg_ev(s, m, t, TDX_EV_HEAP_ALLOC, 1, s->heap_alloc, 0, 0, 0);
    if (!s->gc_marking && s->heap_alloc >= s->heap_goal - s->heap_goal / 10 &&
        t >= s->gc_sweep_end && m->g >= 0 && GP(m->g)->role < R_GCWORKER)
        gc_start(s, m);
}

static void sweep_span(tg_sim *s, tg_m *m, const tg_g *g) {
    tg_p *p = &s->ps[m->p];
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_GC_SWEEP_BEGIN, 1, stk(s, t, SK_SWEEP, g), 0, 0, 0);
    p->in_sweep = 1;
    t = ue(s, m, tg_range(&s->rng, US(0.5), US(12)));
    uint64_t swept = 8192ull << tg_below(&s->rng, 4);
    tg_ev(s, m, t, TDX_EV_GC_SWEEP_END, 2, swept, swept * tg_below(&s->rng, 3) / 4, 0, 0);
    p->in_sweep = 0;
}

static void mark_assist(tg_sim *s, tg_m *m, tg_g *g) {
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_GC_MARK_ASSIST_BEGIN, 1, stk(s, t, SK_ASSIST, g), 0, 0, 0);
    g->in_assist = 1;
    t = ue(s, m, tg_range(&s->rng, US(3), US(80)));
    tg_ev(s, m, t, TDX_EV_GC_MARK_ASSIST_END, 0, 0, 0, 0, 0);
    g->in_assist = 0;
}

static void wake_signal(tg_sim *s, tg_m *m);

/* CPU work for dur ticks: allocations (HeapAlloc), proportional sweeping after a GC, mark
 * assists during one, and the odd unlock that wakes a waiter. */
static void compute(tg_sim *s, tg_m *m, uint64_t dur) {
    uint64_t end = m->clock + dur;
    tg_g *g = GP(m->g);
    for (;;) {
        uint64_t gap = expo(s, US(3.2));
        if (m->clock + gap >= end) break;
        m->clock += gap;
        uint32_t r = (uint32_t)(tg_rand(&s->rng) & 0xffff);
        if (r < TG_P(0.80)) {
            heap_alloc(s, m);
        } else if (r < TG_P(0.88) && m->clock < s->gc_sweep_end) {
            sweep_span(s, m, g);
        } else if (r < TG_P(0.94) && s->gc_marking && m->clock >= s->gc_mark_start) {
            mark_assist(s, m, g);
        } else if (r < TG_P(0.97) && s->nsignal) {
            wake_signal(s, m);
        } else {
            heap_alloc(s, m);
        }
    }
    if (m->clock < end) m->clock = end;
    cpu_account(s, m, dur);
}

static void fast_syscall(tg_sim *s, tg_m *m, int cat) {
    tg_g *g = GP(m->g);
    tg_p *p = &s->ps[m->p];
    uint64_t t = ue(s, m, small_dt(s));
    p->seq++;
    tg_ev(s, m, t, TDX_EV_GO_SYSCALL_BEGIN, 2, p->seq, stk(s, t, cat, g), 0, 0);
    t = ue(s, m, tg_range(&s->rng, US(0.6), US(18)));
    tg_ev(s, m, t, TDX_EV_GO_SYSCALL_END, 0, 0, 0, 0, 0);
}

/* Wakes the longest waiter on a mutex, cond or select (FIFO, like sync.Mutex starvation mode). */
static void wake_signal(tg_sim *s, tg_m *m) {
    int32_t w = s->signal_pool[0];
    memmove(s->signal_pool, s->signal_pool + 1, (s->nsignal - 1) * sizeof *s->signal_pool);
    s->nsignal--;
    int cat = SK_UNBLOCK_CHAN;
    tg_g *wg = GP(w);
    if (wg->bstk) {
        /* Match the waker's stack to what the waiter blocked on. */
        uint32_t r = wg->plan & 7;
        cat = r == 5 ? SK_UNBLOCK_MUTEX : r == 7 ? SK_UNBLOCK_COND : SK_UNBLOCK_CHAN;
    }
    e_unblock(s, m, w, cat);
}

static void region_begin(tg_sim *s, tg_m *m, uint8_t name) {
    tg_g *g = GP(m->g);
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_USER_REGION_BEGIN, 3, g->task, str(s, t, name), stk(s, t, SK_REGION, g), 0);
    if (g->nregions < TG_MAXREGIONS) {
        g->rg_task[g->nregions] = g->task;
        g->rg_name[g->nregions] = name;
    }
    g->nregions++;
}

static void region_end(tg_sim *s, tg_m *m) {
    tg_g *g = GP(m->g);
    if (!g->nregions) return;
    g->nregions--;
    uint8_t k = g->nregions < TG_MAXREGIONS ? g->nregions : TG_MAXREGIONS - 1;
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_USER_REGION_END, 3, g->rg_task[k], str(s, t, g->rg_name[k]),
          stk(s, t, SK_REGIONEND, g), 0);
}

static void task_begin(tg_sim *s, tg_m *m, uint64_t parent, uint32_t name) {
    tg_g *g = GP(m->g);
    uint64_t t = ue(s, m, small_dt(s));
    g->task = s->next_task++;
    tg_ev(s, m, t, TDX_EV_USER_TASK_BEGIN, 4, g->task, parent, str(s, t, name), stk(s, t, SK_TASK, g));
}

static void task_end(tg_sim *s, tg_m *m) {
    tg_g *g = GP(m->g);
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_USER_TASK_END, 2, g->task, stk(s, t, SK_TASKEND, g), 0, 0);
    g->task = 0;
}

/* UserLog: the runtime writes each message as a fresh string. */
static void user_log(tg_sim *s, tg_m *m, uint32_t key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void user_log(tg_sim *s, tg_m *m, uint32_t key, const char *fmt, ...) {
    tg_g *g = GP(m->g);
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    uint64_t t = ue(s, m, small_dt(s));
    uint64_t gen = tg_gen_of(s, t);
    uint32_t v = tg_str_fresh(s, gen, buf, (size_t)n);
    tg_ev(s, m, t, TDX_EV_USER_LOG, 4, g->task, str(s, t, key), v, stk(s, t, SK_LOG, g));
}

static int32_t go_create(tg_sim *s, tg_m *m, uint8_t role, uint8_t path) {
    int32_t gi = g_new(s, role, path); /* may move s->gs */
    tg_g *ng = GP(gi), *g = GP(m->g);
    uint64_t t = ue(s, m, small_dt(s));
    uint64_t gen = tg_gen_of(s, t);
    tg_ev(s, m, t, TDX_EV_GO_CREATE, 3, ng->goid, tg_stk(s, gen, s->code.newg_stack[path]),
          stk(s, t, SK_CREATE, g), 0);
    ng->status = GS_RUNNABLE;
    ng->seen_gen = gen;
    ng->seq = 0;
    ng->last_t = t;
    runq_put(s, &s->ps[m->p], gi, true);
    wakep(s, t);
    return gi;
}
