/* tracegen.h: shared model of the synthetic Go execution-trace generator (bench/tracegen*.c):
 * simulated threads, procs and goroutines, per-thread batch buffers and per-generation tables. */
#ifndef TRACEGEN_H
#define TRACEGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/spec.h"

#define TG_NONE UINT64_MAX
#define TG_FREQ 15625000ull             /* ticks per second: nanotime()/64, as on Linux */
#define TG_MS (TG_FREQ / 1000)          /* ticks per millisecond */
#define TG_MAXPAY 65536u                /* Go's MaxBatchSize */
#define TG_FLUSH_AT (TG_MAXPAY - 1024u) /* the runtime's buffers are a little under 64 KiB */
#define TG_BUFCAP (TG_MAXPAY + 256u)
#define TG_GEN_MARGIN 16 /* events this close to a generation start are moved into it */

/* ---- small utilities ---- */

typedef struct tg_rng {
    uint64_t s;
} tg_rng;

/* wyrand: one multiply per number, plenty for workload decisions. */
static inline uint64_t tg_rand(tg_rng *r) {
    r->s += 0xa0761d6478bd642full;
    unsigned __int128 t = (unsigned __int128)r->s * (r->s ^ 0xe7037ed1a0b428dbull);
    return (uint64_t)(t >> 64) ^ (uint64_t)t;
}
/* Uniform in [0, n) for n < 2^32 (Lemire's multiply-shift, no division). */
static inline uint32_t tg_below(tg_rng *r, uint32_t n) {
    return (uint32_t)(((tg_rand(r) >> 32) * (uint64_t)n) >> 32);
}
static inline uint64_t tg_range(tg_rng *r, uint64_t lo, uint64_t hi) {
    return lo + tg_below(r, (uint32_t)(hi - lo + 1));
}
/* True with probability p/65536. */
static inline bool tg_chance(tg_rng *r, uint32_t p) {
    return (tg_rand(r) & 0xffff) < p;
}
#define TG_P(x) ((uint32_t)((x)*65536.0))

typedef struct tg_bytes {
    uint8_t *v;
    size_t n, cap;
} tg_bytes;

void tg_bytes_reserve(tg_bytes *b, size_t extra);
void *tg_xmalloc(size_t n);
void *tg_xcalloc(size_t n, size_t sz);
void *tg_xrealloc(void *p, size_t n);
void tg_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* Minimal uvarint. The short forms are spelled out: each call site mostly sees one length
 * (deltas: 1 byte, IDs: 2-3, heap sizes and goroutine IDs: 5), so the branches predict. */
static inline __attribute__((always_inline)) uint8_t *tg_uv(uint8_t *p, uint64_t v) {
    if (v < 0x80) {
        p[0] = (uint8_t)v;
        return p + 1;
    }
    if (v < 0x4000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7);
        return p + 2;
    }
    if (v >= 0x10000000 && v < 0x800000000ull) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)((v >> 7) | 0x80);
        p[2] = (uint8_t)((v >> 14) | 0x80);
        p[3] = (uint8_t)((v >> 21) | 0x80);
        p[4] = (uint8_t)(v >> 28);
        return p + 5;
    }
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* ---- the synthetic program: functions, files, stacks ---- */

/* Stack categories: what the leaf frames say the goroutine was doing. */
enum tg_sk {
    SK_NET_READ,
    SK_NET_ACCEPT,
    SK_NET_BACKEND,
    SK_CHANRECV,
    SK_CHANSEND,
    SK_SELECT,
    SK_MUTEX,
    SK_WAITGROUP,
    SK_COND,
    SK_SLEEP,
    SK_ASSIST_WAIT,
    SK_UNBLOCK_CHAN,
    SK_UNBLOCK_MUTEX,
    SK_UNBLOCK_WG,
    SK_UNBLOCK_COND,
    SK_SYS_READ,
    SK_SYS_WRITE,
    SK_SYS_ACCEPT,
    SK_SYS_PWRITE,
    SK_SYS_FSYNC,
    SK_SYS_MISC,
    SK_CREATE,
    SK_PREEMPT,
    SK_GOSCHED,
    SK_SWEEP,
    SK_ASSIST,
    SK_GCSTART,
    SK_STW_GC,
    SK_STW_TERM,
    SK_TASK,
    SK_TASKEND,
    SK_REGION,
    SK_REGIONEND,
    SK_LOG,
    SK_CPU,
    SK_PROCS,
    SK_STW_TRACE,
    SK_PARK,
    SK_NCAT
};

