/* source.c: mapping trace files and recognising their header. */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"
#include "regfile.h"
#include "spec.h"
#include "textfmt.h"

int tdx_header_parse(const uint8_t *p, size_t n, int *version, tdx_err *err) {
    static const char bad[] = "bad file format: not a Go execution trace?";
    if (n < TDX_HEADER_SIZE || memcmp(p, "go 1.", 5) != 0)
        return tdx_errf(err, TDX_EFORMAT, 0, bad);
    size_t i = 5;
    int v = 0;
    while (i < 8 && p[i] >= '0' && p[i] <= '9') v = v * 10 + (p[i++] - '0');
    if (i == 5 || i == 8 || memcmp(p + i, " trace", 6) != 0)
        return tdx_errf(err, TDX_EFORMAT, 0, bad);
    for (i += 6; i < TDX_HEADER_SIZE; i++)
        if (p[i] != 0) return tdx_errf(err, TDX_EFORMAT, 0, bad);
    if (!tdx_version_is_v2(v) && !tdx_version_is_v1(v))
        return tdx_errf(err, TDX_EUNSUPPORTED, 0, "unknown or unsupported trace version go 1.%d",
                        v);
    *version = v;
    return 0;
}

void tdx_source_from_memory(tdx_source *s, const char *name, const uint8_t *data, size_t size) {
    memset(s, 0, sizeof *s);
    s->path = name;
    s->data = data;
    s->size = size;
}

void tdx_source_close(tdx_source *s) {
    if (s->map_) munmap(s->map_, s->maplen_);
    free(s->owned_);
    free(s->expect_pattern);
    free(s->lines_);
    memset(s, 0, sizeof *s);
}

static int is_text_start(const uint8_t *p, size_t n) {
    /* Text traces start (after blank and comment lines) with "Trace", txtar files with "-- ". */
    size_t i = 0;
    while (i < n) {
        while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) i++;
        if (i < n && p[i] == '#') {
            while (i < n && p[i] != '\n') i++;
            continue;
        }
        break;
    }
    if (n - i >= 5 && memcmp(p + i, "Trace", 5) == 0) return 1;
    if (n - i >= 3 && memcmp(p + i, "-- ", 3) == 0) return 1;
    return 0;
}

int tdx_source_open(tdx_source *s, const char *path, tdx_err *err) {
    memset(s, 0, sizeof *s);
    s->path = path;
    struct stat st;
    int fd = tdx_open_regular(path, &st, err);
    if (fd < 0) return -1;
    size_t size = (size_t)st.st_size;
    void *map = NULL;
    if (size > 0) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int e = errno;
            close(fd);
            return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "cannot map: %s", strerror(e));
        }
    }
    close(fd);
    const uint8_t *p = map;
    if (size >= 5 && memcmp(p, "go 1.", 5) == 0) {
        s->map_ = map;
        s->maplen_ = size;
        s->data = p;
        s->size = size;
        s->kind = TDX_SRC_BINARY;
        return 0;
    }
    tdx_buf out = {0};
    int rc;
    tdx_textinfo info = {0};
    if (size >= 15 && memcmp(p, "go test fuzz v1", 15) == 0) {
        s->kind = TDX_SRC_FUZZ;
        rc = tdx_fuzz_decode((const char *)p, size, &out, err);
    } else if (size > 0 && is_text_start(p, size)) {
        s->kind = TDX_SRC_TEXT;
        rc = tdx_text_to_binary((const char *)p, size, &out, &info, err);
    } else {
        /* Neither binary nor text: keep the bytes so the header check names the problem. */
        s->map_ = map;
        s->maplen_ = size;
        s->data = p;
        s->size = size;
        return 0;
    }
    if (map) munmap(map, size);
    if (rc) { /* a failed conversion keeps nothing in info */
        tdx_vec_free(&out);
        return -1;
    }
    s->owned_ = out.v;
    s->data = out.v;
    s->size = out.n;
    s->has_expect = info.has_expect;
    s->expect_failure = info.expect_failure;
    s->expect_pattern = info.expect_pattern;
    s->lines_ = info.lines.v;
    s->nlines_ = info.lines.n;
    return 0;
}

uint64_t tdx_source_line(const tdx_source *s, uint64_t off) {
    return s->kind == TDX_SRC_TEXT ? tdx_textline_at(s->lines_, s->nlines_, off) : 0;
}

int tdx_source_open_v2(tdx_source *s, const char *path, tdx_err *err) {
    if (tdx_source_open(s, path, err)) return -1;
    if (tdx_header_parse(s->data, s->size, &s->version, err)) {
        tdx_source_close(s);
        return -1;
    }
    return 0;
}
