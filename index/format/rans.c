/* rans.c: static-model rANS (32-bit state, byte-wise renormalisation, after ryg_rans) with
 * per-block tables chosen by context, plus the raw bit stream.
 *
 * Coded form (appended by tdx_rans_enc_finish, read by tdx_rans_dec_start):
 *   uvarint ntables, uvarint header length, header bits (the tables, see put_table),
 *   per lane: uvarint length, 4-byte final state (LE), the lane's bytes,
 *   uvarint raw-bit length, the raw bits (LSB first).
 * Symbols are coded in reverse, so the encoder collects each lane's symbols first and codes them
 * once the block's counts (hence tables) are known. */
#include "index/format/rans.h"

#include <string.h>

#include "core/varint.h"

/* ---- bit writer for table headers (same bit order as the raw stream) ---- */

typedef struct {
    tdx_buf *b;
    uint64_t acc;
    int n;
    int oom;
} bitw;

static void bw_put(bitw *w, uint64_t v, int n) {
    if (n > 32) {
        bw_put(w, v & 0xffffffffu, 32);
        v >>= 32;
        n -= 32;
    }
    /* NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): n <= 32 here */
    w->acc |= (v & ((1ull << n) - 1)) << w->n;
    w->n += n;
    while (w->n >= 8) {
        if (tdx_vec_push(w->b, (uint8_t)w->acc)) w->oom = 1;
        w->acc >>= 8;
        w->n -= 8;
    }
}

static void bw_flush(bitw *w) {
    if (w->n > 0 && tdx_vec_push(w->b, (uint8_t)w->acc)) w->oom = 1;
    w->acc = 0;
    w->n = 0;
}

static inline int bitlen(uint64_t v) {
    return v ? 64 - __builtin_clzll(v) : 0;
}

/* Elias gamma code of v >= 1: bitlen(v)-1 zeros, then v's bits from the top. Written as: the
 * count of zeros in unary, then the bits below the leading one (LSB first). */
static void bw_gamma(bitw *w, uint64_t v) {
    int n = bitlen(v) - 1;
    /* NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): v >= 1 */
    bw_put(w, 1ull << n, n + 1); /* n zeros then a one (LSB first) */
    if (n) bw_put(w, v, n);      /* the leading one is implied */
}

typedef struct {
    const uint8_t *p;
    size_t pos, len; /* in bits */
    int bad;
} bitr;

static uint64_t br_get(bitr *r, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) {
        if (r->pos >= r->len) {
            r->bad = 1;
            return 0;
        }
        v |= (uint64_t)((r->p[r->pos >> 3] >> (r->pos & 7)) & 1) << i;
        r->pos++;
    }
    return v;
}

static uint64_t br_gamma(bitr *r) {
    int n = 0;
    while (!br_get(r, 1)) {
        if (r->bad || ++n > 40) {
            r->bad = 1;
            return 1;
        }
    }
    return (1ull << n) | br_get(r, n);
}

/* ---- encoder ---- */

void tdx_rans_enc_init(tdx_rans_enc *e) {
    memset(e, 0, sizeof *e);
}

void tdx_rans_enc_free(tdx_rans_enc *e) {
    free(e->tab_of);
    free(e->xbits);
    tdx_vec_free(&e->tabs);
    for (int i = 0; i < TDX_RANS_LANES; i++) tdx_vec_free(&e->tok[i]);
    tdx_vec_free(&e->bits);
    tdx_vec_free(&e->tmp);
    memset(e, 0, sizeof *e);
}

int tdx_rans_enc_reset(tdx_rans_enc *e, uint32_t nctx) {
    if (nctx > e->nctx || !e->tab_of) {
        free(e->tab_of);
        e->tab_of = calloc(nctx, sizeof *e->tab_of);
        if (!e->tab_of) return -1;
        e->nctx = nctx;
    } else {
        for (size_t i = 0; i < e->tabs.n; i++) e->tab_of[e->tabs.v[i].ctx] = 0;
    }
    e->tabs.n = 0;
    for (int i = 0; i < TDX_RANS_LANES; i++) e->tok[i].n = 0;
    e->bits.n = 0;
    e->acc = 0;
    e->nacc = 0;
    e->oom = 0;
    return 0;
}