/* Code paths a goroutine runs in (its stacks' lower frames). */
enum tg_path {
    PATH_HANDLER,
    PATH_WORKER,
    PATH_CHILD,
    PATH_TICKER,
    PATH_DISK,
    PATH_ACCEPT,
    PATH_RUNTIME,
    PATH_MAIN,
    PATH_NPATH
};

typedef struct tg_site {
    uint32_t func; /* index into tg_code.funcs */
    uint32_t line;
    uint64_t pc;
} tg_site;

typedef struct tg_func {
    uint32_t name, file; /* string registry indexes */
    uint64_t entry;
    uint32_t line;
    uint16_t size;
    uint8_t layer, nsites;
} tg_func;

typedef struct tg_stack {
    uint32_t first, n;   /* frames in tg_code.frames, leaf first */
    uint32_t body, blen; /* its frames, encoded once (tg_code.bodies) */
    uint32_t sfirst, sn; /* the registry strings its frames name (tg_code.stkstrs), deduplicated */
    uint32_t id[2];      /* id in the table of generation gen[k & 1] */
    uint64_t gen[2];
} tg_stack;

/* A (category, path, variant) slot's stack ID in the tables of the (at most two) open
 * generations: per parity, (generation & 0xfff) << 20 | ID, 0 = none. Packed small because the
 * lookup happens for most events and a miss costs more than the rest of the event. */
typedef struct tg_var {
    uint32_t tag[2];
} tg_var;
#define TG_VTAG(gen) ((uint32_t)((gen)&0xfff) << 20)

typedef struct tg_strent {
    const char *s;
    uint32_t len;
} tg_strent;

/* Fixed strings the workload refers to by name. */
enum tg_str {
    S_UNSPEC,
    S_FOREVER,
    S_NETWORK,
    S_SELECT,
    S_COND,
    S_SYNC,
    S_CHANSEND,
    S_CHANRECV,
    S_ASSISTWAIT,
    S_SWEEPWAIT,
    S_SYSWAIT,
    S_PREEMPTED,
    S_DEBUGCALL,
    S_GCWAIT,
    S_SLEEP,
    S_GOSCHED,
    S_STW_TRACE,
    S_STW_SWEEPTERM,
    S_STW_MARKTERM,
    S_LBL_DEDICATED,
    S_LBL_FRACTIONAL,
    S_LBL_IDLE,
    S_TASK_HTTP,
    S_TASK_GRPC,
    S_TASK_FANOUT,
    S_TASK_BATCH,
    S_RG_HANDLER,
    S_RG_AUTH,
    S_RG_DBQUERY,
    S_RG_REDIS,
    S_RG_GRPC,
    S_RG_MARSHAL,
    S_RG_WORKER,
    S_RG_PART,
    S_RG_VALIDATE,
    S_RG_RENDER,
    S_LOG_ROUTE,
    S_LOG_DB,
    S_LOG_CACHE,
    S_LOG_USER,
    S_LOG_METRICS,
    S_LOG_RETRY,
    S_NFIXED
};

