/* strpack.c: LZ77 + rANS packing of the string table.
 *
 * Packed form (mode 1): the mode byte, uvarint strings n, uvarint total bytes, uvarint number of
 * chunks, a directory of 24-byte entries (per chunk: u64 offset of its coded symbols in the data
 * that follows, u32 their length, u32 the bytes of its strings, u64 XXH3 of the coded symbols),
 * the XXH3 of everything from the mode byte through the directory, then the chunks' coded
 * symbols (rans.c). Chunk k holds strings [k * TDX_STR_CHUNK, ...), TDX_STR_CHUNK of them but
 * in the last. Mode 0 (stored, when packing would shrink the table more than MAXRATIO times,
 * which only degenerate tables do: the decoder refuses such claims to bound what damage can
 * allocate): uvarint length of every string, their bytes, the XXH3 of everything before it.
 * Per string: its length; then sequences of a literal run (count, then the bytes) and, unless
 * the string is complete, a match: distance back in the chunk's strings decoded so far, and
 * length. Literals are coded in the context of the previous byte's class (digit, letter,
 * separator, ...), which is what is left to model once matches have taken the repeated text.
 *
 * Chunks are independent (matches stay inside one) and each carries its own checksum, so that
 * opening an index reads and checks only the directory, and a query unpacks (and checks) only
 * the chunks whose strings it prints: nothing a query does grows with the table. */
#include "index/format/strpack.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/checksum.h"
#include "core/varint.h"
#include "index/format/format.h"
#include "index/format/rans.h"
#include "index/common/scratch.h"

#define MINMATCH 4
#define WINDOW (1u << 20) /* match distances at most */
#define HBITS 17          /* hash of 4 bytes -> last position */
#define DEPTH 2           /* candidates tried per position (a hash chain) */
#define MAXRATIO 4096     /* unpacked bytes per packed byte at most */

/* Chunk directory entry: offset in the data, coded length, string bytes, XXH3. */
enum { CE_OFF = 0, CE_LEN = 8, CE_BYTES = 12, CE_HASH = 16, CE_SIZE = 24 };

enum { C_LEN = 0, C_RUN = 1, C_OFF = 3, C_MLEN = 4, C_LIT = 5, C_COUNT = C_LIT + 8 };
enum { L_LEN = 0, L_LIT = 1, L_OFF = 2, L_MLEN = 3 };

/* The class of a byte, as the context of the next literal (class 0: string start). */
static const uint8_t bclass[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['a'] = 2, ['b'] = 2, ['c'] = 2, ['d'] = 2, ['e'] = 2, ['f'] = 2,
    ['g'] = 2, ['h'] = 2, ['i'] = 2, ['j'] = 2, ['k'] = 2, ['l'] = 2, ['m'] = 2, ['n'] = 2,
    ['o'] = 2, ['p'] = 2, ['q'] = 2, ['r'] = 2, ['s'] = 2, ['t'] = 2, ['u'] = 2, ['v'] = 2,
    ['w'] = 2, ['x'] = 2, ['y'] = 2, ['z'] = 2, ['A'] = 3, ['B'] = 3, ['C'] = 3, ['D'] = 3,
    ['E'] = 3, ['F'] = 3, ['G'] = 3, ['H'] = 3, ['I'] = 3, ['J'] = 3, ['K'] = 3, ['L'] = 3,
    ['M'] = 3, ['N'] = 3, ['O'] = 3, ['P'] = 3, ['Q'] = 3, ['R'] = 3, ['S'] = 3, ['T'] = 3,
    ['U'] = 3, ['V'] = 3, ['W'] = 3, ['X'] = 3, ['Y'] = 3, ['Z'] = 3, ['/'] = 4, ['.'] = 5,
    [' '] = 6, ['_'] = 7, ['-'] = 7, ['='] = 7, [':'] = 7, ['('] = 7, [')'] = 7, ['*'] = 7,
    ['@'] = 7, [','] = 7,
};

static inline int lit_ctx(const uint8_t *s, size_t i) {
    return i ? (bclass[s[i - 1]] ? bclass[s[i - 1]] : 7) : 0;
}

static inline uint32_t hash4(const uint8_t *p) {
    uint32_t x;
    memcpy(&x, p, 4);
    return (x * 2654435761u) >> (32 - HBITS);
}

