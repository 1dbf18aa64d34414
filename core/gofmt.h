/* gofmt.h: number formatting exactly as Go prints it: time.Duration.String and the shortest
 * round-trip form of float64 that encoding/json writes. */
#ifndef TDX_GOFMT_H
#define TDX_GOFMT_H

#include <stddef.h>
#include <stdint.h>

/* Go's time.Duration(ns).String(); buf needs 40 bytes. Returns the length. */
int tdx_go_duration(char *buf, size_t cap, int64_t ns);

#endif
