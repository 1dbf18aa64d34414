/* event.c: names of the event model and Go's debug rendering of events (Event.String). */
#include "event.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "quote.h"
#include "spec.h"

const uint8_t tdx_type_kind_tab_[TDX_EV_NTYPES] = {
    [TDX_EV_CPU_SAMPLE] = TDX_KIND_STACK_SAMPLE,
    [TDX_EV_PROCS_CHANGE] = TDX_KIND_METRIC,
    [TDX_EV_PROC_START] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_PROC_STOP] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_PROC_STEAL] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_PROC_STATUS] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_CREATE] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_CREATE_SYSCALL] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_START] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_DESTROY] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_DESTROY_SYSCALL] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_STOP] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_BLOCK] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_UNBLOCK] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_SYSCALL_BEGIN] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_SYSCALL_END] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_SYSCALL_END_BLOCKED] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_STATUS] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_STW_BEGIN] = TDX_KIND_RANGE_BEGIN,
    [TDX_EV_STW_END] = TDX_KIND_RANGE_END,
    [TDX_EV_GC_ACTIVE] = TDX_KIND_RANGE_ACTIVE,
    [TDX_EV_GC_BEGIN] = TDX_KIND_RANGE_BEGIN,
    [TDX_EV_GC_END] = TDX_KIND_RANGE_END,
    [TDX_EV_GC_SWEEP_ACTIVE] = TDX_KIND_RANGE_ACTIVE,
    [TDX_EV_GC_SWEEP_BEGIN] = TDX_KIND_RANGE_BEGIN,
    [TDX_EV_GC_SWEEP_END] = TDX_KIND_RANGE_END,
    [TDX_EV_GC_MARK_ASSIST_ACTIVE] = TDX_KIND_RANGE_ACTIVE,
    [TDX_EV_GC_MARK_ASSIST_BEGIN] = TDX_KIND_RANGE_BEGIN,
    [TDX_EV_GC_MARK_ASSIST_END] = TDX_KIND_RANGE_END,
    [TDX_EV_HEAP_ALLOC] = TDX_KIND_METRIC,
    [TDX_EV_HEAP_GOAL] = TDX_KIND_METRIC,
    [TDX_EV_GO_LABEL] = TDX_KIND_LABEL,
    [TDX_EV_USER_TASK_BEGIN] = TDX_KIND_TASK_BEGIN,
    [TDX_EV_USER_TASK_END] = TDX_KIND_TASK_END,
    [TDX_EV_USER_REGION_BEGIN] = TDX_KIND_REGION_BEGIN,
    [TDX_EV_USER_REGION_END] = TDX_KIND_REGION_END,
    [TDX_EV_USER_LOG] = TDX_KIND_LOG,
    [TDX_EV_GO_SWITCH] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_SWITCH_DESTROY] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_CREATE_BLOCKED] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_STATUS_STACK] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_SPAN] = TDX_KIND_EXPERIMENTAL,
    [TDX_EV_SPAN_ALLOC] = TDX_KIND_EXPERIMENTAL,
    [TDX_EV_SPAN_FREE] = TDX_KIND_EXPERIMENTAL,
    [TDX_EV_HEAP_OBJECT] = TDX_KIND_EXPERIMENTAL,
    [TDX_EV_HEAP_OBJECT_ALLOC] = TDX_KIND_EXPERIMENTAL,
    [TDX_EV_HEAP_OBJECT_FREE] = TDX_KIND_EXPERIMENTAL,
    [TDX_EV_GOROUTINE_STACK] = TDX_KIND_EXPERIMENTAL,
    [TDX_EV_GOROUTINE_STACK_ALLOC] = TDX_KIND_EXPERIMENTAL,
    [TDX_EV_GOROUTINE_STACK_FREE] = TDX_KIND_EXPERIMENTAL,
    [TDX_TYPE_SYNC] = TDX_KIND_SYNC,
};

const char *tdx_kind_name(int k) {
    static const char *const n[TDX_KIND_COUNT] = {
        "Bad",         "Sync",        "Metric",   "Label",           "StackSample",
        "RangeBegin",  "RangeActive", "RangeEnd", "TaskBegin",       "TaskEnd",
        "RegionBegin", "RegionEnd",   "Log",      "StateTransition", "Experimental"};
    return k >= 0 && k < TDX_KIND_COUNT ? n[k] : "Bad";
}

const char *tdx_gostate_name(int s) {
    static const char *const n[] = {"Undetermined", "NotExist", "Runnable",
                                    "Running",      "Waiting",  "Syscall"};
    return s >= 0 && s < 6 ? n[s] : "Bad";
}

const char *tdx_procstate_name(int s) {
    static const char *const n[] = {"Undetermined", "NotExist", "Running", "Idle"};
    return s >= 0 && s < 4 ? n[s] : "Bad";
}

static tdx_str gstr(const tdx_gen *g, uint32_t i) {
    if (!g || i >= g->strings.n) return (tdx_str){(const uint8_t *)"", 0};
    return tdx_gen_str(g, (uint32_t)i);
}

