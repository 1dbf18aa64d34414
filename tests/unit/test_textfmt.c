/* test_textfmt.c: core/textfmt.h: Go's text form of traces (text -> binary, binary -> text), txtar
 * test files and "go test fuzz v1" files (wire-format spec sections 6 and 7, Go's
 * internal/trace/raw TextReader/TextWriter). Inputs are exact-size heap copies (ASan). */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/textfmt.h"

/* ---- helpers ---- */

typedef struct {
    int rc;
    tdx_buf out;
    tdx_textinfo info;
    tdx_err err;
} conv;

static conv t2b(const char *text) {
    size_t n = strlen(text);
    char *copy = malloc(n ? n : 1);
    cr_assert_not_null(copy);
    memcpy(copy, text, n); /* NOLINT(bugprone-not-null-terminated-result): no NUL to lean on */
    conv c;
    memset(&c, 0, sizeof c);
    tdx_err_clear(&c.err);
    c.rc = tdx_text_to_binary(copy, n, &c.out, &c.info, &c.err);
    free(copy);
    return c;
}
static void conv_free(conv *c) {
    tdx_vec_free(&c->out);
    free(c->info.expect_pattern);
    tdx_vec_free(&c->info.lines);
}

static void b_bytes(tdx_buf *b, const void *p, size_t n) {
    cr_assert_eq(tdx_buf_append(b, p, n), 0);
}
static void b_header(tdx_buf *b, int version) {
    char h[16] = {0};
    snprintf(h, sizeof h, "go 1.%d trace", version);
    b_bytes(b, h, 16);
}
#define PL(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})

static void hex(char *dst, size_t cap, const uint8_t *p, size_t n) {
    size_t o = 0;
    dst[0] = 0;
    for (size_t i = 0; i < n && o + 4 < cap; i++)
        o += (size_t)snprintf(dst + o, cap - o, "%02x ", p[i]);
}

static void expect_bytes(const conv *c, const tdx_buf *want) {
    char a[2048], b[2048];
    hex(a, sizeof a, c->out.v, c->out.n);
    hex(b, sizeof b, want->v, want->n);
    cr_expect(c->out.n == want->n && (want->n == 0 || memcmp(c->out.v, want->v, want->n) == 0),
              "binary\n  got  %s\n  want %s", a, b);
}

/* Converts text and expects the wire bytes of `want` (version header + body). */
static void expect_binary(const char *text, int version, const uint8_t *body, size_t n) {
    tdx_buf want = {0};
    b_header(&want, version);
    b_bytes(&want, body, n);
    conv c = t2b(text);
    cr_expect_eq(c.rc, 0, "text -> binary failed: %s", c.err.msg);
    if (c.rc == 0) {
        expect_bytes(&c, &want);
        cr_expect_eq(c.info.version, version);
    }
    conv_free(&c);
    tdx_vec_free(&want);
}

/* Converts text and expects failure with a message containing `part`. */
static void expect_text_error(const char *text, const char *part) {
    conv c = t2b(text);
    cr_expect_eq(c.rc, -1, "text should fail with \"%s\"", part);
    cr_expect(strstr(c.err.msg, part) != NULL, "message \"%s\" does not contain \"%s\"", c.err.msg,
              part);
    cr_expect_eq(c.err.kind, TDX_EFORMAT);
    conv_free(&c);
}

/* binary -> text into memory. */
static int b2t(const uint8_t *data, size_t n, char **text, tdx_err *err) {
    uint8_t *copy = malloc(n ? n : 1);
    cr_assert_not_null(copy);
    if (n) memcpy(copy, data, n);
    size_t len = 0;
    FILE *f = open_memstream(text, &len);
    cr_assert_not_null(f);
    tdx_err_clear(err);
    int rc = tdx_binary_to_text(copy, n, f, err);
    fclose(f);
    free(copy);
    return rc;
}

static void expect_text(const tdx_buf *bin, const char *want) {
    char *text = NULL;
    tdx_err e;
    int rc = b2t(bin->v, bin->n, &text, &e);
    cr_expect_eq(rc, 0, "binary -> text failed: %s", e.msg);
    cr_expect_str_eq(text, want);
    free(text);
}

static const char BASIC[] = "Trace Go1.22\n"
                            "EventBatch gen=1 m=18446744073709551615 time=0 size=5\n"
                            "Frequency freq=15625000\n"
                            "EventBatch gen=1 m=0 time=0 size=4\n"
                            "ProcStatus dt=1 p=0 pstatus=1\n";
static const uint8_t BASIC_BODY[] = {1,    1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 1, 0,    5,    8,    0xa8, 0xd6, 0xb9, 7,    1,
                                     1,    0, 0,    4,    13,   1,    0,    1};

