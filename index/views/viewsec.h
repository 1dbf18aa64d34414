/* viewsec.h: the layout of a view's directory section (VIEW_PROC, VIEW_THREAD, VIEW_GOROUTINE)
 * and of the blobs it points to in VIEWDATA; written by viewbuild, read by query and verify. */
#ifndef TDX_VIEWSEC_H
#define TDX_VIEWSEC_H

#include <stddef.h>
#include <stdint.h>

#include "index/views/jsonout.h"
#include "index/common/viewgen_ser.h"

/* A blob reference: offset inside VIEWDATA, length and XXH3-64 of the bytes. */
enum { BL_OFF = 0, BL_LEN = 8, BL_HASH = 16, BL_SIZE = 24 };

/* Directory header. Counts are u64; times are elapsed nanoseconds since the first event. */
enum {
    VH_VIEW = 0,          /* TDX_VIEW_* */
    VH_NCKPT = 8,         /* checkpoint records that follow the header */
    VH_NITEMS = 16,       /* long items, all intervals */
    VH_NFRAMES_MAIN = 24, /* frame ids the main loop created (task queries number theirs after) */
    VH_NOPT = 32,         /* optional events of the whole default-options output */
    VH_TREE = 40,         /* blob: the frame tree (tdx_vgtree_save) */
    VH_FINAL = 64,        /* blob: generator state after the last event, before Finish (pruned) */
    VH_NAMES = 88, /* blob: lane names of the goroutines pruned from FINAL (goroutine view) */
    VH_NNAMES = 112,
    VH_STOP_EVERY = 120, /* events per entry of the stop tables (0: the view has none) */
    VH_SIZE = 128
};

/* Checkpoint record k: the state before event CK_EVENT, and what interval k (events
 * CK_EVENT .. next checkpoint's CK_EVENT - 1) emitted that reaches back before CK_TIME. */
enum {
    CK_EVENT = 0,
    CK_TIME = 8,        /* elapsed time of that event (i64) */
    CK_NOPT = 16,       /* optional events emitted before it */
    CK_FIRST_ITEM = 24, /* ordinal of interval k's first long item */
    CK_NITEMS = 32,     /* long items of interval k */
    CK_STATE = 40,      /* blob: tdx_viewgen_save_pruned */
    CK_ITEMS = 64,      /* blob: interval k's long items */
    CK_CROSS = 88,      /* blob: ordinals of the long items emitted at or after k that start
                         * before CK_TIME (uvarint count, then uvarint deltas) */
    CK_STOP = 112,      /* blob: interval k's stop table (below; empty: none) */
    CK_SIZE = 136
};

/* The blob references of a checkpoint record: CK_BLOBS of them from CK_STATE on. */
#define CK_BLOBS 4

/* Stop table of interval k, for a time window that ends inside it: entry j is the least time
 * (elapsed; a slice's earlier end, an arrow's or async slice's earlier half) of the viewer
 * events emitted while processing the interval's events from CK_EVENT + j * VH_STOP_EVERY on,
 * so a replay may stop there once that time is past the window's end. Entries never decrease;
 * those past the last event that emits anything are "never" and not stored. Layout: uvarint m
 * (entries stored), then, when m > 0, zigzag(entry 0 - CK_TIME) and uvarint (entry j - entry
 * j - 1) for j = 1 .. m - 1. */

/* Long item: uvarint n (1, or 2 for an arrow or async-slice pair), then n tdx_vev_save records. */

/* Names blob: u64 group count G, G records (u64 first id, u64 offset into the data), then the
 * data: per group of up to TDX_NAMES_GROUP names sorted by id, uvarint count, then per name
 * zigzag id delta (the first relative to the group's first id), uvarint func << 1 | named,
 * uvarint label. */
#define TDX_NAMES_GROUP 64

/* Checks a directory's own numbers (dir[0..len), of view `view`, in a trace of `nevents`
 * events): one or more checkpoints filling it; their events ascending within the trace, times
 * and optional-event counts not decreasing; interval k's long items numbered on from interval
 * k - 1's, VH_NITEMS in all. 0, or -1 with *at set to the offset in dir of what is wrong. */
int tdx_viewsec_check_dir(const uint8_t *dir, uint64_t len, int view, uint64_t nevents,
                          uint64_t *at);

/* Reads one long item from d into ev (1 or 2 events; their strings point into the blob). 0, or
 * -1 when malformed. */
int tdx_viewsec_item(tdx_deser *d, tdx_vev ev[2], size_t *n);

/* Reads stop table p[0..n) of an interval that starts at elapsed time t0 and has at most `most`
 * entries: *m entries, into *out (malloc'd when *m > 0) unless out is NULL (only checked). 0, -1
 * when malformed, -2 out of memory. */
int tdx_viewsec_stop(const uint8_t *p, size_t n, uint64_t most, int64_t t0, int64_t **out,
                     uint64_t *m);

#endif
