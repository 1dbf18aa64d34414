/* reader.c: opening and checking index files. */
#include "index/format/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/checksum.h"
#include "core/reader.h"
#include "core/source.h"
#include "core/regfile.h"
#include "core/varint.h"
#include "index/format/evcodec.h"
#include "index/format/strpack.h"
#include "index/build/writer.h"

#define REBUILD "rebuild it with `traceidx build`"

const char *tdx_section_name(uint32_t kind) {
    static const char *const n[TDX_SEC_COUNT_] = {[TDX_SEC_META] = "META",
                                                  [TDX_SEC_STRINGS] = "STRINGS",
                                                  [TDX_SEC_FRAMES] = "FRAMES",
                                                  [TDX_SEC_STACKS] = "STACKS",
                                                  [TDX_SEC_GENS] = "GENS",
                                                  [TDX_SEC_EVDIR] = "EVDIR",
                                                  [TDX_SEC_EVENTS] = "EVENTS",
                                                  [TDX_SEC_GOROUTINES] = "GOROUTINES",
                                                  [TDX_SEC_PROCS] = "PROCS",
                                                  [TDX_SEC_THREADS] = "THREADS",
                                                  [TDX_SEC_VGSTORE] = "VGSTORE",
                                                  [TDX_SEC_RANGES] = "RANGES",
                                                  [TDX_SEC_SUMMARY] = "SUMMARY",
                                                  [TDX_SEC_VIEW_PROC] = "VIEW_PROC",
                                                  [TDX_SEC_VIEW_THREAD] = "VIEW_THREAD",
                                                  [TDX_SEC_VIEW_GOROUTINE] = "VIEW_GOROUTINE",
                                                  [TDX_SEC_VIEWDATA] = "VIEWDATA",
                                                  [TDX_SEC_VGNODES] = "VGNODES",
                                                  [TDX_SEC_FNAMES] = "FNAMES",
                                                  [TDX_SEC_GSTATS] = "GSTATS",
                                                  [TDX_SEC_PPROF] = "PPROF",
                                                  [TDX_SEC_REGIONS] = "REGIONS",
                                                  [TDX_SEC_MUTIL] = "MUTIL"};
    return kind < TDX_SEC_COUNT_ && n[kind] ? n[kind] : "UNKNOWN";
}

bool tdx_is_index(const uint8_t *p, size_t n) {
    return n >= 8 && memcmp(p, TDX_IDX_MAGIC, 8) == 0;
}

int tdx_index_corrupt(tdx_err *err, uint64_t off, const char *what) {
    return tdx_errf(err, TDX_EINDEX, off,
                    "index %s is corrupt (checksum or structure mismatch): " REBUILD, what);
}

const uint8_t *tdx_index_section(tdx_index *ix, uint32_t kind, uint64_t *len, tdx_err *err) {
    if (kind >= TDX_SEC_COUNT_ || !ix->sec[kind].present) {
        tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET, "index has no %s section: " REBUILD,
                 tdx_section_name(kind));
        return NULL;
    }
    tdx_isection *s = &ix->sec[kind];
    const uint8_t *p = ix->data + s->off;
    if (!(s->flags & TDX_SECF_BLOCKED) && s->hash != 0 && !tdx_checksum_ok(p, s->len, s->hash)) {
        char what[64];
        snprintf(what, sizeof what, "section %s", tdx_section_name(kind));
        tdx_index_corrupt(err, s->off, what);
        return NULL;
    }
    s->hash = 0; /* checked once */
    *len = s->len;
    return p;
}

/* Unpacks chunk k, once claimed, into arena a (the unpacking thread's). A chunk that fails (its
 * checksum or structure is wrong) reads as empty strings and is reported by
 * tdx_index_strings_ok, so that no reader of the tables needs an error path. */