/* ---- text -> binary ---- */

static void text_to_binary__basic(void) {
    expect_binary(BASIC, 22, BASIC_BODY, sizeof BASIC_BODY);
    conv c = t2b(BASIC);
    cr_expect(!c.info.has_expect);
    cr_expect(!c.info.expect_failure);
    cr_expect_null(c.info.expect_pattern);
    conv_free(&c);
}

static void text_to_binary__header_versions_and_spacing(void) {
    expect_binary("Trace Go1.23\n", 23, NULL, 0);
    expect_binary("Trace Go1.25", 25, NULL, 0);
    expect_binary("\n\n# a comment\n   \t\n  # another\n  \tTrace \t Go1.26 \t \n", 26, NULL, 0);
    expect_binary("Trace Go1.22\r\nFrequency freq=1\r\n", 22, PL(8, 1));
    /* Unicode white space (U+00A0, U+3000) separates tokens as Go's unicode.IsSpace says. */
    expect_binary("Trace\xc2\xa0Go1.22\xe3\x80\x80\nFrequency\xc2\xa0"
                  "freq=2\n",
                  22, PL(8, 2));
    /* Leading zeros in the version. */
    expect_binary("Trace Go1.022\n", 22, NULL, 0);
}

static void text_to_binary__header_errors(void) {
    expect_text_error("Trace Go1.24\n", "unknown or unsupported Go version 1.24");
    expect_text_error("Trace Go1.99\n", "unknown or unsupported Go version 1.99");
    expect_text_error("Trace Go1.x\n", "failed to parse header Go version");
    expect_text_error("Trace Go2.22\n", "failed to parse header Go version");
    expect_text_error("Trace\n", "failed to parse header Go version");
    expect_text_error("Tracer Go1.22\n", "failed to parse header");
    expect_text_error("Frequency freq=1\n", "failed to parse header");
    expect_text_error("Trace Go1.22 extra\n",
                      "encountered unexpected non-space at the end of the header");
    expect_text_error("Trace Go1.22 # note\n",
                      "encountered unexpected non-space at the end of the header");
    conv c = t2b("");
    cr_expect_eq(c.rc, -1);
    conv_free(&c);
    c = t2b("\n# only a comment\n");
    cr_expect_eq(c.rc, -1);
    conv_free(&c);
}

static void text_to_binary__blank_and_comment_lines_are_skipped_everywhere(void) {
    expect_binary("Trace Go1.22\n"
                  "\n"
                  "# comment\n"
                  "Stacks\n"
                  "  # between an event and its frames\n"
                  "Stack id=7 nframes=2\n"
                  "\n"
                  "\tpc=100 func=1 file=2 line=3\n"
                  "\t# between frames\n"
                  "\tpc=200 func=4 file=5 line=6\n"
                  "Strings\n"
                  "String id=1\n"
                  "   \n"
                  "# between an event and its data\n"
                  "\tdata=\"x\"\n"
                  "#last\n",
                  22, PL(2, 3, 7, 2, 100, 1, 2, 3, 0xc8, 1, 4, 5, 6, 4, 5, 1, 1, 'x'));
}

static void text_to_binary__hash_after_a_token_is_an_error(void) {
    expect_text_error("Trace Go1.22\nProcStatus dt=1 p=0 pstatus=1 # comment\n",
                      "encountered unexpected non-space at the end of an event: \" # comment\"");
    expect_text_error("Trace Go1.22\nProcStatus dt=1 p=0 pstatus=1#c\n",
                      "encountered unexpected non-space at the end of an event: \"#c\"");
    expect_text_error("Trace Go1.22\nStacks # x\n",
                      "encountered unexpected non-space at the end of an event: \" # x\"");
    expect_text_error("Trace Go1.22\nProcStatus dt=1 p=0 pstatus=1 extra=2\n",
                      "encountered unexpected non-space at the end of an event: \" extra=2\"");
    /* In a frame line too. */
    expect_text_error("Trace Go1.22\nStack id=1 nframes=1\n\tpc=1 func=2 file=3 line=4 #x\n",
                      "encountered unexpected non-space at the end of an event: \" #x\"");
    /* A '#' before the first token makes the line a comment: a missing argument follows. */
    expect_text_error("Trace Go1.22\nProcStatus dt=1 #p=0 pstatus=1\n", "no argument");
}

