/* vevser.h: storing viewer events in the index (the long items of the view sections): strings
 * inline, the static names (categories, colours) as small codes. */
#ifndef TDX_VEVSER_H
#define TDX_VEVSER_H

#include "index/views/jsonout.h"
#include "index/common/viewgen_ser.h"
#include "index/views/viewgen_store.h"

/* Appends ev. 0 or -1 (OOM). */
int tdx_vev_save(tdx_buf *out, const tdx_vev *ev);
/* Reads one event saved by tdx_vev_save (strings point into the input). 0, or -1 when malformed. */
int tdx_vev_load(tdx_deser *d, tdx_vev *ev);

#endif