int tdx_rans_enc_reserve(tdx_rans_enc *e, size_t n, size_t nbits) {
    for (int i = 0; i < TDX_RANS_LANES; i++)
        if (tdx_vec_reserve(&e->tok[i], e->tok[i].n + n)) return e->oom = -1;
    if (tdx_vec_reserve(&e->bits, e->bits.n + nbits / 8 + 16)) return e->oom = -1;
    return 0;
}

int tdx_rans_new_tab_(tdx_rans_enc *e, uint32_t ctx) {
    /* At most 65535 tables (an index of 16 bits fits the token with its symbol). */
    if (e->tabs.n >= 65535 || tdx_vec_reserve(&e->tabs, e->tabs.n + 1)) {
        e->oom = -1;
        return -1;
    }
    tdx_rans_etab *t = &e->tabs.v[e->tabs.n++];
    t->ctx = ctx;
    memset(t->count, 0, sizeof t->count);
    e->tab_of[ctx] = (uint16_t)e->tabs.n;
    return 0;
}

/* Table weights. A table sends either its symbols' exact counts or, when that is dearer, each
 * count's logarithm in quarter octaves (WQ[L] = 16 * 2^(L/4)); both sides turn the weights into
 * frequencies summing to 2^bits with the same integer arithmetic (spread_weights). */
static const uint32_t WQ[64] = {
    16,     19,     23,     27,     32,     38,     45,     54,     64,     76,     91,
    108,    128,    152,    181,    215,    256,    304,    362,    431,    512,    609,
    724,    861,    1024,   1218,   1448,   1722,   2048,   2435,   2896,   3444,   4096,
    4871,   5793,   6889,   8192,   9742,   11585,  13777,  16384,  19484,  23170,  27554,
    32768,  38968,  46341,  55109,  65536,  77936,  92682,  110218, 131072, 155872, 185364,
    220436, 262144, 311744, 370728, 440872, 524288, 623487, 741455, 881744};

/* Frequencies f[0..k) in proportion to w[0..k) (each > 0), at least 1 each, summing to 2^bits
 * (2^bits >= k). The rounding error goes to the largest weights, lowest index first. */
static void spread_weights(const uint32_t *w, int k, int bits, uint32_t *f) {
    uint64_t W = 0;
    uint32_t m = 1u << bits, sum = 0;
    for (int i = 0; i < k; i++) W += w[i];
    for (int i = 0; i < k; i++) {
        uint64_t x = (uint64_t)w[i] * m / W;
        f[i] = x ? (uint32_t)x : 1;
        sum += f[i];
    }
    while (sum != m) {
        int best = 0;
        for (int i = 1; i < k; i++)
            if (f[i] > f[best] || (f[i] == f[best] && w[i] > w[best])) best = i;
        if (sum < m) {
            /* NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Assign): k >= 1, f[0] is set */
            f[best] += m - sum;
            sum = m;
        } else {
            uint32_t d = sum - m, can = f[best] - 1;
            if (can > d) can = d;
            if (!can) return; /* cannot happen while 2^bits >= k */
            f[best] -= can;
            sum -= can;
        }
    }
}

static int gamma_len(uint64_t v) {
    return 2 * bitlen(v) - 1;
}

static int qlog(uint32_t c) {
    /* The L whose WQ[L] = 16 * 2^(L/4) is nearest to 16c in ratio. */
    int l = (int)(4 * __builtin_log2((double)c) + 0.5);
    return l < 0 ? 0 : l > 63 ? 63 : l;
}

/* Chooses the table's precision and weights and computes its frequencies (freq[symbol]).
 * Returns the header mode: 0 exact counts, 1 quantized weights. */