static void text_to_binary__argument_errors(void) {
    expect_text_error("Trace Go1.22\nProcStatus dt=1 q=0 pstatus=1\n",
                      "expected argument \"p\", but got \"q\"");
    expect_text_error("Trace Go1.22\nProcStatus p=0 dt=1 pstatus=1\n",
                      "expected argument \"dt\", but got \"p\"");
    expect_text_error("Trace Go1.22\nStack id=1 nframes=1\n\tpc=1 fn=2 file=3 line=4\n",
                      "expected argument \"func\", but got \"fn\"");
    expect_text_error("Trace Go1.22\nProcStatus dt=1 p=0\n", "no argument");
    expect_text_error("Trace Go1.22\nProcStatus dt=1 p pstatus=1\n", "malformed argument: \"p\"");
    expect_text_error("Trace Go1.22\nProcStatus dt=1 p=x pstatus=1\n",
                      "failed to parse argument value \"x\" for arg \"p\"");
    expect_text_error("Trace Go1.22\nProcStatus dt=1 p= pstatus=1\n",
                      "failed to parse argument value \"\" for arg \"p\"");
    expect_text_error("Trace Go1.22\nProcStatus dt=1 p=-1 pstatus=1\n",
                      "failed to parse argument value \"-1\" for arg \"p\"");
    expect_text_error("Trace Go1.22\nProcStatus dt=1 p=+1 pstatus=1\n",
                      "failed to parse argument value \"+1\" for arg \"p\"");
    expect_text_error("Trace Go1.22\nProcStatus dt=1 p=18446744073709551616 pstatus=1\n",
                      "failed to parse argument value \"18446744073709551616\" for arg \"p\"");
    expect_text_error("Trace Go1.22\nProcStatus dt=1 p=0x10 pstatus=1\n",
                      "failed to parse argument value \"0x10\" for arg \"p\"");
    /* Only the first '=' splits. */
    expect_text_error("Trace Go1.22\nProcStatus dt=1 p=1=2 pstatus=1\n",
                      "failed to parse argument value \"1=2\" for arg \"p\"");
}

/* Go's readArg parses the value before readArgs compares the name. */
Test(text_to_binary, value_parsed_before_name_checked) {
    expect_text_error("Trace Go1.22\nProcStatus dt=1 q=x pstatus=1\n",
                      "failed to parse argument value \"x\" for arg \"q\"");
}

static void text_to_binary__values(void) {
    expect_binary("Trace Go1.22\nProcStatus dt=0 p=18446744073709551615 pstatus=007\n", 22,
                  PL(13, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 7));
    expect_binary("Trace Go1.22\nFrequency freq=300\n", 22, PL(8, 0xac, 2));
}

static void text_to_binary__unidentified_events(void) {
    expect_text_error("Trace Go1.22\nBogus x=1\n", "unidentified event: Bogus");
    expect_text_error("Trace Go1.22\nprocstatus dt=1 p=0 pstatus=1\n",
                      "unidentified event: procstatus");
    /* Names beyond the version's table. */
    expect_text_error("Trace Go1.22\nGoSwitch dt=1 g=1 g_seq=1\n", "unidentified event: GoSwitch");
    expect_text_error("Trace Go1.22\nExperimentalBatch exp=1 gen=1 m=0 time=0\n\tdata=\"\"\n",
                      "unidentified event: ExperimentalBatch");
    expect_text_error("Trace Go1.23\nSync\n", "unidentified event: Sync");
    expect_text_error("Trace Go1.25\nEndOfGeneration\n", "unidentified event: EndOfGeneration");
    /* ... and within it. */
    expect_binary("Trace Go1.23\nGoSwitch dt=1 g=2 g_seq=3\n", 23, PL(45, 1, 2, 3));
    expect_binary("Trace Go1.25\nSync\nClockSnapshot dt=1 mono=99 sec=1740755049 nsec=123\n", 25,
                  PL(50, 51, 1, 99, 0xe9, 0xa0, 0x87, 0xbe, 6, 123));
    expect_binary("Trace Go1.26\nEndOfGeneration\n", 26, PL(52));
}

static void text_to_binary__stacks(void) {
    expect_binary("Trace Go1.22\n"
                  "Stack id=17 nframes=3\n"
                  "\tpc=4816080 func=30 file=31 line=45\n"
                  "\tpc=4813660 func=32 file=33 line=141\n"
                  "\tpc=4815908 func=34 file=31 line=43\n"
                  "Stack id=18 nframes=0\n",
                  22,
                  PL(3, 17, 3, 0xd0, 0xf9, 0xa5, 2, 30, 31, 45, 0xdc, 0xe6, 0xa5, 2, 32, 33, 0x8d,
                     1, 0xa4, 0xf8, 0xa5, 2, 34, 31, 43, 3, 18, 0));
    expect_text_error("Trace Go1.22\nStack id=1 nframes=2\n\tpc=1 func=2 file=3 line=4\n",
                      "unexpected EOF while reading stack");
    expect_text_error("Trace Go1.22\nStack id=1 nframes=1\n\tpc=1 func=2 file=3\n", "no argument");
}

