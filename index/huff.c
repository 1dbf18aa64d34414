/* huff.c: canonical Huffman coding of byte streams, with table-driven decoding. */
#include "huff.h"

#include <stdlib.h>
#include <string.h>

enum { MODE_RAW = 0, MODE_HUFF = 1, MODE_SINGLE = 2 };
#define TABSIZE (1u << TDX_HUFF_MAXLEN)

typedef struct {
    uint32_t freq;
    uint16_t sym;
} node;

static int by_freq(const void *a, const void *b) {
    const node *x = a, *y = b;
    if (x->freq != y->freq) return x->freq < y->freq ? -1 : 1;
    return x->sym < y->sym ? -1 : x->sym > y->sym;
}

/* Huffman code lengths (two-queue construction over sorted leaves), then limited to MAXLEN by
 * lengthening the cheapest shorter codes until the Kraft sum fits. */
static int code_lengths(const uint32_t *freq, uint8_t *len) {
    node leaves[256];
    int n = 0;
    for (int s = 0; s < 256; s++)
        if (freq[s]) leaves[n++] = (node){freq[s], (uint16_t)s};
    qsort(leaves, (size_t)n, sizeof *leaves, by_freq);
    /* Internal nodes: weight and children (index < n: leaf, else internal). */
    uint64_t w[512];
    int parent[512];
    for (int i = 0; i < n; i++) w[i] = leaves[i].freq;
    int li = 0, ii = n, next = n;
    for (int k = 0; k < n - 1; k++) {
        int pick[2];
        for (int t = 0; t < 2; t++) {
            if (li < n && (ii >= next || w[li] <= w[ii])) pick[t] = li++;
            else pick[t] = ii++;
        }
        w[next] = w[pick[0]] + w[pick[1]];
        parent[pick[0]] = parent[pick[1]] = next;
        next++;
    }
    int depth[512];
    depth[next - 1] = 0;
    for (int i = next - 2; i >= 0; i--) depth[i] = depth[parent[i]] + 1;
    memset(len, 0, 256);
    for (int i = 0; i < n; i++) len[leaves[i].sym] = (uint8_t)(depth[i] > 255 ? 255 : depth[i]);
    /* Length limit. */
    uint32_t kraft = 0;
    for (int i = 0; i < n; i++) {
        uint8_t *l = &len[leaves[i].sym];
        if (*l > TDX_HUFF_MAXLEN) *l = TDX_HUFF_MAXLEN;
        kraft += 1u << (TDX_HUFF_MAXLEN - *l);
    }
    while (kraft > TABSIZE) {
        /* Lengthen the least frequent symbol that can still grow (leaves are sorted by freq). */
        for (int i = 0; i < n; i++) {
            uint8_t *l = &len[leaves[i].sym];
            if (*l < TDX_HUFF_MAXLEN) {
                kraft -= 1u << (TDX_HUFF_MAXLEN - *l - 1);
                (*l)++;
                break;
            }
        }
    }
    return n;
}

/* Canonical codes: by length, then symbol. */
static void canonical(const uint8_t *len, uint16_t *code) {
    uint16_t c = 0;
    for (int l = 1; l <= TDX_HUFF_MAXLEN; l++) {
        for (int s = 0; s < 256; s++)
            if (len[s] == l) code[s] = c++;
        c <<= 1;
    }
}

