/* cputime.c: the calling thread's CPU clock. */
#include "core/cputime.h"

#include <time.h>

int64_t tdx_thread_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) return 0;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