/* Literal run s[from, to), then nothing (the caller codes the match, if any). */
static void put_lits(tdx_rans_enc *rc, const uint8_t *s, size_t from, size_t to, int after_match) {
    tdx_rans_put_uint(rc, L_LEN, C_RUN + after_match, to - from);
    for (size_t i = from; i < to; i++) tdx_rans_put(rc, L_LIT, C_LIT + lit_ctx(s, i), s[i]);
}

/* Where pack_chunks sends each chunk's coded symbols, and what it calls every few MiB of
 * strings read (to give their pages back). */
typedef struct {
    int (*data)(void *ctx, const void *p, size_t n, tdx_err *err);
    void *ctx;
    void (*tick)(void *ctx);
    void *tick_ctx;
    tdx_err *err;
} chunk_sink;

#define TICK_BYTES ((uint64_t)4 << 20)

/* Codes the chunks of strings 0..n-1 in order: their coded symbols go to the sink, their
 * directory entries to dir; *data_len is the symbols' total. 0, or -1 (memory, or the sink's
 * error). */
static int pack_chunks(const uint8_t *bytes, const uint64_t *off, uint64_t n, tdx_buf *dir,
                       uint64_t *data_len, const chunk_sink *sk) {
    uint32_t *head = malloc(((size_t)1 << HBITS) * sizeof *head);
    uint32_t *chain = malloc((size_t)WINDOW * sizeof *chain);
    tdx_buf chunk = {0};
    tdx_rans_enc rc;
    tdx_rans_enc_init(&rc);
    int rc2 = head && chain ? 0 : -1;
    /* Positions are stored + 1 (0: none). */
    if (head) memset(head, 0, ((size_t)1 << HBITS) * sizeof *head);
    uint64_t total = n ? off[n] - off[0] : 0, dn = 0, ticked = 0;
    const uint8_t *base = total ? bytes + off[0] : bytes;
    for (uint64_t i = 0; i < n && !rc2;) {
        uint64_t j = i + TDX_STR_CHUNK < n ? i + TDX_STR_CHUNK : n;
        /* Matches stay inside the chunk (positions are + 1, as in head and chain). */
        size_t cstart = (size_t)(off[i] - off[0]) + 1;
        if (tdx_rans_enc_reset(&rc, C_COUNT)) {
            rc2 = -1;
            break;
        }
        for (uint64_t k = i; k < j && !rc2; k++) {
            size_t pos = (size_t)(off[k] - off[0]), len = (size_t)(off[k + 1] - off[k]);
            const uint8_t *s = len ? base + pos : base; /* (all empty: base may be NULL) */
            /* At most: length, and per byte a literal or a run + match (3 symbols). */
            if (tdx_rans_enc_reserve(&rc, 3 * len + 4, 0)) {
                rc2 = -1;
                break;
            }
            tdx_rans_put_uint(&rc, L_LEN, C_LEN, len);
            size_t lit = 0, x = 0;
            int after = 0;
            while (x + MINMATCH <= len) {
                /* The longest match among the last DEPTH positions with the same hash. */
                uint32_t h = hash4(s + x);
                size_t cand = head[h], ml = 0, best = 0;
                size_t at = pos + x;
                chain[at & (WINDOW - 1)] = (uint32_t)cand;
                head[h] = (uint32_t)(at + 1);
                for (int dpt = 0; dpt < DEPTH && cand >= cstart && at + 1 - cand <= WINDOW - 1;
                     dpt++) {
                    const uint8_t *c = base + cand - 1;
                    /* Only a candidate that beats the best so far at its last byte can win. */
                    if (x + ml < len && c[ml] == s[x + ml]) {
                        size_t l = 0;
                        while (x + l < len && c[l] == s[x + l]) l++;
                        if (l > ml) ml = l, best = cand;
                    }
                    cand = chain[(cand - 1) & (WINDOW - 1)];
                }
                /* Worth it when the literals would cost more than the match (about 4 bits a
                 * literal against a distance's size class and bits). */
                size_t dist = at - (best - 1);
                if (ml < MINMATCH || 4 * ml < (size_t)(64 - __builtin_clzll(dist)) + 8) {
                    x++;
                    continue;
                }
                put_lits(&rc, s, lit, x, after);
                tdx_rans_put_uint(&rc, L_OFF, C_OFF, dist - 1);
                tdx_rans_put_uint(&rc, L_MLEN, C_MLEN, ml - MINMATCH);
                /* Index the matched text too, so later strings find their most recent copy. */
                for (size_t y = x + 1; y < x + ml && y + MINMATCH <= len; y++) {
                    uint32_t hy = hash4(s + y);
                    chain[(pos + y) & (WINDOW - 1)] = head[hy];
                    head[hy] = (uint32_t)(pos + y + 1);
                }
                x += ml;
                lit = x;
                after = 1;
            }
            put_lits(&rc, s, lit, len, after);
        }
        chunk.n = 0;
        if (rc2 || tdx_rans_enc_finish(&rc, &chunk)) {
            rc2 = -1;
            break;
        }
        uint8_t e[CE_SIZE];
        if (chunk.n > UINT32_MAX || off[j] - off[i] > UINT32_MAX) {
            rc2 = -1;
            break;
        }
        tdx_le64(e + CE_OFF, dn);
        tdx_le32(e + CE_LEN, (uint32_t)chunk.n);
        tdx_le32(e + CE_BYTES, (uint32_t)(off[j] - off[i]));
        tdx_le64(e + CE_HASH, XXH3_64bits(chunk.v, chunk.n));
        rc2 |= tdx_buf_append(dir, e, CE_SIZE);
        if (!rc2 && sk->data(sk->ctx, chunk.v, chunk.n, sk->err)) rc2 = -1;
        dn += chunk.n;
        if (sk->tick && off[j] - off[0] - ticked >= TICK_BYTES) {
            sk->tick(sk->tick_ctx);
            ticked = off[j] - off[0];
        }
        i = j;
    }
    free(head);
    free(chain);
    tdx_vec_free(&chunk);
    tdx_rans_enc_free(&rc);
    *data_len = dn;
    return rc2 ? -1 : 0;
}

