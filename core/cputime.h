/* cputime.h: the calling thread's CPU time, for the build's accounting of where its CPU goes
 * (each thread's, and the longest chain of work that cannot overlap: `build --verbose`). */
#ifndef TDX_CPUTIME_H
#define TDX_CPUTIME_H

#include <stdint.h>

/* CPU time of the calling thread (user + system), in ns; 0 where the clock cannot be read. A
 * system call: read it per block of work, not per event. */
int64_t tdx_thread_cpu_ns(void);

#endif
