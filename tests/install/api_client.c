/* api_client.c: a program of someone else's, built against the installed libtraceidx only
 * (traceidx.h, pkg-config), whose output install_test.py compares with the CLI's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <traceidx.h>

static int usage(void) {
    fputs("usage: api_client version\n"
          "       api_client [--full] PATH info|ranges|groups\n"
          "       api_client PATH group NAME\n"
          "       api_client PATH query [threads] [goroutine|task|taskid ID]\n"
          "                             [range N | events I J | window A B] [failwrite]\n",
          stderr);
    return 2;
}

/* Prints the error's code and text and frees it; returns 1. */
static int report(traceidx_error *e) {
    fprintf(stderr, "api_client: %s: %s\n", traceidx_errcode_name(traceidx_error_code(e)),
            traceidx_error_text(e));
    traceidx_error_free(e);
    return 1;
}

/* s[0..n) as a JSON string (the names of test traces: quotes, backslashes, control bytes). */
static void put_json(const char *s, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static int write_stdout(void *ctx, const void *p, size_t n) {
    if (*(const int *)ctx) return 7; /* failwrite: the callback refuses */
    return fwrite(p, 1, n, stdout) == n ? 0 : -1;
}

static int cmd_info(traceidx_index *ix) {
    traceidx_info in;
    traceidx_get_info(ix, &in);
    printf("{\"format_version\": %u, \"trace_version\": \"go1.%u\", \"trace_bytes\": %" PRIu64
           ", \"index_bytes\": %" PRIu64 ", \"first_time_ns\": %" PRId64
           ", \"last_time_ns\": %" PRId64 ", \"span_ns\": %" PRId64 ", \"generations\": %" PRIu64
           ", \"events\": %" PRIu64 ", \"goroutines\": %" PRIu64 ", \"procs\": %" PRIu64
           ", \"threads\": %" PRIu64 ", \"partial\": %d, \"index\": ",
           in.format_version, in.go_version, in.trace_bytes, in.index_bytes, in.first_time_ns,
           in.last_time_ns, in.span_ns, in.generations, in.events, in.goroutines, in.procs,
           in.threads, in.partial);
    put_json(traceidx_path(ix), strlen(traceidx_path(ix)));
    printf("}\n");
    return 0;
}

/* The same bytes as `traceidx ranges --json`. */
static int cmd_ranges(traceidx_index *ix) {
    traceidx_range *r;
    size_t n;
    traceidx_error *e = NULL;
    if (traceidx_ranges(ix, &r, &n, &e)) return report(e);
    printf("[");
    for (size_t i = 0; i < n; i++) {
        printf("%s{\"name\": ", i ? ", " : "");
        put_json(r[i].name, strlen(r[i].name));
        printf(", \"start\": %" PRId64 ", \"end\": %" PRId64 ", \"startTime\": %" PRId64
               ", \"endTime\": %" PRId64 ", \"bytes\": %" PRIu64 "}",
               r[i].start, r[i].end, r[i].start_time_ns, r[i].end_time_ns, r[i].bytes);
    }
    printf("]\n");
    traceidx_ranges_free(r);
    return 0;
}

static int cmd_groups(traceidx_index *ix) {
    traceidx_gstats *gs;
    traceidx_error *e = NULL;
    if (traceidx_gstats_open(ix, &gs, &e)) return report(e);
    printf("{\"goroutines\": %" PRIu64 ", \"exec_ns\": %" PRId64 ", \"groups\": [",
           traceidx_gstats_goroutines(gs), traceidx_gstats_exec_ns(gs));
    for (uint64_t i = 0; i < traceidx_gstats_ngroups(gs); i++) {
        traceidx_group g;
        if (traceidx_gstats_group(gs, i, &g, &e)) {
            traceidx_gstats_close(gs);
            return report(e);
        }
        printf("%s{\"name\": ", i ? ", " : "");
        put_json(g.name, g.name_len);
        printf(", \"count\": %" PRIu64 ", \"exec_ns\": %" PRId64 "}", g.count, g.exec_ns);
    }
    printf("]}\n");
    traceidx_gstats_close(gs);
    return 0;
}

static void put_labeled(const traceidx_labeled_ns *l, size_t n) {
    printf("{");
    for (size_t i = 0; i < n; i++) {
        printf("%s", i ? ", " : "");
        put_json(l[i].label, l[i].label_len);
        printf(": %" PRId64, l[i].ns);
    }
    printf("}");
}

static int cmd_group(traceidx_index *ix, const char *name) {
    traceidx_gstats *gs;
    traceidx_error *e = NULL;
    uint64_t i;
    if (traceidx_gstats_open(ix, &gs, &e)) return report(e);
    if (traceidx_gstats_find_group(gs, name, strlen(name), &i, &e) ||
        traceidx_gstats_begin(gs, i, &e)) {
        traceidx_gstats_close(gs);
        return report(e);
    }
    printf("{\"name\": ");
    put_json(name, strlen(name));
    printf(", \"goroutines\": [");
    traceidx_goroutine g;
    int rc;
    for (int k = 0; (rc = traceidx_gstats_next(gs, &g, &e)) == 1; k++) {
        printf("%s\n{\"id\": %" PRId64 ", \"name\": ", k ? "," : "", g.id);
        put_json(g.name, g.name_len);
        printf(", \"pc\": %" PRIu64 ", \"creation_ns\": %" PRId64, g.pc, g.creation_ns);
        if (g.started)
            printf(", \"start_ns\": %" PRId64, g.start_ns);
        else
            printf(", \"start_ns\": null");
        if (g.ended)
            printf(", \"end_ns\": %" PRId64, g.end_ns);
        else
            printf(", \"end_ns\": null");
        printf(", \"total_ns\": %" PRId64 ", \"exec_ns\": %" PRId64 ", \"sched_wait_ns\": %" PRId64
               ", \"syscall_ns\": %" PRId64 ", \"syscall_block_ns\": %" PRId64
               ", \"unknown_ns\": %" PRId64 ", \"block\": ",
               g.total_ns, g.exec_ns, g.sched_wait_ns, g.syscall_ns, g.syscall_block_ns,
               g.unknown_ns);
        put_labeled(g.block, g.nblock);
        printf(", \"ranges\": ");
        put_labeled(g.ranges, g.nranges);
        printf("}");
    }
    printf("]}\n");
    traceidx_gstats_close(gs);
    return rc < 0 ? report(e) : 0;
}

static int parse_i64(const char *s, int64_t *v) {
    char *end;
    *v = strtoll(s, &end, 10);
    return *s && !*end ? 0 : -1;
}

static int cmd_query(traceidx_index *ix, int argc, char **argv) {
    traceidx_query q;
    memset(&q, 0, sizeof q);
    int fail_writes = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int64_t v, w;
        if (!strcmp(a, "threads")) {
            q.threads = 1;
        } else if (!strcmp(a, "failwrite")) {
            fail_writes = 1;
        } else if ((!strcmp(a, "goroutine") || !strcmp(a, "task") || !strcmp(a, "taskid")) &&
                   i + 1 < argc && !parse_i64(argv[i + 1], &v)) {
            q.focus = a[0] == 'g'          ? TRACEIDX_FOCUS_GOROUTINE
                      : !strcmp(a, "task") ? TRACEIDX_FOCUS_TASK
                                           : TRACEIDX_FOCUS_TASK_GOROUTINES;
            q.id = (uint64_t)v;
            i++;
        } else if (!strcmp(a, "range") && i + 1 < argc && !parse_i64(argv[i + 1], &v)) {
            q.part = TRACEIDX_PART_SPLIT_RANGE;
            q.from = v;
            i++;
        } else if ((!strcmp(a, "events") || !strcmp(a, "window")) && i + 2 < argc &&
                   !parse_i64(argv[i + 1], &v) && !parse_i64(argv[i + 2], &w)) {
            q.part = a[0] == 'e' ? TRACEIDX_PART_EVENTS : TRACEIDX_PART_WINDOW;
            q.from = v;
            q.to = w;
            i += 2;
        } else {
            return usage();
        }
    }
    traceidx_error *e = NULL;
    if (traceidx_query_run(ix, &q, write_stdout, &fail_writes, &e)) return report(e);
    return fflush(stdout) ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "version")) {
        char want[32];
        snprintf(want, sizeof want, "%d.%d.%d", TRACEIDX_VERSION_MAJOR, TRACEIDX_VERSION_MINOR,
                 TRACEIDX_VERSION_PATCH);
        printf("%s %s %d\n", traceidx_version(), TRACEIDX_VERSION_STRING, TRACEIDX_VERSION);
        return strcmp(want, traceidx_version()) != 0 || strcmp(want, TRACEIDX_VERSION_STRING) != 0;
    }
    /* --full: check a trace's index against every byte of the trace */
    unsigned flags = 0;
    if (argc > 1 && !strcmp(argv[1], "--full")) {
        flags = TRACEIDX_OPEN_FULL_CHECK;
        argc--, argv++;
    }
    if (argc < 3) return usage();
    traceidx_index *ix;
    traceidx_error *e = NULL;
    if (traceidx_open(argv[1], flags, &ix, &e)) return report(e);
    const char *cmd = argv[2];
    int rc;
    if (!strcmp(cmd, "info") && argc == 3)
        rc = cmd_info(ix);
    else if (!strcmp(cmd, "ranges") && argc == 3)
        rc = cmd_ranges(ix);
    else if (!strcmp(cmd, "groups") && argc == 3)
        rc = cmd_groups(ix);
    else if (!strcmp(cmd, "group") && argc == 4)
        rc = cmd_group(ix, argv[3]);
    else if (!strcmp(cmd, "query"))
        rc = cmd_query(ix, argc - 3, argv + 3);
    else
        rc = usage();
    traceidx_close(ix);
    return rc;
}
