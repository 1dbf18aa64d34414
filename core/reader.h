/* reader.h: reads a whole v2 trace into Go's ordered event stream: framing, generation loading
 * and ordering, generations in parallel on worker threads, with identical output for any count. */
#ifndef TDX_READER_H
#define TDX_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "order.h"

typedef struct tdx_read_stats {
    int version;
    uint64_t generations; /* generations whose events were delivered */
    uint64_t events;      /* events delivered, Sync events included */
    uint64_t syncs;
    int64_t first_time, last_time;
    uint64_t speculated;   /* generations ordered speculatively */
    uint64_t reruns;       /* ... of which had to be ordered again against the true state */
    const char *rerun_why; /* the reason for the first rerun */
    uint64_t bytes;        /* trace bytes of the delivered generations */
    uint64_t input_hash;   /* with opts.hash_input, after success */
    uint64_t input_sample; /* ... and tdx_trace_sample_hash of the input */
} tdx_read_stats;

/* A generation has been delivered completely (called in order, after its events). */
typedef int (*tdx_gen_done_fn)(void *ctx, const tdx_gen *g, uint64_t index, uint64_t nevents);

typedef struct tdx_read_opts {
    int jobs;         /* worker threads; <= 1 orders in the calling thread */
    tdx_emit_fn emit; /* every event in Go's order with final times (may be NULL) */
    void *emit_ctx;
    tdx_gen_done_fn gen_done; /* optional */
    void *gen_done_ctx;
    /* Optional progress callback, called from the calling thread after each generation. */
    void (*progress)(void *ctx, uint64_t bytes_done, uint64_t bytes_total, uint64_t events);
    void *progress_ctx;
    struct tdx_prefetch *prefetch; /* optional: told how far framing has got */
    bool hash_input; /* compute stats.input_hash (XXH3 of all the input bytes) and input_sample */
    bool release_input; /* data is a read-only file mapping: drop pages once delivered (RSS) */
} tdx_read_opts;

/* Reads the trace data[0..size) of the given v2 version. On failure the events Go would have
 * delivered before the error (including the Sync Go emits before load errors) have been emitted,
 * and err holds Go's message with the byte offset. */
int tdx_read_trace(const uint8_t *data, size_t size, int version, const tdx_read_opts *opts,
                   tdx_read_stats *stats, tdx_err *err);

/* The sampled identity of a trace: XXH3 of its size and of 64 windows of 4 KiB spread evenly
 * over it, cheap to recompute when an index checks that its trace is unchanged. */
uint64_t tdx_trace_sample_hash(const uint8_t *data, size_t size);

/* The number of online CPUs (the default for jobs). */
int tdx_ncpus(void);

#endif
