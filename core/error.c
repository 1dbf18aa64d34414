/* error.c: formatting of tdx_err values. */
#include "error.h"

#include <stdio.h>
#include <string.h>

#undef tdx_errf /* the analyzer's model in error.h must not rename the definition below */

int tdx_verrf(tdx_err *e, int kind, uint64_t offset, const char *fmt, va_list ap) {
    if (e) {
        e->kind = kind;
        e->offset = offset;
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    }
    return -1;
}

int tdx_errf(tdx_err *e, int kind, uint64_t offset, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tdx_verrf(e, kind, offset, fmt, ap);
    va_end(ap);
    return -1;
}

void tdx_err_prefix(tdx_err *e, const char *fmt, ...) {
    if (!e) return;
    char pre[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    char old[sizeof e->msg];
    memcpy(old, e->msg, sizeof old);
    /* Truncation is acceptable: messages are for people. */
    size_t n = strlen(pre);
    if (n > sizeof e->msg - 3) n = sizeof e->msg - 3;
    memcpy(e->msg, pre, n);
    e->msg[n] = ':';
    e->msg[n + 1] = ' ';
    size_t rest = sizeof e->msg - n - 2;
    size_t ol = strnlen(old, sizeof old);
    if (ol >= rest) ol = rest - 1;
    memcpy(e->msg + n + 2, old, ol);
    e->msg[n + 2 + ol] = '\0';
}

const char *tdx_errkind_name(int kind) {
    switch (kind) {
    case TDX_OK:
        return "ok";
    case TDX_EFORMAT:
        return "malformed trace";
    case TDX_EVALIDATE:
        return "invalid trace";
    case TDX_EUNSUPPORTED:
        return "unsupported";
    case TDX_EIO:
        return "I/O error";
    case TDX_ENOMEM:
        return "out of memory";
    case TDX_EUSAGE:
        return "usage";
    case TDX_EINDEX:
        return "bad index";
    }
    return "error";
}
