/* extsort.h: an external sort of keyed records (two 64-bit keys and a short payload) within a
 * memory budget: runs that outgrow it are sorted and spilled to a scratch file, then merged. */
#ifndef TDX_EXTSORT_H
#define TDX_EXTSORT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/mem.h"
#include "index/common/scratch.h"

typedef struct tdx_xrec {
    uint64_t k1, k2;
    const uint8_t *p; /* payload, valid until the next tdx_xsort_next */
    uint32_t n;
} tdx_xrec;

typedef struct tdx_xsort tdx_xsort;

/* XORed into a signed id (goroutine ids), it gives a key that sorts as the id does. */
#define TDX_XSORT_SIGN (1ull << 63)

/* Records are ordered by (k1, k2), equal keys in the order they were added. The scratch file,
 * if one is needed, is created beside `beside`. NULL on memory exhaustion. */
tdx_xsort *tdx_xsort_new(const char *beside, size_t budget);
void tdx_xsort_free(tdx_xsort *x);
int tdx_xsort_add(tdx_xsort *x, uint64_t k1, uint64_t k2, const void *p, size_t n, tdx_err *err);
/* Ends the input (first call) and (re)starts reading from the first record. */
int tdx_xsort_rewind(tdx_xsort *x, tdx_err *err);
/* 1 with the next record in *r, 0 at the end, -1 on an error. */
int tdx_xsort_next(tdx_xsort *x, tdx_xrec *r, tdx_err *err);
/* Records added, and runs spilled so far. */
uint64_t tdx_xsort_count(const tdx_xsort *x);
size_t tdx_xsort_runs(const tdx_xsort *x);
/* The least a merge reads from a run at a time. */
#define TDX_XSORT_READ_MIN 4096u

/* Once reading: the runs the merge reads at once (0: none, the records were in memory), and in
 * *passes (if not NULL) the passes that merged groups of runs first: with more runs than the
 * budget holds reads of TDX_XSORT_READ_MIN for, consecutive groups are merged into longer runs
 * until it does. */
size_t tdx_xsort_merged(const tdx_xsort *x, size_t *passes);

#endif
