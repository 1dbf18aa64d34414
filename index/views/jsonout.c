/* jsonout.c: viewer-event serialization, Go's number formats, the streaming /jsontrace writer and
 * the range splitter. */
#include "index/views/jsonout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gofmt.h"
#include "core/quote.h"

/* ---- numbers ---- */

static const char digits2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Branch-light: the bit length gives the digit count or one more (a power-of-ten compare
 * settles it); the sizes of the build's splitter count digits for every emitted event. */
static const uint64_t pow10_tab[20] = {1ull,
                                       10ull,
                                       100ull,
                                       1000ull,
                                       10000ull,
                                       100000ull,
                                       1000000ull,
                                       10000000ull,
                                       100000000ull,
                                       1000000000ull,
                                       10000000000ull,
                                       100000000000ull,
                                       1000000000000ull,
                                       10000000000000ull,
                                       100000000000000ull,
                                       1000000000000000ull,
                                       10000000000000000ull,
                                       100000000000000000ull,
                                       1000000000000000000ull,
                                       10000000000000000000ull};
static int count_digits(uint64_t v) {
    /* floor(log10(2) * bits) with 1233/4096 ~ log10(2): t digits, or t + 1 when v >= 10^t */
    int t = ((64 - __builtin_clzll(v | 1)) * 1233) >> 12;
    return t + ((v | 1) >= pow10_tab[t]); /* (v | 1: zero has one digit) */
}

size_t tdx_json_u64(char *buf, uint64_t v) {
    int n = count_digits(v), i = n;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100) * 2;
        v /= 100;
        buf[--i] = digits2[r + 1];
        buf[--i] = digits2[r];
    }
    if (v >= 10) {
        buf[--i] = digits2[v * 2 + 1];
        buf[--i] = digits2[v * 2];
    } else {
        buf[--i] = (char)('0' + v);
    }
    return (size_t)n;
}

size_t tdx_json_i64(char *buf, int64_t v) {
    if (v >= 0) return tdx_json_u64(buf, (uint64_t)v);
    buf[0] = '-';
    return 1 + tdx_json_u64(buf + 1, 0 - (uint64_t)v);
}

/* Below 2^43 microseconds the spacing of doubles is under 0.001, so the exact decimal ns/1000 is
 * the only decimal of at most its length that rounds to float64(ns)/1000: the shortest
 * round-trip text is that decimal with trailing zeros removed. */
#define FAST_LIMIT 8796093022208000LL /* 2^43 * 1000 */

static size_t slow_usec(char *buf, int64_t ns) {
    return tdx_go_float(buf, (double)ns / 1000.0, TDX_FLOAT_JSON);
}

size_t tdx_json_usec(char *buf, int64_t ns) {
    if (ns <= -FAST_LIMIT || ns >= FAST_LIMIT) return slow_usec(buf, ns);
    size_t w = 0;
    uint64_t u = (uint64_t)ns;
    if (ns < 0) {
        buf[w++] = '-';
        u = 0 - u;
    }
    w += tdx_json_u64(buf + w, u / 1000);
    unsigned f = (unsigned)(u % 1000);
    if (f) {
        buf[w++] = '.';
        buf[w++] = (char)('0' + f / 100);
        if (f % 100) {
            buf[w++] = (char)('0' + f / 10 % 10);
            if (f % 10) buf[w++] = (char)('0' + f % 10);
        }
    }
    return w;
}

/* ---- event serialization ---- */

/* A JSON string: copied as it is when nothing needs escaping (nearly always). */
static int put_quoted(tdx_buf *b, const uint8_t *s, size_t n) {
    if (!tdx_json_plain(s, n)) return tdx_json_quote(b, s, n);
    if (tdx_vec_reserve(b, b->n + n + 2)) return -1;
    b->v[b->n++] = '"';
    if (n) memcpy(b->v + b->n, s, n);
    b->n += n;
    b->v[b->n++] = '"';
    return 0;
}