static void text_to_binary__string_data(void) {
    /* Escapes of Go string literals. */
    expect_binary("Trace Go1.22\n"
                  "String id=1\n"
                  "\tdata=\"a\\tb\\x00\\u00e9\\\\\\\"\\n\\101\"\n",
                  22, PL(5, 1, 10, 'a', '\t', 'b', 0, 0xc3, 0xa9, '\\', '"', '\n', 'A'));
    /* Back-quoted raw literal, spaces around '=' and the literal. */
    expect_binary("Trace Go1.22\nString id=2\n  data =  `a\\tb`  \n", 22,
                  PL(5, 2, 4, 'a', '\\', 't', 'b'));
    /* Empty data: a zero length. */
    expect_binary("Trace Go1.22\nString id=3\n\tdata=\"\"\n", 22, PL(5, 3, 0));
    /* Raw UTF-8 passes through. */
    expect_binary("Trace Go1.22\nString id=4\n\tdata=\"\xdf\x95\"\n", 22, PL(5, 4, 2, 0xdf, 0x95));
    /* A 200-byte string has a two-byte length. */
    char text[512];
    int k = snprintf(text, sizeof text, "Trace Go1.22\nString id=5\n\tdata=\"");
    for (int i = 0; i < 200; i++) text[k++] = 'z';
    snprintf(text + k, sizeof text - (size_t)k, "\"\n");
    conv c = t2b(text);
    cr_assert_eq(c.rc, 0, "%s", c.err.msg);
    cr_expect_eq(c.out.n, 16 + 1 + 1 + 2 + 200);
    cr_expect_eq(c.out.v[18], 0xc8);
    cr_expect_eq(c.out.v[19], 1);
    conv_free(&c);
}

static void text_to_binary__string_data_errors(void) {
    expect_text_error("Trace Go1.22\nString id=1\n",
                      "unexpected EOF while reading data for String");
    expect_text_error("Trace Go1.22\nString id=1\n# comment\n\n",
                      "unexpected EOF while reading data for String");
    expect_text_error("Trace Go1.22\nString id=1\n\tdat=\"x\"\n", "malformed data");
    expect_text_error("Trace Go1.22\nString id=1\n\tdata \"x\"\n", "malformed data");
    expect_text_error("Trace Go1.22\nString id=1\n\tdata=x\n", "failed to parse data");
    expect_text_error("Trace Go1.22\nString id=1\n\tdata=\"x\n", "failed to parse data");
    expect_text_error("Trace Go1.22\nString id=1\n\tdata=\"\\q\"\n", "failed to parse data");
    expect_text_error("Trace Go1.22\nString id=1\n\tdata='xy'\n", "failed to parse data");
}

/* Go's readData uses strconv.Unquote, which also takes a one-character single-quoted literal. */
Test(text_to_binary, string_data_single_quoted_character) {
    expect_binary("Trace Go1.22\nString id=1\n\tdata='x'\n", 22, PL(5, 1, 1, 'x'));
    expect_binary("Trace Go1.22\nString id=1\n\tdata='\\u00e9'\n", 22, PL(5, 1, 2, 0xc3, 0xa9));
}

static void text_to_binary__experimental_batch(void) {
    expect_binary(
        "Trace Go1.23\nExperimentalBatch exp=1 gen=2 m=3 time=4\n\tdata=\"\\x00\\x01\\xff\"\n", 23,
        PL(49, 1, 2, 3, 4, 3, 0, 1, 0xff));
}

static void text_to_binary__event_batch_size_copied_verbatim(void) {
    /* go122-fail-first-gen-first: a batch header with no events after it. */
    expect_binary("Trace Go1.22\nEventBatch gen=2 m=0 time=0 size=50\n", 22, PL(1, 2, 0, 0, 50));
    /* A size that does not match the events is not corrected. */
    expect_binary(
        "Trace Go1.22\nEventBatch gen=1 m=0 time=0 size=1\nProcStatus dt=1 p=0 pstatus=1\n", 22,
        PL(1, 1, 0, 0, 1, 13, 1, 0, 1));
}

static void text_to_binary__error_messages_name_the_line(void) {
    conv c = t2b("Trace Go1.22\n\n# c\nBogus\n");
    cr_expect_eq(c.rc, -1);
    cr_expect_str_eq(c.err.msg, "line 4: unidentified event: Bogus");
    conv_free(&c);
    c = t2b("Trace Go1.22\nProcStatus dt=1 q=0 pstatus=1\n");
    cr_expect_str_eq(c.err.msg, "line 2: expected argument \"p\", but got \"q\"");
    conv_free(&c);
}