/* Appends the XXH3 of out[from, end). */
static int put_hash(tdx_buf *out, size_t from) {
    uint8_t h[8];
    tdx_le64(h, XXH3_64bits(out->v + from, out->n - from));
    return tdx_buf_append(out, h, 8);
}

/* The packed form's header: mode byte 1, counts, the directory, their XXH3. */
static int pack_header(tdx_buf *h, uint64_t n, uint64_t total, const tdx_buf *dir) {
    size_t start = h->n;
    int rc = tdx_vec_push(h, (uint8_t)1);
    rc |= tdx_buf_uvarint(h, n);
    rc |= tdx_buf_uvarint(h, total);
    rc |= tdx_buf_uvarint(h, (n + TDX_STR_CHUNK - 1) / TDX_STR_CHUNK);
    if (!rc && dir->n) rc = tdx_buf_append(h, dir->v, dir->n);
    if (!rc) rc = put_hash(h, start);
    return rc ? -1 : 0;
}

static int buf_data(void *ctx, const void *p, size_t n, tdx_err *err) {
    (void)err;
    return n && tdx_buf_append(ctx, p, n) ? -1 : 0;
}

typedef struct {
    const tdx_strpack_out *o;
    XXH3_state_t *x; /* the stored form's running hash */
} stream;

static int stream_put(stream *st, const void *p, size_t n, tdx_err *err) {
    XXH3_64bits_update(st->x, p, n);
    return n ? st->o->put(st->o->ctx, p, n, err) : 0;
}

