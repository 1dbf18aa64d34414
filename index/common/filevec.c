/* filevec.c: an append-only array in a scratch file, read through a shared mapping. */
#include "index/common/filevec.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE ((size_t)4096)

static size_t page_up(size_t n) {
    return n > SIZE_MAX - (PAGE - 1) ? SIZE_MAX & ~(PAGE - 1) : (n + PAGE - 1) & ~(PAGE - 1);
}

int tdx_fvec_open(tdx_fvec *v, const char *beside, size_t reserve, tdx_err *err) {
    memset(v, 0, sizeof *v);
    v->file.fd = -1;
    if (tdx_scratch_open(&v->file, beside, err)) return -1;
    reserve = page_up(reserve ? reserve : 1);
    /* Mapping past the end of the file is allowed; only pages below it are ever touched. */
    void *m = mmap(NULL, reserve, PROT_READ, MAP_SHARED, v->file.fd, 0);
    if (m == MAP_FAILED) {
        tdx_scratch_close(&v->file);
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET,
                        "cannot reserve %zu bytes of address space for a scratch table", reserve);
    }
    v->map = m;
    v->reserved = reserve;
    return 0;
}

void tdx_fvec_close(tdx_fvec *v) {
    if (v->map) munmap(v->map, v->reserved);
    v->map = NULL;
    v->reserved = 0;
    tdx_scratch_close(&v->file);
}

/* Doubles the mapping until it holds `need` bytes. Address space is what a process under
 * `ulimit -v` runs short of: a reservation for the worst case (twice the trace for the strings
 * and 8 times it for their offsets) had been 2.8 GB for a 256 MiB trace. */
static int grow(tdx_fvec *v, uint64_t need, tdx_err *err) {
    size_t want = v->reserved;
    while (want < need && want <= SIZE_MAX / 2) want *= 2;
    if (want < need) want = page_up((size_t)need);
    if (want < need)
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET,
                        "a scratch table outgrew the address space (%llu bytes)",
                        (unsigned long long)need);
    void *m = mremap(v->map, v->reserved, want, MREMAP_MAYMOVE);
    if (m == MAP_FAILED)
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET,
                        "cannot grow a scratch table's address space from %zu to %zu bytes",
                        v->reserved, want);
    v->map = m;
    v->reserved = want;
    return 0;
}

int tdx_fvec_append(tdx_fvec *v, const void *p, size_t n, tdx_err *err) {
    uint64_t need = v->file.len + n;
    if (need > v->reserved && grow(v, need, err)) return -1;
    return tdx_scratch_put(&v->file, p, n, err);
}

int tdx_fvec_flush(tdx_fvec *v, tdx_err *err) {
    return tdx_scratch_flush(&v->file, err);
}

void tdx_fvec_release(const tdx_fvec *v) {
    uint64_t flushed = v->file.len - v->file.buf.n;
    size_t pages = (size_t)flushed & ~(size_t)4095;
    if (v->map && pages) (void)madvise(v->map, pages, MADV_DONTNEED);
}

int64_t tdx_fvec_resident(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    unsigned long long size, resident, shared;
    int got = fscanf(f, "%llu %llu %llu", &size, &resident, &shared);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return got == 3 && page > 0 ? (int64_t)shared * page : -1;
}

#define BUDGET_MIN ((uint64_t)4 << 20)
#define BUDGET_OTHER ((uint64_t)20 << 20)
#define BUDGET_MAX ((uint64_t)128 << 20)

/* Half the 0.1 x trace the memory target gives beyond its base, but at most that allowance less
 * BUDGET_OTHER, 4-128 MiB: on small traces the build's other state takes more than the base
 * (a 20th took the 256 MiB bench trace's peak to 90 MiB, its target: 86 now). */
uint64_t tdx_fvec_budget(uint64_t trace_size) {
    uint64_t allow = trace_size / 10, sb = allow / 2;
    if (allow < sb + BUDGET_OTHER) sb = allow > BUDGET_OTHER ? allow - BUDGET_OTHER : 0;
    return sb < BUDGET_MIN ? BUDGET_MIN : sb > BUDGET_MAX ? BUDGET_MAX : sb;
}