/* textfmt.h: "Errors carry the 1-based line number in err->offset". */
Test(text_to_binary, error_names_the_line) {
    /* A line number is not a byte offset: it goes into the message, the offset stays unknown. */
    conv c = t2b("Trace Go1.22\n\n# c\nBogus\n");
    cr_expect_eq(c.rc, -1);
    cr_expect_eq(c.err.offset, TDX_NO_OFFSET);
    cr_expect(strstr(c.err.msg, "line 4: ") != NULL, "msg %s", c.err.msg);
    conv_free(&c);
    c = t2b("-- expect --\nSUCCESS\n-- trace --\nTrace Go1.22\nProcStatus dt=1 q=0 pstatus=1\n");
    cr_expect_eq(c.rc, -1);
    cr_expect(strstr(c.err.msg, "line 5: ") != NULL, "msg %s", c.err.msg);
    conv_free(&c);
}

/* ---- txtar test files ---- */

static void txtar__failure_expectation(void) {
    conv c = t2b("-- expect --\n"
                 "FAILURE \".*expected a proc but didn't have one.*\"\n"
                 "-- trace --\n"
                 "Trace Go1.22\n"
                 "EventBatch gen=1 m=0 time=0 size=4\n"
                 "ProcStatus dt=1 p=0 pstatus=1\n");
    cr_assert_eq(c.rc, 0, "%s", c.err.msg);
    cr_expect(c.info.has_expect);
    cr_expect(c.info.expect_failure);
    cr_assert_not_null(c.info.expect_pattern);
    cr_expect_str_eq(c.info.expect_pattern, ".*expected a proc but didn't have one.*");
    cr_expect_eq(c.info.version, 22);
    tdx_buf want = {0};
    b_header(&want, 22);
    b_bytes(&want, PL(1, 1, 0, 0, 4, 13, 1, 0, 1));
    expect_bytes(&c, &want);
    tdx_vec_free(&want);
    conv_free(&c);
}

/* Every converted byte maps back to the line of the event it belongs to (stack frames and data
 * lines to their event's), counted in the whole file; a failed conversion keeps no map. */
static void txtar__converted_bytes_map_to_their_lines(void) {
    conv c = t2b("-- expect --\n"
                 "SUCCESS\n"
                 "-- trace --\n"
                 "Trace Go1.22\n"
                 "\n"
                 "EventBatch gen=1 m=0 time=0 size=4\n"
                 "# a comment\n"
                 "ProcStatus dt=1 p=0 pstatus=1\n"
                 "Stack id=1 nframes=1\n"
                 "\tpc=1 func=2 file=3 line=4\n"
                 "String id=1\n"
                 "\tdata=\"ab\"\n");
    cr_assert_eq(c.rc, 0, "%s", c.err.msg);
    /* header 16 bytes; EventBatch 5 (type + 4 args); ProcStatus 4; Stack 3 + a frame's 4; String
     * 2 + length 1 + 2 */
    static const uint64_t want[][2] = {{0, 4}, {16, 6}, {21, 8}, {25, 9}, {32, 11}};
    cr_assert_eq(c.info.lines.n, 5);
    for (size_t i = 0; i < 5; i++) {
        cr_expect_eq(c.info.lines.v[i].off, want[i][0], "entry %zu", i);
        cr_expect_eq(c.info.lines.v[i].line, want[i][1], "entry %zu", i);
    }
    cr_expect_eq(c.out.n, 37);
    static const uint64_t at[][2] = {{0, 4},  {15, 4}, {16, 6},  {20, 6},  {21, 8},
                                     {28, 9}, {31, 9}, {32, 11}, {36, 11}, {500, 11}};
    for (size_t i = 0; i < sizeof at / sizeof *at; i++)
        cr_expect_eq(tdx_textline_at(c.info.lines.v, c.info.lines.n, at[i][0]), at[i][1],
                     "offset %" PRIu64, at[i][0]);
    cr_expect_eq(tdx_textline_at(NULL, 0, 3), 0);
    conv_free(&c);
    c = t2b("Trace Go1.22\nProcStatus dt=1 p=0 pstatus=1\nBogus x=1\n");
    cr_assert_neq(c.rc, 0);
    cr_expect_eq(c.info.lines.n, 0);
    cr_expect_null(c.info.lines.v);
    conv_free(&c);
}

