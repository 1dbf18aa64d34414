/* test_v1.c: the old-format (Go 1.11-1.21) reader: record decoding, header recognition, hand-made
 * traces converted to the expected v2 events (Go's Event.String form), and error paths. */
#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/event.h"
#include "core/reader.h"
#include "core/source.h"
#include "core/spec.h"
#include "core/v1.h"

/* ---- building traces ---- */

typedef struct tb {
    uint8_t b[8192];
    size_t n;
} tb;

static void put(tb *t, uint8_t x) {
    cr_assert(t->n < sizeof t->b);
    t->b[t->n++] = x;
}

static void uv(tb *t, uint64_t v) {
    while (v >= 0x80) {
        put(t, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    put(t, (uint8_t)v);
}

static void header(tb *t, int version) {
    t->n = 0;
    char h[17] = {0};
    snprintf(h, sizeof h, "go 1.%d trace", version);
    memcpy(t->b, h, 16);
    t->n = 16;
}

/* A record as the runtime writes it: up to 3 values inline, more length-prefixed. */
static void rec(tb *t, unsigned type, int n, ...) {
    uint64_t v[16];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) v[i] = va_arg(ap, uint64_t);
    va_end(ap);
    if (n <= 3) {
        put(t, (uint8_t)(type | (unsigned)(n - 1) << 6));
        for (int i = 0; i < n; i++) uv(t, v[i]);
        return;
    }
    tb p = {.n = 0};
    for (int i = 0; i < n; i++) uv(&p, v[i]);
    put(t, (uint8_t)(type | 3u << 6));
    uv(t, p.n);
    for (size_t i = 0; i < p.n; i++) put(t, p.b[i]);
}

static void batch(tb *t, int64_t p, uint64_t ticks) {
    put(t, 0x41);
    uv(t, (uint64_t)p);
    uv(t, ticks);
}

static void str(tb *t, uint64_t id, const char *s) {
    put(t, TDX_V1_STRING);
    uv(t, id);
    uv(t, strlen(s));
    for (const char *c = s; *c; c++) put(t, (uint8_t)*c);
}

/* A UserLog: the length-prefixed values, then the inline message. */
static void user_log(tb *t, uint64_t dt, uint64_t task, uint64_t key, uint64_t stk,
                     const char *msg) {
    rec(t, TDX_V1_USER_LOG, 4, dt, task, key, stk);
    uv(t, strlen(msg));
    for (const char *c = msg; *c; c++) put(t, (uint8_t)*c);
}

#define U(x) ((uint64_t)(x))

/* ---- collecting converted events ---- */

typedef struct sink {
    tdx_buf out;
    int nev;
    int stack_checked;
} sink;

static int collect(void *ctx, const tdx_event *e, const tdx_gen *g) {
    sink *s = ctx;
    tdx_event_format(&s->out, e, g);
    tdx_buf_append(&s->out, "\n", 1);
    s->nev++;
    /* The first Sync carries the tables: stack 1 resolves to its frame. */
    if (s->nev == 1 && g && g->stacks.n > 1) {
        uint32_t d = tdx_gen_stack(g, 1);
        cr_assert(d != UINT32_MAX);
        const tdx_frame *f = &g->frames.v[g->stack_frames.v[g->stacks.v[d].first]];
        cr_expect_eq(f->pc, 0x401000);
        s->stack_checked = 1;
    }
    return 0;
}

static int run(const tb *t, int version, sink *s, tdx_read_stats *st, tdx_err *err) {
    memset(s, 0, sizeof *s);
    tdx_read_opts o = {.jobs = 1, .emit = collect, .emit_ctx = s};
    int rc = tdx_read_trace(t->b, t->n, version, &o, st, err);
    tdx_buf_append(&s->out, "", 1); /* NUL-terminate for comparisons */
    return rc;
}

/* ---- record decoding ---- */

/* The decoded values live in the decoder, so each test keeps its own. */
static int decode(tdx_v1_decoder *d, const uint8_t *p, size_t n, int version, unsigned flags,
                  tdx_v1_raw *raw, tdx_err *err) {
    tdx_v1_decoder_init(d, p, n, 0, version, NULL);
    return tdx_v1_next_raw(d, flags, raw, err);
}

Test(v1_decode, inline_arg_counts) {
    tdx_v1_decoder d;
    tdx_v1_raw r;
    tdx_err err;
    static const uint8_t stop[] = {0x06, 0x0a};                /* c=0: one value */
    static const uint8_t start[] = {0x45, 0x0a, 0x07};         /* c=1: two */
    static const uint8_t gostart[] = {0x8e, 0x0a, 0x01, 0x01}; /* c=2: three */
    cr_assert_eq(decode(&d, stop, sizeof stop, 19, 0, &r, &err), 1);
    cr_expect_eq(r.type, TDX_V1_PROC_STOP);
    cr_expect_eq(r.nargs, 1);
    cr_expect_eq(r.args[0], 10);
    cr_assert_eq(decode(&d, start, sizeof start, 19, 0, &r, &err), 1);
    cr_expect_eq(r.nargs, 2);
    cr_expect_eq(r.args[1], 7);
    cr_assert_eq(decode(&d, gostart, sizeof gostart, 19, 0, &r, &err), 1);
    cr_expect_eq(r.type, TDX_V1_GO_START);
    cr_expect_eq(r.nargs, 3);
    /* Skipping arguments still reads them but keeps none. */
    cr_assert_eq(decode(&d, gostart, sizeof gostart, 19, TDX_V1_SKIP_ARGS, &r, &err), 1);
    cr_expect_eq(r.nargs, 0);
}

Test(v1_decode, length_prefixed_and_wide_varints) {
    tdx_v1_decoder d;
    tdx_v1_raw r;
    tdx_err err;
    /* c=3 means "length-prefixed", not three values: GoCreate has four. */
    static const uint8_t create[] = {0xcd, 0x04, 0x0a, 0x01, 0x01, 0x00};
    cr_assert_eq(decode(&d, create, sizeof create, 19, 0, &r, &err), 1);
    cr_expect_eq(r.type, TDX_V1_GO_CREATE);
    cr_expect_eq(r.nargs, 4);
    cr_expect_eq(tdx_v1_want_args(TDX_V1_GO_CREATE), 4);
    /* Go 1.21 pads a Stack's length to 10 bytes; non-minimal varints are valid. */
    static const uint8_t stack[] = {0xc3, 0x88, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                    0x00, 0x01, 0x01, 0x81, 0x80, 0x01, 0x02, 0x03, 0x04};
    cr_assert_eq(decode(&d, stack, sizeof stack, 21, 0, &r, &err), 1, "%s", err.msg);
    cr_expect_eq(r.type, TDX_V1_STACK);
    cr_expect_eq(r.nargs, 6);
    cr_expect_eq(r.args[2], 0x4001);
    /* P -1 is the 10-byte varint 2^64-1. */
    static const uint8_t nop[] = {0x41, 0xff, 0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff, 0x01, 0x05};
    cr_assert_eq(decode(&d, nop, sizeof nop, 19, 0, &r, &err), 1);
    cr_expect_eq(r.type, TDX_V1_BATCH);
    cr_expect_eq(r.batch_p, -1);
    cr_expect_eq(r.args[1], 5);
    /* A UserLog's trailing message. */
    static const uint8_t log[] = {0xf0, 0x04, 0x01, 0x01, 0x02, 0x00, 0x02, 'h', 'i'};
    cr_assert_eq(decode(&d, log, sizeof log, 11, 0, &r, &err), 1);
    cr_expect_eq(r.nargs, 4);
    cr_expect(r.msg.n == 2 && memcmp(r.msg.p, "hi", 2) == 0);
    cr_expect_eq(tdx_v1_want_args(TDX_V1_USER_LOG), 4);
    cr_expect_eq(tdx_v1_want_args(TDX_V1_BATCH), 2);
    cr_expect_eq(tdx_v1_want_args(TDX_V1_FREQUENCY), 1);
    cr_expect_eq(tdx_v1_want_args(TDX_V1_CPU_SAMPLE), 5);
}

Test(v1_decode, errors) {
    tdx_v1_decoder d;
    tdx_v1_raw r;
    tdx_err err;
    static const uint8_t overflow[] = {0x06, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0x02};
    cr_assert_eq(decode(&d, overflow, sizeof overflow, 19, 0, &r, &err), -1);
    cr_expect_str_eq(err.msg, "failed to read event 6 argument: malformatted base-128 varint");
    static const uint8_t cut[] = {0x45, 0x0a, 0x87};
    cr_assert_eq(decode(&d, cut, sizeof cut, 19, 0, &r, &err), -1);
    cr_expect_str_eq(err.msg, "failed to read event 5 argument: malformatted base-128 varint");
    static const uint8_t big[] = {0xcd, 0x81, 0x10};
    cr_assert_eq(decode(&d, big, sizeof big, 19, 0, &r, &err), -1);
    cr_expect_str_eq(err.msg, "failed to read event 13 argument: length-prefixed argument too big: "
                              "2049 bytes, limit is 2048");
    static const uint8_t zero[] = {0x00};
    cr_assert_eq(decode(&d, zero, 1, 19, 0, &r, &err), -1);
    cr_expect_str_eq(err.msg, "unknown event type 0");
    static const uint8_t sample[] = {0xf1, 0x01, 0x00};
    cr_assert_eq(decode(&d, sample, sizeof sample, 11, 0, &r, &err), -1);
    cr_expect_str_eq(err.msg, "unknown event type 49");
    static const uint8_t t50[] = {0x32};
    cr_assert_eq(decode(&d, t50, 1, 21, 0, &r, &err), -1);
    cr_expect_str_eq(err.msg, "unknown event type 50");
    static const uint8_t badbatch[] = {0x01, 0x00};
    cr_assert_eq(decode(&d, badbatch, sizeof badbatch, 19, 0, &r, &err), -1);
    cr_expect_str_eq(err.msg, "EvBatch has wrong number of arguments: got 1, want 2");
    static const uint8_t bigp[] = {0x41, 0x80, 0x80, 0x80, 0x80, 0x08, 0x00};
    cr_assert_eq(decode(&d, bigp, sizeof bigp, 19, 0, &r, &err), -1);
    cr_expect_str_eq(err.msg,
                     "processor ID 2147483648 is larger than maximum of 18446744073709551615");
    static const uint8_t emptystr[] = {0x25, 0x01, 0x00};
    cr_assert_eq(decode(&d, emptystr, sizeof emptystr, 19, 0, &r, &err), -1);
    cr_expect_str_eq(err.msg, "string has invalid length 0");
    cr_assert_eq(decode(&d, emptystr, sizeof emptystr, 19, TDX_V1_SKIP_STRINGS, &r, &err), 1);
    cr_expect_eq(r.type, TDX_V1_NONE);
    cr_assert_eq(decode(&d, emptystr, 0, 19, 0, &r, &err), 0); /* end of data */
}

/* ---- header recognition ---- */

Test(v1_header, versions) {
    int v = 0;
    tdx_err err;
    static const int ok[] = {11, 19, 21};
    for (size_t i = 0; i < 3; i++) {
        tb t;
        header(&t, ok[i]);
        cr_assert_eq(tdx_header_parse(t.b, t.n, &v, &err), 0);
        cr_expect_eq(v, ok[i]);
        cr_expect(tdx_version_is_v1(v));
    }
    tb t;
    header(&t, 10);
    cr_expect_eq(tdx_header_parse(t.b, t.n, &v, &err), -1);
    cr_expect_str_eq(err.msg, "unknown or unsupported trace version go 1.10");
    header(&t, 5);
    cr_expect_eq(tdx_header_parse(t.b, t.n, &v, &err), -1);
    cr_expect_str_eq(err.msg, "unknown or unsupported trace version go 1.5");
    memcpy(t.b, "go 1.19 trakk\0\0\0", 16);
    cr_expect_eq(tdx_header_parse(t.b, 16, &v, &err), -1);
    cr_expect_str_eq(err.msg, "bad file format: not a Go execution trace?");
    cr_expect_eq(tdx_header_parse(t.b, 10, &v, &err), -1);
}

/* ---- the minimal fixture of the spec (section 7.5) ---- */

static const uint8_t minimal[84] = {
    0x67, 0x6f, 0x20, 0x31, 0x2e, 0x31, 0x39, 0x20, 0x74, 0x72, 0x61, 0x63, 0x65, 0x00,
    0x00, 0x00, 0x41, 0x00, 0xe8, 0x07, 0x45, 0x0a, 0x07, 0xcd, 0x04, 0x0a, 0x01, 0x01,
    0x00, 0x8e, 0x0a, 0x01, 0x01, 0x25, 0x01, 0x09, 0x6d, 0x61, 0x69, 0x6e, 0x2e, 0x6d,
    0x61, 0x69, 0x6e, 0x25, 0x02, 0x07, 0x6d, 0x61, 0x69, 0x6e, 0x2e, 0x67, 0x6f, 0x84,
    0x0a, 0x04, 0x00, 0x0f, 0x0a, 0x06, 0x0a, 0x02, 0x80, 0x94, 0xeb, 0xdc, 0x03, 0x41,
    0x00, 0xd0, 0x0f, 0xc3, 0x09, 0x01, 0x01, 0x80, 0xa0, 0x80, 0x02, 0x01, 0x02, 0x03};

static const char minimal_events[] =
    "M=-1 P=-1 G=-1 Sync Time=-1 N=1\n"
    "M=7 P=0 G=-1 StateTransition Time=0 ProcID=0 Undetermined->Running Reason=\"\"\n"
    "M=7 P=0 G=1 StateTransition Time=20 GoID=1 Undetermined->Running Reason=\"\"\n"
    "M=7 P=0 G=1 StateTransition Time=40 GoID=1 Running->NotExist Reason=\"\"\n"
    "M=7 P=0 G=-1 StateTransition Time=50 ProcID=0 Running->Idle Reason=\"\"\n"
    "M=-1 P=-1 G=-1 Sync Time=51 N=2\n";

Test(v1_minimal, parsed_events) {
    tdx_v1_trace t;
    tdx_err err;
    tdx_v1_trace_init(&t, minimal, 19);
    cr_assert_eq(tdx_v1_parse(minimal, sizeof minimal, 19, &t, &err), 0, "%s", err.msg);
    static const struct {
        int64_t ts;
        uint8_t type;
        uint64_t g;
    } want[] = {{0, TDX_V1_PROC_START, 0},  {10, TDX_V1_GO_CREATE, 0}, {20, TDX_V1_GO_START, 1},
                {30, TDX_V1_GOMAXPROCS, 1}, {40, TDX_V1_GO_END, 1},    {50, TDX_V1_PROC_STOP, 0}};
    cr_assert_eq(t.events.n, 6);
    for (size_t i = 0; i < 6; i++) {
        cr_expect_eq(t.events.v[i].ts, want[i].ts, "event %zu", i);
        cr_expect_eq(t.events.v[i].type, want[i].type, "event %zu", i);
        cr_expect_eq(t.events.v[i].g, want[i].g, "event %zu", i);
        cr_expect_eq(t.events.v[i].p, 0);
    }
    cr_expect_eq(t.events.v[0].args[0], 7);
    cr_expect_eq(tdx_v1_event_off(&t.events.v[1]), 23); /* offsets as go tool trace -d prints */
    cr_expect_eq(tdx_v1_event_off(&t.events.v[3]), 55);
    cr_expect_eq(t.ticks_per_sec, 1000000000);
    tdx_v1_trace_free(&t);
}

Test(v1_minimal, converted_events_all_versions) {
    static const int versions[] = {19, 11, 21};
    for (size_t k = 0; k < 3; k++) {
        tb t;
        memcpy(t.b, minimal, sizeof minimal);
        t.n = sizeof minimal;
        header(&t, versions[k]);
        t.n = sizeof minimal;
        sink s;
        tdx_read_stats st;
        tdx_err err;
        cr_assert_eq(run(&t, versions[k], &s, &st, &err), 0, "%s", err.msg);
        cr_expect_str_eq((const char *)s.out.v, minimal_events);
        cr_expect(s.stack_checked);
        cr_expect_eq(st.events, 6);
        cr_expect_eq(st.syncs, 2);
        cr_expect_eq(st.generations, 1);
        cr_expect_eq(st.version, versions[k]);
        cr_expect_eq(st.first_time, -1);
        cr_expect_eq(st.last_time, 51);
        tdx_vec_free(&s.out);
    }
}

/* ---- a richer hand-made trace: the conversion rules and quirks ---- */

#define STK "\tf @ 0x401000\n\t\tf.go:3\n"

static void rich(tb *t, int version, bool with_sample) {
    header(t, version);
    batch(t, 0, 1000);
    str(t, 1, "GC (dedicated)");
    str(t, 2, "job");
    str(t, 3, "work");
    str(t, 4, "step");
    str(t, 5, "f");
    str(t, 6, "f.go");
    rec(t, TDX_V1_PROC_START, 2, U(10), U(3));
    rec(t, TDX_V1_GO_CREATE, 4, U(10), U(1), U(1), U(0));
    rec(t, TDX_V1_GO_CREATE, 4, U(10), U(2), U(1), U(0));
    rec(t, TDX_V1_GO_WAITING, 2, U(10), U(2));
    rec(t, TDX_V1_GO_CREATE, 4, U(10), U(3), U(1), U(0));
    rec(t, TDX_V1_GO_START, 3, U(10), U(1), U(1));
    rec(t, TDX_V1_GOMAXPROCS, 3, U(10), U(4), U(0));
    rec(t, TDX_V1_USER_TASK_CREATE, 5, U(10), U(1), U(0), U(2), U(1));
    rec(t, TDX_V1_USER_REGION, 5, U(10), U(1), U(0), U(3), U(1));
    user_log(t, 10, 1, 4, 1, "hello");
    rec(t, TDX_V1_GO_SYSCALL, 2, U(10), U(1));
    rec(t, TDX_V1_GO_SYSBLOCK, 1, U(10));
    rec(t, TDX_V1_GO_START_LABEL, 4, U(10), U(3), U(1), U(1));
    rec(t, TDX_V1_GO_UNBLOCK, 4, U(10), U(2), U(2), U(1));
    rec(t, TDX_V1_GO_SYSCALL, 2, U(10), U(1));
    rec(t, TDX_V1_GO_SCHED, 2, U(10), U(1));
    rec(t, TDX_V1_GC_START, 3, U(10), U(0), U(0));
    rec(t, TDX_V1_STW_START, 2, U(10), U(version < 21 ? 0 : 1));
    rec(t, TDX_V1_STW_DONE, 1, U(10));
    rec(t, TDX_V1_GC_DONE, 1, U(10));
    rec(t, TDX_V1_GO_START, 3, U(10), U(2), U(3));
    rec(t, TDX_V1_USER_TASK_END, 3, U(10), U(1), U(0));
    rec(t, TDX_V1_GO_END, 1, U(10));
    rec(t, TDX_V1_PROC_STOP, 1, U(10));
    batch(t, -1, 1100);
    rec(t, TDX_V1_GO_SYSEXIT, 4, U(145), U(1), U(2), U(0));
    if (with_sample) {
        batch(t, 0, 5000);
        rec(t, TDX_V1_CPU_SAMPLE, 5, U(1), U(1235), U(0), U(0), U(1));
    }
    rec(t, TDX_V1_FREQUENCY, 1, U(1000000000));
    batch(t, 0, 6000);
    rec(t, TDX_V1_STACK, 6, U(1), U(1), U(0x401000), U(5), U(6), U(3));
}

static const char rich_events[] =
    "M=-1 P=-1 G=-1 Sync Time=-1 N=1\n"
    "M=3 P=0 G=-1 StateTransition Time=0 ProcID=0 Undetermined->Running Reason=\"\"\n"
    "M=3 P=0 G=2 StateTransition Time=30 GoID=2 Undetermined->Waiting Reason=\"\"\n"
    "M=3 P=0 G=1 StateTransition Time=50 GoID=1 Undetermined->Running Reason=\"\"\n"
    /* the first Gomaxprocs: goroutine 3 was runnable, no context */
    "M=-1 P=-1 G=-1 StateTransition Time=60 GoID=3 Undetermined->Runnable Reason=\"\"\n"
    "M=3 P=0 G=1 TaskBegin Time=70 ID=1 Parent=18446744073709551615 Type=\"job\"\nStack=\n" STK "\n"
    "M=3 P=0 G=1 RegionBegin Time=80 Task=1 Type=\"work\"\nStack=\n" STK "\n"
    "M=3 P=0 G=1 Log Time=90 Task=1 Category=\"step\" Message=\"hello\"\nStack=\n" STK "\n"
    /* the goroutine's next event is GoSysBlock: the syscall stays open */
    "M=3 P=0 G=1 StateTransition Time=100 GoID=1 Running->Syscall Reason=\"\"\n"
    "TransitionStack=\n" STK "\nStack=\n" STK "\n"
    "M=3 P=0 G=3 StateTransition Time=120 GoID=3 Runnable->Running Reason=\"\"\n"
    "M=3 P=0 G=3 Label Time=121 Label=\"GC (dedicated)\" Resource=Goroutine(3)\n"
    "M=3 P=0 G=3 StateTransition Time=130 GoID=2 Waiting->Runnable Reason=\"\"\nStack=\n" STK "\n"
    /* a syscall that kept its P: 1 ns */
    "M=3 P=0 G=3 StateTransition Time=140 GoID=3 Running->Syscall Reason=\"\"\n"
    "TransitionStack=\n" STK "\nStack=\n" STK "\n"
    "M=3 P=0 G=3 StateTransition Time=141 GoID=3 Syscall->Running Reason=\"\"\n"
    "M=3 P=0 G=3 StateTransition Time=150 GoID=3 Running->Runnable Reason=\"runtime.Gosched\"\n"
    "TransitionStack=\n" STK "\nStack=\n" STK "\n"
    "M=-1 P=1000004 G=-1 RangeBegin Time=160 Name=\"GC concurrent mark phase\" Scope=None\n"
    "M=3 P=0 G=-1 RangeBegin Time=170 Name=\"stop-the-world (GC mark termination)\" "
    "Scope=Goroutine(-1)\n"
    "M=3 P=0 G=-1 RangeEnd Time=180 Name=\"stop-the-world (GC mark termination)\" "
    "Scope=Goroutine(-1) "
    "Attributes=[]\n"
    "M=3 P=0 G=-1 RangeEnd Time=190 Name=\"GC concurrent mark phase\" Scope=None Attributes=[]\n"
    "M=3 P=0 G=2 StateTransition Time=200 GoID=2 Runnable->Running Reason=\"\"\n"
    /* top-level task: NoTask at the begin but 0 at the end, as Go shows it */
    "M=3 P=0 G=2 TaskEnd Time=210 ID=1 Parent=0 Type=\"job\"\n"
    "M=3 P=0 G=2 StateTransition Time=220 GoID=2 Running->NotExist Reason=\"\"\n"
    "%s"
    "M=3 P=0 G=-1 StateTransition Time=230 ProcID=0 Running->Idle Reason=\"\"\n"
    "M=-1 P=1000003 G=1 StateTransition Time=235 GoID=1 Syscall->Runnable Reason=\"\"\n"
    "M=-1 P=-1 G=-1 Sync Time=236 N=2\n";

Test(v1_convert, rich_trace) {
    static const int versions[] = {11, 19, 21};
    for (size_t k = 0; k < 3; k++) {
        bool sample = versions[k] >= 19;
        tb t;
        rich(&t, versions[k], sample);
        sink s;
        tdx_read_stats st;
        tdx_err err;
        cr_assert_eq(run(&t, versions[k], &s, &st, &err), 0, "go 1.%d: %s", versions[k], err.msg);
        char want[8192];
        snprintf(want, sizeof want, rich_events,
                 sample ? "M=-1 P=0 G=-1 StackSample Time=225\nStack=\n" STK "\n" : "");
        cr_expect_str_eq((const char *)s.out.v, want, "go 1.%d", versions[k]);
        tdx_vec_free(&s.out);
    }
}

/* A CPU sample of the syscalling goroutine comes before its GoSysBlock: Go then takes the syscall
 * for one that did not block (a 1 ns pair) and still ends it later from the syscall P. */
Test(v1_convert, syscall_sample_quirk) {
    tb t;
    header(&t, 19);
    batch(&t, 0, 1000);
    str(&t, 1, "f");
    rec(&t, TDX_V1_PROC_START, 2, U(10), U(3));
    rec(&t, TDX_V1_GO_CREATE, 4, U(10), U(1), U(0), U(0));
    rec(&t, TDX_V1_GO_START, 3, U(10), U(1), U(1));
    rec(&t, TDX_V1_GOMAXPROCS, 3, U(10), U(4), U(0));
    rec(&t, TDX_V1_GO_SYSCALL, 2, U(10), U(0));
    rec(&t, TDX_V1_GO_SYSBLOCK, 1, U(10));
    rec(&t, TDX_V1_PROC_STOP, 1, U(10));
    batch(&t, -1, 1080);
    rec(&t, TDX_V1_GO_SYSEXIT, 4, U(5), U(1), U(2), U(1062));
    batch(&t, 0, 5000);
    rec(&t, TDX_V1_CPU_SAMPLE, 5, U(1), U(1055), U(0), U(1), U(0));
    rec(&t, TDX_V1_FREQUENCY, 1, U(1000000000));
    sink s;
    tdx_read_stats st;
    tdx_err err;
    cr_assert_eq(run(&t, 19, &s, &st, &err), 0, "%s", err.msg);
    cr_expect_str_eq(
        (const char *)s.out.v,
        "M=-1 P=-1 G=-1 Sync Time=-1 N=1\n"
        "M=3 P=0 G=-1 StateTransition Time=0 ProcID=0 Undetermined->Running Reason=\"\"\n"
        "M=3 P=0 G=1 StateTransition Time=20 GoID=1 Undetermined->Running Reason=\"\"\n"
        "M=3 P=0 G=1 StateTransition Time=40 GoID=1 Running->Syscall Reason=\"\"\n"
        "M=3 P=0 G=1 StateTransition Time=41 GoID=1 Syscall->Running Reason=\"\"\n"
        "M=-1 P=0 G=1 StackSample Time=45\nStack=\n\n"
        /* the real exit time (tick 1062) replaces the emission time */
        "M=-1 P=1000003 G=1 StateTransition Time=52 GoID=1 Syscall->Runnable Reason=\"\"\n"
        "M=3 P=0 G=-1 StateTransition Time=60 ProcID=0 Running->Idle Reason=\"\"\n"
        "M=-1 P=-1 G=-1 Sync Time=61 N=2\n");
    tdx_vec_free(&s.out);
}

/* ---- error paths ---- */

static uint64_t expect_error(const tb *t, int version, const char *msg, int events) {
    sink s;
    tdx_read_stats st;
    tdx_err err;
    cr_assert_eq(run(t, version, &s, &st, &err), -1, "expected: %s", msg);
    cr_expect_str_eq(err.msg, msg);
    cr_expect_eq(s.nev, events, "%s: %d events delivered", msg, s.nev);
    tdx_vec_free(&s.out);
    return err.offset;
}

/* The minimal fixture rebuilt, with hooks for breaking it. */
static void small(tb *t, int version, uint64_t start_seq, bool freq, bool end_without_g) {
    header(t, version);
    batch(t, 0, 1000);
    rec(t, TDX_V1_PROC_START, 2, U(10), U(7));
    if (end_without_g) {
        rec(t, TDX_V1_GO_END, 1, U(10));
    } else {
        rec(t, TDX_V1_GO_CREATE, 4, U(10), U(1), U(0), U(0));
        rec(t, TDX_V1_GO_START, 3, U(10), U(1), start_seq);
        rec(t, TDX_V1_GOMAXPROCS, 3, U(10), U(4), U(0));
        rec(t, TDX_V1_GO_END, 1, U(10));
    }
    rec(t, TDX_V1_PROC_STOP, 1, U(10));
    if (freq) rec(t, TDX_V1_FREQUENCY, 1, U(1000000000));
}

Test(v1_errors, parse_errors_deliver_nothing) {
    tb t;
    small(&t, 19, 1, true, false);
    sink s;
    tdx_read_stats st;
    tdx_err err;
    cr_assert_eq(run(&t, 19, &s, &st, &err), 0, "%s", err.msg);
    tdx_vec_free(&s.out);

    small(&t, 19, 2, true, false);
    uint64_t at = expect_error(&t, 19, "no consistent ordering of events possible", 0);
    /* the GoStart waiting for a sequence number that never comes */
    cr_expect(at > 16 && at < t.n, "stuck at offset %llu of %zu", (unsigned long long)at, t.n);
    cr_expect_eq(t.b[at] & 0x3f, TDX_V1_GO_START, "offset %llu is not the GoStart",
                 (unsigned long long)at);
    small(&t, 19, 1, false, false);
    cr_expect_eq(expect_error(&t, 19, "no EvFrequency event", 0), t.n, "absent: the end");
    small(&t, 19, 1, true, true);
    expect_error(&t, 19, "g 0 did GoEnd (time 10)", 0);

    small(&t, 19, 1, true, false);
    str(&t, 9, ""); /* a String of length 0, found when its batch is decoded */
    expect_error(&t, 19, "string has invalid length 0", 0);

    small(&t, 19, 1, true, false);
    str(&t, 5, "ok");
    str(&t, UINT64_MAX - 3, "far"); /* no room above it for the ids Go adds */
    cr_assert_eq(run(&t, 19, &s, &st, &err), -1);
    tdx_vec_free(&s.out);
    cr_expect(
        !strncmp(err.msg, "trace contains too many strings (string id 18446744073709551612 ", 64),
        "%s", err.msg);
    cr_expect_eq(err.offset, t.n - 3, "the string's bytes");

    small(&t, 19, 1, true, false);
    t.n -= 2; /* cut the Frequency value short */
    expect_error(&t, 19, "failed to read event 2 argument: malformatted base-128 varint", 0);

    header(&t, 19);
    rec(&t, TDX_V1_PROC_START, 2, U(10), U(7));
    expect_error(&t, 19, "read event 5 with current P of 0, but P has no batches yet", 0);

    small(&t, 11, 1, true, false);
    rec(&t, TDX_V1_CPU_SAMPLE, 5, U(1), U(1045), U(0), U(1), U(0));
    expect_error(&t, 11, "unknown event type 49", 0);

    small(&t, 19, 1, true, false);
    str(&t, 1, "a");
    str(&t, 1, "b");
    expect_error(&t, 19, "string has duplicate id 1", 0);
}

/* The reader accepts FutileWakeup but the converter does not: Go delivers the events before it
 * (after the first Sync), then fails. */
Test(v1_errors, futile_wakeup_fails_in_conversion) {
    tb t;
    header(&t, 11);
    batch(&t, 0, 1000);
    rec(&t, TDX_V1_PROC_START, 2, U(10), U(7));
    rec(&t, TDX_V1_FUTILE_WAKEUP, 1, U(10));
    rec(&t, TDX_V1_FREQUENCY, 1, U(1000000000));
    sink s;
    tdx_read_stats st;
    tdx_err err;
    cr_assert_eq(run(&t, 11, &s, &st, &err), -1);
    cr_expect_str_eq(err.msg, "unexpected event type 36");
    cr_expect_eq(err.offset, 23);
    cr_expect_str_eq(
        (const char *)s.out.v,
        "M=-1 P=-1 G=-1 Sync Time=-1 N=1\n"
        "M=7 P=0 G=-1 StateTransition Time=0 ProcID=0 Undetermined->Running Reason=\"\"\n");
    tdx_vec_free(&s.out);
}

/* No events at all: a single Sync at time 0, as Go emits it. */
Test(v1_errors, empty_trace) {
    tb t;
    header(&t, 19);
    batch(&t, 0, 1000);
    rec(&t, TDX_V1_FREQUENCY, 1, U(1000));
    sink s;
    tdx_read_stats st;
    tdx_err err;
    cr_assert_eq(run(&t, 19, &s, &st, &err), 0, "%s", err.msg);
    cr_expect_str_eq((const char *)s.out.v, "M=-1 P=-1 G=-1 Sync Time=0 N=1\n");
    cr_expect_eq(st.generations, 0);
    tdx_vec_free(&s.out);
}