static int plan_table(tdx_rans_etab *t, uint32_t *freq, uint8_t *syms, uint32_t *wq, int *nsym) {
    uint32_t n = 0, cnt[256];
    int k = 0;
    for (int s = 0; s < 256; s++)
        if (t->count[s]) {
            n += t->count[s];
            cnt[k] = t->count[s];
            syms[k++] = (uint8_t)s;
        }
    t->total = n;
    *nsym = k;
    memset(freq, 0, 256 * sizeof *freq);
    if (k <= 1) {
        t->bits = 0;
        if (k) freq[syms[0]] = 1;
        return 0;
    }
    /* Precision about the count (2^bits in (n, 2n]): more would only cost header bits. */
    int bits = bitlen(n);
    if (bits > TDX_RANS_MAXBITS) bits = TDX_RANS_MAXBITS;
    while ((1u << bits) < (uint32_t)k) bits++;
    t->bits = (uint8_t)bits;
    uint32_t fe[256], fq[256], wl[256];
    spread_weights(cnt, k, bits, fe);
    for (int i = 0; i < k; i++) wl[i] = WQ[qlog(cnt[i])];
    spread_weights(wl, k, bits, fq);
    double ce = 0, cq = 6.0 * k;
    for (int i = 0; i < k; i++) {
        ce += gamma_len(cnt[i]) + cnt[i] * ((double)bits - __builtin_log2((double)fe[i]));
        cq += cnt[i] * ((double)bits - __builtin_log2((double)fq[i]));
    }
    int mode = cq < ce;
    for (int i = 0; i < k; i++) {
        freq[syms[i]] = mode ? fq[i] : fe[i];
        wq[i] = mode ? (uint32_t)qlog(cnt[i]) : cnt[i];
    }
    return mode;
}

static void init_esyms(tdx_rans_etab *t, const uint32_t *freq) {
    uint32_t start = 0;
    int bits = t->bits;
    for (int s = 0; s < 256; s++) {
        uint32_t f = freq[s];
        if (!f) continue;
        tdx_rans_esym *y = &t->sym[s];
        y->x_max = ((TDX_RANS_L >> bits) << 8) * f;
        y->cmpl_freq = (uint16_t)((1u << bits) - f);
        if (f < 2) {
            y->rcp_freq = ~0u;
            y->rcp_shift = 0;
            y->bias = start + (1u << bits) - 1;
        } else {
            uint32_t shift = 0;
            while (f > (1u << shift)) shift++;
            y->rcp_freq = (uint32_t)(((1ull << (shift + 31)) + f - 1) / f);
            y->rcp_shift = (uint16_t)(shift - 1);
            y->bias = start;
        }
        start += f;
    }
}

/* Table header: 4 bits precision; precision 0: the symbol (8 bits); else gamma(k-1), the
 * symbols ascending (gamma(first+1), then gamma of each gap), a mode bit, then per symbol its
 * exact count (gamma) or its quantized weight (6 bits). */
static void put_table(bitw *w, const tdx_rans_etab *t, const uint8_t *syms, const uint32_t *wq,
                      int k, int mode) {
    bw_put(w, t->bits, 4);
    if (t->bits == 0) {
        bw_put(w, k ? syms[0] : 0, 8);
        return;
    }
    bw_gamma(w, (uint64_t)k - 1);
    int prev = -1;
    for (int i = 0; i < k; i++) {
        bw_gamma(w, (uint64_t)(syms[i] - prev));
        prev = syms[i];
    }
    bw_put(w, (uint64_t)mode, 1);
    for (int i = 0; i < k; i++) {
        if (mode)
            bw_put(w, wq[i], 6);
        else
            bw_gamma(w, wq[i]);
    }
}

static int by_ctx(const void *a, const void *b) {
    uint32_t x = (*(const tdx_rans_etab *const *)a)->ctx,
             y = (*(const tdx_rans_etab *const *)b)->ctx;
    return x < y ? -1 : x > y;
}

