/* vevser.h: storing viewer events in the index (the long items and counter values of the view
 * sections): strings go to the store, the static names (categories, colours) to small codes. */
#ifndef TDX_VEVSER_H
#define TDX_VEVSER_H

#include "index/jsonout.h"
#include "index/viewgen_ser.h"
#include "index/viewgen_store.h"

/* Appends ev; its strings are interned into store. 0 or -1 (OOM). */
int tdx_vev_save(tdx_buf *out, const tdx_vev *ev, tdx_vgstore *store);
/* Reads one event saved by tdx_vev_save (strings point into store). 0, or -1 when malformed. */
int tdx_vev_load(tdx_deser *d, tdx_vev *ev, const tdx_vgstore *store);

#endif