static void txtar__pattern_escapes_are_decoded(void) {
    conv c = t2b("-- expect --\nFAILURE \"a\\\\.b\\\"c\\td\"\n-- trace --\nTrace Go1.25\n");
    cr_assert_eq(c.rc, 0, "%s", c.err.msg);
    cr_expect(c.info.expect_failure);
    cr_assert_not_null(c.info.expect_pattern);
    cr_expect_str_eq(c.info.expect_pattern, "a\\.b\"c\td");
    cr_expect_eq(c.info.version, 25);
    conv_free(&c);
    c = t2b("-- expect --\nFAILURE `raw\\d+`\n-- trace --\nTrace Go1.22\n");
    cr_assert_eq(c.rc, 0, "%s", c.err.msg);
    cr_assert_not_null(c.info.expect_pattern);
    cr_expect_str_eq(c.info.expect_pattern, "raw\\d+");
    conv_free(&c);
}

static void txtar__success_and_empty_expectations(void) {
    conv c = t2b("-- expect --\nSUCCESS\n-- trace --\nTrace Go1.22\nFrequency freq=1\n");
    cr_assert_eq(c.rc, 0, "%s", c.err.msg);
    cr_expect(c.info.has_expect);
    cr_expect(!c.info.expect_failure);
    cr_expect_null(c.info.expect_pattern);
    cr_expect_eq(c.out.n, 18);
    conv_free(&c);
    c = t2b("-- expect --\n-- trace --\nTrace Go1.22\n");
    cr_assert_eq(c.rc, 0, "%s", c.err.msg);
    cr_expect(c.info.has_expect);
    cr_expect(!c.info.expect_failure);
    conv_free(&c);
}

static void txtar__bad_expectations(void) {
    expect_text_error("-- expect --\nMAYBE\n-- trace --\nTrace Go1.22\n", "bad header line: MAYBE");
    expect_text_error("-- expect --\nFAILURE\n-- trace --\nTrace Go1.22\n",
                      "bad header line for FAILURE");
    expect_text_error("-- expect --\nFAILURE unquoted\n-- trace --\nTrace Go1.22\n",
                      "malformed pattern");
    expect_text_error("-- expect --\nSUCCESS\n", "no \"-- trace --\" section");
}

static void txtar__trace_errors_count_lines_of_the_whole_file(void) {
    conv c = t2b("-- expect --\nSUCCESS\n-- trace --\nTrace Go1.22\n\nBogus\n");
    cr_expect_eq(c.rc, -1);
    cr_expect_str_eq(c.err.msg, "line 6: unidentified event: Bogus");
    conv_free(&c);
}

/* ---- binary -> text ---- */

static void binary_to_text__basic_and_round_trip(void) {
    tdx_buf bin = {0};
    b_header(&bin, 22);
    b_bytes(&bin, BASIC_BODY, sizeof BASIC_BODY);
    expect_text(&bin, BASIC);
    tdx_vec_free(&bin);
}

static void binary_to_text__stacks_and_strings(void) {
    tdx_buf bin = {0};
    b_header(&bin, 22);
    b_bytes(&bin, PL(2, 3, 7, 2, 100, 1, 2, 3, 0xc8, 1, 4, 5, 6));
    b_bytes(&bin, PL(3, 8, 0));
    b_bytes(&bin, PL(4, 5, 1, 4, 'a', '\t', '"', 0xff));
    b_bytes(&bin, PL(5, 3, 0)); /* empty data: no data line */
    b_bytes(&bin, PL(5, 4, 2, 0xc3, 0xa9));
    expect_text(&bin, "Trace Go1.22\n"
                      "Stacks\n"
                      "Stack id=7 nframes=2\n"
                      "\tpc=100 func=1 file=2 line=3\n"
                      "\tpc=200 func=4 file=5 line=6\n"
                      "Stack id=8 nframes=0\n"
                      "Strings\n"
                      "String id=1\n"
                      "\tdata=\"a\\t\\\"\\xff\"\n"
                      "String id=3\n"
                      "String id=4\n"
                      "\tdata=\"\xc3\xa9\"\n");
    tdx_vec_free(&bin);
}

static void binary_to_text__newer_versions(void) {
    tdx_buf bin = {0};
    b_header(&bin, 26);
    b_bytes(&bin, PL(49, 1, 2, 3, 4, 2, 0xaa, 0xbb, 50, 52, 45, 1, 2, 3));
    b_bytes(&bin, PL(51, 1, 99, 0xe9, 0xa0, 0x87, 0xbe, 6, 123));
    expect_text(&bin, "Trace Go1.26\n"
                      "ExperimentalBatch exp=1 gen=2 m=3 time=4\n"
                      "\tdata=\"\\xaa\\xbb\"\n"
                      "Sync\n"
                      "EndOfGeneration\n"
                      "GoSwitch dt=1 g=2 g_seq=3\n"
                      "ClockSnapshot dt=1 mono=99 sec=1740755049 nsec=123\n");
    tdx_vec_free(&bin);
}

