/* tables.c: content-addressed global tables for the index writer. */
#include "index/format/tables.h"

#include <string.h>
#include <xxhash.h>

int tdx_tables_init(tdx_tables *t, const char *beside, uint64_t trace_size, size_t str_budget,
                    tdx_err *err) {
    memset(t, 0, sizeof *t);
    t->str_bytes.file.fd = t->str_off.file.fd = -1;
    /* The mappings grow with the strings (a trace's own are a few MB; log messages make them
     * grow with it), so they start at a MiB each. */
    uint64_t z = 0;
    if (tdx_fvec_open(&t->str_bytes, beside, (size_t)1 << 20, err) ||
        tdx_fvec_open(&t->str_off, beside, (size_t)1 << 20, err) ||
        tdx_fvec_append(&t->str_off, &z, 8, err) || tdx_fvec_append(&t->str_off, &z, 8, err)) {
        tdx_tables_free(t);
        return -1;
    }
    if (!str_budget) str_budget = (size_t)tdx_fvec_budget(trace_size);
    if (tdx_strmap_init(&t->str_map, beside, str_budget, err)) {
        tdx_tables_free(t);
        return -1;
    }
    if (tdx_vec_push(&t->stack_off, z) || tdx_vec_push(&t->stack_off, z)) {
        tdx_tables_free(t);
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    }
    return 0;
}

/* What only adding strings and stacks needs. */
static void free_lookup(tdx_tables *t) {
    tdx_strmap_free(&t->str_map);
    tdx_hmap_free(&t->frame_ids);
    tdx_hmap_free(&t->stack_ids);
    tdx_vec_free(&t->gen_str);
    tdx_vec_free(&t->gen_stack);
    t->gen = NULL;
}

void tdx_tables_free(tdx_tables *t) {
    free_lookup(t);
    tdx_fvec_close(&t->str_bytes);
    tdx_fvec_close(&t->str_off);
    tdx_vec_free(&t->frames);
    tdx_vec_free(&t->stack_frames);
    tdx_vec_free(&t->stack_off);
}

int tdx_tables_seal(tdx_tables *t) {
    free_lookup(t);
    return tdx_fvec_flush(&t->str_bytes, &t->err) || tdx_fvec_flush(&t->str_off, &t->err) ? -1 : 0;
}

void tdx_tables_release(const tdx_tables *t) {
    tdx_fvec_release(&t->str_bytes);
    tdx_fvec_release(&t->str_off);
}

uint32_t tdx_tables_nstrings(const tdx_tables *t) {
    return (uint32_t)(tdx_fvec_len(&t->str_off) / 8) - 1;
}
uint32_t tdx_tables_nstacks(const tdx_tables *t) {
    return (uint32_t)t->stack_off.n - 1;
}

uint32_t tdx_tables_string(tdx_tables *t, const uint8_t *p, uint32_t n) {
    if (n == 0) return 0;
    XXH128_hash_t x = XXH3_128bits(p, n);
    uint32_t hi = (uint32_t)(x.high64 >> 32),
             id = tdx_strmap_get(&t->str_map, x.low64, hi, &t->err);
    if (id) return id; /* or UINT32_MAX: failed */
    id = tdx_tables_nstrings(t);
    uint64_t end = tdx_fvec_len(&t->str_bytes) + n;
    if (tdx_fvec_append(&t->str_bytes, p, n, &t->err) ||
        tdx_fvec_append(&t->str_off, &end, 8, &t->err) ||
        tdx_strmap_add(&t->str_map, x.low64, hi, id, &t->err))
        return UINT32_MAX;
    return id;
}

static uint32_t frame_id(tdx_tables *t, const tdx_gframe *f) {
    uint64_t h = XXH3_64bits(f, sizeof *f);
    for (;;) {
        uint32_t id = tdx_hmap_get(&t->frame_ids, h);
        if (id == TDX_HMAP_EMPTY) break;
        const tdx_gframe *x = &t->frames.v[id];
        if (x->pc == f->pc && x->func == f->func && x->file == f->file && x->line == f->line)
            return id;
        h++;
    }
    uint32_t id = (uint32_t)t->frames.n;
    if (tdx_vec_push(&t->frames, *f) || tdx_hmap_put(&t->frame_ids, h, id)) return UINT32_MAX;
    return id;
}

