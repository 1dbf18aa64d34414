/* textfmt.h: Go's text form of a trace, both ways, and the containers it comes in
 * (txtar test files with -- expect --/-- trace --, and "go test fuzz v1" corpus files). */
#ifndef TDX_TEXTFMT_H
#define TDX_TEXTFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "mem.h"

/* The converted bytes from `off` on (up to the next entry's offset) came from the text's line
 * `line` (1-based, counted in the whole file): the header, then one entry per event. */
typedef struct tdx_textline {
    uint64_t off;
    uint64_t line;
} tdx_textline;

typedef struct tdx_textinfo {
    int version;                 /* the header's Go1.N */
    bool has_expect;             /* the input was a test file with an expect section */
    bool expect_failure;         /* its first line was FAILURE "<pattern>" */
    char *expect_pattern;        /* malloc'd decoded pattern (caller frees), or NULL */
    TDX_VEC(tdx_textline) lines; /* malloc'd (caller frees), ascending offsets */
} tdx_textinfo;

/* Converts a text trace (plain, or a txtar test file) into wire bytes appended to out, exactly as
 * Go's test harness does: minimal uvarints, EventBatch sizes copied verbatim. Errors name the
 * 1-based line in the message (err->offset is TDX_NO_OFFSET: a line is not a byte offset). On
 * failure info holds nothing to free. */
int tdx_text_to_binary(const char *text, size_t n, tdx_buf *out, tdx_textinfo *info, tdx_err *err);

/* The text line the converted byte at off came from (the event holding it), or 0 when lines
 * is empty. */
uint64_t tdx_textline_at(const tdx_textline *lines, size_t n, uint64_t off);

/* Decodes a "go test fuzz v1" file holding one []byte(...) value into out. */
int tdx_fuzz_decode(const char *text, size_t n, tdx_buf *out, tdx_err *err);

/* Writes the text form of a binary trace to f, event by event as Go's raw text writer does
 * (no framing interpretation). Returns 0, or -1 with the byte offset of the first bad byte. */
int tdx_binary_to_text(const uint8_t *data, size_t n, FILE *f, tdx_err *err);

#endif
