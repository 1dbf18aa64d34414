/* error.h: the error value every libtraceidx call reports failures through.
 * A failing call fills a tdx_err (kind, byte offset, message); only tools/ prints or exits. */
#ifndef TDX_ERROR_H
#define TDX_ERROR_H

#include <stdarg.h>
#include <stdint.h>

enum tdx_errkind {
    TDX_OK = 0,
    TDX_EFORMAT,      /* malformed trace bytes (framing, tables, events) */
    TDX_EVALIDATE,    /* well-formed bytes but an inconsistent event order/state */
    TDX_EUNSUPPORTED, /* recognised but not supported (e.g. an unknown version) */
    TDX_EIO,          /* the operating system refused a read/write/map */
    TDX_ENOMEM,       /* an allocation failed */
    TDX_EUSAGE,       /* bad arguments from the caller */
    TDX_EINDEX,       /* a damaged, stale or incompatible index file */
};

#define TDX_NO_OFFSET UINT64_MAX

typedef struct tdx_err {
    int kind;        /* enum tdx_errkind */
    uint64_t offset; /* byte offset in the input the error refers to, or TDX_NO_OFFSET */
    char msg[480];   /* the cause, worded like Go's parser where Go has a message */
} tdx_err;

static inline void tdx_err_clear(tdx_err *e) {
    e->kind = TDX_OK;
    e->offset = TDX_NO_OFFSET;
    e->msg[0] = '\0';
}

/* Fills *e (when e is non-NULL) and returns -1 so callers can `return tdx_errf(...)`. */
int tdx_errf(tdx_err *e, int kind, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int tdx_verrf(tdx_err *e, int kind, uint64_t offset, const char *fmt, va_list ap);

#ifdef __clang_analyzer__
/* The analyzer cannot see into error.c and would follow paths where tdx_errf returns 0, so that
 * failed reads look like successes with unset outputs; this tells it the result is always -1. */
static inline int tdx_err_fail_(int r) {
    (void)r;
    return -1;
}
#define tdx_errf(...) tdx_err_fail_(tdx_errf(__VA_ARGS__))
#endif

/* Prefixes the message of an already filled error ("context: message"). */
void tdx_err_prefix(tdx_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const char *tdx_errkind_name(int kind);

#endif
