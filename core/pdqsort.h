/* pdqsort.h: Go's unstable pattern-defeating quicksort (slices.SortFunc), step for step.
 * Ties among equal keys are broken exactly as a Go binary does, which the frontier and the
 * CPU-sample order depend on. */
#ifndef TDX_PDQSORT_H
#define TDX_PDQSORT_H

#include <stddef.h>
#include <stdint.h>

/* Sorts keys[0..n) ascending, applying every swap to vals as well. */
void tdx_pdqsort(int64_t *keys, uint32_t *vals, size_t n);

#endif