int tdx_huff_encode(tdx_buf *out, const uint8_t *src, size_t n) {
    uint32_t freq[256] = {0};
    for (size_t i = 0; i < n; i++) freq[src[i]]++;
    int distinct = 0, maxsym = 0;
    for (int s = 0; s < 256; s++)
        if (freq[s]) distinct++, maxsym = s;
    if (n > 0 && distinct == 1) {
        uint8_t h[2] = {MODE_SINGLE, src[0]};
        return tdx_buf_append(out, h, 2);
    }
    size_t start = out->n;
    if (n >= 32) {
        uint8_t len[256];
        uint16_t code[256];
        code_lengths(freq, len);
        canonical(len, code);
        uint64_t bits = 0;
        for (int s = 0; s < 256; s++) bits += (uint64_t)freq[s] * len[s];
        size_t hdr = 2 + (size_t)(maxsym + 2) / 2;
        size_t body = (size_t)((bits + 7) / 8);
        if (hdr + body < n + 1) {
            if (tdx_vec_reserve(out, out->n + hdr + body + 8)) return -1;
            uint8_t *p = out->v + out->n;
            *p++ = MODE_HUFF;
            *p++ = (uint8_t)maxsym;
            for (int s = 0; s <= maxsym; s += 2)
                *p++ = (uint8_t)(len[s] | ((s + 1 <= maxsym ? len[s + 1] : 0) << 4));
            uint64_t acc = 0;
            int nacc = 0;
            for (size_t i = 0; i < n; i++) {
                uint8_t s = src[i];
                acc = (acc << len[s]) | code[s];
                nacc += len[s];
                while (nacc >= 8) {
                    nacc -= 8;
                    *p++ = (uint8_t)(acc >> nacc);
                }
            }
            if (nacc) *p++ = (uint8_t)(acc << (8 - nacc));
            out->n = (size_t)(p - out->v);
            return 0;
        }
    }
    out->n = start;
    uint8_t m = MODE_RAW;
    if (tdx_buf_append(out, &m, 1)) return -1;
    return tdx_buf_append(out, src, n);
}

long tdx_huff_decode(const uint8_t *in, size_t inlen, uint8_t *dst, size_t n) {
    if (inlen < 1) return -1;
    switch (in[0]) {
    case MODE_RAW:
        if (inlen - 1 < n) return -1;
        memcpy(dst, in + 1, n);
        return (long)(n + 1);
    case MODE_SINGLE:
        if (inlen < 2) return -1;
        memset(dst, in[1], n);
        return 2;
    case MODE_HUFF: break;
    default: return -1;
    }
    if (inlen < 2) return -1;
    int maxsym = in[1];
    size_t hdr = 2 + (size_t)(maxsym + 2) / 2;
    if (inlen < hdr) return -1;
    uint8_t len[256] = {0};
    for (int s = 0; s <= maxsym; s++) {
        uint8_t b = in[2 + s / 2];
        len[s] = (s & 1) ? b >> 4 : b & 15;
        if (len[s] > TDX_HUFF_MAXLEN) return -1;
    }
    uint32_t kraft = 0;
    for (int s = 0; s <= maxsym; s++)
        if (len[s]) kraft += 1u << (TDX_HUFF_MAXLEN - len[s]);
    if (kraft > TABSIZE || kraft == 0) return -1;
    uint16_t code[256];
    canonical(len, code);
    /* Table: 11-bit prefix -> (symbol, length); length 0 marks an unused code. */
    uint16_t table[TABSIZE];
    memset(table, 0, sizeof table);
    for (int s = 0; s <= maxsym; s++) {
        if (!len[s]) continue;
        uint32_t first = (uint32_t)code[s] << (TDX_HUFF_MAXLEN - len[s]);
        uint32_t count = 1u << (TDX_HUFF_MAXLEN - len[s]);
        for (uint32_t k = 0; k < count; k++) table[first + k] = (uint16_t)(s | (len[s] << 8));
    }
    const uint8_t *p = in + hdr, *end = in + inlen;
    uint64_t acc = 0;
    int nacc = 0;
    for (size_t i = 0; i < n; i++) {
        while (nacc <= 56) {
            acc = (acc << 8) | (p < end ? *p : 0);
            p++;
            nacc += 8;
        }
        uint16_t e = table[(acc >> (nacc - TDX_HUFF_MAXLEN)) & (TABSIZE - 1)];
        int l = e >> 8;
        if (!l) return -1;
        dst[i] = (uint8_t)e;
        nacc -= l;
    }
    /* Bytes actually consumed: everything read minus whole unread bytes still buffered. */
    size_t used = (size_t)(p - (in + hdr)) - (size_t)(nacc / 8);
    if (hdr + used > inlen) return -1;
    return (long)(hdr + used);
}