static void unpack_chunk(tdx_index *ix, uint64_t k, tdx_arena *a) {
    int oom;
    if (tdx_strpack_chunk(&ix->strpack_, k, a, ix->tabs.strings.v, &oom)) {
        uint64_t first = k * TDX_STR_CHUNK, last = first + TDX_STR_CHUNK;
        if (last > ix->tabs.strings.n) last = ix->tabs.strings.n;
        for (uint64_t i = first; i < last; i++)
            ix->tabs.strings.v[i] = (tdx_str){(const uint8_t *)"", 0};
        __atomic_store_n(&ix->strings_bad, oom ? 2 : 1, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&ix->str_ready_[k], 1, __ATOMIC_RELEASE);
}

static bool claim_chunk(tdx_index *ix, uint64_t k) {
    uint8_t free_ = 0;
    return __atomic_compare_exchange_n(&ix->str_claim_[k], &free_, 1, false, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

/* tabs.str_fill (tdx_gen_str's hook): the chunk of id, unpacked here unless the other thread has it
 * in hand (then this waits for it: tens of microseconds). */
static void fill_strings(void *ctx, uint32_t id) {
    tdx_index *ix = ctx;
    uint64_t k = id >> TDX_STR_CHUNK_SHIFT;
    if (k >= ix->strpack_.nchunks || __atomic_load_n(&ix->str_ready_[k], __ATOMIC_ACQUIRE)) return;
    if (claim_chunk(ix, k)) {
        unpack_chunk(ix, k, &ix->tabs.arena);
        return;
    }
    while (!__atomic_load_n(&ix->str_ready_[k], __ATOMIC_ACQUIRE)) sched_yield();
}

void tdx_index_strings_ahead(tdx_index *ix, uint32_t id) {
    uint64_t k = id >> TDX_STR_CHUNK_SHIFT;
    if (!ix->str_claim_ || k >= ix->strpack_.nchunks ||
        __atomic_load_n(&ix->str_ready_[k], __ATOMIC_ACQUIRE))
        return;
    if (claim_chunk(ix, k)) unpack_chunk(ix, k, &ix->ahead_arena_);
}

int tdx_index_strings_ok(const tdx_index *ix, tdx_err *err) {
    int bad = __atomic_load_n(&ix->strings_bad, __ATOMIC_RELAXED);
    if (!bad) return 0;
    if (bad == 2) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return tdx_index_corrupt(err, ix->sec[TDX_SEC_STRINGS].off, "section STRINGS");
}

int tdx_index_strings_all(tdx_index *ix, tdx_err *err) {
    for (uint64_t k = 0; k < ix->strpack_.nchunks && !ix->strings_bad; k++)
        if (!ix->str_ready_[k]) fill_strings(ix, (uint32_t)(k << TDX_STR_CHUNK_SHIFT));
    return tdx_index_strings_ok(ix, err);
}

static int load_tables(tdx_index *ix, tdx_err *err) {
    uint64_t n, len;
    const uint8_t *p;
    tdx_gen *g = &ix->tabs;
    /* STRINGS: count, then the strings packed (strpack.c); chunks unpack on first use */
    if (!(p = tdx_index_section(ix, TDX_SEC_STRINGS, &len, err))) return -1;
    if (len < 8) return tdx_index_corrupt(err, ix->sec[TDX_SEC_STRINGS].off, "section STRINGS");
    n = tdx_rd64(p);
    /* Every string takes at least a symbol: a count beyond the section's bits is damage. */
    if (n == 0 || n >= UINT32_MAX || n > (len - 8) * 8)
        return tdx_index_corrupt(err, ix->sec[TDX_SEC_STRINGS].off, "section STRINGS");
    if (tdx_vec_reserve(&g->strings, n))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    int oom;
    if (tdx_strpack_open(&ix->strpack_, p + 8, len - 8, n, g->strings.v, &oom))
        return oom ? tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory")
                   : tdx_index_corrupt(err, ix->sec[TDX_SEC_STRINGS].off, "section STRINGS");
    g->strings.n = n;
    if (!ix->strpack_.stored) {
        ix->str_ready_ = calloc((size_t)ix->strpack_.nchunks, 1);
        ix->str_claim_ = calloc((size_t)ix->strpack_.nchunks, 1);
        if (!ix->str_ready_ || !ix->str_claim_)
            return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        g->str_ready = ix->str_ready_;
        g->str_ctx = ix;
        g->str_fill = fill_strings;
    }
    if (tdx_gen_str(g, 0).n != 0 || ix->strings_bad)
        return tdx_index_corrupt(err, ix->sec[TDX_SEC_STRINGS].off, "section STRINGS");
    /* FRAMES */
    if (!(p = tdx_index_section(ix, TDX_SEC_FRAMES, &len, err))) return -1;
    if (len < 8) return tdx_index_corrupt(err, ix->sec[TDX_SEC_FRAMES].off, "section FRAMES");
    n = tdx_rd64(p);
    if ((len - 8) / F_SIZE != n || (len - 8) % F_SIZE)
        return tdx_index_corrupt(err, ix->sec[TDX_SEC_FRAMES].off, "section FRAMES");
    if (tdx_vec_reserve(&g->frames, n))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *r = p + 8 + F_SIZE * i;
        tdx_frame f = {.pc = tdx_rd64(r + F_PC),
                       .line = tdx_rd64(r + F_LINE),
                       .func = tdx_rd32(r + F_FUNC),
                       .file = tdx_rd32(r + F_FILE)};
        if (f.func >= g->strings.n || f.file >= g->strings.n)
            return tdx_index_corrupt(err, ix->sec[TDX_SEC_FRAMES].off, "section FRAMES");
        g->frames.v[i] = f;
    }
    g->frames.n = n;
    /* STACKS */
    if (!(p = tdx_index_section(ix, TDX_SEC_STACKS, &len, err))) return -1;
    if (len < 8) return tdx_index_corrupt(err, ix->sec[TDX_SEC_STACKS].off, "section STACKS");
    n = tdx_rd64(p);
    if (n == 0 || n >= UINT32_MAX || (len - 8) / 8 < n + 1)
        return tdx_index_corrupt(err, ix->sec[TDX_SEC_STACKS].off, "section STACKS");
    const uint8_t *ids = p + 8 + 8 * (n + 1);
    uint64_t nids = (len - 8 - 8 * (n + 1)) / 4;
    if (tdx_vec_reserve(&g->stacks, n))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    /* The frame ids are read in place where they are u32s as the host has them (a copy was a
     * megabyte of fresh pages per query at 4 GiB: 0.5 ms); checked either way. */
    uint32_t top = 0;
    for (uint64_t i = 0; i < nids; i++) {
        uint32_t f = tdx_rd32(ids + 4 * i);
        top = f > top ? f : top;
    }
    if (nids && top >= g->frames.n)
        return tdx_index_corrupt(err, ix->sec[TDX_SEC_STACKS].off, "section STACKS");
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if ((uintptr_t)ids % _Alignof(uint32_t) == 0) {
        g->stack_frames.v = (uint32_t *)(void *)ids; /* read only: the mapping is PROT_READ */
        ix->stack_frames_mapped_ = true;
    }
#endif
    if (!ix->stack_frames_mapped_) {
        if (tdx_vec_reserve(&g->stack_frames, nids))
            return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        for (uint64_t i = 0; i < nids; i++) g->stack_frames.v[i] = tdx_rd32(ids + 4 * i);
    }
    g->stack_frames.n = nids;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t a = tdx_rd64(p + 8 + 8 * i), b = tdx_rd64(p + 16 + 8 * i);
        if (a > b || b > nids || b - a > 128)
            return tdx_index_corrupt(err, ix->sec[TDX_SEC_STACKS].off, "section STACKS");
        g->stacks.v[i] = (tdx_stack){i, (uint32_t)a, (uint32_t)(b - a)};
    }
    g->stacks.n = n;
    return 0;
}

/* The block directory as the writer made it: blocks inside EVENTS, each of 1 .. 16384 events
 * numbered on from the previous block's, times strictly increasing (Go's final times) within and
 * across blocks, the totals META's. Queries search these numbers (the block of an event index or
 * of a time), so a directory crafted or written wrong is refused here, not answered from. */
static int check_evdir(const tdx_index *ix, tdx_err *err) {
    uint64_t events = 0, evlen = ix->sec[TDX_SEC_EVENTS].len;
    int64_t prev = INT64_MIN;
    for (size_t b = 0; b < ix->nblocks; b++) {
        const uint8_t *d = ix->evdir + b * D_SIZE;
        uint64_t off = tdx_rd64(d + D_OFFSET), l = tdx_rd32(d + D_LENGTH),
                 n = tdx_rd32(d + D_NEVENTS);
        int64_t first = (int64_t)tdx_rd64(d + D_FIRST_TIME),
                last = (int64_t)tdx_rd64(d + D_LAST_TIME);
        if (off > evlen || l > evlen - off || n == 0 || n > TDX_EVBLOCK_EVENTS ||
            tdx_rd64(d + D_FIRST_EVENT) != events || (b > 0 && first <= prev) || last < first ||
            (uint64_t)last - (uint64_t)first < n - 1)
            return tdx_index_corrupt(err, ix->sec[TDX_SEC_EVDIR].off + b * D_SIZE, "section EVDIR");
        events += n;
        prev = last;
    }
    const tdx_isection *m = &ix->sec[TDX_SEC_META];
    bool times =
        ix->nblocks == 0 || (ix->meta[M_FIRST_TIME] == tdx_rd64(ix->evdir + D_FIRST_TIME) &&
                             ix->meta[M_LAST_TIME] == (uint64_t)prev);
    if (ix->meta[M_EVENTS] != events || ix->meta[M_BLOCKS] != ix->nblocks || !times)
        return tdx_index_corrupt(err, m->off, "section META (its event, block or time totals)");
    return 0;
}

/* The generations, numbered upwards, cover the blocks in order, each with its blocks' events and
 * times (a generation without events has no block and its times are not looked at); the trace's
 * closing Sync comes after the last one. */
static int check_gens(const tdx_index *ix, tdx_err *err) {
    uint64_t block = 0, events = 0, gen = 0;
    for (size_t g = 0; g < ix->ngens; g++) {
        const uint8_t *r = ix->gens + g * G_SIZE;
        uint64_t fb = tdx_rd32(r + G_FIRST_BLOCK), nb = tdx_rd32(r + G_NBLOCKS), n = 0;
        bool ok = fb == block && nb <= ix->nblocks - block &&
                  tdx_rd64(r + G_FIRST_EVENT) == events && (g == 0 || tdx_rd64(r + G_GEN) > gen);
        gen = tdx_rd64(r + G_GEN);
        for (uint64_t b = fb; ok && b < fb + nb; b++) n += tdx_index_block_nevents(ix, b);
        ok = ok && tdx_rd64(r + G_NEVENTS) == n;
        if (ok && nb)
            ok = tdx_rd64(r + G_FIRST_TIME) == tdx_rd64(ix->evdir + fb * D_SIZE + D_FIRST_TIME) &&
                 tdx_rd64(r + G_LAST_TIME) ==
                     tdx_rd64(ix->evdir + (fb + nb - 1) * D_SIZE + D_LAST_TIME);
        if (!ok)
            return tdx_index_corrupt(err, ix->sec[TDX_SEC_GENS].off + g * G_SIZE, "section GENS");
        block += nb;
        events += n;
    }
    if (ix->meta[M_GENERATIONS] != ix->ngens)
        return tdx_index_corrupt(err, ix->sec[TDX_SEC_GENS].off,
                                 "section GENS (its count, or META's)");
    return 0;
}

int tdx_index_open(tdx_index *ix, const char *path, tdx_err *err) {
    memset(ix, 0, sizeof *ix);
    ix->path = path;
    tdx_gen_init(&ix->tabs, NULL, 0);
    struct stat st;
    int fd = tdx_open_regular(path, &st, err);
    if (fd < 0) return -1;
    ix->size = (size_t)st.st_size;
    if (ix->size < 8) {
        close(fd);
        return tdx_errf(err, TDX_EINDEX, 0, "not a traceidx index (file too short)");
    }
    void *m = mmap(NULL, ix->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "cannot map: %s", strerror(errno));
    ix->map_ = m;
    ix->data = m;
    const uint8_t *h = ix->data;
    if (!tdx_is_index(h, ix->size)) {
        tdx_index_close(ix);
        return tdx_errf(err, TDX_EINDEX, 0, "not a traceidx index (bad magic)");
    }
    if (ix->size < TDX_IDX_HEADER_SIZE) {
        tdx_index_close(ix);
        return tdx_errf(err, TDX_EINDEX, ix->size,
                        "index is truncated (%zu bytes, not even a header): " REBUILD, ix->size);
    }
    ix->version = tdx_rd32(h + H_VERSION);
    if (ix->version > TDX_IDX_VERSION) {
        uint32_t v = ix->version;
        /* A damaged version field would read as "newer" too: the header's own checksum (where
         * this version keeps it) tells the two apart as far as it can. */
        bool sealed = XXH3_64bits(h, H_HEADER_HASH) == tdx_rd64(h + H_HEADER_HASH);
        tdx_index_close(ix);
        return tdx_errf(err, TDX_EINDEX, H_VERSION,
                        sealed ? "index format version %u is newer than this traceidx reads (%d): "
                                 "upgrade traceidx or rebuild the index with this one"
                               : "index header says format version %u, newer than this traceidx "
                                 "reads (%d), and fails its checksum: the index is damaged, or "
                                 "of a newer traceidx: rebuild it with this one, or upgrade",
                        v, TDX_IDX_VERSION);
    }
    if (ix->version >= 1 && ix->version < TDX_IDX_VERSION) {
        /* Older layouts encode events, strings and the summary differently; nothing reads them. */
        uint32_t v = ix->version;
        tdx_index_close(ix);
        return tdx_errf(
            err, TDX_EINDEX, H_VERSION,
            "index format version %u is older than this traceidx reads (%d): rebuild the index", v,
            TDX_IDX_VERSION);
    }
    if (!tdx_checksum_ok(h, H_HEADER_HASH, tdx_rd64(h + H_HEADER_HASH)) || ix->version == 0) {
        tdx_index_close(ix);
        return tdx_index_corrupt(err, 0, "header");
    }
    uint32_t flags = tdx_rd32(h + H_FLAGS);
    if (flags & ~TDX_IDX_PARTIAL) {
        tdx_index_close(ix);
        return tdx_index_corrupt(err, H_FLAGS, "header");
    }
    ix->partial = flags & TDX_IDX_PARTIAL;
    ix->damage_off = tdx_rd64(h + H_DAMAGE_OFF);
    uint64_t fsize = tdx_rd64(h + H_FILE_SIZE);
    if (fsize != ix->size) {
        size_t have = ix->size;
        tdx_index_close(ix);
        return tdx_errf(err, TDX_EINDEX, have,
                        "index is truncated or extended (%zu bytes, the header says %" PRIu64
                        "): " REBUILD,
                        have, fsize);
    }
    uint64_t toff = tdx_rd64(h + H_SECTAB_OFF);
    uint32_t tcount = tdx_rd32(h + H_SECTAB_COUNT);
    if (toff > ix->size || (ix->size - toff) / TDX_IDX_SECTION_SIZE < tcount) {
        tdx_index_close(ix);
        return tdx_index_corrupt(err, H_SECTAB_OFF, "header");
    }
    if (!tdx_checksum_ok(h + toff, (size_t)tcount * TDX_IDX_SECTION_SIZE,
                         tdx_rd64(h + H_SECTAB_HASH))) {
        tdx_index_close(ix);
        return tdx_index_corrupt(err, toff, "section table");
    }
    for (uint32_t i = 0; i < tcount; i++) {
        const uint8_t *r = h + toff + (size_t)i * TDX_IDX_SECTION_SIZE;
        uint32_t kind = tdx_rd32(r);
        if (kind == 0 || kind == TDX_SEC_GSTATS1 || kind >= TDX_SEC_COUNT_)
            continue; /* unknown kinds are skipped (newer minor), and retired ones */
        tdx_isection s = {
            kind, tdx_rd32(r + 4), tdx_rd64(r + 8), tdx_rd64(r + 16), tdx_rd64(r + 24), true};
        if (s.off > ix->size || s.len > ix->size - s.off) {
            tdx_index_close(ix);
            return tdx_index_corrupt(err, toff + (size_t)i * TDX_IDX_SECTION_SIZE, "section table");
        }
        ix->sec[kind] = s;
    }
    ix->trace_size = tdx_rd64(h + H_TRACE_SIZE);
    memcpy(ix->trace_header, h + H_TRACE_HEADER, 16);
    ix->trace_hash = tdx_rd64(h + H_TRACE_HASH);
    ix->trace_sample = tdx_rd64(h + H_TRACE_SAMPLE);
    uint64_t len;
    const uint8_t *p = tdx_index_section(ix, TDX_SEC_META, &len, err);
    if (!p) goto fail;
    for (int i = 0; i < M_COUNT_ && (uint64_t)(i + 1) * 8 <= len; i++)
        ix->meta[i] = tdx_rd64(p + 8 * (size_t)i);
    if (!(ix->evdir = tdx_index_section(ix, TDX_SEC_EVDIR, &len, err))) goto fail;
    ix->nblocks = len / D_SIZE;
    if (len % D_SIZE) {
        tdx_index_corrupt(err, ix->sec[TDX_SEC_EVDIR].off, "section EVDIR");
        goto fail;
    }
    if (!(ix->gens = tdx_index_section(ix, TDX_SEC_GENS, &len, err))) goto fail;
    ix->ngens = len / G_SIZE;
    if (!ix->sec[TDX_SEC_EVENTS].present) {
        tdx_index_section(ix, TDX_SEC_EVENTS, &len, err);
        goto fail;
    }
    if (len % G_SIZE) {
        tdx_index_corrupt(err, ix->sec[TDX_SEC_GENS].off, "section GENS");
        goto fail;
    }
    if (check_evdir(ix, err) || check_gens(ix, err) || load_tables(ix, err)) goto fail;
    if (ix->meta[M_STRINGS] != ix->tabs.strings.n || ix->meta[M_FRAMES] != ix->tabs.frames.n ||
        ix->meta[M_STACKS] != ix->tabs.stacks.n) {
        tdx_index_corrupt(err, ix->sec[TDX_SEC_META].off, "section META (its table sizes)");
        goto fail;
    }
    return 0;
fail:
    tdx_index_close(ix);
    return -1;
}

void tdx_index_close(tdx_index *ix) {
    if (ix->map_) munmap(ix->map_, ix->size);
    ix->map_ = NULL;
    if (ix->stack_frames_mapped_) { /* not the vector's own memory */
        ix->tabs.stack_frames.v = NULL;
        ix->tabs.stack_frames.n = ix->tabs.stack_frames.cap = 0;
        ix->stack_frames_mapped_ = false;
    }
    tdx_gen_free(&ix->tabs);
    tdx_strpack_close(&ix->strpack_);
    free(ix->str_ready_);
    free(ix->str_claim_);
    ix->str_ready_ = ix->str_claim_ = NULL;
    tdx_arena_free(&ix->ahead_arena_);
    free(ix->path_owned);
    ix->path_owned = NULL;
}

uint64_t tdx_index_block_first_event(const tdx_index *ix, size_t b) {
    return tdx_rd64(ix->evdir + b * D_SIZE + D_FIRST_EVENT);
}
uint32_t tdx_index_block_nevents(const tdx_index *ix, size_t b) {
    return tdx_rd32(ix->evdir + b * D_SIZE + D_NEVENTS);
}
int64_t tdx_index_block_first_time(const tdx_index *ix, size_t b) {
    return (int64_t)tdx_rd64(ix->evdir + b * D_SIZE + D_FIRST_TIME);
}
int64_t tdx_index_block_last_time(const tdx_index *ix, size_t b) {
    return (int64_t)tdx_rd64(ix->evdir + b * D_SIZE + D_LAST_TIME);
}

/* Block b's bytes and their length and event count. */
static const uint8_t *block_bytes(const tdx_index *ix, size_t b, uint32_t *len, uint32_t *ne) {
    const uint8_t *d = ix->evdir + b * D_SIZE;
    *len = tdx_rd32(d + D_LENGTH);
    *ne = tdx_rd32(d + D_NEVENTS);
    return ix->data + ix->sec[TDX_SEC_EVENTS].off + tdx_rd64(d + D_OFFSET);
}

void tdx_index_release_blocks(const tdx_index *ix, size_t b) {
    if (b == 0 || b > ix->nblocks) return;
    uint32_t len, ne;
    const uint8_t *from = ix->data + ix->sec[TDX_SEC_EVENTS].off;
    const uint8_t *to =
        b < ix->nblocks ? block_bytes(ix, b, &len, &ne) : from + ix->sec[TDX_SEC_EVENTS].len;
    /* From the section's first whole page, every time: a page given back faults in again with
     * its whole 2 MiB folio when anything near it is touched (see core/reader.c). */
    uintptr_t pg = 4096, a = ((uintptr_t)from + pg - 1) & ~(pg - 1);
    uintptr_t e = (uintptr_t)to & ~(pg - 1);
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): the page rounding needs integers */
    if (e > a) (void)madvise((void *)a, e - a, MADV_DONTNEED);
}

