/* textfmt.c: text <-> binary conversion of traces, txtar and fuzz-corpus containers. */
#include "textfmt.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "quote.h"
#include "rawev.h"
#include "source.h"
#include "spec.h"
#include "varint.h"

/* ---- line and token scanning with Go's unicode.IsSpace ---- */

typedef struct {
    const char *p; /* current line */
    size_t n;
} span;

static size_t space_len(const char *p, size_t n) {
    /* Returns the byte length of a whitespace rune at p, or 0. */
    unsigned char c = (unsigned char)p[0];
    if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
    if (c < 0x80) return 0;
    int sz;
    uint32_t r = tdx_utf8_decode((const uint8_t *)p, n, &sz);
    if (r == 0x85 || r == 0xa0 || r == 0x1680 || (r >= 0x2000 && r <= 0x200a) || r == 0x2028 ||
        r == 0x2029 || r == 0x202f || r == 0x205f || r == 0x3000)
        return (size_t)sz;
    return 0;
}

static size_t rune_len(const char *p, size_t n) {
    if ((unsigned char)p[0] < 0x80) return 1;
    int sz;
    tdx_utf8_decode((const uint8_t *)p, n, &sz);
    return (size_t)sz;
}

/* Go's readToken: skips spaces; a '#' before the token makes the rest a comment (empty token). */
static span read_token(span s, span *rest) {
    size_t i = 0;
    while (i < s.n) {
        if (s.p[i] == '#') {
            *rest = (span){s.p + s.n, 0};
            return (span){s.p + s.n, 0};
        }
        size_t k = space_len(s.p + i, s.n - i);
        if (!k) break;
        i += k;
    }
    if (i >= s.n) {
        *rest = (span){s.p + s.n, 0};
        return (span){s.p + s.n, 0};
    }
    size_t start = i;
    while (i < s.n && s.p[i] != '#' && !space_len(s.p + i, s.n - i))
        i += rune_len(s.p + i, s.n - i);
    *rest = (span){s.p + i, s.n - i};
    return (span){s.p + start, i - start};
}

static int only_space(span s) {
    for (size_t i = 0; i < s.n;) {
        size_t k = space_len(s.p + i, s.n - i);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

typedef struct {
    const char *p, *end;
    size_t lineno; /* 1-based number of the last line returned, counted in the whole file */
} lines;

/* Next raw line (without '\n' and a trailing '\r'); returns 0 at end. */
static int next_raw_line(lines *L, span *out) {
    if (L->p >= L->end) return 0;
    const char *nl = memchr(L->p, '\n', (size_t)(L->end - L->p));
    const char *e = nl ? nl : L->end;
    size_t n = (size_t)(e - L->p);
    if (n && L->p[n - 1] == '\r') n--;
    *out = (span){L->p, n};
    L->p = nl ? nl + 1 : L->end;
    L->lineno++;
    return 1;
}

/* Next line holding a token (blank and comment lines skipped), as Go's TextReader.nextLine. */
static int next_line(lines *L, span *out) {
    span s, rest;
    while (next_raw_line(L, &s)) {
        if (read_token(s, &rest).n) {
            *out = s;
            return 1;
        }
    }
    return 0;
}

/* ---- text -> binary ---- */

#define LINE_ERR(err, L, ...) tdx_errf(err, TDX_EFORMAT, TDX_NO_OFFSET, __VA_ARGS__)

static int parse_u64(span v, uint64_t *out) {
    if (!v.n) return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < v.n; i++) {
        unsigned d = (unsigned char)v.p[i] - '0';
        if (d > 9) return -1;
        if (x > (UINT64_MAX - d) / 10) return -1;
        x = x * 10 + d;
    }
    *out = x;
    return 0;
}

/* Reads "name=value" tokens for the given names (Go's readArgs). */
static int read_args(span s, const char *const *names, int count, uint64_t *vals, lines *L,
                     tdx_err *err) {
    for (int i = 0; i < count; i++) {
        span rest;
        span tok = read_token(s, &rest);
        if (!tok.n) return LINE_ERR(err, L, "line %zu: no argument", L->lineno);
        const char *eq = memchr(tok.p, '=', tok.n);
        if (!eq)
            return LINE_ERR(err, L, "line %zu: malformed argument: \"%.*s\"", L->lineno, (int)tok.n,
                            tok.p);
        size_t kl = (size_t)(eq - tok.p);
        span val = {eq + 1, tok.n - kl - 1};
        /* Go parses the value before it compares the name. */
        if (parse_u64(val, &vals[i]))
            return LINE_ERR(err, L,
                            "line %zu: failed to parse argument value \"%.*s\" for arg \"%.*s\"",
                            L->lineno, (int)val.n, val.p, (int)kl, tok.p);
        if (kl != strlen(names[i]) || memcmp(tok.p, names[i], kl) != 0)
            return LINE_ERR(err, L, "line %zu: expected argument \"%s\", but got \"%.*s\"",
                            L->lineno, names[i], (int)kl, tok.p);
        s = rest;
    }
    if (!only_space(s))
        return LINE_ERR(
            err, L, "line %zu: encountered unexpected non-space at the end of an event: \"%.*s\"",
            L->lineno, (int)s.n, s.p);
    return 0;
}

static const char *const frame_fields[4] = {"pc", "func", "file", "line"};

static int read_data_line(lines *L, const char *evname, tdx_buf *data, tdx_err *err) {
    span s;
    if (!next_line(L, &s))
        return LINE_ERR(err, L, "line %zu: unexpected EOF while reading data for %s", L->lineno,
                        evname);
    const char *eq = memchr(s.p, '=', s.n);
    span key = {s.p, eq ? (size_t)(eq - s.p) : s.n}, rest;
    span k = read_token(key, &rest);
    if (!eq || k.n != 4 || memcmp(k.p, "data", 4) != 0 || !only_space(rest))
        return LINE_ERR(err, L, "line %zu: malformed data: \"%.*s\"", L->lineno, (int)s.n, s.p);
    span v = {eq + 1, s.n - (size_t)(eq + 1 - s.p)};
    while (v.n && space_len(v.p, v.n)) {
        size_t k2 = space_len(v.p, v.n);
        v.p += k2;
        v.n -= k2;
    }
    while (v.n && (v.p[v.n - 1] == ' ' || v.p[v.n - 1] == '\t')) v.n--;
    const char *why = NULL;
    data->n = 0;
    if (tdx_go_unquote(v.p, v.n, data, &why))
        return LINE_ERR(err, L, "line %zu: failed to parse data: %s", L->lineno,
                        why ? why : "invalid syntax");
    return 0;
}

/* Notes that the bytes appended from here on come from the line just read. */
static int mark_line(tdx_textinfo *info, const tdx_buf *out, const lines *L) {
    tdx_textline m = {out->n, L->lineno};
    return tdx_vec_push(&info->lines, m);
}

uint64_t tdx_textline_at(const tdx_textline *v, size_t n, uint64_t off) {
    if (!n) return 0;
    size_t lo = 0, hi = n; /* the last entry with v[i].off <= off; the header's is 0 */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].off <= off)
            lo = mid;
        else
            hi = mid;
    }
    return v[lo].line;
}