/* The stored form (mode 0), in pieces, its hash computed as they go. */
static int write_stored(const uint8_t *bytes, const uint64_t *off, uint64_t n,
                        const tdx_strpack_out *o, tdx_err *err) {
    stream st = {o, XXH3_createState()};
    if (!st.x || XXH3_64bits_reset(st.x) != XXH_OK) {
        XXH3_freeState(st.x);
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    }
    uint8_t m = 0, h[8];
    tdx_buf b = {0};
    int rc = stream_put(&st, &m, 1, err);
    for (uint64_t i = 0; i < n && !rc; i++) {
        if (tdx_buf_uvarint(&b, off[i + 1] - off[i])) {
            rc = tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        } else if (b.n >= 65536 || i + 1 == n) {
            rc = stream_put(&st, b.v, b.n, err);
            b.n = 0;
        }
    }
    tdx_vec_free(&b);
    uint64_t total = n ? off[n] - off[0] : 0;
    for (uint64_t at = 0; at < total && !rc; at += TICK_BYTES) {
        uint64_t k = total - at < TICK_BYTES ? total - at : TICK_BYTES;
        rc = stream_put(&st, bytes + off[0] + at, (size_t)k, err);
        if (o->tick) o->tick(o->tick_ctx);
    }
    if (!rc) {
        tdx_le64(h, XXH3_64bits_digest(st.x));
        rc = o->put(o->ctx, h, 8, err);
    }
    XXH3_freeState(st.x);
    return rc ? -1 : 0;
}

int tdx_strpack_encode(tdx_buf *out, const uint8_t *bytes, const uint64_t *off, uint64_t n) {
    size_t start = out->n;
    uint64_t total = n ? off[n] - off[0] : 0, dn;
    tdx_buf dir = {0}, data = {0};
    chunk_sink sk = {buf_data, &data, NULL, NULL, NULL};
    int rc = pack_chunks(bytes, off, n, &dir, &dn, &sk) || pack_header(out, n, total, &dir) ||
             (data.n && tdx_buf_append(out, data.v, data.n));
    tdx_vec_free(&dir);
    tdx_vec_free(&data);
    if (rc) return -1;
    if (total / MAXRATIO <= out->n - start) return 0;
    out->n = start;
    tdx_strpack_out o = {buf_data, out, NULL, NULL, NULL};
    tdx_err err;
    return write_stored(bytes, off, n, &o, &err);
}

static int scratch_data(void *ctx, const void *p, size_t n, tdx_err *err) {
    return tdx_scratch_put(ctx, p, n, err);
}

int tdx_strpack_write(const uint8_t *bytes, const uint64_t *off, uint64_t n,
                      const tdx_strpack_out *o, tdx_err *err) {
    uint64_t total = n ? off[n] - off[0] : 0, dn = 0;
    tdx_scratch data;
    if (tdx_scratch_open(&data, o->beside, err)) return -1;
    tdx_buf dir = {0}, h = {0};
    chunk_sink sk = {scratch_data, &data, o->tick, o->tick_ctx, err};
    err->kind = TDX_OK;
    int rc = pack_chunks(bytes, off, n, &dir, &dn, &sk);
    if (!rc) rc = pack_header(&h, n, total, &dir);
    if (rc && err->kind == TDX_OK) tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    tdx_vec_free(&dir);
    if (!rc && total / MAXRATIO <= h.n + dn)
        rc = o->put(o->ctx, h.v, h.n, err) || tdx_scratch_copy(&data, o->put, o->ctx, err);
    else if (!rc)
        rc = write_stored(bytes, off, n, o, err);
    tdx_vec_free(&h);
    tdx_scratch_close(&data);
    return rc ? -1 : 0;
}

static int get_uv(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    int k = tdx_uvarint(*p, end, v);
    if (k < 0) return -1;
    *p += k;
    return 0;
}

static int stored(const uint8_t *p, const uint8_t *end, uint64_t n, tdx_str *strs) {
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t l;
        if (get_uv(&p, end, &l) || l > UINT32_MAX) return -1;
        strs[i].n = (uint32_t)l;
        sum += l;
        if (sum > (uint64_t)(end - p)) return -1;
    }
    if (sum != (uint64_t)(end - p)) return -1;
    for (uint64_t i = 0; i < n; i++) {
        strs[i].p = p;
        p += strs[i].n;
    }
    return 0;
}