/* One symbol into a lane coded backwards (*pp: the lane's first byte so far). A single-symbol
 * table's entry is an identity (x_max 2^31 is never reached, cmpl_freq and bias are 0). */
static inline uint32_t code_sym(const tdx_rans_etab *tabs, uint32_t tok, uint32_t x, uint8_t **pp) {
    const tdx_rans_esym *y = &tabs[tok >> 8].sym[tok & 255];
    /* Renormalise without branches: x < 2^31 and x_max >= 2^21, so at most two bytes go out,
     * x's low byte last (nearest the end). Both are stored; p moves by the ones that count. */
    uint64_t xm = y->x_max;
    unsigned nb = (unsigned)(x >= xm) + (unsigned)(x >= xm << 8);
    uint8_t *p = *pp;
    p[-1] = (uint8_t)x;
    p[-2] = (uint8_t)(x >> 8);
    *pp = p - nb;
    x >>= 8 * nb;
    uint32_t q = (uint32_t)(((uint64_t)x * y->rcp_freq) >> 32) >> y->rcp_shift;
    return x + y->bias + q * y->cmpl_freq;
}

/* Codes each lane backwards into its own stretch of tmp, then appends it (length, final state,
 * bytes). The lanes advance side by side: each state is a chain of dependent multiplies, and
 * four independent chains keep the multiplier busy where one would wait on it. */
static int code_lanes(tdx_rans_enc *e, tdx_buf *out) {
    _Static_assert(TDX_RANS_LANES == 4, "code_lanes interleaves four lanes");
    size_t n[4], cap[4], total = 0;
    for (int l = 0; l < 4; l++) {
        n[l] = e->tok[l].n;
        cap[l] = n[l] * 2 + 16; /* two bytes per symbol at most, the state, two bytes of slack */
        total += cap[l];
    }
    e->tmp.n = 0;
    if (tdx_vec_reserve(&e->tmp, total)) return -1;
    uint8_t *end[4], *p0, *p1, *p2, *p3;
    end[0] = e->tmp.v + cap[0];
    for (int l = 1; l < 4; l++) end[l] = end[l - 1] + cap[l];
    p0 = end[0], p1 = end[1], p2 = end[2], p3 = end[3];
    uint32_t x0 = TDX_RANS_L, x1 = TDX_RANS_L, x2 = TDX_RANS_L, x3 = TDX_RANS_L;
    const tdx_rans_etab *tabs = e->tabs.v;
    const uint32_t *t0 = e->tok[0].v, *t1 = e->tok[1].v, *t2 = e->tok[2].v, *t3 = e->tok[3].v;
    size_t i0 = n[0], i1 = n[1], i2 = n[2], i3 = n[3];
    size_t m = i0 < i1 ? i0 : i1;
    if (i2 < m) m = i2;
    if (i3 < m) m = i3;
    for (size_t k = 0; k < m; k++) {
        x0 = code_sym(tabs, t0[--i0], x0, &p0);
        x1 = code_sym(tabs, t1[--i1], x1, &p1);
        x2 = code_sym(tabs, t2[--i2], x2, &p2);
        x3 = code_sym(tabs, t3[--i3], x3, &p3);
    }
    while (i0) x0 = code_sym(tabs, t0[--i0], x0, &p0);
    while (i1) x1 = code_sym(tabs, t1[--i1], x1, &p1);
    while (i2) x2 = code_sym(tabs, t2[--i2], x2, &p2);
    while (i3) x3 = code_sym(tabs, t3[--i3], x3, &p3);
    uint8_t *p[4] = {p0, p1, p2, p3};
    uint32_t x[4] = {x0, x1, x2, x3};
    int rc = 0;
    for (int l = 0; l < 4 && !rc; l++) {
        p[l] -= 4;
        for (int i = 0; i < 4; i++) p[l][i] = (uint8_t)(x[l] >> (8 * i));
        size_t len = (size_t)(end[l] - p[l]);
        rc |= tdx_buf_uvarint(out, len);
        rc |= tdx_buf_append(out, p[l], len);
    }
    return rc;
}