static void expect_b2t_error(const tdx_buf *bin, const char *part, uint64_t offset) {
    char *text = NULL;
    tdx_err e;
    int rc = b2t(bin->v, bin->n, &text, &e);
    cr_expect_eq(rc, -1, "binary -> text should fail with \"%s\"", part);
    cr_expect(strstr(e.msg, part) != NULL, "message \"%s\" does not contain \"%s\"", e.msg, part);
    if (offset != TDX_NO_OFFSET)
        cr_expect_eq(e.offset, offset, "offset %llu, want %llu", (unsigned long long)e.offset,
                     (unsigned long long)offset);
    free(text);
}

Test(binary_to_text, errors) {
    tdx_buf bin = {0};
    b_header(&bin, 22);
    b_bytes(&bin, PL(8, 1, 0));
    expect_b2t_error(&bin, "invalid event type: 0", 18);
    tdx_vec_free(&bin);

    /* Types beyond the version's table. */
    b_header(&bin, 22);
    b_bytes(&bin, PL(45, 1, 2, 3));
    expect_b2t_error(&bin, "invalid event type: 45", 16);
    tdx_vec_free(&bin);
    b_header(&bin, 25);
    b_bytes(&bin, PL(52));
    expect_b2t_error(&bin, "invalid event type: 52", 16);
    tdx_vec_free(&bin);
    b_header(&bin, 26);
    b_bytes(&bin, PL(53));
    expect_b2t_error(&bin, "invalid event type: 53", 16);
    tdx_vec_free(&bin);

    /* Truncated arguments and data. */
    b_header(&bin, 22);
    b_bytes(&bin, PL(13, 1, 0));
    expect_b2t_error(&bin, "unexpected EOF", TDX_NO_OFFSET);
    tdx_vec_free(&bin);
    b_header(&bin, 22);
    b_bytes(&bin, PL(8, 0x80));
    expect_b2t_error(&bin, "unexpected EOF", TDX_NO_OFFSET);
    tdx_vec_free(&bin);
    b_header(&bin, 22);
    b_bytes(&bin, PL(5, 1, 5, 'a', 'b'));
    expect_b2t_error(&bin, "unexpected EOF", TDX_NO_OFFSET);
    tdx_vec_free(&bin);
    b_header(&bin, 22);
    b_bytes(&bin, PL(3, 1, 1, 1, 2));
    expect_b2t_error(&bin, "unexpected EOF", TDX_NO_OFFSET);
    tdx_vec_free(&bin);
    b_header(&bin, 22);
    b_bytes(&bin, PL(8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff));
    expect_b2t_error(&bin, "binary: varint overflows a 64-bit integer", TDX_NO_OFFSET);
    tdx_vec_free(&bin);

    /* Not a trace. */
    b_bytes(&bin, "not a trace at all", 18);
    expect_b2t_error(&bin, "bad file format: not a Go execution trace?", TDX_NO_OFFSET);
    tdx_vec_free(&bin);
}

static void binary_to_text__text_binary_text_round_trip(void) {
    static const char text[] = "Trace Go1.25\n"
                               "EventBatch gen=1 m=18446744073709551615 time=9 size=16\n"
                               "Sync\n"
                               "Frequency freq=1000000000\n"
                               "ClockSnapshot dt=1 mono=99 sec=1740755049 nsec=123\n"
                               "EventBatch gen=1 m=1 time=15 size=4\n"
                               "ProcStatus dt=1 p=0 pstatus=1\n"
                               "Stacks\n"
                               "Stack id=1 nframes=1\n"
                               "\tpc=4816080 func=1 file=2 line=45\n"
                               "Strings\n"
                               "String id=1\n"
                               "\tdata=\"main.main\"\n"
                               "String id=2\n"
                               "\tdata=\"\\x00\\xfe\\u2028 \\\\ \\\" \xe2\x82\xac\"\n"
                               "ExperimentalBatch exp=1 gen=1 m=0 time=0\n"
                               "\tdata=\"\\x01\"\n";
    conv c = t2b(text);
    cr_assert_eq(c.rc, 0, "%s", c.err.msg);
    char *back = NULL;
    tdx_err e;
    cr_assert_eq(b2t(c.out.v, c.out.n, &back, &e), 0, "%s", e.msg);
    cr_expect_str_eq(back, text);
    conv c2 = t2b(back);
    cr_assert_eq(c2.rc, 0, "%s", c2.err.msg);
    expect_bytes(&c2, &c.out);
    free(back);
    conv_free(&c);
    conv_free(&c2);
}

/* ---- fuzz corpus files ---- */