typedef struct tg_code {
    tg_strent *strs;
    uint32_t nstrs, capstrs;
    tg_func *funcs;
    uint32_t nfuncs;
    tg_site *frames;
    uint32_t nframes, capframes;
    tg_stack *stacks;
    uint32_t nstacks, capstacks;
    tg_var *var;    /* slots: block of nvar[c][p] at voff[c][p] for each (category, path) */
    int32_t *varki; /* the slot's stack catalog index, -1 = not built yet */
    uint32_t nvars;
    uint16_t nvar[SK_NCAT][PATH_NPATH];
    uint32_t voff[SK_NCAT][PATH_NPATH];
    uint32_t start_func[PATH_NPATH]; /* goroutine start functions (GoCreate new_stack) */
    uint32_t newg_stack[PATH_NPATH];
    char *pool; /* storage of generated names */
    size_t pooln, poolcap;
    /* Every registry string has the fixed ID index + 1 in every generation (each generation's
     * table holds those it used, taken from strblob at stroff), and only log messages get new
     * IDs. Stack frames therefore encode the same way in every generation. */
    tg_bytes strblob;
    uint32_t *stroff; /* nstrs + 1 offsets into strblob */
    tg_bytes bodies;
    uint32_t *stkstrs;
    uint32_t nstkstrs, capstkstrs;
    uint32_t *strstamp; /* scratch for deduplicating a stack's strings */
} tg_code;

/* ---- simulated runtime ---- */

enum { GS_RUNNABLE = 1, GS_RUNNING = 2, GS_SYSCALL = 3, GS_WAITING = 4, GS_DEAD = 7 };
enum { PS_RUNNING = 1, PS_IDLE = 2, PS_SYSCALL = 3 };

/* Goroutine roles (the workload a goroutine belongs to). */
enum tg_role {
    R_HANDLER,
    R_WORKER,
    R_CHILD,
    R_TICKER,
    R_DISK,
    R_ACCEPT,
    R_GCWORKER,
    R_SWEEPER,
    R_SCAVENGER,
    R_IDLE,
    R_TRACER
};

/* What wakes a waiting goroutine. */
enum { W_NONE, W_TIMER, W_NET, W_SIGNAL, W_PEER, W_GC };

#define TG_MAXREGIONS 4

typedef struct tg_g {
    uint64_t goid;
    uint64_t last_t;   /* time of the last event about this goroutine */
    uint64_t seen_gen; /* generation its status was last announced in */
    uint32_t seq;      /* g_seq within seen_gen */
    uint8_t status, role, phase, wake;
    uint8_t in_assist, nregions, path, variant;
    uint8_t sigcat;  /* what a W_SIGNAL waiter blocked on (stack category) */
    int32_t m;       /* thread running it or holding it in a syscall */
    int32_t peer;    /* goroutine slot waiting on this one (worker -> handler, child -> parent) */
    int32_t pending; /* children still running (fan-out), queued jobs (disk writer) */
    uint32_t reqs_left;
    uint32_t plan; /* remaining steps of the current request, 3 bits each */
    uint64_t task; /* current user task, 0 = none */
    uint64_t work; /* remaining CPU ticks of a preempted computation */
    uint64_t rg_task[TG_MAXREGIONS];
    uint8_t rg_name[TG_MAXREGIONS];
    uint32_t bstk;   /* stack variant slot of its last block + 1 (GoStatusStack), 0 = none */
    uint64_t period; /* tickers: their period */
} tg_g;

#define TG_RUNQ 256

typedef struct tg_p {
    uint64_t last_t, seen_gen, syscall_t;
    uint32_t seq;
    uint8_t status, in_sweep, reserved;
    uint64_t ded_until; /* runs a dedicated mark worker until then */
    int32_t m;
    int32_t gcw; /* this P's GC mark worker goroutine */
    int32_t runnext;
    uint32_t rq_head, rq_tail;
    int32_t rq[TG_RUNQ];
} tg_p;

typedef struct tg_buf {
    uint8_t *data;
    uint32_t len;
    uint64_t gen;     /* generation of the batch being filled, 0 = none */
    uint64_t batch_t; /* header time */
    uint64_t last_t;  /* time of the previous event (dt base) */
} tg_buf;

enum { MS_PARKED, MS_WAKE, MS_SCHED, MS_SYSCALL, MS_NETPOLL, MS_SYSMON };

