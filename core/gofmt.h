/* gofmt.h: number formatting exactly as Go prints it: time.Duration.String and the shortest
 * round-trip form of float64 that encoding/json writes. */
#ifndef TDX_GOFMT_H
#define TDX_GOFMT_H

#include <stddef.h>
#include <stdint.h>

/* Go's time.Duration(ns).String(); buf needs 40 bytes. Returns the length. */
int tdx_go_duration(char *buf, size_t cap, int64_t ns);

/* The two texts Go gives a float64 (v finite), shortest round-trip digits in both: encoding/json's
 * (positional below 1e21 and from 1e-6, exponent as e-7 or e+21 outside) and fmt's %v
 * (positional from 1e-4 below 1e6, exponent as e-05 or e+06 outside). buf needs 40 bytes;
 * returns the length. */
enum { TDX_FLOAT_JSON, TDX_FLOAT_V };
size_t tdx_go_float(char *buf, double v, int form);

#endif