int tdx_strpack_open(tdx_strpack *sp, const uint8_t *p, size_t len, uint64_t n, tdx_str *strs,
                     int *oom) {
    const uint8_t *end = p + len, *start = p;
    uint64_t n2, total, nchunks;
    memset(sp, 0, sizeof *sp);
    *oom = 0;
    if (len < 9) return -1;
    if (*p == 0) { /* stored: checked whole, unpacked at once */
        if (!tdx_checksum_ok(start, len - 8, tdx_rd64(end - 8))) return -1;
        sp->stored = 1;
        sp->n = n;
        return stored(p + 1, end - 8, n, strs);
    }
    if (*p++ != 1) return -1;
    if (get_uv(&p, end, &n2) || get_uv(&p, end, &total) || get_uv(&p, end, &nchunks) || n2 != n ||
        nchunks != (n + TDX_STR_CHUNK - 1) / TDX_STR_CHUNK || total / MAXRATIO > len ||
        nchunks > (uint64_t)(end - p) / CE_SIZE)
        return -1;
    const uint8_t *dir = p;
    p += nchunks * CE_SIZE;
    if ((size_t)(end - p) < 8 || !tdx_checksum_ok(start, (size_t)(p - start), tdx_rd64(p)))
        return -1;
    p += 8;
    sp->dir = dir;
    sp->p = p;
    sp->end = end;
    sp->n = n;
    sp->nchunks = nchunks;
    return 0;
}

void tdx_strpack_close(tdx_strpack *sp) {
    memset(sp, 0, sizeof *sp);
}

int tdx_strpack_chunk(const tdx_strpack *sp, uint64_t k, tdx_arena *a, tdx_str *strs, int *oom) {
    *oom = 0;
    if (sp->stored) return 0;
    if (k >= sp->nchunks) return -1;
    const uint8_t *e = sp->dir + k * CE_SIZE;
    uint64_t at = tdx_rd64(e + CE_OFF), datalen = (uint64_t)(sp->end - sp->p);
    size_t clen = tdx_rd32(e + CE_LEN), total = tdx_rd32(e + CE_BYTES);
    if (at > datalen || clen > datalen - at || total / MAXRATIO > clen + 16) return -1;
    const uint8_t *p = sp->p + at;
    if (!tdx_checksum_ok(p, clen, tdx_rd64(e + CE_HASH))) return -1;
    uint64_t first = k * TDX_STR_CHUNK, ns = k + 1 < sp->nchunks ? TDX_STR_CHUNK : sp->n - first;
    uint8_t *buf = tdx_arena_alloc(a, total ? total : 1);
    if (!buf) return *oom = 1, -1;
    tdx_rans_dec d;
    tdx_rans_dec_init(&d);
    size_t fill = 0;
    int rc = -1;
    if (tdx_rans_dec_start(&d, C_COUNT, p, clen)) goto out;
    for (uint64_t i = 0; i < ns; i++) {
        uint64_t sl = tdx_rans_get_uint(&d, L_LEN, C_LEN);
        if (sl > total - fill || sl > UINT32_MAX) goto out;
        uint8_t *s = buf + fill;
        size_t x = 0;
        int after = 0;
        for (;;) {
            uint64_t run = tdx_rans_get_uint(&d, L_LEN, C_RUN + after);
            if (run > sl - x) goto out;
            for (uint64_t r = 0; r < run; r++, x++)
                s[x] = (uint8_t)tdx_rans_get(&d, L_LIT, C_LIT + lit_ctx(s, x));
            if (x == sl) break;
            uint64_t dist = tdx_rans_get_uint(&d, L_OFF, C_OFF) + 1,
                     ml = tdx_rans_get_uint(&d, L_MLEN, C_MLEN) + MINMATCH;
            if (dist > fill + x || ml > sl - x) goto out;
            /* Byte by byte: the copy may overlap what it produces. */
            const uint8_t *from = s + x - dist;
            for (uint64_t r = 0; r < ml; r++) s[x + r] = from[r];
            x += (size_t)ml;
            after = 1;
        }
        if (d.bad) goto out;
        strs[first + i] = (tdx_str){s, (uint32_t)sl};
        fill += (size_t)sl;
    }
    if (!tdx_rans_dec_ok(&d) || fill != total) goto out;
    rc = 0;
out:
    tdx_rans_dec_free(&d);
    return rc;
}

int tdx_strpack_decode(const uint8_t *p, size_t len, uint64_t n, tdx_arena *a, tdx_str *strs,
                       int *oom) {
    tdx_strpack sp;
    if (tdx_strpack_open(&sp, p, len, n, strs, oom)) return -1;
    int rc = 0;
    for (uint64_t k = 0; k < sp.nchunks && !rc; k++) rc = tdx_strpack_chunk(&sp, k, a, strs, oom);
    tdx_strpack_close(&sp);
    return rc;
}