typedef struct tg_m {
    uint64_t tid;
    uint64_t clock;   /* when its next step happens */
    uint64_t last_t;  /* time of its last event (its events are strictly increasing) */
    uint64_t steal_t; /* when it lost its proc during the current syscall */
    uint64_t cpu;     /* CPU ticks since its last profiling sample */
    uint64_t run_t;   /* when its current goroutine started running (statistics) */
    int32_t p, g;
    uint64_t ctx_gen; /* generation in which p's and g's statuses are known announced */
    int32_t wake_p;   /* proc reserved for it by wakep */
    uint32_t idx;     /* index in tg_sim.ms */
    uint32_t hidx;    /* position in the step heap, UINT32_MAX if absent */
    uint8_t state, spinning;
    tg_buf b[2];
} tg_m;

/* Statuses written at the end of a generation for resources it never mentioned. */
typedef struct tg_late {
    uint8_t kind; /* 0 goroutine, 1 proc */
    uint8_t status, active;
    uint64_t id, m;
    uint32_t stack; /* stack variant slot + 1 for GoStatusStack, 0 = none */
} tg_late;

/* Everything that belongs to one generation until it is written. */
typedef struct tg_gentab {
    uint64_t gen;
    tg_bytes strings, stacks, cpu;
    size_t *str_cut, *stk_cut, *cpu_cut; /* entry offsets where a new batch must start */
    size_t nstr_cut, nstk_cut, ncpu_cut, capstr_cut, capstk_cut, capcpu_cut;
    size_t str_last, stk_last, cpu_last; /* start of the current batch in each table */
    uint32_t next_str, next_stk;
    uint64_t *strused; /* registry strings this generation used (bitmap) */
    tg_bytes pend; /* full event batches (header + payload) held until the previous gen is out */
    tg_late *late;
    size_t nlate, caplate;
    uint64_t first_t, last_t; /* event time span (for structural batch times) */
} tg_gentab;

typedef struct tg_tent {
    uint64_t t;
    int32_t g;
} tg_tent;

typedef struct tg_heap2 { /* binary min-heap of (time, goroutine slot) */
    tg_tent *v;
    uint32_t n, cap;
} tg_heap2;

/* Timing wheel of (time, goroutine slot): buckets of 2^TGW_SHIFT ticks over a 268 ms horizon,
 * a bitmap of non-empty buckets, a heap for what lies further out. Exact minimum, O(1) work and
 * a cache line or two per operation (a plain heap of thousands of sleeping goroutines missed the
 * cache at every level). */
#define TGW_SHIFT 10
#define TGW_N 4096

typedef struct tg_wbucket {
    tg_tent *v;
    uint32_t n, cap;
} tg_wbucket;

typedef struct tg_wheel {
    tg_wbucket *b; /* TGW_N buckets; bucket k holds absolute bucket numbers = k mod N */
    uint64_t bits[TGW_N / 64];
    uint64_t base; /* no entry lies in an earlier bucket */
    tg_heap2 far;  /* entries at or beyond base + TGW_N */
    uint32_t n;
    bool min_ok; /* cached minimum: time, bucket, index */
    uint64_t min_t;
    uint32_t min_b, min_i;
} tg_wheel;

typedef struct tg_sent { /* step heap entry: a thread and the clock it was queued with */
    uint64_t clock;
    uint32_t mi;
} tg_sent;

