/* evstore.h: storing decoded or ordered events into memory that another thread reads next, with
 * streaming stores that skip fetching the lines from the core that last read them. */
#ifndef TDX_EVSTORE_H
#define TDX_EVSTORE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "core/event.h"

/* *dst = *src; with stream, around the caches (when dst is 16-byte aligned). A buffer written
 * this way is handed over after tdx_evstore_fence. Ordinary stores to a line another core read
 * last first fetch it from there; streaming stores do not, and a reader going through the
 * buffer in order has it prefetched. For output the same thread reads at once, use !stream. */
static inline void tdx_evstore(tdx_event *dst, const tdx_event *src, bool stream) {
#ifdef __SSE2__
    if (stream && !((uintptr_t)dst & 15)) {
        _Static_assert(sizeof(tdx_event) % 16 == 0, "events are whole 16-byte words");
        const __m128i *s = (const __m128i *)(const void *)src;
        __m128i *d = (__m128i *)(void *)dst;
        for (size_t i = 0; i < sizeof(tdx_event) / 16; i++)
            _mm_stream_si128(d + i, _mm_loadu_si128(s + i));
        return;
    }
#else
    (void)stream;
#endif
    *dst = *src;
}

/* Orders the streaming stores before the hand-over (a mutex does not order them). */
static inline void tdx_evstore_fence(void) {
#ifdef __SSE2__
    _mm_sfence();
#endif
}

#endif