/* Appending fixed text and numbers: the caller reserved room for them. */
#define LIT(b, s) (memcpy((b)->v + (b)->n, s, sizeof(s) - 1), (b)->n += sizeof(s) - 1)

static void put_u(tdx_buf *b, uint64_t v) {
    b->n += tdx_json_u64((char *)b->v + b->n, v);
}
static void put_i(tdx_buf *b, int64_t v) {
    b->n += tdx_json_i64((char *)b->v + b->n, v);
}

static int put_args(tdx_buf *b, const tdx_vargs *a) {
    if (tdx_vec_reserve(b, b->n + 160)) return -1;
    switch (a->kind) {
    case TDX_VARG_NAME:
        LIT(b, ",\"args\":{\"name\":");
        if (put_quoted(b, a->s.p, a->s.n) || tdx_vec_reserve(b, b->n + 8)) return -1;
        LIT(b, "}");
        return 0;
    case TDX_VARG_SORT_INDEX:
        LIT(b, ",\"args\":{\"sort_index\":");
        put_i(b, (int64_t)a->u[0]);
        break;
    case TDX_VARG_BLOCKED:
        if (a->u[0])
            LIT(b, ",\"args\":{\"blocked\":\"yes\"");
        else
            LIT(b, ",\"args\":{\"blocked\":\"no\"");
        break;
    case TDX_VARG_HEAP:
        LIT(b, ",\"args\":{\"Allocated\":");
        put_u(b, a->u[0]);
        LIT(b, ",\"NextGC\":");
        put_u(b, a->u[1]);
        break;
    case TDX_VARG_GOROUTINES:
        LIT(b, ",\"args\":{\"Running\":");
        put_u(b, a->u[0]);
        LIT(b, ",\"Runnable\":");
        put_u(b, a->u[1]);
        LIT(b, ",\"GCWaiting\":");
        put_u(b, a->u[2]);
        break;
    case TDX_VARG_THREADS:
        LIT(b, ",\"args\":{\"Running\":");
        put_i(b, (int64_t)a->u[0]);
        LIT(b, ",\"InSyscall\":");
        put_i(b, (int64_t)a->u[1]);
        break;
    case TDX_VARG_SCHED:
        LIT(b, ",\"args\":{");
        if (a->u[0]) {
            LIT(b, "\"thread\":");
            put_u(b, a->u[0]);
        }
        if (a->u[1]) {
            if (a->u[0]) LIT(b, ",");
            LIT(b, "\"proc\":");
            put_u(b, a->u[1]);
        }
        break;
    case TDX_VARG_TASK:
        LIT(b, ",\"args\":{\"id\":");
        put_u(b, a->u[0]);
        if (a->u[1]) {
            LIT(b, ",\"start_g\":");
            put_u(b, a->u[1]);
        }
        if (a->u[2]) {
            LIT(b, ",\"end_g\":");
            put_u(b, a->u[2]);
        }
        break;
    case TDX_VARG_TASKID:
        LIT(b, ",\"args\":{\"taskid\":");
        put_u(b, a->u[0]);
        break;
    default:
        return 0;
    }
    LIT(b, "}");
    return 0;
}