int tdx_rans_enc_finish(tdx_rans_enc *e, tdx_buf *out) {
    if (e->oom) return -1;
    size_t nt = e->tabs.n;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): the elements are pointers */
    tdx_rans_etab **order = malloc((nt + 1) * sizeof *order);
    if (!order) return -1;
    for (size_t i = 0; i < nt; i++) order[i] = &e->tabs.v[i];
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): the elements are pointers */
    if (nt > 1) qsort(order, nt, sizeof *order, by_ctx);
    e->tmp.n = 0;
    bitw w = {&e->tmp, 0, 0, 0};
    uint32_t freq[256], wq[256];
    uint8_t syms[256];
    uint32_t prev = 0;
    for (size_t i = 0; i < nt; i++) {
        tdx_rans_etab *t = order[i];
        int k;
        int mode = plan_table(t, freq, syms, wq, &k);
        init_esyms(t, freq);
        bw_gamma(&w, t->ctx - prev + 1);
        prev = t->ctx;
        put_table(&w, t, syms, wq, k, mode);
    }
    bw_flush(&w);
    free(order);
    int rc = w.oom;
    rc |= tdx_buf_uvarint(out, nt);
    rc |= tdx_buf_uvarint(out, e->tmp.n);
    rc |= tdx_buf_append(out, e->tmp.v, e->tmp.n);
    if (!rc) rc = code_lanes(e, out);
    /* Raw bits. */
    if (!rc) {
        while (e->nacc > 0) {
            if (tdx_vec_push(&e->bits, (uint8_t)e->acc)) return -1;
            e->acc >>= 8;
            e->nacc -= 8;
        }
        e->nacc = 0;
        rc |= tdx_buf_uvarint(out, e->bits.n);
        rc |= tdx_buf_append(out, e->bits.v, e->bits.n);
    }
    return rc ? -1 : 0;
}

/* ---- decoder ---- */

void tdx_rans_dec_init(tdx_rans_dec *d) {
    memset(d, 0, sizeof *d);
}

void tdx_rans_dec_free(tdx_rans_dec *d) {
    free(d->idx);
    tdx_vec_free(&d->slots);
    tdx_vec_free(&d->tabs_);
    memset(d, 0, sizeof *d);
}

static int get_uv(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    int k = tdx_uvarint(*p, end, v);
    if (k < 0) return -1;
    *p += k;
    return 0;
}

