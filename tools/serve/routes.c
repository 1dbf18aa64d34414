/* routes.c: go tool trace's URLs (docs/serve.md lists them) mapped onto traceidx's commands, with
 * every parameter checked before it becomes an argument, so a request can only ask for what the CLI
 * offers. */
#include "tools/serve/routes.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void bad(srv_route *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(srv_route *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
    r->kind = SRV_BAD;
}

static void arg(srv_route *r, const char *a) {
    if (r->argc < SRV_ARGV_MAX) r->argv[r->argc++] = a;
}

static void command(srv_route *r, const char *cmd, const char *type) {
    r->kind = SRV_COMMAND;
    r->type = type;
    r->argc = 0;
    arg(r, cmd);
    arg(r, NULL); /* the index, put in by the server */
}

/* Whether s is made only of characters in `set` (bytes >= 0x80 allowed when utf8: "µs"), and is
 * 1..max bytes long. */
static bool made_of(const char *s, const char *set, size_t max, bool utf8) {
    size_t n = strlen(s);
    if (n == 0 || n > max) return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(c >= 0x80 && utf8) && !strchr(set, c)) return false;
    }
    return true;
}

static bool is_uint(const char *s) {
    return made_of(s, "0123456789", 20, false);
}
static bool is_int(const char *s) {
    return is_uint(s + (s[0] == '-' || s[0] == '+')) && strlen(s) <= 20;
}
#define DUR_CHARS "0123456789.hmsunµ"

/* An optional parameter that must match `ok` when present; false after bad() when malformed. */
static bool checked(srv_route *r, const char *name, const char *v, bool (*ok)(const char *)) {
    if (v && !ok(v)) {
        bad(r, "parameter %s: malformed value", name);
        return false;
    }
    return true;
}

static bool is_duration(const char *s) {
    return made_of(s, DUR_CHARS, 64, true);
}
static bool is_window(const char *s) {
    return made_of(s, DUR_CHARS "+:", 130, true) && strchr(s, ':');
}
static bool is_pc(const char *s) {
    return made_of(s, "0123456789abcdefABCDEFx", 18, false);
}

/* The region selection of /userregion and the region profiles: type, pc, latmin, latmax. A present
 * but empty type selects the unnamed regions (as `regions --type ''` does); with no condition at
 * all every region is selected. */
static bool region_filter(srv_route *r, srv_param_fn param, void *pctx, const char *type_opt) {
    const char *type = param(pctx, "type"), *pc = param(pctx, "pc");
    const char *latmin = param(pctx, "latmin"), *latmax = param(pctx, "latmax");
    if (!checked(r, "pc", pc, is_pc) || !checked(r, "latmin", latmin, is_duration) ||
        !checked(r, "latmax", latmax, is_duration))
        return false;
    if (pc && !*pc) pc = NULL;
    if (type) arg(r, type_opt), arg(r, type);
    if (pc) arg(r, "--pc"), arg(r, pc);
    if (latmin) arg(r, "--latmin"), arg(r, latmin);
    if (latmax) arg(r, "--latmax"), arg(r, latmax);
    if (!type && !pc && !latmin && !latmax) arg(r, "--latmin"), arg(r, "0");
    return true;
}

static void jsontrace(srv_route *r, srv_param_fn param, void *pctx) {
    command(r, "query", "application/json");
    const char *view = param(pctx, "view");
    if (view && *view && strcmp(view, "proc") != 0 && strcmp(view, "procs") != 0 &&
        strcmp(view, "thread") != 0 && strcmp(view, "threads") != 0)
        return bad(r, "parameter view: proc or thread");
    if (view && !strncmp(view, "thread", 6)) arg(r, "--view"), arg(r, "threads");
    /* cmd/trace takes the first of these present */
    static const char *const ids[][2] = {
        {"goid", "--goroutine"}, {"focustask", "--task"}, {"taskid", "--taskid"}};
    for (size_t i = 0; i < 3; i++) {
        const char *v = param(pctx, ids[i][0]);
        if (!v) continue;
        if (!is_uint(v)) return bad(r, "parameter %s: an unsigned decimal id", ids[i][0]);
        arg(r, ids[i][1]), arg(r, v);
        break;
    }
    const char *start = param(pctx, "start"), *end = param(pctx, "end");
    if (start && *start && end && *end) { /* only both, as cmd/trace */
        if (!is_int(start) || !is_int(end))
            return bad(r, "parameters start and end: decimal event indexes");
        arg(r, "--start"), arg(r, start), arg(r, "--end"), arg(r, end);
    }
    const char *window = param(pctx, "window");
    if (window) {
        if (!is_window(window)) return bad(r, "parameter window: START:END, as query --range");
        arg(r, "--range"), arg(r, window);
    }
}