static void expect_fuzz(const char *text, const uint8_t *want, size_t wantn) {
    size_t n = strlen(text);
    char *copy = malloc(n ? n : 1);
    cr_assert_not_null(copy);
    memcpy(copy, text, n); /* NOLINT(bugprone-not-null-terminated-result): no NUL to lean on */
    tdx_buf out = {0};
    tdx_err e;
    tdx_err_clear(&e);
    int rc = tdx_fuzz_decode(copy, n, &out, &e);
    cr_expect_eq(rc, 0, "fuzz decode failed: %s", e.msg);
    if (rc == 0) {
        char a[512], b[512];
        hex(a, sizeof a, out.v, out.n);
        hex(b, sizeof b, want, wantn);
        cr_expect(out.n == wantn && (wantn == 0 || memcmp(out.v, want, wantn) == 0),
                  "decoded\n  got  %s\n  want %s", a, b);
    }
    tdx_vec_free(&out);
    free(copy);
}

static void expect_fuzz_error(const char *text) {
    size_t n = strlen(text);
    char *copy = malloc(n ? n : 1);
    cr_assert_not_null(copy);
    memcpy(copy, text, n); /* NOLINT(bugprone-not-null-terminated-result): no NUL to lean on */
    tdx_buf out = {0};
    tdx_err e;
    tdx_err_clear(&e);
    cr_expect_eq(tdx_fuzz_decode(copy, n, &out, &e), -1, "\"%s\" should not decode", text);
    cr_expect_eq(e.kind, TDX_EFORMAT);
    tdx_vec_free(&out);
    free(copy);
}

static void fuzz__decode(void) {
    /* 1e45307d5b2ec36d, decoded: a padded size and stray bytes after the frequency. */
    expect_fuzz(
        "go test fuzz v1\n[]byte(\"go 1.22 trace\\x00\\x00\\x00\\x01000\\x85\\x00\\b0001\")\n",
        PL('g', 'o', ' ', '1', '.', '2', '2', ' ', 't', 'r', 'a', 'c', 'e', 0, 0, 0, 1, 0x30, 0x30,
           0x30, 0x85, 0, 8, 0x30, 0x30, 0x30, 0x31));
    expect_fuzz("go test fuzz v1\r\n[]byte(`abc`)\r\n", PL('a', 'b', 'c'));
    expect_fuzz("go test fuzz v1\n\n  \n  []byte(\"\\xdf\xdf\x95\")  \n\n", PL(0xdf, 0xdf, 0x95));
    /* A lone invalid raw byte inside double quotes decodes to U+FFFD, as strconv.Unquote does. */
    expect_fuzz("go test fuzz v1\n[]byte(\"\x95\")\n", PL(0xef, 0xbf, 0xbd));
    expect_fuzz("go test fuzz v1\n[]byte(\"\")\n", NULL, 0);
}

static void fuzz__errors(void) {
    expect_fuzz_error("go test fuzz v2\n[]byte(\"x\")\n");
    expect_fuzz_error("Trace Go1.22\n");
    expect_fuzz_error("go test fuzz v1\n");
    expect_fuzz_error("go test fuzz v1\n\n\n");
    expect_fuzz_error("go test fuzz v1\nstring(\"x\")\n");
    expect_fuzz_error("go test fuzz v1\n[]byte(\"x\"\n");
    expect_fuzz_error("go test fuzz v1\n[]byte(\"\\q\")\n");
    expect_fuzz_error("go test fuzz v1\n[]byte(x)\n");
}

/* ---- registered tests (grouped to keep the number of forked test processes small) ---- */

Test(text_to_binary, headers_and_lines) {
    text_to_binary__basic();
    text_to_binary__header_versions_and_spacing();
    text_to_binary__header_errors();
    text_to_binary__blank_and_comment_lines_are_skipped_everywhere();
}

Test(text_to_binary, events) {
    text_to_binary__hash_after_a_token_is_an_error();
    text_to_binary__argument_errors();
    text_to_binary__values();
    text_to_binary__unidentified_events();
    text_to_binary__stacks();
    text_to_binary__experimental_batch();
    text_to_binary__event_batch_size_copied_verbatim();
    text_to_binary__error_messages_name_the_line();
}

Test(text_to_binary, string_data) {
    text_to_binary__string_data();
    text_to_binary__string_data_errors();
}

Test(txtar, expectations) {
    txtar__failure_expectation();
    txtar__pattern_escapes_are_decoded();
    txtar__success_and_empty_expectations();
    txtar__bad_expectations();
    txtar__trace_errors_count_lines_of_the_whole_file();
    txtar__converted_bytes_map_to_their_lines();
}

Test(binary_to_text, output) {
    binary_to_text__basic_and_round_trip();
    binary_to_text__stacks_and_strings();
    binary_to_text__newer_versions();
    binary_to_text__text_binary_text_round_trip();
}

Test(fuzz, decode) {
    fuzz__decode();
    fuzz__errors();
}