int tdx_rans_dec_start(tdx_rans_dec *d, uint32_t nctx, const uint8_t *p, size_t len) {
    const uint8_t *end = p + len;
    d->bad = 0;
    if (nctx > d->nctx || !d->idx) {
        free(d->idx);
        d->idx = malloc(nctx * sizeof *d->idx);
        if (!d->idx) return -1;
        d->nctx = nctx;
    }
    /* Every context starts absent: table 0, a single-symbol table that marks the block bad. */
    memset(d->idx, 0, nctx * sizeof *d->idx);
    uint64_t nt, hlen;
    if (get_uv(&p, end, &nt) || get_uv(&p, end, &hlen) || nt > nctx || nt > 65535 ||
        hlen > (uint64_t)(end - p))
        return -1;
    if (tdx_vec_reserve(&d->tabs_, nt + 1)) return -1;
    d->tabs_.v[0] = (tdx_rans_dtab){NULL, 0, 0, 0, 1};
    d->tabs_.n = 1;
    bitr r = {p, 0, (size_t)hlen * 8, 0};
    p += hlen;
    uint32_t freq[256], wt[256];
    uint8_t syms[256];
    d->slots.n = 0;
    uint64_t ctx = 0;
    for (uint64_t i = 0; i < nt; i++) {
        uint64_t gap = br_gamma(&r);
        ctx = i == 0 ? gap - 1 : ctx + gap - 1;
        if (r.bad || gap < (i == 0 ? 1u : 2u) || ctx >= nctx) return -1;
        int bits = (int)br_get(&r, 4);
        if (bits > TDX_RANS_MAXBITS) return -1;
        tdx_rans_dtab *t = &d->tabs_.v[d->tabs_.n];
        d->idx[ctx] = (uint16_t)d->tabs_.n++;
        if (bits == 0) {
            *t = (tdx_rans_dtab){NULL, 0, 0, (uint8_t)br_get(&r, 8), 0};
            if (r.bad) return -1;
            continue;
        }
        uint64_t k = br_gamma(&r) + 1;
        if (r.bad || k > 256 || k > (1u << bits)) return -1;
        int s = -1;
        for (uint64_t j = 0; j < k; j++) {
            uint64_t g = br_gamma(&r);
            if (r.bad || (uint64_t)s + g > 255) return -1;
            s += (int)g;
            syms[j] = (uint8_t)s;
        }
        uint32_t m = 1u << bits;
        int mode = (int)br_get(&r, 1);
        for (uint64_t j = 0; j < k; j++) {
            uint64_t x = mode ? WQ[br_get(&r, 6)] : br_gamma(&r);
            if (r.bad || x > UINT32_MAX) return -1;
            wt[j] = (uint32_t)x;
        }
        spread_weights(wt, (int)k, bits, freq);
        uint32_t sum = 0;
        for (uint64_t j = 0; j < k; j++) sum += freq[j];
        if (sum != m || tdx_vec_reserve(&d->slots, d->slots.n + m)) return -1;
        /* The slot storage may still move: the pointers are set below. */
        uint32_t *slot = d->slots.v + d->slots.n;
        uint32_t start = 0;
        for (uint64_t j = 0; j < k; j++) {
            uint32_t e = syms[j] | freq[j] << 8;
            for (uint32_t q = 0; q < freq[j]; q++) slot[start + q] = e | q << 20;
            start += freq[j];
        }
        *t = (tdx_rans_dtab){NULL, m - 1, (uint8_t)bits, 0, 0};
        d->slots.n += m;
    }
    /* The tables' slots are laid out one after another, in table order. */
    size_t off = 0;
    for (size_t i = 1; i < d->tabs_.n; i++) {
        tdx_rans_dtab *t = &d->tabs_.v[i];
        if (!t->bits) continue;
        t->slot = d->slots.v + off;
        off += (size_t)t->mask + 1;
    }
    for (int l = 0; l < TDX_RANS_LANES; l++) {
        uint64_t ll;
        if (get_uv(&p, end, &ll) || ll < 4 || ll > (uint64_t)(end - p)) return -1;
        tdx_rans_lane *ln = &d->lane[l];
        ln->x = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        ln->p = p + 4;
        ln->end = p + ll;
        p += ll;
        if (ln->x < TDX_RANS_L) return -1;
    }
    uint64_t bl;
    if (get_uv(&p, end, &bl) || bl != (uint64_t)(end - p)) return -1;
    d->bits = p;
    d->blen = (size_t)bl;
    d->bpos = 0;
    d->acc = 0;
    d->nacc = 0;
    return 0;
}

void tdx_rans_refill_slow_(tdx_rans_dec *d, int n) {
    while (d->nacc < n) {
        if (d->bpos < d->blen)
            d->acc |= (uint64_t)d->bits[d->bpos] << d->nacc;
        else
            d->bad = 1;
        d->bpos++;
        d->nacc += 8;
    }
}

int tdx_rans_dec_ok(const tdx_rans_dec *d) {
    if (d->bad) return 0;
    for (int l = 0; l < TDX_RANS_LANES; l++)
        if (d->lane[l].x != TDX_RANS_L || d->lane[l].p != d->lane[l].end) return 0;
    /* Every byte of the raw stream was needed: what was read, less whole bytes still buffered. */
    size_t used = d->bpos - (size_t)(d->nacc / 8);
    return used == d->blen;
}