int tdx_json_event(tdx_buf *b, const tdx_vev *ev) {
    if (tdx_vec_reserve(b, b->n + 32)) return -1;
    LIT(b, "{");
    if (ev->name.n) {
        LIT(b, "\"name\":");
        if (put_quoted(b, ev->name.p, ev->name.n)) return -1;
    }
    if (tdx_vec_reserve(b, b->n + 300)) return -1;
    if (ev->name.n) LIT(b, ",");
    LIT(b, "\"ph\":\"");
    b->v[b->n++] = (uint8_t)ev->ph;
    LIT(b, "\"");
    if (ev->scope.n) {
        LIT(b, ",\"s\":");
        if (put_quoted(b, ev->scope.p, ev->scope.n) || tdx_vec_reserve(b, b->n + 300)) return -1;
    }
    LIT(b, ",\"ts\":");
    b->n += tdx_json_usec((char *)b->v + b->n, ev->ts);
    if (ev->dur) {
        LIT(b, ",\"dur\":");
        b->n += tdx_json_usec((char *)b->v + b->n, ev->dur);
    }
    LIT(b, ",\"pid\":");
    put_u(b, ev->pid);
    LIT(b, ",\"tid\":");
    put_u(b, ev->tid);
    if (ev->id) {
        LIT(b, ",\"id\":");
        put_u(b, ev->id);
    }
    if (ev->sf) {
        LIT(b, ",\"sf\":");
        put_i(b, ev->sf);
    }
    if (ev->esf) {
        LIT(b, ",\"esf\":");
        put_i(b, ev->esf);
    }
    if (ev->args.kind && put_args(b, &ev->args)) return -1;
    if (ev->cname) {
        if (tdx_buf_append(b, ",\"cname\":", 9) ||
            put_quoted(b, (const uint8_t *)ev->cname, strlen(ev->cname)))
            return -1;
    }
    if (ev->cat) {
        if (tdx_buf_append(b, ",\"cat\":", 7) ||
            put_quoted(b, (const uint8_t *)ev->cat, strlen(ev->cat)))
            return -1;
    }
    return tdx_buf_append(b, "}", 1);
}

/* ---- the size of an event's JSON, without writing it ---- */

#define L(s) (sizeof(s) - 1)

static size_t ulen(uint64_t v) {
    return (size_t)count_digits(v);
}
static size_t ilen(int64_t v) {
    return v < 0 ? 1 + ulen(0 - (uint64_t)v) : ulen((uint64_t)v);
}
static size_t qlen(const uint8_t *p, size_t n) {
    return tdx_json_plain(p, n) ? n + 2 : tdx_json_quote_len(p, n);
}
static size_t usec_len(int64_t ns) {
    if (ns <= -FAST_LIMIT || ns >= FAST_LIMIT) {
        char b[48];
        return slow_usec(b, ns);
    }
    uint64_t u = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
    unsigned f = (unsigned)(u % 1000);
    return (ns < 0) + ulen(u / 1000) + (f == 0 ? 0 : f % 10 ? 4 : f % 100 ? 3 : 2);
}

static size_t args_len(const tdx_vargs *a) {
    switch (a->kind) {
    case TDX_VARG_NAME:
        return L(",\"args\":{\"name\":") + qlen(a->s.p, a->s.n) + 1;
    case TDX_VARG_SORT_INDEX:
        return L(",\"args\":{\"sort_index\":") + ilen((int64_t)a->u[0]) + 1;
    case TDX_VARG_BLOCKED:
        return (a->u[0] ? L(",\"args\":{\"blocked\":\"yes\"")
                        : L(",\"args\":{\"blocked\":\"no\"")) +
               1;
    case TDX_VARG_HEAP:
        return L(",\"args\":{\"Allocated\":") + ulen(a->u[0]) + L(",\"NextGC\":") + ulen(a->u[1]) +
               1;
    case TDX_VARG_GOROUTINES:
        return L(",\"args\":{\"Running\":") + ulen(a->u[0]) + L(",\"Runnable\":") + ulen(a->u[1]) +
               L(",\"GCWaiting\":") + ulen(a->u[2]) + 1;
    case TDX_VARG_THREADS:
        return L(",\"args\":{\"Running\":") + ilen((int64_t)a->u[0]) + L(",\"InSyscall\":") +
               ilen((int64_t)a->u[1]) + 1;
    case TDX_VARG_SCHED:
        return L(",\"args\":{") + (a->u[0] ? L("\"thread\":") + ulen(a->u[0]) : 0) +
               (a->u[1] ? (a->u[0] ? 1 : 0) + L("\"proc\":") + ulen(a->u[1]) : 0) + 1;
    case TDX_VARG_TASK:
        return L(",\"args\":{\"id\":") + ulen(a->u[0]) +
               (a->u[1] ? L(",\"start_g\":") + ulen(a->u[1]) : 0) +
               (a->u[2] ? L(",\"end_g\":") + ulen(a->u[2]) : 0) + 1;
    case TDX_VARG_TASKID:
        return L(",\"args\":{\"taskid\":") + ulen(a->u[0]) + 1;
    default:
        return 0;
    }
}

