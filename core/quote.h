/* quote.h: byte-exact reproductions of Go's string quoting (strconv.Quote/Unquote, IsPrint,
 * utf8.DecodeRune and encoding/json's string escaping) so our output matches Go tools' output. */
#ifndef TDX_QUOTE_H
#define TDX_QUOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"

/* Appends Go's strconv.Quote(s) (with the surrounding double quotes) to out. 0 or -1 (OOM). */
int tdx_go_quote(tdx_buf *out, const uint8_t *s, size_t n);

/* Decodes a Go string literal (double-quoted with escapes, or back-quoted raw) occupying exactly
 * s[0..n) (no surrounding whitespace) into out. Returns 0, or -1 with *why set to a static
 * message ("invalid syntax", or "out of memory") when the literal is malformed.
 * As Go does, a raw invalid UTF-8 byte inside double quotes decodes to U+FFFD (use \xHH for a
 * raw byte); back-quoted content is copied verbatim except that carriage returns are dropped.
 * A single-quoted literal must hold exactly one character (rune), as Go allows. On failure out may
 * hold a partial result. */
int tdx_go_unquote(const char *s, size_t n, tdx_buf *out, const char **why);

/* Decodes one UTF-8 sequence at p (n > 0 bytes available) as Go's utf8.DecodeRune does:
 * returns the rune and sets *size; an invalid or truncated sequence returns 0xFFFD with *size 1. */
uint32_t tdx_utf8_decode(const uint8_t *p, size_t n, int *size);

/* Go's strconv.IsPrint(r): categories L, M, N, P, S plus U+0020. The tables come from
 * core/unicode_tables.h (see TDX_UNICODE_VERSION there; Go >= 1.21 uses Unicode 15.0.0). */
int tdx_unicode_isprint(uint32_t r);

/* Appends the JSON encoding of s (with quotes) exactly as Go's encoding/json does with its default
 * HTML-safe escaping: " -> \", \ -> \\, \n \r \t, \b and \f (as Go >= 1.22), other bytes < 0x20 ->
 * \u00XX lower-case hex, < > & -> \u003c \u003e \u0026, U+2028/U+2029 -> \u2028/\u2029, each byte
 * of an invalid UTF-8 sequence -> \ufffd, everything else raw UTF-8 (DEL included). 0 or -1. */
int tdx_json_quote(tdx_buf *out, const uint8_t *s, size_t n);

/* Whether tdx_json_quote copies s[0..n) as it is: printable ASCII with nothing to escape. */
bool tdx_json_plain(const uint8_t *s, size_t n);

/* Byte length tdx_json_quote would append (no allocation). */
size_t tdx_json_quote_len(const uint8_t *s, size_t n);

/* tdx_json_quote of the text "<func>:<line>" (the viewer's frame name), without composing it
 * first. 0 or -1. */
int tdx_json_quote_frame(tdx_buf *out, const uint8_t *func, size_t n, uint64_t line);

#endif