int tdx_range_name(const tdx_event *e, const tdx_gen *g, char *buf, size_t cap) {
    switch (e->type) {
    case TDX_EV_STW_BEGIN:
    case TDX_EV_STW_END: {
        tdx_str k = gstr(g, e->str[0]);
        return snprintf(buf, cap, "stop-the-world (%.*s)", (int)k.n, (const char *)k.p);
    }
    case TDX_EV_GC_BEGIN:
    case TDX_EV_GC_ACTIVE:
    case TDX_EV_GC_END:
        return snprintf(buf, cap, "GC concurrent mark phase");
    case TDX_EV_GC_SWEEP_BEGIN:
    case TDX_EV_GC_SWEEP_ACTIVE:
    case TDX_EV_GC_SWEEP_END:
        return snprintf(buf, cap, "GC incremental sweep");
    default:
        return snprintf(buf, cap, "GC mark assist");
    }
}

static int quote(tdx_buf *out, tdx_str s) {
    return tdx_go_quote(out, s.p, s.n);
}

/* v in base 10 or 16 (lower case) at p; returns the end. */
static char *put_u64(char *p, uint64_t v, unsigned base) {
    char d[20];
    int k = 0;
    do {
        d[k++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    while (k) *p++ = d[--k];
    return p;
}

/* "\t<func> @ 0x<pc>\n\t\t<file>:<line>\n" per frame, written without printf: frames are most of
 * dump --events' output. The names are copied whole, NUL bytes included, as Go's %s does. */
static void print_stack(tdx_buf *out, const tdx_gen *g, uint32_t stack) {
    if (!g || stack >= g->stacks.n) return;
    const tdx_stack *st = &g->stacks.v[stack];
    for (uint32_t i = 0; i < st->nframes; i++) {
        const tdx_frame *f = &g->frames.v[g->stack_frames.v[st->first + i]];
        tdx_str fn = gstr(g, f->func), file = gstr(g, f->file);
        if (tdx_vec_reserve(out, out->n + fn.n + file.n + 64)) return;
        char *p = (char *)out->v + out->n;
        *p++ = '\t';
        memcpy(p, fn.p, fn.n);
        p += fn.n;
        static const char at[5] = {' ', '@', ' ', '0', 'x'}, nl[3] = {'\n', '\t', '\t'};
        memcpy(p, at, sizeof at);
        p = put_u64(p + sizeof at, f->pc, 16);
        memcpy(p, nl, sizeof nl);
        p += sizeof nl;
        memcpy(p, file.p, file.n);
        p += file.n;
        *p++ = ':';
        p = put_u64(p, f->line, 10);
        *p++ = '\n';
        out->n = (size_t)(p - (char *)out->v);
    }
}

/* Go's time.Time.Format(time.RFC3339Nano) of Unix(sec, nsec) in the local time zone. */
static void rfc3339nano(tdx_buf *out, uint64_t usec, uint64_t unsec) {
    int64_t sec = (int64_t)usec;
    int64_t nsec = (int64_t)unsec;
    if (nsec < 0 || nsec >= 1000000000) {
        sec += nsec / 1000000000;
        nsec %= 1000000000;
        if (nsec < 0) {
            nsec += 1000000000;
            sec--;
        }
    }
    time_t t = (time_t)sec;
    struct tm tm;
    if (!localtime_r(&t, &tm)) memset(&tm, 0, sizeof tm);
    tdx_buf_printf(out, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                   tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (nsec) {
        char frac[16];
        int n = snprintf(frac, sizeof frac, "%09" PRId64, nsec);
        while (n > 0 && frac[n - 1] == '0') n--;
        tdx_buf_printf(out, ".%.*s", n, frac);
    }
    long off = tm.tm_gmtoff;
    if (off == 0) {
        tdx_buf_append(out, "Z", 1);
    } else {
        char sign = off < 0 ? '-' : '+';
        if (off < 0) off = -off;
        tdx_buf_printf(out, "%c%02ld:%02ld", sign, off / 3600, (off / 60) % 60);
    }
}

static void print_value_u64(tdx_buf *out, uint64_t v) {
    tdx_buf_printf(out, "Value{Uint64(%" PRIu64 ")}", v);
}

int tdx_event_format(tdx_buf *out, const tdx_event *e, const tdx_gen *g) {
    size_t start = out->n;
    tdx_buf_printf(out, "M=%" PRId64 " P=%" PRId64 " G=%" PRId64 " %s Time=%" PRId64, e->m, e->p,
                   e->g, tdx_kind_name(e->kind), e->time);
    char name[1200];
    switch (e->kind) {
    case TDX_KIND_METRIC: {
        const char *n = e->type == TDX_EV_PROCS_CHANGE ? "/sched/gomaxprocs:threads"
                        : e->type == TDX_EV_HEAP_ALLOC ? "/memory/classes/heap/objects:bytes"
                                                       : "/gc/heap/goal:bytes";
        tdx_buf_printf(out, " Name=\"%s\" Value=", n);
        print_value_u64(out, e->args[0]);
        break;
    }
    case TDX_KIND_LABEL:
        tdx_buf_append(out, " Label=", 7);
        quote(out, gstr(g, e->str[0]));
        tdx_buf_printf(out, " Resource=Goroutine(%" PRId64 ")", e->g);
        break;
    case TDX_KIND_RANGE_BEGIN:
    case TDX_KIND_RANGE_ACTIVE:
    case TDX_KIND_RANGE_END: {
        int n = tdx_range_name(e, g, name, sizeof name);
        tdx_buf_append(out, " Name=", 6);
        quote(out, (tdx_str){(const uint8_t *)name, (uint32_t)(n < 0 ? 0 : n)});
        switch (e->type) {
        case TDX_EV_GC_BEGIN:
        case TDX_EV_GC_ACTIVE:
        case TDX_EV_GC_END:
            tdx_buf_append(out, " Scope=None", 11);
            break;
        case TDX_EV_GC_SWEEP_ACTIVE:
            tdx_buf_printf(out, " Scope=Proc(%" PRId64 ")", (int64_t)e->args[0]);
            break;
        case TDX_EV_GC_SWEEP_BEGIN:
        case TDX_EV_GC_SWEEP_END:
            tdx_buf_printf(out, " Scope=Proc(%" PRId64 ")", e->p);
            break;
        case TDX_EV_GC_MARK_ASSIST_ACTIVE:
            tdx_buf_printf(out, " Scope=Goroutine(%" PRId64 ")", (int64_t)e->args[0]);
            break;
        default:
            tdx_buf_printf(out, " Scope=Goroutine(%" PRId64 ")", e->g);
            break;
        }
        if (e->kind == TDX_KIND_RANGE_END) {
            tdx_buf_append(out, " Attributes=[", 13);
            if (e->type == TDX_EV_GC_SWEEP_END) {
                tdx_buf_append(out, "\"bytes swept\"=", 14);
                print_value_u64(out, e->args[0]);
                tdx_buf_append(out, " \"bytes reclaimed\"=", 19);
                print_value_u64(out, e->args[1]);
            }
            tdx_buf_append(out, "]", 1);
        }
        break;
    }
    case TDX_KIND_TASK_BEGIN:
    case TDX_KIND_TASK_END: {
        uint64_t parent = e->kind == TDX_KIND_TASK_BEGIN ? e->args[1] : e->args[2];
        tdx_buf_printf(out, " ID=%" PRIu64 " Parent=%" PRIu64 " Type=", e->args[0], parent);
        quote(out, gstr(g, e->str[0]));
        break;
    }
    case TDX_KIND_REGION_BEGIN:
    case TDX_KIND_REGION_END:
        tdx_buf_printf(out, " Task=%" PRIu64 " Type=", e->args[0]);
        quote(out, gstr(g, e->str[0]));
        break;
    case TDX_KIND_LOG:
        tdx_buf_printf(out, " Task=%" PRIu64 " Category=", e->args[0]);
        quote(out, gstr(g, e->str[0]));
        tdx_buf_append(out, " Message=", 9);
        quote(out, gstr(g, e->str[1]));
        break;
    case TDX_KIND_STATE_TRANSITION:
        if (e->res_kind == TDX_RES_GOROUTINE)
            tdx_buf_printf(out, " GoID=%" PRId64 " %s->%s", e->res, tdx_gostate_name(e->from),
                           tdx_gostate_name(e->to));
        else
            tdx_buf_printf(out, " ProcID=%" PRId64 " %s->%s", e->res, tdx_procstate_name(e->from),
                           tdx_procstate_name(e->to));
        tdx_buf_append(out, " Reason=", 8);
        if (e->type == TDX_EV_GO_STOP || e->type == TDX_EV_GO_BLOCK)
            quote(out, gstr(g, e->str[0]));
        else
            tdx_buf_append(out, "\"\"", 2);
        if (e->has_tstack) {
            tdx_buf_append(out, "\nTransitionStack=\n", 18);
            print_stack(out, g, e->tstack);
        }
        break;
    case TDX_KIND_EXPERIMENTAL: {
        const tdx_evspec *sp = &tdx_specs[e->type];
        tdx_buf_printf(out, " Name=%s Args=[", sp->name);
        for (int i = 1; i < sp->nargs; i++) {
            if (i > 1) tdx_buf_append(out, ", ", 2);
            tdx_buf_printf(out, "%s=", sp->args[i]);
            print_value_u64(out, e->args[i - 1]);
        }
        tdx_buf_append(out, "]", 1);
        break;
    }
    case TDX_KIND_SYNC:
        tdx_buf_printf(out, " N=%" PRIu64, e->args[0]);
        if (e->has_clock) {
            tdx_buf_printf(out, " Trace=%" PRId64 " Mono=%" PRIu64 " Wall=", (int64_t)e->args[1],
                           e->args[2]);
            rfc3339nano(out, e->args[3], e->sync_nsec);
        }
        break;
    default:
        break;
    }
    /* A CPU sample always carries a stack handle in Go, even with id 0. */
    if (e->stack || e->kind == TDX_KIND_STACK_SAMPLE) {
        tdx_buf_append(out, "\nStack=\n", 8);
        print_stack(out, g, e->stack);
    }
    (void)start;
    return 0;
}
