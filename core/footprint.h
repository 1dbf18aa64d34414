/* footprint.h: what each event type takes of a trace's bytes, as `go tool trace -d=footprint`
 * counts it: every wire event (batch headers, tables and all) by type. */
#ifndef TDX_FOOTPRINT_H
#define TDX_FOOTPRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct tdx_footprint {
    int version;
    uint64_t bytes[256]; /* by type byte: Go's EncodedSize summed (uvarints at their shortest) */
    uint64_t count[256];
    uint64_t events; /* all of them */
    uint64_t total;  /* the trace's bytes, header included */
} tdx_footprint;

/* Counts data[0..n), a Go 1.22+ trace. With `release`, data is a read-only file mapping whose
 * pages are given back as they are read (RSS stays small). 0, or -1 with err set (the first bad
 * byte's offset), as Go's raw reader fails. */
int tdx_footprint_count(const uint8_t *data, size_t n, bool release, tdx_footprint *fp,
                        tdx_err *err);

#endif
