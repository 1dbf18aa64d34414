/* mem.c: arena and growable-array implementation. */
#include "mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

struct tdx_arena_chunk {
    tdx_arena_chunk *next;
    size_t cap;
    _Alignas(16) unsigned char data[];
};

enum { ARENA_MIN = 64 * 1024 };

void tdx_arena_init(tdx_arena *a) {
    memset(a, 0, sizeof *a);
}

void tdx_arena_free(tdx_arena *a) {
    tdx_arena_chunk *c = a->head;
    while (c) {
        tdx_arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    memset(a, 0, sizeof *a);
}

void tdx_arena_reset(tdx_arena *a) {
    tdx_arena_chunk *keep = NULL, *c = a->head;
    while (c) {
        tdx_arena_chunk *n = c->next;
        if (!keep || c->cap > keep->cap) {
            free(keep);
            keep = c;
        } else {
            free(c);
        }
        c = n;
    }
    a->head = keep;
    a->used = 0;
    a->cap = keep ? keep->cap : 0;
    a->total = keep ? keep->cap : 0;
    if (keep) keep->next = NULL;
}

void *tdx_arena_alloc(tdx_arena *a, size_t n) {
    n = (n + 7) & ~(size_t)7;
    if (!a->head || a->cap - a->used < n) {
        size_t cap = a->cap * 2;
        if (cap < ARENA_MIN) cap = ARENA_MIN;
        if (cap < n) cap = n;
        tdx_arena_chunk *c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
        a->cap = cap;
        a->used = 0;
        a->total += cap;
    }
    void *p = a->head->data + a->used;
    a->used += n;
    return p;
}

void *tdx_arena_memdup(tdx_arena *a, const void *p, size_t n) {
    void *q = tdx_arena_alloc(a, n ? n : 1);
    if (q && n) memcpy(q, p, n);
    return q;
}

void tdx_mem_huge(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
    const size_t huge = (size_t)2 << 20;
    if (!p || n < TDX_MEM_HUGE_MIN) return;
    /* offsets from p, not integers turned back into pointers */
    size_t lead = (huge - (size_t)((uintptr_t)p & (huge - 1))) & (huge - 1);
    if (n <= lead) return;
    size_t len = (n - lead) & ~(huge - 1);
    if (len) (void)madvise((char *)p + lead, len, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

int tdx_vec_grow_(void **v, size_t *cap, size_t want, size_t elem) {
    size_t nc = *cap ? *cap : 8;
    while (nc < want) {
        if (nc > SIZE_MAX / 2) return -1;
        nc *= 2;
    }
    if (nc > SIZE_MAX / elem) return -1;
    void *p = realloc(*v, nc * elem);
    if (!p) return -1;
    *v = p;
    *cap = nc;
    return 0;
}

int tdx_buf_append(tdx_buf *b, const void *p, size_t n) {
    if (tdx_vec_reserve(b, b->n + n)) return -1;
    if (n) memcpy(b->v + b->n, p, n);
    b->n += n;
    return 0;
}

int tdx_buf_printf(tdx_buf *b, const char *fmt, ...) {
    /* Formatted once into the room at the end (most texts are short), twice only when it is
     * too small: measuring every text first had doubled the cost of dump's output. */
    if (tdx_vec_reserve(b, b->n + 128)) return -1;
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf((char *)b->v + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (need < 0) return -1;
    if ((size_t)need >= b->cap - b->n) {
        if (tdx_vec_reserve(b, b->n + (size_t)need + 1)) return -1;
        va_start(ap, fmt);
        vsnprintf((char *)b->v + b->n, (size_t)need + 1, fmt, ap);
        va_end(ap);
    }
    b->n += (size_t)need;
    return 0;
}