/* /mmu's data modes: flags "stw|background|assist|sweep|perProc|mut", as Go's page sends them. */
static void mmu(srv_route *r, srv_param_fn param, void *pctx, const char *mode) {
    command(r, "mmu", "application/json");
    arg(r, "--json");
    const char *flags = param(pctx, "flags");
    if (flags && strlen(flags) > 128) return bad(r, "parameter flags: too long");
    char *inc = r->buf;
    size_t n = 0;
    inc[0] = 0;
    bool per_proc = false, mut = false;
    for (const char *p = flags ? flags : ""; *p;) {
        size_t len = strcspn(p, "|");
        static const char *const gc[] = {"stw", "background", "assist", "sweep"};
        for (size_t i = 0; i < 4; i++)
            if (len == strlen(gc[i]) && !strncmp(p, gc[i], len))
                n += (size_t)snprintf(inc + n, sizeof r->buf - n, "%s%s", n ? "," : "", gc[i]);
        if (len == 7 && !strncmp(p, "perProc", 7)) per_proc = true;
        if (len == 3 && !strncmp(p, "mut", 3)) mut = true;
        p += len + (p[len] == '|');
    }
    arg(r, "--include"), arg(r, inc);
    if (per_proc) arg(r, "--per-goroutine");
    if (!strcmp(mode, "plot")) {
        if (mut) arg(r, "--percentiles");
    } else {
        const char *w = param(pctx, "window");
        if (!w || !is_uint(w)) return bad(r, "parameter window: the window in ns");
        arg(r, "--window"), arg(r, w);
    }
}

/* The four profiles, by their pages' paths. */
static const char *const profiles[][2] = {
    {"io", "net"}, {"block", "sync"}, {"syscall", "syscall"}, {"sched", "sched"}};

static const char *profile_type(const char *name) {
    for (size_t i = 0; i < 4; i++)
        if (!strcmp(name, profiles[i][0])) return profiles[i][1];
    return NULL;
}

/* /io?raw=1 and /data/io (json), /regionio?raw=1 and /data/regionio: pprof TYPE ... */
static void profile(srv_route *r, srv_param_fn param, void *pctx, const char *page, bool json) {
    bool region = !strncmp(page, "region", 6);
    command(r, "pprof", json ? "application/json" : "application/octet-stream");
    r->argv[0] = "pprof";
    r->argv[1] = profile_type(region ? page + 6 : page);
    arg(r, NULL); /* the index comes after the type */
    if (json) arg(r, "--json");
    if (!json) {
        snprintf(r->buf, sizeof r->buf, "%s.profile", page);
        r->download = r->buf;
    }
    if (region) {
        region_filter(r, param, pctx, "--region");
    } else {
        const char *name = param(pctx, "name");
        if (name) arg(r, "--name"), arg(r, name);
    }
}

static bool is_profile_page(const char *p) {
    return profile_type(p) || (!strncmp(p, "region", 6) && profile_type(p + 6));
}