size_t tdx_json_event_size(const tdx_vev *ev) {
    size_t n = L("{") + L("\"ph\":\"") + 1 + L("\"") + L(",\"ts\":") + usec_len(ev->ts) +
               L(",\"pid\":") + ulen(ev->pid) + L(",\"tid\":") + ulen(ev->tid) + L("}");
    if (ev->name.n)
        n += L("\"name\":") + (ev->name_plain ? ev->name.n + 2 : qlen(ev->name.p, ev->name.n)) +
             L(",");
    if (ev->scope.n) n += L(",\"s\":") + qlen(ev->scope.p, ev->scope.n);
    if (ev->dur) n += L(",\"dur\":") + usec_len(ev->dur);
    if (ev->id) n += L(",\"id\":") + ulen(ev->id);
    if (ev->sf) n += L(",\"sf\":") + ilen(ev->sf);
    if (ev->esf) n += L(",\"esf\":") + ilen(ev->esf);
    if (ev->args.kind) n += args_len(&ev->args);
    if (ev->cname) n += L(",\"cname\":") + qlen((const uint8_t *)ev->cname, strlen(ev->cname));
    if (ev->cat) n += L(",\"cat\":") + qlen((const uint8_t *)ev->cat, strlen(ev->cat));
    return n;
}

#undef L

/* ---- the writer ---- */

enum { FLUSH_AT = 1 << 18 };

static int w_flush(tdx_jsonw *w) {
    if (w->out.n && !w->err && w->write(w->wctx, w->out.v, w->out.n)) w->err = 1;
    w->out.n = 0;
    return w->err ? -1 : 0;
}

int tdx_jsonw_init(tdx_jsonw *w, tdx_write_fn write, void *wctx, const tdx_vgframes *frames,
                   int64_t start, int64_t end) {
    memset(w, 0, sizeof *w);
    w->write = write;
    w->wctx = wctx;
    w->frames = *frames;
    w->start = start;
    w->end = end;
    static const char head[] = "{\"displayTimeUnit\":\"ns\"\n,";
    if (tdx_buf_append(&w->out, head, sizeof head - 1)) w->err = 1;
    return w->err ? -1 : 0;
}

/* Marks frame id and its ancestors (stopping at the first one already marked). */
static int mark_chain(tdx_jsonw *w, int64_t sid) {
    uint32_t id = (uint32_t)sid;
    while (id) {
        if (id >= w->mark.n) {
            size_t want = (size_t)id + 1 + id / 2;
            if (tdx_vec_reserve(&w->mark, want)) return -1;
            memset(w->mark.v + w->mark.n, 0, want - w->mark.n);
            w->mark.n = want;
        }
        if (w->mark.v[id]) return 0;
        uint32_t parent;
        if (w->frames.frame(w->frames.self, id, NULL, NULL, &parent)) return 0;
        w->mark.v[id] = 1;
        if (tdx_vec_push(&w->marked, id)) return -1;
        id = parent;
    }
    return 0;
}

int tdx_jsonw_event(void *ctx, const tdx_vev *ev) {
    tdx_jsonw *w = ctx;
    if (w->err) return -1;
    int64_t i = w->index++;
    if (!ev->required && (i < w->start || i > w->end)) return 0;
    if ((ev->sf && mark_chain(w, ev->sf)) || (ev->esf && mark_chain(w, ev->esf))) {
        w->err = 1;
        return -1;
    }
    if (w->written == 0) {
        if (tdx_buf_append(&w->out, "\"traceEvents\": [", 16)) w->err = 1;
    } else if (tdx_buf_append(&w->out, ",", 1)) {
        w->err = 1;
    }
    w->written++;
    if (w->err || tdx_json_event(&w->out, ev) || tdx_buf_append(&w->out, "\n", 1)) {
        w->err = 1;
        return -1;
    }
    if (w->out.n >= FLUSH_AT) return w_flush(w);
    return 0;
}