/* Block b is damaged: the error names it and its file offset. */
static int block_corrupt(const tdx_index *ix, size_t b, tdx_err *err) {
    char what[64];
    snprintf(what, sizeof what, "event block %zu", b);
    return tdx_index_corrupt(
        err, ix->sec[TDX_SEC_EVENTS].off + tdx_rd64(ix->evdir + b * D_SIZE + D_OFFSET), what);
}

int tdx_index_block_begin(const tdx_index *ix, tdx_evdec *dec, size_t b, tdx_err *err) {
    if (b >= ix->nblocks) return tdx_errf(err, TDX_EUSAGE, TDX_NO_OFFSET, "no event block %zu", b);
    uint32_t len, ne;
    const uint8_t *p = block_bytes(ix, b, &len, &ne);
    if (!tdx_checksum_ok(p, len, tdx_rd64(ix->evdir + b * D_SIZE + D_HASH)) ||
        tdx_evdec_begin(dec, p, len, ne))
        return block_corrupt(ix, b, err);
    return 0;
}

int tdx_index_block_next(const tdx_index *ix, tdx_evdec *dec, size_t b, tdx_event *out, size_t max,
                         size_t *n, tdx_err *err) {
    if (tdx_evdec_next(dec, out, max, n)) return block_corrupt(ix, b, err);
    uint64_t nstr = ix->tabs.strings.n, nstk = ix->tabs.stacks.n;
    for (size_t i = 0; i < *n; i++)
        if (out[i].stack >= nstk || out[i].tstack >= nstk || out[i].str[0] >= nstr ||
            out[i].str[1] >= nstr)
            return block_corrupt(ix, b, err);
    return 0;
}