static void data(srv_route *r, const char *what, srv_param_fn param, void *pctx) {
    const char *j = "application/json";
    if (!strcmp(what, "info") || !strcmp(what, "ranges") || !strcmp(what, "goroutines")) {
        command(r, what, j);
        arg(r, "--json");
    } else if (!strcmp(what, "goroutine")) {
        command(r, "goroutines", j);
        const char *name = param(pctx, "name"), *sort = param(pctx, "sortby");
        if (!name) return bad(r, "parameter name: the goroutines' start location");
        arg(r, "--name"), arg(r, name), arg(r, "--json");
        if (sort && *sort) arg(r, "--sort"), arg(r, sort);
    } else if (!strcmp(what, "usertasks")) {
        command(r, "tasks", j);
        arg(r, "--json");
    } else if (!strcmp(what, "usertask")) {
        command(r, "tasks", j);
        arg(r, "--json");
        const char *id = param(pctx, "id");
        if (id) {
            if (!is_uint(id)) return bad(r, "parameter id: an unsigned decimal task id");
            arg(r, "--id"), arg(r, id);
            return;
        }
        const char *type = param(pctx, "type"), *complete = param(pctx, "complete");
        const char *latmin = param(pctx, "latmin"), *latmax = param(pctx, "latmax");
        const char *logtext = param(pctx, "logtext");
        if (!checked(r, "latmin", latmin, is_duration) ||
            !checked(r, "latmax", latmax, is_duration))
            return;
        bool any = false;
        if (type) arg(r, "--type"), arg(r, type), any = true;
        /* Go knows only 1 and 0 (its own links' "true" does nothing) */
        if (complete && !strcmp(complete, "1")) arg(r, "--complete"), any = true;
        if (complete && !strcmp(complete, "0")) arg(r, "--incomplete"), any = true;
        if (latmin) arg(r, "--latmin"), arg(r, latmin), any = true;
        if (latmax) arg(r, "--latmax"), arg(r, latmax), any = true;
        if (logtext) arg(r, "--logtext"), arg(r, logtext), any = true;
        /* Go lists every task then; tasks has no such listing, and /usertasks has the types */
        if (!any) return bad(r, "/usertask needs type, complete, latmin, latmax, logtext or id");
    } else if (!strcmp(what, "userregions")) {
        command(r, "regions", j);
        arg(r, "--json");
    } else if (!strcmp(what, "userregion")) {
        command(r, "regions", j);
        arg(r, "--json");
        if (!region_filter(r, param, pctx, "--type")) return;
        const char *sort = param(pctx, "sortby");
        if (sort && *sort) arg(r, "--sort"), arg(r, sort);
    } else if (is_profile_page(what)) {
        profile(r, param, pctx, what, true);
    } else {
        r->kind = SRV_NOT_FOUND;
    }
}

static const char *const pages[][2] = {
    {"/", "index.html"},
    {"/goroutines", "goroutines.html"},
    {"/goroutine", "goroutine.html"},
    {"/usertasks", "usertasks.html"},
    {"/usertask", "usertask.html"},
    {"/userregions", "userregions.html"},
    {"/userregion", "userregion.html"},
};

/* Go's viewer files, at the paths of Go 1.22+ and of Go 1.19-1.21's pages. */
static const char *const viewer_files[][2] = {
    {"/static/trace_viewer_full.html", "trace_viewer_full.html"},
    {"/static/webcomponents.min.js", "webcomponents.min.js"},
    {"/trace_viewer_html", "trace_viewer_full.html"},
    {"/webcomponents.min.js", "webcomponents.min.js"},
};

void srv_route_resolve(const char *path, srv_param_fn param, void *pctx, bool viewer,
                       srv_route *r) {
    memset(r, 0, sizeof *r);
    r->kind = SRV_NOT_FOUND;
    for (size_t i = 0; i < sizeof pages / sizeof *pages; i++)
        if (!strcmp(path, pages[i][0])) {
            r->kind = SRV_PAGE;
            r->asset = pages[i][1];
            return;
        }
    for (size_t i = 0; i < sizeof viewer_files / sizeof *viewer_files; i++)
        if (!strcmp(path, viewer_files[i][0])) {
            r->kind = SRV_VIEWER;
            r->asset = viewer_files[i][1];
            return;
        }
    if (!strncmp(path, "/assets/", 8)) {
        r->kind = SRV_ASSET;
        r->asset = path + 8;
    } else if (!strcmp(path, "/trace")) {
        r->kind = SRV_PAGE;
        r->asset = viewer ? "trace.html" : "trace-noviewer.html";
    } else if (!strcmp(path, "/jsontrace")) {
        jsontrace(r, param, pctx);
    } else if (!strcmp(path, "/mmu")) {
        const char *mode = param(pctx, "mode");
        if (!mode || !*mode) {
            r->kind = SRV_PAGE;
            r->asset = "mmu.html";
        } else if (!strcmp(mode, "plot") || !strcmp(mode, "details")) {
            mmu(r, param, pctx, mode);
        } else {
            bad(r, "parameter mode: plot or details");
        }
    } else if (path[0] == '/' && is_profile_page(path + 1)) {
        const char *raw = param(pctx, "raw");
        if (raw && *raw) {
            profile(r, param, pctx, path + 1, false);
        } else {
            r->kind = SRV_PAGE;
            r->asset = "pprof.html";
        }
    } else if (!strncmp(path, "/data/", 6)) {
        data(r, path + 6, param, pctx);
    }
}