/* encoding/json sorts map keys as strings: frame ids go in the order of their decimal text.
 * An id's key is its digits left-aligned to D places (D: the digit count of the largest id),
 * then its own digit count: integer order of keys is string order of the ids (equal aligned
 * digits mean one text is a prefix of the other, and the shorter sorts first). */
static const uint64_t pow10_[11] = {1,       10,       100,       1000,       10000,         100000,
                                    1000000, 10000000, 100000000, 1000000000, 10000000000ULL};

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static unsigned id_digits(uint32_t v) {
    unsigned d = 1;
    while (d < 10 && v >= pow10_[d]) d++;
    return d;
}

/* Keys below 2^32 (ids of at most 8 digits: 16 * 10^8 < 2^32) carry the id in their low half
 * and are radix-sorted a byte at a time over the bytes the largest key uses. */
static int sort_decimal(uint32_t *ids, size_t n) {
    uint32_t maxid = 0;
    for (size_t i = 0; i < n; i++) maxid = ids[i] > maxid ? ids[i] : maxid;
    unsigned D = id_digits(maxid);
    uint64_t *k = malloc(2 * n * sizeof *k);
    if (!k) return -1;
    uint64_t *tmp = k + n, maxkey = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = id_digits(ids[i]);
        uint64_t key = (uint64_t)ids[i] * pow10_[D - d] << 4 | d;
        k[i] = D <= 8 ? key << 32 | ids[i] : key;
        maxkey = key > maxkey ? key : maxkey;
    }
    if (D > 8) {
        /* never in practice (100 million frames): sort the keys, then recover each id */
        qsort(k, n, sizeof *k, cmp_u64);
        for (size_t i = 0; i < n; i++) ids[i] = (uint32_t)((k[i] >> 4) / pow10_[D - (k[i] & 15)]);
        free(k);
        return 0;
    }
    for (unsigned shift = 32; shift < 64 && (maxkey >> (shift - 32)); shift += 8) {
        size_t count[256] = {0};
        for (size_t i = 0; i < n; i++) count[(k[i] >> shift) & 255]++;
        size_t sum = 0;
        for (int b = 0; b < 256; b++) {
            size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) tmp[count[(k[i] >> shift) & 255]++] = k[i];
        uint64_t *t = k;
        k = tmp;
        tmp = t;
    }
    for (size_t i = 0; i < n; i++) ids[i] = (uint32_t)k[i];
    free(k < tmp ? k : tmp);
    return 0;
}

/* stackFrames' "<id>":{"name":...[,"parent":<p>]} for frame id: the name as the index keeps its
 * JSON text, or quoted from the frame's function and line. An unknown id is skipped. */
static int put_frame(tdx_jsonw *w, uint32_t id, bool comma) {
    tdx_str json = {0}, func;
    uint64_t line = 0;
    uint32_t parent;
    bool text = w->frames.name && !w->frames.name(w->frames.self, id, &json, &parent);
    if (!text && w->frames.frame(w->frames.self, id, &func, &line, &parent)) return 0;
    tdx_buf *b = &w->out;
    if (tdx_vec_reserve(b, b->n + 40)) return -1;
    if (comma) LIT(b, ",");
    LIT(b, "\"");
    put_u(b, id);
    LIT(b, "\":{\"name\":");
    if (text ? tdx_buf_append(b, json.p, json.n) : tdx_json_quote_frame(b, func.p, func.n, line))
        return -1;
    if (tdx_vec_reserve(b, b->n + 40)) return -1;
    if (parent) {
        LIT(b, ",\"parent\":");
        put_u(b, parent);
    }
    LIT(b, "}");
    return 0;
}