typedef struct tg_sim {
    int version, procs;
    uint64_t seed, target;
    tg_rng rng;
    tg_code code;

    /* time and generations */
    uint64_t t0;        /* first tick */
    uint64_t gen;       /* oldest generation not yet written */
    uint64_t gen_start; /* start tick of gen */
    uint64_t gen_next;  /* start tick of gen + 1 */
    uint64_t gen_next2; /* start tick of gen + 2 */
    uint64_t gen_len;
    tg_gentab tab[2];
    uint64_t mono0, wall0; /* clock snapshot bases (ns) */

    /* resources */
    tg_m **ms;
    uint32_t nms, maxms;
    tg_m *sysmon;
    tg_p *ps;
    tg_g *gs;
    uint32_t ngs, capgs;
    int32_t *gfree;
    uint32_t ngfree;
    uint64_t next_goid, next_task, next_tid;
    uint32_t live_gs;

    /* scheduler */
    tg_sent *step_heap; /* threads by next-step time */
    uint32_t nstep;
    int32_t *grq; /* global run queue (ring) */
    uint32_t grq_head, grq_tail, grq_cap;
    tg_wheel timers, netready;
    uint32_t *idle_m; /* parked M indexes */
    uint32_t nidle_m;
    uint32_t nspinning;
    uint32_t nfree_p;  /* procs idle and not reserved by a waking thread */
    int32_t netpoll_m; /* M blocked in netpoll, -1 */
    uint64_t last_netpoll;
    uint64_t sysmon_delay;
    uint32_t sysmon_idle;

    /* workload */
    int32_t *idle_workers;
    uint32_t nidle_workers, capidle_workers;
    int32_t *signal_pool; /* goroutines blocked on mutexes/conds/selects, woken by others */
    uint32_t nsignal, capsignal;
    int32_t disk_g[4];
    uint32_t ndisk;
    int32_t accept_g, sweeper_g;
    uint32_t conns, target_conns;
    uint32_t idle; /* goroutines parked for the whole trace (--idle) */
    uint32_t logs; /* extra log lines per request, each a distinct message (--logs) */
    uint64_t log_seq;
    uint64_t think_mean; /* ticks between requests on one connection */

    /* GC */
    uint64_t heap_live, heap_alloc, heap_goal, gc_trigger;
    uint64_t heap_drop, heap_drop_t; /* freed by the last GC, applied from its GCEnd on */
    uint64_t gc_seq, gc_gen;         /* gc_gen: generation of the last GC event written */
    uint64_t gc_last_t;
    /* gc_marking: a cycle's GCBegin is written and its GCEnd not yet (simulation order). The
     * phases themselves are time windows: threads simulated later may still be earlier in time
     * than the mark worker whose slice already wrote the end of the cycle. */
    bool gc_marking, gc_term_claimed;
    uint64_t gc_mark_start, gc_mark_end, gc_sweep_start, gc_sweep_end;
    uint32_t gc_dedicated_want;

    /* output: the simulation fills `out`; a writer thread writes full buffers (tracegen_emit.c) */
    int fd;
    uint8_t *out;
    size_t outn, outcap;
    struct tg_writer *writer;
    uint64_t written;
    bool stop;
    uint64_t events; /* statistics */
    uint64_t end_t;  /* last event time written */
    uint64_t busy, created, gcs, steals, blocking_syscalls;
    uint64_t gens_written;
} tg_sim;

/* tracegen_code.c */
void tg_code_init(tg_sim *s);
uint32_t tg_stack_build(tg_sim *s, int cat, int path, uint32_t variant);
uint32_t tg_vstk_slow(tg_sim *s, uint64_t gen, uint32_t vi);
void tg_code_seal(tg_sim *s);
uint32_t tg_stk_slow(tg_sim *s, uint64_t gen, uint32_t ki);
uint32_t tg_str_fresh(tg_sim *s, uint64_t gen, const char *txt, size_t len);

/* tracegen_emit.c */
void tg_out_start(tg_sim *s);
void tg_out_write(tg_sim *s, const void *p, size_t n);
void tg_out_finish(tg_sim *s);
void tg_buf_flush(tg_sim *s, tg_m *m, tg_buf *b);
void tg_gen_write(tg_sim *s, bool last);
void tg_gen_begin(tg_sim *s);
void tg_late_add(tg_sim *s, uint64_t gen, const tg_late *l);
void tg_cpu_sample(tg_sim *s, uint64_t t, uint64_t tid, uint64_t p, uint64_t goid, uint32_t ki);
uint64_t tg_pending_bytes(const tg_sim *s);

