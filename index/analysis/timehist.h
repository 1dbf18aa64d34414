/* timehist.h: Go's TimeHistogram (cmd/trace's duration histograms of tasks and regions): five
 * buckets a decade, computed in doubles as Go computes them, with Go's smallest-bucket quirk. */
#ifndef TDX_TIMEHIST_H
#define TDX_TIMEHIST_H

#include <stdint.h>

#define TDX_HIST_BUCKETS 100 /* ln(2^63) / ln(10^(1/5)) < 95 */

typedef struct tdx_timehist {
    uint64_t count, bucket[TDX_HIST_BUCKETS];
    int min, max; /* Go's MinBucket and MaxBucket: the rows it shows */
} tdx_timehist;

/* Adds a duration in ns. As in Go, while the largest bucket is 0 every sample moves the smallest,
 * so the rows shown depend on the order of the samples. */
void tdx_timehist_add(tdx_timehist *h, int64_t ns);
/* The lower bound of bucket b in ns. */
int64_t tdx_timehist_bucket_min(int b);

#endif