static void gen_switch(tdx_tables *t, const tdx_gen *g) {
    /* Readers may reuse one tdx_gen for every generation: the generation's position tells them
     * apart. */
    uint64_t key = g->frame.seq + 1;
    if (t->gen == g && t->gen_key == key && t->gen_str.n == g->strings.n &&
        t->gen_stack.n == g->stacks.n)
        return;
    if (t->gen != g || t->gen_key != key) {
        t->gen_str.n = 0;
        t->gen_stack.n = 0;
        t->gen = g;
        t->gen_key = key;
    }
    /* Grow (extra strings may be added to a generation while it is read). */
    size_t ns = g->strings.n, nk = g->stacks.n;
    if (tdx_vec_reserve(&t->gen_str, ns) || tdx_vec_reserve(&t->gen_stack, nk)) return;
    while (t->gen_str.n < ns) t->gen_str.v[t->gen_str.n++] = UINT32_MAX;
    while (t->gen_stack.n < nk) t->gen_stack.v[t->gen_stack.n++] = UINT32_MAX;
}

uint32_t tdx_tables_gen_string(tdx_tables *t, const tdx_gen *g, uint32_t idx) {
    if (idx == 0) return 0;
    gen_switch(t, g);
    if (idx >= t->gen_str.n) return UINT32_MAX;
    uint32_t *slot = &t->gen_str.v[idx];
    if (*slot == UINT32_MAX) *slot = tdx_tables_string(t, g->strings.v[idx].p, g->strings.v[idx].n);
    return *slot;
}

uint32_t tdx_tables_gen_stack(tdx_tables *t, const tdx_gen *g, uint32_t idx) {
    if (idx == 0) return 0;
    gen_switch(t, g);
    if (idx >= t->gen_stack.n) return UINT32_MAX;
    uint32_t *slot = &t->gen_stack.v[idx];
    if (*slot != UINT32_MAX) return *slot;
    const tdx_stack *st = &g->stacks.v[idx];
    uint32_t ids[128];
    for (uint32_t i = 0; i < st->nframes && i < 128; i++) {
        const tdx_frame *f = &g->frames.v[g->stack_frames.v[st->first + i]];
        tdx_gframe gf;
        memset(&gf, 0, sizeof gf);
        gf.pc = f->pc;
        gf.line = f->line;
        gf.func = tdx_tables_string(t, g->strings.v[f->func].p, g->strings.v[f->func].n);
        gf.file = tdx_tables_string(t, g->strings.v[f->file].p, g->strings.v[f->file].n);
        if (gf.func == UINT32_MAX || gf.file == UINT32_MAX) return UINT32_MAX;
        ids[i] = frame_id(t, &gf);
        if (ids[i] == UINT32_MAX) return UINT32_MAX;
    }
    /* A stack is its frame list (a 0-frame stack is distinct from "no stack", id 0). */
    uint64_t h = XXH3_64bits(ids, st->nframes * sizeof *ids) ^ st->nframes;
    for (;;) {
        uint32_t id = tdx_hmap_get(&t->stack_ids, h);
        if (id == TDX_HMAP_EMPTY) break;
        uint64_t o = t->stack_off.v[id], e = t->stack_off.v[id + 1];
        if (e - o == st->nframes &&
            memcmp(t->stack_frames.v + o, ids, st->nframes * sizeof *ids) == 0) {
            *slot = id;
            return id;
        }
        h++;
    }
    uint32_t id = tdx_tables_nstacks(t);
    for (uint32_t i = 0; i < st->nframes; i++)
        if (tdx_vec_push(&t->stack_frames, ids[i])) return UINT32_MAX;
    if (tdx_vec_push(&t->stack_off, (uint64_t)t->stack_frames.n) ||
        tdx_hmap_put(&t->stack_ids, h, id))
        return UINT32_MAX;
    *slot = id;
    return id;
}
