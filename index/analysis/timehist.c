/* timehist.c: Go's TimeHistogram (see timehist.h). */
#include "index/analysis/timehist.h"

#include <math.h>

/* log(10^(1/5)): folded by the compiler, so not recomputed per sample. */
static double log_div(void) {
    return log(pow(10, 1.0 / 5));
}

void tdx_timehist_add(tdx_timehist *h, int64_t ns) {
    int b = 0;
    if (ns > 0) b = (int)(log((double)ns) / log_div());
    if (b < 0) b = 0;
    if (b >= TDX_HIST_BUCKETS) b = TDX_HIST_BUCKETS - 1;
    h->bucket[b]++;
    if (b < h->min || h->max == 0) h->min = b;
    if (b > h->max) h->max = b;
    h->count++;
}

int64_t tdx_timehist_bucket_min(int b) {
    return (int64_t)exp((double)b * log_div());
}