static int convert_trace(lines *L, tdx_buf *out, tdx_textinfo *info, tdx_err *err) {
    span s, rest;
    if (!next_line(L, &s)) return tdx_errf(err, TDX_EFORMAT, 0, "empty text trace");
    span tok = read_token(s, &rest);
    if (tok.n != 5 || memcmp(tok.p, "Trace", 5) != 0)
        return LINE_ERR(err, L, "line %zu: failed to parse header", L->lineno);
    tok = read_token(rest, &rest);
    uint64_t v;
    if (tok.n < 5 || memcmp(tok.p, "Go1.", 4) != 0 || parse_u64((span){tok.p + 4, tok.n - 4}, &v))
        return LINE_ERR(err, L, "line %zu: failed to parse header Go version", L->lineno);
    if (!tdx_version_is_v2((int)v) && !tdx_version_is_v1((int)v))
        return LINE_ERR(err, L, "line %zu: unknown or unsupported Go version 1.%" PRIu64, L->lineno,
                        v);
    if (!only_space(rest))
        return LINE_ERR(err, L,
                        "line %zu: encountered unexpected non-space at the end of the header",
                        L->lineno);
    int version = (int)v;
    info->version = version;
    if (mark_line(info, out, L)) goto oom;
    char hdr[17];
    snprintf(hdr, sizeof hdr, "go 1.%d trace", version);
    size_t hl = strlen(hdr);
    memset(hdr + hl, 0, sizeof hdr - hl);
    if (tdx_buf_append(out, hdr, TDX_HEADER_SIZE)) goto oom;

    tdx_buf data = {0};
    while (next_line(L, &s)) {
        tok = read_token(s, &rest);
        int t = tdx_spec_lookup(version, tok.p, (unsigned)tok.n);
        if (t < 0) {
            tdx_vec_free(&data);
            return LINE_ERR(err, L, "line %zu: unidentified event: %.*s", L->lineno, (int)tok.n,
                            tok.p);
        }
        const tdx_evspec *sp = &tdx_specs[t];
        if (mark_line(info, out, L)) goto oom_data;
        uint64_t args[TDX_MAX_ARGS] = {
            0}; /* the analyzer can't see that stack events set args[1] */
        if (read_args(rest, sp->args, sp->nargs, args, L, err)) {
            tdx_vec_free(&data);
            return -1;
        }
        uint8_t tb = (uint8_t)t;
        if (tdx_buf_append(out, &tb, 1)) goto oom_data;
        for (int i = 0; i < sp->nargs; i++)
            if (tdx_buf_uvarint(out, args[i])) goto oom_data;
        if (sp->is_stack) {
            for (uint64_t f = 0; f < args[1]; f++) {
                uint64_t fr[4];
                if (!next_line(L, &s)) {
                    tdx_vec_free(&data);
                    return LINE_ERR(err, L, "line %zu: unexpected EOF while reading stack",
                                    L->lineno);
                }
                if (read_args(s, frame_fields, 4, fr, L, err)) {
                    tdx_vec_free(&data);
                    return -1;
                }
                for (int i = 0; i < 4; i++)
                    if (tdx_buf_uvarint(out, fr[i])) goto oom_data;
            }
        }
        if (sp->has_data) {
            if (read_data_line(L, sp->name, &data, err)) {
                tdx_vec_free(&data);
                return -1;
            }
            if (tdx_buf_uvarint(out, data.n) || tdx_buf_append(out, data.v, data.n)) goto oom_data;
        }
    }
    tdx_vec_free(&data);
    return 0;
oom_data:
    tdx_vec_free(&data);
oom:
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

/* txtar: a marker line is "-- NAME --". Returns 1 and the name span when s is one. */
static int txtar_marker(span s, span *name) {
    if (s.n < 6 || memcmp(s.p, "-- ", 3) != 0 || memcmp(s.p + s.n - 3, " --", 3) != 0) return 0;
    span nm = {s.p + 3, s.n - 6};
    while (nm.n && nm.p[0] == ' ') nm.p++, nm.n--;
    while (nm.n && nm.p[nm.n - 1] == ' ') nm.n--;
    *name = nm;
    return 1;
}

static int parse_expect(span sec, tdx_textinfo *info, tdx_err *err) {
    lines L = {sec.p, sec.p + sec.n, 0};
    span line;
    info->has_expect = true;
    if (!next_raw_line(&L, &line) || line.n == 0) return 0; /* empty: success */
    const char *sp = memchr(line.p, ' ', line.n);
    size_t w = sp ? (size_t)(sp - line.p) : line.n;
    if (w == 7 && memcmp(line.p, "SUCCESS", 7) == 0) return 0;
    if (w == 7 && memcmp(line.p, "FAILURE", 7) == 0) {
        if (!sp)
            return tdx_errf(err, TDX_EFORMAT, 0, "bad header line for FAILURE: %.*s", (int)line.n,
                            line.p);
        tdx_buf pat = {0};
        const char *why;
        size_t off = w + 1;
        if (tdx_go_unquote(line.p + off, line.n - off, &pat, &why)) {
            tdx_vec_free(&pat);
            return tdx_errf(err, TDX_EFORMAT, 0, "malformed pattern: not correctly quoted: %.*s",
                            (int)(line.n - off), line.p + off);
        }
        if (tdx_vec_push(&pat, 0)) {
            tdx_vec_free(&pat);
            return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        }
        info->expect_failure = true;
        info->expect_pattern = (char *)pat.v;
        return 0;
    }
    return tdx_errf(err, TDX_EFORMAT, 0, "bad header line: %.*s", (int)line.n, line.p);
}

int tdx_text_to_binary(const char *text, size_t n, tdx_buf *out, tdx_textinfo *info, tdx_err *err) {
    memset(info, 0, sizeof *info);
    /* Find txtar sections; without any marker the whole text is the trace. */
    lines L = {text, text + n, 0};
    span s, name, trace = {text, n}, expect = {0};
    int have_trace = 0, have_markers = 0;
    size_t trace_line0 = 0;
    const char *sec_start = NULL;
    span cur = {0};
    int cur_is = 0; /* 1 = expect, 2 = trace */
    while (next_raw_line(&L, &s)) {
        if (!txtar_marker(s, &name)) continue;
        if (cur_is == 1) expect = (span){sec_start, (size_t)(s.p - sec_start)};
        if (cur_is == 2) trace = (span){sec_start, (size_t)(s.p - sec_start)};
        have_markers = 1;
        sec_start = L.p;
        cur = name;
        cur_is = (cur.n == 6 && memcmp(cur.p, "expect", 6) == 0)  ? 1
                 : (cur.n == 5 && memcmp(cur.p, "trace", 5) == 0) ? 2
                                                                  : 3;
        if (cur_is == 2) {
            have_trace = 1;
            trace_line0 = L.lineno;
        }
    }
    if (cur_is == 1) expect = (span){sec_start, (size_t)(text + n - sec_start)};
    if (cur_is == 2) trace = (span){sec_start, (size_t)(text + n - sec_start)};
    if (have_markers && !have_trace)
        return tdx_errf(err, TDX_EFORMAT, 0, "test file has no \"-- trace --\" section");
    if (have_markers && expect.p && parse_expect(expect, info, err)) return -1;
    lines T = {trace.p, trace.p + trace.n, trace_line0};
    if (convert_trace(&T, out, info, err)) {
        tdx_vec_free(&info->lines);
        free(info->expect_pattern);
        info->expect_pattern = NULL;
        return -1;
    }
    return 0;
}

/* ---- fuzz corpus ---- */

int tdx_fuzz_decode(const char *text, size_t n, tdx_buf *out, tdx_err *err) {
    lines L = {text, text + n, 0};
    span s;
    if (!next_raw_line(&L, &s) || s.n != 15 || memcmp(s.p, "go test fuzz v1", 15) != 0)
        return tdx_errf(err, TDX_EFORMAT, 0, "not a \"go test fuzz v1\" file");
    for (;;) {
        if (!next_raw_line(&L, &s))
            return tdx_errf(err, TDX_EFORMAT, TDX_NO_OFFSET, "fuzz file has no value");
        while (s.n && (s.p[0] == ' ' || s.p[0] == '\t')) s.p++, s.n--;
        while (s.n && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t')) s.n--;
        if (s.n) break;
    }
    if (s.n < 8 || memcmp(s.p, "[]byte(", 7) != 0 || s.p[s.n - 1] != ')')
        return tdx_errf(err, TDX_EFORMAT, TDX_NO_OFFSET, "line %zu: fuzz value is not []byte(...)",
                        L.lineno);
    const char *why = NULL;
    if (tdx_go_unquote(s.p + 7, s.n - 8, out, &why))
        return tdx_errf(err, TDX_EFORMAT, TDX_NO_OFFSET, "line %zu: bad []byte literal: %s",
                        L.lineno, why ? why : "invalid syntax");
    return 0;
}

/* ---- binary -> text ---- */

typedef struct {
    FILE *f;
    tdx_buf b;
    int failed;
} writer;

static void w_flush(writer *w) {
    if (w->b.n && fwrite(w->b.v, 1, w->b.n, w->f) != w->b.n) w->failed = 1;
    w->b.n = 0;
}

static void w_str(writer *w, const char *s, size_t n) {
    if (tdx_buf_append(&w->b, s, n)) w->failed = 1;
    if (w->b.n >= 1 << 16) w_flush(w);
}

static void w_u64(writer *w, uint64_t v) {
    char tmp[24];
    int k = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    w_str(w, tmp, (size_t)k);
}

int tdx_binary_to_text(const uint8_t *data, size_t n, FILE *f, tdx_err *err) {
    tdx_rawreader r;
    if (tdx_rawreader_init(&r, data, n, err)) return -1;
    writer w = {f, {0}, 0};
    char hdr[32];
    int hl = snprintf(hdr, sizeof hdr, "Trace Go1.%d\n", r.version);
    w_str(&w, hdr, (size_t)hl);
    tdx_buf q = {0};
    tdx_rawev e;
    int rc = 0;
    while (!w.failed && (rc = tdx_rawreader_next(&r, &e, err)) == 1) {
        const tdx_evspec *sp = &tdx_specs[e.type];
        w_str(&w, sp->name, strlen(sp->name));
        for (int i = 0; i < sp->nargs; i++) {
            w_str(&w, " ", 1);
            w_str(&w, sp->args[i], strlen(sp->args[i]));
            w_str(&w, "=", 1);
            w_u64(&w, e.args[i]);
        }
        /* (the reader decoded the frames: they end within the data) */
        const uint8_t *fp = e.frames;
        for (uint64_t fr = 0; sp->is_stack && fr < e.args[1]; fr++) {
            for (int i = 0; i < 4; i++) {
                uint64_t v = 0;
                fp += tdx_uvarint(fp, data + n, &v);
                w_str(&w, i == 0 ? "\n\t" : " ", i == 0 ? 2 : 1);
                w_str(&w, frame_fields[i], strlen(frame_fields[i]));
                w_str(&w, "=", 1);
                w_u64(&w, v);
            }
        }
        /* Go's raw reader leaves Data nil for an empty string, so no data line is printed. */
        if (sp->has_data && e.ndata) {
            q.n = 0;
            if (tdx_go_quote(&q, e.data, (size_t)e.ndata)) w.failed = 1;
            w_str(&w, "\n\tdata=", 7);
            w_str(&w, (const char *)q.v, q.n);
        }
        w_str(&w, "\n", 1);
    }
    if (rc > 0) rc = 0; /* (stopped by a failed write) */
    w_flush(&w);
    tdx_vec_free(&w.b);
    tdx_vec_free(&q);
    if (!rc && w.failed) rc = tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "write failed");
    return rc;
}