int tdx_index_read_block(const tdx_index *ix, tdx_evdec *dec, size_t b, tdx_event *out, size_t *n,
                         tdx_err *err) {
    *n = 0;
    if (tdx_index_block_begin(ix, dec, b, err) ||
        tdx_index_block_next(ix, dec, b, out, TDX_EVBLOCK_EVENTS, n, err))
        return -1;
    /* A whole block is at hand: its times must be the directory's (queries start from those). */
    const uint8_t *d = ix->evdir + b * D_SIZE;
    bool ok = *n == tdx_rd32(d + D_NEVENTS) && out[0].time == (int64_t)tdx_rd64(d + D_FIRST_TIME) &&
              out[*n - 1].time == (int64_t)tdx_rd64(d + D_LAST_TIME);
    for (size_t i = 1; ok && i < *n; i++) ok = out[i].time > out[i - 1].time;
    return ok ? 0 : block_corrupt(ix, b, err);
}

size_t tdx_index_block_at_time(const tdx_index *ix, int64_t t) {
    size_t lo = 0, hi = ix->nblocks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tdx_index_block_last_time(ix, mid) < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t tdx_index_block_of_event(const tdx_index *ix, uint64_t i) {
    size_t lo = 0, hi = ix->nblocks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tdx_index_block_first_event(ix, mid) + tdx_index_block_nevents(ix, mid) <= i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int tdx_index_check_trace(const tdx_index *ix, const char *trace_path, const uint8_t *data,
                          size_t size, bool full, tdx_err *err) {
    const char *why = NULL;
    if (size != ix->trace_size)
        why = "its size";
    else if (memcmp(data, ix->trace_header, size < 16 ? size : 16) != 0)
        why = "its header";
    else if (tdx_trace_sample_hash(data, size) != ix->trace_sample ||
             (full && XXH3_64bits(data, size) != ix->trace_hash))
        why = "its contents";
    if (!why) return 0;
    return tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET,
                    "index is stale: %s changed (%s) since the index was built; rebuild it with "
                    "`traceidx build %s%s`",
                    trace_path, why, ix->partial ? "--partial " : "", trace_path);
}

int tdx_index_open_beside(tdx_index *ix, const char *trace_path, bool full_check, char **ipath,
                          tdx_err *err) {
    *ipath = NULL;
    tdx_source src;
    if (tdx_source_open_v2(&src, trace_path, err)) {
        if (err->kind == TDX_EFORMAT && err->offset == 0)
            tdx_errf(err, TDX_EFORMAT, 0, "neither a traceidx index nor a Go execution trace");
        return TDX_BESIDE_ERROR;
    }
    size_t n = strlen(trace_path) + 6;
    if (!(*ipath = malloc(n))) {
        tdx_source_close(&src);
        tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        return TDX_BESIDE_ERROR;
    }
    snprintf(*ipath, n, "%s.tidx", trace_path);
    int rc = 0;
    struct stat st;
    if (tdx_index_open(ix, *ipath, err)) {
        /* Only a missing index is one to create; anything else (unreadable, a directory) is
         * reported as it is. */
        bool missing = err->kind == TDX_EIO && stat(*ipath, &st) && errno == ENOENT;
        rc = missing ? TDX_BESIDE_MISSING : TDX_BESIDE_ERROR;
    } else if (tdx_index_check_trace(ix, trace_path, src.data, src.size, full_check, err)) {
        tdx_index_close(ix);
        rc = TDX_BESIDE_STALE;
    }
    tdx_source_close(&src);
    if (!rc) {
        ix->path = ix->path_owned = *ipath; /* messages name the file read */
        *ipath = NULL;
    }
    return rc;
}