int tdx_jsonw_finish(tdx_jsonw *w) {
    if (w->err) return -1;
    if (tdx_buf_append(&w->out, "], \"stackFrames\":", 17)) return w->err = 1, -1;
    if (w->marked.n && sort_decimal(w->marked.v, w->marked.n)) return w->err = 1, -1;
    if (tdx_buf_append(&w->out, "{", 1)) w->err = 1;
    /* Emit the map in pieces so the output buffer stays bounded. */
    for (size_t done = 0; !w->err && done < w->marked.n;) {
        size_t n = w->marked.n - done, chunk = n < 4096 ? n : 4096;
        for (size_t i = 0; i < chunk && !w->err; i++) {
            /* The ids come in text order, scattered over the tree: fetch ahead. */
            if (w->frames.prefetch) {
                size_t j = done + i;
                if (j + 16 < w->marked.n)
                    w->frames.prefetch(w->frames.self, w->marked.v[j + 16], 0);
                if (j + 8 < w->marked.n) w->frames.prefetch(w->frames.self, w->marked.v[j + 8], 1);
            }
            if (put_frame(w, w->marked.v[done + i], done + i > 0)) w->err = 1;
        }
        done += chunk;
        w_flush(w);
    }
    if (!w->err && tdx_buf_append(&w->out, "}\n}", 3)) w->err = 1;
    return w_flush(w);
}

void tdx_jsonw_free(tdx_jsonw *w) {
    tdx_vec_free(&w->out);
    tdx_vec_free(&w->mark);
    tdx_vec_free(&w->marked);
}

/* ---- the splitter ---- */

void tdx_jsplit_init(tdx_jsplit *s, const tdx_vgframes *frames, int64_t max) {
    memset(s, 0, sizeof *s);
    s->frames = *frames;
    s->max = max;
    s->piece = 1;
}

void tdx_jsplit_init_online(tdx_jsplit *s, const tdx_vgframes *frames, int64_t max,
                            uint64_t required_size) {
    tdx_jsplit_init(s, frames, max);
    s->online = true;
    s->required = required_size;
}

uint64_t tdx_jsplit_required_size(uint64_t n, uint64_t bytes) {
    static const char head[] = "{\"traceEvents\":[";
    static const char tail[] = "],\"stackFrames\":{},\"displayTimeUnit\":\"ns\"}\n";
    static const char empty[] =
        "{\"traceEvents\":null,\"stackFrames\":{},\"displayTimeUnit\":\"ns\"}\n";
    if (n == 0) return sizeof empty - 1;
    return sizeof head - 1 + bytes + (n - 1) + sizeof tail - 1;
}

static int ndigits(uint64_t v) {
    int n = 0;
    while (v > 0) {
        n++;
        v /= 10;
    }
    return n;
}

static void range_set(tdx_vrange *r, uint64_t start, uint64_t end, int64_t ts0, int64_t ts1) {
    /* Go: time.Duration(ts * 1000) of the float64 microseconds */
    r->start = (int64_t)start;
    r->end = (int64_t)end;
    r->start_time = (int64_t)((double)ts0 / 1000.0 * 1000);
    r->end_time = (int64_t)((double)ts1 / 1000.0 * 1000);
    char a[40], b[40];
    tdx_go_duration(a, sizeof a, r->start_time);
    tdx_go_duration(b, sizeof b, r->end_time);
    snprintf(r->name, sizeof r->name, "%s-%s", a, b);
}

/* One step of cmd/trace's walk over the optional events (its Flush loop). */
static int split_step(tdx_jsplit *s, uint64_t required, int64_t ts, uint32_t size, uint32_t sf,
                      uint32_t esf) {
    uint64_t i = s->n++;
    if (i == s->start) s->start_ts = ts;
    s->last_ts = ts;
    s->events += size;
    uint32_t chains[2] = {sf, esf};
    for (int c = 0; c < 2; c++) {
        for (uint32_t id = chains[c]; id;) {
            if (id >= s->seen.n) {
                size_t want = (size_t)id + 1 + id / 2;
                if (tdx_vec_reserve(&s->seen, want)) return -1;
                memset(s->seen.v + s->seen.n, 0, (want - s->seen.n) * sizeof *s->seen.v);
                s->seen.n = want;
            }
            if (s->seen.v[id] == s->piece) break; /* its ancestors were counted with it */
            tdx_str func;
            uint64_t line;
            uint32_t parent;
            if (s->frames.frame(s->frames.self, id, &func, &line, &parent)) break;
            s->seen.v[id] = s->piece;
            /* "<id>":{"name":"<func>:<line>"[,"parent":<p>]}, as stackFrameEncodedSize */
            uint64_t sz = 15 + func.n + 1 + (uint64_t)(line ? ndigits(line) : 1) + ndigits(id);
            if (parent) sz += 10 + ndigits(parent);
            s->frames_size += sz;
            id = parent;
        }
    }
    if (required + s->frames_size + s->events < (uint64_t)s->max) return 0;
    tdx_vrange r;
    range_set(&r, s->start, i + 1, s->start_ts, ts);
    r.bytes = required + s->frames_size + s->events;
    if (tdx_vec_push(&s->ranges, r)) return -1;
    s->start = i + 1;
    s->events = s->frames_size = 0;
    s->piece++;
    return 0;
}

