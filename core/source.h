/* source.h: opens a trace for reading: a binary trace by mmap, or a text/test/fuzz file converted
 * to binary in memory, and recognises the 16-byte header and its version. */
#ifndef TDX_SOURCE_H
#define TDX_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

enum tdx_source_kind {
    TDX_SRC_BINARY = 0, /* a wire-format trace file, mapped */
    TDX_SRC_TEXT,       /* Go's text format (plain, or a txtar .test file) converted in memory */
    TDX_SRC_FUZZ,       /* a "go test fuzz v1" corpus file decoded in memory */
};

#define TDX_HEADER_SIZE 16

struct tdx_textline; /* textfmt.h */

typedef struct tdx_source {
    const char *path;
    const uint8_t *data; /* the binary trace bytes (mapped or owned) */
    size_t size;
    int version; /* 22, 23, 25, 26 (v2), 11, 19, 21 (v1), or 0 if the header was not checked */
    int kind;    /* enum tdx_source_kind */
    /* Expectation of a Go test file (-- expect -- section); has_expect false otherwise. */
    bool has_expect;
    bool expect_failure;
    char *expect_pattern; /* the decoded regular expression of a FAILURE line */
    /* private */
    struct tdx_textline *lines_; /* text: where each event of data came from */
    size_t nlines_;
    void *map_;
    size_t maplen_;
    uint8_t *owned_;
} tdx_source;

/* Opens path. Binary files are mapped read-only; text, txtar and fuzz files are converted.
 * The header is not checked here (see tdx_header_parse). */
int tdx_source_open(tdx_source *s, const char *path, tdx_err *err);
/* Wraps an in-memory binary trace (not copied; must outlive the source). */
void tdx_source_from_memory(tdx_source *s, const char *name, const uint8_t *data, size_t size);
void tdx_source_close(tdx_source *s);

/* For a text source, the 1-based line of the file that the byte at off of data was converted
 * from (the line of the event holding it); 0 for other sources. Errors carry offsets into
 * data, which mean nothing to someone reading the text. */
uint64_t tdx_source_line(const tdx_source *s, uint64_t off);

/* Checks the 16-byte header. Returns 0 and the version (v1 or v2 numbers), or -1 with Go's
 * messages: "bad file format: not a Go execution trace?" or
 * "unknown or unsupported trace version go 1.N". */
int tdx_header_parse(const uint8_t *p, size_t n, int *version, tdx_err *err);

/* Opens a source and checks that its header is a v2 version; v1 versions are refused as
 * "not supported yet" until the old-format reader exists. */
int tdx_source_open_v2(tdx_source *s, const char *path, tdx_err *err);

#endif