/* tracegen_sched.c */
void tg_sim_init(tg_sim *s);
void tg_sim_run(tg_sim *s);

/* ---- hot path: event encoding ---- */

static inline uint64_t tg_gen_of(const tg_sim *s, uint64_t t) {
    return t < s->gen_next ? s->gen : s->gen + 1;
}

/* The string ID of registry string si (the same in every generation, see tg_code.strblob);
 * the generation's string table will hold it. */
static inline uint32_t tg_str(tg_sim *s, uint64_t gen, uint32_t si) {
    s->tab[gen & 1].strused[si >> 6] |= 1ull << (si & 63);
    return si + 1;
}

/* The stack ID of catalog stack ki in generation gen's table (added on first use). */
static inline uint32_t tg_stk(tg_sim *s, uint64_t gen, uint32_t ki) {
    tg_stack *k = &s->code.stacks[ki];
    if (k->gen[gen & 1] == gen) return k->id[gen & 1];
    return tg_stk_slow(s, gen, ki);
}

/* A skewed pick among the stack slots of (category, path): a few hot ones, a long tail. Returns
 * a tg_code.var index. */
static inline uint32_t tg_pick(tg_sim *s, int cat, int path, uint32_t bias) {
    uint32_t nv = s->code.nvar[cat][path];
    uint32_t u = (uint32_t)(tg_rand(&s->rng) & 0xffff);
    uint32_t v = (uint32_t)(((uint64_t)u * u >> 16) * u >> 16);
    v = (uint32_t)(((uint64_t)v * nv) >> 16);
    v = (v + bias) & (nv - 1); /* nv is a power of two */
    return s->code.voff[cat][path] + v;
}

/* The stack ID of variant slot vi in generation gen's table (built and added on first use). */
static inline uint32_t tg_vstk(tg_sim *s, uint64_t gen, uint32_t vi) {
    uint32_t x = s->code.var[vi].tag[gen & 1];
    if ((x & 0xfff00000u) == TG_VTAG(gen) && x) return x & 0xfffffu;
    return tg_vstk_slow(s, gen, vi);
}

/* Go 1.23+ writes blocked goroutines' first status with their stack (GoStatusStack): done here
 * in the first generation, where it shows what was blocked when tracing started. Returns the
 * stack slot + 1, or 0 for a plain GoStatus. */
static inline uint32_t tg_late_stack(const tg_sim *s, const tg_g *g, uint64_t gen) {
    return s->version >= 23 && gen == 1 && g->status == GS_WAITING ? g->bstk : 0;
}

/* The buffer thread m writes generation gen's events into, flushed when nearly full. */
static inline tg_buf *tg_mbuf(tg_sim *s, tg_m *m, uint64_t gen, uint64_t t) {
    tg_buf *b = &m->b[gen & 1];
    if (b->gen != gen) {
        b->gen = gen;
        b->len = 0;
        b->batch_t = t - 1;
        b->last_t = t - 1;
    } else if (b->len >= TG_FLUSH_AT) {
        tg_buf_flush(s, m, b);
    }
    return b;
}

/* Writes one timed event with n arguments after dt; t must be > m's previous event time. */
static inline __attribute__((always_inline)) void tg_ev(tg_sim *s, tg_m *m, uint64_t t,
                                                        uint8_t type, int n, uint64_t a0,
                                                        uint64_t a1, uint64_t a2, uint64_t a3) {
    uint64_t gen = tg_gen_of(s, t);
    tg_buf *b = tg_mbuf(s, m, gen, t);
    uint8_t *p = b->data + b->len;
    *p++ = type;
    p = tg_uv(p, t - b->last_t);
    if (n > 0) p = tg_uv(p, a0);
    if (n > 1) p = tg_uv(p, a1);
    if (n > 2) p = tg_uv(p, a2);
    if (n > 3) p = tg_uv(p, a3);
    b->len = (uint32_t)(p - b->data);
    b->last_t = t;
    m->last_t = t;
    s->events++;
}

#endif