int tdx_jsplit_event(void *ctx, const tdx_vev *ev) {
    tdx_jsplit *s = ctx;
    if (s->err) return -1;
    size_t len = tdx_json_event_size(ev);
    if (ev->required) {
        s->nrequired++;
        s->required_bytes += len;
        return 0;
    }
    uint32_t size = (uint32_t)(len + 2);
    if (s->online) {
        if (split_step(s, s->required, ev->ts, size, (uint32_t)ev->sf, (uint32_t)ev->esf))
            return s->err = 1, -1;
        return 0;
    }
    tdx_jsplit_rec r = {ev->ts, size, (uint32_t)ev->sf, (uint32_t)ev->esf};
    if (tdx_vec_push(&s->recs, r)) return s->err = 1, -1;
    return 0;
}

int tdx_jsplit_finish(tdx_jsplit *s, tdx_vrange **out, size_t *nout) {
    *out = NULL;
    *nout = 0;
    if (s->err) return -1;
    uint64_t required = tdx_jsplit_required_size(s->nrequired, s->required_bytes);
    if (s->online) {
        if (required != s->required) return -1; /* the size given up front was wrong */
    } else {
        for (size_t i = 0; i < s->recs.n; i++) {
            const tdx_jsplit_rec *r = &s->recs.v[i];
            if (split_step(s, required, r->ts, r->size, r->sf, r->esf)) return s->err = 1, -1;
        }
    }
    if (s->ranges.n <= 1) return 0;
    if (s->n > 0 && s->start < s->n - 1) {
        tdx_vrange r;
        range_set(&r, s->start, s->n - 1, s->start_ts, s->last_ts);
        r.bytes = required + s->frames_size + s->events;
        if (tdx_vec_push(&s->ranges, r)) return s->err = 1, -1;
    }
    *out = s->ranges.v;
    *nout = s->ranges.n;
    memset(&s->ranges, 0, sizeof s->ranges);
    return 0;
}

void tdx_jsplit_free(tdx_jsplit *s) {
    tdx_vec_free(&s->recs);
    tdx_vec_free(&s->seen);
    tdx_vec_free(&s->ranges);
}

int tdx_vranges_json(tdx_buf *out, const tdx_vrange *r, size_t n) {
    if (n == 0) return tdx_buf_append(out, "[]\n", 3);
    int rc = tdx_buf_append(out, "[\n", 2);
    for (size_t i = 0; i < n && !rc; i++) {
        rc =
            tdx_buf_append(out, "  {\n    \"name\": ", 16) ||
            tdx_json_quote(out, (const uint8_t *)r[i].name, strlen(r[i].name)) ||
            tdx_buf_printf(out,
                           ",\n    \"start\": %lld,\n    \"end\": %lld,\n    \"startTime\": %lld,\n"
                           "    \"endTime\": %lld\n  }%s\n",
                           (long long)r[i].start, (long long)r[i].end, (long long)r[i].start_time,
                           (long long)r[i].end_time, i + 1 < n ? "," : "");
    }
    return rc || tdx_buf_append(out, "]\n", 2) ? -1 : 0;
}
