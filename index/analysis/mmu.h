/* mmu.h: go tool trace's minimum mutator utilization (its MMU page): the utilization functions
 * for a choice of what counts as GC, from section MUTIL's records, and their MMU curve (the
 * minimum over windows of a size, the worst disjoint windows, the percentiles Go shows). */
#ifndef TDX_MMU_H
#define TDX_MMU_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "index/analysis/muinput.h"

/* What counts as GC work (Go's UtilFlags). */
enum {
    TDX_MMU_STW = 1,        /* stop-the-world ranges of the GC */
    TDX_MMU_BACKGROUND = 2, /* background mark workers */
    TDX_MMU_ASSIST = 4,     /* mark assists */
    TDX_MMU_SWEEP = 8,      /* incremental sweeps */
    TDX_MMU_PERPROC = 16    /* one function per P instead of one for the system */
};

/* A change of utilization: from time on, util in [0, 1]. */
typedef struct tdx_mu {
    int64_t time;
    double util;
} tdx_mu;

/* A window of the worst list: its start and mean utilization. */
typedef struct tdx_muwin {
    int64_t time;
    double util;
} tdx_muwin;

typedef struct tdx_mmu tdx_mmu;

/* Reads the records (the reader as tdx_muread_init left it) into the functions for flags.
 * *out is NULL when the trace names no GOMAXPROCS (Go has no function then). 0, or -1 with err
 * set (malformed section, memory). */
int tdx_mmu_new(tdx_mmu **out, tdx_muread *r, unsigned flags, tdx_err *err);
void tdx_mmu_free(tdx_mmu *m);

/* The functions, each ending with 0 at the trace's last event. */
size_t tdx_mmu_nseries(const tdx_mmu *m);
const tdx_mu *tdx_mmu_series(const tdx_mmu *m, size_t i, size_t *n);

/* The MMU for windows of `window` ns (0 for a window <= 0) into *out: 0, or -1 when memory runs
 * out. (Go's percentiles of the utilization, its MUD, are this minimum: Go never fills the
 * distribution they are read from.) */
int tdx_mmu_min(tdx_mmu *m, int64_t window, double *out);
/* Up to n worst disjoint windows, lowest utilization first (ties: earliest); *got of them.
 * 0, or -1 when memory runs out. */
int tdx_mmu_worst(tdx_mmu *m, int64_t window, size_t n, tdx_muwin *out, size_t *got);

#endif
